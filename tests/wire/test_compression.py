"""Compression codecs: round trips, what other clients write and read, bombs and garbage."""

from __future__ import annotations

import gzip
import os
import random
import struct

import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec

from wire import CompressionType, CorruptRecordError, RecordError, compress, decompress

CODECS = list(CompressionType)
COMPRESSED = [c for c in CompressionType if c is not CompressionType.NONE]

PAYLOADS = {
    "empty": b"",
    "one byte": b"x",
    "text": b"the quick brown fox jumps over the lazy dog " * 50,
    # Crosses snappy-java's 32 KiB block and lz4's 64 KiB block boundaries; part incompressible.
    "mixed 200k": os.urandom(70_000) + b"\x00" * 130_000,
}


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_round_trip(codec: CompressionType, name: str) -> None:
    data = PAYLOADS[name]
    packed = compress(codec, data)
    assert decompress(codec, packed) == data
    assert decompress(codec, memoryview(bytearray(packed))) == data
    assert decompress(int(codec), packed, max_size=len(data)) == data


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
@pytest.mark.parametrize("level", [1, 5])
def test_levels(codec: CompressionType, level: int) -> None:
    data = PAYLOADS["text"]
    assert decompress(codec, compress(codec, data, level)) == data


# -- interoperability: kafka-python is an independent implementation of the same formats ------------------

KAFKA_PYTHON_DECODE = {
    CompressionType.GZIP: kafka_codec.gzip_decode,
    CompressionType.SNAPPY: kafka_codec.snappy_decode,
    CompressionType.LZ4: kafka_codec.lz4_decode,
    CompressionType.ZSTD: kafka_codec.zstd_decode,
}
KAFKA_PYTHON_ENCODE = {
    CompressionType.GZIP: kafka_codec.gzip_encode,
    CompressionType.SNAPPY: kafka_codec.snappy_encode,
    CompressionType.LZ4: kafka_codec.lz4_encode,
    CompressionType.ZSTD: kafka_codec.zstd_encode,
}


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_kafka_python_reads_ours_and_we_read_theirs(codec: CompressionType) -> None:
    data = PAYLOADS["mixed 200k"]
    assert KAFKA_PYTHON_DECODE[codec](compress(codec, data)) == data
    assert decompress(codec, KAFKA_PYTHON_ENCODE[codec](data)) == data


def test_snappy_is_xerial_framed_like_the_java_client() -> None:
    data = PAYLOADS["mixed 200k"]
    packed = compress(CompressionType.SNAPPY, data)
    # snappy-java's SnappyOutputStream header: magic, version 1, minimum compatible version 1.
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    # 32 KiB blocks, each "int32 length + raw snappy": the same bytes kafka-python's xerial encoder makes.
    assert packed == kafka_codec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=32 * 1024)
    (first_block,) = struct.unpack_from(">i", packed, 16)
    assert snappy.uncompress(packed[20:20 + first_block]) == data[:32 * 1024]


def test_snappy_reads_raw_blocks_as_librdkafka_writes_them() -> None:
    data = PAYLOADS["text"]
    assert decompress(CompressionType.SNAPPY, snappy.compress(data)) == data
    assert decompress(CompressionType.SNAPPY, snappy.compress(b"")) == b""


def test_snappy_reads_concatenated_xerial_streams() -> None:
    a, b = b"first " * 100, b"second " * 100
    packed = compress(CompressionType.SNAPPY, a) + compress(CompressionType.SNAPPY, b)
    assert decompress(CompressionType.SNAPPY, packed) == a + b


def test_lz4_frame_has_independent_64k_blocks() -> None:
    packed = compress(CompressionType.LZ4, PAYLOADS["mixed 200k"])
    assert packed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flg, bd = packed[4], packed[5]
    assert flg >> 6 == 1  # version 01
    assert flg & 0x20  # block independence: Kafka's Lz4BlockInputStream refuses dependent blocks
    assert not flg & 0x10 and not flg & 0x04 and not flg & 0x08  # no block/content checksum, no size
    assert (bd >> 4) & 0x7 == 4  # 64 KiB maximum block size


def test_lz4_reads_frames_with_content_size_and_checksums() -> None:
    import lz4.frame

    data = PAYLOADS["mixed 200k"]
    packed = lz4.frame.compress(data, store_size=True, content_checksum=True, block_checksum=True)
    assert decompress(CompressionType.LZ4, packed) == data
    assert decompress(CompressionType.LZ4, packed + packed) == data + data


