import os

import pytest

from storage.cleaner import LogCleaner, clean_log
from wire import (
    CompressionType,
    ControlRecordType,
    build_control_batch,
    decode_records,
    iter_batch_headers,
    parse_control_record,
)

from .conftest import keyed_batch, open_log, read_all, small_config

DAY = 86_400_000


def compact_config(**kw):
    base = dict(cleanup_policy=("compact",), delete_retention_ms=DAY, min_cleanable_dirty_ratio=0.0)
    base.update(kw)
    return small_config(**base)


def latest(pairs):
    out = {}
    for offset, key, value in pairs:
        out[key] = (offset, value)
    return out


def test_keeps_the_last_value_per_key_and_offsets(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    written = []
    for i in range(120):
        key, value = b"k%d" % (i % 7), b"v%03d" % i + b"." * 60
        info = log.append_as_leader(keyed_batch([(key, value)]), 0)
        written.append((info.first_offset, key, value))
    log.maybe_increment_high_watermark(log.log_end_offset)
    before = read_all(log)
    active_base = log.active_segment.base_offset
    result = clean_log(log)
    assert result.segments_cleaned >= 1 and result.records_removed > 0
    after = read_all(log)
    # every record left is the last of its key below the active segment, at its original offset
    last_below = latest([w for w in before if w[0] < active_base])
    expected = [w for w in before if w[0] >= active_base or last_below[w[1]][0] == w[0]]
    assert after == expected
    assert latest(after) == latest(before)
    assert log.active_segment.base_offset == active_base
    assert not [n for n in os.listdir(log_dir) if n.endswith((".cleaned", ".swap"))]
    # reads by offset still work from anywhere, including gaps
    assert log.read(1, 1 << 20, min_one_message=True).size > 0
    log.close()
    reopened = open_log(log_dir, compact_config())
    assert read_all(reopened) == after
    reopened.close()


def test_tombstones_dropped_after_delete_retention(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    for _i in range(30):
        log.append_as_leader(keyed_batch([(b"a", b"x" * 100), (b"b", b"y" * 100)]), 0)
    log.append_as_leader(keyed_batch([(b"a", None)]), 0)  # delete key a
    for _i in range(30):
        log.append_as_leader(keyed_batch([(b"c", b"z" * 100)]), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    clean_log(log)
    keys = {k: v for _, k, v in read_all(log)}
    assert keys[b"a"] is None  # the tombstone stays, marked with a delete horizon
    tombstone_batches = []
    for seg in log.segments.snapshot():
        data = seg.log.read(0, seg.size)
        for pos, header in iter_batch_headers(data):
            _, records = decode_records(data, pos)
            if any(r.key == b"a" for r in records):
                tombstone_batches.append(header)
    assert tombstone_batches[-1].has_delete_horizon
    assert tombstone_batches[-1].delete_horizon_ms == clock.now + DAY
    clock.advance(DAY + 1)
    clean_log(log, first_dirty_offset=log.log_start_offset)
    assert b"a" not in {k for _, k, _ in read_all(log)}
    assert {k for _, k, _ in read_all(log)} >= {b"b", b"c"}
    log.close()


def test_min_compaction_lag_protects_recent_segments(log_dir, clock):
    log = open_log(log_dir, compact_config(min_compaction_lag_ms=DAY), time_ms=clock)
    for i in range(60):
        log.append_as_leader(keyed_batch([(b"k", b"v%d" % i + b"." * 100)], timestamp=clock.now), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    before = read_all(log)
    assert clean_log(log).segments_cleaned == 0
    assert read_all(log) == before
    clock.advance(DAY + 1)
    assert clean_log(log).segments_cleaned > 0
    log.close()


def test_recompresses_with_the_original_codec(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    for i in range(40):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % 2), b"v%d" % i + b"." * 80), (b"u%d" % i, b"w")],
                                         compression=CompressionType.LZ4), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    clean_log(log)
    seg = log.segments.first_segment()
    data = seg.log.read(0, seg.size)
    headers = [h for _, h in iter_batch_headers(data)]
    assert all(h.compression is CompressionType.LZ4 for h in headers)
    assert any(h.records_count == 1 for h in headers)  # a rebuilt batch
    log.close()


@pytest.mark.parametrize("crash_point", ["before_swap"])
def test_crash_before_swap_leaves_a_consistent_log(tmp_path, clock, crash_point):
    path = str(tmp_path / "c-0")
    log = open_log(path, compact_config(), time_ms=clock)
    for i in range(80):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % 3), b"v%d" % i + b"." * 100)]), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    before = read_all(log)

    class Crash(Exception):
        pass

    def boom():
        raise Crash

    with pytest.raises(Crash):
        clean_log(log, before_swap=boom)
    log.close_handlers()
    # leave a .cleaned file behind as a crash would
    open(os.path.join(path, "00000000000000000000.log.cleaned"), "wb").write(b"partial")
    reopened = open_log(path, compact_config())
    assert read_all(reopened) == before
    reopened.close()


