"""Authorization judged by Apache Kafka 4.4 with its StandardAuthorizer: the same ACLs on a Kafka and on a
pykbroker configured alike (``authorizer.class.name``, ``super.users``), then every API family tried by SASL
principals that are allowed and denied, and the answers compared observation by observation. Differences
fail unless listed in ``differential_allowlist.ALLOWED`` under the scenario "authorization". On one node, and with
PYKBROKER_SLOW_DIFFERENTIAL=1 (``make differential-cluster``) on 3 pykbroker brokers (ZooKeeper) against a 3-node
Kafka 4.4 KRaft cluster with the same security on every node, asked through their first node by clients that
route each request as a Kafka client does.

Principals: ``User:ANONYMOUS`` on the PLAINTEXT listener and ``User:admin`` are super users (they set
things up); alice, bob and carol authenticate with SASL PLAIN. Kafka's ClusterAuthorizationException
messages name the request ("Request Request(processor=…) is not authorized."); they are compared by shape.
"""

from __future__ import annotations

import base64
import os
import re
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

import pytest

from compat_tests.conftest import assert_same_observations, differential_params
from compat_tests.routing_client import RoutingClient
from pykbroker.security.certs import CertificateAuthority
from pykbroker.security.client import ScramClient, plain_token
from pykbroker.testing import BrokerProcess, RawClient, free_port
from wire import ZERO_UUID, ErrorCode, build_simple_batch
from wire.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterUserScramCredentialsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    CreateAclsRequest,
    CreateDelegationTokenRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeDelegationTokenRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTopicPartitionsRequest,
    DescribeTransactionsRequest,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    EndTxnRequest,
    ExpireDelegationTokenRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListPartitionReassignmentsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    RenewDelegationTokenRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
    UpdateFeaturesRequest,
)
from wire.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic
from wire.messages.alter_client_quotas_request import EntityData as QuotaEntity
from wire.messages.alter_client_quotas_request import EntryData as QuotaEntry
from wire.messages.alter_client_quotas_request import OpData as QuotaOp
from wire.messages.alter_configs_request import AlterableConfig as LegacyAlterable
from wire.messages.alter_configs_request import AlterConfigsResource as LegacyAlterResource
from wire.messages.alter_partition_reassignments_request import ReassignablePartition, ReassignableTopic
from wire.messages.alter_user_scram_credentials_request import ScramCredentialDeletion
from wire.messages.consumer_group_heartbeat_request import TopicPartitions as CghTopicPartitions
from wire.messages.create_acls_request import AclCreation
from wire.messages.create_delegation_token_request import CreatableRenewers
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.delete_acls_request import DeleteAclsFilter
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.delete_topics_request import DeleteTopicState
from wire.messages.describe_client_quotas_request import ComponentData as QuotaComponent
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.describe_delegation_token_request import DescribeDelegationTokenOwner
from wire.messages.describe_producers_request import TopicRequest as DescribeProducersTopic
from wire.messages.describe_topic_partitions_request import TopicRequest as TopicRequestDTP
from wire.messages.elect_leaders_request import TopicPartitions
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.join_group_request import JoinGroupRequestProtocol
from wire.messages.leave_group_request import MemberIdentity
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_delete_request import OffsetDeleteRequestPartition, OffsetDeleteRequestTopic
from wire.messages.offset_fetch_request import (
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from wire.messages.offset_for_leader_epoch_request import OffsetForLeaderPartition, OffsetForLeaderTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData
from wire.messages.streams_group_heartbeat_request import KeyValue as StreamsKeyValue
from wire.messages.streams_group_heartbeat_request import Subtopology as StreamsSubtopology
from wire.messages.streams_group_heartbeat_request import TopicInfo as StreamsTopicInfo
from wire.messages.streams_group_heartbeat_request import Topology as StreamsTopology
from wire.messages.txn_offset_commit_request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

SCENARIO = "authorization"
USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
PLAIN_JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
              "password=\"admin-secret\" " + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
TOPICS = {"orders": 2, "secret": 1, "hidden": 1, "pub-a": 1, "cfg": 1}
# (resource type, name, pattern type, principal, host, operation, permission)
TOPIC, GROUP, CLUSTER, TXN = 2, 3, 4, 5
GROUP_CONFIG = 32  # DescribeConfigs' resource type of a group's configs
LITERAL, PREFIXED = 3, 4
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3, 4, 5, 6, 7, 8, 9, 10, 11
ALL, DENY, ALLOW = 2, 2, 3
ACLS = [
    (TOPIC, "orders", LITERAL, "User:alice", "*", WRITE, ALLOW),
    (TOPIC, "orders", LITERAL, "User:alice", "*", READ, ALLOW),
    (TOPIC, "pub-", PREFIXED, "User:alice", "*", DESCRIBE, ALLOW),
    (TOPIC, "secret", LITERAL, "User:*", "*", ALL, ALLOW),
    (TOPIC, "secret", LITERAL, "User:alice", "*", READ, DENY),
    (TOPIC, "cfg", LITERAL, "User:alice", "*", ALTER_CONFIGS, ALLOW),
    (TOPIC, "orders", LITERAL, "User:bob", "10.9.9.9", READ, ALLOW),
    (TOPIC, "bob-", PREFIXED, "User:bob", "*", CREATE, ALLOW),
    (GROUP, "g1", LITERAL, "User:alice", "*", READ, ALLOW),
    (GROUP, "g", PREFIXED, "User:bob", "*", DESCRIBE, ALLOW),
    (CLUSTER, "kafka-cluster", LITERAL, "User:bob", "*", DESCRIBE, ALLOW),
    (CLUSTER, "kafka-cluster", LITERAL, "User:bob", "*", ALTER_CONFIGS, ALLOW),
    (TXN, "tx1", LITERAL, "User:alice", "*", WRITE, ALLOW),
    (GROUP, "rx", LITERAL, "User:alice", "*", READ, ALLOW),
    (TOPIC, "orders", LITERAL, "User:O=pykbroker,CN=writer", "*", WRITE, ALLOW),  # a client certificate's DN
]


TOKEN_KEY = "differential-token-secret"


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, object]:
    """One CA for both brokers: their key stores, the trust store, and the client certificate of "writer"."""
    d = tmp_path_factory.mktemp("authz-pki")
    ca = CertificateAuthority()
    (d / "ca.pem").write_text(ca.pem)
    client = ca.issue(server=False, CN="writer", O="pykbroker")
    (d / "client.pem").write_text(client.chain_pem)
    (d / "client.key").write_text(client.key_pem)
    server = ca.issue(CN="localhost").write_pkcs12(d / "server.p12", "keystore-pass")
    return {"dir": d, "overrides": {
        "ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(server), "ssl.keystore.password": "keystore-pass",
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(d / "ca.pem"),
        "listener.name.mtls.ssl.client.auth": "required"}}


def tls(pki, client_cert: bool) -> ssl.SSLContext:
    d = pki["dir"]
    context = ssl.create_default_context(cafile=str(d / "ca.pem"))
    if client_cert:
        context.load_cert_chain(str(d / "client.pem"), str(d / "client.key"))
    return context


def security_overrides() -> dict[str, str]:
    return {"authorizer.class.name": AUTHORIZER, "super.users": "User:ANONYMOUS;User:admin",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
                "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "delegation.token.secret.key": TOKEN_KEY,
            "group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
            "transaction.state.log.num.partitions": "1"}


def creation(acl: tuple) -> AclCreation:
    rtype, name, pattern, principal, host, op, permission = acl
    return AclCreation(resource_type=rtype, resource_name=name, resource_pattern_type=pattern, principal=principal,
                       host=host, operation=op, permission_type=permission)


