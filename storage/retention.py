"""Retention: which old segments a log deletes (Kafka's UnifiedLog.deleteOldSegments).

Three rules, applied in Kafka's order, each deleting a prefix of whole segments, oldest first, stopping
at the first segment that does not qualify:

* the log start offset (every policy): a segment whose successor starts at or below log_start_offset
  (DeleteRecords moved it); the active segment has no successor, so this rule never takes it;
* ``retention.bytes`` (delete policy; -1 = unlimited): oldest segments while the log stays at or above
  retention.bytes without them;
* ``retention.ms`` (topics with cleanup.policy delete; -1 = forever): a segment whose largest record
  timestamp (its file's mtime when no record has one) is older than now − retention.ms.

Tiered topics (remote.storage.enable, copying not disabled): retention.ms / retention.bytes govern the whole
log and are applied to remote segments by the remote log manager; here ``local.retention.ms`` /
``local.retention.bytes`` apply instead, and only to segments already copied (their last offset at or below
the highest offset in remote storage), and a deletion moves the local log start offset, not the log start
offset. An active segment past local retention is rolled so that it can be copied, then deleted.

The active segment counts like any other (Kafka's LocalLog.deletableSegments), unless it is empty; a
segment qualifies only when every offset in it is below the high watermark (its successor's base offset,
or the log end offset for the active one). When every segment qualifies, a new active segment is rolled
first at the log end offset, so a quiet topic's data expires too and the log keeps one segment.

Deleted segments leave the log under the lock, are renamed ``.deleted`` and unlinked after
file.delete.delay.ms on the scheduler thread; the log start offset moves to the first remaining segment,
producer snapshots below it are removed. No file of its own. Called on the log manager's scheduler
thread; the clock is the log's (injectable).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from storage.segment import LogSegment

if TYPE_CHECKING:
    from storage.log import Log

log = logging.getLogger("storage.retention")

__all__ = ["delete_log_start_offset_breached_segments", "delete_old_segments",
           "delete_retention_ms_breached_segments", "delete_retention_size_breached_segments"]

Predicate = Callable[[LogSegment, LogSegment | None], bool]


def delete_old_segments(log_: Log) -> int:
    """Apply every retention rule; returns how many segments were deleted."""
    if log_.config.delete:
        return (delete_log_start_offset_breached_segments(log_) + delete_retention_size_breached_segments(log_)
                + delete_retention_ms_breached_segments(log_))
    return delete_log_start_offset_breached_segments(log_)


def delete_retention_ms_breached_segments(log_: Log) -> int:
    retention_ms = log_.config.local_retention_ms_effective if log_.remote_log_enabled_and_copy_enabled \
        else log_.config.retention_ms
    if retention_ms < 0:
        return 0
    now = log_.time_ms()

    def should_delete(segment: LogSegment, _next: LogSegment | None) -> bool:
        return now - segment.largest_timestamp() > retention_ms

    return _delete_segments(log_, should_delete, f"retention time {retention_ms}ms breach")


def delete_retention_size_breached_segments(log_: Log) -> int:
    retention_size = log_.config.local_retention_bytes_effective if log_.remote_log_enabled_and_copy_enabled \
        else log_.config.retention_bytes
    size = log_.size_in_bytes
    if retention_size < 0 or size < retention_size:
        return 0
    diff = [size - retention_size]

    def should_delete(segment: LogSegment, _next: LogSegment | None) -> bool:
        if diff[0] - segment.size >= 0:
            diff[0] -= segment.size
            return True
        return False

    return _delete_segments(log_, should_delete, f"retention size {retention_size} breach, log size {size}")


def delete_log_start_offset_breached_segments(log_: Log) -> int:
    def should_delete(_segment: LogSegment, next_segment: LogSegment | None) -> bool:
        return next_segment is not None and next_segment.base_offset <= log_.log_start_offset

    return _delete_segments(log_, should_delete, f"log start offset {log_.log_start_offset} breach")


def _delete_segments(log_: Log, predicate: Predicate, reason: str) -> int:
    with log_.lock:
        if log_.is_offline or log_.deleted:
            return 0
        segments = log_.local.segments.snapshot()
        high_watermark = log_.high_watermark
        tiered = log_.remote_log_enabled_and_copy_enabled
        deletable: list[LogSegment] = []
        should_roll = False
        for i, segment in enumerate(segments):
            next_segment = segments[i + 1] if i + 1 < len(segments) else None
            if next_segment is None and segment.size == 0:
                break  # an empty active segment stays
            upper_bound = next_segment.base_offset if next_segment is not None else log_.local.log_end_offset
            if high_watermark < upper_bound or not predicate(segment, next_segment):
                break
            if tiered and not (0 < upper_bound and upper_bound - 1 <= log_.highest_offset_in_remote_storage) \
                    and not (next_segment is not None and log_.log_start_offset >= next_segment.base_offset):
                should_roll = next_segment is None  # past local retention but active: roll it so it is copied
                break
            deletable.append(segment)
        if should_roll:
            with log_._io("rolling a segment past local retention"):
                log.info("Rolling the active segment to make it eligible for deletion (%s)", log_.name)
                log_._roll(None)
        if not deletable:
            return 0
        with log_._io("deleting segments"):
            if len(deletable) == len(segments):  # the log always keeps a segment: roll a new one first
                rolled = log_._roll(None)
                if deletable[-1].base_offset == rolled.base_offset:
                    deletable.pop()
            if deletable:
                log_.local.remove_and_delete_segments(deletable, reason=reason)
            first = log_.local.segments.first_segment()
            if first is not None and tiered:
                log_.maybe_increment_local_log_start_offset(first.base_offset, "segment deletion")
            elif first is not None:
                log_.maybe_increment_log_start_offset(first.base_offset, "segment deletion")
                log_.producer_state.delete_snapshots_before(first.base_offset)
        return len(deletable)
