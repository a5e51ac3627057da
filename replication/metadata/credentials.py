"""SCRAM credentials as the metadata stores keep them (Kafka's ``ScramCredential``): what
AlterUserScramCredentials stores and SASL/SCRAM (pykbroker.security.scram) authenticates against."""

from __future__ import annotations

import hashlib
import hmac
from typing import NamedTuple

__all__ = ["MIN_ITERATIONS", "SCRAM_MECHANISMS", "ScramCredential", "credential_from_salted_password"]

# mechanism -> (AlterUserScramCredentials mechanism type, hash name); Kafka's minimum is 4096 iterations for both.
SCRAM_MECHANISMS: dict[str, tuple[int, str]] = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
MIN_ITERATIONS = 4096


class ScramCredential(NamedTuple):
    """A SCRAM credential in the form a server keeps (RFC 5802; Kafka's ``ScramCredential``, which is what
    ZooKeeper's ``/config/users/<user>`` holds): the password itself cannot be recovered from it."""

    iterations: int
    salt: bytes
    stored_key: bytes
    server_key: bytes


def credential_from_salted_password(mechanism: str, iterations: int, salt: bytes,
                                    salted_password: bytes) -> ScramCredential:
    """The stored form of what AlterUserScramCredentials sends (``mechanism``: ``SCRAM-SHA-256``/``-512``)."""
    digest = SCRAM_MECHANISMS[mechanism][1]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    return ScramCredential(iterations, salt, hashlib.new(digest, client_key).digest(),
                           hmac.new(salted_password, b"Server Key", digest).digest())