def any_filter(**kw) -> dict:
    return {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
            "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1, **kw}


class Target(NamedTuple):
    """One side's addresses: the super user's PLAINTEXT, SASL_PLAINTEXT, mutual TLS and one-way TLS listeners of
    the node asked, its log(s), and on a cluster every broker's PLAINTEXT address (empty on one node)."""

    admin: str
    sasl: str
    log: Callable[[], str]
    mtls: str
    one_way: str
    brokers: tuple[str, ...] = ()


# The brokers of the side being observed: on a cluster, clients route their requests as a Kafka client does
# (compat_tests/routing_client.py) and waits for ACLs ask every broker. Set by ``observe``.
_cluster: list[str] = []


def client(address: str, timeout: float = 15, client_id: str | None = "raw-test", ssl_context=None,
           authenticate: Callable[[RawClient], object] | None = None) -> RawClient:
    """A scenario client: on a cluster a routing one (``authenticate`` logs in each connection it opens)."""
    if _cluster:
        return RoutingClient(address, timeout, client_id, ssl_context, authenticate)
    return RawClient(address, timeout, client_id, ssl_context)


def acl_count(c: RawClient) -> int:
    """How many ACLs are in force (on a cluster, the fewest any broker knows)."""
    def count(at: RawClient) -> int:
        r = at.request(DescribeAclsRequest(**any_filter()), 3)
        return sum(len(res.acls) for res in r.resources)
    if not _cluster:
        return count(c)
    counts = []
    for address in _cluster:
        with RawClient(address, timeout=15) as at:
            counts.append(count(at))
    return min(counts)


def set_up(admin: str) -> None:
    """Topics and ACLs, made by the super user; returns once the ACLs are in force (Kafka applies them a moment
    after the controller commits them)."""
    with client(admin, timeout=30) as c:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=p, replication_factor=1)
                                                  for n, p in TOPICS.items()], timeout_ms=30_000), 7)
        assert all(t.error_code == 0 for t in r.topics), [(t.name, t.error_code) for t in r.topics]
        c.wait_for_topics(*TOPICS)
        r = c.request(CreateAclsRequest(creations=[creation(a) for a in ACLS]), 3)
        assert all(x.error_code == 0 for x in r.results), [(x.error_code, x.error_message) for x in r.results]
        deadline = time.monotonic() + 30
        while acl_count(c) < len(ACLS):
            assert time.monotonic() < deadline, "the ACLs never took effect"
            time.sleep(0.1)
        # Kafka loads coordinators asynchronously; clients retry until they are ready, and so does this.
        for key_type, key in ((0, "g1"), (1, "tx1")):
            retried(c, lambda kt=key_type, k=key: c.request(FindCoordinatorRequest(key_type=kt, coordinator_keys=[k]),
                                                            4).coordinators[0].error_code)
        retried(c, lambda: c.request(DescribeGroupsRequest(groups=["g1"]), 5).groups[0].error_code)
        retried(c, lambda: c.request(DescribeTransactionsRequest(transactional_ids=["tx1"]), 0)
                .transaction_states[0].error_code, done=(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND,))
        retried(c, lambda: c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 5)
                .error_code)
        for name in ("orders", "secret"):
            records = build_simple_batch([b"v"] * 3, keys=None, timestamp=int(time.time() * 1000))
            c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
                name=name, partition_data=[PartitionProduceData(index=0, records=records)])]), 9)


def retried(c: RawClient, call, done: tuple[int, ...] = (ErrorCode.NONE,), timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while (code := call()) not in done:
        assert time.monotonic() < deadline, f"still {code}"
        time.sleep(0.2)


@contextmanager
def side(target: Target) -> Iterator[Target]:
    """Clients made inside talk to ``target``'s kind of deployment (see ``client``)."""
    _cluster[:] = target.brokers
    try:
        yield target
    finally:
        _cluster.clear()


def _kafka_jars():
    import shutil

    from compat_tests.jvm.kafka_broker import jars_dir

    if shutil.which("java") is None:
        pytest.skip("java is not installed: the differential tests need Apache Kafka from the Maven jars")
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars"
    return jars


LISTENERS = [("SASL_PLAINTEXT", "SASL_PLAINTEXT"), ("MTLS", "SSL"), ("TLS", "SSL")]
AUTHORIZER_LOG = {"kafka.authorizer.logger": "INFO"}


@pytest.fixture(scope="module")
def kafka(tmp_path_factory, pki) -> Iterator[Target]:
    from compat_tests.jvm.kafka_broker import KafkaBroker

    kb = KafkaBroker(_kafka_jars(), root=tmp_path_factory.mktemp("kafka-authz"), loggers=AUTHORIZER_LOG)
    controller, sasl_port, mtls_port, tls_port = free_port(), free_port(), free_port(), free_port()
    tls_listeners = f"MTLS://127.0.0.1:{mtls_port},TLS://127.0.0.1:{tls_port}"
    kb.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{kb.port},CONTROLLER://127.0.0.1:{controller},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sasl_port},{tls_listeners}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{kb.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                                f"{tls_listeners}",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                                          "MTLS:SSL,TLS:SSL",
        **security_overrides(), **pki["overrides"]})
    try:
        kb.start()
        set_up(kb.bootstrap)
        yield Target(kb.bootstrap, f"127.0.0.1:{sasl_port}", lambda: kb.log_path.read_text(errors="replace"),
                     f"127.0.0.1:{mtls_port}", f"127.0.0.1:{tls_port}")
    finally:
        kb.close()


@pytest.fixture(scope="module")
def pykbroker(tmp_path_factory, pki) -> Iterator[Target]:
    port, sasl_port, mtls_port, tls_port = free_port(), free_port(), free_port(), free_port()
    overrides = {"listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                              f"MTLS://127.0.0.1:{mtls_port},TLS://127.0.0.1:{tls_port}",
                 "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,MTLS:SSL,TLS:SSL",
                 **security_overrides(), **pki["overrides"]}
    with BrokerProcess(tmp_path_factory.mktemp("pyk-authz"), port=port, overrides=overrides) as b:
        set_up(b.bootstrap)
        yield Target(b.bootstrap, f"127.0.0.1:{sasl_port}", b.log, f"127.0.0.1:{mtls_port}", f"127.0.0.1:{tls_port}")


def _cluster_target(ports: list[dict[str, int]], logs: list[Path]) -> Target:
    """A cluster asked through its first node, with every node's log."""
    first = {name: f"127.0.0.1:{port}" for name, port in ports[0].items()}
    return Target(first["PLAINTEXT"], first["SASL_PLAINTEXT"],
                  lambda: "\n".join(log.read_text(errors="replace") for log in logs), first["MTLS"], first["TLS"],
                  tuple(f"127.0.0.1:{p['PLAINTEXT']}" for p in ports))


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory, pki) -> Iterator[Target]:
    """A 3-node Kafka 4.4 KRaft cluster with the same security on every node."""
    from compat_tests import secured_clusters
    for cluster, ports in secured_clusters.kafka_cluster(
            _kafka_jars(), tmp_path_factory.mktemp("kafka-authz-cluster"), LISTENERS,
            {**security_overrides(), **pki["overrides"]}, AUTHORIZER_LOG):
        with side(target := _cluster_target(ports, [n.log_path for n in cluster.nodes])):
            set_up(target.admin)
        yield target


@pytest.fixture(scope="module")
def pykbroker_cluster(tmp_path_factory, pki) -> Iterator[Target]:
    """3 pykbroker brokers (one ZooKeeper) with the same security on every broker."""
    from compat_tests import secured_clusters
    for cluster, ports in secured_clusters.pykbroker_cluster(
            tmp_path_factory.mktemp("pyk-authz-cluster"), LISTENERS, {**security_overrides(), **pki["overrides"]}):
        with side(target := _cluster_target(ports, [b.log_path for b in cluster.brokers.values()])):
            set_up(target.admin)
        yield target


# -- observations --------------------------------------------------------------------------------------------------
_NOT_AUTHORIZED = re.compile(r"Request Request\(.*\) needs (\w+) permission\.")


def norm(value):
    """Kafka's messages that name the request are compared by their shape."""
    if isinstance(value, str):
        return _NOT_AUTHORIZED.sub(r"Request <request> needs \1 permission.", value)
    if isinstance(value, (list, tuple)):
        return type(value)(norm(v) for v in value)
    return value


def login(address: str, user: str) -> RawClient:
    def authenticate(c: RawClient) -> None:
        c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1)
        r = c.request(SaslAuthenticateRequest(auth_bytes=plain_token(user, USERS[user])), 2)
        assert r.error_code == 0, r.error_message

    c = client(address, timeout=15, client_id=f"authz-{user}", authenticate=authenticate)
    authenticate(c)
    return c


