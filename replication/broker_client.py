"""A connection from this broker to another one: requests written in order, answers read in order.

Used by replica fetchers and, later, by the controller and the transaction coordinator's markers. One
request in flight at a time is all those callers need (Kafka's fetcher also waits for each answer), so
there is no pipelining: ``request`` writes a frame and reads the next one. Any I/O error, or no answer
within ``timeout_ms``, closes the connection and raises ``BrokerConnectionError``; the caller reconnects.

``usable_version`` negotiates a request's version as Kafka's NetworkClient does: the peer's ApiVersions, asked once
per connection, and the highest version both sides serve (a peer of another release may lack the newest).

Connections are bounded as Kafka's inter-broker NetworkClients bound theirs: one unused for
``connections.max.idle.ms`` is closed (its Selector's idle expiry), to be opened again on the next request;
and ``BrokerClientPool`` keeps at most ``max_connections`` open, closing the least recently used idle one
when a request needs one more.

A pool holds one connection per peer and *channel*: as Kafka's inter-broker senders each have their own
NetworkClient (replica fetchers, the transaction marker channel, the AddPartitionsToTxn manager), a caller whose
requests can wait long (WriteTxnMarkers waits for acks=all appends) takes its own channel, so that another
caller's quick requests (a partition leader's transaction checks) never queue behind it.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import struct
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from wire import (
    Reader,
    RequestHeader,
    Writer,
    decode_response_header,
    encode_request_header,
    request_header_version,
    response_header_version,
)

__all__ = ["BrokerClient", "BrokerClientPool", "BrokerConnectionError", "UnsupportedVersionError"]

log = logging.getLogger("replication.broker_client")

_SIZE = struct.Struct(">i")
# The largest answer accepted from another broker: a fetch response is bounded by replica.fetch.response.max.bytes
# (10 MiB by default) plus headers; anything far beyond means a broken stream.
MAX_RESPONSE_BYTES = 512 * 1024 * 1024
# Open connections a pool keeps to other brokers: one per peer it talks to, so in a large cluster a broker that
# sends markers or checks to many peers holds a bounded number of descriptors (least recently used closed first).
MAX_POOLED_CONNECTIONS = 256
DEFAULT_CHANNEL = "default"


class BrokerConnectionError(ConnectionError):
    """The connection to the other broker failed or timed out; it is closed."""


class UnsupportedVersionError(BrokerConnectionError):
    """The other broker serves no version of a request that this broker can send."""


class BrokerClient:
    """One connection to broker ``node_id`` at ``host:port``."""

    def __init__(self, node_id: int, host: str, port: int, *, client_id: str, timeout_ms: int = 30_000,
                 max_idle_ms: int = -1, ssl_context: ssl.SSLContext | None = None) -> None:
        """``max_idle_ms``: close the connection after this long without a request (-1: never);
        ``ssl_context``: talk TLS."""
        self.ssl_context = ssl_context
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_ms / 1000
        self.max_idle_s = max_idle_ms / 1000 if max_idle_ms >= 0 else None
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()  # one request in flight: callers take turns
        self._idle_timer: asyncio.TimerHandle | None = None
        self.last_used = 0.0  # loop time the last request ended
        self._peer_versions: dict[int, tuple[int, int]] | None = None  # the connected peer's ApiVersions

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    @property
    def in_use(self) -> bool:
        """A request is in flight or waiting for its turn."""
        return self._lock.locked()

    def _arm_idle_timer(self) -> None:
        loop = asyncio.get_running_loop()
        self.last_used = loop.time()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self.max_idle_s is not None and self.connected:
            self._idle_timer = loop.call_later(self.max_idle_s, self._close_if_idle)

    def _close_if_idle(self) -> None:
        self._idle_timer = None
        if self.connected and not self.in_use:
            log.debug("closing the idle connection to broker %d at %s:%d (connections.max.idle.ms)", self.node_id,
                      self.host, self.port)
            self.close()

    async def _connect(self) -> None:
        try:
            async with asyncio.timeout(self.timeout_s):
                self._reader, self._writer = await asyncio.open_connection(
                    self.host, self.port, limit=1 << 20, ssl=self.ssl_context,
                    server_hostname=self.host if self.ssl_context is not None else None)
        except (OSError, TimeoutError) as exc:
            raise BrokerConnectionError(f"cannot connect to broker {self.node_id} at {self.host}:{self.port}: "
                                        f"{exc or type(exc).__name__}") from exc

    async def request(self, request: Any, version: int, response_class: Any) -> Any:
        """Send ``request`` at ``version`` and return the decoded ``response_class`` answer."""
        async with self._lock:
            try:
                return await self._request(request, version, response_class)
            finally:
                self._arm_idle_timer()

    async def _request(self, request: Any, version: int, response_class: Any) -> Any:
        if not self.connected:
            await self._connect()
        assert self._reader is not None and self._writer is not None
        self._correlation_id = (self._correlation_id + 1) & 0x7FFFFFFF
        w = Writer()
        encode_request_header(w, RequestHeader(request.API_KEY, version, self._correlation_id, self.client_id,
                                               request_header_version(request.API_KEY, version)))
        request.encode_into(w, version)
        body = w.getvalue()
        try:
            self._writer.write(_SIZE.pack(len(body)) + body)
            async with asyncio.timeout(self.timeout_s):
                await self._writer.drain()
            async with asyncio.timeout(self.timeout_s):
                size = _SIZE.unpack(await self._reader.readexactly(4))[0]
            if not 0 <= size <= MAX_RESPONSE_BYTES:
                raise BrokerConnectionError(f"broker {self.node_id} sent a frame of {size} bytes")
            async with asyncio.timeout(self.timeout_s):
                frame = await self._reader.readexactly(size)
        except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
            self.close()
            raise BrokerConnectionError(f"request to broker {self.node_id} at {self.host}:{self.port} failed: "
                                        f"{exc or type(exc).__name__}") from exc
        r = Reader(frame)
        correlation_id = decode_response_header(r, response_header_version(request.API_KEY, version))
        if correlation_id != self._correlation_id:
            self.close()
            raise BrokerConnectionError(f"broker {self.node_id} answered correlation id {correlation_id}, "
                                        f"expected {self._correlation_id}")
        return response_class.decode(r.buf[r.pos:], version)

    async def usable_version(self, request_class: Any) -> int:
        """The highest version of ``request_class`` that both this broker (the message's range) and the peer
        serve; the peer's ApiVersions is asked on first use of a connection. UnsupportedVersionError when none."""
        if self._peer_versions is None or not self.connected:
            from wire.messages import ApiVersionsRequest, ApiVersionsResponse
            response = await self.request(ApiVersionsRequest(client_software_name="pykbroker",
                                                             client_software_version="1"), 3, ApiVersionsResponse)
            self._peer_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        peer = self._peer_versions.get(request_class.API_KEY)
        low, high = request_class.LOWEST_VERSION, request_class.HIGHEST_VERSION
        if peer is None or peer[0] > high or peer[1] < low:
            raise UnsupportedVersionError(f"broker {self.node_id} serves {request_class.NAME} at "
                                          f"{'no version' if peer is None else f'versions {peer[0]}-{peer[1]}'}, "
                                          f"this broker sends {low}-{high}")
        return min(high, peer[1])

    def close(self) -> None:
        self._peer_versions = None
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


class BrokerClientPool:
    """One connection per other broker and channel (module docstring), opened on first use (and again after a
    failure or an idle close); at most ``max_connections`` open at once, the least recently used idle one closed
    to make room."""

    def __init__(self, node_id: int, endpoint_lookup: Callable[[int], tuple[str, int] | None], *,
                 timeout_ms: int = 30_000, max_idle_ms: int = -1,
                 max_connections: int = MAX_POOLED_CONNECTIONS) -> None:
        self.node_id = node_id
        self._endpoint = endpoint_lookup
        self.timeout_ms = timeout_ms
        self.max_idle_ms = max_idle_ms
        self.max_connections = max_connections
        # (node id, channel) -> connection, least recently used first
        self._clients: OrderedDict[tuple[int, str], BrokerClient] = OrderedDict()

    def get(self, node_id: int, channel: str = DEFAULT_CHANNEL) -> BrokerClient:
        """The connection to ``node_id`` for ``channel``; BrokerConnectionError when its endpoint is not known."""
        endpoint = self._endpoint(node_id)
        if endpoint is None:
            raise BrokerConnectionError(f"broker {node_id} is not registered")
        key = (node_id, channel)
        client = self._clients.get(key)
        if client is None or (client.host, client.port) != endpoint:
            if client is not None:
                client.close()
            client = self._clients[key] = BrokerClient(node_id, endpoint[0], endpoint[1],
                                                       client_id=f"broker-{self.node_id}",
                                                       timeout_ms=self.timeout_ms, max_idle_ms=self.max_idle_ms)
        self._clients.move_to_end(key)
        if not client.connected:
            self._make_room()
        return client

    def _make_room(self) -> None:
        """Close least recently used idle connections until one more fits under ``max_connections``."""
        open_clients = [(k, c) for k, c in self._clients.items() if c.connected]
        excess = len(open_clients) + 1 - self.max_connections
        for key, client in open_clients:
            if excess <= 0:
                break
            if client.in_use:
                continue
            log.info("closing the least recently used connection to broker %d at %s:%d: %d connections to other "
                     "brokers open", client.node_id, client.host, client.port, len(open_clients))
            client.close()
            del self._clients[key]
            excess -= 1

    def open_connections(self) -> list[int]:
        """The brokers this pool holds an open connection to (once per channel), least recently used first."""
        return [n for (n, _), c in self._clients.items() if c.connected]

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
