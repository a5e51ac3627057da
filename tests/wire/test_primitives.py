"""Protocol primitives: known vectors, round trips, kafka-python's codecs, and malformed input."""

from __future__ import annotations

import io
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.schemas.fields.codecs import String as KpString
from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32, VarInt32, VarInt64
from kafka.record.util import decode_varint as kp_decode_varlong
from kafka.record.util import encode_varint as kp_encode_varlong

from wire import ZERO_UUID, DecodeError, Reader, Writer
from wire._primitives import MAX_ARRAY_LENGTH, MAX_COLLECTION_LENGTH, MAX_TAGGED_FIELD_COUNT

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT32 = st.integers(0, 2**32 - 1)


def written(fn_name: str, *args: object) -> bytes:
    w = Writer()
    getattr(w, fn_name)(*args)
    return w.getvalue()


# -- fixed width -----------------------------------------------------------------------------------------

FIXED = [("int8", ">b", 8, True), ("int16", ">h", 16, True), ("uint16", ">H", 16, False),
         ("int32", ">i", 32, True), ("uint32", ">I", 32, False), ("int64", ">q", 64, True)]


@pytest.mark.parametrize("name, fmt, bits, signed", FIXED, ids=[f[0] for f in FIXED])
def test_fixed_width_ints(name: str, fmt: str, bits: int, signed: bool) -> None:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    for v in (lo, -1 if signed else 1, 0, 1, hi):
        raw = written(name, v)
        assert raw == struct.pack(fmt, v)
        assert getattr(Reader(raw), name)() == v
        with pytest.raises(DecodeError):
            getattr(Reader(raw[:-1]), name)()


@given(st.floats(allow_nan=False), st.booleans(), st.uuids())
def test_float_bool_uuid(f: float, b: bool, u: uuid.UUID) -> None:
    w = Writer()
    w.float64(f)
    w.bool(b)
    w.uuid(u)
    r = Reader(w.getvalue())
    assert (r.float64(), r.bool(), r.uuid()) == (f, b, u)
    assert r.remaining() == 0


def test_bool_reads_any_nonzero_byte_as_true() -> None:
    assert Reader(b"\x02").bool() is True
    assert Reader(b"\x00").bool() is False
    assert written("uuid", ZERO_UUID) == bytes(16)


# -- varints ---------------------------------------------------------------------------------------------

UVARINT_VECTORS = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"),
                   (16384, "808001"), (2**31 - 1, "ffffffff07"), (2**32 - 1, "ffffffff0f")]
