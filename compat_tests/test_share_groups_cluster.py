"""Share groups survive their brokers: Kafka 4.2's Java KafkaShareConsumer (``jvm/ShareConsumerDriver.java``)
accepts every record while the leader of the partition it reads is killed with ``kill -9`` — on a single node
(restarted) and in a 3-broker ZooKeeper cluster, where the killed broker also coordinates the group and the
share-partition's state: the partition's leadership, the group and the __share_group_state partition move to
other brokers, and the new leader loads the share-partition's state from the new share coordinator. No record
whose acceptance the broker confirmed is delivered again, and every record is accepted in the end. The single
node's run is in make test-share-slow (PYKBROKER_SHARE_SLOW=1): test_share_groups' kill -9 test covers one node
with librdkafka's share consumer, the cluster's run here Java's through kill -9.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, jars_dir
from compat_tests.jvm.single_file import run_args
from compat_tests.test_share_groups import enable_share_groups, produce, set_group_configs
from coordinator.group.partitioner import partition_for
from coordinator.share.coordinator import coordinator_key
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import (
    AlterShareGroupOffsetsRequest,
    CreateTopicsRequest,
    FindCoordinatorRequest,
    ListGroupsRequest,
    MetadataRequest,
)
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.metadata_request import MetadataRequestTopic

if shutil.which("java") is None:
    pytest.skip("java is not installed: the share consumer is Kafka 4.2's Java client", allow_module_level=True)

DRIVER = Path(__file__).resolve().parent / "jvm" / "ShareConsumerDriver.java"
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
TOTAL = 3000
PAUSE_MS = 100


@pytest.fixture(scope="module")
def jars() -> Path:
    found = jars_dir(SHARE_GROUPS_JUDGE)
    if found is None:
        pytest.skip(f"Kafka {SHARE_GROUPS_JUDGE}'s jars are missing and fetch_jars.sh could not fetch them")
    return found


class Driver:
    """The Java share consumer in the background; its lines are collected as they come."""

    def __init__(self, jars: Path, bootstrap: str, group: str, topic: str, count: int, seconds: int,
                 pause_ms: int = PAUSE_MS) -> None:
        # 100 records a poll and a pause after each: consumption lasts long enough to kill a broker in its middle
        self.proc = subprocess.Popen([*JAVA, *run_args(DRIVER, jars), bootstrap, group, topic, str(count),
                                      str(seconds), str(pause_ms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     stdin=subprocess.DEVNULL)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def confirmed(self, partition: int | None = None) -> int:
        prefix = "ACK " if partition is None else f"ACK {partition} "
        return sum(1 for line in list(self.lines) if line.startswith(prefix))

    def wait_for_confirmed(self, n: int, timeout: float, partition: int | None = None) -> None:
        deadline = time.monotonic() + timeout
        while self.confirmed(partition) < n:
            assert self.proc.poll() is None, f"the share consumer ended early: {self.tail()}"
            assert time.monotonic() < deadline, f"{self.confirmed()} of {n} confirmed: {self.tail()}"
            time.sleep(0.1)

    def finish(self, timeout: float) -> list[str]:
        try:
            self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(10)
        return list(self.lines)

    def tail(self) -> str:
        stderr = ""
        if self.proc.poll() is not None and self.proc.stderr is not None:
            stderr = self.proc.stderr.read()[-3000:]
        return "\n".join(self.lines[-15:]) + "\n" + stderr


def judge(lines: list[str], partitions: int) -> dict:
    """Walk the consumer's lines in order: a record delivered after its acceptance was confirmed is a
    redelivery of an acknowledged record; a record never confirmed is lost."""
    confirmed: set[tuple[int, int]] = set()
    redelivered = []
    delivered = 0
    for line in lines:
        kind, *rest = line.split()
        if kind == "GOT":
            delivered += 1
            record = (int(rest[0]), int(rest[1]))
            if record in confirmed:
                redelivered.append(line)
        elif kind == "ACK":
            confirmed.add((int(rest[0]), int(rest[1])))
    everything = {(p, o) for p in range(partitions) for o in range(TOTAL // partitions)}
    return {"redelivered after confirmation": redelivered, "lost": sorted(everything - confirmed)[:20],
            "delivered": delivered, "errors": [line for line in lines if line.startswith("ERR")][:5]}


def leader_of(bootstrap: str, topic: str, partition: int) -> int:
    with RawClient(bootstrap.split(",")[0], timeout=30) as c:
        md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 12)
        return next((p.leader_id for p in md.topics[0].partitions if p.partition_index == partition), -1)


def coordinator_of(bootstrap: str, key_type: int, key: str) -> int:
    """FindCoordinator (v6; creates the coordinator topic on first use), asked until it names a node."""
    deadline = time.monotonic() + 60
    with RawClient(bootstrap, timeout=30) as c:
        while True:
            found = c.request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), 6).coordinators[0]
            if found.error_code == ErrorCode.NONE:
                return found.node_id
            assert time.monotonic() < deadline, found
            time.sleep(0.2)


@pytest.mark.skipif(os.environ.get("PYKBROKER_SHARE_SLOW") != "1",
                    reason="one node's kill -9 under the Java share consumer: make test-share-slow (PYKBROKER_SHARE_SLOW=1)")
def test_kill_9_of_a_single_node_during_java_share_consumption(jars, tmp_path):
    b = BrokerProcess(tmp_path / "broker").start()
    try:
        enable_share_groups(b.bootstrap)
        topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
        with RawClient(b.bootstrap, timeout=30) as c:
            r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
                CreatableTopic(name=topic, num_partitions=2, replication_factor=1)]), 7)
            assert r.topics[0].error_code == ErrorCode.NONE, r
            c.wait_for_topics(topic, timeout=30)
        set_group_configs(b.bootstrap, group, share_auto_offset_reset="earliest")
        produce(b.bootstrap, topic, TOTAL, 2)
        driver = Driver(jars, b.bootstrap, group, topic, TOTAL, 150)
        driver.wait_for_confirmed(TOTAL // 3, 90)
        b.kill()
        killed_at = len(driver.lines)
        assert driver.confirmed() < TOTAL, "all was consumed before the broker was killed"
        b.start()
        lines = driver.finish(180)
        assert any(line.startswith("ACK ") for line in lines[killed_at:])
    finally:
        b.close()
    result = judge(lines, 2)
    assert not result["redelivered after confirmation"], result
    assert not result["lost"], result


def test_kill_9_of_the_partition_leader_in_a_cluster_during_java_share_consumption(jars, tmp_path):
    overrides = {"group.share.enable": "true", "default.replication.factor": "3", "min.insync.replicas": "2",
                 "offsets.topic.num.partitions": "5", "share.coordinator.state.topic.num.partitions": "5"}
    with ClusterProcesses(tmp_path, size=3, overrides=overrides) as cluster:
        bootstrap = cluster.bootstrap
        topic = f"share-{uuid.uuid4().hex[:8]}"
        with RawClient(cluster.broker(2).bootstrap, timeout=30) as c:
            r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
                name=topic, num_partitions=-1, replication_factor=-1, assignments=[
                    CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2, 3]),
                    CreatableReplicaAssignment(partition_index=1, broker_ids=[2, 3, 1])])]), 7)
            assert r.topics[0].error_code == ErrorCode.NONE, r
        deadline = time.monotonic() + 30  # the producer retries until each leader serves its partition
        while min(leader_of(cluster.broker(2).bootstrap, topic, p) for p in (0, 1)) < 0:
            assert time.monotonic() < deadline, "no leaders"
            time.sleep(0.1)
        # a group whose coordinator and whose partition 0 share coordinator are partition 0's leader
        asked = cluster.broker(2).bootstrap
        with RawClient(asked, timeout=30) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 12)
        topic_id, victim = md.topics[0].topic_id, leader_of(asked, topic, 0)
        coordinator_of(asked, 0, "any-group")
        coordinator_of(asked, 2, coordinator_key(("any-group", topic_id, 0)))
        group_leaders = {p: leader_of(asked, "__consumer_offsets", p) for p in range(5)}
        state_leaders = {p: leader_of(asked, "__share_group_state", p) for p in range(5)}
        group = next(g for g in (f"sg-{uuid.uuid4().hex[:8]}" for _ in range(1000))
                     if group_leaders[partition_for(g, 5)] == victim
                     and state_leaders[partition_for(coordinator_key((g, topic_id, 0)), 5)] == victim)
        # ZooKeeper mode has no group configs: the group starts at offset 0 by an offsets reset (as
        # kafka-share-groups --reset-offsets --to-earliest does) before it has members, on its coordinator
        with RawClient(cluster.broker(victim).bootstrap, timeout=30) as c:
            r = c.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[AlterShareGroupOffsetsRequestTopic(
                topic_name=topic, partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=0)
                                              for p in (0, 1)])]), 0)
            assert r.error_code == ErrorCode.NONE and all(
                p.error_code == ErrorCode.NONE for t in r.responses for p in t.partitions), r
        produce(bootstrap, topic, TOTAL, 2)
        driver = Driver(jars, bootstrap, group, topic, TOTAL, 200)
        driver.wait_for_confirmed(TOTAL // 6, 120, partition=0)  # a third of partition 0's records
        assert coordinator_of(asked, 0, group) == victim
        assert coordinator_of(asked, 2, coordinator_key((group, topic_id, 0))) == victim
        cluster.broker(victim).kill()
        killed_at = len(driver.lines)
        assert driver.confirmed() < TOTAL, "all was consumed before the leader was killed"
        survivor = cluster.broker(next(n for n in (1, 2, 3) if n != victim)).bootstrap
        deadline = time.monotonic() + 60
        while leader_of(survivor, topic, 0) in (victim, -1):  # the controller moves leadership off the dead broker
            assert time.monotonic() < deadline, "partition 0 kept no leader but the killed broker"
            time.sleep(0.2)
        lines = driver.finish(240)
        logs = {n: b.log()[-3000:] for n, b in cluster.brokers.items() if n != victim}
        # ListGroups (as kafka-share-groups --list asks every broker): the group once, from its new coordinator
        listed = []
        for n, b in cluster.brokers.items():
            if n != victim:
                with RawClient(b.bootstrap, timeout=30) as c:
                    r = c.request(ListGroupsRequest(types_filter=["share"]), 5)
                    listed += [n for g in r.groups if g.group_id == group]
        assert listed == [coordinator_of(survivor, 0, group)], listed
    result = judge(lines, 2)
    # partition 0 went on from its new leader, which loaded the share-partition's state
    assert any(line.startswith("ACK 0 ") for line in lines[killed_at:]), (result, logs)
    assert not result["redelivered after confirmation"], (result, logs)
    assert not result["lost"], (result, logs)
