import os

import pytest

from storage.cleaner import LogCleaner, clean_log
from wire import CompressionType, build_control_batch, decode_records, iter_batch_headers

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
    log.high_watermark = log.log_end_offset
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
    log.high_watermark = log.log_end_offset
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
    log.high_watermark = log.log_end_offset
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
    log.high_watermark = log.log_end_offset
    clean_log(log)
    seg = log.segments.first_segment()
    data = seg.log.read(0, seg.size)
    headers = [h for _, h in iter_batch_headers(data)]
    assert all(h.compression is CompressionType.LZ4 for h in headers)
    assert any(h.records_count == 1 for h in headers)  # a rebuilt batch
    log.close()


def test_transactional_markers_and_producer_batches_survive(log_dir, clock):
    log = open_log(log_dir, compact_config(), time_ms=clock)
    log.append_as_leader(keyed_batch([(b"t", b"aborted")], producer_id=5, producer_epoch=0, base_sequence=0,
                                     is_transactional=True), 0)
    marker = build_control_batch(0, producer_id=5, producer_epoch=0, timestamp=clock.now, partition_leader_epoch=0,
                                 coordinator_epoch=0)
    log.append_as_leader(marker, 0, origin="coordinator")
    for i in range(40):
        log.append_as_leader(keyed_batch([(b"t", b"v%d" % i + b"." * 100)], producer_id=6, producer_epoch=0,
                                         base_sequence=i), 0)
    log.high_watermark = log.log_end_offset
    clean_log(log)
    first = log.segments.first_segment()
    headers = [h for _, h in iter_batch_headers(first.log.read(0, first.size))]
    assert headers[0].is_transactional and headers[1].is_control  # aborted data and marker kept
    assert log.collect_aborted_transactions(0, 2)[0].producer_id == 5
    log.close()
    reopened = open_log(log_dir, compact_config())
    assert reopened.producer_state.last_entry(6).last_seq == 39
    reopened.close()


@pytest.mark.parametrize("crash_point", ["before_swap"])
def test_crash_before_swap_leaves_a_consistent_log(tmp_path, clock, crash_point):
    path = str(tmp_path / "c-0")
    log = open_log(path, compact_config(), time_ms=clock)
    for i in range(80):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % 3), b"v%d" % i + b"." * 100)]), 0)
    log.high_watermark = log.log_end_offset
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
        log.high_watermark = log.log_end_offset
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
