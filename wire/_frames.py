"""Incremental frame reader: 4-byte big-endian size prefix, then that many bytes.

Two ways in, one state machine: ``feed(data)`` copies bytes in (sans-IO use, tests), while
``get_buffer()``/``buffer_updated(n)`` let a socket read straight into the reader (asyncio's
BufferedProtocol). Small frames are assembled in a small scratch buffer and copied out; a large frame
gets a buffer of its own as soon as its size is known and the socket reads its body straight into it,
so a produced batch is copied once from the kernel and once more into the page cache, nothing else.

An optional ``allocate(size)`` hook (a memory pool) is asked before each frame's bytes are taken: a
small frame when it is complete, a large one before its buffer exists. When it says no, ``next_frame``
returns None with ``waiting_for_memory`` set, nothing allocated; the caller stops reading and calls
``next_frame`` again once memory is released. ``held_bytes`` is what was allocated and not yet returned.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable

_SIZE = struct.Struct(">i")

# Kafka's default socket.request.max.bytes (100 MiB): a frame above it is refused before it is buffered.
DEFAULT_MAX_FRAME_SIZE = 104_857_600
# Frames up to this size are assembled in the scratch buffer; larger ones get a buffer of their own.
SMALL_FRAME_SIZE = 4096
# The scratch buffer: room for a few small frames per read without holding much per idle connection.
SCRATCH_SIZE = 16384
# Scratch buffers given back by connections with nothing left to read, taken by the next read of any connection:
# a request read into a buffer used before rather than a new one zeroed (16 KiB written, and half of a core's L1 data
# cache with it, for every request of a client that waits between requests). Never more than this many kept.
SCRATCH_POOL_SIZE = 8
_SCRATCH_POOL: list[bytearray] = []
# After a large frame of at most this size, the connection's next read goes to a buffer of its own (read ahead) with
# room for a frame an eighth larger: a producer's next batch comes in one read, not copied out of the scratch buffer.
READ_AHEAD_MAX = 128 * 1024


class FrameError(ValueError):
    """The stream cannot be framed (negative or oversized length): the connection must be closed."""


class FrameReader:
    """Bytes in, whole frames out; ``next_frame`` returns None when more data is needed.

    Frames come out as ``bytes``, or for a frame larger than SMALL_FRAME_SIZE as a writable buffer of its own
    (a ``bytearray``, or a ``memoryview`` of a buffer read ahead) which the caller may keep and modify.

    Read ahead (no ``allocate`` hook): between frames, after a large one of at most READ_AHEAD_MAX bytes, the next
    read goes to a buffer of its own with room for the size prefix and a frame an eighth larger. A large frame that
    fits is read there, whole or in parts, and comes out as a view of it; anything else read there (a small frame,
    one larger than the room, the start of the next frames) is copied to the scratch buffer, as if read there, and
    a small frame ends the reading ahead.
    """

    __slots__ = ("_scratch", "_pos", "_end", "_body", "_body_filled", "_ready", "max_frame_size", "allocate",
                 "waiting_for_memory", "_ahead", "_ahead_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
                 allocate: Callable[[int], bool] | None = None) -> None:
        self._scratch = bytearray()  # allocated on first read
        self._pos = 0  # unread bytes of the scratch buffer: [_pos, _end)
        self._end = 0
        self._body: bytearray | memoryview | None = None  # the large frame being read, after its size prefix
        self._body_filled = 0
        self._ready: deque[bytearray | memoryview] = deque()  # large frames read whole, not yet taken (in order)
        self.max_frame_size = max_frame_size
        self.allocate = allocate
        self.waiting_for_memory = False
        self._ahead: bytearray | None = None  # the buffer read ahead into, until bytes are read there
        self._ahead_size = 0  # the size of the next one (0: no reading ahead)

    # -- BufferedProtocol side -----------------------------------------------------------------------
    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next bytes go (never empty): the rest of a large frame's body, else free scratch. ``sizehint``
        (asyncio's BufferedProtocol.get_buffer argument, so a protocol can hand this method to its transport) is
        not used: the frame being read decides."""
        if self._body is not None:
            return memoryview(self._body)[self._body_filled:]
        scratch = self._scratch
        if self._pos == self._end:  # nothing unread (between requests): the whole scratch buffer
            if self._ahead_size:  # or after a large frame, one of its own (kept when a read found nothing)
                ahead = self._ahead
                if ahead is None:
                    ahead = self._ahead = bytearray(self._ahead_size)
                return memoryview(ahead)
            self._pos = self._end = 0
            if not scratch:  # released when the last frame was taken: one from the pool, else a new one
                scratch = self._scratch = _SCRATCH_POOL.pop() if _SCRATCH_POOL else bytearray(SCRATCH_SIZE)
            return memoryview(scratch)
        if len(scratch) - self._end < SMALL_FRAME_SIZE + 4:
            unread = self._end - self._pos
            if len(scratch) - unread < SMALL_FRAME_SIZE + 4:  # first use, or bytes fed without taking frames
                # A new buffer rather than a resize: a view handed out earlier may still be alive.
                size = max(SCRATCH_SIZE, unread + SMALL_FRAME_SIZE + 4)
                grown = _SCRATCH_POOL.pop() if size == SCRATCH_SIZE and _SCRATCH_POOL else bytearray(size)
                grown[:unread] = scratch[self._pos:self._end]
                self._scratch = scratch = grown
            elif self._pos:  # move the unread bytes (at most one partial small frame) to the front
                scratch[:unread] = scratch[self._pos:self._end]
            self._pos, self._end = 0, unread
        return memoryview(scratch)[self._end:]

    def buffer_updated(self, n: int) -> bool:
        """``n`` bytes were written at the start of the last ``get_buffer()``. False when no frame can have been
        completed by them (they went to a large frame's body, which is not whole yet): ``next_frame`` would say
        None, and the caller need not ask."""
        ahead = self._ahead
        if ahead is not None:
            self._ahead = None
            return self._read_ahead(ahead, n)
        body = self._body
        if body is None:
            self._end += n
            return True
        self._body_filled += n
        if self._body_filled == len(body):
            self._ready.append(body)
            self._body, self._body_filled = None, 0
            return True
        return False

    def _read_ahead(self, ahead: bytearray, n: int) -> bool:
        """``n`` bytes were read into ``ahead`` (see the class docstring); as ``buffer_updated``."""
        view = memoryview(ahead)
        if n >= 4:
            size = _SIZE.unpack_from(ahead)[0]
            if SMALL_FRAME_SIZE < size <= self.max_frame_size and size + 4 <= len(ahead):
                body = view[4:4 + size]
                if n - 4 < size:
                    self._body, self._body_filled = body, n - 4
                    return False
                self._ready.append(body)
                if n - 4 == size:
                    return True
                rest = view[4 + size:n]  # the start of the frames after it
            else:
                if size <= SMALL_FRAME_SIZE:
                    self._ahead_size = 0  # (one larger than the room sets the next room: _start_large_frame)
                rest = view[:n]
        else:
            rest = view[:n]
        # To the scratch buffer, which has nothing unread (reads go ahead only then).
        k = len(rest)
        scratch = self._scratch
        if len(scratch) < k:
            scratch = self._scratch = _SCRATCH_POOL.pop() if k <= SCRATCH_SIZE and _SCRATCH_POOL else \
                bytearray(max(SCRATCH_SIZE, k))
        scratch[:k] = rest
        self._pos, self._end = 0, k
        return True

    # -- sans-IO side --------------------------------------------------------------------------------
    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Copy ``data`` in (the same path a socket takes through ``get_buffer``)."""
        view = memoryview(data).cast("B")
        while view:
            target = self.get_buffer()
            n = min(len(target), len(view))
            target[:n] = view[:n]
            self.buffer_updated(n)
            view = view[n:]
            if self._body is None and self._end - self._pos >= 4:
                (size,) = _SIZE.unpack_from(self._scratch, self._pos)
                if 0 <= size <= self.max_frame_size:  # else next_frame raises FrameError
                    self._start_large_frame(size)  # so a large body's bytes go to its own buffer

    @property
    def buffered(self) -> int:
        return self._end - self._pos + self._body_filled + sum(len(f) for f in self._ready)

    def held_bytes(self) -> int:
        """Bytes allocated through ``allocate`` and not yet returned by ``next_frame``."""
        return (len(self._body) if self._body is not None else 0) + sum(len(f) for f in self._ready)

    def next_frame(self) -> bytes | bytearray | memoryview | None:
        """The next complete frame body, or None. Raises FrameError on an impossible size."""
        if self._ready:
            return self._ready.popleft()
        if self._body is not None:
            return None
        pos, end = self._pos, self._end
        if end - pos < 4:
            return None
        size = self._checked_size()
        if end - pos - 4 >= size:
            if self.allocate is not None:
                self.waiting_for_memory = not self.allocate(size)
                if self.waiting_for_memory:
                    return None
            with memoryview(self._scratch) as view:
                frame = bytes(view[pos + 4:pos + 4 + size])  # a small copy out of the scratch buffer
            self._pos = pos + 4 + size
            return frame
        self._start_large_frame(size)
        return None

    def release_scratch(self) -> None:
        """Drop the scratch buffer when nothing in it is unread, so an idle connection holds none (the next
        read allocates it again)."""
        scratch = self._scratch
        if self._pos == self._end and scratch:
            if len(scratch) == SCRATCH_SIZE and len(_SCRATCH_POOL) < SCRATCH_POOL_SIZE:
                _SCRATCH_POOL.append(scratch)
            self._scratch = bytearray()
            self._pos = self._end = 0

    def _checked_size(self) -> int:
        (size,) = _SIZE.unpack_from(self._scratch, self._pos)
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > self.max_frame_size:
            raise FrameError(f"frame of {size} bytes exceeds the limit of {self.max_frame_size} (socket.request.max.bytes)")
        return size

    def _start_large_frame(self, size: int) -> None:
        """If the frame at the read position (of ``size`` bytes) is large and incomplete, move it to a
        buffer of its own."""
        pos, end = self._pos, self._end
        have = end - pos - 4
        if size <= SMALL_FRAME_SIZE or have >= size:
            return
        if self.allocate is not None:
            self.waiting_for_memory = not self.allocate(size)
            if self.waiting_for_memory:
                return
        body = bytearray(size)
        with memoryview(self._scratch) as view:  # copied once (a bytearray slice would copy it twice)
            body[:have] = view[pos + 4:end]
        self._body, self._body_filled = body, have
        self._pos = self._end = 0
        if self.allocate is None:  # the next frame is read ahead (see the class docstring)
            self._ahead_size = size + (size >> 3) + 4 if size <= READ_AHEAD_MAX else 0


def frame(parts_size: int) -> bytes:
    """The 4-byte size prefix for a frame of ``parts_size`` bytes."""
    return _SIZE.pack(parts_size)
