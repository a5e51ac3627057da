"""Protocol primitives: fixed-width ints, varints, (compact) strings, bytes, arrays, UUIDs, tagged fields.

``Reader`` decodes from a buffer and raises ``DecodeError`` on anything malformed (never a bare
``struct.error`` or ``IndexError``). ``Writer`` appends to a bytearray; record fields that live in
files (``FileRegion``) are kept as separate parts so the server can send them without copying.
"""

from __future__ import annotations

import builtins
import struct
import uuid
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

__all__ = ["DecodeError", "FileRegion", "Reader", "Writer", "ZERO_UUID", "RecordsLike",
           "decode_usual_or_generated"]

T = TypeVar("T")

ZERO_UUID = uuid.UUID(int=0)
# UUIDs decoded so far by their 16 bytes (immutable values, shared): at most _UUIDS_KEPT, then no more are kept.
_UUIDS: dict[bytes, uuid.UUID] = {}
_UUIDS_KEPT = 10_000

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
# In-memory record sets at least this large are kept as their own part of a Writer (as file regions are): the
# response goes out without copying them into the buffer (see pykbroker/response_writer.py).
KEEP_RECORDS_APART = 65536
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

# A single array or string longer than this in a request is garbage, not data: it bounds the memory a
# hostile length prefix can make us reserve before the frame-size check has a chance to matter.
MAX_COLLECTION_LENGTH = 1 << 28
# Kafka 4.4's MessageUtil limits on what its generated readers accept: an array of more elements, or a
# tagged-field section of more fields, is a malformed message however many bytes follow.
MAX_ARRAY_LENGTH = 1_000_000
MAX_TAGGED_FIELD_COUNT = 10_000


class DecodeError(ValueError):
    """The bytes do not form a valid message of the expected type and version."""


class FileRegion(Protocol):
    """Records that live outside Python memory: ``size`` bytes at ``position`` of ``file`` (it has
    ``fileno()``), kept by ``Writer`` as a part of its own and sent without a copy where the transport allows.

    Storage makes them (``storage.FileRegion``) and owns their lifetime: a region holds its segment file open
    until ``release()``, which whoever ends up with it (the response writer once sent or copied, or the code
    that drops it) calls exactly once.
    """

    file: Any
    position: int
    size: int

    def read_bytes(self) -> bytes: ...

    def release(self) -> None: ...


RecordsLike = FileRegion  # what a records field may hold besides bytes