def observe_user(c: RawClient, user: str) -> dict[str, object]:
    out: dict[str, object] = {}
    now = int(time.time() * 1000)
    records = build_simple_batch([b"v"], keys=None, timestamp=now)

    # Metadata: all topics (unauthorized ones hidden), named topics, authorized operations, auto-creation.
    m = c.request(MetadataRequest(topics=None, include_topic_authorized_operations=True), 12)
    out["metadata brokers"] = len(m.brokers)
    out["metadata all"] = sorted((t.name, t.error_code, t.topic_authorized_operations) for t in m.topics
                                 if not t.name.startswith("__"))
    m = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in (
        "orders", "secret", "hidden", "pub-a", "pub-missing", "bob-new", "none")], allow_auto_topic_creation=False,
        include_topic_authorized_operations=True), 12)
    out["metadata named"] = sorted((t.name, t.error_code, t.topic_id == ZERO_UUID, t.is_internal,
                                    len(t.partitions), t.topic_authorized_operations) for t in m.topics)
    m = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="bob-auto"), MetadataRequestTopic(
        name="other-auto")], allow_auto_topic_creation=True), 12)
    out["metadata auto-create"] = sorted((t.name, t.error_code) for t in m.topics)
    m = c.request(MetadataRequest(topics=[], include_cluster_authorized_operations=True), 10)
    out["metadata cluster operations"] = m.cluster_authorized_operations
    d = c.request(DescribeClusterRequest(include_cluster_authorized_operations=True), 1)
    out["describe cluster"] = (d.error_code, d.cluster_authorized_operations)
    d = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequestDTP(name=n) for n in ("orders", "hidden", "cfg")],
                                                 response_partition_limit=100, cursor=None), 0)
    out["describe topic partitions"] = sorted((t.name, t.error_code, t.topic_authorized_operations)
                                              for t in d.topics)

    # Produce, fetch, list offsets, offsets for leader epoch.
    p = c.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(name=n, partition_data=[
        PartitionProduceData(index=0, records=records)]) for n in ("orders", "secret", "hidden", "missing")]), 9)
    out["produce"] = sorted((t.name, t.partition_responses[0].error_code) for t in p.responses)
    f = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                               session_id=0, session_epoch=-1, topics=[FetchTopic(topic=n, partitions=[FetchPartition(
                                   partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                                   partition_max_bytes=1 << 20)]) for n in ("orders", "secret", "hidden", "missing")],
                               forgotten_topics_data=[], rack_id=""), 12)
    out["fetch"] = sorted((t.topic, t.partitions[0].error_code, len(t.partitions[0].records or b"") > 0)
                          for t in f.responses)
    lo = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(name=n, partitions=[
        ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=-1)])
        for n in ("orders", "hidden")]), 7)
    out["list offsets"] = sorted((t.name, t.partitions[0].error_code, t.partitions[0].offset) for t in lo.topics)
    e = c.request(OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderTopic(topic=n, partitions=[
        OffsetForLeaderPartition(partition=0, current_leader_epoch=-1, leader_epoch=0)])
        for n in ("orders", "hidden")]), 4)
    out["offset for leader epoch"] = sorted((t.topic, t.partitions[0].error_code) for t in e.topics)

    # Groups.
    fc = c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2", "zz"]), 4)
    out["find coordinator groups"] = sorted((x.key, x.error_code if x.error_code != ErrorCode.COORDINATOR_NOT_AVAILABLE
                                             else 0, x.error_message) for x in fc.coordinators)
    fc = c.request(FindCoordinatorRequest(key="zz", key_type=0), 3)
    out["find coordinator v3"] = (fc.error_code, fc.error_message) if fc.error_code != 15 else 0
    fc = c.request(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx1", "tx2"]), 4)
    out["find coordinator transactions"] = sorted((x.key, x.error_code if x.error_code != 15 else 0)
                                                  for x in fc.coordinators)
    protocols = [JoinGroupRequestProtocol(name="range", metadata=b"")]
    j = c.request(JoinGroupRequest(group_id="g2", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                                   group_instance_id=None, protocol_type="consumer", protocols=protocols), 9)
    out["join unauthorized group"] = (j.error_code, j.generation_id, j.member_id, j.leader, j.protocol_name)
    out["sync unauthorized group"] = c.request(SyncGroupRequest(
        group_id="g2", generation_id=1, member_id="m", group_instance_id=None, protocol_type="consumer",
        protocol_name="range", assignments=[]), 5).error_code
    out["heartbeat unauthorized group"] = c.request(HeartbeatRequest(group_id="g2", generation_id=1, member_id="m",
                                                                     group_instance_id=None), 4).error_code
    out["leave unauthorized group"] = c.request(LeaveGroupRequest(group_id="g2", members=[MemberIdentity(
        member_id="m", group_instance_id=None)]), 5).error_code
    oc = c.request(OffsetCommitRequest(group_id="g1", generation_id_or_member_epoch=-1, member_id="",
                                       group_instance_id=None, topics=[OffsetCommitRequestTopic(name=n, partitions=[
                                           OffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                                        committed_metadata="")])
                                           for n in ("orders", "hidden", "missing")]), 9)
    out["offset commit g1"] = [(t.name, t.partitions[0].error_code) for t in oc.topics]
    oc = c.request(OffsetCommitRequest(group_id="g2", generation_id_or_member_epoch=-1, member_id="",
                                       group_instance_id=None, topics=[OffsetCommitRequestTopic(name="orders",
                                       partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                                                committed_metadata="")])]), 9)
    out["offset commit g2"] = [(t.name, t.partitions[0].error_code) for t in oc.topics]
    of = c.request(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=g, topics=[
        OffsetFetchRequestTopics(name=n, partition_indexes=[0]) for n in ("orders", "hidden")]) for g in ("g1", "g2")]
        + [OffsetFetchRequestGroup(group_id="g1", topics=None)], require_stable=False), 8)
    out["offset fetch"] = [(g.group_id, g.error_code, sorted((t.name, t.partitions[0].error_code,
                                                              t.partitions[0].committed_offset) for t in g.topics))
                           for g in of.groups]
    of = c.request(OffsetFetchRequest(group_id="g2", topics=[OffsetFetchRequestTopic(name="orders",
                                                                                     partition_indexes=[0])]), 7)
    out["offset fetch v7 unauthorized"] = (of.error_code, len(of.topics))
    dg = c.request(DescribeGroupsRequest(groups=["g1", "g2", "gx"], include_authorized_operations=True), 5)
    out["describe groups"] = sorted((g.group_id, g.error_code, g.group_state, g.authorized_operations)
                                    for g in dg.groups)
    out["list groups"] = sorted(g.group_id for g in c.request(ListGroupsRequest(states_filter=[]), 4).groups)
    od = c.request(OffsetDeleteRequest(group_id="g1", topics=[OffsetDeleteRequestTopic(
        name="orders", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]), 0)
    out["offset delete"] = (od.error_code, [(t.name, [p.error_code for p in t.partitions]) for t in od.topics])
    dl = c.request(DeleteGroupsRequest(groups_names=["g2", "gx"]), 2)
    out["delete groups"] = sorted((r.group_id, r.error_code) for r in dl.results)
    hb = c.request(ConsumerGroupHeartbeatRequest(group_id="g2", member_id="m" * 22, member_epoch=0,
                                                 rebalance_timeout_ms=10000, subscribed_topic_names=["orders"],
                                                 topic_partitions=[]), 1)
    out["consumer heartbeat unauthorized group"] = hb.error_code
    hb = c.request(ConsumerGroupHeartbeatRequest(group_id="g1", member_id="m" * 22, member_epoch=0,
                                                 rebalance_timeout_ms=10000, subscribed_topic_names=["orders", "hidden"],
                                                 topic_partitions=[]), 1)
    out["consumer heartbeat unauthorized topic"] = hb.error_code
    cd = c.request(ConsumerGroupDescribeRequest(group_ids=["g2", "gz"], include_authorized_operations=True), 1)
    out["consumer group describe"] = sorted((g.group_id, g.error_code, g.authorized_operations) for g in cd.groups)

    # Transactions and idempotence.
    ip = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60000), 5)
    out["init producer id idempotent"] = ip.error_code
    ip = c.request(InitProducerIdRequest(transactional_id="tx2", transaction_timeout_ms=60000), 5)
    out["init producer id tx2"] = ip.error_code
    out["add partitions tx2"] = [(t.name, [p.partition_error_code for p in t.results_by_partition]) for t in c.request(
        AddPartitionsToTxnRequest(v3_and_below_transactional_id="tx2", v3_and_below_producer_id=1,
                                  v3_and_below_producer_epoch=0, v3_and_below_topics=[AddPartitionsToTxnTopic(
                                      name="orders", partitions=[0])]), 3).results_by_topic_v3_and_below]
    out["add partitions tx1"] = sorted((t.name, [p.partition_error_code for p in t.results_by_partition])
                                       for t in c.request(AddPartitionsToTxnRequest(
                                           v3_and_below_transactional_id="tx1", v3_and_below_producer_id=1,
                                           v3_and_below_producer_epoch=0, v3_and_below_topics=[
                                               AddPartitionsToTxnTopic(name=n, partitions=[0])
                                               for n in ("orders", "hidden", "__consumer_offsets")]), 3
                                       ).results_by_topic_v3_and_below)
    out["add partitions v4"] = c.request(AddPartitionsToTxnRequest(transactions=[]), 4).error_code
    out["add offsets tx2"] = c.request(AddOffsetsToTxnRequest(transactional_id="tx2", producer_id=1, producer_epoch=0,
                                                              group_id="g1"), 4).error_code
    out["add offsets tx1 g2"] = c.request(AddOffsetsToTxnRequest(transactional_id="tx1", producer_id=1,
                                                                 producer_epoch=0, group_id="g2"), 4).error_code
    et = c.request(EndTxnRequest(transactional_id="tx2", producer_id=1, producer_epoch=0, committed=True), 4)
    out["end txn tx2"] = (et.error_code, et.producer_id, et.producer_epoch)
    tc = c.request(TxnOffsetCommitRequest(transactional_id="tx2", group_id="g1", producer_id=1, producer_epoch=0,
                                          generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, topics=[
                                              TxnOffsetCommitRequestTopic(name="orders", partitions=[
                                                  TxnOffsetCommitRequestPartition(partition_index=0,
                                                                                  committed_offset=1)])]), 4)
    out["txn offset commit tx2"] = [(t.name, [p.error_code for p in t.partitions]) for t in tc.topics]
    dt = c.request(DescribeTransactionsRequest(transactional_ids=["tx1", "tx2"]), 0)
    out["describe transactions"] = sorted((s.transactional_id, s.error_code if s.error_code != 15 else 0)
                                          for s in dt.transaction_states)
    lt = c.request(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 1)
    out["list transactions"] = (lt.error_code, sorted(s.transactional_id for s in lt.transaction_states))
    dp = c.request(DescribeProducersRequest(topics=[DescribeProducersTopic(name=n, partition_indexes=[0])
                                                    for n in ("orders", "hidden")]), 0)
    out["describe producers"] = sorted((t.name, t.partitions[0].error_code, t.partitions[0].error_message)
                                       for t in dp.topics)

    # Topic administration.
    ct = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1)
                                               for n in ("bob-made", "other-made")], timeout_ms=10000,
                                       validate_only=True), 7)
    out["create topics"] = sorted((t.name, t.error_code, t.error_message, t.topic_config_error_code,
                                   t.num_partitions, len(t.configs or [])) for t in ct.topics)
    dt2 = c.request(DeleteTopicsRequest(topics=[DeleteTopicState(name=n, topic_id=ZERO_UUID)
                                                for n in ("orders", "hidden", "nope")], timeout_ms=10000), 6)
    out["delete topics"] = sorted((t.name, t.error_code, t.error_message) for t in dt2.responses)
    cp = c.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(name=n, count=5, assignments=None)
                                                   for n in ("orders", "hidden")], timeout_ms=10000,
                                           validate_only=True), 3)
    out["create partitions"] = sorted((r.name, r.error_code, r.error_message) for r in cp.results)
    dr = c.request(DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=n, partitions=[DeleteRecordsPartition(
        partition_index=0, offset=0)]) for n in ("orders", "secret")], timeout_ms=5000), 2)
    out["delete records"] = sorted((t.name, t.partitions[0].error_code) for t in dr.topics)

    # Configs.
    dc = c.request(DescribeConfigsRequest(resources=[
        DescribeConfigsResource(resource_type=2, resource_name=n, configuration_keys=["retention.ms"])
        for n in ("cfg", "orders")] + [DescribeConfigsResource(resource_type=4, resource_name="1",
                                                               configuration_keys=["log.retention.ms"]),
                                       DescribeConfigsResource(resource_type=8, resource_name="1",
                                                               configuration_keys=["root"])],
        include_synonyms=False, include_documentation=False), 4)
    out["describe configs"] = sorted((r.resource_type, r.resource_name, r.error_code, r.error_message or "")
                                     for r in dc.results)
    ia = c.request(IncrementalAlterConfigsRequest(resources=[
        AlterConfigsResource(resource_type=2, resource_name=n, configs=[AlterableConfig(
            name="retention.ms", config_operation=0, value="100000")]) for n in ("cfg", "orders")] + [
        AlterConfigsResource(resource_type=4, resource_name="", configs=[AlterableConfig(
            name="log.retention.ms", config_operation=0, value="100000")]),
        AlterConfigsResource(resource_type=8, resource_name="1", configs=[AlterableConfig(
            name="root", config_operation=0, value="INFO")])], validate_only=True), 1)
    out["incremental alter configs"] = sorted((r.resource_type, r.resource_name, r.error_code, r.error_message)
                                              for r in ia.responses)
    la = c.request(AlterConfigsRequest(resources=[LegacyAlterResource(resource_type=2, resource_name=n, configs=[
        LegacyAlterable(name="retention.ms", value="100000")]) for n in ("cfg", "orders")], validate_only=True), 2)
    out["alter configs"] = sorted((r.resource_name, r.error_code, r.error_message) for r in la.responses)

    # Cluster administration.
    q = c.request(DescribeClientQuotasRequest(components=[QuotaComponent(entity_type="user", match_type=2)],
                                              strict=False), 1)
    out["describe client quotas"] = (q.error_code, q.error_message)
    aq = c.request(AlterClientQuotasRequest(entries=[QuotaEntry(entity=[QuotaEntity(entity_type="user",
                                                                                    entity_name="x")],
                                                                ops=[QuotaOp(key="producer_byte_rate", value=1024.0,
                                                                             remove=False)])], validate_only=True), 1)
    out["alter client quotas"] = [(e.error_code, e.error_message) for e in aq.entries]
    ds = c.request(DescribeUserScramCredentialsRequest(users=[]), 0)
    out["describe scram"] = (ds.error_code, ds.error_message)
    al = c.request(AlterUserScramCredentialsRequest(deletions=[ScramCredentialDeletion(name="zed", mechanism=1)],
                                                    upsertions=[]), 0)
    out["alter scram"] = [(r.user, r.error_code, norm(r.error_message)) for r in al.results]
    lg = c.request(DescribeLogDirsRequest(topics=None), 4)
    out["describe log dirs"] = (lg.error_code, len(lg.results))
    el = c.request(ElectLeadersRequest(election_type=0, topic_partitions=[TopicPartitions(topic="orders",
                                                                                           partitions=[0])],
                                       timeout_ms=5000), 2)
    out["elect leaders"] = (el.error_code, [(r.topic, [(p.error_code, norm(p.error_message))
                                                       for p in r.partition_result])
                                            for r in el.replica_election_results])
    lr = c.request(ListPartitionReassignmentsRequest(topics=None, timeout_ms=5000), 0)
    out["list reassignments"] = (lr.error_code, norm(lr.error_message))
    ar = c.request(AlterPartitionReassignmentsRequest(topics=[ReassignableTopic(name="orders", partitions=[
        ReassignablePartition(partition_index=0, replicas=None)])], timeout_ms=5000), 0)
    out["alter reassignments"] = (ar.error_code, norm(ar.error_message))
    uf = c.request(UpdateFeaturesRequest(feature_updates=[], timeout_ms=5000, validate_only=True), 1)
    out["update features"] = (uf.error_code, norm(uf.error_message))

    # ACL administration.
    da = c.request(DescribeAclsRequest(**any_filter()), 3)
    out["describe acls"] = (da.error_code, norm(da.error_message), sum(len(r.acls) for r in da.resources))
    ca = c.request(CreateAclsRequest(creations=[creation((TOPIC, "x", LITERAL, "User:z", "*", READ, ALLOW))]), 3)
    out["create acls"] = [(r.error_code, norm(r.error_message)) for r in ca.results]
    dl2 = c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(**any_filter())]), 3)
    out["delete acls"] = [(r.error_code, norm(r.error_message), len(r.matching_acls)) for r in dl2.filter_results]
    return {f"{user} {k}": v for k, v in out.items()}