VARINT_VECTORS = [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"),
                  (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f")]


@pytest.mark.parametrize("value, hexed", UVARINT_VECTORS)
def test_uvarint_vectors(value: int, hexed: str) -> None:
    assert written("uvarint", value) == bytes.fromhex(hexed)
    assert Reader(bytes.fromhex(hexed)).uvarint() == value


@pytest.mark.parametrize("value, hexed", VARINT_VECTORS)
def test_varint_vectors(value: int, hexed: str) -> None:
    assert written("varint", value) == bytes.fromhex(hexed)
    assert Reader(bytes.fromhex(hexed)).varint() == value


@settings(max_examples=200)
@given(UINT32, INT32, INT64)
def test_varints_match_kafka_python(u: int, i: int, q: int) -> None:
    assert written("uvarint", u) == UnsignedVarInt32.encode(u)
    assert written("varint", i) == VarInt32.encode(i)
    assert written("varlong", q) == VarInt64.encode(q)
    out = bytearray()
    kp_encode_varlong(q, out.append)
    assert written("varlong", q) == bytes(out)
    assert kp_decode_varlong(written("varlong", q), 0) == (q, len(out))
    r = Reader(written("uvarint", u) + written("varint", i) + written("varlong", q))
    assert (r.uvarint(), r.varint(), r.varlong()) == (u, i, q)
    assert r.remaining() == 0


@pytest.mark.parametrize("value", [0, 127, 128, 16_383, 16_384, 65_537, 2_097_151, 2_097_152, (1 << 32) - 1])
def test_uvarint_of_every_width_is_read_at_any_place_and_end(value: int) -> None:
    """The one- to three-byte varints read inline and the longer ones read in the loop, at a buffer's end, before
    other bytes and within a reader's ``end``; cut anywhere, they are truncated."""
    raw = written("uvarint", value)
    for tail in (b"", b"\x00", b"\xff\xff\xff"):
        r = Reader(b"\x05" + raw + tail, 1)
        assert (r.uvarint(), r.pos) == (value, 1 + len(raw))
    for cut in range(len(raw)):
        with pytest.raises(DecodeError, match="truncated"):
            Reader(raw + b"\x00\x00\x00", 0, cut).uvarint()


def test_varint_too_long_or_truncated_is_a_decode_error() -> None:
    with pytest.raises(DecodeError):
        Reader(b"\xff\xff\xff\xff\xff\x01").uvarint()  # 6 bytes: more than an int32 can take
    with pytest.raises(DecodeError):
        Reader(b"\xff" * 10 + b"\x01").varlong()  # 11 bytes
    assert Reader(b"\xff" * 9 + b"\x01").varlong() == VarInt64.decode(io.BytesIO(b"\xff" * 9 + b"\x01"))
    for raw in (b"", b"\x80", b"\xff\xff"):
        with pytest.raises(DecodeError):
            Reader(raw).uvarint()
        with pytest.raises(DecodeError):
            Reader(raw).varlong()


# -- strings, bytes, arrays ------------------------------------------------------------------------------


@settings(max_examples=100)
@given(st.text(max_size=300) | st.none())
def test_strings_match_kafka_python(s: str | None) -> None:
    for compact in (False, True):
        nullable = "compact_nullable_string" if compact else "nullable_string"
        raw = written(nullable, s)
        assert raw == KpString().encode(s, compact=compact)
        assert getattr(Reader(raw), nullable)() == s
        if s is not None:
            plain = "compact_string" if compact else "string"
            assert written(plain, s) == raw
            assert getattr(Reader(raw), plain)() == s
            if s:
                with pytest.raises(DecodeError):
                    getattr(Reader(raw[:-1]), plain)()


@settings(max_examples=100)
@given(st.binary(max_size=300) | st.none())
def test_bytes_round_trip(b: bytes | None) -> None:
    for name, null in (("nullable_bytes", b"\xff\xff\xff\xff"), ("compact_nullable_bytes", b"\x00")):
        raw = written(name, b)
        assert getattr(Reader(raw), name)() == b
        if b is None:
            assert raw == null
        else:
            plain = name.replace("nullable_", "")
            assert written(plain, b) == raw
            assert getattr(Reader(raw), plain)() == b


@pytest.mark.parametrize("method, raw", [
    ("string", b"\xff\xff"), ("compact_string", b"\x00"), ("bytes", b"\xff\xff\xff\xff"),
    ("compact_bytes", b"\x00"),
])
def test_null_where_not_nullable_is_a_decode_error(method: str, raw: bytes) -> None:
    with pytest.raises(DecodeError, match="null"):
        getattr(Reader(raw), method)()


def test_invalid_utf8_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="UTF-8"):
        Reader(b"\x00\x02\xc3\x28").string()
    with pytest.raises(DecodeError, match="UTF-8"):
        Reader(b"\x03\xed\xa0").compact_nullable_string()  # a lone surrogate


@pytest.mark.parametrize("method, raw", [
    ("string", b"\x00\x05abc"), ("compact_string", b"\x06abc"), ("bytes", b"\x00\x00\x00\x09abc"),
    ("compact_bytes", b"\x80\x80\x80\x80\x01"),  # a 2**28-byte claim with nothing behind it
    ("nullable_bytes", b"\x7f\xff\xff\xff"),
])
def test_length_beyond_the_buffer_is_a_decode_error(method: str, raw: bytes) -> None:
    with pytest.raises(DecodeError):
        getattr(Reader(raw), method)()


def test_array_lengths() -> None:
    assert written("array_length", None, False) == b"\xff\xff\xff\xff"
    assert written("array_length", None, True) == b"\x00"
    assert written("array_length", 3, True) == b"\x04"
    assert Reader(b"\xff\xff\xff\xff").array_length(False) == -1
    assert Reader(b"\x00").array_length(True) == -1
    assert Reader(b"\x00\x00\x00\x02ab").array_length(False) == 2
    with pytest.raises(DecodeError, match="invalid"):
        Reader(b"\xff\xff\xff\xfe").array_length(False)
    # Every element takes a byte at least: a count beyond what is left is garbage, not a reason to
    # allocate.
    with pytest.raises(DecodeError):
        Reader(b"\x00\x00\x00\x03ab").array_length(False)
    with pytest.raises(DecodeError):
        Reader(b"\x7f\xff\xff\xff" + bytes(16)).array_length(False)
    assert MAX_COLLECTION_LENGTH < 2**31


def test_kafka_44_caps_arrays_and_tagged_field_sections() -> None:
    """Kafka 4.4's readers refuse more than 1,000,000 elements in an array and more than 10,000 tagged fields,
    whatever follows: so do ours."""
    assert Reader(b"\x00\x0f\x42\x40" + bytes(1_000_000)).array_length(False) == MAX_ARRAY_LENGTH
    with pytest.raises(DecodeError, match="maximum"):
        Reader(b"\x00\x0f\x42\x41" + bytes(1_000_001)).array_length(False)
    w = Writer()
    w.uvarint(MAX_ARRAY_LENGTH + 2)  # compact: count + 1
    with pytest.raises(DecodeError, match="maximum"):
        Reader(w.getvalue() + bytes(1_000_001)).array_length(True)
    fields = [(tag, b"") for tag in range(MAX_TAGGED_FIELD_COUNT + 1)]
    w = Writer()
    w.tagged_fields(fields[:-1])
    assert len(Reader(w.getvalue()).tagged_fields()) == MAX_TAGGED_FIELD_COUNT
    w = Writer()
    w.tagged_fields(fields)
    with pytest.raises(DecodeError, match="maximum"):
        Reader(w.getvalue()).tagged_fields()


def test_reader_respects_pos_and_end() -> None:
    r = Reader(b"\x00\x01\x00\x02\x00\x03", pos=2, end=4)
    assert r.remaining() == 2
    assert r.int16() == 2
    with pytest.raises(DecodeError):
        r.int16()


# -- tagged fields and records ---------------------------------------------------------------------------


def test_tagged_fields_round_trip() -> None:
    raw = written("tagged_fields", [(0, b"a"), (5, b""), (300, b"xyz")])
    assert raw == bytes.fromhex("03" "00" "01" "61" "05" "00" "ac02" "03" "78797a")
    fields = Reader(raw).tagged_fields()
    assert {k: bytes(v) for k, v in fields.items()} == {0: b"a", 5: b"", 300: b"xyz"}
    assert written("empty_tagged_fields") == b"\x00"
    assert Reader(b"\x00").tagged_fields() == {}


@pytest.mark.parametrize("raw", [
    bytes.fromhex("02" "05" "00" "01" "00"),  # tags out of order
    bytes.fromhex("02" "01" "00" "01" "00"),  # a tag twice
    bytes.fromhex("01" "00" "05" "6162"),  # size beyond the buffer
    bytes.fromhex("02" "00" "00"),  # fewer fields than counted
])
def test_bad_tagged_fields_are_a_decode_error(raw: bytes) -> None:
    with pytest.raises(DecodeError):
        Reader(raw).tagged_fields()


def test_records_in_memory_and_null() -> None:
    for flexible in (False, True):
        raw = written("records", b"batch", flexible)
        view = Reader(raw).records(flexible)
        assert isinstance(view, memoryview) and view == b"batch"
        assert Reader(written("records", None, flexible)).records(flexible) is None


class Region:
    """A stand-in for storage's FileRegion (wire only sees the protocol)."""

    def __init__(self, position: int, size: int) -> None:
        self.file = None
        self.position = position
        self.size = size

    def read_bytes(self) -> bytes:
        raise AssertionError("the writer never reads a region")

    def release(self) -> None:
        raise AssertionError("the writer never releases a region")


def test_records_from_a_file_region_stay_a_separate_part() -> None:
    region = Region(position=100, size=64)
    w = Writer()
    w.int16(7)
    w.records(region, True)
    w.int8(1)
    parts = w.parts()
    assert parts[0] == b"\x00\x07" + bytes([65])  # size + 1 as a uvarint
    assert parts[1] is region
    assert parts[2] == b"\x01"
    assert len(w) == 2 + 1 + 64 + 1
    with pytest.raises(TypeError):
        w.getvalue()
    empty = Writer()
    empty.records(Region(position=0, size=0), False)
    assert empty.getvalue() == b"\x00\x00\x00\x00"


def test_large_in_memory_records_are_their_own_part_and_encode_the_same():
    from wire._primitives import KEEP_RECORDS_APART

    big = memoryview(bytes(range(256)) * (KEEP_RECORDS_APART // 256 + 1))
    for flexible in (False, True):
        apart, inline = Writer(), Writer()
        apart.int32(7)
        apart.records(big, flexible)
        apart.int8(1)
        inline.int32(7)
        (inline.compact_bytes if flexible else inline.bytes)(bytes(big))
        inline.int8(1)
        assert any(p is big for p in apart.parts())  # not copied into the buffer
        assert apart.getvalue() == inline.getvalue() and len(apart) == len(inline.getvalue())
