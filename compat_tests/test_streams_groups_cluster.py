"""A streams group (KIP-1071) on a 3-broker pykbroker cluster survives its coordinator's death: its records in
__consumer_offsets (RF 3) are loaded by the next coordinator, which shows the same group (epochs, members,
tasks, and the topology description a member pushed to the built-in store,
group.streams.topology.description.store.enable), accepts the members' heartbeats at their epochs and rebalances a
newcomer in.

Slow (a ZooKeeper and three brokers, one killed): ``make test-streams-slow``.
"""

from __future__ import annotations

import os
import time

import pytest

from compat_tests.routing_client import RoutingClient
from compat_tests.test_differential_streams_groups import (
    Member,
    _description,
    _push,
    _settle,
    _setup,
    _stored,
)
from pykbroker.testing import ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import FindCoordinatorRequest, StreamsGroupDescribeRequest

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="set PYKBROKER_STREAMS_SLOW=1 (make test-streams-slow)")
GROUP, TOPIC = "sg-failover", "sg-failover-in"


def described(c: RoutingClient) -> tuple:
    [g] = c.request(StreamsGroupDescribeRequest(group_ids=[GROUP]), 1).groups
    assert g.error_code == ErrorCode.NONE, g
    return (g.group_state, g.group_epoch, g.assignment_epoch, g.topology.epoch if g.topology else None,
            sorted((m.member_id, m.member_epoch, m.process_id, sorted((t.subtopology_id, sorted(t.partitions))
                                                                     for t in m.assignment.active_tasks))
                   for m in g.members))


def coordinator_id(c: RoutingClient) -> int:
    return c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4).coordinators[0].node_id


def test_a_streams_group_survives_its_coordinators_death(tmp_path):
    overrides = {"default.replication.factor": "3", "min.insync.replicas": "2",
                 "group.streams.initial.rebalance.delay.ms": "0", "group.streams.topology.description.store.enable": "true"}
    with ClusterProcesses(tmp_path / "cluster", 3, overrides) as cluster:
        with RoutingClient(cluster.broker(1).bootstrap, timeout=30) as c:
            _setup(c, GROUP, TOPIC, partitions=4)
            a, b = Member(c, GROUP, "a1"), Member(c, GROUP, "b1")
            a.join(TOPIC, "pa")
            b.join(TOPIC, "pb")
            _settle([a, b])
            before = described(c)
            assert before[0] == "Stable" and all(m[3] for m in before[4]), before
            assert _push(c, GROUP, "a1", 1, _description(TOPIC)) == ("NONE", None)
            description = _stored(c, GROUP)
            assert description[1] == 3 and description[2], description  # STORED, with the description
            victim = coordinator_id(c)
        cluster.broker(victim).kill()
        survivor = cluster.broker(next(n for n in range(1, 4) if n != victim)).bootstrap
        with RawClient(survivor, timeout=30) as raw:  # until __consumer_offsets' partition has a new leader
            deadline = time.monotonic() + 90
            while (found := raw.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[GROUP]), 4)
                   .coordinators[0]).error_code != ErrorCode.NONE or found.node_id == victim:
                assert time.monotonic() < deadline, f"no new coordinator for {GROUP}: {found}"
                time.sleep(0.5)
        with RoutingClient(survivor, timeout=30) as c:
            a.c = b.c = c
            assert a.beat().error_code == ErrorCode.NONE  # retried until the new coordinator has loaded the group
            assert described(c) == before
            assert _stored(c, GROUP) == description  # the record moved with the partition: stored stays true
            assert (a.beat().member_epoch, b.beat().member_epoch) == (before[1], before[1])
            newcomer = Member(c, GROUP, "c1")
            newcomer.join(TOPIC, "pc")
            _settle([a, b, newcomer])
            after = described(c)
            assert after[0] == "Stable" and after[1] == before[1] + 1
            assert sorted(len(m[3][0][1]) if m[3] else 0 for m in after[4]) == [1, 1, 2]