def test_cleaner_thread_picks_dirtiest_log_and_checkpoints(tmp_path, clock):
    logs = []
    for name in ("a-0", "b-0"):
        log = open_log(str(tmp_path / name), compact_config(min_cleanable_dirty_ratio=0.5), time_ms=clock)
        logs.append(log)
    for i in range(60):
        logs[0].append_as_leader(keyed_batch([(b"same", b"v%d" % i + b"." * 100)]), 0)
        logs[1].append_as_leader(keyed_batch([(b"k%d" % i, b"v" + b"." * 100)]), 0)
    for log in logs:
        log.maybe_increment_high_watermark(log.log_end_offset)
    cleaner = LogCleaner(lambda: logs, time_ms=clock)
    first = cleaner.grab_filthiest_log()
    assert first is not None and first.cleanable_ratio == 1.0
    result = cleaner.clean_once()
    assert result is not None
    with open(tmp_path / "cleaner-offset-checkpoint") as f:
        text = f.read()
    assert text.startswith("0\n1\n")
    assert cleaner.checkpointed_offset(first.log) == result.next_dirty_offset
    cleaner.clean_once()
    assert cleaner.grab_filthiest_log() is None  # everything cleaned up to the active segments
    for log in logs:
        log.close()


def test_a_deleted_log_changes_the_checkpoint_only_when_it_is_in_it(tmp_path, clock):
    """Deleting a topic's logs told the cleaner of each one, and each rewrote the checkpoint (two fsyncs): 800
    partitions took seconds. A log that was never cleaned is not in the checkpoint, so nothing is written; an
    update before the cleaner has read the checkpoint keeps the entries of the others."""
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n2\nc 0 7\nc 1 9\n")
    logs = [open_log(str(tmp_path / name), compact_config(), time_ms=clock) for name in ("c-0", "c-1", "d-0")]
    cleaner = LogCleaner(lambda: logs, time_ms=clock)
    mtime = os.stat(tmp_path / "cleaner-offset-checkpoint").st_mtime_ns
    os.utime(tmp_path / "cleaner-offset-checkpoint", ns=(mtime - 10**9, mtime - 10**9))
    cleaner.update_checkpoint(logs[2], None)  # never cleaned
    assert os.stat(tmp_path / "cleaner-offset-checkpoint").st_mtime_ns == mtime - 10**9
    cleaner.update_checkpoint(logs[0], None)
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n1\nc 1 9\n"
    cleaner.update_checkpoints(str(tmp_path), {("c", 1): None, ("d", 0): 3})
    assert (tmp_path / "cleaner-offset-checkpoint").read_text() == "0\n1\nd 0 3\n"
    for log in logs:
        log.close()


# -- transactions (Kafka's CleanedTransactionMetadata rules) ---------------------------------------------

ABORT, COMMIT = ControlRecordType.ABORT, ControlRecordType.COMMIT


def txn_batch(pairs, pid, seq, epoch=0):
    return keyed_batch(pairs, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)


def end_txn(log, clock, pid, control_type, epoch=0):
    marker = build_control_batch(control_type, producer_id=pid, producer_epoch=epoch, timestamp=clock.now,
                                 partition_leader_epoch=0, coordinator_epoch=0)
    return log.append_as_leader(marker, 0, origin="coordinator").first_offset


def fetched_batches(log, max_offset=None):
    """(header, records) of every batch Log.read serves from the log start up to ``max_offset``."""
    out = []
    offset = log.log_start_offset
    limit = log.log_end_offset if max_offset is None else max_offset
    while offset < limit:
        info = log.read(offset, 1 << 20, max_offset=limit, min_one_message=True)
        data = info.records.read_bytes()
        info.records.release()
        if not data:
            break
        for pos, header in iter_batch_headers(data):
            if header.last_offset >= offset:
                out.append((header, decode_records(data, pos)[1]))
            offset = max(offset, header.next_offset)
    return out