def observe_acl_admin(admin: str) -> dict[str, object]:
    """The ACL APIs themselves, by the super user: creations checked, filters matched, deletions effective."""
    out: dict[str, object] = {}
    with client(admin, timeout=30) as c:
        bad = [(CLUSTER, "other-cluster", LITERAL, "User:x", "*", ALTER, ALLOW),
               (TOPIC, "", LITERAL, "User:x", "*", READ, ALLOW),
               (TOPIC, "t", 1, "User:x", "*", READ, ALLOW),  # ANY pattern
               (TOPIC, "t", 2, "User:x", "*", READ, ALLOW),  # MATCH pattern
               (1, "t", LITERAL, "User:x", "*", READ, ALLOW),  # ANY resource type
               (TOPIC, "t", LITERAL, "User:x", "*", 1, ALLOW),  # ANY operation
               (TOPIC, "t", LITERAL, "User:x", "*", READ, 1),  # ANY permission
               (TOPIC, "t", LITERAL, "x", "*", READ, ALLOW),  # no principal type
               (TOPIC, "dup", LITERAL, "User:x", "*", READ, ALLOW),
               (TOPIC, "dup", LITERAL, "User:x", "*", READ, ALLOW),
               (7, "User:x", LITERAL, "User:y", "*", 13, ALLOW),  # USER resource, CREATE_TOKENS
               (6, "token-1", LITERAL, "User:y", "*", DESCRIBE, ALLOW)]  # DELEGATION_TOKEN
        results = [c.request(CreateAclsRequest(creations=[creation(a)]), 3).results[0] for a in bad]
        out["create acls checked"] = [(x.error_code, x.error_message) for x in results]
        r = c.request(CreateAclsRequest(creations=[creation(a) for a in bad[:2] + bad[-4:]]), 3)
        out["create acls mixed"] = [(x.error_code, x.error_message) for x in r.results]
        created = len({a for a, x in zip(bad, results, strict=True) if x.error_code == 0})
        deadline = time.monotonic() + 30
        while acl_count(c) < len(ACLS) + created:
            assert time.monotonic() < deadline, "created ACLs never took effect"
            time.sleep(0.1)

        def described(**kw) -> list:
            d = c.request(DescribeAclsRequest(**any_filter(**kw)), 3)
            return d.error_code, sorted((res.resource_type, res.resource_name, res.pattern_type,
                                         sorted((a.principal, a.host, a.operation, a.permission_type)
                                                for a in res.acls)) for res in d.resources)
        out["describe all"] = described()
        out["describe match pub-x"] = described(resource_type_filter=TOPIC, resource_name_filter="pub-x",
                                                pattern_type_filter=2)
        out["describe match secret"] = described(resource_type_filter=TOPIC, resource_name_filter="secret",
                                                 pattern_type_filter=2)
        out["describe prefixed"] = described(pattern_type_filter=PREFIXED)
        out["describe literal orders"] = described(resource_name_filter="orders", pattern_type_filter=LITERAL)
        out["describe principal bob"] = described(principal_filter="User:bob")
        out["describe host"] = described(host_filter="10.9.9.9")
        out["describe deny"] = described(permission_type=DENY)
        out["describe write"] = described(operation=WRITE)
        out["describe users"] = described(resource_type_filter=7)
        out["describe v1"] = c.request(DescribeAclsRequest(**any_filter(resource_type_filter=6)), 1).error_code
        configs = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=4, resource_name="1", configuration_keys=[
                "authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found", "delegation.token.secret.key",
                "delegation.token.max.lifetime.ms"])], include_synonyms=True, include_documentation=False), 4)
        out["broker configs"] = sorted((e.name, e.value, e.is_sensitive, e.config_source, e.config_type, e.read_only,
                                        [(y.name, y.value, y.source) for y in e.synonyms])
                                       for e in configs.results[0].configs)
        d = c.request(DeleteAclsRequest(filters=[
            DeleteAclsFilter(**any_filter(resource_name_filter="dup")),
            DeleteAclsFilter(**any_filter(resource_type_filter=7)),
            DeleteAclsFilter(**any_filter(resource_name_filter="nothing"))]), 3)
        out["delete acls"] = [(f.error_code, sorted((m.resource_type, m.resource_name, m.principal, m.operation)
                                                    for m in f.matching_acls)) for f in d.filter_results]
        removed = len({(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation,
                        m.permission_type) for f in d.filter_results for m in f.matching_acls})
        deadline = time.monotonic() + 30
        while acl_count(c) > len(ACLS) + created - removed:
            assert time.monotonic() < deadline, "deleted ACLs never went away"
            time.sleep(0.1)
        out["after delete"] = described()[1] == described()[1] and len(described()[1])
        c.send(DescribeAclsRequest(**any_filter(operation=0)), 3)
        out["describe unknown operation"] = c.is_closed_by_peer(5.0)
    return out


