"""Delegation tokens (KIP-48), as Kafka 4.4's DelegationTokenControlManager and DelegationTokenManager keep them.

A token is created for an owner (the requester, or another user the requester may CREATE_TOKENS for), with
renewers; its HMAC is HMAC-SHA512 of the token id under ``delegation.token.secret.key``, and is what the
client presents: as the SCRAM password (base64 of the HMAC, the token id as user name, extension
``tokenauth=true``) and to renew, expire and find the token. Without the secret key, tokens are disabled
(DELEGATION_TOKEN_AUTH_DISABLED). A token expires at ``expiry`` (issue + ``delegation.token.expiry.time.ms``,
moved by renewals) and never outlives ``max`` (issue + ``delegation.token.max.lifetime.ms``); expired tokens
are removed every ``delegation.token.expiry.check.interval.ms``.

Token information (never the HMAC or the key) persists in the metadata store behind ``TokenStore``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_lib
import logging
import secrets
from collections.abc import Callable, Iterable

from replication.metadata.credentials import (
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCredential,
    credential_from_salted_password,
)
from replication.metadata.embedded_store import new_uuid, uuid_to_kafka_string
from replication.metadata.tokens import TokenInformation, TokenStore
from wire import ErrorCode

__all__ = ["DelegationTokenManager", "TokenInformation", "TokenStore"]

log = logging.getLogger("pykbroker.security.delegation_tokens")
_MAX = 2**63 - 1


def _sum(now: int, duration: int) -> int:
    return _MAX if now > _MAX - duration else now + duration


class DelegationTokenManager:
    """Tokens of the cluster; ``now_ms`` is injected so tests control time."""

    def __init__(self, store: TokenStore, secret_key: str | None, max_lifetime_ms: int, renew_lifetime_ms: int,
                 check_interval_ms: int, now_ms: Callable[[], int]) -> None:
        self.store = store
        self._key = secret_key.encode() if secret_key else None
        self.max_lifetime_ms = max_lifetime_ms
        self.renew_lifetime_ms = renew_lifetime_ms
        self.check_interval_ms = check_interval_ms
        self.now_ms = now_ms
        self._tokens: dict[str, TokenInformation] = {}
        self._by_hmac: dict[str, TokenInformation] = {}
        self.reload()
        self._last_sweep = now_ms()

    def reload(self) -> None:
        """Read every token from the store again (after a change made through another broker)."""
        self._tokens = {t.token_id: t for t in self.store.load_delegation_tokens()}
        self._by_hmac = {self._hmac_b64(t.token_id): t for t in self._tokens.values()} if self.enabled else {}

    @property
    def enabled(self) -> bool:
        return self._key is not None

    def hmac(self, token_id: str) -> bytes:
        assert self._key is not None
        return hmac_lib.new(self._key, token_id.encode(), hashlib.sha512).digest()

    def _hmac_b64(self, token_id: str) -> str:
        return base64.b64encode(self.hmac(token_id)).decode()

    async def _token(self, hmac: bytes) -> TokenInformation | None:
        await self._maybe_sweep()
        return self._by_hmac.get(base64.b64encode(hmac).decode())

    # -- the four APIs ----------------------------------------------------------------------------------------
    async def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int
               ) -> tuple[int, TokenInformation | None]:
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, None
        if any(not r.startswith("User:") for r in renewers):
            return ErrorCode.INVALID_PRINCIPAL_TYPE, None
        now = self.now_ms()
        lifetime = min(self.max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else self.max_lifetime_ms
        max_ms = _sum(now, lifetime)
        token = TokenInformation(uuid_to_kafka_string(new_uuid()), owner, requester, list(renewers), now, max_ms,
                                 min(max_ms, _sum(now, self.renew_lifetime_ms)))
        await self.store.put_delegation_token(token)
        self._tokens[token.token_id] = token
        self._by_hmac[self._hmac_b64(token.token_id)] = token
        log.info("created delegation token %s for owner %s (requester %s, renewers %s)", token.token_id, owner,
                 requester, renewers)
        return ErrorCode.NONE, token

    async def renew(self, principal: str, hmac: bytes, renew_period_ms: int) -> tuple[int, int]:
        """(error code, new expiry)."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
        token = await self._token(hmac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        now = self.now_ms()
        if token.max_ms < now or token.expiry_ms < now:
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        if not token.owner_or_renewer(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        period = min(self.renew_lifetime_ms, renew_period_ms) if renew_period_ms > 0 else self.renew_lifetime_ms
        token.expiry_ms = min(token.max_ms, now + period)
        await self.store.put_delegation_token(token)
        log.info("renewed delegation token %s: expires at %d", token.token_id, token.expiry_ms)
        return ErrorCode.NONE, token.expiry_ms

    async def expire(self, principal: str, hmac: bytes, expiry_period_ms: int) -> tuple[int, int]:
        """(error code, new expiry); a negative period removes the token at once."""
        if not self.enabled:
            return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED, 0
        token = await self._token(hmac)
        if token is None:
            return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, 0
        if not token.owner_or_renewer(principal):
            return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, 0
        now = self.now_ms()
        if expiry_period_ms < 0:
            await self._remove(token)
            log.info("expired delegation token %s on request", token.token_id)
            return ErrorCode.NONE, now
        if token.max_ms < now or token.expiry_ms < now:
            return ErrorCode.DELEGATION_TOKEN_EXPIRED, 0
        token.expiry_ms = min(token.max_ms, _sum(now, expiry_period_ms))
        await self.store.put_delegation_token(token)
        return ErrorCode.NONE, token.expiry_ms

    async def tokens(self, eligible: Callable[[TokenInformation], bool]) -> list[tuple[TokenInformation, bytes]]:
        """(token, HMAC) of the tokens ``eligible`` accepts."""
        await self._maybe_sweep()
        return [(t, self.hmac(t.token_id)) for t in self._tokens.values() if eligible(t)]

    # -- authentication ---------------------------------------------------------------------------------------------
    def scram_credential(self, token_id: str, mechanism: str) -> tuple[str, ScramCredential, int] | None:
        """(owner's name, SCRAM credential, expiry) of a live token, for SCRAM with ``tokenauth=true``; else None."""
        token = self._tokens.get(token_id)
        if token is None or not self.enabled:
            return None
        now = self.now_ms()
        if token.max_ms < now or token.expiry_ms < now:
            return None
        credential = token.scram.get(mechanism)
        if credential is None:
            salt = secrets.token_bytes(32)
            password = base64.b64encode(self.hmac(token_id))
            salted = hashlib.pbkdf2_hmac(SCRAM_MECHANISMS[mechanism][1], password, salt, MIN_ITERATIONS)
            credential = token.scram[mechanism] = credential_from_salted_password(mechanism, MIN_ITERATIONS, salt,
                                                                                  salted)
        return token.owner.split(":", 1)[1], credential, token.expiry_ms

    # -- expiry -------------------------------------------------------------------------------------------------------
    async def _remove(self, token: TokenInformation) -> None:
        await self.store.remove_delegation_token(token.token_id)
        self._tokens.pop(token.token_id, None)
        self._by_hmac = {k: v for k, v in self._by_hmac.items() if v.token_id != token.token_id}

    async def _maybe_sweep(self) -> None:
        now = self.now_ms()
        if now - self._last_sweep < self.check_interval_ms:
            return
        self._last_sweep = now
        for token in list(self._tokens.values()):
            if token.max_ms < now or token.expiry_ms < now:
                log.info("Delegation token expired for token: %s for owner: %s", token.token_id, token.owner)
                await self._remove(token)


def filter_token(requester: str, owners: Iterable[str] | None, token: TokenInformation,
                 authorize_token: Callable[[str], bool], authorize_requester: Callable[[str], bool]) -> bool:
    """Kafka's DelegationTokenManager.filterToken: may ``requester`` see ``token`` (among the asked owners)?"""
    if owners is not None and not any(token.owner_or_renewer(o) for o in owners):
        return False
    if token.owner_or_renewer(requester):
        return True
    if authorize_token(token.token_id):
        return True
    return authorize_requester(token.owner)
