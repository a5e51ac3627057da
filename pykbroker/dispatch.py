"""One request frame to its handler and back: header decode, registry lookup, handler call, error answers.

What cannot be answered is refused by raising CloseConnection, as Kafka closes the channel: an API key
or version not served (ApiVersions excepted: it is answered in v0 with UNSUPPORTED_VERSION), a body
that does not decode, a frame too short for a header. A handler that fails gets its API's error
response with UNKNOWN_SERVER_ERROR (or a close when the API has none).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Coroutine, Generator
from typing import TYPE_CHECKING, Any

from wire import (
    ApiKey,
    DecodeError,
    ErrorCode,
    Reader,
    decode_request_header,
    peek_request_header,
    response_header_version,
)

if TYPE_CHECKING:
    from pykbroker.broker import Broker
    from pykbroker.config import Listener
    from pykbroker.response_writer import ResponseWriter

from pykbroker.context import ClientInformation, RequestContext
from pykbroker.request_time import apply_request_throttle, record_response_time, run_timed

log = logging.getLogger("pykbroker.connection")

# The smallest request: api_key, api_version, correlation_id, client_id length.
MIN_REQUEST_SIZE = 10
# Requests never throttled by request quotas: Kafka's cluster actions (sendResponseExemptThrottle).
_REQUEST_QUOTA_EXEMPT = frozenset({ApiKey.WRITE_TXN_MARKERS})
_API_VERSIONS = int(ApiKey.API_VERSIONS)


class CloseConnection(Exception):
    """Raised by dispatch (or a handler) when the only correct answer is to close the connection."""


class _Rest:
    """Awaitable of the rest of a coroutine whose first step already ran (and yielded ``first``): the task
    awaiting it waits on what the coroutine waits on, and delivers results and exceptions (cancellation)."""

    __slots__ = ("coro", "first")

    def __init__(self, coro: Coroutine[Any, Any, Any], first: Any) -> None:
        self.coro = coro
        self.first = first

    def __await__(self) -> Generator[Any, Any, Any]:
        coro = self.coro
        yielded = self.first
        while True:
            try:
                value = yield yielded
            except BaseException as exc:  # noqa: BLE001 - delivered to the coroutine at its await
                try:
                    yielded = coro.throw(exc)
                except StopIteration as done:
                    return done.value
                continue
            try:
                yielded = coro.send(value)
            except StopIteration as done:
                return done.value


class Dispatcher:
    """Runs one connection's requests through the broker's handler registry; answers go to ``writer``."""

    __slots__ = ("broker", "listener", "peer", "writer", "last_sent", "client_information")

    def __init__(self, broker: Broker, listener: Listener, peer: str, writer: ResponseWriter) -> None:
        self.broker = broker
        self.listener = listener
        self.peer = peer
        self.writer = writer
        self.last_sent = 0.0  # when the previous response was written (metrics: queue time starts after it)
        self.client_information = ClientInformation()  # what the client's ApiVersions said it is

    async def dispatch(self, data: bytes | bytearray | memoryview, principal: str, token_authenticated: bool = False,
                       arrived: float = 0.0) -> int:
        """Handle one request frame as ``principal`` (``token_authenticated``: with a delegation token),
        read at ``arrived`` (perf_counter, for metrics' request queue time); returns the throttle (ms) to
        mute the connection for."""
        if len(data) < MIN_REQUEST_SIZE:
            log.warning("closing connection from %s: request of %d bytes is too short for a header",
                        self.peer, len(data))
            raise CloseConnection
        broker = self.broker
        r = Reader(data)
        api_key, api_version, correlation_id = peek_request_header(r)
        entry = broker.registry.get(api_key)
        if entry is None:  # not served, or its module is not imported yet
            entry = await broker.registry.load(api_key)
        if entry is None:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else "unknown"
            log.warning("closing connection from %s: API key %d (%s) is not served (correlation_id=%d)",
                        self.peer, api_key, name, correlation_id)
            raise CloseConnection
        if not entry.serves(api_version):
            if api_key == ApiKey.API_VERSIONS:
                if (sending := self.writer.send(broker.unsupported_api_versions_response(), correlation_id, 0, 0)) is not None:
                    await sending
                return 0
            log.warning("closing connection from %s: %s v%d is not served (versions %d-%d, correlation_id=%d)",
                        self.peer, entry.name, api_version, entry.min_version, entry.max_version, correlation_id)
            raise CloseConnection
        try:
            header = decode_request_header(r)
            if api_version < entry.request_class.LOWEST_VERSION:
                request = None  # advertised for old clients but refused by the handler's error responder
            else:
                # Like Kafka, bytes after the body are ignored: librdkafka sends some with Metadata v13.
                request = entry.decode(r, api_version)  # type: ignore[misc]  # set by ApiHandler
        except DecodeError as exc:
            log.warning("closing connection from %s: cannot decode %s v%d (correlation_id=%d): %s",
                        self.peer, entry.name, api_version, correlation_id, exc)
            raise CloseConnection from None
        ctx = RequestContext(header, broker, self.listener, self.peer, principal=principal,
                             token_authenticated=token_authenticated, client_information=self.client_information)
        # Only while some client has a request_percentage quota: measuring costs every request a little.
        ctx.measure_time = api_key not in _REQUEST_QUOTA_EXEMPT and broker.request_quota.enabled()
        metrics = broker.metrics  # None while metrics and console are off: nothing is timed for them
        started = handled = time.perf_counter() if metrics is not None else 0.0
        try:
            if request is None:
                assert entry.error_response is not None
                response = entry.error_response(None, api_version, ErrorCode.UNSUPPORTED_VERSION)
            elif ctx.measure_time or metrics is not None:
                handled, response = run_timed(entry.handle(ctx, request), ctx, started or time.perf_counter())
                if not handled:  # it waits: the rest is timed step by step
                    response = await response
            else:
                coro = entry.handle(ctx, request)
                try:
                    first = coro.send(None)  # most handlers answer in their first step
                except StopIteration as done:
                    response = done.value
                else:
                    response = await _Rest(coro, first)
        except CloseConnection:
            raise
        except Exception:
            log.exception("error handling %s v%d (%s)", entry.name, api_version, ctx.describe())
            if entry.error_response is None or request is None:
                raise CloseConnection from None
            response = entry.error_response(request, api_version, ErrorCode.UNKNOWN_SERVER_ERROR)
            handled = 0.0
        if metrics is not None and not handled:
            handled = time.perf_counter()
        send_started = sent = handled
        if response is not None:  # None, e.g. Produce with acks=0: Kafka sends nothing back (nor counts its time)
            if ctx.measure_time:
                apply_request_throttle(ctx, response)
                send_started = time.perf_counter()
            # The response header is v1 for a flexible request (header v2), but ApiVersions' always v0.
            if (sending := self.writer.send(response, correlation_id, api_version,
                                            1 if header.header_version >= 2 and api_key != _API_VERSIONS else 0)) is not None:
                await sending  # file regions, or a client that does not read
            if metrics is not None or ctx.measure_time:
                sent = time.perf_counter()
            if ctx.measure_time:  # sending counts against the client's next requests
                record_response_time(ctx, sent - send_started)
        if metrics is not None:
            # As Kafka, which reads a connection's next request only once the previous one is answered,
            # a frame read earlier starts queueing when the one before it was answered.
            arrived = max(arrived, self.last_sent)
            self.last_sent = sent
            metrics.request(api_key, api_version, len(data), arrived, started, ctx.request_time_s, handled,
                            send_started, sent, ctx.throttle_ms)
        return ctx.throttle_ms

    async def answer_with_error(self, data: bytes | bytearray | memoryview, code: int) -> None:
        """Answer a request with its API's error response (as Kafka does for requests during SASL), if it parses."""
        r = Reader(data)
        try:
            api_key, api_version, correlation_id = peek_request_header(r)
            entry = self.broker.registry.get(api_key) or await self.broker.registry.load(api_key)
            if entry is None or not entry.serves(api_version) or entry.error_response is None:
                return
            decode_request_header(r)
            request = entry.request_class.decode_from(r, api_version)
        except (DecodeError, ValueError):
            return
        if (sending := self.writer.send(entry.error_response(request, api_version, code), correlation_id, api_version,
                                        response_header_version(api_key, api_version))) is not None:
            await sending