_TOKEN_RESOURCE = re.compile(r"DelegationToken:LITERAL:\S+")


def denials(log_text: str) -> list[str]:
    """The authorizer's denial lines (Kafka's words), without timestamps, once each; token ids are random."""
    return sorted({_TOKEN_RESOURCE.sub("DelegationToken:LITERAL:<token id>", line[line.index("Principal = "):])
                   for line in log_text.splitlines() if "Principal = " in line and " is Denied " in line})


def token_login(address: str, token_id: str, hmac: bytes) -> tuple[RawClient, tuple]:
    """SCRAM-SHA-256 with a delegation token: user name the token id, password the base64 HMAC."""
    c = client(address, timeout=15, client_id="authz-token")
    h = c.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256"), 1)
    scram = ScramClient("SCRAM-SHA-256", token_id, base64.b64encode(hmac).decode(), "tokenauth=true")
    first = c.request(SaslAuthenticateRequest(auth_bytes=scram.first()), 2)
    if first.error_code != 0:
        return c, (h.error_code, first.error_code, first.error_message)
    final = c.request(SaslAuthenticateRequest(auth_bytes=scram.final(bytes(first.auth_bytes))), 2)
    # A token's session lasts until the token expires (KIP-368): about a day here, to the minute.
    lifetime_minutes = round(final.session_lifetime_ms / 60_000)
    return c, (h.error_code, final.error_code, final.error_message, scram.verify(bytes(final.auth_bytes)),
               lifetime_minutes)


def observe_tokens(admin: str, sasl: str) -> dict[str, object]:
    """Delegation tokens: created, described, renewed, used to authenticate with SCRAM, expired."""
    out: dict[str, object] = {}

    def created(r) -> tuple:
        return (r.error_code, r.principal_type, r.principal_name, r.token_requester_principal_type,
                r.token_requester_principal_name, bool(r.token_id), len(r.hmac),
                r.expiry_timestamp_ms - r.issue_timestamp_ms if r.error_code == 0 else r.expiry_timestamp_ms,
                r.max_timestamp_ms - r.issue_timestamp_ms if r.error_code == 0 else r.max_timestamp_ms)

    def described(c: RawClient, owners=None) -> tuple:
        r = c.request(DescribeDelegationTokenRequest(owners=owners), 3)
        return r.error_code, sorted((t.principal_name, t.token_requester_principal_name, len(t.hmac),
                                     [x.principal_name for x in t.renewers]) for t in r.tokens)

    with client(admin, timeout=15) as c:
        out["create on plaintext"] = created(c.request(CreateDelegationTokenRequest(
            owner_principal_type=None, owner_principal_name=None, renewers=[], max_lifetime_ms=-1), 3))
        out["describe on plaintext"] = described(c)
    with login(sasl, "alice") as c:
        r = c.request(CreateDelegationTokenRequest(owner_principal_type=None, owner_principal_name=None, renewers=[
            CreatableRenewers(principal_type="User", principal_name="bob")], max_lifetime_ms=3_600_000), 3)
        out["create"] = created(r)
        token_id, hmac = r.token_id, bytes(r.hmac)
        out["create v1"] = created(c.request(CreateDelegationTokenRequest(renewers=[], max_lifetime_ms=-1), 1))[:3]
        out["create for bob"] = created(c.request(CreateDelegationTokenRequest(
            owner_principal_type="User", owner_principal_name="bob", renewers=[], max_lifetime_ms=-1), 3))
        out["create with group renewer"] = created(c.request(CreateDelegationTokenRequest(
            owner_principal_type=None, owner_principal_name=None, renewers=[
                CreatableRenewers(principal_type="Group", principal_name="g")], max_lifetime_ms=-1), 3))
        deadline = time.monotonic() + 30
        while len(described(c)[1]) < 2:  # Kafka's brokers learn of tokens from the metadata log
            assert time.monotonic() < deadline, "tokens never became visible"
            time.sleep(0.1)
        out["describe by owner"] = described(c)
        out["describe empty owners"] = described(c, [])
        out["describe owner bob"] = described(c, [DescribeDelegationTokenOwner(principal_type="User",
                                                                               principal_name="bob")])
        out["renew unknown"] = c.request(RenewDelegationTokenRequest(hmac=b"nope", renew_period_ms=1000), 2).error_code
    with login(sasl, "bob") as c:
        out["describe by renewer"] = described(c)
        r = c.request(RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=600_000), 2)
        out["renew by renewer"] = (r.error_code, r.expiry_timestamp_ms > 0)
        deadline = time.monotonic() + 30
        while r.expiry_timestamp_ms not in [t.expiry_timestamp for t in c.request(DescribeDelegationTokenRequest(
                owners=None), 3).tokens]:  # Kafka's brokers learn of the renewal from the metadata log
            assert time.monotonic() < deadline, "the renewal never became visible"
            time.sleep(0.1)
    with login(sasl, "carol") as c:
        out["describe by other"] = described(c)
        out["renew by other"] = c.request(RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=1000), 2).error_code
        out["expire by other"] = c.request(ExpireDelegationTokenRequest(hmac=hmac, expiry_time_period_ms=-1),
                                           2).error_code
    c, out["scram with token"] = token_login(sasl, token_id, hmac)
    with c:
        m = c.request(MetadataRequest(topics=None), 12)
        out["token principal sees"] = sorted(t.name for t in m.topics if not t.name.startswith("__"))
        out["token creates token"] = created(c.request(CreateDelegationTokenRequest(
            owner_principal_type=None, owner_principal_name=None, renewers=[], max_lifetime_ms=-1), 3))
        out["token describes"] = described(c)
    c, out["scram with wrong token"] = token_login(sasl, token_id, b"x" * 64)
    c.close()
    with login(sasl, "alice") as c:
        r = c.request(ExpireDelegationTokenRequest(hmac=hmac, expiry_time_period_ms=-1), 2)
        out["expire by owner"] = r.error_code
        deadline = time.monotonic() + 30
        while len(described(c)[1]) > 1:
            assert time.monotonic() < deadline, "an expired token stayed"
            time.sleep(0.1)
        out["describe after expire"] = described(c)
        out["renew expired"] = c.request(RenewDelegationTokenRequest(hmac=hmac, renew_period_ms=1000), 2).error_code
    c, out["scram with expired token"] = token_login(sasl, token_id, hmac)
    c.close()
    return {f"token {k}": v for k, v in out.items()}


def observe_tls(mtls: str, one_way: str, pki) -> dict[str, object]:
    """A client certificate's DN as the principal (mutual TLS), and ANONYMOUS over one-way TLS."""
    out: dict[str, object] = {}
    records = build_simple_batch([b"v"], keys=None, timestamp=int(time.time() * 1000))
    for name, address, cert in (("mtls", mtls, True), ("one-way tls", one_way, False)):
        with client(address, timeout=15, ssl_context=tls(pki, cert)) as c:
            m = c.request(MetadataRequest(topics=None, include_topic_authorized_operations=True), 12)
            out[f"{name} metadata"] = sorted((t.name, t.topic_authorized_operations) for t in m.topics
                                             if not t.name.startswith("__"))
            p = c.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
                name=n, partition_data=[PartitionProduceData(index=0, records=records)]) for n in ("orders", "hidden")]),
                9)
            out[f"{name} produce"] = sorted((t.name, t.partition_responses[0].error_code) for t in p.responses)
            t = c.request(CreateDelegationTokenRequest(owner_principal_type=None, owner_principal_name=None,
                                                       renewers=[], max_lifetime_ms=-1), 3)
            out[f"{name} create token"] = (t.error_code, t.principal_type, t.principal_name)
    return out


