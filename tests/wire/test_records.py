"""Record batch v2: golden bytes from an independent client, round trips, rewrites, validation, recovery scans."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from wire import (
    LOG_OVERHEAD,
    MAGIC_V2,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    ControlRecordType,
    CorruptRecordError,
    InvalidRecordError,
    Record,
    RecordError,
    TimestampType,
    assign_leader_offsets,
    batch_crc_is_valid,
    build_batch,
    build_control_batch,
    build_simple_batch,
    decode_records,
    decode_records_from,
    iter_batch_headers,
    parse_batch_header,
    parse_control_record,
    scan_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)

T0 = 1_700_000_000_000

# Two records built by kafka-python's DefaultRecordBatchBuilder: (0, T0, b"k1", b"v1", [("h", b"x")]) and
# (1, T0 + 5, None, b"v2", []), uncompressed, no producer id. Captured once, kept as bytes.
GOLDEN = bytes.fromhex(
    "000000000000000000000049000000000297f4442a0000000000010000018bcfe568000000018bcfe56805ffffffffffffffff"
    "ffffffffffff000000021c000000046b31047631020268027810000a020104763200"
)
GOLDEN_RECORDS = [Record(0, 0, b"k1", b"v1", [("h", b"x")]), Record(1, 5, None, b"v2", [])]


def _kafka_python_batch(records: list[Record], codec: CompressionType, *, producer_id: int = -1,
                        producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec), is_transactional=transactional,
                                        producer_id=producer_id, producer_epoch=producer_epoch,
                                        base_sequence=base_sequence, batch_size=1 << 24)
    for r in records:
        assert builder.append(r.offset_delta, timestamp=T0 + r.timestamp_delta, key=r.key, value=r.value,
                              headers=r.headers) is not None
    return bytes(builder.build())


def _rewrite(batch: bytes, fmt: str, offset: int, value: int, *, fix_crc: bool = True) -> bytes:
    """A copy of ``batch`` with one header field changed (and its CRC made valid again)."""
    buf = bytearray(batch)
    struct.pack_into(fmt, buf, offset, value)
    if fix_crc:
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


# -- golden bytes and the header ---------------------------------------------------------------------------


def test_golden_header() -> None:
    h = parse_batch_header(GOLDEN)
    assert h == (0, 73, 0, 2, 0x97F4442A, 0, 1, T0, T0 + 5, -1, -1, -1, 2)
    assert h.total_size == len(GOLDEN) == 85
    assert (h.last_offset, h.next_offset) == (1, 2)
    assert h.compression is CompressionType.NONE
    assert h.timestamp_type is TimestampType.CREATE_TIME
    assert not (h.is_transactional or h.is_control or h.has_delete_horizon or h.has_producer_id)
    assert h.delete_horizon_ms is None and h.last_sequence == -1
    assert batch_crc_is_valid(GOLDEN, 0, h)


def test_golden_both_ways() -> None:
    header, records = decode_records(GOLDEN)
    assert records == GOLDEN_RECORDS
    assert [header.timestamp_of(r) for r in records] == [T0, T0 + 5]
    assert [header.offset_of(r) for r in records] == [0, 1]
    # kafka-python writes partition_leader_epoch 0 where the Java client writes -1.
    assert build_batch(GOLDEN_RECORDS, base_timestamp=T0, partition_leader_epoch=0) == GOLDEN
    assert _kafka_python_batch(GOLDEN_RECORDS, CompressionType.NONE) == GOLDEN


def test_header_constants() -> None:
    assert (RECORD_BATCH_OVERHEAD, LOG_OVERHEAD, MAGIC_V2) == (61, 12, 2)
    empty = build_batch([], base_timestamp=T0, last_offset_delta=4, base_offset=10)
    assert len(empty) == RECORD_BATCH_OVERHEAD
    h = validate_batch(empty, from_client=False)
    assert (h.records_count, h.last_offset, h.max_timestamp) == (0, 14, T0)
    assert decode_records(empty)[1] == []


def test_header_flags_and_sequences() -> None:
    batch = build_batch([Record(0, 0, None, b"a"), Record(1, 0, None, b"b")], base_timestamp=T0, producer_id=7,
                        producer_epoch=3, base_sequence=0x7FFFFFFF, is_transactional=True,
                        timestamp_type=TimestampType.LOG_APPEND_TIME, compression=CompressionType.LZ4)
    h = parse_batch_header(batch)
    assert h.is_transactional and h.has_producer_id and not h.is_control
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME and h.compression is CompressionType.LZ4
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 3, 0x7FFFFFFF)
    assert h.last_sequence == 0  # sequences wrap from INT32_MAX to 0


@pytest.mark.parametrize("make", [
    lambda b: b[:60],
    lambda b: _rewrite(b, ">b", 16, 1),
    lambda b: _rewrite(b, ">i", 8, 48),
    lambda b: b"",
], ids=["short", "magic 1", "batch_length 48", "empty"])
def test_parse_batch_header_rejects(make) -> None:
    with pytest.raises(CorruptRecordError):
        parse_batch_header(make(GOLDEN))


# -- interoperability with kafka-python's builder and reader, every codec ----------------------------------

INTEROP_RECORDS = [
    Record(0, 0, b"key-0", b"value " * 40, [("trace", b"abc"), ("empty", b""), ("null", None)]),
    Record(1, 3, None, b"value " * 40, []),
    Record(2, -2, b"", None, [("\u00e9t\u00e9", b"\xff")]),
    Record(3, 10_000, b"k" * 300, b"v" * 70_000, []),
]


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_we_read_kafka_python_batches(codec: CompressionType) -> None:
    batch = _kafka_python_batch(INTEROP_RECORDS, codec, producer_id=42, producer_epoch=1, base_sequence=5)
    header = validate_batch(batch)
    assert header.compression is codec
    assert (header.producer_id, header.base_sequence, header.records_count) == (42, 5, 4)
    assert header.max_timestamp == T0 + 10_000
    assert decode_records(batch)[1] == INTEROP_RECORDS


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_kafka_python_reads_our_batches(codec: CompressionType) -> None:
    batch = build_batch(INTEROP_RECORDS, base_timestamp=T0, compression=codec, producer_id=42,
                        producer_epoch=1, base_sequence=5, base_offset=100)
    reader = DefaultRecordBatch(batch)
    assert reader.validate_crc()
    assert reader.compression_type == codec and reader.base_offset == 100
    got = [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in reader]
    assert got == [(100 + r.offset_delta, T0 + r.timestamp_delta, r.key, r.value, r.headers)
                   for r in INTEROP_RECORDS]


def test_uncompressed_bytes_identical_to_kafka_python() -> None:
    ours = build_batch(INTEROP_RECORDS, base_timestamp=T0, partition_leader_epoch=0, producer_id=42,
                       producer_epoch=1, base_sequence=5)
    assert ours == _kafka_python_batch(INTEROP_RECORDS, CompressionType.NONE, producer_id=42, producer_epoch=1,
                                       base_sequence=5)


# -- round trips --------------------------------------------------------------------------------------------

blobs = st.none() | st.binary(max_size=40)
headers = st.lists(st.tuples(st.text(max_size=8), blobs), max_size=3)


@st.composite
def record_lists(draw) -> list[Record]:
    gaps = draw(st.lists(st.integers(1, 1000), min_size=1, max_size=12))
    offsets = [sum(gaps[:i + 1]) - 1 for i in range(len(gaps))]
    return [Record(o, draw(st.integers(-(2 ** 40), 2 ** 40)), draw(blobs), draw(blobs), draw(headers))
            for o in offsets]


@settings(max_examples=120, deadline=None)
@given(records=record_lists(), codec=st.sampled_from(list(CompressionType)),
       base_offset=st.integers(0, 2 ** 62), base_timestamp=st.integers(0, 2 ** 50))
def test_round_trip(records: list[Record], codec: CompressionType, base_offset: int, base_timestamp: int) -> None:
    batch = build_batch(records, base_offset=base_offset, base_timestamp=base_timestamp, compression=codec)
    header = validate_batch(batch, from_client=False)
    assert header.last_offset_delta == records[-1].offset_delta
    assert header.max_timestamp == base_timestamp + max(r.timestamp_delta for r in records)
    assert decode_records(batch) == (header, records)
    assert decode_records(b"\x00" * 7 + batch, 7) == (header, records)


def test_extreme_varints_round_trip() -> None:
    records = [Record(0, -(2 ** 63), None, None), Record(2 ** 31 - 1, 2 ** 63 - 1 - T0, b"", b"")]
    batch = build_batch(records, base_timestamp=T0)
    assert decode_records(batch)[1] == records


def test_build_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        build_batch([Record(1, 0, None, None), Record(1, 0, None, None)], base_timestamp=T0)
    with pytest.raises(ValueError):
        build_batch([], base_timestamp=T0)
    with pytest.raises(ValueError):
        build_batch([Record(2 ** 31, 0, None, None)], base_timestamp=T0)


def test_build_simple_batch() -> None:
    batch = build_simple_batch([b"a", None, b"c"], keys=[b"1", b"2", None], timestamp=T0,
                               compression=CompressionType.ZSTD)
    header, records = decode_records(batch)
    assert header.records_count == 3 and header.compression is CompressionType.ZSTD
    assert [(r.offset_delta, r.key, r.value) for r in records] == [(0, b"1", b"a"), (1, b"2", None), (2, None, b"c")]


# -- in-place rewrites ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.SNAPPY], ids=lambda c: c.name)
def test_offset_and_epoch_rewrites_keep_crc(codec: CompressionType) -> None:
    buf = bytearray(b"\xee" * 5) + build_batch(INTEROP_RECORDS, base_timestamp=T0, compression=codec)
    view = memoryview(buf)
    set_base_offset(view, 5, 1234)
    set_partition_leader_epoch(buf, 5, 17)
    h = validate_batch(buf, 5, from_client=False)
    assert (h.base_offset, h.partition_leader_epoch, h.last_offset) == (1234, 17, 1237)
    assert buf[:5] == b"\xee" * 5


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4], ids=lambda c: c.name)
def test_assign_leader_offsets_returns_the_header_as_rewritten(codec: CompressionType) -> None:
    buf = bytearray(b"\xee" * 5) + build_batch(INTEROP_RECORDS, base_timestamp=T0, compression=codec, producer_id=7,
                                               producer_epoch=1, base_sequence=40)
    header = assign_leader_offsets(memoryview(buf), 5, 1234, 17)
    assert header == validate_batch(buf, 5, from_client=False)  # and the CRC still holds
    assert (header.base_offset, header.partition_leader_epoch, header.last_offset) == (1234, 17, 1237)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 1, 40)
    assert buf[:5] == b"\xee" * 5


def test_set_log_append_time() -> None:
    buf = bytearray(build_batch(INTEROP_RECORDS, base_timestamp=T0, compression=CompressionType.GZIP))
    set_log_append_time(buf, 0, T0 + 99_999)
    h = validate_batch(buf)  # CRC recomputed
    assert h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert (h.base_timestamp, h.max_timestamp) == (T0, T0 + 99_999)
    assert h.compression is CompressionType.GZIP
    # Readers take every record's timestamp from max_timestamp.
    assert {r.timestamp for r in DefaultRecordBatch(bytes(buf))} == {T0 + 99_999}
    assert {h.timestamp_of(r) for r in decode_records(buf)[1]} == {T0 + 99_999}
    before = bytes(buf)
    set_log_append_time(buf, 0, T0 + 99_999)
    assert bytes(buf) == before


def test_set_log_append_time_keeps_known_flags_and_drops_unknown_bits() -> None:
    batch = build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, timestamp=T0,
                                partition_leader_epoch=0, coordinator_epoch=0)
    buf = bytearray(_rewrite(batch, ">h", 21, 0x0130))  # control + transactional + an undefined bit 8
    set_log_append_time(buf, 0, T0 + 1)
    h = validate_batch(buf, from_client=False)
    assert h.attributes == 0x0038 and h.is_control and h.is_transactional


# -- validation on the produce path ---------------------------------------------------------------------------

GOOD = build_simple_batch([b"a", b"b", b"c"], timestamp=T0, producer_id=5, producer_epoch=0, base_sequence=0)


def test_validate_accepts_a_client_batch() -> None:
    h = validate_batch(GOOD)
    assert h.records_count == 3 and h.last_sequence == 2


@pytest.mark.parametrize("batch, error, match", [
    (GOOD[:-1], CorruptRecordError, "present"),
    (GOOD[:40], CorruptRecordError, "header"),
    (_rewrite(GOOD, ">b", 16, 1), CorruptRecordError, "magic"),
    (_rewrite(GOOD, ">i", 8, 10), CorruptRecordError, "batch_length"),
    (_rewrite(GOOD, ">I", 17, 12345, fix_crc=False), CorruptRecordError, "crc"),
    (GOOD[:-1] + bytes([GOOD[-1] ^ 1]), CorruptRecordError, "crc"),
    (_rewrite(GOOD, ">h", 21, 5), CorruptRecordError, "compression"),
    (_rewrite(GOOD, ">q", 0, 1, fix_crc=False), InvalidRecordError, "base_offset"),
    (_rewrite(GOOD, ">i", 23, -1), InvalidRecordError, "offset range"),
    (_rewrite(GOOD, ">i", 57, 0), InvalidRecordError, "count"),
    (_rewrite(GOOD, ">i", 57, 4), InvalidRecordError, "Inconsistent"),
    (_rewrite(GOOD, ">i", 53, -1), InvalidRecordError, "sequence"),
    (build_control_batch(ControlRecordType.ABORT, producer_id=5, producer_epoch=0, timestamp=T0,
                         partition_leader_epoch=0, coordinator_epoch=0), InvalidRecordError, "control"),
], ids=["truncated", "no header", "magic", "length", "crc field", "crc body", "codec", "base offset",
        "offset range", "zero count", "count mismatch", "no sequence", "control from client"])
def test_validate_rejects(batch: bytes, error: type[RecordError], match: str) -> None:
    with pytest.raises(error, match=f"(?i){match}"):
        validate_batch(batch)


def test_errors_are_separate_classes_with_kafka_error_codes() -> None:
    assert not issubclass(InvalidRecordError, CorruptRecordError)
    assert not issubclass(CorruptRecordError, InvalidRecordError)
    assert issubclass(InvalidRecordError, RecordError) and issubclass(CorruptRecordError, RecordError)
    assert (CorruptRecordError.error_code, InvalidRecordError.error_code) == (2, 87)


def test_validate_from_replication_skips_client_rules() -> None:
    marker = build_control_batch(ControlRecordType.ABORT, producer_id=5, producer_epoch=0, timestamp=T0,
                                 partition_leader_epoch=0, coordinator_epoch=0, base_offset=77)
    assert validate_batch(marker, from_client=False).base_offset == 77


# -- control batches ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("control_type", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_control_batch(control_type: ControlRecordType) -> None:
    batch = build_control_batch(control_type, producer_id=9, producer_epoch=2, base_offset=500, timestamp=T0,
                                partition_leader_epoch=3, coordinator_epoch=11)
    header, [record] = decode_records(batch)
    assert header.is_control and header.is_transactional and header.base_sequence == -1
    assert (header.producer_id, header.producer_epoch, header.partition_leader_epoch) == (9, 2, 3)
    assert (header.base_offset, header.records_count, header.last_offset_delta) == (500, 1, 0)
    assert record.key == struct.pack(">hh", 0, control_type) and record.value == struct.pack(">hi", 0, 11)
    assert parse_control_record(record) == (control_type, 11)
    # kafka-python's reader recognises the marker too.
    [theirs] = list(DefaultRecordBatch(batch))
    assert theirs.type == control_type


def test_parse_control_record_edge_cases() -> None:
    assert parse_control_record(Record(0, 0, struct.pack(">hh", 0, 2), b"")) == (ControlRecordType.LEADER_CHANGE, None)
    assert parse_control_record(Record(0, 0, struct.pack(">hh", 0, 99), None)) == (ControlRecordType.UNKNOWN, None)
    # Newer key/value versions are read as version 0.
    assert parse_control_record(Record(0, 0, struct.pack(">hh", 1, 1), struct.pack(">hih", 1, 4, 0))) == (
        ControlRecordType.COMMIT, 4)
    for key, value in [(b"\x00\x00\x00", b""), (None, b""), (struct.pack(">hh", -1, 1), b""),
                       (struct.pack(">hh", 0, 1), b"\x00\x00\x00"), (struct.pack(">hh", 0, 0), struct.pack(">hi", -1, 0))]:
        with pytest.raises(InvalidRecordError):
            parse_control_record(Record(0, 0, key, value))
    with pytest.raises(ValueError):
        build_control_batch(ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=0, timestamp=T0,
                            partition_leader_epoch=0, coordinator_epoch=0)


# -- scanning a log: clean end, torn tail, corruption ----------------------------------------------------------

STREAM_BATCHES = [
    build_simple_batch([b"x" * 10], timestamp=T0, base_offset=0),
    build_simple_batch([b"y" * 30, b"z"], timestamp=T0, base_offset=1, compression=CompressionType.LZ4),
    build_simple_batch([b"w" * 5] * 3, timestamp=T0, base_offset=3),
]
STREAM = b"".join(STREAM_BATCHES)
ENDS = [sum(len(b) for b in STREAM_BATCHES[:i + 1]) for i in range(len(STREAM_BATCHES))]


def test_scan_clean_stream() -> None:
    scan = scan_batches(STREAM, check_crc=True)
    assert scan.is_clean and not scan.torn_tail and scan.error is None
    assert [pos for pos, _ in scan.batches] == [0] + ENDS[:-1]
    assert [h.base_offset for _, h in scan.batches] == [0, 1, 3]
    assert scan.valid_bytes == len(STREAM)
    assert list(iter_batch_headers(STREAM)) == scan.batches
    assert scan_batches(b"").is_clean


def test_scan_every_truncation_reports_the_valid_prefix() -> None:
    for cut in range(len(STREAM)):
        scan = scan_batches(STREAM[:cut])
        expected = max([0] + [e for e in ENDS if e <= cut])
        assert scan.valid_bytes == expected, cut
        assert len(scan.batches) == sum(e <= cut for e in ENDS)
        assert scan.error is None and scan.torn_tail == (cut != expected)
        assert [p for p, _ in iter_batch_headers(STREAM[:cut])] == [p for p, _ in scan.batches]


def test_scan_stops_at_corruption() -> None:
    garbage = scan_batches(STREAM + b"\x00" * 30)  # zero-filled tail after a crash: batch_length 0
    assert garbage.valid_bytes == len(STREAM) and garbage.error is not None and not garbage.torn_tail
    bad_magic = scan_batches(STREAM + _rewrite(STREAM_BATCHES[0], ">b", 16, 1))
    assert bad_magic.valid_bytes == len(STREAM) and "magic" in str(bad_magic.error)
    flipped = bytearray(STREAM)
    flipped[ENDS[0] + 70] ^= 0xFF
    assert scan_batches(bytes(flipped)).is_clean  # framing intact; CRC unchecked
    scan = scan_batches(bytes(flipped), check_crc=True)
    assert scan.valid_bytes == ENDS[0] and "CRC" in str(scan.error)
    too_big = scan_batches(STREAM, max_batch_size=len(STREAM_BATCHES[0]))
    assert too_big.valid_bytes == ENDS[0] and too_big.error is not None
    with pytest.raises(CorruptRecordError):
        list(iter_batch_headers(STREAM + b"\x00" * 61))


# -- malformed records and fuzzing ----------------------------------------------------------------------------


def _with_records_section(body: bytes, count: int) -> bytes:
    """A batch whose records section is ``body`` verbatim, claiming ``count`` records."""
    batch = bytearray(build_batch([], base_timestamp=T0, last_offset_delta=max(count - 1, 0)))
    batch += body
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">i", batch, 57, count)
    return bytes(batch)


@pytest.mark.parametrize("body, count", [
    (b"\x0c\x00\x00\x00\x01\x02\x01\x00", 1),  # record length says 6 bytes, 7 follow
    (b"\x10\x00\x00\x00\x01\x01\x00", 1),  # record length says 8 bytes, only 6 follow
    (b"\x0c\x00\x00\x00\x01\x01\x00", 2),  # one record where two are declared
    (b"\x0c\x00\x00\x00\x01\x01\x00" * 2, 1),  # bytes left after the declared records
    (b"\x0c\x00\x00\x00\x01\x01\x01", 1),  # header count -1
    (b"\x10\x00\x00\x00\x01\x01\x02\x01\x00", 1),  # header key size -1
    (b"\x0c\x00\x00\x00\x7e\x01\x00", 1),  # key of 63 bytes runs past the record
    (b"\x0c\x00\x00\xff\xff\xff\xff\xff\x00", 1),  # an offset_delta varint of more than 5 bytes
], ids=["long", "short", "missing", "extra", "headers -1", "header key -1", "key overrun", "varint"])
def test_malformed_records_are_invalid(body: bytes, count: int) -> None:
    with pytest.raises(InvalidRecordError):
        decode_records(_with_records_section(body, count))


def test_negative_record_count_and_bad_compressed_data() -> None:
    with pytest.raises(InvalidRecordError):
        decode_records(_rewrite(GOLDEN, ">i", 57, -1))
    with pytest.raises(CorruptRecordError):
        decode_records(_rewrite(GOLDEN, ">h", 21, int(CompressionType.ZSTD)))
    bomb = build_simple_batch([b"\x00" * 100_000], timestamp=T0, compression=CompressionType.GZIP)
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decode_records(bomb, max_decompressed_size=50_000)


def test_negative_key_and_value_lengths_below_minus_one_read_as_null() -> None:
    # Kafka's Utils.readBytes treats every negative length as null.
    header, [record] = decode_records(_with_records_section(b"\x0c\x00\x00\x00\x03\x05\x00", 1))
    assert record.key is None and record.value is None


ENTRY_POINTS = [
    lambda b: parse_batch_header(b),
    lambda b: validate_batch(b),
    lambda b: decode_records(b, max_decompressed_size=1 << 20),
    lambda b: scan_batches(b, check_crc=True),
    lambda b: list(iter_batch_headers(b)),
]


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes_only_raise_record_errors(data: bytes) -> None:
    for entry in ENTRY_POINTS:
        try:
            entry(data)
        except RecordError:
            pass


@settings(max_examples=300, deadline=None)
@given(data=st.data(), base=st.sampled_from([GOLDEN] + [build_batch(INTEROP_RECORDS[:3], base_timestamp=T0,
                                                                      compression=c) for c in CompressionType]))
def test_damaged_batches_only_raise_record_errors(data: st.DataObject, base: bytes) -> None:
    buf = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        buf[data.draw(st.integers(0, len(buf) - 1))] = data.draw(st.integers(0, 255))
    buf = buf[:data.draw(st.integers(0, len(buf)))]
    for entry in ENTRY_POINTS:
        try:
            entry(bytes(buf))
        except RecordError:
            pass


def zstd_bomb(value_size: int) -> bytes:
    """A one-record zstd batch whose record value is ``value_size`` zero bytes (compressed as a stream, so the
    frame does not state its decompressed size; a few KiB on the wire)."""
    import struct as _struct

    import crc32c
    import zstandard

    def varint(n: int) -> bytes:
        z, out = (n << 1) ^ (n >> 63), bytearray()
        while z > 0x7F:
            out.append(z & 0x7F | 0x80)
            z >>= 7
        out.append(z)
        return bytes(out)

    body = b"\x00" + varint(0) + varint(0) + varint(-1) + varint(value_size)
    record_length = len(body) + value_size + 1
    compressor = zstandard.ZstdCompressor().compressobj()
    compressed = [compressor.compress(varint(record_length) + body)]
    chunk = b"\x00" * (1 << 20)
    for _ in range(value_size >> 20):
        compressed.append(compressor.compress(chunk))
    compressed.append(compressor.compress(b"\x00" * (value_size & ((1 << 20) - 1)) + varint(0)))
    compressed.append(compressor.flush())
    template = bytearray(build_simple_batch([b"x"], timestamp=T0, compression=CompressionType.ZSTD)[:61])
    batch = template + b"".join(compressed)
    _struct.pack_into(">i", batch, 8, len(batch) - 12)
    _struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def test_a_decompression_bomb_is_refused_by_default() -> None:
    """Every caller is bounded: one batch's records decompress to at most MAX_DECOMPRESSED_BATCH_SIZE."""
    from wire._records import MAX_DECOMPRESSED_BATCH_SIZE

    bomb = zstd_bomb(MAX_DECOMPRESSED_BATCH_SIZE + (1 << 20))
    assert len(bomb) < 64 * 1024
    validate_batch(bomb)  # a well-formed batch: only its size is wrong
    with pytest.raises(CorruptRecordError, match="exceeds"):
        decode_records(bomb)
    header, [record] = decode_records(zstd_bomb(1 << 20))
    assert record.value == b"\x00" * (1 << 20)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_decode_records_from_steps_over_earlier_records(codec: CompressionType) -> None:
    """Only the records at or after the offset asked, as decode_records would give them, in a contiguous
    batch (sizes only read) and a compacted one (offset deltas with gaps)."""
    records = [Record(i, i, None if i % 3 else b"k%d" % i, b"v" * (i * 7 % 300), [("h", b"x")] if i % 2 else [])
               for i in range(300)]
    gapped = [Record(2 * i, i, None, b"g%d" % i, []) for i in range(50)]
    for batch_records in (records, gapped):
        batch = build_batch(batch_records, base_offset=100, base_timestamp=1, compression=codec)
        _, whole = decode_records(batch)
        for first in [0, 100, 101, 150, 199, 250, 399, 400, 500]:
            _, got = decode_records_from(batch, 0, first)
            assert got == [r for r in whole if 100 + r.offset_delta >= first], first
