"""Client telemetry (KIP-714) on a real broker with its receiver on (metrics.client.telemetry.enable).

A raw client is subscribed through a CLIENT_METRICS resource, pushes OTLP payloads in every compression Kafka
accepts and the Prometheus scrape shows them with the client's labels; bad payloads (not protobuf, not the
compression named, a bomb above telemetry.max.bytes) get Kafka's errors and the broker serves on. Without the
switch ApiVersions leaves the two APIs out (compared with Kafka 4.4 in compat_tests).
"""

from __future__ import annotations

import time
import urllib.request
import uuid

import pytest
import zstandard
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.metrics.v1 import metrics_pb2
from prometheus_client.parser import text_string_to_metric_families

from pykbroker.config import Config, ConfigError
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import ErrorCode, compress
from wire.messages import (
    ApiVersionsRequest,
    GetTelemetrySubscriptionsRequest,
    PushTelemetryRequest,
)


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def payload(sent: int, queue_ms: float) -> bytes:
    """An OTLP MetricsData as the Java producer pushes it: a delta sum and a gauge, resource attributes."""
    def kv(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    data = metrics_pb2.MetricsData()
    rm = data.resource_metrics.add()
    rm.resource.attributes.extend([kv("client.id", "telemetry-app"), kv("application", "billing")])
    scope = rm.scope_metrics.add()
    total = scope.metrics.add(name="org.apache.kafka.producer.record.send.total")
    total.sum.aggregation_temporality = metrics_pb2.AGGREGATION_TEMPORALITY_DELTA
    total.sum.is_monotonic = True
    total.sum.data_points.add(as_double=sent, attributes=[kv("topic", "orders")])
    gauge = scope.metrics.add(name="org.apache.kafka.producer.record.queue.time.avg")
    gauge.gauge.data_points.add(as_double=queue_ms)
    return data.SerializeToString()


@pytest.fixture(scope="module")
def telemetry_broker(tmp_path_factory):
    port = free_port()
    with BrokerProcess(tmp_path_factory.mktemp("telemetry"), overrides={
            "metrics.port": str(port), "metrics.client.telemetry.enable": "true",
            "telemetry.max.bytes": "65536"}) as broker:
        broker.start()
        yield broker, port
        assert broker.alive, broker.log()


def test_api_versions_advertise_telemetry_with_the_receiver(telemetry_broker):
    """(Without it, the default answer is compared byte for byte with Kafka 4.4's in compat_tests.)"""
    with RawClient(telemetry_broker[0].bootstrap) as c:
        r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.api_keys}
    assert keys[71] == (0, 0) and keys[72] == (0, 0)


def test_receiver_needs_the_metrics_endpoint():
    with pytest.raises(ConfigError, match="metrics.port"):
        Config({"metrics.client.telemetry.enable": "true"})


def test_pushed_metrics_reach_prometheus_with_client_labels(telemetry_broker):
    broker, port = telemetry_broker
    with RawClient(broker.bootstrap, client_id="telemetry-app") as c:
        c.set_client_metrics("producers", metrics="org.apache.kafka.producer.", interval_ms="100",
                             match="client_id=telemetry-.*,client_software_name=pykbroker-test")
        c.request(ApiVersionsRequest(client_software_name="pykbroker-test", client_software_version="9.9"), 3)
        sub = c.request(GetTelemetrySubscriptionsRequest(), 0)
        assert (sub.error_code, sub.requested_metrics, sub.push_interval_ms) == (
            ErrorCode.NONE, ["org.apache.kafka.producer."], 100)
        instance = sub.client_instance_id

        def push(metrics: bytes, compression: int, terminating: bool = False) -> int:
            deadline = time.monotonic() + 30
            while True:  # a push before the interval is up is throttled: wait for it as a client would
                code = c.request(PushTelemetryRequest(
                    client_instance_id=instance, subscription_id=sub.subscription_id, terminating=terminating,
                    compression_type=compression, metrics=metrics), 0).error_code
                if code != ErrorCode.THROTTLING_QUOTA_EXCEEDED or time.monotonic() > deadline:
                    return code
                time.sleep(0.05)

        for compression, sent in ((4, 5), (3, 7), (1, 11), (2, 13), (0, 17)):  # zstd, lz4, gzip, snappy, none
            assert push(compress(compression, payload(sent, 2.5)), compression) == ErrorCode.NONE
        assert push(b"\x08\x96\x01garbage", 0) == ErrorCode.INVALID_RECORD
        assert push(b"not zstd at all", 4) == ErrorCode.INVALID_RECORD
        bomb = zstandard.ZstdCompressor().compress(b"\x00" * 1_000_000)  # small, above telemetry.max.bytes inflated
        assert push(bomb, 4) == ErrorCode.TELEMETRY_TOO_LARGE
        samples = scrape(port)
        labels = {"client_id": "telemetry-app", "client_software_name": "pykbroker-test",
                  "client_software_version": "9.9", "application": "billing", "client_instance_id":
                  __import__("base64").urlsafe_b64encode(instance.bytes).decode().rstrip("=")}
        (total,) = samples["org_apache_kafka_producer_record_send_total"]
        assert total == ({**labels, "client_id": "telemetry-app", "topic": "orders"}, 5 + 7 + 11 + 13 + 17)
        assert samples["org_apache_kafka_producer_record_queue_time_avg"] == [(labels, 2.5)]
        # Kafka's own client-metrics metrics about them
        assert samples["kafka_server_client_metrics_instance_count"][0][1] >= 1
        instance_label = {"client_instance_id": labels["client_instance_id"]}
        assert (instance_label, 5) in samples["kafka_server_client_metrics_plugin_export_count"]
        assert (instance_label, 3) in samples["kafka_server_client_metrics_plugin_error_count"]
        assert push(compress(4, payload(1, 1.0)), 4, terminating=True) == ErrorCode.NONE
    with RawClient(broker.bootstrap) as c:  # the broker serves on
        assert c.request(GetTelemetrySubscriptionsRequest(client_instance_id=uuid.uuid4()), 0).error_code == 0
