"""MirrorMaker 2 from one pykbroker to another, judged by MirrorMaker 2 from one Kafka 4.4 to another.

A dedicated MirrorMaker (org.apache.kafka.connect.mirror.MirrorMaker, 4.3.1: connect-mirror 4.4.0 is not on
Maven Central, see compat_tests/jvm/mirror/pom.xml) runs its three connectors from cluster ``src`` to cluster
``dst``, on one node each and on two 3-broker clusters (the judge: two 3-node Kafka 4.4 clusters; one side runs
at a time, the machine has two cores):

- MirrorSourceConnector copies a topic (records, partitions, configs) as ``src.<topic>``, adds the partitions
  added on the source, syncs a config altered on the source, and with ``sync.topic.acls.enabled`` asks the
  source's DescribeAcls: without an authorizer both answer SECURITY_DISABLED and MirrorMaker logs it and goes on;
- MirrorCheckpointConnector (``emit.checkpoints``, ``sync.group.offsets.enabled``) writes checkpoints to
  ``src.checkpoints.internal`` and commits the translated offsets of idle source groups on the target. What
  MirrorMaker 4.3 guarantees (OffsetSyncStore.translateDownstream) is judged: a translated offset is never past
  the true equivalent (here the same offset: the target topic is a fresh copy), a group caught up at a sync
  point (the end of its partitions: the last record's offset sync) is translated exactly, a group behind is
  translated to at most where it stands or not at all (whichever sync MirrorMaker happened to emit);
- MirrorHeartbeatConnector writes heartbeats (``src`` -> ``dst``) to ``heartbeats`` on the target.

Between two single nodes with StandardAuthorizer, the topic ACLs MirrorMaker syncs (LITERAL ones of mirrored
topics, renamed; ALLOW WRITE dropped, ALLOW ALL downgraded to READ, PREFIXED ones left) are judged too.

The observations (records, partitions, configs, the caught-up group's offsets and its last checkpoints, the
invariants, the heartbeats, the internal topics, the ACL answer and MirrorMaker's ERROR lines) must be equal.
Minutes of JVM work: PYKBROKER_MIRROR_SLOW=1 (``make test-mirror-slow``).
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from compat_tests.conftest import KAFKA_44, judge_jars, pykbroker_cluster, started_kafka_cluster
from compat_tests.connect_workers import MirrorMaker, mirror_jars
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import DescribeAclsRequest

SLOW = os.environ.get("PYKBROKER_MIRROR_SLOW") == "1"
pytestmark = pytest.mark.skipif(not SLOW, reason="set PYKBROKER_MIRROR_SLOW=1 (make test-mirror-slow)")
RECORDS = 200
PARTITIONS = 2
ADDED = 20  # records produced into the partition added on the source
FAILOVER = 10  # records produced on the source once the group has failed over to the target
BEHIND = {0: 60, 1: 40}  # the lagging group's committed offsets
# synced (retention.ms, max.message.bytes, segment.ms) and excluded by MirrorMaker's default filter (the rest)
SOURCE_CONFIGS = {"retention.ms": "123456789", "max.message.bytes": "2000000", "segment.ms": "86400000",
                  "min.insync.replicas": "1", "message.timestamp.type": "LogAppendTime"}
NO_ACL_AUTHORIZER = "No ACL authorizer is configured on the source Kafka cluster"
KAFKA_HEAP = "-Xmx320m"
COORDINATOR_MOVING = (KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
                      KafkaError.COORDINATOR_LOAD_IN_PROGRESS)


@pytest.fixture(scope="module")
def jars() -> Path:
    found = mirror_jars()
    if found is None:
        pytest.skip("java or Maven is missing: MirrorMaker 2 cannot run")
    return found


@contextlib.contextmanager
def kafka_pair(mode: str, root: Path) -> Iterator[tuple[str, str]]:
    """Two Kafka 4.4 clusters (one node or three each), killed after."""
    if mode == "cluster":
        with started_kafka_cluster(judge_jars(KAFKA_44), root / "a", heap=KAFKA_HEAP) as a, \
                started_kafka_cluster(judge_jars(KAFKA_44), root / "b", heap=KAFKA_HEAP) as b:
            yield a.bootstrap, b.bootstrap
        return
    nodes = [KafkaBroker(judge_jars(KAFKA_44), root / name) for name in ("a", "b")]
    try:
        for node in nodes:
            node.start()
        yield nodes[0].bootstrap, nodes[1].bootstrap
    finally:
        for node in nodes:
            node.kill()
            node.close()


@contextlib.contextmanager
def pykbroker_pair(mode: str, root: Path) -> Iterator[tuple[str, str]]:
    """Two pykbroker clusters (one broker, or three with their ZooKeeper, each), stopped after."""
    if mode == "cluster":
        with contextlib.ExitStack() as stack:
            a, b = (stack.enter_context(contextlib.contextmanager(pykbroker_cluster)(root / n)) for n in ("a", "b"))
            yield a.bootstrap, b.bootstrap
        return
    with BrokerProcess(root / "a" / "broker") as a, BrokerProcess(root / "b" / "broker") as b:
        yield a.bootstrap, b.bootstrap


def mm2_properties(source: str, target: str, replication: int) -> dict[str, str]:
    internal = ("replication.factor", "checkpoints.topic.replication.factor", "heartbeats.topic.replication.factor",
                "offset-syncs.topic.replication.factor", "offset.storage.replication.factor",
                "status.storage.replication.factor", "config.storage.replication.factor")
    return {"clusters": "src, dst", "src.bootstrap.servers": source, "dst.bootstrap.servers": target,
            "src->dst.enabled": "true", "dst->src.enabled": "false",
            "src->dst.topics": "orders-.*", "src->dst.groups": "readers-.*",
            **{key: str(replication) for key in internal},
            # the source task sends its delayed offset syncs (the last record's) on each offset flush (60 s)
            "dst.offset.flush.interval.ms": "1000",
            "emit.checkpoints.enabled": "true", "sync.group.offsets.enabled": "true",
            "sync.group.offsets.interval.seconds": "1",
            "emit.checkpoints.interval.seconds": "1", "refresh.topics.interval.seconds": "2",
            "refresh.groups.interval.seconds": "2", "sync.topic.configs.interval.seconds": "2",
            "emit.heartbeats.interval.seconds": "1", "offset.lag.max": "0", "sync.topic.acls.enabled": "true",
            "sync.topic.acls.interval.seconds": "2",
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}


def read_records(bootstrap: str, topic: str, partitions: int, want: int, timeout: float) -> list:
    """At least ``want`` records of ``topic`` read from the start (or what arrived by ``timeout``)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assigned-manually",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            got += [m for m in consumer.consume(500, 0.5) if m.error() is None]
    finally:
        consumer.close()
    return got


