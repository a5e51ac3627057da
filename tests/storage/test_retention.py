import os

import pytest

from storage import OffsetOutOfRangeError

from .conftest import batch, open_log, read_all, small_config

DAY = 86_400_000


def fill(log, n, ts):
    for i in range(n):
        log.append_as_leader(batch([b"%04d" % i + b"r" * 200], timestamp=ts), 0)


def test_retention_ms_by_largest_timestamp(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=DAY), time_ms=clock)
    fill(log, 30, clock.now - 2 * DAY)  # old data: several segments
    old_segments = log.num_segments
    fill(log, 30, clock.now)  # new data
    log.maybe_increment_high_watermark(log.log_end_offset)
    deleted = log.delete_old_segments()
    assert deleted == old_segments - 1 or deleted == old_segments
    assert log.log_start_offset == log.segments.first_segment().base_offset
    assert all(s.largest_timestamp() >= clock.now - DAY for s in log.segments.snapshot())
    assert not [n for n in os.listdir(log_dir) if n.endswith(".deleted")]  # file.delete.delay.ms = 0
    clock.advance(2 * DAY)
    log.delete_old_segments()
    assert log.num_segments == 1  # every segment expired: a new, empty active segment was rolled first
    assert log.active_segment.size == 0
    assert log.log_start_offset == log.active_segment.base_offset == log.log_end_offset == 60
    log.close()


def test_a_quiet_logs_only_segment_expires(log_dir, clock):
    """Kafka's UnifiedLog.deleteOldSegments counts the active segment and rolls when all are deletable."""
    log = open_log(log_dir, small_config(retention_ms=1500, internal_segment_bytes=1 << 20), time_ms=clock)
    log.append_as_leader(batch([b"v"] * 500, timestamp=clock.now), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0  # not yet expired
    clock.advance(1501)
    assert log.delete_old_segments() == 1
    assert (log.num_segments, log.log_start_offset, log.log_end_offset) == (1, 500, 500)
    assert log.active_segment.base_offset == 500 and log.active_segment.size == 0
    assert log.delete_old_segments() == 0  # an empty active segment is never deleted
    info = log.append_as_leader(batch([b"w"], timestamp=clock.now), 0)
    assert info.first_offset == 500
    log.close()


def test_the_active_segment_waits_for_the_high_watermark(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=1500), time_ms=clock)
    log.append_as_leader(batch([b"v"] * 10, timestamp=clock.now), 0)
    clock.advance(5000)
    log.maybe_increment_high_watermark(9)  # offset 9 is not replicated yet
    assert log.delete_old_segments() == 0
    log.maybe_increment_high_watermark(10)
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 10
    log.close()


def test_retention_bytes_zero_deletes_the_active_segment_too(log_dir, clock):
    log = open_log(log_dir, small_config(retention_bytes=0, retention_ms=-1), time_ms=clock)
    log.append_as_leader(batch([b"v"] * 100, timestamp=clock.now), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 1
    assert (log.num_segments, log.log_start_offset, log.size_in_bytes) == (1, 100, 0)
    log.close()


def test_the_log_start_offset_rule_never_takes_the_active_segment(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=-1), time_ms=clock)
    log.append_as_leader(batch([b"v"] * 100, timestamp=clock.now), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    log.delete_records_before(100)
    assert log.delete_old_segments() == 0
    assert (log.num_segments, log.log_start_offset, log.active_segment.base_offset) == (1, 100, 0)
    log.close()


def test_retention_ms_minus_one_keeps_everything(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=-1), time_ms=clock)
    fill(log, 40, 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0
    log.close()


def test_retention_bytes(log_dir, clock):
    log = open_log(log_dir, small_config(retention_bytes=9000, retention_ms=-1), time_ms=clock)
    fill(log, 80, clock.now)
    log.maybe_increment_high_watermark(log.log_end_offset)
    before = log.size_in_bytes
    log.delete_old_segments()
    assert log.size_in_bytes <= before
    assert log.size_in_bytes >= 9000 - 4096 and log.size_in_bytes - log.segments.first_segment().size < 9000
    values = [int(v[:4]) for _, _, v in read_all(log)]
    assert values == list(range(values[0], 80))
    log.close()


def test_only_segments_below_the_high_watermark(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=DAY), time_ms=clock)
    fill(log, 40, clock.now - 2 * DAY)
    log.maybe_increment_high_watermark(0)
    assert log.delete_old_segments() == 0
    log.close()


def test_compact_only_topics_keep_old_data(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=DAY, cleanup_policy=("compact",)), time_ms=clock)
    for i in range(40):
        log.append_as_leader(batch([b"x" * 200], keys=[b"k%d" % i], timestamp=clock.now - 2 * DAY), 0)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0
    log.close()


def test_delete_records_moves_the_log_start_offset(log_dir, clock):
    log = open_log(log_dir, small_config(retention_ms=-1), time_ms=clock)
    fill(log, 60, clock.now)
    log.maybe_increment_high_watermark(50)
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records_before(51)
    second_base = log.segments.snapshot()[2].base_offset
    assert log.delete_records_before(second_base + 1) == second_base + 1
    assert log.segments.first_segment().base_offset == second_base
    assert read_all(log)[0][0] == second_base + 1
    assert log.fetch_offset_by_timestamp(-2).offset == second_base + 1
    log.close()


def test_segments_are_renamed_deleted_then_removed_after_the_delay(log_dir, clock):
    from storage.scheduler import Scheduler
    scheduler = Scheduler()
    scheduler.start()
    log = open_log(log_dir, small_config(retention_ms=DAY, file_delete_delay_ms=60_000), time_ms=clock,
                   scheduler=scheduler)
    fill(log, 40, clock.now - 2 * DAY)
    fill(log, 1, clock.now)
    log.maybe_increment_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() > 0
    assert [n for n in os.listdir(log_dir) if n.endswith(".log.deleted")]
    scheduler.shutdown(drain=False)
    log.close()
    reopened = open_log(log_dir, small_config(retention_ms=DAY))  # a restart removes leftover .deleted files
    assert not [n for n in os.listdir(log_dir) if n.endswith(".deleted")]
    reopened.close()
