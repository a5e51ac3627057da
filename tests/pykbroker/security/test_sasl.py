"""The SASL state machine over raw sockets against a broker process with SASL_PLAINTEXT listeners.

Mechanism lists, bad passwords, requests before authentication, the v0 handshake's raw tokens, SCRAM with
credentials set by AlterUserScramCredentials, and KIP-368 session lifetimes and re-authentication.
"""

from __future__ import annotations

import struct
import time

import pytest

from pykbroker.security.client import ScramClient, plain_token, salted_password
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import (
    AlterUserScramCredentialsRequest,
    ApiVersionsRequest,
    DescribeClusterRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
              'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
# The re-authentication tests wait 1 s (Kafka's least interval between two) and must re-authenticate before the
# session ends, as Kafka closes a connection whose session expired even for a SaslHandshake: 3 s leave a loaded
# machine 2 s to send it.
REAUTH_MS = 3000


def sasl_overrides() -> dict[str, str]:
    """Every listener on port 0: bound by the broker (BrokerProcess(port=0)), read back with its address()."""
    out = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,REAUTH://127.0.0.1:0",
           "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
           "sasl.enabled.mechanisms": ",".join(MECHANISMS),
           "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS)}
    for listener in ("sasl_plaintext", "reauth"):
        out[f"listener.name.{listener}.plain.sasl.jaas.config"] = PLAIN_JAAS
        for m in MECHANISMS[1:]:
            out[f"listener.name.{listener}.{m.lower()}.sasl.jaas.config"] = SCRAM_JAAS
    return out


@pytest.fixture(scope="module")
def brokers(tmp_path_factory):
    """(broker, SASL_PLAINTEXT address, REAUTH address) with SCRAM users alice (both mechanisms) and bob."""
    with BrokerProcess(tmp_path_factory.mktemp("sasl"), port=0, overrides=sasl_overrides()) as b:
        with RawClient(b.bootstrap) as c:
            for user, password in (("alice", "alice-scram"), ("bob", "bob-scram")):
                for m, mtype in (("SCRAM-SHA-256", 1), ("SCRAM-SHA-512", 2)):  # one per request: Kafka's rule
                    salt = b"salt-" + user.encode()
                    upsert = ScramCredentialUpsertion(name=user, mechanism=mtype, iterations=4096, salt=salt,
                                                      salted_password=salted_password(m, password, salt, 4096))
                    response = c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=[upsert]), 0)
                    assert response.results[0].error_code == ErrorCode.NONE
        yield b, b.address("SASL_PLAINTEXT"), b.address("REAUTH")
        assert b.alive, b.log()


@pytest.fixture
def sasl(brokers):
    return brokers[1]


def handshake(c: RawClient, mechanism: str, version: int = 1):
    return c.request(SaslHandshakeRequest(mechanism=mechanism), version)


def authenticate(c: RawClient, token: bytes, version: int = 2):
    return c.request(SaslAuthenticateRequest(auth_bytes=token), version)


def metadata_ok(c: RawClient) -> bool:
    return c.request(MetadataRequest(topics=[]), 12).brokers[0].node_id >= 0


def scram_login(c: RawClient, mechanism: str, user: str, password: str, version: int = 2):
    """The whole exchange; returns the last SaslAuthenticate response."""
    assert handshake(c, mechanism).error_code == ErrorCode.NONE
    client = ScramClient(mechanism, user, password)
    first = authenticate(c, client.first(), version)
    if first.error_code != ErrorCode.NONE:
        return first
    final = authenticate(c, client.final(bytes(first.auth_bytes)), version)
    if final.error_code == ErrorCode.NONE:
        assert client.verify(bytes(final.auth_bytes)), "the server's signature does not verify"
    return final


def test_api_versions_then_handshake_lists_enabled_mechanisms(sasl):
    with RawClient(sasl) as c:
        assert c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).error_code == 0
        response = handshake(c, "PLAIN")
        assert response.error_code == ErrorCode.NONE
        # Kafka lists them in java.util.HashSet order
        assert response.mechanisms == ["PLAIN", "SCRAM-SHA-512", "SCRAM-SHA-256"]


def test_unsupported_mechanism_answers_the_enabled_list_and_closes(sasl):
    with RawClient(sasl) as c:
        response = handshake(c, "GSSAPI")
        assert response.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert sorted(response.mechanisms) == sorted(MECHANISMS)
        assert c.is_closed_by_peer()


