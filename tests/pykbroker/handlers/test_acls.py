"""ACLs on a broker with StandardAuthorizer: effective the moment CreateAcls/DeleteAcls answer, kept across a
restart, and decided for SASL principals (ANONYMOUS on PLAINTEXT is a super user that sets them up)."""

from __future__ import annotations

import pytest

from pykbroker.config import Config, ConfigError
from pykbroker.security.client import plain_token
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreateAclsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    ProduceRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from wire.messages.create_acls_request import AclCreation
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.delete_acls_request import DeleteAclsFilter
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
WRITE_ORDERS = AclCreation(resource_type=2, resource_name="orders", resource_pattern_type=3, principal="User:alice",
                           host="*", operation=4, permission_type=3)


@pytest.fixture
def secured(tmp_path):
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",  # bound by the broker
                 "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:ANONYMOUS"}
    with BrokerProcess(tmp_path / "data", port=0, overrides=overrides) as b:
        with RawClient(b.bootstrap) as c:
            c.request(CreateTopicsRequest(topics=[CreatableTopic(name="orders", num_partitions=1,
                                                                 replication_factor=1)], timeout_ms=10_000), 7)
        yield b, b.address("SASL_PLAINTEXT")


def produce_as_alice(address: str) -> int:
    with RawClient(address) as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert c.request(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "alice-secret")), 2).error_code == 0
        records = build_simple_batch([b"v"], keys=None, timestamp=0)
        r = c.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="orders", partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
        return r.responses[0].partition_responses[0].error_code


def test_acls_take_effect_at_once_and_survive_a_restart(secured):
    broker, sasl = secured
    assert produce_as_alice(sasl) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    with RawClient(broker.bootstrap) as c:
        assert c.request(CreateAclsRequest(creations=[WRITE_ORDERS]), 3).results[0].error_code == 0
    assert produce_as_alice(sasl) == ErrorCode.NONE
    broker.restart()
    assert produce_as_alice(sasl) == ErrorCode.NONE
    with RawClient(broker.bootstrap) as c:
        described = c.request(DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None,
                                                  pattern_type_filter=1, principal_filter=None, host_filter=None,
                                                  operation=1, permission_type=1), 3)
        assert [(r.resource_name, [a.principal for a in r.acls]) for r in described.resources] == \
            [("orders", ["User:alice"])]
        deleted = c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(
            resource_type_filter=2, resource_name_filter="orders", pattern_type_filter=2, principal_filter=None,
            host_filter=None, operation=1, permission_type=1)]), 3)
        assert len(deleted.filter_results[0].matching_acls) == 1
    assert produce_as_alice(sasl) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert "Principal = User:alice is Denied operation = WRITE from host = 127.0.0.1 on resource = " \
           "Topic:LITERAL:orders for request = Produce" in broker.log()


def test_an_unknown_request_filter_closes_the_connection(secured):
    broker, _ = secured
    with RawClient(broker.bootstrap) as c:
        c.send(DescribeAclsRequest(resource_type_filter=0, resource_name_filter=None, pattern_type_filter=1,
                                   principal_filter=None, host_filter=None, operation=1, permission_type=1), 3)
        assert c.is_closed_by_peer()


def test_authorizer_class_names():
    assert Config({"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"})["authorizer.class.name"]
    assert Config({})["authorizer.class.name"] == ""
    with pytest.raises(ConfigError, match="authorizer.class.name"):
        Config({"authorizer.class.name": "com.example.MyAuthorizer"})


def test_a_fetch_session_loses_a_revoked_topic_at_once(secured):
    """Incremental fetches authorize every partition of the session, not only those the request names."""
    from wire.messages import FetchRequest
    from wire.messages.fetch_request import FetchPartition, FetchTopic

    broker, sasl = secured
    read_orders = AclCreation(resource_type=2, resource_name="orders", resource_pattern_type=3,
                              principal="User:alice", host="*", operation=3, permission_type=3)
    with RawClient(broker.bootstrap) as admin:
        assert admin.request(CreateAclsRequest(creations=[read_orders]), 3).results[0].error_code == 0
        with RawClient(sasl) as c:
            c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
            c.request(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "alice-secret")), 2)

            def fetch(session_id: int, epoch: int, topics: list) -> tuple:
                r = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                           isolation_level=0, session_id=session_id, session_epoch=epoch,
                                           topics=topics, forgotten_topics_data=[], rack_id=""), 12)
                return r.session_id, [(t.topic, [p.error_code for p in t.partitions]) for t in r.responses]

            session, first = fetch(0, 0, [FetchTopic(topic="orders", partitions=[FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                partition_max_bytes=1 << 20)])])
            assert session and first == [("orders", [ErrorCode.NONE])]
            admin.request(DeleteAclsRequest(filters=[DeleteAclsFilter(
                resource_type_filter=2, resource_name_filter="orders", pattern_type_filter=3,
                principal_filter="User:alice", host_filter=None, operation=3, permission_type=1)]), 3)
            assert fetch(session, 1, []) == (session, [("orders", [ErrorCode.TOPIC_AUTHORIZATION_FAILED])])


def test_alter_replica_log_dirs_needs_cluster_alter(secured):
    """Without ALTER on the cluster every partition is answered CLUSTER_AUTHORIZATION_FAILED, as Kafka does."""
    from wire.messages import AlterReplicaLogDirsRequest
    from wire.messages.alter_replica_log_dirs_request import AlterReplicaLogDir, AlterReplicaLogDirTopic

    broker, sasl = secured
    with RawClient(sasl) as c:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        assert c.request(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "alice-secret")), 2).error_code == 0
        r = c.request(AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(path="/anywhere", topics=[
            AlterReplicaLogDirTopic(name="orders", partitions=[0, 1])])]), 2)
    assert [(t.topic_name, p.partition_index, p.error_code) for t in r.results for p in t.partitions] == [
        ("orders", 0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED), ("orders", 1, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