def observe_group_topics(admin: str, sasl: str) -> dict[str, object]:
    """A consumer group (KIP-848) whose members are assigned topics a describer may not see is not described."""
    out: dict[str, object] = {}
    with client(admin, timeout=15) as c:
        member = "m" * 22
        epoch = 0
        for step in (0, 1):  # join, then heartbeat with the epoch the coordinator gave (a new group's first: 4.4's)
            hb = c.request(ConsumerGroupHeartbeatRequest(group_id="g3", member_id=member, member_epoch=epoch,
                                                         rebalance_timeout_ms=10000, subscribed_topic_names=["orders"],
                                                         topic_partitions=[] if epoch == 0 else None), 1)
            out[f"admin heartbeat {step}"] = hb.error_code
            epoch = hb.member_epoch
    for user in ("bob", "alice"):
        with login(sasl, user) as c:
            d = c.request(ConsumerGroupDescribeRequest(group_ids=["g3"], include_authorized_operations=True), 1)
            g = d.groups[0]
            out[f"{user} describes g3"] = (g.error_code, g.error_message, len(g.members), g.authorized_operations)
    return {f"group topics {k}": v for k, v in out.items()}


def observe_regex(admin: str, sasl: str) -> dict[str, object]:
    """A KIP-848 member subscribing with a regex is assigned only the matching topics it may DESCRIBE: orders
    (implied by READ and WRITE), secret (ALL for User:*; alice's READ DENY leaves DESCRIBE alone) and pub-a
    (prefixed DESCRIBE), not hidden (no ACL) nor cfg (ALTER_CONFIGS implies DESCRIBE_CONFIGS only)."""
    with client(admin, timeout=15) as c:
        ids = {t.topic_id: t.name for t in c.request(MetadataRequest(topics=None), 12).topics}
    member, epoch, owned = "r" * 22, 0, {}
    deadline = time.monotonic() + 30
    with login(sasl, "alice") as c:
        while True:
            hb = c.request(ConsumerGroupHeartbeatRequest(
                group_id="rx", member_id=member, member_epoch=epoch, rebalance_timeout_ms=10000,
                subscribed_topic_regex="orders|secret|hidden|cfg|pub-.*" if epoch == 0 else None,
                topic_partitions=[CghTopicPartitions(topic_id=t, partitions=p) for t, p in owned.items()]), 1)
            assert hb.error_code == ErrorCode.NONE, (hb.error_code, hb.error_message)
            epoch = hb.member_epoch
            if hb.assignment is not None:
                owned = {tp.topic_id: sorted(tp.partitions) for tp in hb.assignment.topic_partitions}
            if owned or time.monotonic() > deadline:  # Kafka resolves the regex a moment after the join
                break
            time.sleep(0.2)
    with client(admin, timeout=15) as c:
        d = c.request(ConsumerGroupDescribeRequest(group_ids=["rx"]), 1).groups[0]
        described = sorted((m.subscribed_topic_regex, sorted(t.topic_name for t in m.assignment.topic_partitions))
                           for m in d.members)
    return {"regex assignment": sorted((ids.get(t), p) for t, p in owned.items()),
            "regex described members": described}


def observe_cidr_hosts(admin: str, sasl: str) -> dict[str, object]:
    """ACL host patterns as CIDR blocks (KIP-1276, Kafka 4.4): malformed blocks refused with Kafka's messages, a
    block holding the client's address applies to it, one that does not is ignored; host filters compare text."""
    out: dict[str, object] = {}
    acls = [(TOPIC, "pub-a", LITERAL, "User:carol", "127.0.0.1/32", DESCRIBE, ALLOW),
            (TOPIC, "pub-a", LITERAL, "User:carol", "10.0.0.0/8", WRITE, ALLOW),
            (TOPIC, "orders", LITERAL, "User:carol", "127.0.0.0/8", READ, DENY)]
    with client(admin, timeout=30) as c:
        bad = [(TOPIC, "pub-a", LITERAL, "User:carol", host, READ, ALLOW)
               for host in ("10.0.0.0/33", "::/129", "host/8", "10.0.0.0/x", "")]
        r = c.request(CreateAclsRequest(creations=[creation(a) for a in bad]), 3)
        out["cidr hosts checked"] = [(x.error_code, x.error_message) for x in r.results]
        r = c.request(CreateAclsRequest(creations=[creation(a) for a in acls]), 3)
        out["cidr acls created"] = [x.error_code for x in r.results]
        deadline = time.monotonic() + 30
        while acl_count(c) < len(ACLS) + len(acls):
            assert time.monotonic() < deadline, "the CIDR ACLs never took effect"
            time.sleep(0.1)
        for host in ("127.0.0.0/8", "127.0.0.1"):
            d = c.request(DescribeAclsRequest(**any_filter(principal_filter="User:carol", host_filter=host)), 3)
            out[f"cidr described by host {host}"] = sorted((res.resource_name, a.host) for res in d.resources
                                                           for a in res.acls)
    with login(sasl, "carol") as c:
        md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="pub-a")], allow_auto_topic_creation=False), 12)
        out["cidr carol describes pub-a"] = md.topics[0].error_code
        records = build_simple_batch([b"v"], keys=None, timestamp=int(time.time() * 1000))
        p = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="pub-a", partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
        out["cidr carol writes pub-a (her block is another)"] = p.responses[0].partition_responses[0].error_code
        lo = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name="orders", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
        out["cidr carol reads orders (denied in her block)"] = lo.topics[0].partitions[0].error_code
    with client(admin, timeout=30) as c:
        c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(**any_filter(principal_filter="User:carol",
                                                                           host_filter=a[4])) for a in acls]), 3)
    return out


# -- Streams groups (KIP-1071) -------------------------------------------------------------------------------------
STREAMS_GROUP = "sg-a"
STREAMS_ACLS = [
    (GROUP, STREAMS_GROUP, LITERAL, "User:carol", "*", READ, ALLOW),
    (GROUP, "sg-d", LITERAL, "User:carol", "*", DESCRIBE, ALLOW),
    (GROUP, STREAMS_GROUP, LITERAL, "User:bob", "*", DESCRIBE, ALLOW),
    (TOPIC, "st-in", LITERAL, "User:carol", "*", READ, ALLOW),
    (TOPIC, "sg-a-", PREFIXED, "User:carol", "*", DESCRIBE, ALLOW),
]
STREAMS_CREATE_ACL = (TOPIC, "sg-a-", PREFIXED, "User:carol", "*", CREATE, ALLOW)
STREAMS_DELETE_ACL = (GROUP, STREAMS_GROUP, LITERAL, "User:carol", "*", DELETE, ALLOW)


def _streams_topology(source: str = "st-in", changelog: str = "sg-a-store-changelog", *more_changelogs: str,
                      **more) -> StreamsTopology:
    return StreamsTopology(epoch=1, subtopologies=[StreamsSubtopology(
        subtopology_id="0", source_topics=[source], state_changelog_topics=[StreamsTopicInfo(
            name=name, topic_configs=[StreamsKeyValue(key="cleanup.policy", value="compact")])
            for name in (changelog, *more_changelogs)], **more)])


def _streams_join(group: str, member: str, topology: StreamsTopology | None = None) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
                                        process_id="p1", topology=topology or _streams_topology(), active_tasks=[],
                                        standby_tasks=[], warmup_tasks=[])


def _heartbeat_seen(r: StreamsGroupHeartbeatResponse) -> tuple:
    return (r.error_code, r.error_message, r.member_epoch, [(s.status_code, s.status_detail) for s in r.status or ()],
            None if r.active_tasks is None else sorted((t.subtopology_id, sorted(t.partitions)) for t in r.active_tasks))


def _add_acls(c: RawClient, acls: list[tuple]) -> None:
    before = acl_count(c)
    r = c.request(CreateAclsRequest(creations=[creation(a) for a in acls]), 3)
    assert all(x.error_code == 0 for x in r.results), [(x.error_code, x.error_message) for x in r.results]
    deadline = time.monotonic() + 30
    while acl_count(c) < before + len(acls):
        assert time.monotonic() < deadline, "the streams ACLs never took effect"
        time.sleep(0.1)


def _without_delays(c: RawClient, admin: str, group: str) -> None:
    """``group``'s first assignment and the next ones not delayed (its configs), once in effect."""
    group_configs = {"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0"}
    r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=GROUP_CONFIG, resource_name=group, configs=[AlterableConfig(
            name=k, config_operation=0, value=v) for k, v in group_configs.items()])]), 1)
    assert r.responses[0].error_code == ErrorCode.NONE, r
    retried(c, lambda: c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4)
            .coordinators[0].error_code)
    # Kafka applies group configs from its metadata log; on a cluster, ask the broker whose heartbeats they time.
    with RawClient(c.coordinator(group) if isinstance(c, RoutingClient) else admin, timeout=30) as at:
        deadline = time.monotonic() + 30
        while {x.name: x.value for x in at.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=GROUP_CONFIG, resource_name=group,
                configuration_keys=list(group_configs))]), 4).results[0].configs} != group_configs:
            assert time.monotonic() < deadline, "the group's configs never took effect"
            time.sleep(0.1)


