import errno
import os

import pytest

from storage import (
    CorruptRecordError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    LogConfig,
    OffsetOutOfRangeError,
    OutOfOrderSequenceError,
    RecordTooLargeError,
)
from storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from storage.producer_state import ProducerStateManager
from wire import CompressionType, TimestampType, build_control_batch, iter_batch_headers, parse_batch_header

from .conftest import batch, keyed_batch, open_log, read_all, small_config


def test_append_assigns_offsets_in_place_and_keeps_crc(log_dir):
    log = open_log(log_dir)
    raw = batch([b"a", b"b", b"c"])
    info = log.append_as_leader(raw, 5)
    assert (info.first_offset, info.last_offset, info.records_count, info.num_batches) == (0, 2, 3, 1)
    info = log.append_as_leader(raw, 5)
    assert (info.first_offset, info.last_offset) == (3, 5)
    assert log.log_end_offset == 6
    data = log.read(3, 10_000).records.read_bytes()
    header = parse_batch_header(data)
    assert header.base_offset == 3 and header.partition_leader_epoch == 5
    assert header.crc == parse_batch_header(raw).crc  # base offset and epoch are outside the CRC
    assert data[21:] == raw[21:]
    assert [v for _, _, v in read_all(log)] == [b"a", b"b", b"c"] * 2
    log.close()


def test_compressed_batches_are_stored_as_received(log_dir):
    log = open_log(log_dir)
    for codec in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD):
        raw = keyed_batch([(b"k", b"value" * 20)] * 4, compression=codec)
        info = log.append_as_leader(raw, 0)
        data = log.read(info.first_offset, 1 << 20).records.read_bytes()
        assert data[:parse_batch_header(data).batch_length + 12][21:] == raw[21:]
    assert len(read_all(log)) == 16
    log.close()


