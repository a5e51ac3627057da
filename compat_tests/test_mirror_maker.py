"""MirrorMaker 2 from one pykbroker to another, judged by MirrorMaker 2 from one Kafka 4.4 to another.

A dedicated MirrorMaker (org.apache.kafka.connect.mirror.MirrorMaker, 4.3.1: connect-mirror 4.4.0 is not on
Maven Central, see compat_tests/jvm/mirror/pom.xml) replicates a topic (its records and configs, as
``src.<topic>``), with checkpoints and group offset sync (sync.group.offsets.enabled) on; ACL sync is on (its
default) and both sides run without an authorizer. The observations on the target (records, partitions,
synced config, the group's offsets there, the internal topics MirrorMaker made, its ERROR lines) must be
equal. Still missing: waiting for the translated group offsets, which Kafka -> Kafka did not sync within 3
minutes in this configuration. Minutes of JVM work: PYKBROKER_CONNECT_SLOW=1 (``make test-connect-slow``).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from compat_tests.conftest import KAFKA_44, judge_jars
from compat_tests.connect_workers import MirrorMaker, mirror_jars
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.testing import BrokerProcess

SLOW = os.environ.get("PYKBROKER_CONNECT_SLOW") == "1"
pytestmark = pytest.mark.skipif(not SLOW, reason="set PYKBROKER_CONNECT_SLOW=1 (make test-connect-slow)")
RECORDS = 200
PARTITIONS = 2


@pytest.fixture(scope="module")
def jars() -> Path:
    found = mirror_jars()
    if found is None:
        pytest.skip("java or Maven is missing: MirrorMaker 2 cannot run")
    return found


def kafka_pair(tmp_path_factory):
    nodes = [KafkaBroker(judge_jars(KAFKA_44), tmp_path_factory.mktemp(f"kafka-{name}")) for name in ("a", "b")]
    try:
        for node in nodes:
            node.start()
        yield tuple(node.bootstrap for node in nodes)
    finally:
        for node in nodes:
            node.kill()
            node.close()


def pykbroker_pair(tmp_path_factory):
    brokers = [BrokerProcess(tmp_path_factory.mktemp(f"pykbroker-{name}") / "broker") for name in ("a", "b")]
    try:
        for broker in brokers:
            broker.start()
        yield tuple(broker.bootstrap for broker in brokers)
    finally:
        for broker in brokers:
            broker.close()


@pytest.fixture(scope="module")
def kafka_single(tmp_path_factory):
    yield from kafka_pair(tmp_path_factory)


@pytest.fixture(scope="module")
def pykbroker_single(tmp_path_factory):
    yield from pykbroker_pair(tmp_path_factory)


def mm2_properties(source: str, target: str, replication: int) -> dict[str, str]:
    internal = ("replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
                "offset-syncs.topic.replication.factor", "offset.storage.replication.factor",
                "status.storage.replication.factor", "config.storage.replication.factor")
    return {"clusters": "src, dst", "src.bootstrap.servers": source, "dst.bootstrap.servers": target,
            "src->dst.enabled": "true", "dst->src.enabled": "false",
            "src->dst.topics": "orders-.*", "src->dst.groups": "readers-.*",
            **{key: str(replication) for key in internal},
            "sync.group.offsets.enabled": "true", "sync.group.offsets.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1", "refresh.topics.interval.seconds": "2",
            "refresh.groups.interval.seconds": "2", "sync.topic.configs.interval.seconds": "2",
            "emit.heartbeats.interval.seconds": "1", "offset.lag.max": "0", "sync.topic.acls.enabled": "true",
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}


def read_all(bootstrap: str, topic: str, partitions: int, want: int, timeout: float) -> list[tuple[int, str, str]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assigned-manually",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list[tuple[int, str, str]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            for m in consumer.consume(500, 0.5):
                if m.error() is None:
                    got.append((m.partition(), m.key().decode(), m.value().decode()))
    finally:
        consumer.close()
    return sorted(got)


def group_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in committed}


def wait_until(condition, timeout: float, what: str, mm: MirrorMaker) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if not mm.alive:
            raise RuntimeError(f"MirrorMaker exited waiting for {what}:\n{mm.log()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout} s:\n{mm.log()}")
        time.sleep(0.5)


def mirror(jars: Path, source: str, target: str, root: Path, replication: int) -> dict:
    run = uuid.uuid4().hex[:8]
    topic, group = f"orders-{run}", f"readers-{run}"
    src_admin = AdminClient({"bootstrap.servers": source})
    src_admin.create_topics([NewTopic(topic, PARTITIONS, replication,
                                      config={"retention.ms": "123456789"})])[topic].result(30)
    producer = Producer({"bootstrap.servers": source, "acks": "all", "partitioner": "murmur2_random"})
    for i in range(RECORDS):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(60) == 0
    reader = Consumer({"bootstrap.servers": source, "group.id": group, "enable.auto.commit": False})
    reader.commit(offsets=[TopicPartition(topic, 0, 60), TopicPartition(topic, 1, 40)], asynchronous=False)
    reader.close()  # the group committed offsets in both partitions, then left (MirrorMaker syncs idle groups)
    source_offsets = group_offsets(source, group, topic)
    mm = MirrorMaker(jars, root, f"mm2-{run}", mm2_properties(source, target, replication)).start()
    observed: dict = {"source_offsets": source_offsets}
    mirrored = f"src.{topic}"
    try:
        dst_admin = AdminClient({"bootstrap.servers": target})
        wait_until(lambda: mirrored in dst_admin.list_topics(timeout=10).topics, 180, f"{mirrored} on the target", mm)
        observed["records"] = read_all(target, mirrored, PARTITIONS, RECORDS, 120)
        observed["partitions"] = len(dst_admin.list_topics(timeout=10).topics[mirrored].partitions)
        observed["retention.ms"] = None

        def config_synced() -> bool:
            res = ConfigResource("topic", mirrored)
            observed["retention.ms"] = dst_admin.describe_configs([res])[res].result(30)["retention.ms"].value
            return observed["retention.ms"] == "123456789"

        wait_until(config_synced, 120, f"{mirrored}'s retention.ms synced", mm)
        # Kafka 4.4 -> Kafka 4.4 did not sync the group's offsets within 3 minutes in this configuration: what the
        # target holds is observed (on both sides) but not yet waited for
        observed["target_offsets"] = group_offsets(target, group, mirrored)
        topics = dst_admin.list_topics(timeout=10).topics
        observed["target_internal_topics"] = sorted(t for t in topics if t in (
            "heartbeats", "src.heartbeats", "src.checkpoints.internal"))
        observed["offset_syncs_topic_on_source"] = "mm2-offset-syncs.dst.internal" in src_admin.list_topics(
            timeout=10).topics
        observed["errors"] = sorted({line.split(" ", 3)[-1][:120] for line in mm.log_path.read_text().splitlines()
                                     if " ERROR " in line})
    finally:
        mm.kill()
    return observed


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("mode", ["single"])
def test_mirror_maker_replicates_topics_configs_and_group_offsets(request, jars, tmp_path, mode):
    (tmp_path / "kafka").mkdir()
    (tmp_path / "pykbroker").mkdir()
    expected = mirror(jars, *request.getfixturevalue("kafka_single"), tmp_path / "kafka", 1)
    got = mirror(jars, *request.getfixturevalue("pykbroker_single"), tmp_path / "pykbroker", 1)
    assert len(expected["records"]) == RECORDS, expected
    assert got == expected
