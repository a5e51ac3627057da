"""The console's Kafka client: every read and write of the console is a Kafka request on a connection
authenticated as the person logged in, so the broker's authorizer (ACLs) decides as for any client.

A ``KafkaSession`` connects to one of this broker's own listeners (SASL_PLAINTEXT, SASL_SSL or PLAINTEXT:
``pykbroker.console.kafka_listener``; over TLS the broker's certificate is verified with the listener's
trust store) and, for requests a partition leader, a group coordinator or the controller must
answer, to the broker Metadata names, over the same listener. On a SASL listener each connection
authenticates with SaslHandshake v1 + SaslAuthenticate v2 (SCRAM-SHA-512, SCRAM-SHA-256 or PLAIN,
whichever the listener enables and the credentials pass first). Connections reuse
``replication.broker_client.BrokerClient`` (one request in flight, a timeout, reconnect on error).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from pykbroker.security.client import ScramClient, plain_token
from replication.broker_client import BrokerClient, BrokerConnectionError
from wire import ErrorCode
from wire.messages import (
    RESPONSES,
    FindCoordinatorRequest,
    MetadataRequest,
    SaslAuthenticateRequest,
    SaslHandshakeRequest,
)
from wire.messages.metadata_request import MetadataRequestTopic

__all__ = ["KafkaSession", "LoginError", "RequestError", "VERSIONS"]

# The versions the console speaks: ones every pykbroker and Kafka 4.x serve (topic names, not ids, in Fetch).
VERSIONS = {
    "Metadata": 12, "Fetch": 12, "Produce": 9, "ListOffsets": 7, "CreateTopics": 7, "DeleteTopics": 5,
    "CreatePartitions": 3, "DeleteRecords": 2, "DescribeConfigs": 4, "IncrementalAlterConfigs": 1,
    "ListGroups": 5, "DescribeGroups": 5, "ConsumerGroupDescribe": 0, "ShareGroupDescribe": 1,
    "OffsetFetch": 8, "OffsetCommit": 8, "DeleteGroups": 2, "DescribeAcls": 3, "CreateAcls": 3,
    "DeleteAcls": 3, "DescribeShareGroupOffsets": 1, "AlterShareGroupOffsets": 0,
    "DescribeUserScramCredentials": 0, "AlterUserScramCredentials": 0, "FindCoordinator": 4,
    "StreamsGroupDescribe": 0, "DescribeLogDirs": 4,
}
# Requests that change nothing, asked again once when their connection fails.
READS = frozenset({"Metadata", "Fetch", "ListOffsets", "DescribeConfigs", "ListGroups", "DescribeGroups",
                   "ConsumerGroupDescribe", "ShareGroupDescribe", "OffsetFetch", "DescribeAcls",
                   "DescribeShareGroupOffsets", "DescribeUserScramCredentials", "FindCoordinator",
                   "StreamsGroupDescribe", "DescribeLogDirs"})
# SASL mechanisms tried at login, strongest first (only those the listener enables).
MECHANISM_PREFERENCE = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
# How long one request may take before the console gives up on it (Fetch long-polls stay far below).
REQUEST_TIMEOUT_MS = 30_000


class LoginError(Exception):
    """The broker refused the credentials (its SaslAuthenticate error message)."""


class RequestError(Exception):
    """A Kafka error code answered to a console request; ``str()`` is what the page shows."""

    def __init__(self, error_code: int, message: str | None = None, what: str = "") -> None:
        self.error = ErrorCode(error_code)
        self.message = message
        super().__init__(f"{what + ': ' if what else ''}{self.error.name}" + (f": {message}" if message else ""))


def check(error_code: int, message: str | None = None, what: str = "") -> None:
    """RequestError unless ``error_code`` is NONE."""
    if error_code != ErrorCode.NONE:
        raise RequestError(error_code, message, what)


def response_class(request: Any) -> Any:
    return RESPONSES[request.API_KEY]


class _Connection(BrokerClient):
    """A BrokerClient that authenticates each new connection with ``mechanism`` before its first request."""

    def __init__(self, node_id: int, host: str, port: int, credentials: tuple[str, str, str] | None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(node_id, host, port, client_id="pykbroker-console", timeout_ms=REQUEST_TIMEOUT_MS,
                         max_idle_ms=300_000, ssl_context=ssl_context)
        self.credentials = credentials  # (mechanism, username, password); None: no SASL

    async def _connect(self) -> None:
        await super()._connect()
        if self.credentials is None:
            return
        mechanism, username, password = self.credentials
        try:
            hs = await self._request(SaslHandshakeRequest(mechanism=mechanism), 1, response_class(SaslHandshakeRequest))
            if hs.error_code != ErrorCode.NONE:
                raise LoginError(f"{mechanism} is not enabled on this listener (it offers {', '.join(hs.mechanisms)})")
            if mechanism == "PLAIN":
                await self._authenticate(plain_token(username, password))
            else:
                scram = ScramClient(mechanism, username, password)
                server_first = await self._authenticate(scram.first())
                server_final = await self._authenticate(scram.final(server_first))
                if not scram.verify(server_final):
                    raise LoginError("the broker's SCRAM signature does not verify")
        except BaseException:
            self.close()
            raise

    async def _authenticate(self, token: bytes) -> bytes:
        answer = await self._request(SaslAuthenticateRequest(auth_bytes=token), 2,
                                     response_class(SaslAuthenticateRequest))
        if answer.error_code != ErrorCode.NONE:
            raise LoginError(answer.error_message or ErrorCode(answer.error_code).name)
        return bytes(answer.auth_bytes)


class KafkaSession:
    """Kafka connections of one console user (``principal``), to this broker and to the others."""

    def __init__(self, host: str, port: int, mechanisms: tuple[str, ...], username: str | None = None,
                 password: str | None = None, ssl_context: ssl.SSLContext | None = None) -> None:
        self.host = host
        self.ssl_context = ssl_context
        self.port = port
        self.sasl = bool(mechanisms)
        self._mechanisms = [m for m in MECHANISM_PREFERENCE if m in mechanisms]
        self._username = username or ""
        self._password = password or ""
        self._credentials: tuple[str, str, str] | None = None
        self._bootstrap: _Connection | None = None
        self._brokers: dict[int, _Connection] = {}
        self._endpoints: dict[int, tuple[str, int]] = {}
        self.principal = f"User:{username}" if self.sasl else "User:ANONYMOUS"

    async def login(self) -> None:
        """Open the first connection (authenticating on a SASL listener); LoginError when refused."""
        if not self.sasl:
            self._bootstrap = _Connection(-1, self.host, self.port, None, self.ssl_context)
            await self.metadata([])
            return
        if not self._mechanisms:
            raise LoginError("the console's listener enables no mechanism the console speaks (PLAIN, SCRAM-SHA-*)")
        last = "no mechanism tried"
        for mechanism in self._mechanisms:
            connection = _Connection(-1, self.host, self.port, (mechanism, self._username, self._password),
                                     self.ssl_context)
            try:
                await connection._connect()
            except LoginError as exc:
                last = str(exc)
                continue
            except BrokerConnectionError as exc:
                if isinstance(exc.__cause__, ssl.SSLCertVerificationError):
                    raise LoginError(f"the broker's certificate at {self.host}:{self.port} does not verify against the "
                                     "listener's trust store: set its ssl.truststore.* to the CA that signed it "
                                     f"({exc.__cause__.verify_message})") from exc
                raise
            self._credentials = connection.credentials
            self._bootstrap = connection
            await self.metadata([])
            return
        raise LoginError(last)

    def close(self) -> None:
        for c in [self._bootstrap, *self._brokers.values()]:
            if c is not None:
                c.close()
        self._brokers.clear()

    async def request(self, request: Any, node_id: int | None = None, version: int | None = None) -> Any:
        """Send ``request`` (at the console's version for it, unless ``version``) to ``node_id`` (None: this broker)."""
        name = type(request).__name__.removesuffix("Request")
        version = VERSIONS[name] if version is None else version
        connection = self._connection(node_id)
        try:
            return await connection.request(request, version, response_class(request))
        except BrokerConnectionError:
            if name not in READS:
                raise  # a write may have been done: not sent twice
            # A read is asked again on a fresh connection: the broker may have closed an idle one meanwhile.
            return await connection.request(request, version, response_class(request))

    def _connection(self, node_id: int | None) -> _Connection:
        assert self._bootstrap is not None, "login() first"
        if node_id is None or node_id < 0:
            return self._bootstrap
        endpoint = self._endpoints.get(node_id)
        if endpoint is None:
            raise RequestError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {node_id} is not known", "")
        client = self._brokers.get(node_id)
        if client is None or (client.host, client.port) != endpoint:
            if client is not None:
                client.close()
            client = self._brokers[node_id] = _Connection(node_id, endpoint[0], endpoint[1], self._credentials,
                                                          self.ssl_context)
        return client

    async def metadata(self, topics: list[str] | None) -> Any:
        """Metadata for ``topics`` (None: all this principal may describe); remembers broker endpoints."""
        request = MetadataRequest(topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
                                  allow_auto_topic_creation=False)
        response = await self.request(request)
        self._endpoints = {b.node_id: (b.host, b.port) for b in response.brokers}
        return response

    async def to_controller(self, request: Any) -> Any:
        """Send to the controller Metadata names (Kafka's AdminClient sends topic admin requests there)."""
        meta = await self.metadata([])
        return await self.request(request, meta.controller_id)

    async def to_coordinator(self, group_id: str, request: Any) -> Any:
        """Send to ``group_id``'s coordinator (FindCoordinator v4, key type GROUP)."""
        for _ in range(20):
            found = await self.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group_id]))
            [c] = found.coordinators
            if c.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                await asyncio.sleep(0.25)
                continue
            check(c.error_code, c.error_message, f"group {group_id}")
            self._endpoints[c.node_id] = (c.host, c.port)
            return await self.request(request, c.node_id)
        raise RequestError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator after 5 s", f"group {group_id}")
