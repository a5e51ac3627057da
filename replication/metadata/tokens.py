"""Delegation token information as the metadata stores keep it (never the HMAC or the secret key);
pykbroker.security.delegation_tokens creates, renews and expires tokens and derives their credentials."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from replication.metadata.credentials import ScramCredential

__all__ = ["TokenInformation", "TokenStore"]


@dataclass
class TokenInformation:
    """One token: principals as "<type>:<name>", times in ms since the epoch."""

    token_id: str
    owner: str
    requester: str
    renewers: list[str]
    issue_ms: int
    max_ms: int
    expiry_ms: int
    # SCRAM credentials derived from the HMAC (random salt per mechanism), made on first use; not stored.
    scram: dict[str, ScramCredential] = field(default_factory=dict, repr=False, compare=False)

    def owner_or_renewer(self, principal: str) -> bool:
        return principal == self.owner or principal in self.renewers

    def to_json(self) -> dict:
        return {"token_id": self.token_id, "owner": self.owner, "requester": self.requester,
                "renewers": list(self.renewers), "issue_ms": self.issue_ms, "max_ms": self.max_ms,
                "expiry_ms": self.expiry_ms}

    @classmethod
    def from_json(cls, d: dict) -> TokenInformation:
        return cls(d["token_id"], d["owner"], d["requester"], list(d["renewers"]), int(d["issue_ms"]),
                   int(d["max_ms"]), int(d["expiry_ms"]))


class TokenStore(Protocol):
    """Where token information persists."""

    def load_delegation_tokens(self) -> list[TokenInformation]: ...

    async def put_delegation_token(self, token: TokenInformation) -> None: ...

    async def remove_delegation_token(self, token_id: str) -> None: ...
