"""The segments of one partition directory: append, roll, read, truncate, flush (Kafka's LocalLog).

On disk: the partition directory ``<topic>-<partition>`` with its segments (see storage.segment).
Invariants: segments are contiguous in offset order; the last one is the active segment, the only one
appended to; ``log_end_offset`` is the offset after the last appended batch; ``recovery_point`` is the
offset below which everything has been fsynced (recovery scans only past it).

Concurrency: every method runs under the owning Log's lock, except ``flush_segments``, which fsyncs on
the storage scheduler thread. File descriptors of a segment are closed only on the scheduler thread
(deletions are scheduled there) or after it stopped, so a concurrent fsync never sees a closed or
reused descriptor; regions handed to readers hold their own reference (storage.file_records).
"""

from __future__ import annotations

import logging
import os
import random
from bisect import bisect_left
from collections.abc import Callable, Iterable
from typing import NamedTuple

from storage.config import LogConfig
from storage.file_records import FileRegion, fsync_dir
from storage.segment import (
    DELETED_FILE_SUFFIX,
    INDEX_FILE_SUFFIX,
    LOG_FILE_SUFFIX,
    SWAP_FILE_SUFFIX,
    TIME_INDEX_FILE_SUFFIX,
    TXN_INDEX_FILE_SUFFIX,
    LogSegment,
    filename_prefix_from_offset,
)
from storage.segments import LogSegments
from wire import LOG_OVERHEAD

log = logging.getLogger("storage.local_log")

# The largest append whose bytes a log keeps for the reads it wakes (see LocalLog.append): what the network layer
# copies rather than sends with sendfile (pykbroker.response_writer.COPY_REGIONS_BELOW).
TAIL_BYTES = 16384

__all__ = ["FetchDataInfo", "LocalLog", "LogOffsetMetadata"]


class LogOffsetMetadata(NamedTuple):
    """An offset and where it is on disk (segment base offset, position), when known."""

    message_offset: int
    segment_base_offset: int = -1
    relative_position_in_segment: int = -1


class FetchDataInfo(NamedTuple):
    """A read's result: ``records`` is a FileRegion (sendfile-able), the bytes of a batch kept in memory
    (``LocalLog.append``'s ``keep_tail``), or ``b""`` when there is nothing."""

    fetch_offset_metadata: LogOffsetMetadata
    records: FileRegion | bytes
    first_entry_incomplete: bool = False
    next_offset_upper_bound: int = -1  # no offset in records is >= this (for aborted-transaction lookups)

    @property
    def size(self) -> int:
        records = self.records
        return records.size if isinstance(records, FileRegion) else len(records)


