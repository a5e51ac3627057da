"""Record batch v2 (magic 2): header, CRC-32C, records, control batches, in-place header rewrites.

Layout (DefaultRecordBatch; all big-endian; offsets from the start of the batch)::

    0  base_offset int64          17 crc uint32 (CRC-32C of bytes 21..end)   43 producer_id int64
    8  batch_length int32          21 attributes int16                        51 producer_epoch int16
    12 partition_leader_epoch int32 23 last_offset_delta int32                53 base_sequence int32
    16 magic int8                  27 base_timestamp int64                    57 records_count int32
                                   35 max_timestamp int64                     61 records (maybe compressed)

``batch_length`` counts the bytes after itself, so a batch is ``batch_length + LOG_OVERHEAD`` bytes long.
base_offset and partition_leader_epoch lie outside the CRC: the broker assigns them without recomputing it.

A record (DefaultRecord) is ``length varint``, then ``attributes int8, timestamp_delta varlong,
offset_delta varint, key (varint length, -1 = null), value (same), header count varint`` and per header
``key (varint length + UTF-8), value (varint length, -1 = null)``. Varints are zigzag-encoded.

Errors follow Kafka: a batch whose size, magic, CRC or compressed data is wrong raises
``CorruptRecordError`` (CORRUPT_MESSAGE); a well-framed batch whose contents break the rules (record
structure, offsets vs count, control batches from clients) raises ``InvalidRecordError`` (INVALID_RECORD).
Both subclass ``RecordError``; nothing else escapes from decoding.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import NamedTuple

from wire._compression import (
    CompressionType,
    CorruptRecordError,
    DecompressedSizeError,
    InvalidRecordError,
    UndecodableBatchError,
    check_lz4_descriptor,
    compress,
    decompress,
)
from wire._primitives import append_uvarint
from wire._record_structure import check_decompressed_records, check_records, read_in_place

__all__ = [
    "COMPRESSION_CODEC_MASK",
    "CONTROL_FLAG_MASK",
    "DELETE_HORIZON_FLAG_MASK",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RECORD_BATCH_OVERHEAD",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_FLAG_MASK",
    "BatchScan",
    "ControlRecordType",
    "InvalidRecordError",
    "Record",
    "RecordBatchHeader",
    "TimestampType",
    "batch_crc_is_valid",
    "build_batch",
    "build_control_batch",
    "build_simple_batch",
    "decode_records",
    "decode_records_in_place",
    "iter_batch_headers",
    "parse_batch_header",
    "parse_control_record",
    "scan_batches",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "validate_batch",
]

LOG_OVERHEAD = 12  # base_offset int64 + batch_length int32: the part of a batch batch_length does not count
RECORD_BATCH_OVERHEAD = 61  # the whole v2 header; a batch with no records is this long
MAGIC_V2 = 2

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40
_KNOWN_ATTRIBUTES_MASK = 0x7F

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_PARTITION_LEADER_EPOCH_OFFSET = 12
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
_MAX_TIMESTAMP_OFFSET = 35
_MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD  # 49: a header and no records

_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == RECORD_BATCH_OVERHEAD
_unpack_header = _HEADER.unpack_from
# batch_length, attributes and max_timestamp in one unpack (what set_log_append_time reads).
_LENGTH_ATTRIBUTES_MAX_TIMESTAMP = struct.Struct(">8xi9xh12xq")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_MARKER = struct.Struct(">hi")  # version, coordinator_epoch

_INT32_MAX = 0x7FFFFFFF
_CODECS = tuple(CompressionType)


class TimestampType(IntEnum):
    """Bit 3 of the attributes: whose clock the batch's timestamps are."""

    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(IntEnum):
    """The ``type`` in a control record's key (Kafka's ControlRecordType; UNKNOWN for ids it lacks)."""

    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def _increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from INT32_MAX to 0."""
    if sequence > _INT32_MAX - increment:
        return increment - (_INT32_MAX - sequence) - 1
    return sequence + increment


class RecordBatchHeader(NamedTuple):
    """The 61-byte header of a v2 batch, fields named and ordered as on the wire."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> CompressionType:
        """The codec of the records section; CorruptRecordError for an id Kafka does not know."""
        codec = self.attributes & COMPRESSION_CODEC_MASK
        if codec >= len(_CODECS):
            raise CorruptRecordError(f"unknown compression type id {codec}")
        return _CODECS[codec]

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """Set by compaction: base_timestamp then holds the delete horizon (KIP-534)."""
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG_MASK else None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    @property
    def total_size(self) -> int:
        """Bytes of the whole batch, LOG_OVERHEAD included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wrapping as Kafka does), or NO_SEQUENCE."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return _increment_sequence(self.base_sequence, self.last_offset_delta)

    def offset_of(self, record: Record) -> int:
        return self.base_offset + record.offset_delta

    def timestamp_of(self, record: Record) -> int:
        """A record's timestamp: the batch's max_timestamp under LOG_APPEND_TIME, else base + delta."""
        if self.attributes & TIMESTAMP_TYPE_MASK:
            return self.max_timestamp
        return self.base_timestamp + record.timestamp_delta


_new_header = tuple.__new__


@dataclass(slots=True)
class Record:
    """One record of a batch, with offset and timestamp relative to the batch's base values."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    attributes: int = 0