def _cluster_create(admin: str, sasl: str) -> dict[str, object]:
    """A member that may CREATE on the cluster, and on none of its topics, has the broker create them."""
    acls = [(GROUP, "sg-b", LITERAL, "User:carol", "*", READ, ALLOW),
            (TOPIC, "sg-b-", PREFIXED, "User:carol", "*", DESCRIBE, ALLOW),
            (CLUSTER, "kafka-cluster", LITERAL, "User:carol", "*", CREATE, ALLOW)]
    out: dict[str, object] = {}
    with client(admin, timeout=30) as c:
        _add_acls(c, acls)
        _without_delays(c, admin, "sg-b")
    with login(sasl, "carol") as c:
        r = c.request(_streams_join("sg-b", "m1", _streams_topology(changelog="sg-b-store-changelog")), 1)
        out["join"] = _heartbeat_seen(r)
        deadline = time.monotonic() + 30
        while r.error_code == 0 and not r.active_tasks and time.monotonic() < deadline:
            time.sleep(0.2)
            r = c.request(StreamsGroupHeartbeatRequest(group_id="sg-b", member_id="m1", member_epoch=r.member_epoch,
                                                       active_tasks=[], standby_tasks=[], warmup_tasks=[]), 1)
        out["assigned"] = _heartbeat_seen(r)
        out["leaves"] = _heartbeat_seen(c.request(StreamsGroupHeartbeatRequest(
            group_id="sg-b", member_id="m1", member_epoch=-1), 1))
    with client(admin, timeout=30) as c:
        c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(**any_filter(
            principal_filter=a[3], resource_name_filter=a[1], operation=a[5])) for a in acls]), 3)
    return {f"cluster create {k}": v for k, v in out.items()}


def observe_streams(admin: str, sasl: str) -> dict[str, object]:
    """Streams groups under ACLs as Kafka 4.4 checks them: READ on the group to heartbeat, DESCRIBE on every topic
    of the topology, CREATE (on the cluster or the topics) for the broker to create the internal topics for the
    member (denied: a MISSING_INTERNAL_TOPICS status saying so), DESCRIBE on the group and its topics to describe
    it, and the other group APIs on a streams group."""
    out: dict[str, object] = {}
    with client(admin, timeout=30) as c:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=2, replication_factor=1)
                                                  for n in ("st-in", "st-priv")], timeout_ms=30_000), 7)
        assert all(t.error_code == 0 for t in r.topics), [(t.name, t.error_code) for t in r.topics]
        c.wait_for_topics("st-in", "st-priv")
        _add_acls(c, STREAMS_ACLS)
        _without_delays(c, admin, STREAMS_GROUP)
    with login(sasl, "carol") as c:
        beat = lambda request: _heartbeat_seen(c.request(request, 1))  # noqa: E731
        out["heartbeat unauthorized group"] = beat(_streams_join("sg-none", "m1"))
        out["heartbeat group with describe only"] = beat(_streams_join("sg-d", "m1"))
        out["heartbeat unauthorized source"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology("st-priv")))
        out["heartbeat unauthorized changelog"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology(
            changelog="other-changelog")))
        out["heartbeat unauthorized repartition"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology(
            repartition_sink_topics=["other-repartition"], repartition_source_topics=[
                StreamsTopicInfo(name="sg-a-x-repartition", partitions=2)])))
        out["heartbeat internal topic"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology(
            "__consumer_offsets")))
        out["heartbeat internal topics"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology(
            "__transaction_state", "bad name!", "__consumer_offsets", repartition_sink_topics=["__share_group_state"])))
        out["heartbeat invalid topic name"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology("bad name!")))
        out["heartbeat invalid topic names"] = beat(_streams_join(STREAMS_GROUP, "m1", _streams_topology(
            "st-priv", "z*", "a b", repartition_sink_topics=["x" * 250])))
        joined = c.request(_streams_join(STREAMS_GROUP, "m1", _streams_topology(
            "st-in", "sg-a-store-changelog", "sg-a-agg-changelog", "sg-a-b-changelog")), 1)
        out["heartbeat without create"] = _heartbeat_seen(joined)
        epoch = joined.member_epoch

        def again() -> StreamsGroupHeartbeatResponse:
            return c.request(StreamsGroupHeartbeatRequest(group_id=STREAMS_GROUP, member_id="m1", member_epoch=epoch,
                                                          active_tasks=[], standby_tasks=[], warmup_tasks=[]), 1)
        out["heartbeat again without create"] = _heartbeat_seen(again())
    with client(admin, timeout=30) as c:
        m = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="sg-a-store-changelog")],
                                      allow_auto_topic_creation=False), 12)
        out["changelog without create"] = m.topics[0].error_code
        _add_acls(c, [STREAMS_CREATE_ACL])
    with login(sasl, "carol") as c:
        deadline = time.monotonic() + 30
        first = None
        while True:  # the broker creates the topic for the member; its next heartbeats find it and get tasks
            r = again()
            first = first or _heartbeat_seen(r)
            if (r.active_tasks or not r.status) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["heartbeat with create"] = first
        out["heartbeat once created"] = _heartbeat_seen(r)
        epoch = r.member_epoch if r.error_code == 0 else epoch
    with client(admin, timeout=30) as c:
        m = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="sg-a-store-changelog")],
                                      allow_auto_topic_creation=False), 12)
        out["changelog created"] = (m.topics[0].error_code, len(m.topics[0].partitions))
    records = [OffsetCommitRequestTopic(name=n, partitions=[OffsetCommitRequestPartition(
        partition_index=0, committed_offset=0)]) for n in ("st-in", "st-priv")]
    for user in ("carol", "bob", "alice"):
        with login(sasl, user) as c:
            d = c.request(StreamsGroupDescribeRequest(group_ids=[STREAMS_GROUP, "sg-d", "sg-none"],
                                                      include_authorized_operations=True), 1)
            out[f"{user} streams group describe"] = sorted(
                (g.group_id, g.error_code, g.error_message, g.group_state, len(g.members), g.topology is None,
                 g.authorized_operations) for g in d.groups)
            dg = c.request(DescribeGroupsRequest(groups=[STREAMS_GROUP, "sg-d"], include_authorized_operations=True), 5)
            out[f"{user} describe groups"] = sorted((g.group_id, g.error_code, g.group_state, g.protocol_type,
                                                     g.authorized_operations) for g in dg.groups)
            lg = c.request(ListGroupsRequest(states_filter=[], types_filter=["streams"]), 5)
            out[f"{user} list streams groups"] = sorted((g.group_id, g.group_type) for g in lg.groups)
            oc = c.request(OffsetCommitRequest(group_id=STREAMS_GROUP, generation_id_or_member_epoch=-1, member_id="",
                                               topics=records), 9)
            out[f"{user} offset commit"] = ([(t.name, t.partitions[0].error_code) for t in oc.topics])
            of = c.request(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=STREAMS_GROUP, topics=[
                OffsetFetchRequestTopics(name=n, partition_indexes=[0]) for n in ("st-in", "st-priv")])],
                require_stable=False), 9).groups[0]
            out[f"{user} offset fetch"] = (of.error_code, sorted((t.name, t.partitions[0].error_code,
                                                                  t.partitions[0].committed_offset) for t in of.topics))
            od = c.request(OffsetDeleteRequest(group_id=STREAMS_GROUP, topics=[OffsetDeleteRequestTopic(
                name="st-in", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]), 0)
            out[f"{user} offset delete"] = (od.error_code, [(t.name, [p.error_code for p in t.partitions])
                                                            for t in od.topics])
            dl = c.request(DeleteGroupsRequest(groups_names=[STREAMS_GROUP]), 2)
            out[f"{user} delete group"] = [(x.group_id, x.error_code) for x in dl.results]
            tu = c.request(StreamsGroupTopologyDescriptionUpdateRequest(group_id=STREAMS_GROUP, member_id="m1",
                                                                        topology_epoch=1), 0)
            out[f"{user} topology description update"] = (tu.error_code, tu.error_message)
    with login(sasl, "carol") as c:
        tu = c.request(StreamsGroupTopologyDescriptionUpdateRequest(group_id="sg-none", member_id="m1",
                                                                    topology_epoch=1), 0)
        out["carol topology description update unauthorized"] = (tu.error_code, tu.error_message)
    with client(admin, timeout=30) as c:
        _add_acls(c, [STREAMS_DELETE_ACL])
    with login(sasl, "carol") as c:
        for when in ("live", "empty"):
            if when == "empty":
                out["carol leaves"] = _heartbeat_seen(c.request(StreamsGroupHeartbeatRequest(
                    group_id=STREAMS_GROUP, member_id="m1", member_epoch=-1), 1))
            od = c.request(OffsetDeleteRequest(group_id=STREAMS_GROUP, topics=[OffsetDeleteRequestTopic(
                name=n, partitions=[OffsetDeleteRequestPartition(partition_index=0)])
                for n in ("st-in", "st-priv", "sg-a-store-changelog")]), 0)
            out[f"carol offset delete with delete, {when}"] = (od.error_code, sorted(
                (t.name, [p.error_code for p in t.partitions]) for t in od.topics))
            dl = c.request(DeleteGroupsRequest(groups_names=[STREAMS_GROUP]), 2)
            out[f"carol delete group with delete, {when}"] = [(x.group_id, x.error_code) for x in dl.results]
        d = c.request(StreamsGroupDescribeRequest(group_ids=[STREAMS_GROUP]), 1)
        out["carol describes the deleted group"] = [(g.error_code, g.error_message) for g in d.groups]
    out.update(_cluster_create(admin, sasl))
    with client(admin, timeout=30) as c:
        c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(**any_filter(principal_filter=a[3], resource_name_filter=a[1],
                                                                           operation=a[5]))
                                             for a in [*STREAMS_ACLS, STREAMS_CREATE_ACL, STREAMS_DELETE_ACL]]), 3)
    return {f"streams {k}": v for k, v in out.items()}