@pytest.mark.parametrize("version", [0, 1, 2])
def test_plain_good_password_then_requests_are_served(sasl, version):
    with RawClient(sasl) as c:
        handshake(c, "PLAIN")
        response = authenticate(c, plain_token("alice", "alice-secret"), version)
        assert (response.error_code, response.error_message, bytes(response.auth_bytes)) == (0, "", b"")
        assert response.session_lifetime_ms == 0
        assert metadata_ok(c)


@pytest.mark.parametrize(("token", "message"), [
    (plain_token("alice", "wrong"), "Authentication failed: Invalid username or password"),
    (plain_token("nobody", "x"), "Authentication failed: Invalid username or password"),
    (plain_token("", "x"), "Authentication failed: username not specified"),
    (plain_token("alice", ""), "Authentication failed: password not specified"),
    (plain_token("alice", "alice-secret", authzid="admin"),
     "Authentication failed: Client requested an authorization id that is different from username"),
    (b"alice\x00alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
])
def test_plain_failures_answer_kafkas_message_and_close(sasl, token, message):
    with RawClient(sasl) as c:
        handshake(c, "PLAIN")
        response = authenticate(c, token)
        assert (response.error_code, response.error_message) == (ErrorCode.SASL_AUTHENTICATION_FAILED, message)
        assert c.is_closed_by_peer()


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_against_stored_credentials(sasl, mechanism):
    with RawClient(sasl) as c:
        assert scram_login(c, mechanism, "alice", "alice-scram").error_code == ErrorCode.NONE
        assert metadata_ok(c)


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("nobody", "x")])
def test_scram_failures_do_not_tell_which(sasl, user, password):
    with RawClient(sasl) as c:
        response = scram_login(c, "SCRAM-SHA-256", user, password)
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == ("Authentication failed during authentication due to invalid credentials "
                                          "with SASL mechanism SCRAM-SHA-256")
        assert c.is_closed_by_peer()


def test_scram_extensions_unknown_ignored_tokenauth_refused(sasl):
    with RawClient(sasl) as c:
        handshake(c, "SCRAM-SHA-512")
        client = ScramClient("SCRAM-SHA-512", "bob", "bob-scram", extensions="color=blue")
        first = authenticate(c, client.first())
        final = authenticate(c, client.final(bytes(first.auth_bytes)))
        assert final.error_code == ErrorCode.NONE and client.verify(bytes(final.auth_bytes))
    with RawClient(sasl) as c:
        handshake(c, "SCRAM-SHA-512")
        response = authenticate(c, ScramClient("SCRAM-SHA-512", "bob", "x", extensions="tokenauth=true").first())
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_request_before_handshake_closes_without_answer(sasl):
    with RawClient(sasl) as c:
        c.send(MetadataRequest(topics=[]), 12)
        assert c.is_closed_by_peer()


def test_request_after_handshake_gets_illegal_sasl_state_then_close(sasl):
    with RawClient(sasl) as c:
        handshake(c, "PLAIN")
        response = c.request(DescribeClusterRequest(), 0)
        assert response.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert c.is_closed_by_peer()


def test_second_api_versions_before_handshake_closes(sasl):
    with RawClient(sasl) as c:
        c.request(ApiVersionsRequest(), 0)
        c.send(ApiVersionsRequest(), 0)
        assert c.is_closed_by_peer()


def test_v0_handshake_then_raw_plain_token(sasl):
    with RawClient(sasl) as c:
        assert handshake(c, "PLAIN", version=0).error_code == ErrorCode.NONE
        c.send_bytes(struct.pack(">i", len(token := plain_token("admin", "admin-secret"))) + token)
        assert c.recv_frame() == b""  # Kafka answers PLAIN's empty challenge with an empty frame
        assert metadata_ok(c)


def test_v0_handshake_raw_scram_tokens_and_bad_password_closes(sasl):
    with RawClient(sasl) as c:
        handshake(c, "SCRAM-SHA-256", version=0)
        client = ScramClient("SCRAM-SHA-256", "alice", "alice-scram")
        c.send_bytes(struct.pack(">i", len(first := client.first())) + first)
        final = client.final(c.recv_frame())
        c.send_bytes(struct.pack(">i", len(final)) + final)
        assert client.verify(c.recv_frame())
        assert metadata_ok(c)
    with RawClient(sasl) as c:
        handshake(c, "PLAIN", version=0)
        c.send_bytes(struct.pack(">i", len(token := plain_token("admin", "nope"))) + token)
        assert c.is_closed_by_peer()


