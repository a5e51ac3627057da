"""Who is using the console: a login per browser (a cookie naming a ``ConsoleUser``), each with its own
Kafka connections authenticated as that user.

When the console's Kafka listener is SASL, logging in is a SASL authentication with the user's name and
password against the broker; a session then holds those credentials in memory only (to open connections
to other brokers), never on disk or in a log line. Without SASL everyone shares one anonymous session.
Sessions idle for IDLE_TIMEOUT_S are closed; at most MAX_SESSIONS are kept (the least recently used goes).
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from pykbroker.console.kafka import KafkaSession
from pykbroker.console.messages import SearchJob

__all__ = ["COOKIE", "ConsoleUser", "Sessions"]

COOKIE = "pykbroker_console"
IDLE_TIMEOUT_S = 3600.0
MAX_SESSIONS = 64


@dataclass
class ConsoleUser:
    kafka: KafkaSession
    last_used: float = field(default_factory=time.monotonic)
    search: SearchJob | None = None

    @property
    def principal(self) -> str:
        return self.kafka.principal

    def close(self) -> None:
        if self.search is not None:
            self.search.cancel()
        self.kafka.close()


class Sessions:
    """Logged-in users by cookie token; ``address`` is the console's Kafka listener."""

    def __init__(self, host: str, port: int, mechanisms: tuple[str, ...]) -> None:
        self.host = host
        self.port = port
        self.mechanisms = mechanisms
        self._users: OrderedDict[str, ConsoleUser] = OrderedDict()
        self._anonymous: ConsoleUser | None = None

    @property
    def login_required(self) -> bool:
        return bool(self.mechanisms)

    async def login(self, username: str, password: str) -> tuple[str, ConsoleUser]:
        """A new session for ``username`` once the broker accepts the password (LoginError otherwise)."""
        kafka = KafkaSession(self.host, self.port, self.mechanisms, username, password)
        await kafka.login()
        token = secrets.token_urlsafe(32)
        user = self._users[token] = ConsoleUser(kafka)
        while len(self._users) > MAX_SESSIONS:
            self._users.popitem(last=False)[1].close()
        return token, user

    async def user(self, token: str | None) -> ConsoleUser | None:
        """The session of ``token`` (refreshed), the anonymous one without SASL, or None."""
        self._expire()
        if not self.login_required:
            if self._anonymous is None:
                kafka = KafkaSession(self.host, self.port, ())
                await kafka.login()
                self._anonymous = ConsoleUser(kafka)
            self._anonymous.last_used = time.monotonic()
            return self._anonymous
        user = self._users.get(token or "")
        if user is not None:
            user.last_used = time.monotonic()
            self._users.move_to_end(token or "")
        return user

    def logout(self, token: str | None) -> None:
        user = self._users.pop(token or "", None)
        if user is not None:
            user.close()

    def _expire(self) -> None:
        now = time.monotonic()
        for token in [t for t, u in self._users.items() if now - u.last_used > IDLE_TIMEOUT_S]:
            self._users.pop(token).close()

    def close(self) -> None:
        for user in self._users.values():
            user.close()
        self._users.clear()
        if self._anonymous is not None:
            self._anonymous.close()
            self._anonymous = None
