"""A connection from this broker to another one: requests written in order, answers read in order.

Used by replica fetchers and, later, by the controller and the transaction coordinator's markers. One
request in flight at a time is all those callers need (Kafka's fetcher also waits for each answer), so
there is no pipelining: ``request`` writes a frame and reads the next one. Any I/O error, or no answer
within ``timeout_ms``, closes the connection and raises ``BrokerConnectionError``; the caller reconnects.
"""

from __future__ import annotations

import asyncio
import struct
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

__all__ = ["BrokerClient", "BrokerClientPool", "BrokerConnectionError"]

_SIZE = struct.Struct(">i")
# The largest answer accepted from another broker: a fetch response is bounded by replica.fetch.response.max.bytes
# (10 MiB by default) plus headers; anything far beyond means a broken stream.
MAX_RESPONSE_BYTES = 512 * 1024 * 1024


class BrokerConnectionError(ConnectionError):
    """The connection to the other broker failed or timed out; it is closed."""


class BrokerClient:
    """One connection to broker ``node_id`` at ``host:port``."""

    def __init__(self, node_id: int, host: str, port: int, *, client_id: str, timeout_ms: int = 30_000) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_ms / 1000
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0
        self._lock = asyncio.Lock()  # one request in flight: callers take turns

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def _connect(self) -> None:
        try:
            self._reader, self._writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, limit=1 << 20), self.timeout_s)
        except (OSError, TimeoutError) as exc:
            raise BrokerConnectionError(f"cannot connect to broker {self.node_id} at {self.host}:{self.port}: "
                                        f"{exc or type(exc).__name__}") from exc

    async def request(self, request: Any, version: int, response_class: Any) -> Any:
        """Send ``request`` at ``version`` and return the decoded ``response_class`` answer."""
        async with self._lock:
            return await self._request(request, version, response_class)

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
            await asyncio.wait_for(self._writer.drain(), self.timeout_s)
            size = _SIZE.unpack(await asyncio.wait_for(self._reader.readexactly(4), self.timeout_s))[0]
            if not 0 <= size <= MAX_RESPONSE_BYTES:
                raise BrokerConnectionError(f"broker {self.node_id} sent a frame of {size} bytes")
            frame = await asyncio.wait_for(self._reader.readexactly(size), self.timeout_s)
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

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None


class BrokerClientPool:
    """One connection per other broker, opened on first use (and again after a failure)."""

    def __init__(self, node_id: int, endpoint_lookup: Callable[[int], tuple[str, int] | None], *,
                 timeout_ms: int = 30_000) -> None:
        self.node_id = node_id
        self._endpoint = endpoint_lookup
        self.timeout_ms = timeout_ms
        self._clients: dict[int, BrokerClient] = {}

    def get(self, node_id: int) -> BrokerClient:
        """The connection to ``node_id``; BrokerConnectionError when its endpoint is not known."""
        endpoint = self._endpoint(node_id)
        if endpoint is None:
            raise BrokerConnectionError(f"broker {node_id} is not registered")
        client = self._clients.get(node_id)
        if client is None or (client.host, client.port) != endpoint:
            if client is not None:
                client.close()
            client = self._clients[node_id] = BrokerClient(node_id, endpoint[0], endpoint[1],
                                                           client_id=f"broker-{self.node_id}",
                                                           timeout_ms=self.timeout_ms)
        return client

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