class LocalLog:
    """The segment files of one partition (see the module docstring)."""

    def __init__(self, directory: str, config: LogConfig, segments: LogSegments, recovery_point: int,
                 log_end_offset: int, topic_partition: str, time_ms: Callable[[], int], scheduler) -> None:
        self.dir = directory
        self.config = config
        self.segments = segments
        self.recovery_point = recovery_point
        self.log_end_offset = log_end_offset
        self.topic_partition = topic_partition
        self._time_ms = time_ms
        self.scheduler = scheduler
        self.last_flush_time_ms = time_ms()
        # The last append's batch while the reads it woke run (append(keep_tail=True) to drop_tail()): its base
        # offset, the active segment's base offset, its position there and its bytes, exactly those written.
        self._tail: tuple[int, int, int, bytes] | None = None

    # -- queries ---------------------------------------------------------------------------------------
    @property
    def active_segment(self) -> LogSegment:
        return self.segments.active_segment

    def size_in_bytes(self) -> int:
        return self.segments.size_in_bytes()

    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    # -- append and roll -------------------------------------------------------------------------------
    def append(self, last_offset: int, buf: bytes | bytearray | memoryview, batches: list,
               keep_tail: bool = False) -> None:
        """Write ``batches`` (all of ``buf``) to the active segment.

        ``keep_tail``: the caller wakes reads waiting at the log end (long polls, followers), which will ask for
        this batch: a single batch of at most TAIL_BYTES is kept in memory until ``drop_tail``, and a read of
        exactly it takes those bytes instead of a file region of the same bytes (no pread, no region to hold).
        """
        segment = self.segments.active_segment
        position = segment.log.size
        segment.append(buf, batches)
        self.log_end_offset = last_offset + 1
        if keep_tail and len(batches) == 1 and (header := batches[0][1]).batch_length + LOG_OVERHEAD == len(buf) \
                <= TAIL_BYTES:  # the batch and nothing else, small
            self._tail = (header.base_offset, segment.base_offset, position, bytes(buf))
        else:
            self._tail = None

    def drop_tail(self) -> None:
        """Forget the batch ``append(keep_tail=True)`` kept (its reads had their turn)."""
        self._tail = None

    def new_segment(self, base_offset: int) -> LogSegment:
        config = self.config
        return LogSegment.open(self.dir, base_offset, index_interval_bytes=config.index_interval_bytes,
                               max_index_size=config.max_index_size, time_ms=self._time_ms,
                               roll_jitter_ms=_jitter(config))

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(expected_next_offset, log_end_offset)."""
        new_offset = max(expected_next_offset or 0, self.log_end_offset)
        self._tail = None  # kept only while its segment is the active one
        active = self.segments.last_segment()
        if new_offset in self.segments:
            if active is not None and active.base_offset == new_offset and active.size == 0:
                log.warning("Trying to roll a new log segment with start offset %d while it already exists and is "
                            "active with size 0; recreating it (%s)", new_offset, self.topic_partition)
                self.segments.remove(new_offset)
                self._delete_segment_files([active])
            else:
                raise RuntimeError(f"Trying to roll a new log segment for topic partition {self.topic_partition} with "
                                   f"start offset {new_offset} while it already exists.")
        elif active is not None and new_offset < active.base_offset:
            raise RuntimeError(f"Trying to roll a new log segment for topic partition {self.topic_partition} with "
                               f"start offset {new_offset} lower than start offset of the active segment {active}")
        else:
            prefix = os.path.join(self.dir, filename_prefix_from_offset(new_offset))
            for suffix in (LOG_FILE_SUFFIX, INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX, TXN_INDEX_FILE_SUFFIX):
                if os.path.exists(prefix + suffix):
                    log.warning("Newly rolled segment file %s already exists; deleting it first", prefix + suffix)
                    os.unlink(prefix + suffix)
            if active is not None and active.base_offset != new_offset:
                active.on_become_inactive_segment()
        segment = self.new_segment(new_offset)
        self.segments.add(segment)
        return segment

    # -- flush -----------------------------------------------------------------------------------------
    def segments_to_flush(self, offset: int) -> list[LogSegment]:
        return self.segments.values_between(self.recovery_point, offset)

    def flush_segments(self, segments: Iterable[LogSegment], recovery_point: int) -> None:
        """fsync ``segments`` (and the directory when one of them is new since the recovery point)."""
        flushed_new = False
        for segment in segments:
            segment.flush()
            flushed_new = flushed_new or segment.base_offset >= recovery_point
        if flushed_new:
            fsync_dir(self.dir)

    def mark_flushed(self, offset: int) -> None:
        if offset > self.recovery_point:
            self.recovery_point = offset
            self.last_flush_time_ms = self._time_ms()

    # -- read -------------------------------------------------------------------------------------------
    def read(self, start_offset: int, max_length: int, max_offset: int, min_one_message: bool) -> FetchDataInfo:
        """Batches from the one holding ``start_offset``, bounded by ``max_length`` bytes and ``max_offset``.

        The caller checked the range. Walks forward over segments that hold nothing at or after
        ``start_offset`` (compaction can empty a segment's tail).
        """
        if start_offset >= max_offset:  # nothing to read (a long poll at the log end): the empty answer, built here
            return FetchDataInfo(LogOffsetMetadata(start_offset), b"", False, start_offset)
        tail = self._tail
        if tail is not None and tail[0] == start_offset and max_offset >= self.log_end_offset and max_length >= 0 \
                and (min_one_message or max_length >= len(tail[3])):
            # The batch just appended, read whole to the log end (a woken long poll's read): the bytes the file
            # region below would hold, and its bound (the log end: no offset index entry lies past the batch).
            return FetchDataInfo(LogOffsetMetadata(start_offset, tail[1], tail[2]), tail[3], False,
                                 self.log_end_offset)
        segment, next_segment = self.segments.floor_and_higher_segment(start_offset)
        while segment is not None:
            if next_segment is not None and max_offset >= next_segment.base_offset:
                max_position = segment.size
            elif max_offset >= self.log_end_offset:  # a read of the log's tail (a woken long poll's): to the end
                max_position = segment.size
            else:
                max_position = self._position_of(segment, max_offset)
            found = segment.read(start_offset, max_length, max_position, min_one_message)
            if found is not None:
                metadata = LogOffsetMetadata(start_offset, segment.base_offset, found.position)
                if found.region is None:
                    return FetchDataInfo(metadata, b"", found.first_entry_incomplete, start_offset)
                end = found.position + found.region.size
                upper = self._upper_bound_offset(segment, next_segment, end)
                return FetchDataInfo(metadata, found.region, found.first_entry_incomplete, upper)
            segment = next_segment
            if segment is not None:
                next_segment = self.segments.higher_segment(segment.base_offset)
        return FetchDataInfo(LogOffsetMetadata(start_offset), b"", False, start_offset)

    def _position_of(self, segment: LogSegment, offset: int) -> int:
        """The position where the batch holding ``offset`` starts (the segment's size past its end)."""
        if offset >= self.log_end_offset:
            return segment.size
        found = segment.translate_offset(offset)
        return segment.size if found is None else found.position

    def _upper_bound_offset(self, segment: LogSegment, next_segment: LogSegment | None, end_position: int) -> int:
        index = segment.offset_index
        keys = index.keys
        slot = bisect_left(index.values, end_position)
        if slot < len(keys):  # index.entries, without the property's call
            return keys[slot] + 1
        return next_segment.base_offset if next_segment is not None else self.log_end_offset

    # -- truncation and deletion -------------------------------------------------------------------------
    def truncate_to(self, target_offset: int) -> list[LogSegment]:
        """Remove everything at or after ``target_offset``; returns the segments deleted whole."""
        self._tail = None
        deletable = [s for s in self.segments.snapshot() if s.base_offset > target_offset]
        self.remove_and_delete_segments(deletable, reason="truncation")
        floor = self.segments.floor_segment(target_offset)
        if floor is not None:
            floor.truncate_to(target_offset)
        self.log_end_offset = target_offset
        self.recovery_point = min(self.recovery_point, target_offset)
        return deletable

    def truncate_fully_and_start_at(self, new_offset: int) -> list[LogSegment]:
        """Delete every segment and start empty at ``new_offset``."""
        self._tail = None
        old = self.segments.snapshot()
        self.remove_and_delete_segments(old, reason="truncate fully")
        self.segments.add(self.new_segment(new_offset))
        self.log_end_offset = new_offset
        self.recovery_point = new_offset
        return old

    def remove_and_delete_segments(self, segments: list[LogSegment], *, reason: str) -> None:
        """Take ``segments`` out of the log now; rename them ``.deleted``; unlink after file.delete.delay.ms."""
        if not segments:
            return
        self._tail = None
        for segment in segments:
            self.segments.remove(segment.base_offset)
        self.rename_and_schedule_delete(segments, reason)

    def rename_and_schedule_delete(self, segments: list[LogSegment], reason: str) -> None:
        for segment in segments:
            if not segment.has_suffix(DELETED_FILE_SUFFIX):
                segment.change_file_suffixes("", DELETED_FILE_SUFFIX)
        log.info("Deleting segments for %s due to %s: %s", self.topic_partition, reason,
                 ", ".join(repr(s) for s in segments))
        self.scheduler.schedule_once(f"delete-file-{self.topic_partition}",
                                     lambda: self._delete_segment_files(segments), self.config.file_delete_delay_ms)

    @staticmethod
    def _delete_segment_files(segments: list[LogSegment]) -> None:
        for segment in segments:
            try:
                segment.delete_if_exists()
            except OSError as exc:
                log.error("Error while deleting segment files of %s: %s", segment, exc)

    def replace_segments(self, new_segments: list[LogSegment], old_segments: list[LogSegment]) -> None:
        """Swap cleaned segments in (Kafka's LocalLog.replaceSegments), crash-safe at every step.

        ``new_segments`` carry the ``.cleaned`` suffix. 1) rename them ``.swap``; 2) put them in the map and
        rename the replaced ones ``.deleted`` (scheduled for deletion); 3) drop the ``.swap`` suffix. Recovery
        finishes a swap interrupted after 1) and discards ``.cleaned`` files (storage.recovery).
        """
        self._tail = None
        new_segments = sorted(new_segments, key=lambda s: s.base_offset)
        for segment in new_segments:
            segment.change_file_suffixes(".cleaned", SWAP_FILE_SUFFIX)
        fsync_dir(self.dir)
        new_bases = {s.base_offset for s in new_segments}
        for segment in new_segments:
            self.segments.add(segment)
        to_delete = [s for s in old_segments if s.base_offset not in new_bases]
        for segment in to_delete:
            self.segments.remove(segment.base_offset)
        self.rename_and_schedule_delete(list(old_segments), "log compaction")
        for segment in new_segments:
            segment.change_file_suffixes(SWAP_FILE_SUFFIX, "")
        fsync_dir(self.dir)

    # -- close -------------------------------------------------------------------------------------------
    def close(self) -> None:
        for segment in self.segments.snapshot():
            segment.close()

    def close_handlers(self) -> None:
        for segment in self.segments.snapshot():
            segment.close_handlers()


def _jitter(config: LogConfig) -> int:
    if config.segment_jitter_ms <= 0:
        return 0
    return random.randrange(0, min(config.segment_jitter_ms, config.segment_ms))
