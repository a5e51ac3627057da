"""Compression codecs of record batches: gzip, snappy, lz4, zstd (attribute bits 0-2 of a v2 batch).

What we write is what the Java client writes:
- gzip: one gzip member (zlib deflate, level 6 unless told).
- snappy: xerial ``SnappyOutputStream`` framing (a 16-byte header, then ``int32 length`` + raw snappy
  block per 32 KiB of input), because Java consumers read it with ``SnappyInputStream``.
- lz4: one LZ4 frame, independent 64 KiB blocks, no block or content checksum (Kafka's
  ``Lz4BlockInputStream`` refuses dependent blocks).
- zstd: one zstd frame.

What we read is everything stock clients send: raw snappy (librdkafka) or xerial-framed snappy (Java,
kafka-python); concatenated gzip members; lz4 frames with or without content size, but with independent blocks
(a producer's frame that Kafka's reader refuses, as one from KafkaJS's lz4js-based codecs, fails
``check_lz4_descriptor``: UNKNOWN_SERVER_ERROR as on Kafka); zstd frames with or without content size (Java's
streaming writer omits it), one or several.

On the produce path: an lz4 frame is read by one python-lz4 context per thread (from the batch's memoryview); a zstd
frame without a content size (Java's) is decompressed at once into the bound its block headers give.

Every failure on bad input is a ``CorruptRecordError``; library exceptions never escape. ``max_size``
bounds the decompressed size (a decompression bomb becomes a ``CorruptRecordError``, found before the
memory is spent).

The codec libraries (snappy, lz4, zstandard) are imported by the first batch that needs each: every broker
imports this module at start, before any compressed batch arrives.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING

from wire._errors import ErrorCode

if TYPE_CHECKING:
    import zstandard

__all__ = ["CompressionType", "CorruptRecordError", "InvalidRecordError", "UnrebuildableBatchError", "RecordError", "UndecodableBatchError", "UnsupportedLz4FrameError",
           "check_lz4_descriptor", "compress", "decompress"]


class RecordError(Exception):
    """Base of record-batch errors; ``error_code`` is the Kafka error a produce answers with."""

    error_code: int = ErrorCode.CORRUPT_MESSAGE


class CorruptRecordError(RecordError):
    """The bytes are not a well-formed batch: bad size, magic, CRC or compressed data (CORRUPT_MESSAGE)."""

    error_code = ErrorCode.CORRUPT_MESSAGE


class DecompressedSizeError(CorruptRecordError):
    """The data decompresses to more than the caller's ``max_size`` (a telemetry push above telemetry.max.bytes)."""


class UnsupportedLz4FrameError(RecordError):
    """An LZ4 frame whose descriptor Kafka's reader refuses (dependent blocks, a dictionary id or reserved bit, a
    version other than 1): Kafka's produce fails on its RuntimeException with UNKNOWN_SERVER_ERROR."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class InvalidRecordError(RecordError):
    """A well-framed batch breaks Kafka's rules for its contents (INVALID_RECORD)."""

    error_code = ErrorCode.INVALID_RECORD


class UndecodableBatchError(RecordError):
    """A client's compressed records that do not decompress: Kafka's produce fails on the decompression's
    KafkaException with UNKNOWN_SERVER_ERROR (and no message), as for an LZ4 frame it refuses."""

    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class UnrebuildableBatchError(UndecodableBatchError):
    """A compressed client batch kept in place whose offset deltas are not 0..n-1: Kafka rebuilds it from records it
    read partially and fails (UNKNOWN_SERVER_ERROR), after refusing any of its records (storage.log_validator)."""


