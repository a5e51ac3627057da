"""Response bytes out of one connection, in the order given, coalesced and (for file regions) zero-copy.

Responses are queued and written once per pass of the event loop (as Redis writes its replies before
the loop sleeps): a client that pipelines requests (a producer's in-flight batches) gets the answers
to all the frames handled in one pass in one write, and no answer waits for anything but that pass. A
connection flushes before it handles a large request (ANSWER_BEFORE_FRAME_BYTES), so an answer never waits for
the handling of a produced batch behind it. An answer with nothing to be coalesced with is written at once: when
none of the connection's requests waits (frames read later are read in a later pass), or the next is large. A
long poll woken by an append is so answered before the producer's answer, whose append woke it.

A Fetch response's records are file regions. Small ones (a consumer that keeps up) are read with
``pread`` into the response's one write; large ones go with ``sendfile`` while the socket takes them,
and whatever it does not take is read and queued behind the bytes before it, REGION_CHUNK at a time
with a wait for the client to read in between: a client that does not read holds at most about one
chunk (plus the transport's high-water mark) of its response in memory, never the whole fetch. Records
read from remote storage are in memory: large ones are their own part and their own write (no join).
"""

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Awaitable, Callable, Sequence, Sized

from wire import FileRegion, Writer, encode_response_header, frame

# File regions smaller than this are copied into the response's one write rather than sent with sendfile:
# for a few hundred bytes (a consumer that keeps up) a copy costs less than a second syscall and segment.
COPY_REGIONS_BELOW = 16384
# sendfile errors that mean "not for this socket", after which the connection copies instead.
# The most of a file region read into memory at once when sendfile cannot send it (see the docstring).
REGION_CHUNK = 1 << 20
# Queued bytes at least this large (records of a remote read) are handed to the transport on their own, not
# joined with the rest: the socket takes them without a copy when it can.
WRITE_ALONE = 65536
# Answers queued in this event-loop pass are written before a request larger than this is handled: its
# handling (a produced batch's validation and append) takes long enough that the client, which can only
# have a few requests in flight (a producer's max.in.flight.requests.per.connection), would otherwise wait
# idle for answers that are ready. Smaller pipelined requests keep their answers in one write per pass.
ANSWER_BEFORE_FRAME_BYTES = 4096
_IN_MEMORY = (bytes, bytearray, memoryview)
_SENDFILE_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSOCK}


