"""The receiver: OTLP payloads in, Prometheus text out (parsed back with prometheus_client's own parser)."""

from __future__ import annotations

import uuid

import pytest
from google.protobuf.message import DecodeError
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from prometheus_client.parser import text_string_to_metric_families

from pykbroker.client_metrics import otlp
from pykbroker.client_metrics.manager import ClientInstance
from wire import CorruptRecordError, DecompressedSizeError, compress

INSTANCE = ClientInstance(uuid.UUID(int=7 << 64), {"client_id": 'odd "id"\nhere', "client_software_name": "x",
                                                   "client_software_version": "1"}, 1, 1, (), 5000)


def payload(value: float, temporality: int = metrics_pb2.AGGREGATION_TEMPORALITY_DELTA, points: int = 1) -> bytes:
    data = metrics_pb2.MetricsData()
    scope = data.resource_metrics.add().scope_metrics.add()
    m = scope.metrics.add(name="org.apache.kafka.consumer.records-consumed.total")
    m.sum.aggregation_temporality, m.sum.is_monotonic = temporality, True
    for i in range(points):
        m.sum.data_points.add(as_int=int(value), attributes=[
            KeyValue(key="topic.name", value=AnyValue(string_value=f"t{i}"))])
    g = scope.metrics.add(name="9lag")
    g.gauge.data_points.add(as_double=value / 2)
    return data.SerializeToString()


def samples(receiver: otlp.PrometheusTelemetryReceiver) -> dict[str, list]:
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(receiver.exposition().decode()):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def test_deltas_add_cumulative_values_replace_and_labels_escape():
    r = otlp.PrometheusTelemetryReceiver()
    r.export(INSTANCE, 0, payload(3), 1 << 20)
    r.export(INSTANCE, 4, compress(4, payload(4)), 1 << 20)
    got = samples(r)
    ((labels, value),) = got["org_apache_kafka_consumer_records_consumed_total"]
    assert value == 7 and labels["client_id"] == 'odd "id"\nhere' and labels["topic_name"] == "t0"
    assert got["_9lag"][0][1] == 2.0
    r.export(INSTANCE, 0, payload(10, metrics_pb2.AGGREGATION_TEMPORALITY_CUMULATIVE), 1 << 20)
    assert samples(r)["org_apache_kafka_consumer_records_consumed_total"][0][1] == 10
    r.forget(INSTANCE.client_instance_id)
    assert r.exposition() == b""


def test_a_forgotten_instance_lingers_unless_it_pushes_again():
    now = [0]
    r = otlp.PrometheusTelemetryReceiver(lambda: now[0])
    r.export(INSTANCE, 0, payload(1), 1 << 20)
    r.forget(INSTANCE.client_instance_id, 60_000)
    now[0] = 59_999
    assert r.exposition() != b""
    r.export(INSTANCE, 0, payload(1), 1 << 20)  # back: it stays
    now[0] = 1_000_000
    assert r.exposition() != b""
    r.forget(INSTANCE.client_instance_id, 60_000)
    now[0] = 1_060_000
    assert r.exposition() == b"" and r.series_count() == 0


def test_series_per_instance_are_capped(monkeypatch):
    monkeypatch.setattr(otlp, "MAX_SERIES_PER_INSTANCE", 5)
    r = otlp.PrometheusTelemetryReceiver()
    r.export(INSTANCE, 0, payload(1, points=10), 1 << 20)
    assert r.series_count() == 5


def test_bad_payloads_raise_what_the_manager_maps_to_errors():
    r = otlp.PrometheusTelemetryReceiver()
    with pytest.raises(DecodeError):
        r.export(INSTANCE, 0, b"\x0a\xff\xff\xff\xff\x0f", 1 << 20)
    with pytest.raises(CorruptRecordError):
        r.export(INSTANCE, 1, b"not gzip", 1 << 20)
    with pytest.raises(DecompressedSizeError):
        r.export(INSTANCE, 1, compress(1, b"\x00" * 10_000), 1000)
    assert r.series_count() == 0