class Reader:
    """Cursor over a bytes-like buffer. ``pos`` is the next byte to read."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.buf = memoryview(buf) if not isinstance(buf, memoryview) else buf
        self.pos = pos
        self.end = len(self.buf) if end is None else end

    def remaining(self) -> int:
        return self.end - self.pos

    def _take(self, n: int) -> int:
        pos = self.pos
        if n < 0 or pos + n > self.end:
            raise DecodeError(f"need {n} bytes at offset {pos}, have {self.end - pos}")
        self.pos = pos + n
        return pos

    def int8(self) -> int:
        return _I8.unpack_from(self.buf, self._take(1))[0]

    def bool(self) -> bool:
        return self.buf[self._take(1)] != 0

    def int16(self) -> int:
        pos = self.pos  # _take inlined in the fixed-size reads every request header and body makes
        if pos + 2 > self.end:
            self._take(2)  # raises
        self.pos = pos + 2
        return _I16.unpack_from(self.buf, pos)[0]

    def uint16(self) -> int:
        return _U16.unpack_from(self.buf, self._take(2))[0]

    def int32(self) -> int:
        pos = self.pos
        if pos + 4 > self.end:
            self._take(4)  # raises
        self.pos = pos + 4
        return _I32.unpack_from(self.buf, pos)[0]

    def uint32(self) -> int:
        return _U32.unpack_from(self.buf, self._take(4))[0]

    def int64(self) -> int:
        return _I64.unpack_from(self.buf, self._take(8))[0]

    def float64(self) -> float:
        return _F64.unpack_from(self.buf, self._take(8))[0]

    def uuid(self) -> uuid.UUID:
        return uuid_at(self.buf, self._take(16))

    def uvarint(self) -> int:
        """Unsigned LEB128 varint (at most 5 bytes, as Kafka's ``readUnsignedVarint``)."""
        buf, pos, end = self.buf, self.pos, self.end
        if pos + 2 < end:  # three bytes there: up to three read inline (a produced batch's length takes three)
            b = buf[pos]
            if b < 0x80:  # one byte: most lengths and tag counts
                self.pos = pos + 1
                return b
            c = buf[pos + 1]
            if c < 0x80:
                self.pos = pos + 2
                return (b & 0x7F) | (c << 7)
            d = buf[pos + 2]
            if d < 0x80:
                self.pos = pos + 3
                return (b & 0x7F) | ((c & 0x7F) << 7) | (d << 14)
        elif pos < end and (b := buf[pos]) < 0x80:
            self.pos = pos + 1
            return b
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise DecodeError("truncated varint")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return result
            shift += 7
            if shift > 28:
                raise DecodeError("varint is longer than 5 bytes")

    def varint(self) -> int:
        """Signed zig-zag varint."""
        v = self.uvarint()
        return (v >> 1) ^ -(v & 1)

    def uvarlong(self) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        result = 0
        shift = 0
        while True:
            if pos >= end:
                raise DecodeError("truncated varlong")
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                self.pos = pos
                return result
            shift += 7
            if shift > 63:
                raise DecodeError("varlong is longer than 10 bytes")

    def varlong(self) -> int:
        v = self.uvarlong()
        return (v >> 1) ^ -(v & 1)

    # -- lengths -------------------------------------------------------------------------------------
    def _length(self, n: int) -> int:
        if n > MAX_COLLECTION_LENGTH or n > self.end - self.pos:
            raise DecodeError(f"length {n} exceeds the {self.end - self.pos} bytes left")
        return n

    def _raw(self, n: int) -> bytes:
        pos = self._take(n)
        return bytes(self.buf[pos : pos + n])

    def _text(self, n: int) -> str:
        try:
            return self._raw(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"invalid UTF-8 in string: {exc}") from None

    # -- strings -------------------------------------------------------------------------------------
    def string(self) -> str:
        n = self.int16()
        if n < 0:
            raise DecodeError("null where a non-nullable string is required")
        return self._text(self._length(n))

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        return self._text(self._length(n))

    def compact_string(self) -> str:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError("null where a non-nullable string is required")
        return self._text(self._length(n))

    def compact_nullable_string(self) -> str | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        return self._text(self._length(n))

    # -- bytes ---------------------------------------------------------------------------------------
    def bytes(self) -> bytes:
        n = self.int32()
        if n < 0:
            raise DecodeError("null where non-nullable bytes are required")
        return self._raw(self._length(n))

    def nullable_bytes(self) -> builtins.bytes | None:
        n = self.int32()
        if n < 0:
            return None
        return self._raw(self._length(n))

    def compact_bytes(self) -> builtins.bytes:
        n = self.uvarint() - 1
        if n < 0:
            raise DecodeError("null where non-nullable bytes are required")
        return self._raw(self._length(n))

    def compact_nullable_bytes(self) -> builtins.bytes | None:
        n = self.uvarint() - 1
        if n < 0:
            return None
        return self._raw(self._length(n))

    def records(self, flexible: builtins.bool) -> memoryview | None:
        """A record set: a view into the request buffer (no copy), or None."""
        n = (self.uvarint() - 1) if flexible else self.int32()
        if n < 0:
            return None
        pos = self._take(self._length(n))
        return self.buf[pos : pos + n]

    # -- arrays --------------------------------------------------------------------------------------
    def array_length(self, flexible: builtins.bool) -> int:
        """Element count of an array; -1 for null."""
        n = (self.uvarint() - 1) if flexible else self.int32()
        if n < -1:
            raise DecodeError(f"invalid array length {n}")
        if n > self.end - self.pos:
            # Every element takes at least one byte, so a count beyond the bytes left is garbage.
            raise DecodeError(f"array length {n} exceeds the {self.end - self.pos} bytes left")
        if n > MAX_ARRAY_LENGTH:
            raise DecodeError(f"array length {n} exceeds the maximum of {MAX_ARRAY_LENGTH} elements")
        return n

    # -- tagged fields -------------------------------------------------------------------------------
    def tagged_fields(self) -> dict[int, memoryview]:
        """All tagged fields of a struct as raw views keyed by tag (callers decode the ones they know)."""
        pos = self.pos
        if pos < self.end and self.buf[pos] == 0:  # none: what nearly every struct has
            self.pos = pos + 1
            return _NO_TAGS
        count = self.uvarint()
        if count == 0:
            return _NO_TAGS
        if count > MAX_TAGGED_FIELD_COUNT:
            raise DecodeError(f"{count} tagged fields exceed the maximum of {MAX_TAGGED_FIELD_COUNT}")
        fields: dict[int, memoryview] = {}
        last = -1
        for _ in range(count):
            tag = self.uvarint()
            if tag <= last:
                raise DecodeError(f"tagged field {tag} out of order")
            last = tag
            size = self._length(self.uvarint())
            pos = self._take(size)
            fields[tag] = self.buf[pos : pos + size]
        return fields


_NO_TAGS: dict[int, memoryview] = {}


def uuid_at(buf: bytes | bytearray | memoryview, pos: int) -> uuid.UUID:
    """The UUID of the 16 bytes at ``pos`` (DecodeError when fewer are left): what Reader.uuid reads, for the inline
    decoders, which read in place."""
    raw = bytes(buf[pos:pos + 16])
    value = _UUIDS.get(raw)
    if value is None:  # uuid.UUID() is slow Python; the same few topic ids come in every request
        if len(raw) != 16:
            raise DecodeError(f"need 16 bytes at offset {pos}, have {len(raw)}")
        value = uuid.UUID(bytes=raw)
        if len(_UUIDS) < _UUIDS_KEPT:
            _UUIDS[raw] = value
    return value


def decode_usual_or_generated(r: Reader, version: int, since: int,
                              usual: Callable[[Reader, int], T | None], generated: Callable[[Reader, int], T]) -> T:
    """A request read by ``usual`` (an inline reader of its usual shape, for ``version`` >= ``since``), else by
    ``generated`` from where ``r`` started: when ``usual`` answers None or its bytes do not decode, so the request
    and its DecodeErrors are always the generated codec's."""
    if version >= since:
        start = r.pos
        try:
            request = usual(r, version)
        except (IndexError, UnicodeDecodeError, DecodeError, struct.error):  # the generated codec is to tell
            request = None
        if request is not None:
            return request
        r.pos = start
    return generated(r, version)


def append_uvarint(out: bytearray, value: int) -> None:
    """Append ``value`` (non-negative) as an unsigned LEB128 varint: the protocol's and the records' encoding."""
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    append_uvarint(out, value)
    return bytes(out)


_SMALL_UVARINTS = [_uvarint_bytes(i) for i in range(128)]


class Writer:
    """Appends encoded primitives to a bytearray; file-backed records become separate parts."""

    __slots__ = ("buf", "_parts", "_parts_size")

    def __init__(self) -> None:
        self.buf = bytearray()
        self._parts: list[bytes | bytearray | memoryview | RecordsLike] = []
        self._parts_size = 0

    def __len__(self) -> int:
        return self._parts_size + len(self.buf)

    def parts(self) -> list[bytes | bytearray | memoryview | RecordsLike]:
        """Everything written, in order: byte strings and out-of-memory record regions."""
        if not self._parts:
            return [self.buf]
        return [*self._parts, self.buf] if self.buf else list(self._parts)

    def getvalue(self) -> bytes:
        """All bytes written; only valid when no file-backed records were written."""
        if self._parts:
            if not all(isinstance(p, (bytes, bytearray, memoryview)) for p in self._parts):
                raise TypeError("writer holds file regions; use parts()")
            return b"".join([*cast(list[bytes], self._parts), self.buf])
        return bytes(self.buf)

    def int8(self, v: int) -> None:
        self.buf += _I8.pack(v)

    def bool(self, v: bool) -> None:
        self.buf.append(1 if v else 0)

    def int16(self, v: int) -> None:
        self.buf += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.buf += _U16.pack(v)

    def int32(self, v: int) -> None:
        self.buf += _I32.pack(v)

    def uint32(self, v: int) -> None:
        self.buf += _U32.pack(v)

    def int64(self, v: int) -> None:
        self.buf += _I64.pack(v)

    def float64(self, v: float) -> None:
        self.buf += _F64.pack(v)

    def uuid(self, v: uuid.UUID) -> None:
        self.buf += v.bytes

    def uvarint(self, v: int) -> None:
        if 0 <= v < 128:
            self.buf += _SMALL_UVARINTS[v]
        else:
            self.buf += _uvarint_bytes(v & 0xFFFFFFFFFFFFFFFF)

    def varint(self, v: int) -> None:
        self.uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def varlong(self, v: int) -> None:
        self.uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def string(self, v: str) -> None:
        data = v.encode("utf-8")
        self.buf += _I16.pack(len(data))
        self.buf += data

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.buf += b"\xff\xff"
        else:
            self.string(v)

    def compact_string(self, v: str) -> None:
        data = v.encode("utf-8")
        self.uvarint(len(data) + 1)
        self.buf += data

    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.buf.append(0)
        else:
            self.compact_string(v)

    def bytes(self, v: bytes | bytearray | memoryview) -> None:
        self.buf += _I32.pack(len(v))
        self.buf += v

    def nullable_bytes(self, v: builtins.bytes | bytearray | memoryview | None) -> None:
        if v is None:
            self.buf += b"\xff\xff\xff\xff"
        else:
            self.bytes(v)

    def compact_bytes(self, v: builtins.bytes | bytearray | memoryview) -> None:
        self.uvarint(len(v) + 1)
        self.buf += v

    def compact_nullable_bytes(self, v: builtins.bytes | bytearray | memoryview | None) -> None:
        if v is None:
            self.buf.append(0)
        else:
            self.compact_bytes(v)

    def records(self, v: builtins.bytes | bytearray | memoryview | RecordsLike | None, flexible: builtins.bool) -> None:
        """A record set; a file region is kept as its own part (sent later without a copy)."""
        if v is None:
            if flexible:
                self.buf.append(0)
            else:
                self.buf += b"\xff\xff\xff\xff"
            return
        if isinstance(v, (bytes, bytearray, memoryview)):
            if len(v) < KEEP_RECORDS_APART:
                if flexible:
                    self.compact_bytes(v)
                else:
                    self.bytes(v)
                return
            size = len(v)  # large in-memory records (remote reads): their own part, not copied into the buffer
        else:
            size = v.size
        if flexible:
            self.uvarint(size + 1)
        else:
            self.buf += _I32.pack(size)
        if size:
            self._parts.append(self.buf)
            self._parts.append(v)
            self._parts_size += len(self.buf) + size
            self.buf = bytearray()

    def array_length(self, n: int | None, flexible: builtins.bool) -> None:
        if flexible:
            self.uvarint(0 if n is None else n + 1)
        else:
            self.buf += _I32.pack(-1 if n is None else n)

    def tagged_fields(self, fields: list[tuple[int, builtins.bytes]]) -> None:
        """Write a tagged-field section: ``fields`` must be sorted by tag."""
        self.uvarint(len(fields))
        for tag, data in fields:
            self.uvarint(tag)
            self.uvarint(len(data))
            self.buf += data

    def empty_tagged_fields(self) -> None:
        self.buf.append(0)
