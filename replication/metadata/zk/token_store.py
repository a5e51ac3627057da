"""Delegation tokens in ZooKeeper under Kafka's layout (DelegationTokenManagerZk), a ``TokenStore`` for cluster mode.

``/delegation_token/tokens/<token id>`` holds a token's information as Kafka's JSON (version 3: owner, token
requester and renewers as sanitized principals, issue, max and expiry timestamps, token id; never the HMAC,
which every broker derives from ``delegation.token.secret.key``). Every change is announced with a
sequential ``/delegation_token/token_changes/token_change_<seq>`` holding the token id; every broker watches
them and reloads, so a token created, renewed or expired through one broker is known to all.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Callable

from replication.metadata.tokens import TokenInformation
from replication.metadata.zk.client import NodeExistsError, NoNodeError, WatchedEvent, ZooKeeperClient

__all__ = ["ZooKeeperTokenStore", "decode_token", "encode_token"]

log = logging.getLogger("pykbroker.security.zk_token_store")

TOKENS = "/delegation_token/tokens"
CHANGES = "/delegation_token/token_changes"
CHANGE_PREFIX = "token_change_"
VERSION = 3


def sanitize(principal: str) -> str:
    """Kafka's Sanitizer.sanitize: URL-encoding (Java's), with ``*`` as %2A and spaces as %20."""
    return urllib.parse.quote(principal, safe="-_.").replace("~", "%7E")


def desanitize(text: str) -> str:
    return urllib.parse.unquote(text)


def encode_token(token: TokenInformation) -> bytes:
    return json.dumps({"version": VERSION, "owner": sanitize(token.owner), "tokenRequester": sanitize(token.requester),
                       "renewers": [sanitize(r) for r in token.renewers], "issueTimestamp": token.issue_ms,
                       "maxTimestamp": token.max_ms, "expiryTimestamp": token.expiry_ms, "tokenId": token.token_id},
                      separators=(",", ":")).encode()


def decode_token(data: bytes) -> TokenInformation:
    doc = json.loads(data)
    owner = desanitize(doc["owner"])
    requester = desanitize(doc["tokenRequester"]) if int(doc["version"]) >= 3 else owner
    return TokenInformation(doc["tokenId"], owner, requester, [desanitize(r) for r in doc["renewers"]],
                            int(doc["issueTimestamp"]), int(doc["maxTimestamp"]), int(doc["expiryTimestamp"]))


class ZooKeeperTokenStore:
    """The cluster's tokens in ZooKeeper, cached; ``start`` loads them and watches other brokers' changes."""

    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk
        self._tokens: dict[str, TokenInformation] = {}
        self.on_change: Callable[[], None] | None = None  # the token manager's reload, once it exists
        self._seen: set[str] = set()

    async def start(self, on_change: Callable[[], None] | None = None) -> None:
        await self.zk.ensure_path(TOKENS)
        await self.zk.ensure_path(CHANGES)
        self._seen = set(await self.zk.get_children(CHANGES) or [])
        self._tokens = await self._read_all()
        if on_change is not None:
            self.on_change = on_change
        await self.zk.get_children(CHANGES, self._changed)

    async def _read_all(self) -> dict[str, TokenInformation]:
        out = {}
        for token_id in await self.zk.get_children(TOKENS) or []:
            found = await self.zk.get(f"{TOKENS}/{token_id}")
            if found is not None and found[0]:
                try:
                    out[token_id] = decode_token(found[0])
                except (ValueError, KeyError) as exc:
                    log.warning("ignoring delegation token znode %s: %s", token_id, exc)
        return out

    async def _changed(self, event: WatchedEvent) -> None:
        children = set(await self.zk.get_children(CHANGES, self._changed) or [])
        if children - self._seen:
            self._seen = children
            self._tokens = await self._read_all()
            log.info("delegation tokens changed in ZooKeeper: %d token(s)", len(self._tokens))
            if self.on_change is not None:
                self.on_change()

    async def _announce(self, token_id: str) -> None:
        await self.zk.create(f"{CHANGES}/{CHANGE_PREFIX}", token_id.encode(), sequential=True)

    # -- TokenStore ---------------------------------------------------------------------------------------------
    def load_delegation_tokens(self) -> list[TokenInformation]:
        return list(self._tokens.values())

    async def put_delegation_token(self, token: TokenInformation) -> None:
        path, data = f"{TOKENS}/{token.token_id}", encode_token(token)
        try:
            await self.zk.set(path, data)
        except NoNodeError:
            try:
                await self.zk.create(path, data, make_parents=True)
            except NodeExistsError:
                await self.zk.set(path, data)
        self._tokens[token.token_id] = token
        await self._announce(token.token_id)

    async def remove_delegation_token(self, token_id: str) -> None:
        try:
            await self.zk.delete(f"{TOKENS}/{token_id}")
        except NoNodeError:
            pass
        self._tokens.pop(token_id, None)
        await self._announce(token_id)
