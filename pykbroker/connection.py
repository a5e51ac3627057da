"""One client connection: the socket's callbacks, its identity (TLS/SASL), and its request loop.

Kafka processes a connection's requests strictly in order (the next request is read only after the
previous response is queued); we do the same, so responses can never be reordered. Frames that arrive
meanwhile are buffered, and reading pauses when too many wait. Bad input closes only this connection.
A connection works through its buffered frames for at most TURN_SECONDS of one event-loop pass, then lets the
loop run (Kafka's network threads serve their connections in turn, one request each): other connections' reads
and answers, and the long polls its appends woke, do not wait behind a pipelining producer's whole backlog.

Reading is paused (the channel muted, in Kafka's words) for any of these reasons, and resumes when none
is left: too many of this connection's frames wait (``backlog``); the broker-wide request queue is full
(``queue``, queued.max.requests); the next frame does not fit in the request memory pool (``memory``,
queued.max.request.bytes); the client does not read its responses (``response``).

The jobs around it are objects of their own: ConnectionQuotas (pykbroker.connection_quotas) admits the
connection, a Dispatcher (pykbroker.dispatch) runs each request through its handler, and a
ResponseWriter (pykbroker.response_writer) writes the answers in order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, cast

from wire import FrameError, FrameReader, frame

if TYPE_CHECKING:
    from pykbroker.broker import Broker
    from pykbroker.config import Listener
    from pykbroker.connection_quotas import ConnectionQuotas
    from pykbroker.request_channel import RequestChannel
    from pykbroker.security.listeners import ListenerSecurity
    from pykbroker.security.sasl_authenticator import SaslServerAuthenticator

from pykbroker.context import ANONYMOUS
from pykbroker.dispatch import CloseConnection, Dispatcher
from pykbroker.response_writer import ResponseWriter, socket_fd

__all__ = ["Connection", "CloseConnection", "MAX_PENDING_FRAMES"]

log = logging.getLogger("pykbroker.connection")

# Frames buffered beyond this pause reading from the socket until the backlog drains.
MAX_PENDING_FRAMES = 64
# Answers queued in this event-loop pass are written before a request larger than this is handled: its
# handling (a produced batch's validation and append) takes long enough that the client, which can only
# have a few requests in flight (a producer's max.in.flight.requests.per.connection), would otherwise wait
# idle for answers that are ready. Smaller pipelined requests keep their answers in one write per pass.
ANSWER_BEFORE_FRAME_BYTES = 4096
# How long a connection handles its buffered frames before it lets the event loop run once. A librdkafka producer
# pipelines hundreds of one-record requests (max.in.flight 1,000,000); handled in one pass, a consumer reading the
# same partitions got its records ~70 at a time from each partition (the frames of one pass) where Kafka 4.4 gives
# 1-9, and confluent-kafka-javascript's diffConcurrencyPartitions test, whose cache then held one partition's
# records only, never reached its concurrency. Cheap requests (a few microseconds) still share one pass and one
# write.
TURN_SECONDS = 0.001


class Connection(asyncio.BufferedProtocol):
    """asyncio protocol for one client socket (TLS already done by the transport on SSL listeners).

    A BufferedProtocol: the socket is read straight into the frame reader's buffers, so a large
    request (a produced batch) lands in a buffer of its own without being copied on the way.

    On SASL listeners every frame goes through the connection's SaslServerAuthenticator until it is
    authenticated (pykbroker.security.sasl_authenticator says what Kafka allows when), and frames are
    limited to ``sasl.server.max.receive.size`` until then. ``principal`` is what requests run as.
    """

    def __init__(self, broker: Broker, listener: Listener, security: ListenerSecurity | None,
                 quotas: ConnectionQuotas, channel: RequestChannel, ip: str = "?") -> None:
        self.broker = broker
        self.listener = listener
        self.listener_name = listener.name
        self.security = security
        self.quotas = quotas
        self.channel = channel
        self._pool = channel.memory_pool if channel.memory_pool.bounded else None
        self.principal = ANONYMOUS
        self.authenticator: SaslServerAuthenticator | None = None
        self.frames = FrameReader(broker.config.socket_request_max_bytes,
                                  self._pool.try_allocate if self._pool is not None else None)
        self.pending: deque[bytes | bytearray] = deque()
        self.arrived: deque[float] = deque()  # when each pending frame was read (perf_counter), for metrics
        self.transport: asyncio.Transport | None = None
        self.writer: ResponseWriter | None = None
        self.dispatcher: Dispatcher | None = None
        self.peer = "?"
        self.ip = ip  # the client's address, for max.connections.per.ip
        self._wakeup: asyncio.Future[None] | None = None  # what the request loop awaits while nothing is pending
        self._muted: set[str] = set()  # why reading is paused (see the module docstring)
        self._closed = False
        self._task: asyncio.Task | None = None
        self._loop = asyncio.get_running_loop()  # kept: each get_running_loop() costs a getpid() syscall
        self._last_read = self._loop.time()

    @property
    def last_active(self) -> float:
        """Loop time of the last read or write, for connections.max.idle.ms."""
        writer = self.writer
        return self._last_read if writer is None else max(self._last_read, writer.last_write)

    # -- asyncio.Protocol ----------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not subclasses
        tls = self.security is not None and self.security.ssl_context is not None
        sock_fd = None if tls else socket_fd(transport)  # sendfile would bypass TLS: copy instead
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.writer = ResponseWriter(self.transport, sock_fd, self.close, self.pending)
        self.dispatcher = Dispatcher(self.broker, self.listener, self.peer, self.writer)
        if self.security is not None:
            self._start_security(transport)
        if self.broker.metrics is not None:
            self.broker.metrics.connection_created(self.listener_name)
        self._task = self._loop.create_task(self._serve())

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.frames.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        if self._closed:
            return
        self._last_read = self._loop.time()
        self.frames.buffer_updated(nbytes)
        self._take_frames()

    def _take_frames(self) -> None:
        """Move whole frames to ``pending`` (queued in the request channel); mute what must wait."""
        frames, pending, channel = self.frames, self.pending, self.channel
        try:
            while (f := frames.next_frame()) is not None:
                pending.append(f)
                self.arrived.append(time.perf_counter())
                channel.queued += 1
            frames.release_scratch()  # idle connections hold no read buffer
        except FrameError as exc:
            log.warning("closing connection from %s on listener %s: %s", self.peer, self.listener.name, exc)
            self.close()
            return
        if frames.waiting_for_memory:
            self._mute("memory")
            assert self._pool is not None
            self._pool.wait(self._memory_released)
        if pending:
            self._wake()
            if len(pending) > MAX_PENDING_FRAMES:
                self._mute("backlog")
        if channel.queued >= channel.queued_max_requests and "queue" not in self._muted:
            self._mute("queue")
            channel.wait(self._queue_has_room)

    def _wake(self) -> None:
        """Wake the request loop if it waits for frames (a future of its own: no asyncio.Event look-ups)."""
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    def _memory_released(self) -> None:
        if not self._closed:
            self._unmute("memory")
            self._take_frames()

    def _queue_has_room(self) -> None:
        if not self._closed:
            self._unmute("queue")

    def _mute(self, reason: str) -> None:
        if not self._muted and self.transport is not None and not self._closed:
            self.transport.pause_reading()
        self._muted.add(reason)

    def _unmute(self, reason: str) -> None:
        if reason in self._muted:
            self._muted.discard(reason)
            if not self._muted and self.transport is not None and not self._closed:
                self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self.writer is not None:
            self.writer.closed = True
            self.writer.resume_writing()
        self._wake()
        self.broker.connection_closed(self.peer)  # share sessions of this client end with it
        if self.broker.metrics is not None:
            self.broker.metrics.connection_closed(self.listener_name)
        self.quotas.release(self)
        # Requests never to be handled leave the queue and give their memory back.
        if self.pending:
            if self._pool is not None:
                self._pool.release(sum(len(f) for f in self.pending))
            n = len(self.pending)
            self.pending.clear()
            self.arrived.clear()
            self.channel.dequeue(n)
        if self._pool is not None and (held := self.frames.held_bytes()):
            self._pool.release(held)

    def pause_writing(self) -> None:
        """The client is not reading its responses: read no more requests from it until it does."""
        assert self.writer is not None
        self.writer.pause_writing()
        self._mute("response")

    def resume_writing(self) -> None:
        assert self.writer is not None
        self.writer.resume_writing()
        self._unmute("response")

    # -- identity: TLS and SASL ----------------------------------------------------------------------
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
        assert auth is not None and self.writer is not None and self.dispatcher is not None
        step = auth.receive(data)
        if step.dispatch:
            return True
        delay_ms = self.broker.config["connection.failed.authentication.delay.ms"] if step.delayed else 0
        if delay_ms > 0:  # as Kafka: a failed authentication is answered and closed only after this delay
            await asyncio.sleep(delay_ms / 1000)
        if step.reply is not None and not self._closed:
            self.writer.write(frame(len(step.reply)) + step.reply)
        if step.error_code is not None:
            await self.dispatcher.answer_with_error(data, step.error_code)
        if step.close:
            raise CloseConnection
        if auth.complete:
            self.principal = auth.principal or ANONYMOUS
            self.frames.max_frame_size = self.broker.config.socket_request_max_bytes
        return False

    # -- request loop --------------------------------------------------------------------------------
    def idle_for(self, now: float) -> float | None:
        """Seconds without reads or writes, for connections.max.idle.ms; None while a request is in progress
        (a long poll is not idle), unless the client is not reading its response: that is idle, as in Kafka."""
        writer = self.writer
        if writer is not None and writer.blocked:
            writer.check_progress(now)
            return now - max(self._last_read, writer.last_write)
        if self.busy:
            return None
        return now - self.last_active

    @property
    def busy(self) -> bool:
        """True while a request is being handled or waits to be."""
        return bool(self.pending) or self._handling

    _handling = False

    async def _serve(self) -> None:
        dispatcher = self.dispatcher
        assert dispatcher is not None
        turn_started = time.perf_counter()
        try:
            while not self._closed:
                if not self.pending:
                    self._wakeup = self._loop.create_future()
                    try:
                        await self._wakeup
                    finally:
                        self._wakeup = None
                    turn_started = time.perf_counter()
                    continue
                if time.perf_counter() - turn_started >= TURN_SECONDS:
                    await asyncio.sleep(0)  # the others' turn (TURN_SECONDS); queued answers go out meanwhile
                    turn_started = time.perf_counter()
                    if self._closed or not self.pending:
                        continue  # closed meanwhile (a client gone: connection_lost dropped its pending frames)
                frame_bytes = self.pending.popleft()
                if len(frame_bytes) > ANSWER_BEFORE_FRAME_BYTES and self.writer is not None:
                    self.writer.flush()  # answers queued in this pass go now, not after this request's handling
                arrived = self.arrived.popleft()
                self.channel.dequeue()
                if "backlog" in self._muted and len(self.pending) < MAX_PENDING_FRAMES // 2:
                    self._unmute("backlog")
                self._handling = True
                try:
                    if self.authenticator is None or await self._authenticated(frame_bytes):
                        throttle_ms = await dispatcher.dispatch(
                            frame_bytes, self.principal,
                            self.authenticator is not None and self.authenticator.token_authenticated, arrived)
                        if throttle_ms > 0:  # over its quota: the next request waits (Kafka mutes the channel)
                            await asyncio.sleep(throttle_ms / 1000)
                finally:
                    self._handling = False
                    if self._pool is not None:  # answered: its bytes leave the pool (Kafka's releaseBuffer)
                        self._pool.release(len(frame_bytes))
        except CloseConnection:
            self.close()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("unexpected error on connection from %s; closing it", self.peer)
            self.close()

    async def _authenticated(self, data: bytes | bytearray) -> bool:
        """On a SASL listener: True when ``data`` is to be dispatched as an ordinary request."""
        auth = self.authenticator
        assert auth is not None
        if not auth.complete:
            return await self._authenticate(data)
        if data[:2] == b"\x00\x11" and auth.maybe_begin_reauthentication():  # SaslHandshake
            await self._authenticate(data)
            return False
        if auth.session_expired():
            log.info("closing connection from %s on listener %s: the SASL session of %s expired",
                     self.peer, self.listener.name, self.principal)
            raise CloseConnection
        return True

    def close(self, abort: bool = False) -> None:
        """Close: answers already given still go out (the transport sends them, then closes), unless
        ``abort``, for a client that does not read them: they are dropped and the socket closed at once."""
        if not self._closed:
            if self.writer is not None:
                self.writer.close()
            self._closed = True
            self._wake()
            if self.transport is not None:
                if abort:
                    self.transport.abort()
                else:
                    self.transport.close()
