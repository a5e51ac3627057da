"""Streams group APIs (KIP-1071) on a broker process: on by default as on Kafka 4.4 (streams.version 1, "streams"
in group.coordinator.rebalance.protocols), always advertised, UNSUPPORTED_VERSION once turned off; a member joins,
gets its tasks and is described; ListGroups shows type streams; topology descriptions are refused as a Kafka 4.4
without a description plugin refuses them."""

from __future__ import annotations

from pykbroker.testing import BrokerProcess, RawClient
from wire import ApiKey, ErrorCode
from wire.messages import (
    ApiVersionsRequest,
    CreateTopicsRequest,
    ListGroupsRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
    UpdateFeaturesRequest,
)
from wire.messages import streams_group_heartbeat_request as req
from wire.messages import streams_group_topology_description_update_request as tdu
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.update_features_request import FeatureUpdateKey

#: The first assignment at once (Kafka 4.4 waits 3 s for more members, then at most one a second).
NO_DELAY = {"group.streams.initial.rebalance.delay.ms": "0", "group.streams.assignment.interval.ms": "0"}
STREAMS_APIS = {ApiKey.STREAMS_GROUP_HEARTBEAT, ApiKey.STREAMS_GROUP_DESCRIBE,
                ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE}


def join(member: str) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(
        group_id="app", member_id=member, member_epoch=0, rebalance_timeout_ms=30000, process_id="p1",
        topology=req.Topology(epoch=1, subtopologies=[req.Subtopology(subtopology_id="0", source_topics=["in"])]),
        active_tasks=[], standby_tasks=[], warmup_tasks=[])


def advertised(c: RawClient) -> set[int]:
    return {k.api_key for k in c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                         3).api_keys}


def describe_update(c: RawClient) -> tuple[int, str | None]:
    r = c.request(StreamsGroupTopologyDescriptionUpdateRequest(
        group_id="app", member_id="m1", topology_epoch=1,
        topology_description=tdu.TopologyDescription(subtopologies=[], global_stores=[])), 0)
    return r.error_code, r.error_message


def test_off_without_streams_in_the_rebalance_protocols_yet_advertised(tmp_path):
    with BrokerProcess(tmp_path, overrides={"group.coordinator.rebalance.protocols": "classic,consumer"}) as b, \
            RawClient(b.bootstrap) as c:
        assert advertised(c) >= STREAMS_APIS
        assert c.request(join("m1"), 1).error_code == ErrorCode.UNSUPPORTED_VERSION
        assert describe_update(c) == (ErrorCode.UNSUPPORTED_VERSION, None)
        [g] = c.request(StreamsGroupDescribeRequest(group_ids=["app"]), 1).groups
        assert g.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_disabling_streams_version_turns_streams_groups_off(tmp_path):
    with BrokerProcess(tmp_path) as b, RawClient(b.bootstrap) as c:
        r = c.request(UpdateFeaturesRequest(feature_updates=[FeatureUpdateKey(
            feature="streams.version", max_version_level=0, upgrade_type=2)]), 1)
        assert r.error_code == ErrorCode.NONE, r
        assert advertised(c) >= STREAMS_APIS
        assert c.request(join("m1"), 1).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_join_and_describe_on_by_default(tmp_path):
    with BrokerProcess(tmp_path, overrides=NO_DELAY) as b, RawClient(b.bootstrap) as c:
        assert advertised(c) >= STREAMS_APIS
        c.request(CreateTopicsRequest(topics=[CreatableTopic(name="in", num_partitions=2, replication_factor=1)],
                                      timeout_ms=5000), 7)
        c.wait_for_topics("in")
        r = c.request(join("m1"), 1)
        assert r.error_code == ErrorCode.NONE and r.member_epoch == 2, r
        assert [(t.subtopology_id, t.partitions) for t in r.active_tasks] == [("0", [0, 1])]
        [g] = c.request(StreamsGroupDescribeRequest(group_ids=["app"]), 1).groups
        assert (g.error_code, g.group_state, [m.member_id for m in g.members]) == (ErrorCode.NONE, "Stable", ["m1"])
        assert (g.assignor_name, g.topology_description_status) == ("sticky", 0)
        [g] = c.request(StreamsGroupDescribeRequest(group_ids=["app"], include_topology_description=True), 1).groups
        assert (g.topology_description, g.topology_description_status) == (None, 1)  # NOT_STORED
        assert describe_update(c) == (ErrorCode.UNSUPPORTED_VERSION,
                                      "The broker has no streams group topology description plugin configured.")
        listed = c.request(ListGroupsRequest(states_filter=[], types_filter=[]), 5).groups
        assert [(x.group_id, x.group_type) for x in listed] == [("app", "streams")]


def test_the_broker_creates_missing_internal_topics(tmp_path):
    with BrokerProcess(tmp_path, overrides=NO_DELAY) as b, RawClient(b.bootstrap) as c:
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