class BatchScan(NamedTuple):
    """What ``scan_batches`` found: whole batches, and how the bytes after them end.

    ``valid_bytes == size``: a clean end. Otherwise bytes ``[valid_bytes, size)`` are either a torn tail
    (the beginning of a batch that was never completely written; ``error`` is None) or not a batch at all
    (``error`` says why). Recovery truncates at ``valid_bytes`` in both cases.
    """

    batches: list[tuple[int, RecordBatchHeader]]
    valid_bytes: int
    size: int
    error: CorruptRecordError | None

    @property
    def is_clean(self) -> bool:
        return self.valid_bytes == self.size

    @property
    def torn_tail(self) -> bool:
        return self.valid_bytes != self.size and self.error is None


Buffer = bytes | bytearray | memoryview


# -- header -----------------------------------------------------------------------------------------------


def parse_batch_header(buf: Buffer, pos: int = 0) -> RecordBatchHeader:
    """The header of the batch at ``pos``; CorruptRecordError if short, not magic 2, or batch_length < 49."""
    try:
        fields = _unpack_header(buf, pos)
    except struct.error:
        raise CorruptRecordError(
            f"record batch is corrupt: {len(buf) - pos} bytes, fewer than the {RECORD_BATCH_OVERHEAD}-byte header",
        ) from None
    if fields[3] != MAGIC_V2 or fields[1] < _MIN_BATCH_LENGTH or pos < 0:
        _reject_header(fields, pos)
    return _new_header(RecordBatchHeader, fields)


def _reject_header(fields: tuple[int, ...], pos: int) -> None:
    if pos < 0:
        raise CorruptRecordError(f"negative batch position {pos}")
    if fields[3] != MAGIC_V2:
        raise CorruptRecordError(f"unsupported magic {fields[3]} in record batch (only v2 is served)")
    raise CorruptRecordError(
        f"record batch is corrupt: batch_length {fields[1]} is smaller than the minimum {_MIN_BATCH_LENGTH}")


def iter_batch_headers(buf: Buffer, pos: int = 0) -> Iterator[tuple[int, RecordBatchHeader]]:
    """(position, header) of each complete batch from ``pos``; stops silently at an incomplete tail.

    Raises CorruptRecordError at a complete-looking header that is not a v2 batch. Use ``scan_batches``
    to learn how the bytes end.
    """
    end = len(buf)
    while end - pos >= RECORD_BATCH_OVERHEAD:
        header = parse_batch_header(buf, pos)
        size = header[1] + LOG_OVERHEAD
        if end - pos < size:
            return
        yield pos, header
        pos += size


