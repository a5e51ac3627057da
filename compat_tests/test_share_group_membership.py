"""Share-group membership in __consumer_offsets, judged by Apache Kafka 4.2.

- The records: the same Java KafkaShareConsumer (``jvm/ShareConsumerDriver.java``) session runs against Kafka 4.2
  and against pykbroker; Kafka 4.2's own ``kafka-dump-log --offsets-decoder`` (DumpLogSegments) must decode every
  record pykbroker wrote, and the share-group records (types 10-15) must carry the same fields, at the same
  versions, as Kafka's.
- They take about 2.5 minutes (a Kafka 4.2, a cluster, JVM clients), so they run with ``make test-share-slow``
  (PYKBROKER_SHARE_SLOW=1), not in ``make test``; tests/pykbroker/handlers/test_share_groups.py keeps a short
  restart check there.
- ``kill -9`` of the group coordinator (a single node, and the coordinator of a 3-broker ZooKeeper cluster): the
  members are stopped (SIGSTOP) so that they do not heartbeat, and Kafka 4.2's ``kafka-share-groups --describe``
  answers the same before the kill and after the restart or failover; the members, resumed, go on with their
  epochs (no rejoin) and consume the rest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, KafkaBroker, jars_dir
from compat_tests.jvm.single_file import run_args
from compat_tests.test_share_groups import create_topic, enable_share_groups, produce, set_group_configs
from compat_tests.test_share_groups_cluster import DRIVER, JAVA, Driver, coordinator_of, judge, leader_of
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import (
    AlterShareGroupOffsetsRequest,
    CreateTopicsRequest,
    MetadataRequest,
    ShareGroupDescribeRequest,
)
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.create_topics_request import CreatableTopic

if shutil.which("java") is None:
    pytest.skip("java is not installed: share groups are judged by Apache Kafka 4.2", allow_module_level=True)
if not os.environ.get("PYKBROKER_SHARE_SLOW"):  # ~2.5 minutes: `make test-share-slow`, not `make test`
    pytest.skip("set PYKBROKER_SHARE_SLOW=1 (make test-share-slow) to run", allow_module_level=True)

SHARE_TYPES = {"10", "11", "12", "13", "14", "15"}


@pytest.fixture(scope="module")
def jars() -> Path:
    found = jars_dir(SHARE_GROUPS_JUDGE)
    if found is None:
        pytest.skip(f"Kafka {SHARE_GROUPS_JUDGE}'s jars are missing and fetch_jars.sh could not fetch them")
    return found


def dump_offsets(jars: Path, log_dir: Path) -> list[tuple[dict, dict | None]]:
    """Every record of every __consumer_offsets-* segment under ``log_dir``, as Kafka's DumpLogSegments decodes it."""
    files = sorted(str(f) for f in log_dir.glob("__consumer_offsets-*/*.log") if f.stat().st_size > 0)
    if not files:
        return []
    out = subprocess.run([*JAVA, "-cp", f"{jars}/*", "kafka.tools.DumpLogSegments", "--offsets-decoder",
                          "--files", ",".join(files)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    decoded = []
    for line in out.stdout.splitlines():
        m = re.search(r"key: (\{.*\}) payload: (\{.*\}|<DELETE>|null)\s*$", line)
        if m:
            payload = m.group(2)
            decoded.append((json.loads(m.group(1)), None if payload in ("<DELETE>", "null") else json.loads(payload)))
        elif "offset:" in line and "key:" in line:
            raise AssertionError(f"kafka-dump-log could not decode: {line}")
    return decoded


def shape(decoded: list[tuple[dict, dict | None]], group: str) -> dict[str, set]:
    """Record type -> the (key fields, value version, value fields) of the group's share records."""
    out: dict[str, set] = {}
    for key, payload in decoded:
        if str(key["type"]) in SHARE_TYPES and key["data"]["groupId"] == group:
            value = None if payload is None else (payload["version"], tuple(sorted(payload["data"])))
            out.setdefault(str(key["type"]), set()).add((tuple(sorted(key["data"])), value))
    return out


def run_driver(jars: Path, bootstrap: str, group: str, topic: str, count: int) -> list[str]:
    proc = subprocess.run([*JAVA, *run_args(DRIVER, jars), bootstrap, group, topic, str(count), "60"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and f"DONE {count}" in proc.stdout, (proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout.splitlines()


def share_session(jars: Path, bootstrap: str, enable: bool) -> str:
    """A topic, a group starting at the earliest offset, 20 records consumed by one Java share consumer that then
    closes (leaves). Returns the group id."""
    if enable:
        enable_share_groups(bootstrap)
    topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 2)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest")
    produce(bootstrap, topic, 20, 2)
    run_driver(jars, bootstrap, group, topic, 20)
    return group


def test_kafka_4_2_decodes_our_share_group_records_as_its_own(jars, tmp_path):
    kafka = KafkaBroker(jars, tmp_path / "kafka")
    kafka.start()
    try:
        kafka_group = share_session(jars, kafka.bootstrap, enable=False)
        kafka_records = dump_offsets(jars, kafka.root / "logs")
    finally:
        kafka.close()
    b = BrokerProcess(tmp_path / "pykbroker").start()
    try:
        our_group = share_session(jars, b.bootstrap, enable=True)
        ours = dump_offsets(jars, b.data_dir / "logs")
    finally:
        b.close()
    theirs, mine = shape(kafka_records, kafka_group), shape(ours, our_group)
    assert mine == theirs, (mine, theirs)
    # the values say the same: the member's subscription and client, its assignment, the initialized partitions
    for records, group in ((kafka_records, kafka_group), (ours, our_group)):
        members = [p["data"] for k, p in records if str(k["type"]) == "10" and k["data"]["groupId"] == group and p]
        assert members and members[0]["clientId"] == "share-driver" and len(members[0]["subscribedTopicNames"]) == 1
        current = [p["data"] for k, p in records if str(k["type"]) == "14" and k["data"]["groupId"] == group and p]
        assert sorted(p for tp in current[-1]["assignedPartitions"] for p in tp["partitions"]) == [0, 1]
        initialized = [p["data"] for k, p in records if str(k["type"]) == "15" and k["data"]["groupId"] == group and p]
        assert sorted(p for t in initialized[-1]["initializedTopics"] for p in t["partitions"]) == [0, 1]


# -- kill -9 of the coordinator ------------------------------------------------------------------------------
TOTAL = 4000


class Members:
    """Two Java share consumers of one group, paused after each poll so a test can act in the middle."""

    def __init__(self, jars: Path, bootstrap: str, group: str, topic: str) -> None:
        self.drivers = [Driver(jars, bootstrap, group, topic, TOTAL, 150, pause_ms=500) for _ in range(2)]

    def confirmed(self) -> set[tuple[int, int]]:
        return {(int(p), int(o)) for d in self.drivers for line in list(d.lines) if line.startswith("ACK ")
                for _, p, o in [line.split()]}

    def signal(self, sig: int) -> None:
        for d in self.drivers:
            os.kill(d.proc.pid, sig)

    def wait_for_all(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.confirmed()) < TOTAL:
            assert time.monotonic() < deadline, f"{len(self.confirmed())} of {TOTAL}: {self.drivers[0].tail()}"
            time.sleep(0.2)

    def close(self) -> list[list[str]]:
        for d in self.drivers:
            if d.proc.poll() is None:
                os.kill(d.proc.pid, signal.SIGCONT)
                d.proc.terminate()
        return [d.finish(30) for d in self.drivers]


def described(bootstrap: str, group: str, must_exist: bool = True) -> tuple:
    """The group as ShareGroupDescribe answers it on its coordinator: epochs, members, their epochs and partitions."""
    bootstrap = bootstrap.split(",")[0]
    node = coordinator_of(bootstrap, 0, group)
    with RawClient(bootstrap, timeout=30) as c:
        md = c.request(MetadataRequest(topics=[]), 12)
    address = next(f"{b.host}:{b.port}" for b in md.brokers if b.node_id == node)
    with RawClient(address, timeout=30) as c:
        g = c.request(ShareGroupDescribeRequest(group_ids=[group]), 1).groups[0]
    if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND and not must_exist:
        return ("", -1, -1, [])
    assert g.error_code == ErrorCode.NONE, g
    return (g.group_state, g.group_epoch, g.assignment_epoch, sorted(
        (m.member_id, m.member_epoch, m.client_id, tuple(sorted((tp.topic_name, tuple(tp.partitions))
                                                                for tp in m.assignment.topic_partitions)))
        for m in g.members))


def tool(jars: Path, bootstrap: str, group: str, *what: str) -> list[list[str]]:
    done = subprocess.run([*JAVA, "-cp", f"{jars}/*", "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
                           "--bootstrap-server", bootstrap, "--describe", "--group", group, *what],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"kafka-share-groups --describe {what}: {done.stdout}\n{done.stderr}"
    return sorted(line.split() for line in done.stdout.strip().splitlines() if line.strip())


def stable_with_two_members(bootstrap: str, group: str, members: Members) -> tuple:
    """Wait until both members confirmed records and hold their assignment at the group's epoch; then stop them."""
    deadline = time.monotonic() + 90
    while True:
        acks = [sum(1 for line in list(d.lines) if line.startswith("ACK ")) for d in members.drivers]
        state = described(bootstrap, group, must_exist=False)
        if min(acks) > 0 and len(state[3]) == 2 and all(m[1] == state[2] and m[3] for m in state[3]):
            members.signal(signal.SIGSTOP)
            time.sleep(1)  # requests already sent are answered; nothing new comes
            again = described(bootstrap, group)
            if again == state:
                return state
            members.signal(signal.SIGCONT)
        assert time.monotonic() < deadline, (acks, state, members.drivers[0].tail())
        assert len(members.confirmed()) < TOTAL, "all was consumed before the members were stopped"
        time.sleep(0.3)


def survives_the_kill(jars: Path, bootstrap: str, group: str, topic: str, kill_coordinator) -> None:
    members = Members(jars, bootstrap, group, topic)
    try:
        before = stable_with_two_members(bootstrap, group, members)
        tool_before = tool(jars, bootstrap, group, "--members"), tool(jars, bootstrap, group, "--offsets")
        survivor = kill_coordinator()
        after = described(survivor, group)
        assert after == before
        assert (tool(jars, survivor, group, "--members"), tool(jars, survivor, group, "--offsets")) == tool_before
        members.signal(signal.SIGCONT)
        members.wait_for_all(120)
        # the members went on with their epochs: no one rejoined, the group epoch never moved
        final = described(survivor, group)
        assert (final[1], [m[0] for m in final[3]]) == (before[1], [m[0] for m in before[3]]), (final, before)
    finally:
        lines = members.close()
    for driver_lines in lines:
        assert not judge(driver_lines, 2)["redelivered after confirmation"]


def test_kill_9_of_a_single_node_keeps_the_share_group(jars, tmp_path):
    b = BrokerProcess(tmp_path / "broker").start()
    try:
        enable_share_groups(b.bootstrap)
        topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
        create_topic(b.bootstrap, topic, 2)
        set_group_configs(b.bootstrap, group, share_auto_offset_reset="earliest")
        produce(b.bootstrap, topic, TOTAL, 2)

        def kill() -> str:
            b.kill()
            b.start()
            return b.bootstrap
        survives_the_kill(jars, b.bootstrap, group, topic, kill)
    finally:
        b.close()


def test_kill_9_of_the_group_coordinator_in_a_cluster_keeps_the_share_group(jars, tmp_path):
    overrides = {"group.share.enable": "true", "default.replication.factor": "3", "min.insync.replicas": "2",
                 "offsets.topic.num.partitions": "3", "share.coordinator.state.topic.num.partitions": "3"}
    with ClusterProcesses(tmp_path, size=3, overrides=overrides) as cluster:
        bootstrap = cluster.broker(1).bootstrap
        topic, group = f"share-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
        with RawClient(bootstrap, timeout=30) as c:
            r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
                CreatableTopic(name=topic, num_partitions=2, replication_factor=3)]), 7)
            assert r.topics[0].error_code == ErrorCode.NONE, r
        deadline = time.monotonic() + 30
        while min(leader_of(bootstrap, topic, p) for p in (0, 1)) < 0:
            assert time.monotonic() < deadline, "no leaders"
            time.sleep(0.1)
        # no group configs in ZooKeeper mode: the group starts at offset 0 by a reset on its coordinator
        with RawClient(cluster.broker(coordinator_of(bootstrap, 0, group)).bootstrap, timeout=30) as c:
            r = c.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[AlterShareGroupOffsetsRequestTopic(
                topic_name=topic, partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=0)
                                              for p in (0, 1)])]), 0)
            assert r.error_code == ErrorCode.NONE, r
        produce(cluster.bootstrap, topic, TOTAL, 2)
        victim = coordinator_of(bootstrap, 0, group)

        def kill() -> str:
            cluster.broker(victim).kill()
            survivor = cluster.broker(next(n for n in (1, 2, 3) if n != victim)).bootstrap
            deadline = time.monotonic() + 60
            while coordinator_of(survivor, 0, group) == victim:  # the controller moves leadership off the dead
                assert time.monotonic() < deadline, "the group kept no coordinator but the killed broker"
                time.sleep(0.2)
            return survivor
        survives_the_kill(jars, cluster.bootstrap, group, topic, kill)
