"""StandardAuthorizer decisions, filters and storage, against Kafka's rules (StandardAuthorizerData)."""

from __future__ import annotations

import logging

import pytest

from pykbroker.metadata_store import EmbeddedMetadataStore
from pykbroker.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    authorized_operations_bits,
)
from pykbroker.security.authorizer import StandardAuthorizer

O, P, T, R = AclOperation, PatternType, AclPermissionType, ResourceType


def acl(name: str, op: AclOperation, permission: AclPermissionType = T.ALLOW, principal: str = "User:alice",
        pattern: PatternType = P.LITERAL, host: str = "*", rtype: ResourceType = R.TOPIC) -> AclBinding:
    return AclBinding(ResourcePattern(rtype, name, pattern), principal, host, op, permission)


@pytest.fixture
def store(tmp_path) -> EmbeddedMetadataStore:
    return EmbeddedMetadataStore(tmp_path, 1)


def decide(a: StandardAuthorizer, op: AclOperation, name: str, principal: str = "User:alice",
           host: str = "10.0.0.1", rtype: ResourceType = R.TOPIC) -> bool:
    return a.authorize(principal, host, op, rtype, name, "Test")


def test_no_acl_follows_allow_everyone_if_no_acl_found(store):
    assert not decide(StandardAuthorizer(store, 1), O.READ, "t")
    assert decide(StandardAuthorizer(store, 1, allow_everyone_if_no_acl_found=True), O.READ, "t")


def test_a_resource_with_acls_denies_everyone_else_even_when_allow_everyone_is_set(store):
    a = StandardAuthorizer(store, 1, allow_everyone_if_no_acl_found=True)
    a.create_acls([acl("t", O.READ)])
    assert decide(a, O.READ, "t") and not decide(a, O.READ, "t", principal="User:bob")
    assert decide(a, O.READ, "other", principal="User:bob")


def test_deny_wins_and_implications_are_allow_only(store):
    a = StandardAuthorizer(store, 1)
    a.create_acls([acl("t", O.WRITE), acl("t", O.ALTER_CONFIGS), acl("t", O.READ, T.DENY)])
    assert decide(a, O.WRITE, "t") and decide(a, O.DESCRIBE, "t") and decide(a, O.DESCRIBE_CONFIGS, "t")
    assert not decide(a, O.READ, "t")
    a.create_acls([acl("u", O.ALL), acl("u", O.DELETE, T.DENY), acl("v", O.DESCRIBE), acl("v", O.READ, T.DENY)])
    assert decide(a, O.READ, "u") and not decide(a, O.DELETE, "u")
    assert decide(a, O.DESCRIBE, "v")  # a DENY of READ does not deny DESCRIBE
    a.create_acls([acl("*", O.DESCRIBE, T.DENY)])
    assert not decide(a, O.DESCRIBE, "v") and not decide(a, O.DESCRIBE, "t")


def test_prefixed_wildcard_principal_and_host(store):
    a = StandardAuthorizer(store, 1)
    a.create_acls([acl("fin-", O.READ, pattern=P.PREFIXED, principal="User:*"),
                   acl("fin-secret", O.READ, T.DENY, principal="User:bob", pattern=P.PREFIXED),
                   acl("h", O.READ, host="10.0.0.1")])
    assert decide(a, O.READ, "fin-x", principal="User:bob") and not decide(a, O.READ, "fin-secret-1", "User:bob")
    assert decide(a, O.READ, "fin-secret-1", principal="User:carol") and not decide(a, O.READ, "fin")
    assert decide(a, O.READ, "h") and not decide(a, O.READ, "h", host="10.0.0.2")


def test_super_users_may_do_anything(store):
    a = StandardAuthorizer(store, 1, super_users=["User:admin"])
    a.create_acls([acl("*", O.ALL, T.DENY, principal="User:*")])
    assert decide(a, O.ALTER, "t", principal="User:admin") and not decide(a, O.ALTER, "t")


def test_authorize_by_resource_type(store):
    a = StandardAuthorizer(store, 1)
    assert not a.authorize_by_resource_type("User:alice", "h", O.WRITE, R.TOPIC, "Test")
    a.create_acls([acl("pre", O.WRITE, pattern=P.PREFIXED)])
    assert a.authorize_by_resource_type("User:alice", "h", O.WRITE, R.TOPIC, "Test")
    a.create_acls([acl("p", O.WRITE, T.DENY, pattern=P.PREFIXED)])  # covers every name starting with "pre"
    assert not a.authorize_by_resource_type("User:alice", "h", O.WRITE, R.TOPIC, "Test")


def test_filters_match_as_kafka(store):
    a = StandardAuthorizer(store, 1)
    acls = [acl("foo", O.READ), acl("fo", O.WRITE, pattern=P.PREFIXED), acl("*", O.READ), acl("bar", O.READ)]
    a.create_acls(acls)

    def f(name, pattern, **kw):
        return set(a.acls(AclBindingFilter(kw.get("rtype", R.ANY), name, pattern, kw.get("principal"), None,
                                           kw.get("op", O.ANY), T.ANY)))
    assert f("foo", P.MATCH) == {acls[0], acls[1], acls[2]}
    assert f("foo", P.ANY) == {acls[0]} and f("fo", P.PREFIXED) == {acls[1]}
    assert f(None, P.LITERAL) == {acls[0], acls[2], acls[3]}
    assert f(None, P.ANY, op=O.WRITE) == {acls[1]}


def test_acls_persist_and_duplicates_are_kept_once(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, 1)
    a = StandardAuthorizer(store, 1)
    results = a.create_acls([acl("t", O.READ), acl("t", O.READ), acl("", O.READ),
                             acl("t", O.READ, principal="alice")])
    assert [r.error_code for r in results] == [0, 0, 42, 42]
    assert results[3].error_message.startswith("Could not parse principal from `alice`")
    again = StandardAuthorizer(EmbeddedMetadataStore(tmp_path, 1), 1)
    assert again.acls(AclBindingFilter(R.ANY, None, P.ANY, None, None, O.ANY, T.ANY)) == [acl("t", O.READ)]
    deleted = again.delete_acls([AclBindingFilter(R.TOPIC, "t", P.MATCH, None, None, O.ANY, T.ANY)])
    assert deleted[0].matching == (acl("t", O.READ),)
    assert EmbeddedMetadataStore(tmp_path, 1).acls == []


def test_denials_are_logged_in_kafkas_words(store, caplog):
    a = StandardAuthorizer(store, 1)
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        decide(a, O.WRITE, "t")
        a.authorize("User:alice", "10.0.0.1", O.READ, R.TOPIC, "quiet", "Test", log_if_denied=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "kafka.authorizer.logger"]
    assert lines == ["Principal = User:alice is Denied operation = WRITE from host = 10.0.0.1 on resource = "
                     "Topic:LITERAL:t for request = Test with resourceRefCount = 1 based on rule DefaultDeny"]


def test_authorized_operation_bits():
    assert authorized_operations_bits([O.READ, O.DESCRIBE]) == (1 << 3) | (1 << 8)