def read_to_end(bootstrap: str, topic: str) -> list:
    """Every record of ``topic``'s partition 0 up to its high watermark (MirrorMaker's one-partition topics)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assigned-manually",
                         "enable.auto.commit": False})
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), 30)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.monotonic() + 60
        while (not got or got[-1].offset() < end - 1) and end > 0 and time.monotonic() < deadline:
            got += [m for m in consumer.consume(500, 0.5) if m.error() is None]
    finally:
        consumer.close()
    return got


def read_all(bootstrap: str, topic: str, partitions: int, want: int, timeout: float) -> list[tuple[int, str, str]]:
    return sorted((m.partition(), m.key().decode(), m.value().decode())
                  for m in read_records(bootstrap, topic, partitions, want, timeout))


def group_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in committed}


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` for ``group``, which then leaves: an idle group, as MirrorMaker syncs."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                reader.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
                return
            except KafkaException as e:  # the first group of a cluster waits for __consumer_offsets' leaders
                if not (e.args[0].retriable() or e.args[0].code() in COORDINATOR_MOVING) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    finally:
        reader.close()


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-watermarks"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 30)[1] for p in range(partitions)}
    finally:
        consumer.close()


def strings(buf: bytes, at: int, count: int) -> tuple[list[str], int]:
    """``count`` Kafka protocol STRINGs (int16 length, UTF-8) of ``buf`` from ``at``; the offset after them."""
    out = []
    for _ in range(count):
        (n,) = struct.unpack_from(">h", buf, at)
        out.append(buf[at + 2:at + 2 + n].decode())
        at += 2 + n
    return out, at


def checkpoint(key: bytes, value: bytes) -> tuple[str, str, int, int, int]:
    """A MirrorMaker checkpoint record: (group, topic, partition, upstream offset, downstream offset)."""
    (group, topic), at = strings(key, 0, 2)
    (partition,) = struct.unpack_from(">i", key, at)
    version, upstream, downstream = struct.unpack_from(">hqq", value, 0)
    assert version == 0, version
    return group, topic, partition, upstream, downstream


def heartbeat(key: bytes, value: bytes) -> tuple[str, str]:
    """A MirrorMaker heartbeat record's (source alias, target alias)."""
    (source, target), _ = strings(key, 0, 2)
    version, _timestamp = struct.unpack_from(">hq", value, 0)
    assert version == 0, version
    return source, target