def scan_batches(buf: Buffer, *, check_crc: bool = False, max_batch_size: int | None = None) -> BatchScan:
    """Walk the batches of ``buf`` (a segment file's bytes) and report where the valid prefix ends.

    Stops at the first torn tail or corrupt batch (bad length or magic; bad CRC if ``check_crc``; larger
    than ``max_batch_size``) — what log recovery needs to truncate.
    """
    end = len(buf)
    pos = 0
    batches: list[tuple[int, RecordBatchHeader]] = []
    error: CorruptRecordError | None = None
    unpack_length = _I32.unpack_from
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD:
            break
        (length,) = unpack_length(buf, pos + 8)
        if length < _MIN_BATCH_LENGTH:
            error = CorruptRecordError(f"batch at position {pos}: batch_length {length} is below the minimum")
            break
        size = length + LOG_OVERHEAD
        if max_batch_size is not None and size > max_batch_size:
            error = CorruptRecordError(f"batch at position {pos}: size {size} exceeds {max_batch_size}")
            break
        if remaining > _MAGIC_OFFSET and buf[pos + _MAGIC_OFFSET] != MAGIC_V2:
            error = CorruptRecordError(f"batch at position {pos}: magic {buf[pos + _MAGIC_OFFSET]} is not 2")
            break
        if remaining < size:
            break
        header = _new_header(RecordBatchHeader, _HEADER.unpack_from(buf, pos))
        if check_crc and not batch_crc_is_valid(buf, pos, header):
            error = CorruptRecordError(f"batch at position {pos}: CRC mismatch")
            break
        batches.append((pos, header))
        pos += size
    return BatchScan(batches, pos, end, error)


def _compute_crc(buf: Buffer, pos: int, end: int) -> int:
    # Imported here, not at the top: the crc32c package reads its own distribution metadata when
    # imported, ~20 ms of the broker's start-up, and a fresh broker computes no CRC before serving.
    import crc32c

    return crc32c.crc32c(memoryview(buf)[pos + _ATTRIBUTES_OFFSET:end])


def batch_crc_is_valid(buf: Buffer, pos: int, header: RecordBatchHeader) -> bool:
    """Whether the CRC-32C stored in the header matches the bytes from attributes to the batch's end."""
    end = pos + header[1] + LOG_OVERHEAD
    if end > len(buf):
        return False
    return _compute_crc(buf, pos, end) == header[4]


# -- in-place rewrites on the produce path (header only, no per-record work) --------------------------------


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assign the batch's offsets (base_offset is outside the CRC, which stays valid)."""
    _I64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    """Stamp the leader epoch (outside the CRC, which stays valid)."""
    _I32.pack_into(buf, pos + _PARTITION_LEADER_EPOCH_OFFSET, epoch)


def assign_leader_offsets(buf: bytearray | memoryview, pos: int, base_offset: int, epoch: int) -> RecordBatchHeader:
    """A leader's append of a validated batch: its offsets from ``base_offset`` and the leader ``epoch`` written (both
    outside the CRC, which stays valid); the header as rewritten (read again as it is: it was validated before)."""
    _I64.pack_into(buf, pos, base_offset)
    _I32.pack_into(buf, pos + _PARTITION_LEADER_EPOCH_OFFSET, epoch)
    return _new_header(RecordBatchHeader, _unpack_header(buf, pos))


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp: int) -> None:
    """Mark the batch LOG_APPEND_TIME with ``timestamp`` as its max_timestamp, and recompute the CRC.

    As Kafka's DefaultRecordBatch.setMaxTimestamp: only max_timestamp is written (readers take every
    record's timestamp from it); base_timestamp keeps the first record's create time (or the delete
    horizon); attribute bits Kafka does not define are cleared; nothing is written if nothing changes.
    """
    length, attributes, current = _LENGTH_ATTRIBUTES_MAX_TIMESTAMP.unpack_from(buf, pos)
    if attributes & TIMESTAMP_TYPE_MASK and current == timestamp:
        return
    _I16.pack_into(buf, pos + _ATTRIBUTES_OFFSET, (attributes & _KNOWN_ATTRIBUTES_MASK) | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + _MAX_TIMESTAMP_OFFSET, timestamp)
    crc = _compute_crc(buf, pos, pos + length + LOG_OVERHEAD)
    _U32.pack_into(buf, pos + _CRC_OFFSET, crc)


# -- validation on the produce path ----------------------------------------------------------------------