def test_refused_batches_write_nothing(log_dir):
    log = open_log(log_dir, small_config(max_message_bytes=500))
    good = batch([b"x"])
    log.append_as_leader(good, 0)
    size = os.path.getsize(os.path.join(log_dir, "00000000000000000000.log"))
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(bytes(good) + bytes(bad_crc), 0)  # the good first batch is not written either
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(good[:-3], 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", 0)
    wrong_base = bytearray(good)
    wrong_base[7] = 9
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(bytes(wrong_base), 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(build_control_batch(0, producer_id=1, producer_epoch=0, timestamp=0,
                                                 partition_leader_epoch=0, coordinator_epoch=0), 0)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(batch([b"x" * 600]), 0)
    two_compressed = keyed_batch([(b"k", b"v")], compression=CompressionType.GZIP) * 2
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(two_compressed, 0)
    assert os.path.getsize(os.path.join(log_dir, "00000000000000000000.log")) == size
    assert log.log_end_offset == 1
    log.close()


def test_timestamps_out_of_range(log_dir, clock):
    log = open_log(log_dir, small_config(message_timestamp_after_max_ms=3_600_000), time_ms=clock)
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(batch([b"x"], timestamp=clock.now + 3_600_001), 0)
    log.append_as_leader(batch([b"x"], timestamp=clock.now + 3_599_000), 0)
    log.close()


def test_log_append_time_rewrites_max_timestamp(log_dir, clock):
    log = open_log(log_dir, small_config(message_timestamp_type="LogAppendTime"), time_ms=clock)
    info = log.append_as_leader(batch([b"x", b"y"], timestamp=5), 0)
    assert info.log_append_time == clock.now
    header = parse_batch_header(log.read(0, 1000).records.read_bytes())
    assert header.timestamp_type is TimestampType.LOG_APPEND_TIME and header.max_timestamp == clock.now
    assert read_all(log)[1][2] == b"y"  # the CRC was recomputed: decoding works
    log.close()


def test_rolls_on_size_and_reads_across_segments(log_dir):
    log = open_log(log_dir)
    for i in range(60):
        log.append_as_leader(batch([b"%03d" % i + b"x" * 200]), 0)
    assert log.num_segments > 3
    names = sorted(n for n in os.listdir(log_dir) if n.endswith(".log"))
    assert all(len(n) == 24 for n in names)  # 20 digits + ".log"
    assert [int(v[:3]) for _, _, v in read_all(log)] == list(range(60))
    # every rolled segment's indexes were trimmed and a producer snapshot taken at the roll
    for seg in log.segments.snapshot()[:-1]:
        assert os.path.getsize(seg.offset_index.path) == seg.offset_index.entries * 8
    assert any(n.endswith(".snapshot") for n in os.listdir(log_dir))
    log.close()


def test_roll_on_segment_ms(log_dir, clock):
    log = open_log(log_dir, small_config(segment_ms=1000), time_ms=clock)
    log.append_as_leader(batch([b"a"], timestamp=clock.now), 0)
    log.append_as_leader(batch([b"b"], timestamp=clock.now + 500), 0)
    assert log.num_segments == 1
    log.append_as_leader(batch([b"c"], timestamp=clock.now + 1001), 0)
    assert log.num_segments == 2 and log.active_segment.base_offset == 2
    log.close()


def test_roll_on_index_full(log_dir):
    log = open_log(log_dir, small_config(internal_segment_bytes=1 << 20, segment_index_bytes=32, index_interval_bytes=0))
    for _ in range(20):
        log.append_as_leader(batch([b"z"]), 0)
    assert log.num_segments > 2
    assert all(s.offset_index.entries <= 4 for s in log.segments.snapshot())
    log.close()


def test_read_semantics(log_dir):
    log = open_log(log_dir)
    for i in range(10):
        log.append_as_leader(batch([b"%d" % i] * 3), 0)  # offsets 3i..3i+2
    info = log.read(4, 1)  # middle of a batch, max_bytes smaller than it
    assert info.size == 1 and info.first_entry_incomplete
    info = log.read(4, 1, min_one_message=True)
    assert parse_batch_header(info.records.read_bytes()).base_offset == 3
    assert info.size == parse_batch_header(info.records.read_bytes()).batch_length + 12
    whole = log.read(0, 1 << 20)
    assert [h.base_offset for _, h in iter_batch_headers(whole.records.read_bytes())] == list(range(0, 30, 3))
    bounded = log.read(0, 1 << 20, max_offset=9)
    assert [h.base_offset for _, h in iter_batch_headers(bounded.records.read_bytes())] == [0, 3, 6]
    assert log.read(30, 100).size == 0
    assert log.read(9, 100, max_offset=9).size == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(31, 100)
    log.maybe_increment_high_watermark(30)
    log.delete_records_before(6)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(5, 100)
    log.close()


def test_every_read_across_segments_starts_at_its_batch_and_stops_at_its_bound(log_dir):
    """Every fetch offset and bound over several segments (the tail of the active one among them: a woken long
    poll's read): the batches from the one holding the offset, none at or past the bound, and an upper bound past
    the last offset read (read_committed's aborted-transaction lookups)."""
    log = open_log(log_dir, small_config(internal_segment_bytes=700, index_interval_bytes=0))
    for i in range(12):
        log.append_as_leader(batch([b"%02d" % i + b"v" * 100] * 2), 0)  # offsets 2i, 2i+1
    assert log.num_segments > 3
    leo = log.log_end_offset
    bases_of_segments = [s.base_offset for s in log.segments.snapshot()]
    for fetch_offset in range(leo + 1):
        for max_offset in range(fetch_offset, leo + 1):
            info = log.read(fetch_offset, 1 << 20, max_offset=max_offset)
            bases = [h.base_offset for _, h in iter_batch_headers(info.records.read_bytes())] if info.size else []
            # the batch holding max_offset is not read, nor any after it; a read stays in one segment
            expected = [b for b in range(fetch_offset - fetch_offset % 2, leo, 2) if b + 1 < max_offset]
            assert bases == expected[:len(bases)] and bool(bases) == bool(expected), (fetch_offset, max_offset)
            if bases:
                segment_end = next((b for b in bases_of_segments if b > bases[-1]), leo)
                # every batch is indexed: the next batch's last offset + 1, else where the segment ends
                upper = bases[-1] + 4 if bases[-1] + 2 < segment_end else bases[-1] + 2
                assert info.next_offset_upper_bound == upper, (fetch_offset, max_offset)
                info.records.release()
    log.close()


def _read_outcome(log, fetch_offset: int, max_bytes: int, max_offset: int, min_one_message: bool) -> tuple:
    """What a read answers, as comparable values: its bytes, flags and bound, or the error it raised."""
    try:
        info = log.read(fetch_offset, max_bytes, max_offset=max_offset, min_one_message=min_one_message)
    except (OffsetOutOfRangeError, ValueError) as exc:
        return (type(exc),)
    records = info.records
    data = records if isinstance(records, bytes) else records.read_bytes()
    if not isinstance(records, bytes):
        records.release()
    return data, info.first_entry_incomplete, info.next_offset_upper_bound, info.size


def test_a_kept_tail_reads_as_the_file_does(log_dir):
    """A batch appended with keep_tail (reads wait at the log end) is read from memory exactly when a read takes it
    whole to the log end, and every read (each offset, size limit, bound, min_one_message) answers what the file
    answers once the tail is dropped: the same bytes, flags and upper bound, or the same error."""
    log = open_log(log_dir, small_config(internal_segment_bytes=20_000, index_interval_bytes=300))
    taken = 0
    sizes = [1, 3, 1, 170, 2, 1, 1, 5, 1]  # 170 records of 100 B: past TAIL_BYTES (never kept); a roll on the way
    for i, n in enumerate(sizes):
        raw = batch([b"%02d" % i + b"v" * 98] * n)
        info = log.append_as_leader(raw, 0, keep_tail=True)
        leo, size = log.log_end_offset, len(raw)
        cases = [(f, m, o, one) for f in range(max(0, info.first_offset - 2), leo + 1)
                 for m in (-1, 0, 1, size - 1, size, size + 1, 1 << 20) for o in (leo - 1, leo, leo + 5)
                 for one in (False, True)]
        kept = [_read_outcome(log, *case) for case in cases]
        taken += sum(1 for out in kept if len(out) > 1 and isinstance(out[0], bytes) and out[3]
                     and log.local._tail is not None and out[0] == log.local._tail[3])
        log.drop_tail()
        assert kept == [_read_outcome(log, *case) for case in cases], i
    assert taken > 0 and log.num_segments > 1
    log.close()


def test_a_kept_tail_goes_with_the_writes_that_change_the_log(log_dir):
    """Truncation, a roll or the next append (kept or not) leave nothing of a kept tail to read."""
    log = open_log(log_dir)
    log.append_as_leader(batch([b"a"]), 0, keep_tail=True)
    log.truncate_to(0)
    log.append_as_leader(batch([b"bb"]), 0)
    assert [v for _, _, v in read_all(log)] == [b"bb"]
    log.append_as_leader(batch([b"c"]), 0, keep_tail=True)
    log.roll()
    assert log.local._tail is None
    log.append_as_leader(batch([b"d"]), 0, keep_tail=True)
    log.append_as_leader(batch([b"e"] * 2), 0)  # the batch kept before is no longer the tail
    assert log.local._tail is None and [v for _, _, v in read_all(log)] == [b"bb", b"c", b"d", b"e", b"e"]
    log.close()


def test_region_survives_segment_deletion(log_dir):
    log = open_log(log_dir)
    for i in range(40):
        log.append_as_leader(batch([b"%03d" % i + b"y" * 200]), 0)
    region = log.read(0, 1000).records
    expected = region.read_bytes()
    log.maybe_increment_high_watermark(log.log_end_offset)
    log.delete_records_before(log.active_segment.base_offset)  # deletes (unlinks, closes) segment 0
    assert not os.path.exists(os.path.join(log_dir, "00000000000000000000.log"))
    assert region.read_bytes() == expected
    out_r, out_w = os.pipe()
    os.sendfile(out_w, region.file.fileno(), region.position, 64)
    assert os.read(out_r, 64) == expected[:64]
    region.release()
    log.close()


def test_fetch_offset_by_timestamp(log_dir):
    log = open_log(log_dir)
    base = 1_700_000_000_000
    for i in range(30):
        log.append_as_leader(batch([b"a" * 100, b"b"], timestamp=base + i * 10), 3)
    assert log.fetch_offset_by_timestamp(base + 55) == (base + 60, 12, 3)
    assert log.fetch_offset_by_timestamp(base) == (base, 0, 3)
    assert log.fetch_offset_by_timestamp(base + 10_000) is None
    assert log.fetch_offset_by_timestamp(MAX_TIMESTAMP) == (base + 290, 58, 3)
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP) == (-1, 60, 3)
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP) == (-1, 0, 3)
    log.close()