def test_oversized_frame_before_authentication_closes(sasl):
    with RawClient(sasl) as c:
        c.send_bytes(struct.pack(">i", 524289) + b"\x00" * 64)
        assert c.is_closed_by_peer()


def test_garbage_first_frame_closes_and_broker_keeps_serving(brokers):
    b, sasl, _ = brokers
    with RawClient(sasl) as c:
        c.send_bytes(b"GET / HTTP/1.1\r\n\r\n")
        assert c.is_closed_by_peer()
    with RawClient(sasl) as c:
        handshake(c, "PLAIN")
        assert authenticate(c, plain_token("alice", "alice-secret")).error_code == ErrorCode.NONE
    assert b.alive


def test_session_lifetime_and_reauthentication(brokers):
    reauth = brokers[2]
    with RawClient(reauth) as c:
        handshake(c, "PLAIN")
        assert authenticate(c, plain_token("alice", "alice-secret")).session_lifetime_ms == REAUTH_MS
        time.sleep(1.0)  # Kafka starts at most one re-authentication a second
        handshake(c, "PLAIN")
        response = authenticate(c, plain_token("alice", "alice-secret"))
        assert (response.error_code, response.session_lifetime_ms) == (ErrorCode.NONE, REAUTH_MS)
        assert metadata_ok(c)
        time.sleep(REAUTH_MS / 1000 + 0.3)
        c.send(MetadataRequest(topics=[]), 12)  # the session expired: the next request closes the connection
        assert c.is_closed_by_peer()


def test_scram_session_lifetime_on_v1(brokers):
    with RawClient(brokers[2]) as c:
        assert scram_login(c, "SCRAM-SHA-256", "alice", "alice-scram", version=1).session_lifetime_ms == REAUTH_MS


def test_reauthentication_cannot_change_principal_or_mechanism(brokers):
    reauth = brokers[2]
    with RawClient(reauth) as c:
        handshake(c, "PLAIN")
        authenticate(c, plain_token("alice", "alice-secret"))
        time.sleep(1.0)
        handshake(c, "PLAIN")
        response = authenticate(c, plain_token("admin", "admin-secret"))
        assert response.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert response.error_message == ("Cannot change principals during re-authentication from User.alice: "
                                          "User.admin")
        assert c.is_closed_by_peer()
    with RawClient(reauth) as c:
        handshake(c, "PLAIN")
        authenticate(c, plain_token("alice", "alice-secret"))
        time.sleep(1.0)
        assert handshake(c, "SCRAM-SHA-256").error_code == ErrorCode.NONE
        c.send(SaslAuthenticateRequest(auth_bytes=ScramClient("SCRAM-SHA-256", "alice", "alice-scram").first()), 2)
        assert c.is_closed_by_peer()


def test_handshake_after_authentication_without_lifetime_is_illegal(sasl):
    with RawClient(sasl) as c:
        handshake(c, "PLAIN")
        authenticate(c, plain_token("alice", "alice-secret"))
        assert handshake(c, "PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert metadata_ok(c)


def test_failed_authentication_is_answered_and_closed_after_the_configured_delay(tmp_path):
    """connection.failed.authentication.delay.ms (Kafka's default 100) holds back a failed login's answer and
    close, for a wrong password and an unsupported mechanism alike; other connections are served meanwhile."""
    overrides = {**sasl_overrides(), "connection.failed.authentication.delay.ms": "1000"}
    with BrokerProcess(tmp_path, port=0, overrides=overrides) as b:
        sasl = b.address("SASL_PLAINTEXT")
        with RawClient(sasl) as wrong, RawClient(sasl) as unsupported:
            handshake(wrong, "PLAIN")
            started = time.monotonic()
            wrong.send(SaslAuthenticateRequest(auth_bytes=plain_token("alice", "wrong")), 2)
            unsupported.send(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
            with RawClient(sasl) as good:  # served while the two failures wait
                handshake(good, "PLAIN")
                assert authenticate(good, plain_token("alice", "alice-secret")).error_code == ErrorCode.NONE
                assert metadata_ok(good)
            assert wrong.recv(SaslAuthenticateResponse, 2)[1].error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert time.monotonic() - started >= 1.0
            assert wrong.is_closed_by_peer()
            assert unsupported.recv(SaslHandshakeResponse, 1)[1].error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
            assert time.monotonic() - started >= 1.0
            assert unsupported.is_closed_by_peer()
        assert b.alive
