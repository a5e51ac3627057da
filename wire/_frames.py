"""Incremental frame reader: 4-byte big-endian size prefix, then that many bytes."""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")

# Kafka's default socket.request.max.bytes (100 MiB): a frame above it is refused before it is buffered.
DEFAULT_MAX_FRAME_SIZE = 104_857_600


class FrameError(ValueError):
    """The stream cannot be framed (negative or oversized length): the connection must be closed."""


class FrameReader:
    """Feed bytes in, take whole frames out; ``next_frame`` returns None when more data is needed."""

    __slots__ = ("_buf", "_pos", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._buf = bytearray()
        self._pos = 0  # start of the unread bytes in _buf; consumed bytes are dropped lazily
        self.max_frame_size = max_frame_size

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._pos:
            if self._pos == len(self._buf):
                self._buf.clear()
            else:
                del self._buf[:self._pos]
            self._pos = 0
        self._buf += data

    @property
    def buffered(self) -> int:
        return len(self._buf) - self._pos

    def next_frame(self) -> bytes | None:
        """The next complete frame body, or None. Raises FrameError on an impossible size."""
        buf, pos = self._buf, self._pos
        if len(buf) - pos < 4:
            return None
        (size,) = _SIZE.unpack_from(buf, pos)
        if size < 0:
            raise FrameError(f"negative frame size {size}")
        if size > self.max_frame_size:
            raise FrameError(f"frame of {size} bytes exceeds the limit of {self.max_frame_size} (socket.request.max.bytes)")
        end = pos + 4 + size
        if len(buf) < end:
            return None
        with memoryview(buf) as view:
            frame = bytes(view[pos + 4:end])  # one copy, out of the buffer
        self._pos = end
        return frame


def frame(parts_size: int) -> bytes:
    """The 4-byte size prefix for a frame of ``parts_size`` bytes."""
    return _SIZE.pack(parts_size)