def test_high_watermark_and_truncation(log_dir):
    log = open_log(log_dir)
    for _ in range(20):
        log.append_as_leader(batch([b"q" * 100]), 1)
    log.assign_epoch_start_offset(2, 20)
    for _ in range(20):
        log.append_as_leader(batch([b"r" * 100]), 2)
    log.maybe_increment_high_watermark(35)
    log.maybe_increment_high_watermark(30)  # never backwards
    assert log.high_watermark == 35
    log.maybe_increment_high_watermark(1000)
    assert log.high_watermark == 40
    assert log.end_offset_for_epoch(1) == (1, 20)
    assert log.end_offset_for_epoch(2) == (2, 40)
    assert log.truncate_to(25)
    assert log.log_end_offset == 25 and log.high_watermark == 25
    assert log.end_offset_for_epoch(2) == (2, 25)
    assert len(read_all(log)) == 25
    assert not log.truncate_to(30)
    assert log.truncate_to(10)
    assert log.leader_epoch_cache.entries() == [(1, 0)]
    log.append_as_leader(batch([b"new"]), 3)
    assert read_all(log)[-1] == (10, None, b"new")
    log.close()


def test_truncating_at_the_log_end_drops_an_epoch_started_there(log_dir):
    """A broker that became leader (epoch 1 starts at its log end) and appended nothing before losing
    leadership: the new leader's diverging-epoch answer truncates to the log end, which must drop that
    epoch (Kafka's UnifiedLog.truncateTo), or every later fetch diverges again (found by make chaos)."""
    log = open_log(log_dir)
    for _ in range(5):
        log.append_as_leader(batch([b"a"]), 0)
    log.assign_epoch_start_offset(1, 5)
    assert log.leader_epoch_cache.entries() == [(0, 0), (1, 5)]
    assert not log.truncate_to(5)
    assert log.leader_epoch_cache.entries() == [(0, 0)]
    assert log.log_end_offset == 5
    log.close()


