"""The pushed metrics: an OTLP ``MetricsData`` payload decoded and kept per client instance for Prometheus.

pykbroker's ClientTelemetryExporter: ``PrometheusTelemetryReceiver.export`` decompresses a push (bounded by
``telemetry.max.bytes``), parses it with the OpenTelemetry protobuf classes and keeps the last value of every
gauge and the running total of every sum (Kafka asks clients for delta temporality: deltas are added, cumulative
values replace). ``exposition`` renders them as Prometheus families: the metric name with every character Prometheus
does not allow turned into ``_`` (``org.apache.kafka.producer.record.send.total`` becomes the counter
``org_apache_kafka_producer_record_send_total``), labelled with the point's attributes, the payload's resource
attributes and the client's own labels (client_id, client_instance_id, client_software_name,
client_software_version). Histograms and summaries (neither the Java client nor librdkafka pushes any) are skipped.
An expired client instance's series go with it.
"""

from __future__ import annotations

import functools
import math
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

from pykbroker.client_metrics.manager import ClientInstance
from replication.metadata.embedded_store import uuid_to_kafka_string
from wire import decompress

__all__ = ["PrometheusTelemetryReceiver", "CLIENT_LABELS"]

#: The labels every pushed series carries, from the client's connection and its instance id.
CLIENT_LABELS = ("client_id", "client_instance_id", "client_software_name", "client_software_version")
#: The most series one client instance may have; further new series of its pushes are dropped.
MAX_SERIES_PER_INSTANCE = 10_000
_AGGREGATION_TEMPORALITY_DELTA = 1
_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_]")

Labels = tuple[tuple[str, str], ...]


@functools.lru_cache(maxsize=65536)  # clients push the same names every interval
def prometheus_name(name: str) -> str:
    """An OTLP metric or attribute name as Prometheus allows it."""
    cleaned = _NOT_ALLOWED.sub("_", name)
    return "_" + cleaned if not cleaned or cleaned[0].isdigit() else cleaned


def _attribute_value(value: Any) -> str | None:
    kind = value.WhichOneof("value")
    if kind in ("string_value", "int_value", "double_value", "bool_value"):
        v = getattr(value, kind)
        return ("true" if v else "false") if kind == "bool_value" else str(v)
    return None


def _attributes(attributes: Any) -> dict[str, str]:
    out = {}
    for kv in attributes:
        value = _attribute_value(kv.value)
        if value is not None:
            out[prometheus_name(kv.key)] = value
    return out


def _number(point: Any) -> float:
    return float(point.as_double) if point.WhichOneof("value") == "as_double" else float(point.as_int)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _render_labels(labels: Labels) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels) + "}"


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "+Inf" if value > 0 else "-Inf"
    return repr(value)


class _Series:
    """One pushed series: its value and its label set rendered once."""

    __slots__ = ("value", "labels")

    def __init__(self, value: float, labels: str) -> None:
        self.value, self.labels = value, labels


class PrometheusTelemetryReceiver:
    """Receives pushes (``export``) and renders them in the Prometheus text format (``exposition``), appended to the
    broker's own scrape (its own renderer: prometheus_client's costs ten times more for thousands of series)."""

    def __init__(self, clock_ms: Callable[[], int] = lambda: int(time.monotonic() * 1000)) -> None:
        # instance -> (family, type) -> labels -> series
        self._instances: dict[uuid.UUID, dict[tuple[str, str], dict[Labels, _Series]]] = {}
        self._clock_ms = clock_ms
        self._leaving: dict[uuid.UUID, int] = {}  # forgotten instances whose series stay until then

    def export(self, instance: ClientInstance, compression_type: int, metrics: bytes, max_bytes: int) -> None:
        # Imported on the first push: the protobuf runtime costs start-up time a broker without telemetry saves.
        from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

        payload = decompress(compression_type, metrics, max_size=max_bytes)
        data = MetricsData.FromString(payload)  # google.protobuf.message.DecodeError on garbage
        client = {"client_instance_id": uuid_to_kafka_string(instance.client_instance_id)}
        for name in ("client_id", "client_software_name", "client_software_version"):
            client[name] = instance.attributes.get(name) or ""
        parsed: list[tuple[tuple[str, str], Labels, float, bool]] = []
        for resource_metrics in data.resource_metrics:
            resource = _attributes(resource_metrics.resource.attributes)
            for scope in resource_metrics.scope_metrics:
                for metric in scope.metrics:
                    family = prometheus_name(metric.name)
                    kind = metric.WhichOneof("data")
                    if kind == "gauge":
                        points, metric_type, add = metric.gauge.data_points, "gauge", False
                    elif kind == "sum":
                        points = metric.sum.data_points
                        metric_type = "counter" if metric.sum.is_monotonic else "gauge"
                        add = metric.sum.aggregation_temporality == _AGGREGATION_TEMPORALITY_DELTA
                    else:
                        continue
                    if metric_type == "counter" and family.endswith("_total"):
                        family = family[:-len("_total")]
                    for point in points:
                        merged = {**resource, **_attributes(point.attributes), **client}
                        parsed.append(((family, metric_type), tuple(sorted(merged.items())), _number(point), add))
        self._leaving.pop(instance.client_instance_id, None)
        families = self._instances.setdefault(instance.client_instance_id, {})
        count = sum(len(f) for f in families.values())
        for key, label_set, value, add in parsed:
            family_series = families.setdefault(key, {})
            found = family_series.get(label_set)
            if found is None:
                if count >= MAX_SERIES_PER_INSTANCE:
                    continue
                family_series[label_set] = _Series(value, _render_labels(label_set))
                count += 1
            else:
                found.value = found.value + value if add else value

    def forget(self, client_instance_id: uuid.UUID, after_ms: int = 0) -> None:
        if after_ms <= 0:
            self._instances.pop(client_instance_id, None)
            self._leaving.pop(client_instance_id, None)
        elif client_instance_id in self._instances:
            self._leaving[client_instance_id] = self._clock_ms() + after_ms

    def _purge(self) -> None:
        now = self._clock_ms()
        for gone in [i for i, until in self._leaving.items() if until <= now]:
            self.forget(gone)

    def series_count(self) -> int:
        return sum(len(f) for families in self._instances.values() for f in families.values())

    def exposition(self) -> bytes:
        """Every client's series, one family per metric name (a name two clients give two types keeps the
        first type seen)."""
        self._purge()
        by_family: dict[str, tuple[str, list[dict[Labels, _Series]]]] = {}
        for families in self._instances.values():
            for (name, metric_type), series in families.items():
                found = by_family.setdefault(name, (metric_type, []))
                if found[0] == metric_type:
                    found[1].append(series)
        out: list[str] = []
        for name, (metric_type, groups) in by_family.items():
            sample = name + "_total" if metric_type == "counter" else name  # named as prometheus_client names them
            out.append(f"# HELP {sample} Pushed by clients (KIP-714)\n# TYPE {sample} {metric_type}\n")
            out.extend(f"{sample}{s.labels} {_float(s.value)}\n" for series in groups for s in series.values())
        return "".join(out).encode()
