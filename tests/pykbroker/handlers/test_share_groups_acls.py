"""Share-group APIs under StandardAuthorizer, checked as Kafka 4.2's KafkaApis checks them, for SASL (PLAIN) users:
ShareGroupHeartbeat (group READ, subscribed topics DESCRIBE), ShareGroupDescribe (group DESCRIBE, assigned topics
DESCRIBE), ShareFetch and ShareAcknowledge (group READ, topics READ), DescribeShareGroupOffsets (group and topics
DESCRIBE), AlterShareGroupOffsets (group READ, topics READ), DeleteShareGroupOffsets (group DELETE, topics READ).
ANONYMOUS on the PLAINTEXT listener is a super user that sets things up."""

from __future__ import annotations

import time
import uuid

import pytest

from pykbroker.security.client import plain_token
from pykbroker.testing import BrokerProcess, RawClient
from storage.checkpoints import topic_id_to_string
from tests.pykbroker.handlers.test_share_groups import acquired, create_topic, earliest, fetch, produce
from wire import ErrorCode
from wire.messages import (
    AlterShareGroupOffsetsRequest,
    CreateAclsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    FindCoordinatorRequest,
    ReadShareGroupStateRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    ShareAcknowledgeRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.create_acls_request import AclCreation
from wire.messages.delete_share_group_offsets_request import DeleteShareGroupOffsetsRequestTopic
from wire.messages.describe_share_group_offsets_request import (
    DescribeShareGroupOffsetsRequestGroup,
    DescribeShareGroupOffsetsRequestTopic,
)
from wire.messages.read_share_group_state_request import PartitionData as ReadPartition
from wire.messages.read_share_group_state_request import ReadStateData
from wire.messages.share_acknowledge_request import (
    AcknowledgementBatch,
    AcknowledgePartition,
    AcknowledgeTopic,
)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" '
        'user_bob="bob-secret";')
TOPIC, GROUP_RT = 2, 3  # resource types
READ, DELETE, DESCRIBE = 3, 6, 8  # operations
LITERAL, ALLOW = 3, 3
ACCEPT = 1
GROUP = "sg"