class CompressionType(IntEnum):
    """Kafka's compression codec ids (bits 0-2 of a batch's attributes)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# The most output an lz4 frame is decompressed into at once. python-lz4 allocates its max_length up front: a
# frame without a content size (Kafka's) bounded only by the batch limit (100 MB) got a fresh mmap of 100 MB
# whose touched pages fault in every time. A bound that glibc serves from its heap once freed (its mmap
# threshold follows freed chunks up to 32 MiB) costs, for a Java producer's lz4 batch of 54 x 1 KiB, ~7 us
# instead of ~32; for a batch of 2,000 identical 1 KiB records (compressible data), ~300 us instead of ~1,070
# (1 MiB chunks: ~470, the output then joined).
LZ4_OUTPUT_CHUNK = 8 << 20
# Kafka's default levels (compression.gzip.level, compression.lz4.level, compression.zstd.level).
DEFAULT_LEVELS = {CompressionType.GZIP: 6, CompressionType.LZ4: 9, CompressionType.ZSTD: 3}
# Kafka's Lz4BlockOutputStream uses lz4's fast compressor at the default level and the high-compression
# one at any other; python-lz4 takes level 0 as "fast".
_LZ4_FAST = 0

# xerial snappy-java stream header: magic, then format version and minimum compatible version (both 1).
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_HEADER_SIZE = len(_XERIAL_HEADER)
# snappy-java's SnappyOutputStream default block size, which Kafka uses.
_XERIAL_BLOCK_SIZE = 32 * 1024
_I32 = struct.Struct(">i")

# Zstd's densest encoding (an RLE block: 4 input bytes for 128 KiB of output) bounds how much one chunk of
# input can expand; we feed zstd at most (budget / _ZSTD_MAX_RATIO) bytes at a time so a bomb is caught
# within one 128 KiB block of the limit.
_ZSTD_MAX_RATIO = 32 * 1024
_ZSTD_MIN_FEED = 64

_GZIP_MAGIC = b"\x1f\x8b"

_local = threading.local()  # zstd and lz4 contexts are not thread-safe; compression runs in worker threads


def _zstd_dctx() -> zstandard.ZstdDecompressor:
    dctx = getattr(_local, "dctx", None)
    if dctx is None:
        import zstandard

        dctx = _local.dctx = zstandard.ZstdDecompressor()
    return dctx


def _zstd_cctx(level: int) -> zstandard.ZstdCompressor:
    cctxs = getattr(_local, "cctxs", None)
    if cctxs is None:
        cctxs = _local.cctxs = {}
    cctx = cctxs.get(level)
    if cctx is None:
        import zstandard

        cctx = cctxs[level] = zstandard.ZstdCompressor(level=level)
    return cctx


def compress(codec: CompressionType | int, data: bytes | bytearray | memoryview, level: int | None = None) -> bytes:
    """Compress ``data`` as the Java client would for ``codec``; ``level`` None means Kafka's default."""
    codec = CompressionType(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if level is None:
        level = DEFAULT_LEVELS.get(codec, 0)
    if codec is CompressionType.GZIP:
        c = zlib.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec is CompressionType.SNAPPY:
        import snappy

        view = memoryview(data)
        parts = [_XERIAL_HEADER]
        for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
            block = snappy.compress(view[start:start + _XERIAL_BLOCK_SIZE])
            parts.append(_I32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec is CompressionType.LZ4:
        import lz4.frame

        return lz4.frame.compress(
            data,
            compression_level=_LZ4_FAST if level == DEFAULT_LEVELS[CompressionType.LZ4] else level,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            block_checksum=False,
            store_size=False,
        )
    # ZSTD
    return _zstd_cctx(level).compress(data)


def decompress(codec: CompressionType | int, data: bytes | bytearray | memoryview,
               max_size: int | None = None) -> bytes:
    """Decompress a batch's records section; raises CorruptRecordError on bad input or above ``max_size``."""
    read = _READERS.get(codec)  # an int or its CompressionType: no enum lookup on the produce path
    if read is None:
        if codec != CompressionType.NONE:
            raise CorruptRecordError(f"unknown compression codec id {codec}")
        out = bytes(data)
        _check_size(len(out), max_size)
        return out
    try:
        return read(data, max_size)
    except RecordError:
        raise
    except Exception as e:  # zlib.error, snappy.UncompressError, RuntimeError (lz4), ZstdError, ...
        raise CorruptRecordError(f"invalid {CompressionType(codec).name.lower()} data: {e}") from e


def _check_size(size: int, max_size: int | None) -> None:
    if max_size is not None and size > max_size:
        raise DecompressedSizeError(f"decompressed size exceeds the limit of {max_size} bytes")


def _gunzip(data: bytes | bytearray | memoryview, max_size: int | None) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest: bytes | bytearray | memoryview = data
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        part = d.decompress(rest, 0 if max_size is None else max_size - total + 1)
        total += len(part)
        _check_size(total, max_size)
        parts.append(part)
        if not d.eof:
            raise CorruptRecordError("truncated gzip data")
        rest = d.unused_data
        # Further members are read (GZIPInputStream does); trailing non-gzip bytes are ignored, as Java does.
        if rest[:2] != _GZIP_MAGIC:
            return b"".join(parts)


def _snappy_raw_length(data: bytes | memoryview, pos: int, end: int) -> int:
    """The uncompressed length a raw snappy block declares (its leading varint)."""
    result = shift = 0
    while pos < end and shift <= 28:
        b = data[pos]
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result
        pos += 1
        shift += 7
    raise CorruptRecordError("invalid snappy block length")


def _unsnappy(data: bytes | bytearray | memoryview, max_size: int | None) -> bytes:
    import snappy

    view = memoryview(data)
    n = len(view)
    if not (n >= _XERIAL_HEADER_SIZE and view[:8] == _XERIAL_MAGIC):
        _check_size(_snappy_raw_length(view, 0, n), max_size)  # raw snappy, as librdkafka writes it
        return snappy.uncompress(view)
    parts = []
    total = 0
    pos = _XERIAL_HEADER_SIZE
    while pos < n:
        if pos + 4 > n:
            raise CorruptRecordError("truncated xerial snappy block length")
        (size,) = _I32.unpack_from(view, pos)
        if size < 0:
            # snappy-java reads concatenated streams: a new header where a block length is expected.
            if view[pos:pos + 8] == _XERIAL_MAGIC and pos + _XERIAL_HEADER_SIZE <= n:
                pos += _XERIAL_HEADER_SIZE
                continue
            raise CorruptRecordError(f"invalid xerial snappy block length {size}")
        pos += 4
        end = pos + size
        if end > n:
            raise CorruptRecordError("truncated xerial snappy block")
        total += _snappy_raw_length(view, pos, end)
        _check_size(total, max_size)
        parts.append(snappy.uncompress(view[pos:end]))
        pos = end
    return b"".join(parts)


_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def check_lz4_descriptor(frame: bytes | bytearray | memoryview) -> None:
    """Kafka's KafkaLZ4BlockInputStream checks a frame's FLG byte before reading it; liblz4 reads all of these, and so
    does ``decompress`` (batches stored before this check existed stay readable): a produce checks it (validate_batch)."""
    if len(frame) < 5 or frame[4] & 0xE3 == 0x60 or bytes(frame[:4]) != _LZ4_MAGIC:
        return  # a FLG byte Kafka takes (version 1, independent blocks), or not a frame: the decompressor says more
    flg = frame[4]
    if flg & 0x03:
        raise UnsupportedLz4FrameError("Reserved0 field must be 0" if flg & 0x01 else "Reserved1 field must be 0")
    if not flg & 0x20:
        raise UnsupportedLz4FrameError("Dependent block stream is unsupported (BLOCK_INDEPENDENCE must be set)")
    if flg >> 6 != 1:
        raise UnsupportedLz4FrameError(f"Version {flg >> 6} is unsupported")


_decompress_chunk: Callable[..., tuple[bytes, int, bool]] | None = None  # lz4.frame's, once imported


def _lz4_context() -> object:
    """This thread's lz4 decompression context (reused: a fresh one per batch costs its allocation and its two
    block buffers; a frame read to its end leaves it ready for the next; after an error it is replaced)."""
    global _decompress_chunk
    context = getattr(_local, "lz4", None)
    if context is None:
        import lz4.frame

        _decompress_chunk = lz4.frame.decompress_chunk
        context = _local.lz4 = lz4.frame.create_decompression_context()
    return context


def _unlz4(data: bytes | bytearray | memoryview, max_size: int | None) -> bytes:
    """One or more frames, LZ4_OUTPUT_CHUNK of output at a time (python-lz4 allocates max_length bytes before it
    decompresses), the batch's memoryview read in place."""
    context = getattr(_local, "lz4", None) or _lz4_context()  # (no import statement and call a batch)
    decompress_chunk = _decompress_chunk
    assert decompress_chunk is not None  # set with the first context
    parts: list[bytes] = []
    total = 0
    pos = 0
    end = len(data)
    try:
        while True:
            chunk = LZ4_OUTPUT_CHUNK if max_size is None else min(LZ4_OUTPUT_CHUNK, max_size - total + 1)
            part, read, frame_end = decompress_chunk(context, data[pos:] if pos else data, max_length=chunk)
            pos += read
            total += len(part)
            _check_size(total, max_size)
            if frame_end and pos == end and not parts:
                return part  # a producer's batch: one frame, one chunk
            parts.append(part)
            if frame_end and pos == end:
                return b"".join(parts)
            if not frame_end and (pos == end and len(part) < chunk or not read and not part):
                raise CorruptRecordError("truncated lz4 frame")
    except BaseException:
        _local.lz4 = None  # a frame left midway: a fresh context next (a reset keeps the frame's remaining size)
        raise


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_ZSTD_MAX_BLOCK = 128 << 10  # a block's most output (less when the frame's window is smaller)
_ZSTD_AT_ONCE = 8 << 20  # the largest bound decompressed at once (python-zstandard allocates it up front)


def _zstd_bound(data: bytes | bytearray | memoryview) -> int:
    """The most output ``data`` can decompress to when it is one zstd frame without a content size (as zstd-jni's
    stream writes Java's): its blocks counted, a raw or RLE block at its size, a compressed one at most the block
    maximum; 0 when it is not such a frame, or its blocks do not end the data."""
    n = len(data)
    if n < 9 or data[:4] != _ZSTD_MAGIC:
        return 0
    descriptor = data[4]
    if descriptor & 0xE8:  # a content size, a single segment (one too) or the reserved bit
        return 0
    window = data[5]
    block_max = min(_ZSTD_MAX_BLOCK, (1 << 10 + (window >> 3)) * (8 + (window & 7)) // 8)
    pos = 6 + (0, 1, 2, 4)[descriptor & 3]  # the dictionary id
    bound = 0
    while pos + 3 <= n:
        header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
        size = header >> 3
        kind = header >> 1 & 3
        if kind == 3:
            return 0
        bound += block_max if kind == 2 else size
        pos += 3 + (1 if kind == 1 else size)
        if header & 1:  # the last block, then the content checksum
            return bound if pos + (4 if descriptor & 0x04 else 0) == n else 0
    return 0


def _unzstd(data: bytes | bytearray | memoryview, max_size: int | None) -> bytes:
    import zstandard

    dctx = _zstd_dctx()
    size = zstandard.frame_content_size(data)
    if size >= 0:  # content size in the header (librdkafka, python): one allocation, no streaming
        _check_size(size, max_size)
        try:
            return dctx.decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # more than one frame, or bad data: the streaming path below tells which
    else:
        bound = _zstd_bound(data)  # Java's frames: decompressed at once into their bound, when within max_size
        if 0 < bound <= _ZSTD_AT_ONCE and (max_size is None or bound <= max_size):
            try:
                return dctx.decompress(data, max_output_size=bound, allow_extra_data=False)
            except zstandard.ZstdError:
                pass  # bad data: the streaming path below says how
    view = memoryview(data)
    n = len(view)
    parts: list[bytes] = []
    total = pos = 0
    while pos < n:  # one frame per iteration
        d = dctx.decompressobj()
        while not d.eof:
            if pos >= n:
                raise CorruptRecordError("truncated zstd frame")
            if max_size is None:
                step = n - pos
            else:
                step = max(_ZSTD_MIN_FEED, (max_size - total) // _ZSTD_MAX_RATIO)
            chunk = view[pos:pos + step]
            pos += len(chunk)
            part = d.decompress(chunk)
            total += len(part)
            _check_size(total, max_size)
            parts.append(part)
        # Input fed past the end of this frame is handed back; it starts the next frame.
        pos -= len(d.unused_data)
    return b"".join(parts)


_READERS: dict[int, Callable[[bytes | bytearray | memoryview, int | None], bytes]] = {
    CompressionType.GZIP: _gunzip, CompressionType.SNAPPY: _unsnappy, CompressionType.LZ4: _unlz4,
    CompressionType.ZSTD: _unzstd}
