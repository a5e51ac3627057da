"""Racks in a real cluster (ZooKeeper and four pykbroker processes on two racks): topic creation spreads each
partition's replicas over the racks, and with Kafka's RackAwareReplicaSelector a consumer with client.rack
reads from the in-sync replica of its rack (KIP-392), falling back to the leader when that replica is gone."""

from __future__ import annotations

import logging
import shutil
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from pykbroker.testing import ClusterProcesses, RawClient
from replication.replica_selector import RACK_AWARE_SELECTOR
from wire.messages import FetchRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")

RACKS = {1: "a", 2: "a", 3: "b", 4: "b"}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with ClusterProcesses(tmp_path_factory.mktemp("racks"), size=0, overrides={
            "replica.selector.class": RACK_AWARE_SELECTOR, "replica.lag.time.max.ms": "4000"}) as c:
        for node_id, rack in RACKS.items():
            c.add_broker(node_id, {"broker.rack": rack})
        c.wait_for_brokers(len(RACKS))
        yield c


def partitions(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    md = admin.list_topics(topic, timeout=10).topics[topic]
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in md.partitions.values()}


def test_every_partition_gets_a_replica_on_each_rack(cluster):
    topic = unique("spread")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 8, 2)])[topic].result(30)
    parts = wait_for(lambda: (p := partitions(admin, topic)) and all(v[0] >= 0 for v in p.values()) and p, "leaders")
    for _leader, replicas, _isr in parts.values():
        assert sorted(RACKS[r] for r in replicas) == ["a", "b"], parts
    assert sorted(replicas[0] for _, replicas, _ in parts.values()) == [1, 1, 2, 2, 3, 3, 4, 4]


def fetch(broker_bootstrap: str, topic: str, rack: str) -> tuple[int, int, int]:
    """A consumer's Fetch v12 of partition 0 from offset 0: (error code, preferred read replica, record bytes)."""
    with RawClient(broker_bootstrap) as c:
        response = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, session_id=0,
                                          session_epoch=-1, rack_id=rack, topics=[FetchTopic(topic=topic, partitions=[
                                              FetchPartition(partition=0, fetch_offset=0,
                                                             partition_max_bytes=1 << 20)])]), 12)
    data = response.responses[0].partitions[0]
    return data.error_code, data.preferred_read_replica, len(bytes(data.records))


def test_a_consumer_reads_from_the_replica_in_its_rack_and_falls_back_to_the_leader(cluster):
    topic = unique("nearby")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 3]])])[topic].result(30)
    wait_for(lambda: partitions(admin, topic)[0] == (1, [1, 3], [1, 3]), "leader 1 with 3 in sync")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce(topic, f"v{i}".encode())
    assert producer.flush(30) == 0
    leader = cluster.broker(1).bootstrap
    # The leader points a client of rack b to broker 3, serves one of rack a (its own) or of no rack itself.
    error, preferred, size = wait_for(lambda: (f := fetch(leader, topic, "b"))[1] == 3 and f, "broker 3 preferred")
    assert (error, size) == (0, 0)
    assert fetch(leader, topic, "a")[1:] == (-1, fetch(leader, topic, "")[2])
    assert fetch(leader, topic, "a")[2] > 0
    # Broker 3 serves it up to its high watermark (which follows the leader's within a replica fetch).
    wait_for(lambda: fetch(cluster.broker(3).bootstrap, topic, "b")[0::2] == (0, fetch(leader, topic, "a")[2]),
             "broker 3 to serve every record")

    served_by: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            served_by.append(record.getMessage())

    capture = logging.getLogger(unique("rdkafka"))
    capture.addHandler(Capture())
    capture.setLevel(logging.DEBUG)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique("g"), "client.rack": "b",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, "debug": "fetch"},
                        logger=capture)
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        got = []
        deadline = time.monotonic() + 30
        while len(got) < 200 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        assert got == [f"v{i}".encode() for i in range(200)]
        # librdkafka says where it reads from: "migrating from broker 1 to 3 (leader is 1): preferred replica updated"
        assert any("migrating from broker 1 to 3" in line and "preferred replica" in line for line in served_by), \
            served_by[-20:]
        # Broker 3 goes away: the consumer reads new records from the leader.
        cluster.broker(3).stop()
        for i in range(200, 250):
            producer.produce(topic, f"v{i}".encode())
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 60
        while len(got) < 250 and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        assert got == [f"v{i}".encode() for i in range(250)]
    finally:
        consumer.close()
        cluster.broker(3).start()