def acl(resource_type: int, name: str, operation: int, user: str = "alice") -> AclCreation:
    return AclCreation(resource_type=resource_type, resource_name=name, resource_pattern_type=LITERAL,
                       principal=f"User:{user}", host="*", operation=operation, permission_type=ALLOW)


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(broker, SASL address, {topic: id}): alice may READ the group and the topic 'open', only DESCRIBE 'seen';
    'closed' is hers to nothing. 'open' and 'closed' have records, and the group has state on both."""
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",  # bound by the broker
                 "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:ANONYMOUS", "group.share.enable": "true"}
    with BrokerProcess(tmp_path_factory.mktemp("share-acls"), port=0, overrides=overrides) as b:
        with RawClient(b.bootstrap) as c:
            ids = {name: create_topic(c, name) for name in ("open", "seen", "closed")}
            produce(c, "open", 3)
            produce(c, "closed", 3)
            earliest(c, GROUP)
            r = c.request(CreateAclsRequest(creations=[acl(GROUP_RT, GROUP, READ), acl(TOPIC, "open", READ),
                                                       acl(TOPIC, "seen", DESCRIBE)]), 3)
            assert all(x.error_code == 0 for x in r.results), r
            # the super user's member consumes both topics, so the group has state (and an assignment) on both
            member = uuid.uuid4().hex[:22]
            hb = c.request(ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=0,
                                                      subscribed_topic_names=["open", "closed"]), 1)
            assert hb.error_code == ErrorCode.NONE, hb
            got = fetch(c, GROUP, member, 0, ids["open"], wait_ms=2000)
            assert acquired(got) == [(0, 2, 1)], got
            got = fetch(c, GROUP, member, 1, ids["closed"], wait_ms=2000)
            assert acquired(got) == [(0, 2, 1)], got
            c.request(ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=-1), 1)
        yield b, b.address("SASL_PLAINTEXT"), ids
        assert b.alive, b.log()


def as_user(address: str, user: str) -> RawClient:
    c = RawClient(address)
    c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert c.request(SaslAuthenticateRequest(auth_bytes=plain_token(user, f"{user}-secret")), 2).error_code == 0
    return c


def heartbeat(c: RawClient, topics: list[str], group: str = GROUP, member: str | None = None):
    return c.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member or uuid.uuid4().hex[:22],
                                                member_epoch=0, subscribed_topic_names=topics), 1)


def test_heartbeat_needs_group_read_and_describe_on_every_subscribed_topic(secured):
    _, address, _ = secured
    with as_user(address, "bob") as bob:
        assert heartbeat(bob, ["open"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with as_user(address, "alice") as alice:
        assert heartbeat(alice, ["open", "closed"]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        join_and_leave(alice, ["open", "seen"])


def join_and_leave(c: RawClient, topics: list[str]) -> None:
    """A member of GROUP subscribed to ``topics`` joins (so it is assigned their partitions) and leaves."""
    member = uuid.uuid4().hex[:22]
    r = heartbeat(c, topics, member=member)
    assert r.error_code == ErrorCode.NONE, r
    c.request(ShareGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=-1), 1)


def test_share_fetch_and_acknowledge_need_group_read_and_topic_read(secured):
    _, address, ids = secured
    member = uuid.uuid4().hex[:22]
    with as_user(address, "bob") as bob:
        assert fetch(bob, GROUP, member, 0, ids["open"]).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        r = bob.request(ShareAcknowledgeRequest(group_id=GROUP, member_id=member, share_session_epoch=1), 1)
        assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    with as_user(address, "alice") as alice:
        # 'closed' (no ACL) and 'seen' (DESCRIBE only) are TOPIC_AUTHORIZATION_FAILED, 'open' is served
        for topic in ("closed", "seen"):
            r = fetch(alice, GROUP, uuid.uuid4().hex[:22], 0, ids[topic])
            assert r.error_code == ErrorCode.NONE
            assert [p.error_code for t in r.responses for p in t.partitions] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]
            assert acquired(r) == []
        r = fetch(alice, GROUP, member, 0, ids["open"], wait_ms=2000)
        assert [p.error_code for t in r.responses for p in t.partitions] == [ErrorCode.NONE]
        # the records the setup member released come back to alice
        assert acquired(r) == [(0, 2, 2)], r
        r = alice.request(ShareAcknowledgeRequest(group_id=GROUP, member_id=member, share_session_epoch=1, topics=[
            AcknowledgeTopic(topic_id=tid, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                AcknowledgementBatch(first_offset=0, last_offset=2, acknowledge_types=[ACCEPT])])])
            for tid in (ids["open"], ids["closed"])]), 1)
        codes = {t.topic_id: p.error_code for t in r.responses for p in t.partitions}
        assert codes == {ids["open"]: ErrorCode.NONE, ids["closed"]: ErrorCode.TOPIC_AUTHORIZATION_FAILED}, r


def test_share_group_describe_needs_group_describe(secured):
    _, address, _ = secured
    with as_user(address, "bob") as bob:
        r = bob.request(ShareGroupDescribeRequest(group_ids=[GROUP]), 1)
        assert [(g.group_id, g.error_code) for g in r.groups] == [(GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED)]
    with as_user(address, "alice") as alice:
        r = alice.request(ShareGroupDescribeRequest(group_ids=[GROUP, "other"], include_authorized_operations=True), 1)
        # 'other': alice may not describe it, so it comes first with the authorization error (as Kafka orders it)
        assert [(g.group_id, g.error_code) for g in r.groups] == [("other", ErrorCode.GROUP_AUTHORIZATION_FAILED),
                                                                  (GROUP, ErrorCode.NONE)]
        assert r.groups[1].authorized_operations == (1 << READ) | (1 << DESCRIBE)  # READ implies DESCRIBE


def test_describe_share_group_offsets_shows_only_describable_topics(secured):
    _, address, ids = secured
    with as_user(address, "bob") as bob:
        r = bob.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id=GROUP, topics=None)]), 1)
        assert [g.error_code for g in r.groups] == [ErrorCode.GROUP_AUTHORIZATION_FAILED]
    with as_user(address, "alice") as alice:
        join_and_leave(alice, ["open", "seen"])  # here too: the test that does it first may not have run
        deadline = time.monotonic() + 30
        while True:  # 'seen' gets state once alice's member was assigned it; 'closed' has state too but is left out
            r = alice.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
                group_id=GROUP, topics=None)]), 1)
            described = sorted(t.topic_name for t in r.groups[0].topics)
            if described == ["open", "seen"] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert described == ["open", "seen"]
        r = alice.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id=GROUP, topics=[DescribeShareGroupOffsetsRequestTopic(topic_name=n, partitions=[0])
                                    for n in ("closed", "open")])]), 1)
        got = [(t.topic_name, p.error_code, p.start_offset) for t in r.groups[0].topics for p in t.partitions]
        assert got[0][:2] == ("open", ErrorCode.NONE)
        assert got[1] == ("closed", ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)
        assert r.groups[0].topics[1].partitions[0].error_message == "Topic authorization failed."


def test_alter_and_delete_share_group_offsets(secured):
    broker, address, ids = secured
    group = "sg-admin"
    with RawClient(broker.bootstrap) as su:
        r = su.request(CreateAclsRequest(creations=[acl(GROUP_RT, group, READ, "bob"), acl(TOPIC, "open", READ, "bob"),
                                                    acl(TOPIC, "seen", DESCRIBE, "bob")]), 3)
        assert all(x.error_code == 0 for x in r.results)
    with as_user(address, "bob") as bob:
        r = bob.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[
            AlterShareGroupOffsetsRequestTopic(topic_name=n, partitions=[
                AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=1)])
            for n in ("open", "seen")]), 0)
        assert r.error_code == ErrorCode.NONE, r
        got = [(t.topic_name, p.error_code) for t in r.responses for p in t.partitions]
        assert got == [("seen", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("open", ErrorCode.NONE)]
        delete = DeleteShareGroupOffsetsRequest(group_id=group, topics=[
            DeleteShareGroupOffsetsRequestTopic(topic_name=n) for n in ("open", "seen")])
        assert bob.request(delete, 0).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED  # no DELETE on the group
    with RawClient(broker.bootstrap) as su:
        assert su.request(CreateAclsRequest(creations=[acl(GROUP_RT, group, DELETE, "bob")]), 3).results[0].error_code == 0
    with as_user(address, "bob") as bob:
        r = bob.request(delete, 0)
        assert r.error_code == ErrorCode.NONE, r
        assert [(t.topic_name, t.error_code) for t in r.responses] == [("seen", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
                                                                       ("open", ErrorCode.NONE)]
    with as_user(address, "alice") as alice:  # alice has nothing on sg-admin
        r = alice.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[]), 0)
        assert r.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def test_the_share_coordinator_apis_need_cluster_action(secured):
    """FindCoordinator for a share-partition key and the state APIs (83-87) are for brokers: CLUSTER_ACTION, which
    the super user (a broker's principal) has and alice has not."""
    broker, address, ids = secured
    key = f"{GROUP}:{topic_id_to_string(ids['open'])}:0"
    read = ReadShareGroupStateRequest(group_id=GROUP, topics=[ReadStateData(
        topic_id=ids["open"], partitions=[ReadPartition(partition=0, leader_epoch=0)])])
    with as_user(address, "alice") as alice:
        found = alice.request(FindCoordinatorRequest(key_type=2, coordinator_keys=[key]), 6).coordinators[0]
        assert found.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        r = alice.request(read, 0)
        assert [p.error_code for t in r.results for p in t.partitions] == [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]
    with RawClient(broker.bootstrap) as su:
        found = su.request(FindCoordinatorRequest(key_type=2, coordinator_keys=[key]), 6).coordinators[0]
        assert (found.error_code, found.node_id) == (ErrorCode.NONE, 1)
        bad = su.request(FindCoordinatorRequest(key_type=2, coordinator_keys=["not-a-key"]), 6).coordinators[0]
        assert bad.error_code == ErrorCode.INVALID_REQUEST
        r = su.request(read, 0)
        p = r.results[0].partitions[0]
        # the group's state, initialized at the group's epoch of the member's join
        assert p.error_code == ErrorCode.NONE and p.state_epoch >= 1 and p.start_offset >= 0