def batch_offsets(log):
    return [(h.base_offset, h.last_offset) for h, _ in fetched_batches(log)]


def read_committed(log):
    """(offset, key, value) a read_committed consumer gets up to the last stable offset: it takes the
    fetch's aborted transactions and skips their producers' data until the ABORT marker, as Kafka's
    consumer (CompletedFetch) does."""
    lso = log.last_stable_offset
    aborted = sorted(log.collect_aborted_transactions(log.log_start_offset, lso), key=lambda t: t.first_offset)
    aborting, out = set(), []
    for header, records in fetched_batches(log, lso):
        while aborted and aborted[0].first_offset <= header.last_offset:
            aborting.add(aborted.pop(0).producer_id)
        if header.is_control:
            if records and parse_control_record(records[0])[0] is ABORT:
                aborting.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborting:
            continue
        out.extend((header.base_offset + r.offset_delta, r.key, r.value) for r in records)
    return out


def marker_at(log, offset):
    found = [h for h, _ in fetched_batches(log) if h.base_offset == offset]
    assert found and found[0].is_control
    return found[0]


def aborted_txns(log):
    return [(t.producer_id, t.first_offset, t.last_offset)
            for t in log.collect_aborted_transactions(log.log_start_offset, log.log_end_offset)]


def test_aborted_data_goes_and_markers_go_after_their_delete_horizon(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    log.append_as_leader(keyed_batch([(b"t", b"committed")]), 0)  # 0
    log.append_as_leader(txn_batch([(b"t", b"aborted")], pid=5, seq=0), 0)  # 1
    log.append_as_leader(txn_batch([(b"u", b"aborted")], pid=5, seq=1), 0)  # 2
    assert end_txn(log, clock, 5, ABORT) == 3
    log.append_as_leader(txn_batch([(b"c", b"c1")], pid=6, seq=0), 0)  # 4
    assert end_txn(log, clock, 6, COMMIT) == 5
    log.append_as_leader(txn_batch([(b"x", b"x1")], pid=5, seq=2), 0)  # 6: producer 5's last data
    assert end_txn(log, clock, 5, COMMIT) == 7
    log.append_as_leader(txn_batch([(b"c", b"c2")], pid=6, seq=1), 0)  # 8: producer 6's last data
    assert end_txn(log, clock, 6, COMMIT) == 9
    log.roll()
    log.append_as_leader(keyed_batch([(b"z", b"active")]), 0)  # 10, in the active segment
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert aborted_txns(log) == [(5, 1, 3)]
    expected = [(0, b"t", b"committed"), (6, b"x", b"x1"), (8, b"c", b"c2"), (10, b"z", b"active")]

    # 1st: the aborted data goes (the aborted "t" never was the latest "t"; "u" only ever was aborted);
    # c1 is compacted away; both markers of 3 and 5 stay (their data was met), the abort still indexed
    result = clean_log(log)
    assert result.records_removed == 3
    assert batch_offsets(log) == [(0, 0), (3, 3), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10)]
    assert not marker_at(log, 3).has_delete_horizon and not marker_at(log, 5).has_delete_horizon
    assert aborted_txns(log) == [(5, 1, 3)]
    assert read_committed(log) == expected

    # 2nd: those two markers have no data left: each gets a delete horizon, the abort leaves the index
    clock.advance(1000)
    clean_log(log)
    assert batch_offsets(log) == [(0, 0), (3, 3), (5, 5), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10)]
    for offset in (3, 5):
        assert marker_at(log, offset).delete_horizon_ms == clock.now + DAY
    assert not marker_at(log, 7).has_delete_horizon and not marker_at(log, 9).has_delete_horizon
    assert aborted_txns(log) == []
    assert read_committed(log) == expected

    # before the horizon they stay; after it they go
    clock.advance(DAY - 1)
    clean_log(log)
    assert [o for o, _ in batch_offsets(log)] == [0, 3, 5, 6, 7, 8, 9, 10]
    clock.advance(1)
    clean_log(log)
    assert batch_offsets(log) == [(0, 0), (6, 6), (7, 7), (8, 8), (9, 9), (10, 10)]
    assert read_committed(log) == expected
    log.close()
    reopened = open_log(log_dir, compact_config(), time_ms=clock)
    reopened.maybe_increment_high_watermark(reopened.log_end_offset)
    assert read_committed(reopened) == expected and aborted_txns(reopened) == []
    assert reopened.producer_state.last_entry(5).last_seq == 2
    assert reopened.producer_state.last_entry(6).last_seq == 1
    reopened.close()