def wait_until(condition: Callable[[], bool], timeout: float, what: str, mm: MirrorMaker) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if not mm.alive:
            raise RuntimeError(f"MirrorMaker exited waiting for {what}:\n{mm.log()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} after {timeout} s:\n{mm.log()}")
        time.sleep(0.5)


def describe_acls_answer(bootstrap: str) -> tuple[int, str | None]:
    """DescribeAcls v3's (error code, message) for every topic ACL, as MirrorMaker's ACL sync asks (librdkafka
    hides a top-level SECURITY_DISABLED: it answers an empty list)."""
    with RawClient(bootstrap.split(",")[0]) as c:
        answer = c.request(DescribeAclsRequest(resource_type_filter=2, resource_name_filter=None,
                                               pattern_type_filter=1, principal_filter=None, host_filter=None,
                                               operation=1, permission_type=1), 3)
    return answer.error_code, answer.error_message


def topic_config(admin: AdminClient, topic: str, name: str) -> str | None:
    res = ConfigResource("topic", topic)
    return admin.describe_configs([res])[res].result(30)[name].value


def dynamic_configs(admin: AdminClient, topic: str) -> dict[str, str | None]:
    """``topic``'s configs set on the topic itself (what MirrorMaker synced, on the target)."""
    res = ConfigResource("topic", topic)
    return {name: entry.value for name, entry in admin.describe_configs([res])[res].result(30).items()
            if entry.source in (ConfigSource.DYNAMIC_TOPIC_CONFIG, ConfigSource.DYNAMIC_TOPIC_CONFIG.value)}


def topic_layouts(admin: AdminClient, topics: list[str]) -> dict[str, tuple[int, int, dict]]:
    """Each of ``topics``' (partitions, replication factor, configs set on it) as MirrorMaker created it."""
    described = admin.list_topics(timeout=10).topics
    return {t: (len(described[t].partitions), len(described[t].partitions[0].replicas), dynamic_configs(admin, t))
            for t in topics if t in described}


