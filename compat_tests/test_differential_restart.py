"""A single node restarted, judged by Apache Kafka 4.4: the same scenario against a real Kafka node and a
pykbroker, each stopped cleanly once and killed with -9 once between produces.

A KRaft node that starts again fences its previous registration (its partitions lose their leader, epoch + 1)
and leads them again once unfenced (epoch + 1), so every restart, clean or not, moves each partition two leader
epochs on. Clients see it in Metadata, in the epochs that OffsetForLeaderEpoch and ListOffsets answer, and in
the fencing of a request that names the old epoch.

With PYKBROKER_SLOW_DIFFERENTIAL=1 only (``make differential-cluster``): a minute of restarts.
"""

from __future__ import annotations

import os
import time

import pytest

from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreateTopicsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.offset_for_leader_epoch_request import OffsetForLeaderPartition, OffsetForLeaderTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

TOPIC = "restarted"


def _led(bootstrap: str, deadline_s: float = 60.0) -> list[tuple[int, int, int, int]]:
    """(partition, error, leader, epoch) once every partition has a leader again (Kafka elects after unfencing)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            with RawClient(bootstrap, timeout=10) as c:
                r = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)],
                                              allow_auto_topic_creation=False), 12)
            parts = sorted((p.partition_index, p.error_code, p.leader_id, p.leader_epoch)
                           for t in r.topics for p in t.partitions)
            if parts and all(error == 0 and leader >= 0 for _, error, leader, _ in parts):
                return parts
        except OSError:
            pass  # the node is still starting
        assert time.monotonic() < deadline, f"{bootstrap}: {TOPIC}'s partitions have no leader after restarting"
        time.sleep(0.1)


def _produce(bootstrap: str, values: list[bytes]) -> int:
    with RawClient(bootstrap, timeout=30) as c:
        r = c.request(ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[TopicProduceData(
            name=TOPIC, partition_data=[PartitionProduceData(index=0, records=build_simple_batch(
                values, timestamp=int(time.time() * 1000)))])]), 9)
    return r.responses[0].partition_responses[0].error_code


def _epochs_seen(bootstrap: str, current_epoch: int) -> dict[str, object]:
    out: dict[str, object] = {}
    with RawClient(bootstrap, timeout=30) as c:
        for asked in range(current_epoch + 2):
            r = c.request(OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderTopic(
                topic=TOPIC, partitions=[OffsetForLeaderPartition(partition=0, current_leader_epoch=-1,
                                                                   leader_epoch=asked)])]), 4)
            p = r.topics[0].partitions[0]
            out[f"offset for epoch {asked}"] = (p.error_code, p.leader_epoch, p.end_offset)
        for name, current in (("old", 0), ("current", current_epoch), ("future", current_epoch + 1)):
            r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=TOPIC, partitions=[
                ListOffsetsPartition(partition_index=0, current_leader_epoch=current, timestamp=-1)])]), 7)
            p = r.topics[0].partitions[0]
            out[f"list offsets latest, {name} epoch"] = (p.error_code, p.offset, p.leader_epoch)
    return out


def observe(node: KafkaBroker | BrokerProcess) -> dict[str, object]:
    out: dict[str, object] = {}
    with RawClient(node.bootstrap, timeout=30) as c:
        created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=TOPIC, num_partitions=2,
                                                                       replication_factor=1)], timeout_ms=10000), 5)
        out["create"] = created.topics[0].error_code
        c.wait_for_topics(TOPIC)
    out["created: leaders"] = _led(node.bootstrap)
    out["produce 3"] = _produce(node.bootstrap, [b"a", b"b", b"c"])
    node.stop()
    node.start()
    out["clean restart: leaders"] = led = _led(node.bootstrap)
    out["produce 2"] = _produce(node.bootstrap, [b"d", b"e"])
    node.kill()
    node.start()
    out["kill -9 and start: leaders"] = led = _led(node.bootstrap)
    out["produce 1"] = _produce(node.bootstrap, [b"f"])
    out.update(_epochs_seen(node.bootstrap, led[0][3]))
    return out


@pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                    reason="a minute of restarts: make differential-cluster (PYKBROKER_SLOW_DIFFERENTIAL=1)")
def test_restarts_start_new_leader_epochs_as_kafka(tmp_path):
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars"
    kafka = KafkaBroker(jars, root=tmp_path / "kafka")
    kafka.start()
    try:
        expected = observe(kafka)
    finally:
        kafka.close()
    broker = BrokerProcess(tmp_path / "pykbroker")
    broker.start()
    try:
        got = observe(broker)
    finally:
        broker.close()
    assert expected["kill -9 and start: leaders"] == [(0, ErrorCode.NONE, 1, 4), (1, ErrorCode.NONE, 1, 4)]
    assert got == expected