def test_idempotent_producer_duplicates_and_gaps(log_dir):
    log = open_log(log_dir)
    first = batch([b"a", b"b"], producer_id=9, producer_epoch=0, base_sequence=0)
    info = log.append_as_leader(first, 0)
    again = log.append_as_leader(first, 0)  # a retry: original offsets, nothing written
    assert again.duplicate and (again.first_offset, again.last_offset) == (info.first_offset, info.last_offset)
    assert log.log_end_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(batch([b"c"], producer_id=9, producer_epoch=0, base_sequence=5), 0)
    log.append_as_leader(batch([b"c"], producer_id=9, producer_epoch=0, base_sequence=2), 0)
    assert log.producer_state.last_entry(9).last_seq == 2
    log.close()


def _idempotent_run(log) -> list:
    """Continuing batches, retries of kept ones, gaps, a new epoch and a batch in an old one: each append's answer
    (offsets or the error's class), and the producer state after them."""
    answers: list = []
    for i, (epoch, seq, count) in enumerate([(0, 0, 2), (0, 2, 3), (0, 5, 1), (0, 2, 3), (0, 9, 1), (0, 6, 1), (0, 0, 2), (1, 0, 2),
                                             (1, 2, 1), (0, 7, 1), (1, 3, 2), (1, 0, 2), (1, 5, 1), (1, 4, 1)]):
        try:
            info = log.append_as_leader(batch([b"v"] * count, producer_id=9, producer_epoch=epoch, base_sequence=seq,
                                              timestamp=1_700_000_000_000 + i), 0)
            answers.append((info.first_offset, info.last_offset, info.duplicate))
        except (OutOfOrderSequenceError, InvalidProducerEpochError) as exc:
            answers.append(type(exc).__name__)
    entry = log.producer_state.last_entry(9)
    log.close()
    return [answers, entry.producer_epoch, entry.last_timestamp, entry.current_txn_first_offset,
            [(b.last_seq, b.last_offset, b.offset_delta, b.timestamp) for b in entry.batch_metadata]]


def test_an_idempotent_producers_next_batch_is_checked_and_kept_as_by_the_full_checks(log_dir, tmp_path,
                                                                                      monkeypatch):
    """Log._append's short way for the next batch of a producer (ProducerStateManager.continued_entry) answers
    and leaves the producer state as the full checks (ProducerAppendInfo) do, for retries, gaps and epochs."""
    short = _idempotent_run(open_log(log_dir))
    monkeypatch.setattr(ProducerStateManager, "continued_entry", lambda self, header: None)
    assert short == _idempotent_run(open_log(str(tmp_path / "topic-1")))
    assert short[0][3] == (2, 4, True) and short[0][4] == "OutOfOrderSequenceError"  # a retry, a gap
    assert short[0][9] == "InvalidProducerEpochError"


