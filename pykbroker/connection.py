"""One client connection: frames in, one request at a time through the registry, responses out in order.

Kafka processes a connection's requests strictly in order (the next request is read only after the
previous response is queued); we do the same, so responses can never be reordered. Frames that arrive
meanwhile are buffered, and reading pauses when too many wait. Bad input closes only this connection.

Responses are queued and written once per pass of the event loop (as Redis writes its replies before
the loop sleeps): a client that pipelines requests (a producer's in-flight batches) gets the answers
to all the frames handled in one pass in one write, and no answer waits for anything but that pass.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import time
from collections import deque
from typing import TYPE_CHECKING

from wire import (
    ApiKey,
    DecodeError,
    ErrorCode,
    FrameError,
    FrameReader,
    Reader,
    Writer,
    decode_request_header,
    encode_response_header,
    frame,
    peek_request_header,
    response_header_version,
)

if TYPE_CHECKING:
    from pykbroker.broker import Broker
    from pykbroker.config import Listener
    from pykbroker.security.listeners import ListenerSecurity
    from pykbroker.security.sasl_authenticator import SaslServerAuthenticator

from pykbroker.context import ANONYMOUS, RequestContext
from pykbroker.request_time import apply_request_throttle, record_response_time, timed

log = logging.getLogger("pykbroker.connection")

# Frames buffered beyond this pause reading from the socket until the backlog drains.
MAX_PENDING_FRAMES = 64
# The smallest request: api_key, api_version, correlation_id, client_id length.
MIN_REQUEST_SIZE = 10
# Requests never throttled by request quotas: Kafka's cluster actions (sendResponseExemptThrottle).
_REQUEST_QUOTA_EXEMPT = frozenset({ApiKey.WRITE_TXN_MARKERS})
# File regions smaller than this are copied into the response's one write rather than sent with sendfile:
# for a few hundred bytes (a consumer that keeps up) a copy costs less than a second syscall and segment.
COPY_REGIONS_BELOW = 16384
# sendfile errors that mean "not for this socket", after which the connection copies instead.
_SENDFILE_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK}


class CloseConnection(Exception):
    """Raised by dispatch when the only correct answer is to close the connection."""


class Connection(asyncio.BufferedProtocol):
    """asyncio protocol for one client socket (TLS already done by the transport on SSL listeners).

    A BufferedProtocol: the socket is read straight into the frame reader's buffers, so a large
    request (a produced batch) lands in a buffer of its own without being copied on the way.

    On SASL listeners every frame goes through the connection's SaslServerAuthenticator until it is
    authenticated (pykbroker.security.sasl_authenticator says what Kafka allows when), and frames are
    limited to ``sasl.server.max.receive.size`` until then. ``principal`` is what requests run as.
    """

    def __init__(self, broker: Broker, listener: Listener, security: ListenerSecurity | None = None) -> None:
        self.broker = broker
        self.listener = listener
        self.security = security
        self.principal = ANONYMOUS
        self.authenticator: SaslServerAuthenticator | None = None
        self.frames = FrameReader(broker.config.socket_request_max_bytes)
        self.pending: deque[bytes | bytearray] = deque()
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.ip = "?"  # the client's address, for max.connections.per.ip
        self._wakeup = asyncio.Event()
        self._can_write = asyncio.Event()
        self._can_write.set()
        self._reading_paused = False
        self._closed = False
        self._task: asyncio.Task | None = None
        self._sock_fd: int | None = None
        self._out: list[bytes] = []  # response bytes not yet handed to the transport (see _write)
        self.last_active = asyncio.get_running_loop().time()  # last read or write, for connections.max.idle.ms

    # -- asyncio.Protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  (uvloop's transports are not subclasses)
        tls = self.security is not None and self.security.ssl_context is not None
        self._sock_fd = None if tls else _socket_fd(transport)  # sendfile would bypass TLS: copy instead
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.ip = peer[0] if peer else "?"
        if not self._admit():
            return
        if self.security is not None:
            self._start_security(transport)
        self._task = asyncio.get_running_loop().create_task(self._serve())

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._closed:
            return
        self.last_active = asyncio.get_running_loop().time()
        self.frames.buffer_updated(nbytes)
        try:
            while (f := self.frames.next_frame()) is not None:
                self.pending.append(f)
        except FrameError as exc:
            log.warning("closing connection from %s on listener %s: %s", self.peer, self.listener.name, exc)
            self.close()
            return
        if self.pending:
            self._wakeup.set()
            if len(self.pending) > MAX_PENDING_FRAMES and not self._reading_paused:
                self._reading_paused = True
                assert self.transport is not None
                self.transport.pause_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._can_write.set()
        self._wakeup.set()
        self.broker.connection_closed(self.peer)
        if self in self.broker.connections:
            self.broker.connections.discard(self)
            self.broker.connections_per_ip[self.ip] -= 1
            if self.broker.connections_per_ip[self.ip] <= 0:
                del self.broker.connections_per_ip[self.ip]

    def _admit(self) -> bool:
        """Count this connection against its address's max.connections.per.ip; False (and closed) when over."""
        config = self.broker.dynamic_config.current
        limit = config.max_connections_per_ip_overrides.get(self.ip, config["max.connections.per.ip"])
        if self.broker.connections_per_ip[self.ip] >= limit:
            log.info("Rejected connection from %s on listener %s, address already has the configured maximum of "
                     "%d connections.", self.ip, self.listener.name, limit)  # Kafka's words
            self._closed = True
            assert self.transport is not None
            self.transport.close()
            return False
        self.broker.connections_per_ip[self.ip] += 1
        self.broker.connections.add(self)
        return True

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def _start_security(self, transport: asyncio.BaseTransport) -> None:
        security = self.security
        assert security is not None
        if security.ssl_context is not None and not security.sasl:
            from pykbroker.security.tls import peer_certificate_principal

            self.principal = peer_certificate_principal(transport.get_extra_info("ssl_object")) or ANONYMOUS
            log.info("TLS connection from %s on listener %s: principal %s", self.peer, self.listener.name,
                     self.principal)
        if security.sasl:
            from pykbroker.security.sasl_authenticator import SaslServerAuthenticator
            from pykbroker.security.scram import stored_credentials

            metadata = self.broker.metadata
            tokens = getattr(self.broker, "delegation_tokens", None)
            self.authenticator = SaslServerAuthenticator(
                security, lambda user, mechanism: stored_credentials(metadata, user, mechanism),
                self.broker.now_ms, self.peer, tokens.scram_credential if tokens is not None else None)
            self.frames.max_frame_size = security.max_receive_size

    async def _authenticate(self, data: bytes | bytearray) -> bool:
        """One frame through the SASL authenticator; True when it is to be served as an ordinary request."""
        auth = self.authenticator
        assert auth is not None
        step = auth.receive(data)
        if step.dispatch:
            return True
        delay_ms = self.broker.config["connection.failed.authentication.delay.ms"] if step.delayed else 0
        if delay_ms > 0:  # as Kafka: a failed authentication is answered and closed only after this delay
            await asyncio.sleep(delay_ms / 1000)
        if step.reply is not None and not self._closed:
            self._write(frame(len(step.reply)) + step.reply)
        if step.error_code is not None:
            await self._answer_with_error(data, step.error_code)
        if step.close:
            raise CloseConnection
        if auth.complete:
            self.principal = auth.principal or ANONYMOUS
            self.frames.max_frame_size = self.broker.config.socket_request_max_bytes
        return False

    async def _answer_with_error(self, data: bytes | bytearray, code: int) -> None:
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
        await self._send(entry.error_response(request, api_version, code), correlation_id, api_version,
                         response_header_version(api_key, api_version))

    # -- request loop --------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        """True while a request is being handled or waits to be."""
        return bool(self.pending) or self._handling

    _handling = False

    async def _serve(self) -> None:
        try:
            while not self._closed:
                if not self.pending:
                    self._wakeup.clear()
                    await self._wakeup.wait()
                    continue
                frame_bytes = self.pending.popleft()
                if self._reading_paused and len(self.pending) < MAX_PENDING_FRAMES // 2:
                    self._reading_paused = False
                    assert self.transport is not None
                    self.transport.resume_reading()
                self._handling = True
                try:
                    await self._handle_frame(frame_bytes)
                finally:
                    self._handling = False
        except CloseConnection:
            self.close()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("unexpected error on connection from %s; closing it", self.peer)
            self.close()

    async def _handle_frame(self, data: bytes | bytearray) -> None:
        auth = self.authenticator
        if auth is not None:
            if not auth.complete:
                if not await self._authenticate(data):
                    return
            elif data[:2] == b"\x00\x11" and auth.maybe_begin_reauthentication():  # SaslHandshake
                await self._authenticate(data)
                return
            elif auth.session_expired():
                log.info("closing connection from %s on listener %s: the SASL session of %s expired",
                         self.peer, self.listener.name, self.principal)
                raise CloseConnection
        if len(data) < MIN_REQUEST_SIZE:
            log.warning("closing connection from %s: request of %d bytes is too short for a header",
                        self.peer, len(data))
            raise CloseConnection
        r = Reader(data)
        api_key, api_version, correlation_id = peek_request_header(r)
        entry = self.broker.registry.get(api_key)
        if entry is None:  # not served, or its module is not imported yet
            entry = await self.broker.registry.load(api_key)
        if entry is None:
            name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else "unknown"
            log.warning("closing connection from %s: API key %d (%s) is not served (correlation_id=%d)",
                        self.peer, api_key, name, correlation_id)
            raise CloseConnection
        if not entry.serves(api_version):
            if api_key == ApiKey.API_VERSIONS:
                await self._send(self.broker.unsupported_api_versions_response(), correlation_id, 0, 0)
                return
            log.warning("closing connection from %s: %s v%d is not served (versions %d-%d, correlation_id=%d)",
                        self.peer, entry.name, api_version, entry.min_version, entry.max_version, correlation_id)
            raise CloseConnection
        try:
            header = decode_request_header(r)
            if api_version < entry.request_class.LOWEST_VERSION:
                request = None  # advertised for old clients but refused by the handler's error responder
            else:
                # Like Kafka, bytes after the body are ignored: librdkafka sends some with Metadata v13.
                request = entry.request_class.decode_from(r, api_version)
        except DecodeError as exc:
            log.warning("closing connection from %s: cannot decode %s v%d (correlation_id=%d): %s",
                        self.peer, entry.name, api_version, correlation_id, exc)
            raise CloseConnection from None
        ctx = RequestContext(header, self.broker, self.listener, self.peer, principal=self.principal,
                             token_authenticated=auth is not None and auth.token_authenticated)
        # Only while some client has a request_percentage quota: measuring costs every request a little.
        ctx.measure_time = api_key not in _REQUEST_QUOTA_EXEMPT and self.broker.request_quota.enabled()
        try:
            if request is None:
                assert entry.error_response is not None
                response = entry.error_response(None, api_version, ErrorCode.UNSUPPORTED_VERSION)
            elif ctx.measure_time:
                response = await timed(entry.handle(ctx, request), ctx)
            else:
                response = await entry.handle(ctx, request)
        except CloseConnection:
            raise
        except Exception:
            log.exception("error handling %s v%d (%s)", entry.name, api_version, ctx.describe())
            if entry.error_response is None or request is None:
                raise CloseConnection from None
            response = entry.error_response(request, api_version, ErrorCode.UNKNOWN_SERVER_ERROR)
        if response is not None:  # None, e.g. Produce with acks=0: Kafka sends nothing back (nor counts its time)
            if ctx.measure_time:
                apply_request_throttle(ctx, response)
            started = time.perf_counter() if ctx.measure_time else 0.0
            await self._send(response, correlation_id, api_version, response_header_version(api_key, api_version))
            if ctx.measure_time:  # sending counts against the client's next requests
                record_response_time(ctx, time.perf_counter() - started)
        if ctx.throttle_ms > 0:  # over its quota: the client's next request waits (Kafka mutes the channel)
            await asyncio.sleep(ctx.throttle_ms / 1000)

    async def _send(self, response, correlation_id: int, version: int, header_version: int) -> None:
        if self._closed:
            return
        w = Writer()
        encode_response_header(w, correlation_id, header_version)
        response.encode_into(w, version)
        parts = w.parts()
        if len(parts) > 1:
            parts = [_small_region_read(p) for p in parts]
            if all(isinstance(p, (bytes, bytearray, memoryview)) for p in parts):
                parts = [b"".join(parts)]
        if len(parts) == 1:  # no file regions: queued, written with whatever else this loop pass answers
            self._write(frame(len(w)) + parts[0])
            parts = []
        else:
            self._write(frame(len(w)))
        for part in parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                self._write(part)
            else:
                try:
                    self._flush()  # everything before the region goes first
                    self._write_region(part)
                finally:
                    _release(part)
        if not self._can_write.is_set():
            await self._can_write.wait()

    def _write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` for the socket; the first queued part schedules one flush for this loop pass."""
        if not self._out:
            asyncio.get_running_loop().call_soon(self._flush)
        self._out.append(data)

    def _flush(self) -> None:
        """Hand every queued part to the transport in one write, in the order queued."""
        out = self._out
        if not out:
            return
        self._out = []
        if self._closed or self.transport is None or self.transport.is_closing():
            return
        self.last_active = asyncio.get_running_loop().time()
        self.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _write_region(self, region) -> None:
        """Send a file region with ``sendfile`` (no copy through Python) while the socket takes it.

        Only when nothing is queued in the transport, so bytes cannot overtake earlier writes; whatever
        the socket does not take at once (or everything, when sendfile is unavailable) is read and queued
        through the transport, which never blocks the event loop.
        """
        assert self.transport is not None
        sent = 0
        if self._sock_fd is not None and self.transport.get_write_buffer_size() == 0:
            try:
                in_fd = region.file.fileno()
                while sent < region.size:
                    n = os.sendfile(self._sock_fd, in_fd, region.position + sent, region.size - sent)
                    if n == 0:
                        break
                    sent += n
            except (BlockingIOError, InterruptedError):
                pass
            except (BrokenPipeError, ConnectionResetError):
                self.close()  # the client went away; connection_lost follows
                return
            except OSError as exc:
                if sent == 0 and exc.errno in _SENDFILE_UNSUPPORTED:
                    self._sock_fd = None  # e.g. a socket type sendfile refuses: copy from now on
                else:
                    raise
        if sent < region.size:
            self.transport.write(_read_region(region, sent))

    def close(self) -> None:
        if not self._closed:
            self._flush()  # answers already given still go out (the transport sends them, then closes)
            self._closed = True
            self._wakeup.set()
            if self.transport is not None:
                self.transport.close()


def _small_region_read(part):
    """A file region below COPY_REGIONS_BELOW as its bytes (the region released); anything else as it is."""
    if isinstance(part, (bytes, bytearray, memoryview)) or part.size >= COPY_REGIONS_BELOW:
        return part
    try:
        return _read_region(part)
    finally:
        _release(part)


def _release(region) -> None:
    """Give back a region's hold on its segment file (a plain FileRegion holds nothing)."""
    release = getattr(region, "release", None)
    if release is not None:
        release()


def _read_region(region, skip: int = 0) -> bytes:
    """Bytes of a file region after its first ``skip`` (the copy path, when sendfile cannot finish)."""
    if skip == 0:
        read_bytes = getattr(region, "read_bytes", None)
        if read_bytes is not None:
            return read_bytes()
    want = region.size - skip
    data = os.pread(region.file.fileno(), want, region.position + skip)
    if len(data) != want:
        raise OSError(f"short read of {region!r}: {len(data)} of {want} bytes at +{skip}")
    return data


def _socket_fd(transport: asyncio.BaseTransport) -> int | None:
    """The descriptor of a plain TCP transport's socket (None for TLS or anything unusual)."""
    if transport.get_extra_info("sslcontext") is not None or not hasattr(os, "sendfile"):
        return None
    sock = transport.get_extra_info("socket")
    try:
        return sock.fileno() if sock is not None else None
    except (OSError, ValueError):
        return None