def test_transactional_markers_and_producer_batches_survive(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    log.append_as_leader(txn_batch([(b"t", b"aborted")], pid=5, seq=0), 0)
    end_txn(log, clock, 5, ABORT)
    for i in range(40):
        log.append_as_leader(keyed_batch([(b"t", b"v%d" % i + b"." * 100)], producer_id=6, producer_epoch=0,
                                         base_sequence=i), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)

    def first_two():
        return [h for h, _ in fetched_batches(log)[:2]]

    # the aborted batch is producer 5's last: kept, emptied as Kafka's writeEmptyHeader; so the marker
    # stays (its transaction still has a batch), and so does the index entry
    for _ in range(2):
        clean_log(log)
        empty, marker = first_two()
        assert (empty.base_offset, empty.records_count, empty.is_transactional, empty.is_control) == (0, 0, True, False)
        assert empty.compression is CompressionType.NONE and empty.base_timestamp == -1 and empty.max_timestamp == clock.now
        assert (empty.producer_id, empty.base_sequence) == (5, 0) and not empty.has_delete_horizon
        assert marker.is_control and marker.base_offset == 1 and marker.records_count == 1
        assert aborted_txns(log) == [(5, 0, 1)]
    assert b"aborted" not in {v for _, _, v in read_all(log)}
    log.close()
    reopened = open_log(log_dir, compact_config(), time_ms=clock)
    assert reopened.producer_state.last_entry(6).last_seq == 39
    assert reopened.producer_state.last_entry(5).last_seq == 0

    # once producer 5 writes again, the empty batch goes; the marker waits one more cleaning (it met
    # that batch), then gets its horizon, then goes
    log = reopened
    log.append_as_leader(keyed_batch([(b"p5", b"again")], producer_id=5, producer_epoch=0, base_sequence=1), 0)
    log.roll()
    log.maybe_increment_high_watermark(log.log_end_offset)
    clean_log(log)
    assert fetched_batches(log)[0][0].base_offset == 1
    assert not marker_at(log, 1).has_delete_horizon and aborted_txns(log) == [(5, 0, 1)]
    clean_log(log)
    assert marker_at(log, 1).delete_horizon_ms == clock.now + DAY and aborted_txns(log) == []
    clock.advance(DAY)
    clean_log(log)
    assert fetched_batches(log)[0][0].base_offset > 1
    log.close()


def test_a_producers_last_marker_is_kept_empty(log_dir, clock):
    """Transaction version 2 bumps the epoch at every end: the marker is then the producer's last record
    (its state knows no data batch of the new epoch), kept for the epoch even once emptied."""
    log = open_log(log_dir, compact_config(), time_ms=clock)
    log.append_as_leader(txn_batch([(b"k", b"in-txn")], pid=9, seq=0, epoch=0), 0)  # 0
    assert end_txn(log, clock, 9, COMMIT, epoch=1) == 1
    log.append_as_leader(keyed_batch([(b"k", b"newer")]), 0)  # 2
    log.roll()
    log.append_as_leader(keyed_batch([(b"z", b"active")]), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.producer_state.last_entry(9).last_data_offset == -1

    clean_log(log)  # the superseded data goes; the marker met it, so it stays as it is
    assert [o for o, _ in batch_offsets(log)] == [1, 2, 3]
    assert not marker_at(log, 1).has_delete_horizon
    clean_log(log)  # no data left: a delete horizon
    assert marker_at(log, 1).delete_horizon_ms == clock.now + DAY
    clock.advance(DAY)
    for _ in range(2):  # past the horizon its record goes, but the batch stays: the producer's last
        clean_log(log)
        marker = marker_at(log, 1)
        assert (marker.records_count, marker.producer_id, marker.producer_epoch) == (0, 9, 1)
        assert marker.is_transactional and not marker.has_delete_horizon
    assert read_committed(log) == [(2, b"k", b"newer"), (3, b"z", b"active")]
    assert log.producer_state.last_entry(9).producer_epoch == 1
    log.close()
    reopened = open_log(log_dir, compact_config(), time_ms=clock)
    # (a reload that replays the log learns no epoch from an emptied marker, as Kafka's ProducerAppendInfo)
    assert marker_at(reopened, 1).records_count == 0
    reopened.close()


def test_an_ongoing_transaction_is_left_alone(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    for i in range(5):
        log.append_as_leader(keyed_batch([(b"k", b"old%d" % i)]), 0)  # 0-4
    log.roll()
    open_at = log.append_as_leader(txn_batch([(b"k", b"open")], pid=8, seq=0), 0).first_offset  # 5
    log.append_as_leader(keyed_batch([(b"k", b"after")]), 0)  # 6
    log.roll()
    log.append_as_leader(keyed_batch([(b"j", b"x")]), 0)  # 7
    log.roll()
    log.append_as_leader(keyed_batch([(b"z", b"active")]), 0)  # 8
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == open_at
    undecided = {s.base_offset: s.log.read(0, s.size) for s in log.segments.snapshot() if s.base_offset >= open_at}

    result = clean_log(log)  # only below the last stable offset
    assert result.segments_cleaned == 1 and result.next_dirty_offset == open_at
    assert {s.base_offset: s.log.read(0, s.size) for s in log.segments.snapshot()
            if s.base_offset >= open_at} == undecided
    assert [o for o, _ in batch_offsets(log)] == [4, 5, 6, 7, 8]
    assert read_committed(log) == [(4, b"k", b"old4")]

    commit = end_txn(log, clock, 8, COMMIT)  # 9
    log.roll()
    log.maybe_increment_high_watermark(log.log_end_offset)
    clean_log(log)  # now decided: compacted like any other data, the marker stays while it met data
    assert [o for o, _ in batch_offsets(log)] == [5, 6, 7, 8, commit]
    headers = dict((h.base_offset, h) for h, _ in fetched_batches(log))
    assert headers[5].records_count == 0  # producer 8's last data, superseded by "after"
    assert read_committed(log) == [(6, b"k", b"after"), (7, b"j", b"x"), (8, b"z", b"active")]
    log.close()


def test_an_aborted_transaction_across_cleaning_groups(log_dir, clock):
    """The transaction state is carried from group to group: the marker in the second group stays (and
    stays indexed there) because the first group discarded its data."""
    log = open_log(log_dir, compact_config(), time_ms=clock)
    log.append_as_leader(txn_batch([(b"a", b"aborted")], pid=3, seq=0), 0)  # 0
    for i in range(15):
        log.append_as_leader(keyed_batch([(b"pad%d" % i, b"." * 100)]), 0)  # 1-15
    log.roll()
    for i in range(15):
        log.append_as_leader(keyed_batch([(b"qad%d" % i, b"." * 100)]), 0)  # 16-30
    abort = end_txn(log, clock, 3, ABORT)  # 31
    log.append_as_leader(keyed_batch([(b"p3", b"later")], producer_id=3, producer_epoch=0, base_sequence=1), 0)
    log.roll()
    log.append_as_leader(keyed_batch([(b"z", b"active")]), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    second = log.segments.snapshot()[1]
    assert second.base_offset == 16 and second.txn_index.entries[0].last_offset == abort

    result = clean_log(log)
    assert result.swapped_groups == [0, 16]  # two groups, two cleaned segments
    assert batch_offsets(log)[0] == (1, 1)  # the aborted batch is gone
    assert not marker_at(log, abort).has_delete_horizon
    assert [(t.producer_id, t.first_offset) for t in log.segments.snapshot()[1].txn_index.entries] == [(3, 0)]
    clean_log(log)
    assert marker_at(log, abort).delete_horizon_ms == clock.now + DAY
    assert log.segments.snapshot()[1].txn_index.entries == [] and aborted_txns(log) == []
    log.close()


def test_cleaning_reports_its_steps_and_progress(log_dir, clock, caplog):
    import logging
    import re

    log = open_log(log_dir, compact_config(segment_bytes=1024), time_ms=clock)
    for i in range(120):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % 7), b"v%03d" % i + b"." * 60)]), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    with caplog.at_level(logging.INFO, logger="storage.cleaner"):
        result = clean_log(log)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0].startswith(f"Cleaner: beginning cleaning of log {log.name}: building the offset map")
    assert re.match(rf"Cleaner: offset map for log {log.name} complete: 7 keys up to offset \d+", lines[1])
    groups = [line for line in lines if line.startswith("Cleaner: cleaned segments")]
    assert groups and groups[-1].endswith(" ms") and "100% of" in groups[-1]
    assert len(groups) == int(re.search(r"group \d+/(\d+)", groups[-1]).group(1))
    assert result.segments_cleaned >= len(groups)
    log.close()
