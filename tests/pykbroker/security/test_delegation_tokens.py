"""DelegationTokenManager on a fake clock: lifetimes, renewals, expiry, owners and renewers, SCRAM credentials,
persistence without HMACs, and Kafka's describe filter."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac as hmac_lib

from pykbroker.security.client import ScramClient
from pykbroker.security.delegation_tokens import DelegationTokenManager, filter_token
from pykbroker.security.scram import ScramServer
from replication.metadata.embedded_store import EmbeddedMetadataStore
from wire import ErrorCode

HOUR = 3_600_000


def sync(manager_: DelegationTokenManager):
    """The manager's coroutine methods, run to completion."""
    class Sync:
        def __getattr__(self, name):
            return lambda *args: asyncio.run(getattr(manager_, name)(*args))
    return Sync()


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def manager(tmp_path, clock: Clock, key: str | None = "k", sweep_ms: int = HOUR) -> DelegationTokenManager:
    return DelegationTokenManager(EmbeddedMetadataStore(tmp_path, 1), key, 7 * 24 * HOUR, 24 * HOUR, sweep_ms, clock)


def test_disabled_without_a_secret_key(tmp_path):
    m = manager(tmp_path, Clock(), key=None)
    assert sync(m).create("User:a", "User:a", [], -1) == (ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, None)
    assert sync(m).renew("User:a", b"x", 1)[0] == ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


def test_lifetimes_renewal_and_expiry(tmp_path):
    clock = Clock()
    m = manager(tmp_path, clock, sweep_ms=40 * HOUR)
    code, token = sync(m).create("User:a", "User:a", ["User:b"], HOUR * 48)
    assert code == 0 and token is not None
    assert (token.expiry_ms - token.issue_ms, token.max_ms - token.issue_ms) == (24 * HOUR, 48 * HOUR)
    hmac = m.hmac(token.token_id)
    assert hmac == hmac_lib.new(b"k", token.token_id.encode(), hashlib.sha512).digest()
    assert sync(m).renew("User:c", hmac, 1000)[0] == ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH
    clock.now += 30 * HOUR
    assert sync(m).renew("User:b", hmac, -1)[0] == ErrorCode.DELEGATION_TOKEN_EXPIRED
    assert m.scram_credential(token.token_id, "SCRAM-SHA-256") is None  # an expired token does not authenticate
    code, token2 = sync(m).create("User:a", "User:a", [], -1)
    assert sync(m).renew("User:a", m.hmac(token2.token_id), 5 * HOUR) == (0, clock.now + 5 * HOUR)
    assert sync(m).expire("User:a", m.hmac(token2.token_id), 1000) == (0, clock.now + 1000)
    assert sync(m).expire("User:a", m.hmac(token2.token_id), -1) == (0, clock.now)
    assert sync(m).renew("User:a", m.hmac(token2.token_id), 1)[0] == ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    clock.now += 10 * HOUR  # the sweep (every 40 hours here) removes the expired first token
    assert sync(m).tokens(lambda t: True) == []


def test_tokens_persist_without_their_hmacs(tmp_path):
    clock = Clock()
    m = manager(tmp_path, clock)
    _, token = sync(m).create("User:a", "User:a", [], -1)
    stored = (tmp_path / "__cluster_metadata.json").read_text()
    hmac = m.hmac(token.token_id)
    assert token.token_id in stored and base64.b64encode(hmac).decode() not in stored and hmac.hex() not in stored
    again = manager(tmp_path, clock)
    assert [t.token_id for t, h in sync(again).tokens(lambda t: True)] == [token.token_id]
    assert sync(again).renew("User:a", hmac, 1000)[0] == 0


def test_scram_with_a_token_authenticates_its_owner(tmp_path):
    m = manager(tmp_path, Clock())
    _, token = sync(m).create("User:alice", "User:admin", [], -1)
    server = ScramServer("SCRAM-SHA-512", lambda user: None,
                         lambda token_id: m.scram_credential(token_id, "SCRAM-SHA-512"))
    client = ScramClient("SCRAM-SHA-512", token.token_id, base64.b64encode(m.hmac(token.token_id)).decode(),
                         "tokenauth=true")
    final = server.evaluate(client.final(server.evaluate(client.first())))
    assert client.verify(final) and server.complete and server.token_authenticated
    assert server.authorization_id == "alice"


def test_describe_filter_is_kafkas():
    from replication.metadata.tokens import TokenInformation

    t = TokenInformation("id", "User:a", "User:a", ["User:b"], 0, 10, 5)
    never = lambda _: False  # noqa: E731
    assert filter_token("User:a", None, t, never, never) and filter_token("User:b", None, t, never, never)
    assert not filter_token("User:c", None, t, never, never)
    assert filter_token("User:c", None, t, lambda token_id: token_id == "id", never)
    assert filter_token("User:c", None, t, never, lambda owner: owner == "User:a")
    assert not filter_token("User:a", ["User:z"], t, never, never)
    assert filter_token("User:a", ["User:b"], t, never, never)
