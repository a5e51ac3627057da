"""A minimal HTTP/1.1 server on the broker's event loop for the metrics endpoint and the console.

GET (and HEAD) only, one request per connection (``Connection: close``), routes by path. It runs on
the event loop so that what it reads (partitions, groups, counters) is never changed under it by
another thread. A request it cannot parse gets 400 and a closed connection; a route that fails gets
500 and one log line; the broker goes on either way.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

__all__ = ["HttpEndpoint", "HttpServer", "Response", "parse_host_port"]

log = logging.getLogger("pykbroker.http")

# The most of a request head read; a scrape's is a few hundred bytes.
MAX_HEAD_BYTES = 16384
# How long a client may take to send its request head.
HEAD_TIMEOUT_S = 10.0

Response = tuple[int, str, bytes]  # status, content type, body
Route = Callable[[dict[str, list[str]]], Response]

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}


def parse_host_port(prop: str, value: str) -> tuple[str, int]:
    """``host:port`` (``http://`` optional; an empty host is every interface) for ``prop``."""
    text = value.strip()
    if text.startswith("http://"):
        text = text[len("http://"):]
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"{prop} must be host:port, got {value!r}")
    return host.strip("[]"), int(port)


class HttpServer:
    """The listening part: ``start`` on ``host:port`` (0: a free port; HTTPS with an ``ssl_context``),
    each connection handed to ``_serve``; ``close``."""

    def __init__(self) -> None:
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    async def start(self, host: str, port: int, ssl_context: ssl.SSLContext | None = None) -> int:
        """Listen; the port bound."""
        self._server = await asyncio.start_server(self._serve, host or None, port, ssl=ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class HttpEndpoint(HttpServer):
    """Serves ``routes`` (path -> function of the query parameters) on ``host:port`` (0: a free port)."""

    def __init__(self, what: str, routes: dict[str, Route]) -> None:
        super().__init__()
        self.what = what
        self.routes = routes

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(HEAD_TIMEOUT_S):
                    head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            if len(head) > MAX_HEAD_BYTES:
                return
            status, ctype, body, head_only = self._answer(head)
            reason = _REASONS.get(status, "")
            writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         "Cache-Control: no-store\r\nConnection: close\r\n\r\n".encode() + (b"" if head_only else body))
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def _answer(self, head: bytes) -> tuple[int, str, bytes, bool]:
        try:
            method, target, _version = head.split(b"\r\n", 1)[0].decode("ascii").split(" ")
        except (UnicodeDecodeError, ValueError):
            return 400, "text/plain", b"bad request\n", False
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", b"only GET\n", False
        url = urlsplit(target)
        route = self.routes.get(url.path)
        if route is None:
            return 404, "text/plain", b"not found\n", method == "HEAD"
        try:
            status, ctype, body = route(parse_qs(url.query))
        except Exception:
            log.exception("%s: serving %s failed", self.what, url.path)
            return 500, "text/plain", b"internal error\n", method == "HEAD"
        return status, ctype, body, method == "HEAD"
