"""Offset commits of many groups of one __consumer_offsets partition on three brokers, through a kill -9 of their
coordinator: no acknowledged commit is lost, on pykbroker as on Kafka 4.4.

pykbroker's coordinator runtime pipelines a partition's writes as Kafka's CoordinatorRuntime does: a commit is
applied and written at once, the next group's commit runs at once, and each answer is held until the high
watermark passes its records. What makes that safe is the hold: a commit answered NONE is on every in-sync
replica, so the broker that takes the partition over after a kill -9 of the coordinator replays it. Eight
connections commit back to back (each to its own group, all groups on one partition); the coordinator is killed
mid-stream; the new coordinator's OffsetFetch (require_stable) must give every group at least the last offset
it acknowledged (an unanswered commit may or may not have made it, on either broker). The same scenario runs
against a 3-node Kafka 4.4 cluster, which must pass the same checks.
"""

from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

from compat_tests.conftest import judge_jars, started_kafka_cluster
from coordinator.group.partitioner import partition_for
from pykbroker.testing import ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import (
    CreateTopicsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
)
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_fetch_request import OffsetFetchRequestGroup, OffsetFetchRequestTopics

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka need java"),
    pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                       reason="broker kills on two clusters: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)"),
]

TOPIC = "pipelined-commits"
GROUPS = 8
PARTITION = 11  # of __consumer_offsets' 50: every group of the scenario hashes to it
# What a coordinator answers before it serves a partition it was just given (Kafka 4.4: NOT_COORDINATOR until
# its runtime has the shard): asked again until the first commit is answered.
STARTING = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)


def groups() -> list[str]:
    out, i = [], 0
    while len(out) < GROUPS:
        if partition_for(f"pipelined-{i}", 50) == PARTITION:
            out.append(f"pipelined-{i}")
        i += 1
    return out


def find_coordinator(bootstraps: list[str], group: str, timeout: float = 90.0) -> int:
    deadline = time.monotonic() + timeout
    while True:
        for address in bootstraps:
            try:
                with RawClient(address, timeout=5) as c:
                    found = c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4).coordinators[0]
                if found.error_code == ErrorCode.NONE:
                    return found.node_id
            except OSError:
                continue
        assert time.monotonic() < deadline, f"no coordinator for {group}"
        time.sleep(0.2)


def committer(address: str, group: str, acknowledged: dict[str, int], errors: dict[str, int],
              stop: threading.Event) -> None:
    """Commit offsets 1, 2, ... of ``group`` one at a time until ``stop``, an error (in ``errors``; a coordinator
    still starting is asked again) or the connection breaks."""
    try:
        with RawClient(address, timeout=15) as c:
            offset = 1
            while not stop.is_set():
                r = c.request(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                                  topics=[OffsetCommitRequestTopic(name=TOPIC, partitions=[
                                                      OffsetCommitRequestPartition(partition_index=0,
                                                                                   committed_offset=offset)])]), 8)
                code = r.topics[0].partitions[0].error_code
                if code in STARTING and group not in acknowledged:
                    time.sleep(0.1)
                    continue
                if code != ErrorCode.NONE:
                    errors[group] = code
                    return
                acknowledged[group] = offset
                offset += 1
    except (OSError, ConnectionError):
        return


def committed(address: str, group: str) -> tuple[int, str] | None:
    """The group's committed offset as its coordinator answers OffsetFetch with require_stable, and its state as
    DescribeGroups gives it (None: not answered yet)."""
    try:
        with RawClient(address, timeout=10) as c:
            r = c.request(OffsetFetchRequest(require_stable=True, groups=[OffsetFetchRequestGroup(
                group_id=group, topics=[OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])]), 8)
            g = r.groups[0]
            if g.error_code != ErrorCode.NONE or g.topics[0].partitions[0].error_code != ErrorCode.NONE:
                return None
            described = c.request(DescribeGroupsRequest(groups=[group]), 5).groups[0]
            if described.error_code != ErrorCode.NONE:
                return None
            return g.topics[0].partitions[0].committed_offset, described.group_state
    except OSError:
        return None


def scenario(addresses: dict[int, str], kill) -> dict[str, object]:
    """Commit, kill -9 the coordinator, check every acknowledged commit on the new one; what was observed."""
    with RawClient(next(iter(addresses.values()))) as c:
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name=TOPIC, num_partitions=1, replication_factor=3)],
                                      timeout_ms=30000), 5)
        c.wait_for_topics(TOPIC, timeout=60)
    names = groups()
    coordinator = find_coordinator(list(addresses.values()), names[0])
    assert {find_coordinator(list(addresses.values()), g) for g in names} == {coordinator}
    acknowledged: dict[str, int] = {}
    errors: dict[str, int] = {}
    stop = threading.Event()
    threads = [threading.Thread(target=committer, args=(addresses[coordinator], g, acknowledged, errors, stop),
                                daemon=True) for g in names]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while sum(acknowledged.values()) < 40 * GROUPS:  # well into the stream on every connection
        assert time.monotonic() < deadline, f"commits too slow: {acknowledged}, errors {errors}"
        time.sleep(0.05)
    kill(coordinator)
    for t in threads:
        t.join(timeout=30)
    stop.set()
    survivors = [a for n, a in addresses.items() if n != coordinator]
    lost, states = {}, set()
    for g in names:
        deadline = time.monotonic() + 90
        while (found := committed(addresses[find_coordinator(survivors, g)], g)) is None:
            assert time.monotonic() < deadline, f"{g}: no committed offset from the new coordinator"
            time.sleep(0.2)
        offset, state = found
        states.add(state)
        if offset < acknowledged.get(g, 0):
            lost[g] = (acknowledged[g], offset)
    return {"groups answered": sorted(acknowledged) == sorted(names), "acknowledged commits lost": lost,
            "group states": states}


EXPECTED = {"groups answered": True, "acknowledged commits lost": {}, "group states": {"Empty"}}


def test_pykbroker_loses_no_acknowledged_commit_through_a_kill_of_the_coordinator(tmp_path):
    with ClusterProcesses(tmp_path, size=3) as cluster:
        got = scenario({n: b.bootstrap for n, b in cluster.brokers.items()}, lambda n: cluster.broker(n).kill())
    assert got == EXPECTED


def test_kafka_44_loses_no_acknowledged_commit_through_a_kill_of_the_coordinator(tmp_path):
    with started_kafka_cluster(judge_jars("4.4.0"), tmp_path) as kafka:
        got = scenario({n.node_id: n.bootstrap for n in kafka.nodes}, lambda n: kafka.node(n).kill())
    assert got == EXPECTED
