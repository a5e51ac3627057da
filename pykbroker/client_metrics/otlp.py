"""The pushed metrics: an OTLP ``MetricsData`` payload decoded and kept per client instance for Prometheus.

pykbroker's ClientTelemetryExporter: ``PrometheusTelemetryReceiver.export`` decompresses a push (bounded by
``telemetry.max.bytes``), parses it with the OpenTelemetry protobuf classes and keeps the last value of every
gauge and the running total of every sum (Kafka asks clients for delta temporality: deltas are added, cumulative
values replace). ``collect`` renders them as Prometheus families: the metric name with every character Prometheus
does not allow turned into ``_`` (``org.apache.kafka.producer.record.send.total`` becomes the counter
``org_apache_kafka_producer_record_send_total``), labelled with the point's attributes, the payload's resource
attributes and the client's own labels (client_id, client_instance_id, client_software_name,
client_software_version). Histograms and summaries (neither the Java client nor librdkafka pushes any) are skipped.
An expired client instance's series go with it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

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


class _InstanceSeries:
    """One client instance's series: (family, type, labels) -> value."""

    __slots__ = ("series",)

    def __init__(self) -> None:
        self.series: dict[tuple[str, str, Labels], float] = {}

    def update(self, key: tuple[str, str, Labels], value: float, add: bool) -> None:
        if key not in self.series and len(self.series) >= MAX_SERIES_PER_INSTANCE:
            return
        self.series[key] = self.series.get(key, 0.0) + value if add else value


class PrometheusTelemetryReceiver(Collector):
    """Receives pushes (``export``) and renders them for the broker's Prometheus registry (``collect``)."""

    def __init__(self) -> None:
        self._instances: dict[uuid.UUID, _InstanceSeries] = {}

    def export(self, instance: ClientInstance, compression_type: int, metrics: bytes, max_bytes: int) -> None:
        # Imported on the first push: the protobuf runtime costs start-up time a broker without telemetry saves.
        from opentelemetry.proto.metrics.v1.metrics_pb2 import MetricsData

        payload = decompress(compression_type, metrics, max_size=max_bytes)
        data = MetricsData.FromString(payload)  # google.protobuf.message.DecodeError on garbage
        client = {"client_instance_id": uuid_to_kafka_string(instance.client_instance_id)}
        for name in ("client_id", "client_software_name", "client_software_version"):
            client[name] = instance.attributes.get(name) or ""
        parsed: list[tuple[tuple[str, str, Labels], float, bool]] = []
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
                    for point in points:
                        labels = {**resource, **_attributes(point.attributes), **client}
                        parsed.append(((family, metric_type, tuple(sorted(labels.items()))), _number(point), add))
        series = self._instances.setdefault(instance.client_instance_id, _InstanceSeries())
        for key, value, add in parsed:
            series.update(key, value, add)

    def forget(self, client_instance_id: uuid.UUID) -> None:
        self._instances.pop(client_instance_id, None)

    def series_count(self) -> int:
        return sum(len(s.series) for s in self._instances.values())

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for instance in self._instances.values():
            for (name, metric_type, labels), value in instance.series.items():
                base = name[:-len("_total")] if metric_type == "counter" and name.endswith("_total") else name
                family = families.get(base)
                if family is None:
                    family = families[base] = Metric(base, "Pushed by clients (KIP-714)", metric_type)
                elif family.type != metric_type:
                    continue  # two clients disagree on a name's type: the first one seen is kept
                sample = base + "_total" if metric_type == "counter" else base
                family.add_sample(sample, dict(labels), value)
        yield from families.values()

    def describe(self) -> Iterator[Metric]:
        return iter(())
