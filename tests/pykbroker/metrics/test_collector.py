"""The metrics endpoint of a real broker after a known workload: every family's value, checked.

One broker subprocess with ``metrics.port``; confluent-kafka produces 1,000 records of 1 KiB, a consumer
group reads 600 of them and commits, a client over its producer_byte_rate quota is throttled; then the
endpoint is scraped and parsed with prometheus_client's own parser (so the exposition is valid).
"""

from __future__ import annotations

import socket
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from prometheus_client.parser import text_string_to_metric_families

from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire.messages import AlterClientQuotasRequest
from wire.messages.alter_client_quotas_request import EntityData, EntryData, OpData

RECORDS = 1000
CONSUMED = 600
TOPIC = "metered"
GROUP = "metered-group"


def scrape(port: int) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """name -> {sorted labels: value}, every sample of the exposition (parsed by prometheus_client)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def value(samples, name: str, **labels: str) -> float:
    return samples[name][tuple(sorted(labels.items()))]


def set_produce_quota(bootstrap: str, client_id: str, bytes_per_s: float) -> None:
    with RawClient(bootstrap) as c:
        r = c.request(AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
            entity=[EntityData(entity_type="client-id", entity_name=client_id)],
            ops=[OpData(key="producer_byte_rate", value=bytes_per_s, remove=False)])]), 1)
        assert [e.error_code for e in r.entries] == [0]


@pytest.fixture(scope="module")
def metered(tmp_path_factory):
    """(broker, metrics port, scrape after the workload, the consumer still in its group)."""
    port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("metered"),
                           overrides={"metrics.port": str(port), "group.initial.rebalance.delay.ms": "0"})
    with broker:
        broker.start()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(RECORDS):
            producer.produce(TOPIC, b"v" * 1024, key=str(i).encode())
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "max.partition.fetch.bytes": 100_000})
        consumer.subscribe([TOPIC])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < CONSUMED and time.monotonic() < deadline:
            m = consumer.poll(1)
            if m is not None and m.error() is None:
                got.append(m)
        assert len(got) >= CONSUMED
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, CONSUMED)], asynchronous=False)
        # 30 KiB over the quota's 10 s window is 3 KiB/s: about 4.6 s of throttle at 2 KiB/s.
        set_produce_quota(broker.bootstrap, "throttled", 2048)
        slow = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "throttled", "linger.ms": 0})
        for _ in range(30):
            slow.produce("quota-topic", b"q" * 1024)
        assert slow.flush(60) == 0
        samples = scrape(port)
        yield broker, port, samples, len(got)
        consumer.close()


def test_started_line_says_where(metered):
    broker, port, _, _ = metered
    lines = [line for line in broker.log().splitlines() if "serving Prometheus metrics" in line]
    assert len(lines) == 1 and f":{port}/metrics" in lines[0], lines


def test_bytes_and_messages_in_are_the_batches_appended(metered):
    _, _, s, _ = metered
    size = value(s, "kafka_log_log_size", topic=TOPIC, partition="0")
    assert size > RECORDS * 1024  # the records plus batch and record overhead
    assert value(s, "kafka_server_brokertopicmetrics_bytesinpersec", topic=TOPIC) == size
    assert value(s, "kafka_server_brokertopicmetrics_messagesinpersec", topic=TOPIC) == RECORDS
    # The all-topics series (no label) adds up every topic.
    topics = [labels for labels in s["kafka_server_brokertopicmetrics_bytesinpersec"] if labels]
    assert value(s, "kafka_server_brokertopicmetrics_bytesinpersec") == sum(
        s["kafka_server_brokertopicmetrics_bytesinpersec"][t] for t in topics)
    produces = value(s, "kafka_server_brokertopicmetrics_totalproducerequestspersec", topic=TOPIC)
    assert 1 <= produces <= RECORDS
    # As Kafka's, a topic's failure meter appears once a failure marks it: none here.
    assert s["kafka_server_brokertopicmetrics_failedproducerequestspersec"] == {(): 0}


def test_bytes_out_are_what_the_consumer_fetched(metered):
    _, _, s, consumed = metered
    out = value(s, "kafka_server_brokertopicmetrics_bytesoutpersec", topic=TOPIC)
    # At least what the consumer got (it fetches ahead, and may fetch a range again after joining).
    assert out > consumed * 1024
    assert value(s, "kafka_server_brokertopicmetrics_totalfetchrequestspersec", topic=TOPIC) >= 1


def test_request_metrics_per_api_with_the_time_split(metered):
    _, _, s, _ = metered
    produce_requests = sum(v for labels, v in s["kafka_network_requestmetrics_requestspersec"].items()
                           if ("request", "Produce") in labels)
    assert produce_requests >= 1
    assert ("request", "Produce") in dict.fromkeys(
        pair for labels in s["kafka_network_requestmetrics_requestspersec"] for pair in labels)
    for part in ("requestqueuetimems", "localtimems", "remotetimems", "throttletimems", "responsequeuetimems",
                 "responsesendtimems", "totaltimems", "requestbytes"):
        name = f"kafka_network_requestmetrics_{part}"
        # The histogram count is every request answered (the scrape's own requests aside: HTTP is not Kafka).
        assert value(s, name + "_count", request="Produce") == produce_requests, part
        q50 = value(s, name, request="Produce", quantile="0.50")
        q99 = value(s, name, request="Produce", quantile="0.99")
        assert 0 <= q50 <= q99, part
    total = value(s, "kafka_network_requestmetrics_totaltimems", request="Produce", quantile="0.999")
    local = value(s, "kafka_network_requestmetrics_localtimems", request="Produce", quantile="0.50")
    assert 0 < local <= total
    assert value(s, "kafka_network_requestmetrics_requestbytes", request="Produce", quantile="0.99") > 1024
    # The throttled client's produces waited: throttle time shows in Produce's histogram.
    assert value(s, "kafka_network_requestmetrics_throttletimems", request="Produce", quantile="0.999") > 0


def test_replica_manager_and_partition_gauges(metered):
    _, _, s, _ = metered
    partitions = value(s, "kafka_server_replicamanager_partitioncount")
    assert partitions >= 2  # the topic, quota-topic and __consumer_offsets' partitions
    assert value(s, "kafka_server_replicamanager_leadercount") == partitions  # a single node leads all
    assert value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(s, "kafka_server_replicamanager_underminisrpartitioncount") == 0
    assert value(s, "kafka_server_replicamanager_offlinereplicacount") == 0
    assert value(s, "kafka_server_replicamanager_isrshrinkspersec") == 0
    assert value(s, "kafka_server_replicamanager_isrexpandspersec") == 0
    assert value(s, "kafka_cluster_partition_insyncreplicascount", topic=TOPIC, partition="0") == 1
    assert value(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(s, "kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert value(s, "kafka_controller_kafkacontroller_globalpartitioncount") == partitions
    assert value(s, "kafka_controller_kafkacontroller_activebrokercount") == 1
    assert value(s, "kafka_controller_kafkacontroller_preferredreplicaimbalancecount") == 0
    assert value(s, "kafka_controller_controllerstats_uncleanleaderelectionspersec") == 0
    assert value(s, "kafka_server_brokertopicmetrics_failedfetchrequestspersec") == 0


def test_log_offsets_per_partition(metered):
    _, _, s, _ = metered
    assert value(s, "kafka_log_log_logstartoffset", topic=TOPIC, partition="0") == 0
    assert value(s, "kafka_log_log_logendoffset", topic=TOPIC, partition="0") == RECORDS
    assert value(s, "kafka_log_log_numlogsegments", topic=TOPIC, partition="0") == 1
    assert value(s, "kafka_log_logflushstats_logflushrateandtimems_count") >= 0


def test_group_counts_by_state_and_lag(metered):
    _, _, s, _ = metered
    assert value(s, "kafka_coordinator_group_groupmetadatamanager_numgroups") == 1
    assert value(s, "kafka_coordinator_group_groupmetadatamanager_numgroupsstable") == 1
    assert value(s, "kafka_coordinator_group_groupmetadatamanager_numgroupsempty") == 0
    assert value(s, "kafka_coordinator_group_groupmetadatamanager_numoffsets") == 1
    assert value(s, "kafka_server_group_coordinator_metrics_group_count", protocol="classic") == 1
    labels = {"consumergroup": GROUP, "topic": TOPIC, "partition": "0"}
    assert value(s, "kafka_consumergroup_current_offset", **labels) == CONSUMED
    assert value(s, "kafka_consumergroup_lag", **labels) == RECORDS - CONSUMED


def test_connections_per_listener_and_idle_ratio(metered):
    _, _, s, _ = metered
    listener = {"listener": "PLAINTEXT", "networkprocessor": "0"}
    open_now = value(s, "kafka_server_socket_server_metrics_connection_count", **listener)
    created = value(s, "kafka_server_socket_server_metrics_connection_creation_total", **listener)
    closed = value(s, "kafka_server_socket_server_metrics_connection_close_total", **listener)
    assert open_now >= 1  # the consumer's connections at least
    assert created == open_now + closed
    idle = value(s, "kafka_network_socketserver_networkprocessoravgidlepercent")
    assert 0.0 <= idle <= 1.0


def test_throttle_time_per_quota_type(metered):
    _, _, s, _ = metered
    throttle = value(s, "kafka_server_produce_throttle_time", client_id="throttled")
    assert throttle > 0


def test_counters_grow_with_more_records(metered):
    broker, port, before, _ = metered
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(10):
        producer.produce(TOPIC, b"w" * 1024)
    assert producer.flush(30) == 0
    after = scrape(port)
    assert value(after, "kafka_server_brokertopicmetrics_messagesinpersec", topic=TOPIC) == RECORDS + 10
    assert value(after, "kafka_log_log_logendoffset", topic=TOPIC, partition="0") == RECORDS + 10
    grown = (value(after, "kafka_server_brokertopicmetrics_bytesinpersec", topic=TOPIC)
             - value(before, "kafka_server_brokertopicmetrics_bytesinpersec", topic=TOPIC))
    assert grown == (value(after, "kafka_log_log_size", topic=TOPIC, partition="0")
                     - value(before, "kafka_log_log_size", topic=TOPIC, partition="0"))


def test_garbage_on_the_metrics_port_gets_400_and_the_broker_goes_on(metered):
    broker, port, _, _ = metered
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"\x00\xff garbage\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 404")
    assert scrape(port)["kafka_server_replicamanager_partitioncount"]
    assert broker.alive


def test_off_by_default(tmp_path):
    with BrokerProcess(tmp_path / "b") as broker:
        broker.start()
        assert "serving Prometheus metrics" not in broker.log()