def fail_over(source: str, target: str, topic: str, mirrored: str, group: str, mm: MirrorMaker) -> list:
    """What ``group`` reads of ``mirrored`` on the target, joining once its offsets there are translated, of
    the records then produced on the source (all of them and nothing before them, if it resumes where it was)."""
    consumer = Consumer({"bootstrap.servers": target, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    got = []
    try:
        consumer.subscribe([mirrored])
        wait_until(lambda: bool(got.extend(m for m in consumer.consume(100, 0.5) if m.error() is None)
                                or consumer.assignment()), 60, f"{group} assigned on the target", mm)
        producer = Producer({"bootstrap.servers": source, "acks": "all", "partitioner": "murmur2_random"})
        for i in range(FAILOVER):
            producer.produce(topic, key=f"f{i}".encode(), value=f"x{i}".encode())
        assert producer.flush(60) == 0
        deadline = time.monotonic() + 120
        while len(got) < FAILOVER and time.monotonic() < deadline:
            got += [m for m in consumer.consume(100, 0.5) if m.error() is None]
        got += [m for m in consumer.consume(100, 2) if m.error() is None]  # and nothing more
    finally:
        consumer.close()
    return sorted((m.partition(), m.key().decode(), m.value().decode()) for m in got)


def mirror(jars: Path, source: str, target: str, root: Path, replication: int) -> dict:
    run = uuid.uuid4().hex[:8]
    topic, caught, behind = f"orders-{run}", f"readers-{run}-caught", f"readers-{run}-behind"
    src_admin = AdminClient({"bootstrap.servers": source})
    src_admin.create_topics([NewTopic(topic, PARTITIONS, replication, config=SOURCE_CONFIGS)])[topic].result(30)
    producer = Producer({"bootstrap.servers": source, "acks": "all", "partitioner": "murmur2_random"})
    for i in range(RECORDS):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(60) == 0
    ends = end_offsets(source, topic, PARTITIONS)
    assert all(ends[p] > BEHIND[p] for p in BEHIND), ends
    commit(source, caught, topic, ends)
    commit(source, behind, topic, BEHIND)
    observed: dict = {"source_ends": ends, "source_behind": group_offsets(source, behind, topic, PARTITIONS),
                      "describe_acls": describe_acls_answer(source)}
    mm = MirrorMaker(jars, root, f"mm2-{run}", mm2_properties(source, target, replication)).start()
    mirrored = f"src.{topic}"
    started = time.monotonic()
    try:
        dst_admin = AdminClient({"bootstrap.servers": target})
        wait_until(lambda: mirrored in dst_admin.list_topics(timeout=10).topics, 180, f"{mirrored} on the target", mm)
        observed["records"] = read_all(target, mirrored, PARTITIONS, RECORDS, 120)
        observed["partitions"] = len(dst_admin.list_topics(timeout=10).topics[mirrored].partitions)
        wait_until(lambda: topic_config(dst_admin, mirrored, "retention.ms") == "123456789", 120,
                   f"{mirrored}'s retention.ms synced", mm)
        observed["retention.ms"] = topic_config(dst_admin, mirrored, "retention.ms")

        # the caught-up group stands at a sync point (past each partition's last record): translated exactly
        wait_until(lambda: group_offsets(target, caught, mirrored, PARTITIONS) == ends, 180,
                   f"{caught}'s offsets translated onto the target", mm)
        observed["caught_target"] = group_offsets(target, caught, mirrored, PARTITIONS)
        translated = group_offsets(target, behind, mirrored, PARTITIONS)
        # a lagging group: at most where it stands, or nothing (-1001) when no sync precedes it
        observed["behind_within_bounds"] = all(o < 0 or o <= BEHIND[p] for p, o in translated.items())
        observed["behind_translated"] = {p: o for p, o in translated.items() if o >= 0}

        def caught_checkpointed() -> bool:
            checkpoints[:] = [checkpoint(m.key(), m.value()) for m in read_to_end(target, "src.checkpoints.internal")]
            last = {p: (up, down) for g, _, p, up, down in checkpoints if g == caught}
            return last == {p: (o, o) for p, o in ends.items()}

        checkpoints: list[tuple[str, str, int, int, int]] = []
        wait_until(caught_checkpointed, 60, f"{caught}'s checkpoints", mm)
        observed["caught_checkpoints"] = {p: (up, down) for g, _, p, up, down in checkpoints if g == caught}
        observed["checkpoints_within_bounds"] = all(down <= up for *_, up, down in checkpoints)
        observed["heartbeats"] = sorted({heartbeat(m.key(), m.value()) for m in read_to_end(target, "heartbeats")})

        # a partition added on the source appears on the target, with what is produced into it
        src_admin.create_partitions([NewPartitions(topic, PARTITIONS + 1)])[topic].result(30)
        producer = Producer({"bootstrap.servers": source, "acks": "all"})
        wait_until(lambda: len(producer.list_topics(topic, timeout=10).topics[topic].partitions) > PARTITIONS, 60,
                   f"{topic}'s new partition on the source", mm)
        for i in range(ADDED):
            producer.produce(topic, key=f"n{i}".encode(), value=f"w{i}".encode(), partition=PARTITIONS)
        assert producer.flush(60) == 0
        wait_until(lambda: len(dst_admin.list_topics(mirrored, timeout=10).topics[mirrored].partitions)
                   > PARTITIONS, 120, f"{mirrored}'s new partition", mm)
        observed["added"] = [r for r in read_all(target, mirrored, PARTITIONS + 1, RECORDS + ADDED, 120)
                             if r[0] == PARTITIONS]

        # the caught-up group reads the new partition to its end on the source: translated onto the target too
        commit(source, caught, topic, {PARTITIONS: ADDED})
        wait_until(lambda: group_offsets(target, caught, mirrored, PARTITIONS + 1) == {**ends, PARTITIONS: ADDED},
                   120, f"{caught}'s offset in the new partition translated", mm)

        # a config altered (set, and one deleted back to its default) on the source is synced
        for future in src_admin.incremental_alter_configs([ConfigResource("topic", topic, incremental_configs=[
                ConfigEntry("retention.ms", "987654321", incremental_operation=AlterConfigOpType.SET),
                ConfigEntry("segment.ms", "", incremental_operation=AlterConfigOpType.DELETE)])]).values():
            future.result(30)
        wait_until(lambda: topic_config(dst_admin, mirrored, "retention.ms") == "987654321"
                   and topic_config(dst_admin, mirrored, "segment.ms") == "604800000", 120,
                   f"{mirrored}'s altered retention.ms and segment.ms synced", mm)
        # failing over: the group resumes on the target from its translated offsets and reads only what is new
        observed["failover"] = fail_over(source, target, topic, mirrored, caught, mm)
        observed["target_topic_configs"] = dynamic_configs(dst_admin, mirrored)
        observed["target_replicas"] = len(dst_admin.list_topics(mirrored, timeout=10).topics[mirrored]
                                          .partitions[0].replicas)

        wait_until(lambda: NO_ACL_AUTHORIZER in mm.log_path.read_text(), 60, "the ACL sync's SECURITY_DISABLED", mm)
        topics = dst_admin.list_topics(timeout=10).topics
        observed["target_internal_topics"] = sorted(t for t in topics if t in (
            "heartbeats", "src.heartbeats", "src.checkpoints.internal", "mm2-offsets.src.internal",
            "mm2-status.src.internal", "mm2-configs.src.internal"))
        observed["target_internal_topic_layouts"] = topic_layouts(dst_admin, observed["target_internal_topics"])
        observed["offset_syncs_topic_on_source"] = topic_layouts(src_admin, ["mm2-offset-syncs.dst.internal"])
        observed["errors"] = sorted({line.split(" ", 3)[-1][:120] for line in mm.log_path.read_text().splitlines()
                                     if " ERROR " in line})
    finally:
        print(f"MirrorMaker on {source} -> {target}: {time.monotonic() - started:.1f} s")
        mm.kill()
    return observed


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_mirror_maker_replicates_topics_configs_and_group_offsets(jars, tmp_path, mode):
    replication = 3 if mode == "cluster" else 1
    with kafka_pair(mode, tmp_path / "kafka") as (source, target):
        expected = mirror(jars, source, target, tmp_path / "kafka", replication)
    with pykbroker_pair(mode, tmp_path / "pykbroker") as (source, target):
        got = mirror(jars, source, target, tmp_path / "pykbroker", replication)
    assert len(expected["records"]) == RECORDS, expected
    assert expected["describe_acls"][0] == ErrorCode.SECURITY_DISABLED, expected
    assert expected["behind_within_bounds"] and expected["checkpoints_within_bounds"], expected
    assert expected["target_topic_configs"].get("retention.ms") == "987654321", expected
    assert len(expected["failover"]) == FAILOVER, expected["failover"]
    print(f"{mode}: Kafka -> Kafka observed", {k: v for k, v in expected.items() if k not in ("records", "added", "failover")})
    expected_behind, got_behind = expected.pop("behind_translated"), got.pop("behind_translated")
    print(f"{mode}: the lagging group translated to {expected_behind} (Kafka), {got_behind} (pykbroker)")
    differences = {k: (expected.get(k), got.get(k)) for k in sorted(set(expected) | set(got))
                   if expected.get(k) != got.get(k)}
    assert not differences, "\n".join(f"{k}:\n  kafka={e!r}\n  pykbroker={g!r}" for k, (e, g) in differences.items())


AUTHORIZED = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}  # every client here (and MirrorMaker) is ANONYMOUS on PLAINTEXT


def acl(name: str, pattern: ResourcePatternType, principal: str, operation: AclOperation,
        permission: AclPermissionType) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, principal, "*", operation, permission)