def validate_batch(buf: Buffer, pos: int = 0, *, from_client: bool = True,
                   target_codec: int | None = None) -> RecordBatchHeader:
    """Check the batch at ``pos`` as Kafka does before appending it, and return its header.

    Always (CorruptRecordError): header present, magic 2, batch_length >= 49 and within ``buf``, a known
    codec, CRC. With ``from_client``: an lz4 frame descriptor Kafka's reader takes (UnsupportedLz4FrameError), and (UnifiedLog.analyzeAndValidateRecords and LogValidator.validateBatch
    for AppendOrigin.CLIENT; InvalidRecordError): base_offset 0, last_offset_delta + 1 == records_count > 0,
    not a control batch, a base_sequence when there is a producer id; compressed data that decompresses
    (UndecodableBatchError) and records Kafka can read (wire._record_structure), read in place unless
    ``target_codec`` (the topic's compression.type, None for "producer") is another codec.
    """
    header = parse_batch_header(buf, pos)
    (base_offset, batch_length, _, _, crc, attributes, last_offset_delta, _, _, producer_id, _, base_sequence,
     records_count) = header
    end = pos + batch_length + LOG_OVERHEAD
    if end > len(buf):
        raise CorruptRecordError(
            f"record batch is corrupt: batch_length says {end - pos} bytes, only {len(buf) - pos} present")
    if attributes & COMPRESSION_CODEC_MASK >= len(_CODECS):
        raise CorruptRecordError(f"unknown compression type id {attributes & COMPRESSION_CODEC_MASK}")
    if from_client and base_offset != 0:
        raise InvalidRecordError(f"the base_offset of the record batch should be 0, but it is {base_offset}")
    computed = _compute_crc(buf, pos, end)
    if computed != crc:
        raise CorruptRecordError(f"Record is corrupt (stored crc = {crc}, computed crc = {computed})")
    if from_client:
        if last_offset_delta < 0 or records_count != last_offset_delta + 1 or attributes & CONTROL_FLAG_MASK or (
                producer_id > NO_PRODUCER_ID and base_sequence < 0):
            _reject_client_batch(header)
        codec = attributes & COMPRESSION_CODEC_MASK
        if codec == CompressionType.NONE:
            # Kafka reads every record of a client batch: one it cannot read fails the produce (wire._record_structure)
            check_records(buf, pos + RECORD_BATCH_OVERHEAD, end, records_count)
        else:
            # Kafka decompresses every client batch to validate it: the frame descriptor is what its lz4 reader
            # refuses before anything else, and data that does not decompress fails the produce; then it reads the
            # records in the decompressed data (decompressing is the C library's work).
            body = memoryview(buf)[pos + RECORD_BATCH_OVERHEAD:end]
            if codec == CompressionType.LZ4:
                check_lz4_descriptor(body)
            try:
                records = decompress(codec, body, MAX_DECOMPRESSED_BATCH_SIZE)
            except DecompressedSizeError:
                pass  # well-formed as far as read (Kafka reads on without a bound; decoding here stays bounded)
            except CorruptRecordError as exc:
                raise UndecodableBatchError(str(exc)) from exc
            else:
                check_decompressed_records(records, records_count,
                                           in_place=target_codec is None or target_codec == codec)
    return header


def _reject_client_batch(header: RecordBatchHeader) -> None:
    """The InvalidRecordError LogValidator.validateBatch raises for this client batch, checked in its order."""
    count_from_offsets = header.last_offset_delta + 1
    if count_from_offsets <= 0:
        raise InvalidRecordError(f"Batch has an invalid offset range: [{header.base_offset}, {header.last_offset}]")
    if header.records_count <= 0:
        raise InvalidRecordError(f"Invalid reported count for record batch: {header.records_count}")
    if count_from_offsets != header.records_count:
        raise InvalidRecordError(
            f"Inconsistent batch offset range [{header.base_offset}, {header.last_offset}] "
            f"and count of records {header.records_count}")
    if header.is_control:
        raise InvalidRecordError("Clients are not allowed to write control records")
    raise InvalidRecordError(
        f"Invalid sequence number {header.base_sequence} in record batch with producerId {header.producer_id}")


# -- record-internal varints (zigzag; int32 up to 5 bytes, int64 up to 10, as Kafka's ByteUtils) ------------
# Encoding is the protocol's (wire._primitives.append_uvarint); decoding reads from a buffer position and
# raises InvalidRecordError, in the record codec's inner loop, so it stays here.


