"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) against the credentials AlterUserScramCredentials
stored, as Kafka's ScramSaslServer: the same message grammar, the same failures, and Kafka's extension
handling (unknown extensions are ignored; ``tokenauth=true`` authenticates with a delegation token: the user
name is the token id, the password the base64 of its HMAC, and the principal the token's owner).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

from pykbroker.security.errors import SaslAuthenticationError, SaslCredentialError, SaslProtocolError
from replication.metadata.credentials import (
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCredential,
    credential_from_salted_password,
)

# Kafka's ScramMessages grammar (ASCII only; ',' separates attributes, '=' only escaped in names).
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_SASLNAME = rf"(?:{_VALUE_SAFE}|=2C|=3D)+"
_B64 = r"[a-zA-Z0-9/+]"
_BASE64 = rf"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>{_EXTENSIONS})")
_CLIENT_FINAL = re.compile(rf"c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")



# user -> its credential for this mechanism, or None
CredentialLookup = Callable[[str], "ScramCredential | None"]
# token id -> (owner's name, its credential for this mechanism, expiry in ms) of a live delegation token, or None
TokenLookup = Callable[[str], "tuple[str, ScramCredential, int] | None"]


def _username(sasl_name: str) -> str:
    """RFC 5802 saslname to user name: '=2C' is ',' and '=3D' is '='; any other '=' is invalid."""
    name = sasl_name.replace("=2C", ",")
    if "=" in name.replace("=3D", ""):
        raise SaslCredentialError(f"Invalid username: {sasl_name}")
    return name.replace("=3D", "=")


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = digits[d] + out
        if n == 0:
            return out


class ScramServer:
    """One SCRAM exchange: client-first → server-first, client-final → server-final."""

    def __init__(self, mechanism: str, credentials: CredentialLookup, tokens: TokenLookup | None = None) -> None:
        self.mechanism = mechanism
        self._hash = SCRAM_MECHANISMS[mechanism][1]
        self._credentials = credentials
        self._tokens = tokens
        self.token_authenticated = False
        self.credential_expiry_ms: int | None = None  # a token's expiry: the session may not outlive it
        self.complete = False
        self.authorization_id: str | None = None
        self._state = "client-first"
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._stored_key = self._server_key = b""

    def _hmac(self, key: bytes, data: bytes) -> bytes:
        return hmac.new(key, data, self._hash).digest()

    def evaluate(self, token: bytes) -> bytes:
        """The next server message; raises a ``pykbroker.security.errors`` error when authentication fails."""
        try:
            if self._state == "client-first":
                return self._client_first(token)
            if self._state == "client-final":
                return self._client_final(token)
            raise SaslProtocolError(f"Unexpected challenge in Sasl server state {self._state}")
        except (SaslAuthenticationError, SaslCredentialError, SaslProtocolError):
            self._state = "failed"
            self._stored_key = self._server_key = b""
            raise

    def _client_first(self, token: bytes) -> bytes:
        message = token.decode("utf-8", "replace")
        m = _CLIENT_FIRST.fullmatch(message)
        if m is None:
            raise SaslCredentialError("Invalid SCRAM client first message format")
        extensions = dict(e.partition("=")[::2] for e in m.group("extensions")[1:].split(",") if e)
        username = _username(m.group("saslname"))
        authorization_id = username
        credential: ScramCredential | None
        if extensions.get("tokenauth", "").lower() == "true":
            found = self._tokens(username) if self._tokens is not None else None
            if found is None:
                raise SaslCredentialError(f"Token Authentication failed: Invalid tokenId : {username}")
            authorization_id, credential, self.credential_expiry_ms = found
            self.token_authenticated = True
        else:
            credential = self._credentials(username)
        if credential is None:
            raise SaslCredentialError("Authentication failed: Invalid user credentials")
        authzid = m.group("authzid") or ""
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        iterations, salt, self._stored_key, self._server_key = credential
        if iterations < MIN_ITERATIONS:
            raise SaslCredentialError(f"Iterations {iterations} is less than the minimum {MIN_ITERATIONS}")
        self.authorization_id = authorization_id
        # What Kafka signs: the bare message rebuilt from what it parsed, extensions in the client's order.
        bare = f"n={m.group('saslname')},r={m.group('nonce')}"
        if extensions:
            bare += "," + ",".join(f"{k}={v}" for k, v in extensions.items())
        self._client_first_bare = bare
        self._nonce = m.group("nonce") + _base36(secrets.randbits(130))
        self._server_first = f"r={self._nonce},s={base64.b64encode(salt).decode()},i={iterations}"
        self._state = "client-final"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        m = _CLIENT_FINAL.fullmatch(token.decode("utf-8", "replace"))
        if m is None:
            raise SaslCredentialError("Invalid SCRAM client final message format")
        if m.group("nonce") != self._nonce:
            raise SaslCredentialError("Invalid client nonce in the final client message.")
        channel = base64.b64encode(base64.b64decode(m.group("channel"))).decode()
        auth_message = f"{self._client_first_bare},{self._server_first},c={channel},r={self._nonce}".encode()
        stored_key = self._stored_key
        proof = base64.b64decode(m.group("proof"))
        if len(proof) != len(stored_key):  # Kafka's xor throws: the connection closes without an answer
            raise SaslProtocolError("client proof of the wrong length")
        signature = self._hmac(stored_key, auth_message)
        computed = hashlib.new(self._hash, bytes(a ^ b for a, b in zip(proof, signature, strict=True))).digest()
        if not hmac.compare_digest(computed, stored_key):
            raise SaslCredentialError("Invalid client credentials")
        server_key = self._server_key
        self._stored_key = self._server_key = b""
        self._state = "complete"
        self.complete = True
        return b"v=" + base64.b64encode(self._hmac(server_key, auth_message))


def stored_credentials(metadata, user: str, mechanism: str) -> ScramCredential | None:
    """The credential AlterUserScramCredentials stored for ``user`` and ``mechanism``: a ``ScramCredential``
    as the ZooKeeper store keeps it, or the embedded store's (iterations, salt hex, salted password hex)."""
    stored = getattr(metadata, "scram_credentials", {}).get(user, {}).get(SCRAM_MECHANISMS[mechanism][0])
    if stored is None:
        return None
    if isinstance(stored, ScramCredential):
        return stored
    iterations, salt_hex, salted_hex = stored
    return credential_from_salted_password(mechanism, int(iterations), bytes.fromhex(salt_hex),
                                           bytes.fromhex(salted_hex))