class ResponseWriter:
    """Writes one connection's responses to its transport.

    ``sock_fd`` is the plain socket's descriptor for ``sendfile`` (None on TLS, where bytes must go
    through the transport). ``on_peer_gone`` is called when the client went away mid-sendfile.
    ``last_write`` is the loop time of the last write, for connections.max.idle.ms. ``waiting`` holds the
    connection's requests not handled yet: while the next is a small one, answers wait for the end of the pass.
    """

    __slots__ = ("transport", "_sock_fd", "_on_peer_gone", "_out", "_can_write", "closed", "last_write",
                 "_unsent", "_loop", "_flush_handle", "_waiting")

    def __init__(self, transport: asyncio.Transport, sock_fd: int | None, on_peer_gone: Callable[[], None],
                 waiting: Sequence[Sized] = ()) -> None:
        self.transport = transport
        self._sock_fd = sock_fd
        self._on_peer_gone = on_peer_gone
        self._out: list[bytes | bytearray | memoryview] = []  # bytes not yet handed to the transport
        self._can_write = asyncio.Event()
        self._can_write.set()
        self.closed = False
        self.last_write = 0.0
        self._unsent = 0  # the transport's buffered bytes when last looked at, while blocked
        self._loop = asyncio.get_running_loop()  # kept: each get_running_loop() costs a getpid() syscall
        self._flush_handle: asyncio.Handle | None = None  # the end-of-pass flush, while parts are queued
        self._waiting = waiting

    # -- flow control, from the protocol -------------------------------------------------------------
    def pause_writing(self) -> None:
        self._can_write.clear()
        self._unsent = self.transport.get_write_buffer_size()

    def check_progress(self, now: float) -> None:
        """While blocked: count the client taking any of the buffered bytes as a write (idle time)."""
        unsent = self.transport.get_write_buffer_size()
        if unsent < self._unsent:
            self.last_write = now
        self._unsent = unsent

    def resume_writing(self) -> None:
        self._can_write.set()

    @property
    def blocked(self) -> bool:
        """True while the transport's buffer is over its high-water mark (the client is not reading)."""
        return not self._can_write.is_set()

    def send(self, response, correlation_id: int, version: int, header_version: int) -> Awaitable[object] | None:
        """Encode and queue a response. None when that is all; else what to await: the rest of a response with file
        regions (sent as the socket takes them), or the transport taking more (backpressure). The usual answer
        (bytes, a socket that keeps up) costs no coroutine.

        Written now (after what is queued) rather than at the end of the loop pass when it has nothing to be
        coalesced with (see the module docstring): no call_soon hop to the end of the pass, nor its cancellation.
        """
        if self.closed:
            return None
        w = Writer()
        encode_response_header(w, correlation_id, header_version)
        response.encode_into(w, version)
        parts = w.parts()
        if len(parts) > 1:
            # Small file regions become their bytes (each released); all small: one part, written as one.
            joined = True
            for i, part in enumerate(parts):
                if not isinstance(part, _IN_MEMORY):
                    if part.size >= COPY_REGIONS_BELOW:
                        joined = False
                        continue
                    region = part
                    try:
                        parts[i] = part = region.read_bytes()
                    finally:
                        region.release()
                if joined and len(part) >= WRITE_ALONE:
                    joined = False
            if joined:
                parts = [b"".join(parts)]  # type: ignore[arg-type]  # every part is bytes now
        if len(parts) == 1:  # no file regions: queued, written with whatever else this loop pass answers
            body = parts[0]
            data = frame(len(body)) + body  # type: ignore[arg-type,operator]  # bytes: regions make more parts
            waiting = self._waiting
            if not waiting or len(waiting[0]) > ANSWER_BEFORE_FRAME_BYTES:
                self._out.append(data)
                self.flush()
            else:
                self.write(data)
            return None if self._can_write.is_set() else self._can_write.wait()
        self.write(frame(len(w)))
        return self._send_parts(parts)

    async def _send_parts(self, parts: list) -> None:
        """The parts of a response with file regions, after its size: regions with sendfile, bytes queued."""
        for part in parts:
            if isinstance(part, (bytes, bytearray, memoryview)):
                self.write(part)
            else:
                try:
                    self.flush()  # everything before the region goes first
                    await self._write_region(part)
                finally:
                    _release(part)
        self.flush()  # the bytes after the records (a few) go now: the client cannot use the response without them
        if not self._can_write.is_set():
            await self._can_write.wait()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Queue ``data`` for the socket; the first queued part schedules one flush for this loop pass."""
        if not self._out:
            self._flush_handle = self._loop.call_soon(self.flush)
        self._out.append(data)

    def flush(self) -> None:
        """Hand every queued part to the transport in one write, in the order queued."""
        out = self._out
        if not out:
            return
        self._out = []
        if self._flush_handle is not None:  # flushed before the end of the pass: nothing left for it
            self._flush_handle.cancel()
            self._flush_handle = None
        if self.closed or self.transport.is_closing():
            return
        self.last_write = self._loop.time()
        if len(out) == 1:
            self.transport.write(out[0])
            return
        run: list[bytes | bytearray | memoryview] = []
        for data in out:  # small parts joined into one write; large ones (remote records) written as they are
            if len(data) >= WRITE_ALONE:
                if run:
                    self.transport.write(b"".join(run))
                    run = []
                self.transport.write(data)
            else:
                run.append(data)
        if run:
            self.transport.write(b"".join(run))

    def close(self) -> None:
        """Flush what is queued (answers already given still go out), then write nothing more."""
        self.flush()
        self.closed = True
        self._can_write.set()

    async def _write_region(self, region) -> None:
        """Send a file region with ``sendfile`` (no copy through Python) while the socket takes it.

        Only when nothing is queued in the transport, so bytes cannot overtake earlier writes; whatever
        the socket does not take (or everything, when sendfile is unavailable) is read and queued through
        the transport, which never blocks the event loop, a chunk at a time while the client reads.
        """
        sent = 0
        while sent < region.size and not self.closed:
            if self._sock_fd is not None and self.transport.get_write_buffer_size() == 0:
                sent = self._sendfile(region, sent)
                if sent < 0:
                    return  # the client went away
            if sent < region.size:
                n = min(region.size - sent, REGION_CHUNK)
                self.transport.write(_read_region(region, sent, n))
                sent += n
                if not self._can_write.is_set():
                    await self._can_write.wait()

    def _sendfile(self, region, sent: int) -> int:
        """``sendfile`` from ``sent`` until the socket would block; the new ``sent``, -1 if the peer is gone."""
        start = sent
        assert self._sock_fd is not None  # sendfile is only chosen for a plain socket
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
            self._on_peer_gone()  # connection_lost follows
            return -1
        except OSError as exc:
            if sent == start and exc.errno in _SENDFILE_UNSUPPORTED:
                self._sock_fd = None  # e.g. a socket type sendfile refuses: copy from now on
            else:
                raise
        if sent > start:
            self.last_write = self._loop.time()
        return sent


def _release(region: FileRegion) -> None:
    """Give back a region's hold on its segment file, once sent or copied."""
    region.release()


def _read_region(region, skip: int = 0, want: int | None = None) -> bytes:
    """``want`` bytes (default: the rest) of a file region after its first ``skip`` (the copy path)."""
    if want is None:
        want = region.size - skip
    if skip == 0 and want == region.size:
        return region.read_bytes()
    data = os.pread(region.file.fileno(), want, region.position + skip)
    if len(data) != want:
        raise OSError(f"short read of {region!r}: {len(data)} of {want} bytes at +{skip}")
    return data


def socket_fd(transport: asyncio.BaseTransport) -> int | None:
    """The descriptor of a plain TCP transport's socket (None for TLS or anything unusual)."""
    if transport.get_extra_info("sslcontext") is not None or not hasattr(os, "sendfile"):
        return None
    sock = transport.get_extra_info("socket")
    try:
        return sock.fileno() if sock is not None else None
    except (OSError, ValueError):
        return None