def topic_acls(bootstrap: str) -> list[tuple[str, str, str, str, str, str]]:
    """Every topic ACL of the cluster: (name, pattern type, principal, host, operation, permission)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    bindings = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None,
                                                    AclOperation.ANY, AclPermissionType.ANY)).result(30)
    return sorted((b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
                   b.permission_type.name) for b in bindings)


def sync_acls(jars: Path, source: str, target: str, root: Path) -> dict:
    """MirrorMaker's topic ACL sync between two clusters with authorizers: the target's topic ACLs."""
    run, topic = uuid.uuid4().hex[:8], "orders-acl"  # fresh clusters: the same names on both sides
    src_admin = AdminClient({"bootstrap.servers": source})
    src_admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    bindings = [acl(topic, ResourcePatternType.LITERAL, "User:alice", AclOperation.READ, AclPermissionType.ALLOW),
                acl(topic, ResourcePatternType.LITERAL, "User:alice", AclOperation.WRITE, AclPermissionType.ALLOW),
                acl(topic, ResourcePatternType.LITERAL, "User:bob", AclOperation.ALL, AclPermissionType.ALLOW),
                acl(topic, ResourcePatternType.LITERAL, "User:mallory", AclOperation.READ, AclPermissionType.DENY),
                acl("orders-", ResourcePatternType.PREFIXED, "User:carol", AclOperation.DESCRIBE,
                    AclPermissionType.ALLOW),
                acl("other", ResourcePatternType.LITERAL, "User:alice", AclOperation.READ,
                    AclPermissionType.ALLOW)]
    for future in src_admin.create_acls(bindings).values():
        future.result(30)
    # what MirrorSourceConnector 4.3 makes of them: LITERAL ACLs of topics its filter takes, renamed; ALLOW WRITE
    # dropped, ALLOW ALL downgraded to READ; PREFIXED ones are not synced
    want = sorted([(f"src.{topic}", "LITERAL", "User:alice", "*", "READ", "ALLOW"),
                   (f"src.{topic}", "LITERAL", "User:bob", "*", "READ", "ALLOW"),
                   (f"src.{topic}", "LITERAL", "User:mallory", "*", "READ", "DENY")])
    mm = MirrorMaker(jars, root, f"mm2-acls-{run}", mm2_properties(source, target, 1)).start()
    observed: dict = {}
    try:
        with contextlib.suppress(TimeoutError):
            wait_until(lambda: topic_acls(target) == want, 120, "the topic ACLs synced", mm)
        observed["target_acls"] = topic_acls(target)
        observed["errors"] = sorted({line.split(" ", 3)[-1][:120] for line in mm.log_path.read_text().splitlines()
                                     if " ERROR " in line})
    finally:
        mm.kill()
    observed["want"] = want
    return observed


@pytest.mark.timeout(900)
def test_mirror_maker_syncs_topic_acls_between_authorized_clusters(jars, tmp_path):
    kafka = [KafkaBroker(judge_jars(KAFKA_44), tmp_path / "kafka" / n, overrides=AUTHORIZED) for n in ("a", "b")]
    try:
        for node in kafka:
            node.start()
        expected = sync_acls(jars, kafka[0].bootstrap, kafka[1].bootstrap, tmp_path / "kafka")
    finally:
        for node in kafka:
            node.kill()
            node.close()
    with BrokerProcess(tmp_path / "pykbroker" / "a", overrides=AUTHORIZED) as a, \
            BrokerProcess(tmp_path / "pykbroker" / "b", overrides=AUTHORIZED) as b:
        got = sync_acls(jars, a.bootstrap, b.bootstrap, tmp_path / "pykbroker")
    assert expected["target_acls"] == expected["want"], expected
    assert got == expected