def observe(target: Target, pki) -> dict[str, object]:
    with side(target):
        return _observe(*target[:5], pki)


def _observe(admin: str, sasl: str, log, mtls: str, one_way: str, pki) -> dict[str, object]:
    out: dict[str, object] = {}
    for user in ("alice", "bob", "carol"):
        with login(sasl, user) as c:
            out.update(observe_user(c, user))
    out.update(observe_acl_admin(admin))
    out.update(observe_tokens(admin, sasl))
    out.update(observe_tls(mtls, one_way, pki))
    out.update(observe_group_topics(admin, sasl))
    out.update(observe_regex(admin, sasl))
    out.update(observe_cidr_hosts(admin, sasl))
    out.update(observe_streams(admin, sasl))
    for line in denials(log()):
        out[f"log: {line}"] = True
    return {k: norm(v) for k, v in out.items()}


@pytest.mark.parametrize(("mode", "scenario"), differential_params([SCENARIO], (), (SCENARIO,)))
def test_authorization_matches_kafka(mode, scenario, request, pki):
    """On one node, and with PYKBROKER_SLOW_DIFFERENTIAL=1 (``make differential-cluster``) on 3 pykbroker brokers
    against a 3-node Kafka 4.4 KRaft cluster, asked through their first node."""
    prefix = "" if mode == "single" else "_cluster"
    expected = observe(request.getfixturevalue(f"kafka{prefix}"), pki)
    got = observe(request.getfixturevalue(f"pykbroker{prefix}"), pki)
    # The scenario exercises what it claims: the certificate's DN is a principal with its own ACL.
    assert expected["mtls produce"] == [("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED), ("orders", ErrorCode.NONE)]
    assert expected["token scram with token"][:2] == (ErrorCode.NONE, ErrorCode.NONE)
    assert expected["group topics bob describes g3"][0] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert expected["regex assignment"] == [("orders", [0, 1]), ("pub-a", [0]), ("secret", [0])]
    assert expected["alice metadata brokers"] == (3 if mode == "cluster" else 1)
    assert "Unauthorized to CREATE on topics" in str(expected["streams heartbeat without create"])
    assert expected["streams heartbeat once created"][-1] == expected["streams cluster create assigned"][-1] == [
        ("0", [0, 1])], "the broker created no internal topic for a member allowed to"
    logged = [k for k in expected if k.startswith("log: ")]
    assert len(logged) > 50, f"Kafka's authorizer logged only {logged}"
    assert_same_observations(mode, scenario, expected, got)


# -- kafka-streams-groups.sh under ACLs ----------------------------------------------------------------------------
TOOL_GROUP = "sg-t"


def _tool_as(sasl: str, user: str, root: Path, *args: str) -> list[str]:
    """Kafka 4.4's kafka-streams-groups.sh logged in as ``user`` (SASL PLAIN), its output normalized."""
    from compat_tests.test_kafka_streams_groups_tool import normalized, tool
    config = root / f"{user}.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka."
                      f'common.security.plain.PlainLoginModule required username="{user}" '
                      f'password="{USERS[user]}";\n')
    lines = normalized(tool(sasl, "--command-config", str(config), *args), TOOL_GROUP)
    return [line for line in lines if not line.startswith("at ")]  # a stack trace's frames: the error line says it


def _empty_streams_group(admin: str) -> None:
    """Group sg-t: a member joined (tt-in, its changelog made beforehand), committed offset 3 of partition 0 and
    left."""
    with RawClient(admin, timeout=30) as c:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=2, replication_factor=1)
                                                  for n in ("tt-in", "sg-t-store-changelog")], timeout_ms=30_000), 7)
        assert all(t.error_code == 0 for t in r.topics), [(t.name, t.error_code) for t in r.topics]
        c.wait_for_topics("tt-in", "sg-t-store-changelog")
        c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(name="tt-in", partition_data=[
            PartitionProduceData(index=0, records=build_simple_batch([b"v"] * 3, keys=None,
                                                                     timestamp=int(time.time() * 1000)))])]), 9)
        _without_delays(c, admin, TOOL_GROUP)
        r = c.request(_streams_join(TOOL_GROUP, "m1", _streams_topology("tt-in", "sg-t-store-changelog")), 1)
        deadline = time.monotonic() + 30
        while not r.active_tasks:
            assert r.error_code == 0 and time.monotonic() < deadline, _heartbeat_seen(r)
            time.sleep(0.2)
            r = c.request(StreamsGroupHeartbeatRequest(group_id=TOOL_GROUP, member_id="m1", member_epoch=r.member_epoch,
                                                       active_tasks=[], standby_tasks=[], warmup_tasks=[]), 1)
        oc = c.request(OffsetCommitRequest(group_id=TOOL_GROUP, generation_id_or_member_epoch=r.member_epoch,
                                           member_id="m1", topics=[OffsetCommitRequestTopic(name="tt-in", partitions=[
                                               OffsetCommitRequestPartition(partition_index=0, committed_offset=3)])]),
                       9)
        assert oc.topics[0].partitions[0].error_code == 0, oc
        c.request(StreamsGroupHeartbeatRequest(group_id=TOOL_GROUP, member_id="m1", member_epoch=-1), 1)


def tool_session(target: Target, root: Path) -> dict[str, list[str]]:
    """The tool's describe, reset-offsets and delete by principals without the ACLs each needs, then with them."""
    _empty_streams_group(target.admin)
    carol = [(GROUP, TOOL_GROUP, LITERAL, "User:carol", "*", READ, ALLOW),
             (TOPIC, "tt-in", LITERAL, "User:carol", "*", READ, ALLOW)]
    describe = [(TOPIC, "sg-t-", PREFIXED, "User:carol", "*", DESCRIBE, ALLOW)]
    more = [(GROUP, TOOL_GROUP, LITERAL, "User:carol", "*", DELETE, ALLOW),
            (TOPIC, "sg-t-", PREFIXED, "User:carol", "*", DELETE, ALLOW)]
    out: dict[str, list[str]] = {}

    def run(name: str, user: str, *args: str) -> None:
        out[name] = _tool_as(target.sasl, user, root, *args)
    reset = ("--reset-offsets", "--group", TOOL_GROUP, "--all-input-topics", "--to-earliest", "--execute")
    with RawClient(target.admin, timeout=30) as c:
        _add_acls(c, carol)
    run("bob describes", "bob", "--describe", "--group", TOOL_GROUP)
    run("bob lists", "bob", "--list")
    run("bob resets", "bob", *reset)
    run("carol describes (not the changelog)", "carol", "--describe", "--group", TOOL_GROUP)
    run("carol resets (not the changelog)", "carol", *reset)
    run("carol deletes (no group DELETE)", "carol", "--delete", "--group", TOOL_GROUP)
    with RawClient(target.admin, timeout=30) as c:
        _add_acls(c, describe)
    run("carol resets (may not delete the changelog)", "carol", *reset)
    with RawClient(target.admin, timeout=30) as c:
        _add_acls(c, more)
    run("carol describes", "carol", "--describe", "--group", TOOL_GROUP)
    run("carol resets", "carol", *reset)
    run("carol describes after reset", "carol", "--describe", "--group", TOOL_GROUP)
    run("carol deletes", "carol", "--delete", "--group", TOOL_GROUP)
    run("carol lists after delete", "carol", "--list")
    with RawClient(target.admin, timeout=30) as c:
        c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(**any_filter(
            principal_filter=a[3], resource_name_filter=a[1], operation=a[5])) for a in carol + describe + more]), 3)
    return out


@pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                    reason="JVM runs of the tool: make test-streams-slow (PYKBROKER_STREAMS_SLOW=1)")
def test_kafka_streams_groups_tool_under_acls(kafka, pykbroker, tmp_path):
    """Kafka 4.4's kafka-streams-groups.sh --describe, --reset-offsets and --delete by principals that lack the ACLs
    each needs (the group's, the input and internal topics'), then have them: the same output as on Kafka."""
    expected = tool_session(kafka, tmp_path)
    got = tool_session(pykbroker, tmp_path)
    assert any("GroupAuthorizationException" in line for line in expected["bob describes"]), expected["bob describes"]
    differences = {k: (expected[k], got.get(k)) for k in expected if expected[k] != got.get(k)}
    assert not differences, "\n".join(f"{k}:\n  kafka:     {e}\n  pykbroker: {g}" for k, (e, g) in differences.items())
