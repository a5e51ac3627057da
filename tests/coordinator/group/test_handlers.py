"""The group handlers in process: version-specific request and response shapes, every response encodable."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pykbroker.config import Listener
from pykbroker.context import RequestContext
from pykbroker.registry import REGISTRY
from replication.metadata.features import BOOTSTRAP_FINALIZED
from replication.metadata.image import BrokerImage, Endpoint, MetadataImage
from tests.coordinator.group.helpers import Harness, run, subscription
from wire import ApiKey, ErrorCode, RequestHeader, request_header_version
from wire.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from wire.messages.join_group_request import JoinGroupRequestProtocol
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_fetch_request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)

LISTENER = Listener("PLAINTEXT", "127.0.0.1", 9092)
REGISTRY.load_all()


class LocalTransactionCoordinator:
    """Coordinates every transactional id on node 1, as a single node does."""

    async def start(self) -> None:
        pass

    def coordinator_for(self, transactional_id: str) -> int:
        return 1


class FakeBroker:
    node_id = 1
    share_groups_enabled = False  # as with share.version disabled

    def __init__(self, coordinator) -> None:
        self.group_coordinator = coordinator
        self.transaction_coordinator = LocalTransactionCoordinator()
        # A new cluster's features, and this broker registered at the address clients are sent to.
        self.metadata = SimpleNamespace(image=MetadataImage(
            "cluster", finalized_features=dict(BOOTSTRAP_FINALIZED),
            brokers={1: BrokerImage(1, (Endpoint("PLAINTEXT", "broker.example", 9093),))}))


async def call(h: Harness, request, version: int):
    """Run the registered handler and return the response after an encode/decode round trip."""
    entry = REGISTRY.get(request.API_KEY)
    assert entry.serves(version)
    header = RequestHeader(request.API_KEY, version, 7, "client-x", request_header_version(request.API_KEY, version))
    request = type(request).decode(request.encode(version), version)
    ctx = RequestContext(header, FakeBroker(h.coordinator), LISTENER, "127.0.0.1:40000")
    response = await entry.handle(ctx, request)
    return entry.response_class.decode(response.encode(version), version)


def join(group: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=20_000,
                            member_id=member_id, protocol_type="consumer",
                            protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription("a"))])


@run
async def test_find_coordinator_all_versions():
    h = Harness()
    for version in range(0, 4):
        r = await call(h, FindCoordinatorRequest(key="g", key_type=0), version)
        assert (r.error_code, r.node_id, r.host, r.port) == (0, 1, "broker.example", 9093)
    r = await call(h, FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]), 4)
    assert [(c.key, c.node_id, c.error_code) for c in r.coordinators] == [("g1", 1, 0), ("g2", 1, 0)]
    r = await call(h, FindCoordinatorRequest(key_type=1, coordinator_keys=["tx"]), 6)
    assert [(c.key, c.node_id, c.error_code) for c in r.coordinators] == [("tx", 1, 0)]
    r = await call(h, FindCoordinatorRequest(key_type=2, coordinator_keys=["s:x:0"]), 6)
    assert r.coordinators[0].error_code == ErrorCode.INVALID_REQUEST


@run
async def test_join_group_shapes_by_version():
    h = Harness()
    for version in range(0, 10):
        r = await call(h, join(f"j{version}"), version)
        if version >= 4:
            assert r.error_code == ErrorCode.MEMBER_ID_REQUIRED
            r = await call(h, join(f"j{version}", r.member_id), version)
        assert r.error_code == 0 and r.generation_id == 1 and r.protocol_name == "range"
        assert r.leader == r.member_id and len(r.members) == 1
        if version >= 7:
            assert r.protocol_type == "consumer"
    # An error before v7: protocol name must still encode (as "").
    r = await call(h, JoinGroupRequest(group_id="", protocol_type="consumer", protocols=[], session_timeout_ms=10_000), 5)
    assert r.error_code == ErrorCode.INVALID_GROUP_ID and r.protocol_name == ""


@run
async def test_sync_heartbeat_leave_v0():
    h = Harness()
    j = await call(h, join("s"), 0)
    s = await call(h, SyncGroupRequest(group_id="s", generation_id=1, member_id=j.member_id, assignments=[]), 0)
    assert s.error_code == 0
    hb = await call(h, HeartbeatRequest(group_id="s", generation_id=1, member_id=j.member_id), 0)
    assert hb.error_code == 0
    left = await call(h, LeaveGroupRequest(group_id="s", member_id=j.member_id), 0)
    assert left.error_code == 0
    again = await call(h, LeaveGroupRequest(group_id="s", member_id=j.member_id), 2)
    assert again.error_code == ErrorCode.UNKNOWN_MEMBER_ID


@run
async def test_offset_commit_and_fetch_across_versions():
    h = Harness()
    commit = OffsetCommitRequest(group_id="o", generation_id_or_member_epoch=-1, member_id="", retention_time_ms=-1,
                                 topics=[OffsetCommitRequestTopic(name="a", partitions=[OffsetCommitRequestPartition(
                                     partition_index=1, committed_offset=33, committed_leader_epoch=4,
                                     committed_metadata="md")])])
    for version in (2, 5, 8, 9):
        r = await call(h, commit, version)
        assert r.topics[0].partitions[0].error_code == 0
    r = await call(h, OffsetFetchRequest(group_id="o", topics=[OffsetFetchRequestTopic(name="a",
                                                                                        partition_indexes=[1, 2])]), 1)
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in r.topics[0].partitions] == [
        (1, 33, "md"), (2, -1, "")]
    r = await call(h, OffsetFetchRequest(group_id="o", topics=None), 5)
    assert (r.error_code, r.topics[0].partitions[0].committed_leader_epoch) == (0, 4)
    r = await call(h, OffsetFetchRequest(group_id="o", topics=None, require_stable=True), 7)
    assert r.topics[0].partitions[0].committed_offset == 33
    r = await call(h, OffsetFetchRequest(groups=[
        OffsetFetchRequestGroup(group_id="o", topics=[OffsetFetchRequestTopics(name="a", partition_indexes=[1])]),
        OffsetFetchRequestGroup(group_id="other", topics=None)]), 8)
    assert [(g.group_id, g.error_code, [p.committed_offset for t in g.topics for p in t.partitions])
            for g in r.groups] == [("o", 0, [33]), ("other", 0, [])]
    r = await call(h, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id="o", member_id=None, member_epoch=-1,
                                                                         topics=None)]), 9)
    assert r.groups[0].topics[0].partitions[0].committed_offset == 33


@run
async def test_describe_list_delete_and_offset_delete():
    h = Harness()
    j = await call(h, join("d"), 3)
    await call(h, SyncGroupRequest(group_id="d", generation_id=1, member_id=j.member_id, assignments=[]), 3)
    r = await call(h, DescribeGroupsRequest(groups=["d", "missing"], include_authorized_operations=True), 5)
    assert r.groups[0].group_state == "Stable" and r.groups[0].protocol_data == "range"
    assert r.groups[0].members[0].client_id == "client-x" and r.groups[0].members[0].client_host == "/127.0.0.1"
    assert r.groups[0].authorized_operations == (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)  # Kafka 4.1
    assert (r.groups[1].group_state, r.groups[1].error_code) == ("Dead", 0)
    r = await call(h, DescribeGroupsRequest(groups=["missing"]), 6)
    assert (r.groups[0].error_code, r.groups[0].error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                   "Group missing not found.")
    r = await call(h, ListGroupsRequest(), 0)
    assert [(g.group_id, g.protocol_type) for g in r.groups] == [("d", "consumer")]
    r = await call(h, ListGroupsRequest(states_filter=["empty"]), 4)
    assert r.groups == []
    r = await call(h, ListGroupsRequest(states_filter=["STABLE"], types_filter=["Classic"]), 5)
    assert [(g.group_id, g.group_state, g.group_type) for g in r.groups] == [("d", "Stable", "classic")]
    r = await call(h, DeleteGroupsRequest(groups_names=["d"]), 0)
    assert r.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    r = await call(h, OffsetDeleteRequest(group_id="d", topics=[]), 0)
    assert r.error_code == 0  # a live group using the consumer protocol may drop offsets of unsubscribed topics


@run
async def test_consumer_group_heartbeat_and_describe_versions():
    h = Harness()
    r = await call(h, ConsumerGroupHeartbeatRequest(group_id="k", member_id="", member_epoch=0,
                                                    rebalance_timeout_ms=1000, subscribed_topic_names=["b"],
                                                    topic_partitions=[]), 0)
    assert r.error_code == 0 and r.member_id and r.member_epoch == 2  # a new group is at epoch 1 (Kafka 4.3+)
    r = await call(h, ConsumerGroupHeartbeatRequest(group_id="k", member_id="", member_epoch=0,
                                                    rebalance_timeout_ms=1000, subscribed_topic_names=["b"],
                                                    topic_partitions=[]), 1)
    assert r.error_code == ErrorCode.INVALID_REQUEST and r.error_message == "MemberId can't be empty."
    for version in (0, 1):
        d = await call(h, ConsumerGroupDescribeRequest(group_ids=["k"], include_authorized_operations=True), version)
        assert d.groups[0].group_state == "Stable" and d.groups[0].members[0].assignment.topic_partitions[0].topic_name == "b"


@pytest.mark.parametrize("api_key", [ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP, ApiKey.HEARTBEAT,
                                     ApiKey.LEAVE_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH,
                                     ApiKey.OFFSET_DELETE, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
                                     ApiKey.DELETE_GROUPS, ApiKey.CONSUMER_GROUP_HEARTBEAT,
                                     ApiKey.CONSUMER_GROUP_DESCRIBE])
def test_error_responses_encode_at_every_served_version(api_key):
    entry = REGISTRY.get(api_key)
    for version in range(entry.min_version, entry.max_version + 1):
        for request in (None, entry.request_class()):
            response = entry.error_response(request, version, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            entry.response_class.decode(response.encode(version), version)