def test_a_later_transactional_batch_waits_for_an_earlier_one_whose_check_failed(log_dir):
    """Kafka's VerificationStateEntry: a producer's first batch in a transaction (sequence 0) fails its check
    with the coordinator and is retried; its next batch (sequence 2), checked later, must not be written first,
    or the first one could never be (OUT_OF_ORDER_SEQUENCE_NUMBER forever, a Streams app fenced after its
    transaction timeout)."""
    log = open_log(log_dir)

    def txn_batch(seq: int, epoch: int = 3):
        return batch([b"a", b"b"], producer_id=4, producer_epoch=epoch, base_sequence=seq, is_transactional=True)

    log.maybe_start_transaction_verification(4, 0, 3, True)  # its check fails (CONCURRENT_TRANSACTIONS)
    log.maybe_start_transaction_verification(4, 2, 3, True)  # its check passes
    with pytest.raises(OutOfOrderSequenceError, match="earliest seen sequence"):
        log.append_as_leader(txn_batch(2), 0)
    assert log.log_end_offset == 0
    log.maybe_start_transaction_verification(4, 0, 3, True)  # the retry
    log.append_as_leader(txn_batch(0), 0)
    assert log.producer_state.verification_state_entry(4) is None  # the transaction is open here now
    log.maybe_start_transaction_verification(4, 2, 3, True)  # nothing to remember: the transaction is open
    log.append_as_leader(txn_batch(2), 0)
    assert log.log_end_offset == 4
    # Transaction version 2: the next transaction (epoch 4) is checked before the marker ending this one
    # (written with epoch 4) arrives; the marker keeps its entry.
    log.maybe_start_transaction_verification(4, 0, 4, True)
    log.append_as_leader(build_control_batch(0, producer_id=4, producer_epoch=4, timestamp=1, partition_leader_epoch=0,
                                             coordinator_epoch=0), 0, origin="coordinator")
    assert log.producer_state.verification_state_entry(4).lowest_sequence == 0
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(txn_batch(2, epoch=4), 0)
    log.append_as_leader(txn_batch(0, epoch=4), 0)
    assert log.producer_state.verification_state_entry(4) is None
    log.close()


def test_transaction_markers_fill_the_transaction_index(log_dir):
    log = open_log(log_dir)
    log.append_as_leader(batch([b"t1"], producer_id=4, producer_epoch=0, base_sequence=0, is_transactional=True), 0)
    log.append_as_leader(batch([b"plain"]), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 0
    marker = build_control_batch(0, producer_id=4, producer_epoch=0, timestamp=1, partition_leader_epoch=0,
                                 coordinator_epoch=0)
    log.append_as_leader(marker, 0, origin="coordinator")
    assert log.last_stable_offset == 0  # the marker is above the high watermark until it moves
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 3
    aborted = log.collect_aborted_transactions(0, 3)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(4, 0, 2)]
    log.close()


def test_aborted_transactions_are_found_in_the_segment_of_their_marker(log_dir):
    log = open_log(log_dir)
    log.append_as_leader(batch([b"t1"], producer_id=4, producer_epoch=0, base_sequence=0, is_transactional=True), 0)
    log.append_as_leader(batch([b"plain"]), 0)
    log.roll()
    marker = build_control_batch(0, producer_id=4, producer_epoch=0, timestamp=1, partition_leader_epoch=0,
                                 coordinator_epoch=0)
    log.append_as_leader(marker, 0, origin="coordinator")
    log.maybe_increment_high_watermark(log.log_end_offset)
    # a read_committed fetch that ends with the first segment still needs the abort indexed in the second
    aborted = log.collect_aborted_transactions(0, 2)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in aborted] == [(4, 0, 2)]
    assert log.collect_aborted_transactions(3, 3) == []
    log.close()


