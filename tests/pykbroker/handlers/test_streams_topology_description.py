"""The built-in topology description store (KIP-1331, ``group.streams.topology.description.store.enable``) on a
broker process: a heartbeat v1 asks for a push once per backoff, the push is checked (group, member, topology
epoch, node types) and stored, StreamsGroupDescribe v1 returns it, a restart keeps it, deleting the group drops
it. Judged against Kafka 4.4 with a description plugin by compat_tests/test_differential_streams_groups.py."""

from __future__ import annotations

import os

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import (
    CreateTopicsRequest,
    DeleteGroupsRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from wire.messages import streams_group_heartbeat_request as req
from wire.messages import streams_group_topology_description_update_request as tdu
from wire.messages.create_topics_request import CreatableTopic

STORE = {"group.streams.initial.rebalance.delay.ms": "0", "group.streams.assignment.interval.ms": "0",
         "group.streams.topology.description.store.enable": "true"}


def join(member: str, epoch: int = 0) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(
        group_id="app", member_id=member, member_epoch=epoch, rebalance_timeout_ms=30000, process_id="p1",
        topology=req.Topology(epoch=1, subtopologies=[req.Subtopology(subtopology_id="0", source_topics=["in"])])
        if epoch == 0 else None, active_tasks=[] if epoch == 0 else None, standby_tasks=[] if epoch == 0 else None,
        warmup_tasks=[] if epoch == 0 else None)


def description(node_type: int = 1) -> tdu.TopologyDescription:
    return tdu.TopologyDescription(subtopologies=[tdu.TopologyDescriptionSubtopology(subtopology_id="0", nodes=[
        tdu.TopologyDescriptionNode(name="KSTREAM-SOURCE-0000000000", node_type=node_type, source_topics=["in", "in"],
                                    stores=["ignored-on-a-source"], successors=["KSTREAM-SINK-0000000001"]),
        tdu.TopologyDescriptionNode(name="KSTREAM-SINK-0000000001", node_type=3, sink_topic="out")])],
        global_stores=[])


def push(c: RawClient, member: str = "m1", epoch: int = 1, group: str = "app",
         node_type: int = 1) -> tuple[int, str | None]:
    r = c.request(StreamsGroupTopologyDescriptionUpdateRequest(group_id=group, member_id=member, topology_epoch=epoch,
                                                               topology_description=description(node_type)), 0)
    return ErrorCode(r.error_code), r.error_message


def described(c: RawClient, include: bool = True) -> tuple:
    [g] = c.request(StreamsGroupDescribeRequest(group_ids=["app"], include_topology_description=include), 1).groups
    d = g.topology_description
    return ErrorCode(g.error_code), g.topology_description_status, None if d is None else [
        (s.subtopology_id, [(n.name, n.node_type, n.source_topics, n.sink_topic, n.stores, n.successors)
                            for n in s.nodes]) for s in d.subtopologies]


STORED = (ErrorCode.NONE, 3, [("0", [("KSTREAM-SOURCE-0000000000", 1, ["in"], None, [], ["KSTREAM-SINK-0000000001"]),
                                     ("KSTREAM-SINK-0000000001", 3, [], "out", [], [])])])


def _push_and_describe(c: RawClient) -> None:
    """Join (asked for a push), every refused push, the push, describe."""
    c.request(CreateTopicsRequest(topics=[CreatableTopic(name="in", num_partitions=1, replication_factor=1)],
                                  timeout_ms=10000), 7)
    c.wait_for_topics("in")
    joined = c.request(join("m1"), 1)
    assert joined.error_code == ErrorCode.NONE and joined.topology_description_required
    again = c.request(join("m1", joined.member_epoch), 1)
    assert again.error_code == ErrorCode.NONE and not again.topology_description_required  # backing off
    assert c.request(join("m1", joined.member_epoch), 0).topology_description_required is False  # v0: never
    assert described(c) == (ErrorCode.NONE, 1, None)
    assert push(c, member=" ") == (ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    assert push(c, group="") == (ErrorCode.INVALID_REQUEST, "MemberId can't be empty.".replace("Member", "Group"))
    assert push(c, group="nope") == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert push(c, member="m2") == (ErrorCode.UNKNOWN_MEMBER_ID, "Member m2 is not a member of group app.")
    assert push(c, epoch=2) == (ErrorCode.INVALID_REQUEST,
                                "Topology epoch 2 does not match the group's current topology epoch 1.")
    assert push(c, node_type=7) == (ErrorCode.INVALID_REQUEST, "Unknown topology node type: 7")
    assert push(c) == (ErrorCode.NONE, None)
    assert described(c) == STORED
    assert described(c, include=False) == (ErrorCode.NONE, 0, None)
    assert not c.request(join("m1", joined.member_epoch), 1).topology_description_required  # stored


def test_push_store_describe(tmp_path):
    with BrokerProcess(tmp_path, overrides=STORE) as b, RawClient(b.bootstrap) as c:
        _push_and_describe(c)


@pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                    reason="slow (two broker starts): make test-streams-slow (PYKBROKER_STREAMS_SLOW=1)")
def test_a_restart_keeps_the_description_and_deleting_the_group_drops_it(tmp_path):
    with BrokerProcess(tmp_path, overrides=STORE) as b, RawClient(b.bootstrap) as c:
        _push_and_describe(c)
    with BrokerProcess(tmp_path, overrides=STORE) as b, RawClient(b.bootstrap) as c:
        c.wait_for_topics("in")
        assert described(c) == STORED  # the record in __consumer_offsets survived the restart
        left = c.request(StreamsGroupHeartbeatRequest(group_id="app", member_id="m1", member_epoch=-1), 1)
        assert left.error_code == ErrorCode.NONE
        [deleted] = c.request(DeleteGroupsRequest(groups_names=["app"]), 2).results
        assert deleted.error_code == ErrorCode.NONE
        rejoined = c.request(join("m1"), 1)  # a new group of the same id has no description: asked again
        assert rejoined.topology_description_required
        assert described(c) == (ErrorCode.NONE, 1, None)
