"""The client side of PLAIN and SCRAM, for tests and tools that speak the raw protocol (RFC 4616, 5802)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

from replication.metadata.credentials import SCRAM_MECHANISMS


def plain_token(username: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\x00{username}\x00{password}".encode()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """SCRAM's SaltedPassword (Hi = PBKDF2-HMAC), what AlterUserScramCredentials carries."""
    return hashlib.pbkdf2_hmac(SCRAM_MECHANISMS[mechanism][1], password.encode(), salt, iterations)


class ScramClient:
    """``first()`` → client-first; ``final(server_first)`` → client-final; ``verify(server_final)``."""

    def __init__(self, mechanism: str, username: str, password: str, extensions: str = "") -> None:
        self.hash = SCRAM_MECHANISMS[mechanism][1]
        self.username = username.replace("=", "=3D").replace(",", "=2C")
        self.password = password
        self.nonce = secrets.token_hex(16)
        self.extensions = extensions
        self._auth_message = b""
        self._server_key = b""

    def first(self) -> bytes:
        return f"n,,{self._bare()}".encode()

    def _bare(self) -> str:
        return f"n={self.username},r={self.nonce}" + (f",{self.extensions}" if self.extensions else "")

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(a.split("=", 1) for a in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(self.hash, self.password.encode(), base64.b64decode(attrs["s"]), int(attrs["i"]))
        without_proof = f"c=biws,r={attrs['r']}"
        self._auth_message = f"{self._bare()},{server_first.decode()},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        signature = hmac.new(hashlib.new(self.hash, client_key).digest(), self._auth_message, self.hash).digest()
        self._server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        expected = hmac.new(self._server_key, self._auth_message, self.hash).digest()
        return server_final == b"v=" + base64.b64encode(expected)
