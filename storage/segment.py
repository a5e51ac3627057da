"""One segment of a partition's log: the ``.log`` file and its three indexes.

On disk, in the partition directory, named by the base offset as 20 zero-padded digits (Kafka's
LogFileUtils): ``00000000000000000000.log`` (batches), ``.index`` (OffsetIndex), ``.timeindex``
(TimeIndex), ``.txnindex`` (TransactionIndex, only once a transaction was aborted). A suffix marks files
in transit: ``.cleaned`` (compaction output being written), ``.swap`` (compaction output about to
replace the originals), ``.deleted`` (removed from the log, unlinked after file.delete.delay.ms).

Invariants: every offset in the segment is >= ``base_offset`` and < the next segment's base offset, and
fits a 4-byte offset relative to ``base_offset``. Not thread-safe: the owning log's lock serializes
appends and truncation; reads by offset/position may run concurrently with appends on other threads.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_left
from collections.abc import Callable
from operator import itemgetter
from typing import NamedTuple

from storage.errors import LogSegmentOffsetOverflowError
from storage.file_records import FileRecords, FileRegion
from storage.index import INT32_MAX
from storage.offset_index import OffsetIndex
from storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset
from storage.transaction_index import TransactionIndex, TxnIndexSearchResult
from wire import RecordBatchHeader, decode_records

log = logging.getLogger("storage.segment")

__all__ = [
    "LogSegment", "LogOffsetPosition", "TimestampAndOffset", "SegmentRead",
    "LOG_FILE_SUFFIX", "INDEX_FILE_SUFFIX", "TIME_INDEX_FILE_SUFFIX", "TXN_INDEX_FILE_SUFFIX",
    "CLEANED_FILE_SUFFIX", "SWAP_FILE_SUFFIX", "DELETED_FILE_SUFFIX", "filename_prefix_from_offset",
    "offset_from_file_name",
]

LOG_FILE_SUFFIX = ".log"
INDEX_FILE_SUFFIX = ".index"
TIME_INDEX_FILE_SUFFIX = ".timeindex"
TXN_INDEX_FILE_SUFFIX = ".txnindex"
CLEANED_FILE_SUFFIX = ".cleaned"
SWAP_FILE_SUFFIX = ".swap"
DELETED_FILE_SUFFIX = ".deleted"
# Appended batches a segment remembers for reads at the tail (see LogSegment.translate_offset).
RECENT_BATCHES = 16
_LAST_OFFSET = itemgetter(1)  # of a remembered batch (base offset, last offset, position, size)


def filename_prefix_from_offset(offset: int) -> str:
    return f"{offset:020d}"


def offset_from_file_name(name: str) -> int:
    return int(name.split(".", 1)[0])


class LogOffsetPosition(NamedTuple):
    """Where the batch holding an offset starts: its last offset, position and size."""

    offset: int
    position: int
    size: int


class TimestampAndOffset(NamedTuple):
    """A ListOffsets answer (Kafka's FileRecords.TimestampAndOffset); leader_epoch -1 when unknown."""

    timestamp: int
    offset: int
    leader_epoch: int


class SegmentRead(NamedTuple):
    """What a segment read found: the region and whether the first batch was cut by max_size."""

    region: FileRegion | None
    position: int
    first_entry_incomplete: bool


class LogSegment:
    """A segment (see the module docstring)."""

    def __init__(self, log_file: FileRecords, offset_index: OffsetIndex, time_index: TimeIndex,
                 txn_index: TransactionIndex, base_offset: int, index_interval_bytes: int, roll_jitter_ms: int,
                 time_ms: Callable[[], int]) -> None:
        self.log = log_file
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._time_ms = time_ms
        self.created = time_ms()
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        self._max_timestamp_and_offset: TimestampOffset | None = None  # None: not read from the time index yet
        # The last batches appended, (base_offset, last_offset, position, size), oldest first: a consumer that
        # keeps up asks for one of them, which is then found without scanning from the last index entry.
        # Forgotten whenever the file is cut (truncate_to, finish_recovery). A tuple replaced whole, so a
        # reader on another thread sees the old or the new one, never one being changed.
        self._recent_batches: tuple[tuple[int, int, int, int], ...] = ()

    @classmethod
    def open(cls, directory: str, base_offset: int, *, index_interval_bytes: int, max_index_size: int,
             time_ms: Callable[[], int], roll_jitter_ms: int = 0, file_already_exists: bool = False,
             suffix: str = "", new_dir: bool = False) -> LogSegment:
        """``new_dir``: ``directory`` was just created, so none of the segment's files exists: the indexes are
        created without looking for them first."""
        prefix = os.path.join(directory, filename_prefix_from_offset(base_offset))
        log_file = FileRecords(prefix + LOG_FILE_SUFFIX + suffix, create=not file_already_exists, new_file=new_dir)
        try:
            offset_index = OffsetIndex(prefix + INDEX_FILE_SUFFIX + suffix, base_offset, max_index_size,
                                       new_file=new_dir)
            time_index = TimeIndex(prefix + TIME_INDEX_FILE_SUFFIX + suffix, base_offset, max_index_size,
                                   new_file=new_dir)
            txn_index = TransactionIndex(prefix + TXN_INDEX_FILE_SUFFIX + suffix, base_offset, new_file=new_dir)
        except BaseException:
            log_file.close()
            raise
        return cls(log_file, offset_index, time_index, txn_index, base_offset, index_interval_bytes,
                   roll_jitter_ms, time_ms)

    def __repr__(self) -> str:
        return f"LogSegment(baseOffset={self.base_offset}, size={self.size})"

    # -- sizes and timestamps ------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return self.log.size

    @property
    def max_timestamp_and_offset_so_far(self) -> TimestampOffset:
        if self._max_timestamp_and_offset is None:
            self._max_timestamp_and_offset = self.time_index.last_entry
        return self._max_timestamp_and_offset

    @property
    def max_timestamp_so_far(self) -> int:
        return self.max_timestamp_and_offset_so_far.timestamp

    def last_modified_ms(self) -> int:
        return int(os.stat(self.log.path).st_mtime * 1000)

    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's modification time when no record has one."""
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else self.last_modified_ms()

    def largest_record_timestamp(self) -> int | None:
        ts = self.max_timestamp_so_far
        return ts if ts >= 0 else None

    def _load_first_batch_timestamp(self) -> None:
        if self._rolling_based_timestamp is None and self.log.size > 0:
            header = self.log.header_at(0)
            if header is not None:
                self._rolling_based_timestamp = header.max_timestamp

    def time_waited_for_roll(self, now: int, message_timestamp: int) -> int:
        """Time since the first batch's timestamp (or since creation when it has none), as Kafka."""
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now - self.created

    def first_batch_timestamp(self) -> int:
        self._load_first_batch_timestamp()
        ts = self._rolling_based_timestamp
        return ts if ts is not None and ts >= 0 else (1 << 63) - 1

    def should_roll(self, *, max_segment_bytes: int, messages_size: int, max_timestamp_in_messages: int,
                    max_offset_in_messages: int, now: int, max_segment_ms: int) -> bool:
        size = self.log.size
        offset_index = self.offset_index
        if size > 0:  # time_waited_for_roll, without its calls once the first batch's timestamp is known
            ts = self._rolling_based_timestamp
            waited = max_timestamp_in_messages - ts if ts is not None and ts >= 0 else \
                self.time_waited_for_roll(now, max_timestamp_in_messages)
            if waited > max_segment_ms - self.roll_jitter_ms:
                return True
        return (size > max_segment_bytes - messages_size
                or offset_index.is_full()
                or self.time_index.is_full()
                or not 0 <= max_offset_in_messages - offset_index.base_offset <= INT32_MAX)

    # -- append ---------------------------------------------------------------------------------------
    def append(self, buf: bytes | bytearray | memoryview, batches: list[tuple[int, RecordBatchHeader]]) -> None:
        """Write ``buf`` (the batches, whose headers and positions in ``buf`` are given) and index them."""
        if not batches:
            return
        largest_offset = batches[-1][1].last_offset
        if not 0 <= largest_offset - self.offset_index.base_offset <= INT32_MAX:  # offset_index.can_append_offset
            raise LogSegmentOffsetOverflowError(
                f"Detected offset overflow at offset {largest_offset} in segment {self}")
        base_position = self.log.size
        if base_position == 0:
            self._rolling_based_timestamp = batches[0][1].max_timestamp
        self.log.append(buf)
        self._index_batches(base_position, batches)
        if len(batches) == 1:  # what a client sends (no generator for it)
            pos, header = batches[0]
            added: tuple[tuple[int, int, int, int], ...] = (
                (header.base_offset, largest_offset, base_position + pos, header.batch_length + 12),)
        else:
            added = tuple((header.base_offset, header.last_offset, base_position + pos, header.batch_length + 12)
                          for pos, header in batches[-RECENT_BATCHES:])
        self._recent_batches = (self._recent_batches + added)[-RECENT_BATCHES:]

    def _index_batches(self, base_position: int, batches: list[tuple[int, RecordBatchHeader]]) -> None:
        max_so_far = self._max_timestamp_and_offset
        if max_so_far is None:  # max_timestamp_and_offset_so_far, without its call once known
            max_so_far = self.max_timestamp_and_offset_so_far
        interval = self.index_interval_bytes
        offset_index = self.offset_index
        time_index = self.time_index
        for pos, header in batches:
            if header.max_timestamp > max_so_far.timestamp:
                max_so_far = TimestampOffset(header.max_timestamp, header.last_offset)
                self._max_timestamp_and_offset = max_so_far
            if self.bytes_since_last_index_entry > interval:
                if not offset_index.is_full() and not time_index.is_full():
                    offset_index.append(header.last_offset, base_position + pos)
                    time_index.maybe_append(max_so_far.timestamp, max_so_far.offset, skip_full_check=True)
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += header.batch_length + 12

    # -- reads ----------------------------------------------------------------------------------------
    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """The batch holding the first offset >= ``offset``, or None when it is past the end."""
        recent = self._recent_batches
        # Offsets only grow, so no batch before the remembered ones can hold an offset >= their first base.
        if recent and recent[0][0] <= offset <= recent[-1][1]:
            _base, last, position, size = recent[bisect_left(recent, offset, key=_LAST_OFFSET)]  # first last >= offset
            if position >= starting_position:
                return LogOffsetPosition(last, position, size)
        mapping = self.offset_index.lookup(offset)
        for pos, header in self.log.batches_from(max(mapping.position, starting_position)):
            if header.base_offset + header.last_offset_delta >= offset:
                return LogOffsetPosition(header.base_offset + header.last_offset_delta, pos,
                                         header.batch_length + 12)
        return None

    def read(self, start_offset: int, max_size: int, max_position: int | None = None,
             min_one_message: bool = False) -> SegmentRead | None:
        """Batches from the one holding ``start_offset``, at most ``max_size`` bytes and below ``max_position``.

        With ``min_one_message`` the first batch is returned whole even when larger than ``max_size``.
        Like Kafka, the last batch of the region may be cut short; clients discard a partial batch.
        """
        if max_size < 0:
            raise ValueError(f"Invalid max size {max_size} for log read from segment {self.log.path}")
        mapping = self.translate_offset(start_offset)
        if mapping is None:
            return None
        start_position = mapping.position
        adjusted_max = max(max_size, mapping.size) if min_one_message else max_size
        if max_position is None:
            max_position = self.size
        fetch_size = min(max_position - start_position, adjusted_max)
        if adjusted_max == 0 or fetch_size <= 0:
            return SegmentRead(None, start_position, False)
        return SegmentRead(self.log.region(start_position, fetch_size), start_position, adjusted_max < mapping.size)

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> TimestampAndOffset | None:
        """The first record at or after ``starting_offset`` whose timestamp is >= ``timestamp``."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for pos, header in self.log.batches_from(position):
            if header.max_timestamp < timestamp:
                continue
            found = search_batch(self.log.read(pos, header.batch_length + 12), header, timestamp, starting_offset)
            if found is not None:
                return found
        return None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        return self.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)

    def read_next_offset(self) -> int:
        """The offset after the last batch (walks the log from the last index entry)."""
        next_offset = self.base_offset
        for _, header in self.log.batches_from(self.offset_index.lookup(self.offset_index.last_offset).position):
            next_offset = header.base_offset + header.last_offset_delta + 1
        return next_offset

    # -- maintenance ----------------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose offsets are all >= ``offset`` (and their index entries); bytes removed."""
        mapping = self.translate_offset(offset)
        self._recent_batches = ()
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        self.offset_index.resize(self.offset_index.max_index_size)
        self.time_index.resize(self.time_index.max_index_size)
        removed = 0 if mapping is None else self.log.truncate_to(mapping.position)
        if self.log.size == 0:
            self.created = self._time_ms()
            self._rolling_based_timestamp = None
        self.bytes_since_last_index_entry = 0
        self._max_timestamp_and_offset = None
        if removed:
            self._max_timestamp_and_offset = self._read_largest_timestamp()
        return removed

    def _read_largest_timestamp(self) -> TimestampOffset:
        last = self.time_index.last_entry
        position = self.offset_index.lookup(last.offset).position
        best = last
        for _, header in self.log.batches_from(position):
            if header.max_timestamp > best.timestamp:
                best = TimestampOffset(header.max_timestamp, header.base_offset + header.last_offset_delta)
        return best

    def reset_indexes(self) -> None:
        """Empty all three indexes and forget the max timestamp: the start of a rebuild."""
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self._max_timestamp_and_offset = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        self.bytes_since_last_index_entry = 0

    def index_recovered_batch(self, position: int, header: RecordBatchHeader, last_index_position: int) -> int:
        """Recovery's per-batch indexing (Kafka's LogSegment.recover); returns the new last-entry position."""
        last_offset = header.base_offset + header.last_offset_delta
        if not self.offset_index.can_append_offset(last_offset):
            raise LogSegmentOffsetOverflowError(f"offset {last_offset} overflows segment {self}")
        best = self._max_timestamp_and_offset
        if best is None or header.max_timestamp > best.timestamp:
            best = TimestampOffset(header.max_timestamp, last_offset)
            self._max_timestamp_and_offset = best
        if position - last_index_position > self.index_interval_bytes:
            if not self.offset_index.is_full() and not self.time_index.is_full():
                self.offset_index.append(last_offset, position)
                self.time_index.maybe_append(best.timestamp, best.offset)
            return position
        return last_index_position

    def finish_recovery(self, valid_bytes: int) -> int:
        """Cut the log at ``valid_bytes`` and close out the rebuilt indexes; returns the bytes removed."""
        removed = self.log.truncate_to(valid_bytes)
        self._recent_batches = ()
        self.offset_index.trim_to_valid_size()
        best = self.max_timestamp_and_offset_so_far
        self.time_index.maybe_append(best.timestamp, best.offset, skip_full_check=True)
        self.time_index.trim_to_valid_size()
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp = None
        return removed

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def on_become_inactive_segment(self) -> None:
        """Rolled: record the largest timestamp in the time index and trim both indexes."""
        best = self.max_timestamp_and_offset_so_far
        self.time_index.maybe_append(best.timestamp, best.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        try:
            if self._max_timestamp_and_offset is not None and self.offset_index.is_open:
                best = self._max_timestamp_and_offset
                self.time_index.maybe_append(best.timestamp, best.offset, skip_full_check=True)
        except (OSError, ValueError) as exc:
            log.warning("could not append the last time index entry of %s: %s", self, exc)
        for close in (self.offset_index.close, self.time_index.close, self.log.close, self.txn_index.close):
            try:
                close()
            except OSError as exc:
                log.warning("closing %s: %s", self, exc)

    def close_handlers(self) -> None:
        """Close without writing (the directory may have failed)."""
        self.offset_index.close_handler()
        self.time_index.close_handler()
        self.log.close()
        self.txn_index.close()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        """Rename all four files from ``old_suffix`` to ``new_suffix`` (e.g. "" → ".deleted")."""
        def renamed(path: str) -> str:
            base = path[: len(path) - len(old_suffix)] if old_suffix and path.endswith(old_suffix) else path
            return base + new_suffix
        self.log.rename(renamed(self.log.path))
        self.offset_index.rename(renamed(self.offset_index.path))
        self.time_index.rename(renamed(self.time_index.path))
        self.txn_index.rename(renamed(self.txn_index.path))

    def has_suffix(self, suffix: str) -> bool:
        return self.log.path.endswith(suffix)

    def delete_if_exists(self) -> None:
        """Close every handle, then unlink the four files (regions already handed out stay readable)."""
        self.offset_index.delete_if_exists()
        self.time_index.delete_if_exists()
        self.txn_index.delete_if_exists()
        self.log.close()
        try:
            os.unlink(self.log.path)
        except FileNotFoundError:
            pass

    def file_paths(self) -> list[str]:
        return [self.log.path, self.offset_index.path, self.time_index.path, self.txn_index.path]


def search_batch(data: bytes, header: RecordBatchHeader, timestamp: int,
                  starting_offset: int) -> TimestampAndOffset | None:
    """The first record of a batch with timestamp >= ``timestamp`` and offset >= ``starting_offset``."""
    epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else -1
    _, records = decode_records(data)
    for record in records:
        ts = header.timestamp_of(record)
        offset = header.base_offset + record.offset_delta
        if ts >= timestamp and offset >= starting_offset:
            return TimestampAndOffset(ts, offset, epoch)
    return None
