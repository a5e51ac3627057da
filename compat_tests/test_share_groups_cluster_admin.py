"""Share-group administration across the brokers of a 3-broker ZooKeeper cluster, where the group's coordinator,
the leader of the topic partition and the share coordinator of its state are three different brokers:

- ``kafka-share-groups --reset-offsets`` (AlterShareGroupOffsets, on the group's coordinator) while the partition's
  leader still caches the share-partition: the next share session there starts from the reset offset;
- DescribeShareGroupOffsets answered by a coordinator holding no replica of the partition reports the lag (the
  high watermark asked of the leader), not -1;
- deleting the topic through a broker other than the share coordinator deletes the share-partition's state there.

Run with ``make test-share-slow`` (PYKBROKER_SHARE_SLOW=1; a cluster start), not in ``make test``.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid

import pytest

from compat_tests.test_share_groups_cluster import coordinator_of, leader_of
from coordinator.group.partitioner import partition_for
from coordinator.share.coordinator import coordinator_key
from pykbroker.testing import ClusterProcesses, RawClient
from tests.pykbroker.handlers.test_share_groups import ACCEPT, acquired, fetch, produce
from wire import ErrorCode
from wire.messages import (
    AlterShareGroupOffsetsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeShareGroupOffsetsRequest,
    ReadShareGroupStateSummaryRequest,
    ShareGroupHeartbeatRequest,
)
from wire.messages import read_share_group_state_summary_request as summary
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.delete_topics_request import DeleteTopicState
from wire.messages.describe_share_group_offsets_request import DescribeShareGroupOffsetsRequestGroup

if shutil.which("java") is None:
    pytest.skip("java is not installed (ZooKeeper runs on it)", allow_module_level=True)
if not os.environ.get("PYKBROKER_SHARE_SLOW"):
    pytest.skip("set PYKBROKER_SHARE_SLOW=1 (make test-share-slow) to run", allow_module_level=True)

PARTITIONS = 3  # of __consumer_offsets and __share_group_state


def reset(c: RawClient, group: str, topic: str, offset: int) -> None:
    r = c.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[AlterShareGroupOffsetsRequestTopic(
        topic_name=topic, partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=offset)])]), 0)
    assert r.error_code == ErrorCode.NONE and r.responses[0].partitions[0].error_code == ErrorCode.NONE, r


def described(c: RawClient, group: str) -> tuple[int, int]:
    r = c.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
        group_id=group, topics=None)]), 1)
    p = r.groups[0].topics[0].partitions[0]
    return p.start_offset, p.lag


def consume_all(coordinator: RawClient, leader: RawClient, group: str, topic: str, topic_id: uuid.UUID) -> list:
    """A member joins on the coordinator, takes every record it is given from the leader, accepting each, leaves."""
    member = uuid.uuid4().hex[:22]
    r = coordinator.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                                                       subscribed_topic_names=[topic]), 1)
    assert r.error_code == ErrorCode.NONE, r
    got: list[tuple[int, int, int]] = []
    epoch, acks = 0, None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        response = fetch(leader, group, member, epoch, topic_id, acks=acks, wait_ms=300)
        epoch += 1
        batch = acquired(response)
        acks = {0: [(f, la, [ACCEPT]) for f, la, _ in batch]} if batch else None
        got += batch
        if not batch and got:
            break
    fetch(leader, group, member, -1, topic_id, wait_ms=0)  # the session ends
    coordinator.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=-1), 1)
    return got


def test_reset_lag_and_topic_deletion_reach_the_other_brokers(tmp_path):
    overrides = {"group.share.enable": "true", "offsets.topic.num.partitions": str(PARTITIONS),
                 "share.coordinator.state.topic.num.partitions": str(PARTITIONS)}
    with ClusterProcesses(tmp_path, size=3, overrides=overrides) as cluster:
        b1 = cluster.broker(1).bootstrap
        coordinator_of(b1, 0, "any")  # creates __consumer_offsets
        topic = f"share-{uuid.uuid4().hex[:8]}"
        with RawClient(b1, timeout=30) as c:
            r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
                name=topic, num_partitions=-1, replication_factor=-1, assignments=[
                    CreatableReplicaAssignment(partition_index=0, broker_ids=[2])])]), 7)
            assert r.topics[0].error_code == ErrorCode.NONE, r
            topic_id = r.topics[0].topic_id
        deadline = time.monotonic() + 30
        while leader_of(b1, topic, 0) != 2 or leader_of(cluster.broker(2).bootstrap, topic, 0) != 2:
            assert time.monotonic() < deadline, "no leader"
            time.sleep(0.1)
        coordinator_of(b1, 2, coordinator_key(("any", topic_id, 0)))  # creates __share_group_state
        group_leaders = {p: leader_of(b1, "__consumer_offsets", p) for p in range(PARTITIONS)}
        state_leaders = {p: leader_of(b1, "__share_group_state", p) for p in range(PARTITIONS)}
        # the group's coordinator, the partition's leader (2) and the state's share coordinator: three brokers
        candidates = (f"sg-{uuid.uuid4().hex[:8]}" for _ in range(10_000))
        group = next((g for g in candidates if group_leaders[partition_for(g, PARTITIONS)] not in (2, -1)
                      and state_leaders[partition_for(coordinator_key((g, topic_id, 0)), PARTITIONS)]
                      not in (2, group_leaders[partition_for(g, PARTITIONS)], -1)), None)
        if group is None:
            pytest.skip(f"leaders {group_leaders} {state_leaders} leave no three distinct brokers")
        gc = group_leaders[partition_for(group, PARTITIONS)]
        sc = state_leaders[partition_for(coordinator_key((group, topic_id, 0)), PARTITIONS)]
        with RawClient(cluster.broker(gc).bootstrap, timeout=30) as coordinator, \
                RawClient(cluster.broker(2).bootstrap, timeout=30) as leader:
            deadline = time.monotonic() + 30
            while True:  # the leader serves the partition a moment after the metadata names it
                try:
                    produce(leader, topic, 100)
                    break
                except AssertionError:
                    assert time.monotonic() < deadline, "the leader never took the records"
                    time.sleep(0.2)
            reset(coordinator, group, topic, 0)
            assert described(coordinator, group) == (0, 100)  # the lag, from a broker without the partition
            first = consume_all(coordinator, leader, group, topic, topic_id)
            assert sum(la - f + 1 for f, la, _ in first) == 100
            deadline = time.monotonic() + 10
            while described(coordinator, group)[1] != 0:  # everything accepted
                assert time.monotonic() < deadline, described(coordinator, group)
                time.sleep(0.2)
            # the leader still caches the share-partition (all accepted) when the offsets are reset
            reset(coordinator, group, topic, 30)
            assert described(coordinator, group) == (30, 70)
            again = consume_all(coordinator, leader, group, topic, topic_id)
            assert (again[0][0], sum(la - f + 1 for f, la, _ in again)) == (30, 70), again
        # the topic deleted through a broker that is not the share coordinator: the state goes there too
        other = next(n for n in (1, 2, 3) if n != sc)
        with RawClient(cluster.broker(sc).bootstrap, timeout=30) as share_coordinator:
            def start_offset() -> int:
                r = share_coordinator.request(ReadShareGroupStateSummaryRequest(group_id=group, topics=[
                    summary.ReadStateSummaryData(topic_id=topic_id, partitions=[
                        summary.PartitionData(partition=0, leader_epoch=-1)])]), 1)
                return r.results[0].partitions[0].start_offset
            assert start_offset() == 30
            with RawClient(cluster.broker(other).bootstrap, timeout=30) as c:
                r = c.request(DeleteTopicsRequest(timeout_ms=30_000, topics=[DeleteTopicState(name=topic)]), 6)
                assert r.responses[0].error_code == ErrorCode.NONE, r
            deadline = time.monotonic() + 20
            while start_offset() != -1:
                assert time.monotonic() < deadline, "the share coordinator kept the deleted topic's state"
                time.sleep(0.2)
