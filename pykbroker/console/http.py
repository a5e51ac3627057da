"""The console's HTTP/1.1 server (HTTPS with a TLS context) on the broker's event loop: GET and POST (JSON
bodies), async routes.

One request per connection (``Connection: close``), as ``pykbroker.metrics.http`` serves the metrics;
routes are looked up by (method, path), so a path served only by GET answers 405 to POST. A request that
cannot be parsed gets 400; a route that raises gets 500 and one log line; the broker goes on either way.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from urllib.parse import parse_qs, urlsplit

from pykbroker.metrics.http import HttpServer

__all__ = ["ConsoleHttpServer", "Request", "Response"]

log = logging.getLogger("pykbroker.console")

# The most of a request head read; a browser's is well under 8 KiB.
MAX_HEAD_BYTES = 16384
# The largest request body: a produced message (key, value, headers) or a config change.
MAX_BODY_BYTES = 1024 * 1024
# How long a client may take to send its request.
READ_TIMEOUT_S = 10.0

_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
            405: "Method Not Allowed", 409: "Conflict", 413: "Content Too Large", 422: "Unprocessable Content",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes = b""
    peer: str = ""  # the client's address (ACL host checks)
    principal: str = "User:ANONYMOUS"  # set by a server that authenticates its requests

    def cookie(self, name: str) -> str | None:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(self.headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed Cookie header is no cookie
            return None
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    def with_headers(self, headers: dict[str, str]) -> Response:
        self.headers.update(headers)
        return self


Route = Callable[[Request], Awaitable[Response]]


class ConsoleHttpServer(HttpServer):
    """Serves ``routes`` ({(method, path): async handler}) on ``host:port`` (0: a free port)."""

    def __init__(self, routes: dict[tuple[str, str], Route]) -> None:
        super().__init__()
        self.routes = routes

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                async with asyncio.timeout(READ_TIMEOUT_S):
                    head = await reader.readuntil(b"\r\n\r\n")
                    request = _parse(head)
                    if isinstance(request, Request):
                        peer = writer.get_extra_info("peername")
                        request.peer = str(peer[0]) if isinstance(peer, tuple) and peer else ""
                        size = int(request.headers.get("content-length", "0") or 0)
                        if not 0 <= size <= MAX_BODY_BYTES:
                            request = Response(413, "text/plain", b"request body too large\n")
                        elif size:
                            request.body = await reader.readexactly(size)
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
                return
            response = request if isinstance(request, Response) else await self._answer(request)
            extra = "".join(f"{k}: {v}\r\n" for k, v in response.headers.items())
            writer.write(f"HTTP/1.1 {response.status} {_REASONS.get(response.status, '')}\r\n"
                         f"Content-Type: {response.content_type}\r\nContent-Length: {len(response.body)}\r\n"
                         f"Cache-Control: no-store\r\n{extra}Connection: close\r\n\r\n".encode() + response.body)
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def _answer(self, request: Request) -> Response:
        route = self.routes.get((request.method, request.path))
        if route is None:
            if any(path == request.path for _, path in self.routes):
                return Response(405, "text/plain", b"method not allowed\n")
            return Response(404, "text/plain", b"not found\n")
        try:
            return await route(request)
        except Exception:
            log.exception("console: serving %s %s failed", request.method, request.path)
            return Response(500, "text/plain", b"internal error\n")


def _parse(head: bytes) -> Request | Response:
    if len(head) > MAX_HEAD_BYTES:
        return Response(400, "text/plain", b"request head too large\n")
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ")
        if not target.startswith("/") or not method.isalpha():
            raise ValueError(target)
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
    except ValueError:
        return Response(400, "text/plain", b"bad request\n")
    url = urlsplit(target)
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}
    return Request(method, url.path, query, headers)
