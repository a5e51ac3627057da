"""SASL/PLAIN (RFC 4616) against the ``user_<name>="<password>"`` options of PlainLoginModule, as Kafka's
PlainSaslServer and PlainServerCallbackHandler: messages are Kafka's, the password check is constant-time.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from pykbroker.security.errors import SaslAuthenticationError, SaslProtocolError


class PlainServer:
    """One PLAIN exchange: a single client token ``[authzid] NUL authcid NUL passwd``."""

    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        """The server's answer (empty) once the credentials check; raises a ``pykbroker.security.errors`` error."""
        if self.complete:
            raise SaslProtocolError("PLAIN exchange already complete")
        text = token.decode("utf-8", "replace")
        parts = text.split("\x00", 3)
        if len(parts) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {min(len(parts), 4)}")
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare even for an unknown user, so the time taken does not tell which users exist
        matches = hmac.compare_digest(password.encode(), (expected if expected is not None else "\x00").encode())
        if expected is None or not matches:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self.authorization_id = username
        self.complete = True
        return b""
