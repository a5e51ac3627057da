"""StandardAuthorizer decisions, filters and storage, against Kafka's rules (StandardAuthorizerData)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from pykbroker.security.authorizer import StandardAuthorizer
from replication.metadata.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    authorized_operations_bits,
)
from replication.metadata.embedded_store import EmbeddedMetadataStore

Op, P, T, R = AclOperation, PatternType, AclPermissionType, ResourceType


def run(coro):
    return asyncio.run(coro)


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
    assert not decide(StandardAuthorizer(store, 1), Op.READ, "t")
    assert decide(StandardAuthorizer(store, 1, allow_everyone_if_no_acl_found=True), Op.READ, "t")


def test_a_resource_with_acls_denies_everyone_else_even_when_allow_everyone_is_set(store):
    a = StandardAuthorizer(store, 1, allow_everyone_if_no_acl_found=True)
    run(a.create_acls([acl("t", Op.READ)]))
    assert decide(a, Op.READ, "t") and not decide(a, Op.READ, "t", principal="User:bob")
    assert decide(a, Op.READ, "other", principal="User:bob")


def test_deny_wins_and_implications_are_allow_only(store):
    a = StandardAuthorizer(store, 1)
    run(a.create_acls([acl("t", Op.WRITE), acl("t", Op.ALTER_CONFIGS), acl("t", Op.READ, T.DENY)]))
    assert decide(a, Op.WRITE, "t") and decide(a, Op.DESCRIBE, "t") and decide(a, Op.DESCRIBE_CONFIGS, "t")
    assert not decide(a, Op.READ, "t")
    run(a.create_acls([acl("u", Op.ALL), acl("u", Op.DELETE, T.DENY), acl("v", Op.DESCRIBE), acl("v", Op.READ, T.DENY)]))
    assert decide(a, Op.READ, "u") and not decide(a, Op.DELETE, "u")
    assert decide(a, Op.DESCRIBE, "v")  # a DENY of READ does not deny DESCRIBE
    run(a.create_acls([acl("*", Op.DESCRIBE, T.DENY)]))
    assert not decide(a, Op.DESCRIBE, "v") and not decide(a, Op.DESCRIBE, "t")


def test_prefixed_wildcard_principal_and_host(store):
    a = StandardAuthorizer(store, 1)
    run(a.create_acls([acl("fin-", Op.READ, pattern=P.PREFIXED, principal="User:*"),
                   acl("fin-secret", Op.READ, T.DENY, principal="User:bob", pattern=P.PREFIXED),
                   acl("h", Op.READ, host="10.0.0.1")]))
    assert decide(a, Op.READ, "fin-x", principal="User:bob") and not decide(a, Op.READ, "fin-secret-1", "User:bob")
    assert decide(a, Op.READ, "fin-secret-1", principal="User:carol") and not decide(a, Op.READ, "fin")
    assert decide(a, Op.READ, "h") and not decide(a, Op.READ, "h", host="10.0.0.2")


def test_super_users_may_do_anything(store):
    a = StandardAuthorizer(store, 1, super_users=["User:admin"])
    run(a.create_acls([acl("*", Op.ALL, T.DENY, principal="User:*")]))
    assert decide(a, Op.ALTER, "t", principal="User:admin") and not decide(a, Op.ALTER, "t")


def test_authorize_by_resource_type(store):
    a = StandardAuthorizer(store, 1)
    assert not a.authorize_by_resource_type("User:alice", "h", Op.WRITE, R.TOPIC, "Test")
    run(a.create_acls([acl("pre", Op.WRITE, pattern=P.PREFIXED)]))
    assert a.authorize_by_resource_type("User:alice", "h", Op.WRITE, R.TOPIC, "Test")
    run(a.create_acls([acl("p", Op.WRITE, T.DENY, pattern=P.PREFIXED)]))  # covers every name starting with "pre"
    assert not a.authorize_by_resource_type("User:alice", "h", Op.WRITE, R.TOPIC, "Test")


def test_filters_match_as_kafka(store):
    a = StandardAuthorizer(store, 1)
    acls = [acl("foo", Op.READ), acl("fo", Op.WRITE, pattern=P.PREFIXED), acl("*", Op.READ), acl("bar", Op.READ)]
    run(a.create_acls(acls))

    def f(name, pattern, **kw):
        return set(a.acls(AclBindingFilter(kw.get("rtype", R.ANY), name, pattern, kw.get("principal"), None,
                                           kw.get("op", Op.ANY), T.ANY)))
    assert f("foo", P.MATCH) == {acls[0], acls[1], acls[2]}
    assert f("foo", P.ANY) == {acls[0]} and f("fo", P.PREFIXED) == {acls[1]}
    assert f(None, P.LITERAL) == {acls[0], acls[2], acls[3]}
    assert f(None, P.ANY, op=Op.WRITE) == {acls[1]}


def test_acls_persist_and_duplicates_are_kept_once(tmp_path):
    store = EmbeddedMetadataStore(tmp_path, 1)
    a = StandardAuthorizer(store, 1)
    results = run(a.create_acls([acl("t", Op.READ), acl("t", Op.READ), acl("", Op.READ),
                             acl("t", Op.READ, principal="alice")]))
    assert [r.error_code for r in results] == [0, 0, 42, 42]
    assert results[3].error_message.startswith("Could not parse principal from `alice`")
    again = StandardAuthorizer(EmbeddedMetadataStore(tmp_path, 1), 1)
    assert again.acls(AclBindingFilter(R.ANY, None, P.ANY, None, None, Op.ANY, T.ANY)) == [acl("t", Op.READ)]
    deleted = run(again.delete_acls([AclBindingFilter(R.TOPIC, "t", P.MATCH, None, None, Op.ANY, T.ANY)]))
    assert deleted[0].matching == (acl("t", Op.READ),)
    assert EmbeddedMetadataStore(tmp_path, 1).load_acls() == []


def test_denials_are_logged_in_kafkas_words(store, caplog):
    a = StandardAuthorizer(store, 1)
    with caplog.at_level(logging.INFO, logger="kafka.authorizer.logger"):
        decide(a, Op.WRITE, "t")
        a.authorize("User:alice", "10.0.0.1", Op.READ, R.TOPIC, "quiet", "Test", log_if_denied=False)
    lines = [r.getMessage() for r in caplog.records if r.name == "kafka.authorizer.logger"]
    assert lines == ["Principal = User:alice is Denied operation = WRITE from host = 10.0.0.1 on resource = "
                     "Topic:LITERAL:t for request = Test with resourceRefCount = 1 based on rule DefaultDeny"]


def test_authorized_operation_bits():
    assert authorized_operations_bits([Op.READ, Op.DESCRIBE]) == (1 << 3) | (1 << 8)
