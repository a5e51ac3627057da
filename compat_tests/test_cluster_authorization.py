"""ACLs in a cluster: kept in ZooKeeper under Kafka's /kafka-acl layout and in force on every broker as soon as
the change notification reaches it, whichever broker the change went through."""

from __future__ import annotations

import shutil
import time

import pytest

from pykbroker.testing import ClusterProcesses, RawClient
from wire import ErrorCode
from wire.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeDelegationTokenRequest,
    MetadataRequest,
)
from wire.messages.create_acls_request import AclCreation
from wire.messages.delete_acls_request import DeleteAclsFilter
from wire.messages.metadata_request import MetadataRequestTopic

if shutil.which("java") is None:
    pytest.skip("ZooKeeper needs java", allow_module_level=True)

ONLY_ALICE_READS = AclCreation(resource_type=2, resource_name="guarded", resource_pattern_type=3,
                               principal="User:alice", host="*", operation=3, permission_type=3)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Resources without ACLs stay open (inter-broker traffic included); "guarded" gets one, so only alice may
    # use it, and ANONYMOUS (these PLAINTEXT clients) may not.
    with ClusterProcesses(tmp_path_factory.mktemp("authz-cluster"), size=2, overrides={
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "allow.everyone.if.no.acl.found": "true", "delegation.token.secret.key": "cluster-secret"}) as c:
        yield c


def describe_guarded(address: str) -> int:
    with RawClient(address) as c:
        r = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="guarded")], allow_auto_topic_creation=False),
                      12)
        return r.topics[0].error_code


def wait_for(condition, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the change never reached the broker"
        time.sleep(0.05)


def test_an_acl_made_through_one_broker_is_enforced_by_the_other(cluster):
    one, two = cluster.broker(1).bootstrap, cluster.broker(2).bootstrap
    assert describe_guarded(two) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # open: no ACL yet
    with RawClient(one) as c:
        assert c.request(CreateAclsRequest(creations=[ONLY_ALICE_READS]), 3).results[0].error_code == 0
    assert describe_guarded(one) == ErrorCode.TOPIC_AUTHORIZATION_FAILED  # at once on the broker that made it
    wait_for(lambda: describe_guarded(two) == ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    with RawClient(two) as c:
        listed = c.request(DescribeAclsRequest(resource_type_filter=2, resource_name_filter="guarded",
                                               pattern_type_filter=3, principal_filter=None, host_filter=None,
                                               operation=1, permission_type=1), 3)
        assert [(r.resource_name, [a.principal for a in r.acls]) for r in listed.resources] == \
            [("guarded", ["User:alice"])]
        deleted = c.request(DeleteAclsRequest(filters=[DeleteAclsFilter(
            resource_type_filter=2, resource_name_filter="guarded", pattern_type_filter=3, principal_filter=None,
            host_filter=None, operation=1, permission_type=1)]), 3)
        assert len(deleted.filter_results[0].matching_acls) == 1
    wait_for(lambda: describe_guarded(one) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    denial = ("Principal = User:ANONYMOUS is Denied operation = DESCRIBE from host = 127.0.0.1 on resource = "
              "Topic:LITERAL:guarded for request = Metadata")
    assert denial in cluster.broker(1).log() and denial in cluster.broker(2).log()


def test_token_requests_are_served_in_a_cluster(cluster):
    """Tokens live in ZooKeeper's /delegation_token there (shared by the brokers; see
    tests/replication/metadata/zk/test_token_store.py); over PLAINTEXT they are refused, as in Kafka."""
    for node in (1, 2):
        with RawClient(cluster.broker(node).bootstrap) as c:
            r = c.request(DescribeDelegationTokenRequest(owners=None), 3)
            assert r.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