def test_lz4_output_larger_than_one_output_chunk_comes_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames are decompressed LZ4_OUTPUT_CHUNK at a time: a frame ending on a chunk boundary, one longer than a
    chunk and concatenated frames come out whole, and the size bound still counts across chunks."""
    from wire import _compression

    chunk = 64 * 1024
    monkeypatch.setattr(_compression, "LZ4_OUTPUT_CHUNK", chunk)
    exact, longer = os.urandom(2 * chunk), os.urandom(chunk + 12345)
    for data in (exact, longer):
        packed = compress(CompressionType.LZ4, data)
        assert decompress(CompressionType.LZ4, packed) == data
        assert decompress(CompressionType.LZ4, packed, max_size=len(data)) == data
        with pytest.raises(CorruptRecordError, match="exceeds"):
            decompress(CompressionType.LZ4, packed, max_size=len(data) - 1)
    assert decompress(CompressionType.LZ4, compress(CompressionType.LZ4, exact) + compress(CompressionType.LZ4, longer),
                      max_size=len(exact) + len(longer)) == exact + longer


def test_zstd_with_and_without_content_size_and_several_frames() -> None:
    data = PAYLOADS["mixed 200k"]
    with_size = zstandard.ZstdCompressor().compress(data)
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(data)  # as zstd-jni streams write
    assert zstandard.frame_content_size(streamed) == -1
    for packed in (with_size, streamed):
        assert decompress(CompressionType.ZSTD, packed) == data
        assert decompress(CompressionType.ZSTD, packed, max_size=len(data)) == data
    assert decompress(CompressionType.ZSTD, with_size + streamed) == data + data
    assert decompress(CompressionType.ZSTD, streamed + with_size, max_size=2 * len(data)) == data + data


def test_gzip_reads_several_members() -> None:
    assert decompress(CompressionType.GZIP, gzip.compress(b"a" * 10) + gzip.compress(b"b" * 5)) == b"a" * 10 + b"b" * 5


# -- bombs, truncation, garbage ----------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_max_size_guard(codec: CompressionType) -> None:
    bomb = compress(codec, b"\x00" * 4_000_000)
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decompress(codec, bomb, max_size=1_000_000)
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decompress(codec, bomb, max_size=3_999_999)
    assert len(decompress(codec, bomb, max_size=4_000_000)) == 4_000_000


def test_max_size_guard_on_streamed_zstd() -> None:
    bomb = zstandard.ZstdCompressor(write_content_size=False).compress(b"\x00" * 4_000_000)
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decompress(CompressionType.ZSTD, bomb, max_size=1_000_000)
    raw = snappy.compress(b"\x00" * 4_000_000)
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decompress(CompressionType.SNAPPY, raw, max_size=1_000_000)


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_truncated_input_is_corrupt(codec: CompressionType) -> None:
    packed = compress(codec, PAYLOADS["text"])
    for cut in (1, len(packed) // 2, len(packed) - 1):
        with pytest.raises(CorruptRecordError):
            decompress(codec, packed[:cut])


@pytest.mark.parametrize("codec", [CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD],
                         ids=lambda c: c.name)
def test_empty_input_is_corrupt(codec: CompressionType) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, b"")


def test_unknown_codec_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError, match="codec"):
        decompress(5, b"whatever")


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), data=st.binary(max_size=300))
def test_garbage_only_raises_record_errors(codec: CompressionType, data: bytes) -> None:
    try:
        decompress(codec, data, max_size=1 << 20)
    except RecordError:
        pass


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(COMPRESSED), data=st.data())
def test_damaged_streams_only_raise_record_errors(codec: CompressionType, data: st.DataObject) -> None:
    packed = bytearray(compress(codec, PAYLOADS["text"]))
    for _ in range(data.draw(st.integers(1, 4))):
        packed[data.draw(st.integers(0, len(packed) - 1))] = data.draw(st.integers(0, 255))
    try:
        decompress(codec, bytes(packed), max_size=1 << 20)
    except RecordError:
        pass


@settings(max_examples=100, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=5000))
def test_round_trip_property(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def _chunked_reference(data: bytes, max_size: int | None, chunk: int) -> bytes:
    """Frames read by python-lz4's LZ4FrameDecompressor (a fresh one a frame), ``chunk`` bytes of output at a time."""
    import lz4.frame

    parts: list[bytes] = []
    rest = data
    while True:
        d = lz4.frame.LZ4FrameDecompressor()
        feed = rest
        while True:
            part = d.decompress(feed, max_length=chunk)
            feed = b""
            parts.append(part)
            if max_size is not None and sum(map(len, parts)) > max_size:
                raise CorruptRecordError("exceeds")
            if d.eof or d.needs_input or not part:
                break
        if not d.eof:
            raise CorruptRecordError("truncated lz4 frame")
        rest = d.unused_data
        if not rest:
            return b"".join(parts)