def _record_read_varint(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    value = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = data[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 28:
            raise InvalidRecordError("varint is longer than 5 bytes")
    value &= 0xFFFFFFFF
    return (value >> 1) ^ -(value & 1), pos + 1


def _record_read_varlong(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    value = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = data[pos]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidRecordError("varlong is longer than 10 bytes")
    value &= 0xFFFFFFFFFFFFFFFF
    return (value >> 1) ^ -(value & 1), pos + 1


def _record_write_varint(out: bytearray, value: int) -> None:
    if not -0x80000000 <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit a varint (int32)")
    append_uvarint(out, ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def _record_write_varlong(out: bytearray, value: int) -> None:
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"{value} does not fit a varlong (int64)")
    append_uvarint(out, ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# -- records -----------------------------------------------------------------------------------------------


def _decode_record_list(data: bytes, count: int) -> list[Record]:
    """The ``count`` records that make up all of ``data`` (InvalidRecordError on any inconsistency)."""
    read_varint = _record_read_varint
    records: list[Record] = []
    append = records.append
    end = len(data)
    pos = 0
    try:
        for _ in range(count):
            size, pos = read_varint(data, pos)
            record_end = pos + size
            if size < 0 or record_end > end:
                raise InvalidRecordError(
                    f"Invalid record size: expected {size} bytes in record payload, {end - pos} remain")
            attributes = data[pos]
            timestamp_delta, pos = _record_read_varlong(data, pos + 1)
            offset_delta, pos = read_varint(data, pos)
            length, pos = read_varint(data, pos)
            if length < 0:
                key = None
            else:
                if pos + length > record_end:
                    raise InvalidRecordError("record key runs past the record")
                key = data[pos:pos + length]
                pos += length
            length, pos = read_varint(data, pos)
            if length < 0:
                value = None
            else:
                if pos + length > record_end:
                    raise InvalidRecordError("record value runs past the record")
                value = data[pos:pos + length]
                pos += length
            header_count, pos = read_varint(data, pos)
            if header_count < 0:
                raise InvalidRecordError(f"Found invalid number of record headers {header_count}")
            if header_count > record_end - pos:
                raise InvalidRecordError(
                    f"Found invalid number of record headers. {header_count} is larger than the remaining size "
                    f"of the record")
            headers = []
            for _ in range(header_count):
                length, pos = read_varint(data, pos)
                if length < 0 or pos + length > record_end:
                    raise InvalidRecordError(f"Invalid header key size {length}")
                header_key = data[pos:pos + length].decode("utf-8", "surrogateescape")
                pos += length
                length, pos = read_varint(data, pos)
                if length < 0:
                    header_value = None
                else:
                    if pos + length > record_end:
                        raise InvalidRecordError("record header value runs past the record")
                    header_value = data[pos:pos + length]
                    pos += length
                headers.append((header_key, header_value))
            if pos != record_end:
                raise InvalidRecordError(
                    f"Invalid record size: expected to read {size} bytes in record payload, "
                    f"but instead read {size + pos - record_end}")
            append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    except IndexError:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached") from None
    if pos != end:
        raise InvalidRecordError("Incorrect declared batch size, records still remaining in file")
    return records


# The most one batch's records may decompress to: what one request could carry uncompressed (Kafka's
# default socket.request.max.bytes). A batch above it (a decompression bomb) is refused as corrupt.
MAX_DECOMPRESSED_BATCH_SIZE = 104_857_600


def decode_records(buf: Buffer, pos: int = 0, *, max_decompressed_size: int | None = MAX_DECOMPRESSED_BATCH_SIZE,
                   ) -> tuple[RecordBatchHeader, list[Record]]:
    """Decode the batch at ``pos``, decompressing its records (bounded by ``max_decompressed_size``).

    The CRC is not checked here (``validate_batch`` does that).
    """
    header, data = _records_data(buf, pos, max_decompressed_size)
    return header, _decode_record_list(data, header.records_count)


def _records_data(buf: Buffer, pos: int, max_decompressed_size: int | None) -> tuple[RecordBatchHeader, bytes]:
    """The header of the batch at ``pos`` and its records' bytes, decompressed."""
    header = parse_batch_header(buf, pos)
    end = pos + header[1] + LOG_OVERHEAD
    if end > len(buf):
        raise CorruptRecordError(f"record batch is corrupt: {end - pos} bytes declared, {len(buf) - pos} present")
    count = header.records_count
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    body = memoryview(buf)[pos + RECORD_BATCH_OVERHEAD:end]
    codec = header.compression
    if codec is CompressionType.NONE:
        return header, bytes(body)
    return header, decompress(codec, body, max_decompressed_size)


def decode_records_in_place(buf: Buffer, pos: int = 0) -> list[Record]:
    """The records of the compressed batch at ``pos`` as Kafka reads them in place (wire._record_structure): without
    their lengths (a batch whose lengths do not match its fields reads), without their headers."""
    header, data = _records_data(buf, pos, MAX_DECOMPRESSED_BATCH_SIZE)
    return [Record(offset_delta, timestamp_delta, key, value)
            for offset_delta, timestamp_delta, key, value in read_in_place(data, header.records_count)]


def decode_records_from(buf: Buffer, pos: int, first_offset: int, *,
                        max_decompressed_size: int | None = MAX_DECOMPRESSED_BATCH_SIZE,
                        ) -> tuple[RecordBatchHeader, list[Record]]:
    """The records of the batch at ``pos`` whose offset is ``first_offset`` or later: the earlier ones are
    stepped over by their length (reading only their offset delta), not decoded, so reading the newest
    records of a big batch costs little more than those records."""
    header, data = _records_data(buf, pos, max_decompressed_size)
    count = header.records_count
    if first_offset <= header.base_offset:
        return header, _decode_record_list(data, count)
    wanted_delta = first_offset - header.base_offset
    read_varint = _record_read_varint
    at = 0
    skipped = 0
    try:
        if header.last_offset_delta == count - 1:
            # No gaps (not compacted): record i has offset delta i, so only the sizes are read.
            end_of_data = len(data)
            skipped = min(wanted_delta, count)
            for _ in range(skipped):
                b = data[at]
                if b < 0x80:
                    size, at = (b >> 1) ^ -(b & 1), at + 1
                elif data[at + 1] < 0x80:  # records of 64 to 8191 bytes: two bytes, read here too
                    v = (b & 0x7F) | (data[at + 1] << 7)
                    size, at = (v >> 1) ^ -(v & 1), at + 2
                else:
                    size, at = read_varint(data, at)
                if size < 0 or at + size > end_of_data:
                    raise InvalidRecordError(f"Invalid record size: expected {size} bytes in record payload")
                at += size
        while skipped < count:
            size, start = read_varint(data, at)
            _, after_timestamp = _record_read_varlong(data, start + 1)
            offset_delta, _ = read_varint(data, after_timestamp)
            if offset_delta >= wanted_delta:
                break
            if size < 0 or start + size > len(data):
                raise InvalidRecordError(f"Invalid record size: expected {size} bytes in record payload")
            at = start + size
            skipped += 1
    except IndexError:
        raise InvalidRecordError("Incorrect declared batch size, premature EOF reached") from None
    return header, _decode_record_list(data[at:], count - skipped)


def _encode_record(out: bytearray, record: Record) -> None:
    body = bytearray()
    body.append(record.attributes & 0xFF)
    _record_write_varlong(body, record.timestamp_delta)
    _record_write_varint(body, record.offset_delta)
    for blob in (record.key, record.value):
        if blob is None:
            body.append(1)  # zigzag(-1)
        else:
            _record_write_varint(body, len(blob))
            body += blob
    _record_write_varint(body, len(record.headers))
    for header_key, header_value in record.headers:
        encoded = header_key.encode("utf-8", "surrogateescape")
        _record_write_varint(body, len(encoded))
        body += encoded
        if header_value is None:
            body.append(1)
        else:
            _record_write_varint(body, len(header_value))
            body += header_value
    _record_write_varint(out, len(body))
    out += body


def build_batch(records: Sequence[Record], *, base_offset: int = 0, base_timestamp: int,
                compression: CompressionType | int = CompressionType.NONE, producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                is_transactional: bool = False, is_control: bool = False,
                partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
                timestamp_type: TimestampType | int = TimestampType.CREATE_TIME,
                max_timestamp: int | None = None, last_offset_delta: int | None = None,
                compression_level: int | None = None) -> bytes:
    """Encode a v2 batch with a correct CRC.

    ``max_timestamp`` defaults to the largest record timestamp and ``last_offset_delta`` to the last
    record's; an empty batch (as compaction keeps for producer state) must give ``last_offset_delta``.
    Offset deltas must increase.
    """
    if last_offset_delta is None:
        if not records:
            raise ValueError("an empty batch needs an explicit last_offset_delta")
        last_offset_delta = records[-1].offset_delta
    out = bytearray(RECORD_BATCH_OVERHEAD)
    previous = -1
    max_delta = None
    for record in records:
        if record.offset_delta <= previous:
            raise ValueError(f"offset deltas must increase: {record.offset_delta} after {previous}")
        previous = record.offset_delta
        if max_delta is None or record.timestamp_delta > max_delta:
            max_delta = record.timestamp_delta
        _encode_record(out, record)
    if max_timestamp is None:
        max_timestamp = base_timestamp if max_delta is None else base_timestamp + max_delta
    codec = CompressionType(compression)
    if codec is not CompressionType.NONE:
        with memoryview(out) as view:
            compressed = compress(codec, view[RECORD_BATCH_OVERHEAD:], compression_level)
        out = bytearray(RECORD_BATCH_OVERHEAD)
        out += compressed
    attributes = codec | (TIMESTAMP_TYPE_MASK if timestamp_type else 0)
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    if is_control:
        attributes |= CONTROL_FLAG_MASK
    _HEADER.pack_into(out, 0, base_offset, len(out) - LOG_OVERHEAD, partition_leader_epoch, MAGIC_V2, 0,
                      attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                      base_sequence, len(records))
    _U32.pack_into(out, _CRC_OFFSET, _compute_crc(out, 0, len(out)))
    return bytes(out)


def build_simple_batch(values: Sequence[bytes | None], *, keys: Sequence[bytes | None] | None = None,
                       timestamp: int, **kwargs: object) -> bytes:
    """A batch of ``values`` (and ``keys``) at consecutive offsets, all with ``timestamp``; kwargs as build_batch."""
    if keys is None:
        keys = [None] * len(values)
    elif len(keys) != len(values):
        raise ValueError("keys and values differ in length")
    records = [Record(i, 0, k, v) for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    return build_batch(records, base_timestamp=timestamp, **kwargs)  # type: ignore[arg-type]


# -- control batches (transaction markers) -----------------------------------------------------------------


def build_control_batch(control_type: ControlRecordType | int, *, producer_id: int, producer_epoch: int,
                        base_offset: int = 0, timestamp: int, partition_leader_epoch: int,
                        coordinator_epoch: int) -> bytes:
    """An end-transaction marker (COMMIT or ABORT): a transactional control batch with one record."""
    control_type = ControlRecordType(control_type)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"{control_type!r} is not an end-transaction marker")
    record = Record(0, 0, _CONTROL_KEY.pack(0, control_type), _END_TXN_MARKER.pack(0, coordinator_epoch))
    return build_batch([record], base_offset=base_offset, base_timestamp=timestamp, producer_id=producer_id,
                       producer_epoch=producer_epoch, is_transactional=True, is_control=True,
                       partition_leader_epoch=partition_leader_epoch)


def parse_control_record(record: Record) -> tuple[ControlRecordType, int | None]:
    """(type, coordinator_epoch) of a control record; coordinator_epoch is None unless COMMIT/ABORT.

    As Kafka, newer key/value versions are read as version 0; negative versions or short keys/values
    raise InvalidRecordError.
    """
    key = record.key
    if key is None or len(key) < _CONTROL_KEY.size:
        raise InvalidRecordError(f"control record key must have at least {_CONTROL_KEY.size} bytes")
    version, type_id = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for control record: {version}")
    try:
        control_type = ControlRecordType(type_id)
    except ValueError:
        control_type = ControlRecordType.UNKNOWN
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return control_type, None
    value = record.value
    if value is None or len(value) < _END_TXN_MARKER.size:
        raise InvalidRecordError(
            f"Invalid value size found for end transaction marker. Must have at least {_END_TXN_MARKER.size} bytes")
    version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    if version < 0:
        raise InvalidRecordError(f"Invalid version found for end transaction marker: {version}")
    return control_type, coordinator_epoch
