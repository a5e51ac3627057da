"""SCRAM credential APIs: validation as Kafka's controller does it, durability, and the admin clients."""

from __future__ import annotations

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest
from wire.messages.alter_user_scram_credentials_request import (
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from wire.messages.describe_user_scram_credentials_request import UserName

SHA256, SHA512 = 1, 2


def upsert(name: str, mechanism: int = SHA256, iterations: int = 8192) -> ScramCredentialUpsertion:
    return ScramCredentialUpsertion(name=name, mechanism=mechanism, iterations=iterations, salt=b"salt",
                                    salted_password=b"x" * 32)


def alter(c, deletions=(), upsertions=()) -> dict[str, int]:
    response = c.request(AlterUserScramCredentialsRequest(deletions=list(deletions), upsertions=list(upsertions)), 0)
    return {r.user: r.error_code for r in response.results}


def describe(c, *users: str):
    request = DescribeUserScramCredentialsRequest(users=[UserName(name=u) for u in users] if users else None)
    return {r.user: r for r in c.request(request, 0).results}


def test_alter_and_describe_survive_a_restart(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        assert alter(c, upsertions=[upsert("alice"), upsert("bob", SHA512, 4096)]) == {
            "alice": ErrorCode.NONE, "bob": ErrorCode.NONE}
        assert alter(c, upsertions=[upsert("carol", 9), upsert("dave", iterations=1000), upsert("", SHA256),
                                    upsert("erin", iterations=20000)]) == {
            "carol": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "dave": ErrorCode.UNACCEPTABLE_CREDENTIAL,
            "": ErrorCode.UNACCEPTABLE_CREDENTIAL, "erin": ErrorCode.UNACCEPTABLE_CREDENTIAL}
        assert alter(c, deletions=[ScramCredentialDeletion(name="alice", mechanism=SHA512)]) == {
            "alice": ErrorCode.RESOURCE_NOT_FOUND}
        assert alter(c, upsertions=[upsert("frank"), upsert("frank", SHA512)]) == {
            "frank": ErrorCode.DUPLICATE_RESOURCE}
    fresh_broker.restart(hard=True)
    with RawClient(fresh_broker.bootstrap) as c:
        everyone = describe(c)
        assert sorted(everyone) == ["alice", "bob"]
        assert [(i.mechanism, i.iterations) for i in everyone["bob"].credential_infos] == [(SHA512, 4096)]
        named = describe(c, "alice", "zed", "bob", "bob")
        assert named["alice"].error_code == ErrorCode.NONE
        assert named["zed"].error_code == ErrorCode.RESOURCE_NOT_FOUND
        assert named["bob"].error_code == ErrorCode.DUPLICATE_RESOURCE
        assert alter(c, deletions=[ScramCredentialDeletion(name="alice", mechanism=SHA256)]) == {
            "alice": ErrorCode.NONE}
        assert sorted(describe(c)) == ["bob"]


def test_confluent_admin_manages_scram_credentials(broker):
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10000)
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion("grace", info, b"pw", b"salt")]).values():
        f.result(10)
    described = admin.describe_user_scram_credentials(["grace"])["grace"].result(10)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 10000)]
    deletion = UserScramCredentialDeletion("grace", ScramMechanism.SCRAM_SHA_256)
    for f in admin.alter_user_scram_credentials([deletion]).values():
        f.result(10)


def alter_results(c, deletions=(), upsertions=()) -> dict[str, tuple[int, str | None]]:
    response = c.request(AlterUserScramCredentialsRequest(deletions=list(deletions), upsertions=list(upsertions)), 0)
    return {r.user: (r.error_code, r.error_message) for r in response.results}


TWICE = (ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")


def test_alter_names_each_user_once_per_request_whatever_the_mechanism(broker):
    """Expectations taken from Kafka 4.1 answering the same requests (its ScramControlManager checks per user)."""
    with RawClient(broker.bootstrap) as c:
        assert alter_results(c, upsertions=[upsert("dup1"), upsert("dup1", SHA512)]) == {"dup1": TWICE}
        assert alter_results(c, upsertions=[upsert("dup2", SHA512), upsert("dup2"), upsert("dup2", 9)]) == {
            "dup2": TWICE}
        assert "dup1" not in describe(c) and "dup2" not in describe(c)
        # A user's first error sticks: later alterations of it are neither checked nor counted twice.
        assert alter_results(c, deletions=[ScramCredentialDeletion(name="dup3", mechanism=SHA256)],
                             upsertions=[upsert("dup3", SHA512)]) == {
            "dup3": (ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist")}
        assert alter_results(c, upsertions=[upsert("dup4", 9), upsert("dup4")]) == {
            "dup4": (ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")}
        assert alter_results(c, upsertions=[upsert("dup5", iterations=100), upsert("dup5", SHA512)]) == {
            "dup5": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")}
        # Successes have a null error message; a valid deletion then an upsertion of the same user is twice.
        assert alter_results(c, upsertions=[upsert("dup6")]) == {"dup6": (ErrorCode.NONE, None)}
        assert alter_results(c, deletions=[ScramCredentialDeletion(name="dup6", mechanism=SHA256)],
                             upsertions=[upsert("dup6", SHA512)]) == {"dup6": TWICE}
        assert alter_results(c, deletions=[ScramCredentialDeletion(name="dup6", mechanism=SHA256),
                                           ScramCredentialDeletion(name="dup6", mechanism=SHA512)]) == {"dup6": TWICE}
        assert [i.mechanism for i in describe(c, "dup6")["dup6"].credential_infos] == [SHA256]
        # Other users of the request are unaffected.
        assert alter_results(c, upsertions=[upsert("dup7"), upsert("", SHA256), upsert("dup8", SHA512, 99999),
                                            upsert("dup7", SHA512), upsert("dup9")]) == {
            "dup9": (ErrorCode.NONE, None), "": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
            "dup7": TWICE, "dup8": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")}
        assert sorted(u for u in describe(c) if u.startswith("dup")) == ["dup6", "dup9"]
