"""MBean names to Prometheus names, as the JMX exporter's common Kafka rules render them."""

from __future__ import annotations

import pytest

from pykbroker.metrics.collector import KAFKA_MBEANS, _percentile
from pykbroker.metrics.jmx_names import parse_object_name, prometheus_name, quantile_label, sanitize


@pytest.mark.parametrize(("object_name", "attribute", "histogram", "expected"), [
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t", "Count", False,
     "kafka_server_brokertopicmetrics_bytesinpersec"),
    ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "Value", False,
     "kafka_server_replicamanager_underreplicatedpartitions"),
    ("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "99thPercentile", True,
     "kafka_network_requestmetrics_totaltimems"),
    ("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce", "Count", True,
     "kafka_network_requestmetrics_totaltimems_count"),
    ("kafka.log:type=Log,name=LogEndOffset,topic=t,partition=0", "Value", False, "kafka_log_log_logendoffset"),
    ("kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0", "connection-count", False,
     "kafka_server_socket_server_metrics_connection_count"),
    ("kafka.coordinator.group:type=GroupMetadataManager,name=NumGroupsStable", "Value", False,
     "kafka_coordinator_group_groupmetadatamanager_numgroupsstable"),
    ("kafka.server:type=Produce,user=,client-id=app", "throttle-time", False, "kafka_server_produce_throttle_time"),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "OneMinuteRate", False, None),
    ("java.lang:type=Memory", "HeapMemoryUsage", False, None),
])
def test_exporter_names(object_name, attribute, histogram, expected):
    domain, props = parse_object_name(object_name)
    assert prometheus_name(domain, props["type"], props.get("name"), attribute, histogram) == expected


def test_sanitize_and_quantiles():
    assert sanitize("kafka_server_socket-server-metrics__connection-count") == \
        "kafka_server_socket_server_metrics_connection_count"
    assert sanitize("client-id") == "client_id"
    assert quantile_label("50thPercentile") == "0.50"
    assert quantile_label("999thPercentile") == "0.999"
    assert quantile_label("Mean") is None


def test_every_declared_mbean_has_a_name():
    names = {prometheus_name(b.domain, b.type, b.name, a, b.histogram) for b, a in KAFKA_MBEANS}
    assert None not in names
    assert "kafka_server_brokertopicmetrics_bytesinpersec" in names


def test_percentiles_as_yammer_snapshots():
    values = [float(v) for v in range(1, 101)]
    assert _percentile(values, "50") == pytest.approx(50.5)
    assert _percentile(values, "99") == pytest.approx(99.99)
    assert _percentile(values, "999") == 100.0
    assert _percentile([], "99") == 0.0
    assert _percentile([7.0], "50") == 7.0
