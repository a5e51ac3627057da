"""Streams group APIs (KIP-1071) on a broker process: off by default (not advertised, UNSUPPORTED_VERSION);
with group.streams.enable a member joins, gets its tasks and is described; ListGroups shows type streams."""

from __future__ import annotations

from pykbroker.testing import BrokerProcess, RawClient
from wire import ApiKey, ErrorCode
from wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    ListGroupsRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
)
from wire.messages import streams_group_heartbeat_request as req
from wire.messages.create_topics_request import CreatableTopic

STREAMS_APIS = {ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE}


def join(member: str) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(
        group_id="app", member_id=member, member_epoch=0, rebalance_timeout_ms=30000, process_id="p1",
        topology=req.Topology(epoch=1, subtopologies=[req.Subtopology(subtopology_id="0", source_topics=["in"])]),
        active_tasks=[], standby_tasks=[], warmup_tasks=[])


def advertised(c: RawClient) -> set[int]:
    return {k.api_key for k in c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                         3).api_keys}


def test_off_by_default(tmp_path):
    with BrokerProcess(tmp_path) as b, RawClient(b.bootstrap) as c:
        assert not advertised(c) & STREAMS_APIS
        assert c.request(join("m1"), 1).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_join_and_describe_with_group_streams_enable(tmp_path):
    with BrokerProcess(tmp_path, overrides={"group.streams.enable": "true"}) as b, RawClient(b.bootstrap) as c:
        assert advertised(c) >= STREAMS_APIS
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name="in", num_partitions=2, replication_factor=1)],
                                      timeout_ms=5000), 7)
        c.wait_for_topics("in")
        r = c.request(join("m1"), 1)
        assert r.error_code == ErrorCode.NONE and r.member_epoch == 1, r
        assert [(t.subtopology_id, t.partitions) for t in r.active_tasks] == [("0", [0, 1])]
        [g] = c.request(StreamsGroupDescribeRequest(group_ids=["app"]), 1).groups
        assert (g.error_code, g.group_state, [m.member_id for m in g.members]) == (ErrorCode.NONE, "Stable", ["m1"])
        listed = c.request(ListGroupsRequest(states_filter=[], types_filter=[]), 5).groups
        assert [(x.group_id, x.group_type) for x in listed] == [("app", "streams")]


def test_the_broker_creates_missing_internal_topics(tmp_path):
    with BrokerProcess(tmp_path, overrides={"group.streams.enable": "true"}) as b, RawClient(b.bootstrap) as c:
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name="in", num_partitions=3, replication_factor=1)],
                                      timeout_ms=5000), 7)
        c.wait_for_topics("in")
        request = join("m1")
        request.topology = req.Topology(epoch=1, subtopologies=[
            req.Subtopology(subtopology_id="0", source_topics=["in"], repartition_sink_topics=["app-rep"]),
            req.Subtopology(subtopology_id="1", repartition_source_topics=[req.TopicInfo(
                name="app-rep", replication_factor=-1,  # as Kafka Streams sends it: the broker's default
                topic_configs=[req.KeyValue(key="cleanup.policy", value="delete")])],
                state_changelog_topics=[req.TopicInfo(name="app-store-changelog", topic_configs=[
                    req.KeyValue(key="cleanup.policy", value="compact")])])])
        r = c.request(request, 1)
        assert r.error_code == ErrorCode.NONE and [s.status_code for s in r.status] == [3], r  # missing internal
        created = c.wait_for_topics("app-rep", "app-store-changelog")
        assert [len(created[n].partitions) for n in ("app-rep", "app-store-changelog")] == [3, 3]
        r = c.request(StreamsGroupHeartbeatRequest(group_id="app", member_id="m1", member_epoch=r.member_epoch,
                                                   active_tasks=[], standby_tasks=[], warmup_tasks=[]), 1)
        assert r.error_code == ErrorCode.NONE and not r.status, r
        assert [(t.subtopology_id, t.partitions) for t in r.active_tasks] == [("0", [0, 1, 2]), ("1", [0, 1, 2])]