def test_follower_append_keeps_offsets_and_drops_partial_tail(log_dir, tmp_path):
    leader = open_log(str(tmp_path / "leader-0"))
    for i in range(5):
        leader.append_as_leader(batch([b"%d" % i]), 7)
    fetched = leader.read(0, 1 << 20).records.read_bytes()
    follower = open_log(log_dir)
    info = follower.append_as_follower(fetched + fetched[:30])
    assert (info.first_offset, info.last_offset) == (0, 4)
    assert follower.log_end_offset == 5 and follower.latest_epoch == 7
    assert follower.read(0, 1 << 20).records.read_bytes() == fetched
    leader.close()
    follower.close()


def test_io_error_takes_the_dir_offline(log_dir, monkeypatch):
    log = open_log(log_dir)
    log.append_as_leader(batch([b"x"]), 0)

    def disk_full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", disk_full)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch([b"y"]), 0)
    monkeypatch.undo()
    assert log.is_offline
    with pytest.raises(KafkaStorageError):
        log.read(0, 100)
    with pytest.raises(KafkaStorageError):
        log.append_as_leader(batch([b"z"]), 0)
    log.close_handlers()


def test_compacted_topic_requires_keys(log_dir):
    log = open_log(log_dir, small_config(cleanup_policy=("compact",)))
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch([b"no key"]), 0)
    log.append_as_leader(keyed_batch([(b"k", b"v")]), 0)
    log.close()


def test_topic_compression_type_recompresses(log_dir):
    log = open_log(log_dir, small_config(compression_type="zstd"))
    log.append_as_leader(keyed_batch([(b"k", b"v" * 100)] * 3), 0)
    header = parse_batch_header(log.read(0, 10_000).records.read_bytes())
    assert header.compression is CompressionType.ZSTD
    assert [v for _, _, v in read_all(log)] == [b"v" * 100] * 3
    log.close()


def test_config_update_applies(log_dir):
    log = open_log(log_dir)
    log.update_config(LogConfig(max_message_bytes=10))
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(batch([b"x" * 20]), 0)
    log.close()


def test_partition_dir_names_with_kafkas_suffixes_parse():
    from storage.log import future_dir_name, parse_topic_partition_name
    assert parse_topic_partition_name("my.topic-3") == ("my.topic", 3)
    assert parse_topic_partition_name(future_dir_name("my.topic-x", 12)) == ("my.topic-x", 12)
    assert parse_topic_partition_name("t-0.0123456789abcdef0123456789abcdef-delete") == ("t", 0)
    with pytest.raises(ValueError):
        parse_topic_partition_name("t.0123-future")


def test_rename_dir_points_every_file_at_the_new_dir(tmp_path):

    log = open_log(str(tmp_path / "a" / "t-0"))
    for i in range(40):  # several segments and producer snapshots
        log.append_as_leader(batch([b"v%d" % i] * 20), 0)
    os.makedirs(tmp_path / "b")
    log.rename_dir(str(tmp_path / "b" / "t-0"))
    assert log.parent_dir == str(tmp_path / "b") and not os.path.exists(tmp_path / "a" / "t-0")
    before = read_all(log)
    log.append_as_leader(batch([b"after"]), 0)
    log.roll()
    log.flush()
    log.close()
    reopened = open_log(str(tmp_path / "b" / "t-0"), had_clean_shutdown=True)
    assert read_all(reopened) == before + [(before[-1][0] + 1, None, b"after")]
    reopened.close()


def test_a_flush_racing_a_rename_of_its_dir_flushes_the_dir_under_its_new_name(tmp_path, monkeypatch):
    """A scheduled flush reads the dir's name, then the event loop swaps the log in from its future dir: the
    fsync of the old name must not take the log dir offline (it did, ENOENT)."""
    import storage.local_log as local_log

    log = open_log(str(tmp_path / "a" / "t-0.0123-future"))
    for i in range(40):  # new segments since the recovery point: the flush fsyncs the dir too
        log.append_as_leader(batch([b"v%d" % i] * 20), 0)
    real_fsync_dir = local_log.fsync_dir
    synced: list[str] = []

    def renamed_first(path):
        if not synced:  # the swap lands between the flush's read of the dir and its fsync
            log.rename_dir(str(tmp_path / "a" / "t-0"))
        synced.append(str(path))
        real_fsync_dir(path)

    monkeypatch.setattr(local_log, "fsync_dir", renamed_first)
    log.flush()
    assert not log.is_offline and log.local.recovery_point == log.log_end_offset
    assert synced == [str(tmp_path / "a" / "t-0.0123-future"), str(tmp_path / "a" / "t-0")]
    log.close()