def _outcome(read, *args) -> bytes | str:
    try:
        return read(*args)
    except (RecordError, RuntimeError) as exc:
        return "DecompressedSizeError" if "exceeds" in str(exc) else "error"


@settings(max_examples=150, deadline=None)
@given(size=st.integers(0, 150_000), checksums=st.booleans(), store_size=st.booleans(), frames=st.integers(1, 2),
       damage=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=3),
       cut=st.integers(-6, 0), max_size=st.sampled_from([None, 1 << 20, 70_000]),
       chunk=st.sampled_from([64 << 10, 100_000, 8 << 20]))
def test_lz4_frames_read_by_one_reused_context_answer_as_a_fresh_decompressor_each(size, checksums, store_size, frames,
                                                                                   damage, cut, max_size, chunk) -> None:
    """Frames read by this thread's one lz4 context (reset after an error), from the batch's memoryview: the same output
    or refusal as a fresh LZ4FrameDecompressor a frame, for frames damaged or cut, concatenated, with checksums and
    content sizes, in chunks of output, over and under the size bound; and the next good frame reads after any."""
    import lz4.frame

    from wire import _compression

    data = random.Random(size).randbytes(size // 2) + b"a" * (size - size // 2)
    packed = bytearray(b"".join(lz4.frame.compress(data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                                   store_size=store_size, content_checksum=checksums,
                                                   block_checksum=checksums) for _ in range(frames)))
    for at, value in damage:
        packed[at % len(packed)] = value
    packed = packed[:len(packed) + cut] if cut else packed
    default = _compression.LZ4_OUTPUT_CHUNK
    _compression.LZ4_OUTPUT_CHUNK = chunk
    try:
        ours = _outcome(decompress, CompressionType.LZ4, memoryview(packed), max_size)
    finally:
        _compression.LZ4_OUTPUT_CHUNK = default
    assert ours == _outcome(_chunked_reference, bytes(packed), max_size, chunk)
    good = compress(CompressionType.LZ4, b"next batch" * 100)
    assert decompress(CompressionType.LZ4, good) == b"next batch" * 100


@settings(max_examples=100, deadline=None)
@given(size=st.integers(0, 150_000), checksum=st.booleans(), frames=st.integers(1, 2), level=st.sampled_from([1, 3]),
       damage=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), max_size=3),
       cut=st.integers(-6, 0), max_size=st.sampled_from([None, 1 << 20, 70_000]))
def test_zstd_frames_without_content_size_read_at_once_answer_as_streamed(size, checksum, frames, level, damage, cut,
                                                                           max_size) -> None:
    """A zstd frame without a content size (Java's) decompressed at once into the bound its blocks give: the same
    output or refusal as the streamed reading, for frames damaged or cut, concatenated, over and under the bound."""
    from wire import _compression

    data = random.Random(size).randbytes(size // 3) + b"abc" * (size // 3)
    packed = bytearray(b"".join(zstandard.ZstdCompressor(level=level, write_content_size=False,
                                                         write_checksum=checksum).compress(data)
                                for _ in range(frames)))
    for at, value in damage:
        packed[at % len(packed)] = value
    packed = packed[:len(packed) + cut] if cut else packed
    bound = _compression._zstd_bound
    try:
        _compression._zstd_bound = lambda _data: 0  # the streamed reading only
        streamed = _outcome(decompress, CompressionType.ZSTD, bytes(packed), max_size)
    finally:
        _compression._zstd_bound = bound
    assert _outcome(decompress, CompressionType.ZSTD, memoryview(packed), max_size) == streamed
    if not damage and not cut and frames == 1:  # Java's frame: its bound holds its output
        assert bound(bytes(packed)) >= len(data)


def test_lz4_frame_descriptors_kafka_refuses() -> None:
    """Kafka's reader refuses a FLG byte with a reserved bit, dependent blocks or a version other than 1, in that
    order; anything not a frame is left to the decompressor."""
    from wire._compression import UnsupportedLz4FrameError, check_lz4_descriptor

    for flg in range(256):
        expected = "Reserved0" if flg & 1 else "Reserved1" if flg & 2 else "Dependent" if not flg & 0x20 else \
            "Version" if flg >> 6 != 1 else None
        try:
            check_lz4_descriptor(memoryview(b"\x04\x22\x4d\x18" + bytes([flg, 0x40]) + b"\x00" * 5))
            refused = None
        except UnsupportedLz4FrameError as exc:
            refused = str(exc).split()[0]
        assert refused == expected, flg
        check_lz4_descriptor(b"\x04\x22\x4d\x19" + bytes([flg]))  # not a frame
