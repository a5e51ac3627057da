"""Log compaction (Kafka's LogCleaner / Cleaner / LogCleanerManager), on a background thread.

For a log with cleanup.policy ``compact``:

* The *dirty* section runs from the checkpointed first dirty offset to the first uncleanable offset: the
  smallest of the active segment's base offset (the active segment is never touched), the last stable
  offset (undecided transactions and data above the high watermark stay), and the first segment whose
  largest timestamp is within ``min.compaction.lag.ms`` of now.
* The cleaner picks the log with the highest dirty ratio (dirty bytes / all bytes up to the first
  uncleanable offset) at or above ``min.cleanable.dirty.ratio``, or any log holding dirty data older than
  ``max.compaction.lag.ms``.
* It maps every key of the dirty section to its last offset, then recopies the segments from the log
  start to the end of the mapped range, in groups that fit one segment, keeping a record only if no later
  record has its key. Offsets never change (batches keep their base offset; gaps are normal). Batches
  that lose no record are copied byte for byte; others are rebuilt as Kafka's MemoryRecordsBuilder
  writes them (same base and last offset, recompressed with their own codec).
  Records without a key are dropped (they are invalid on a compacted topic), as Kafka does.
* Tombstones (null values) get a delete horizon the first time they are recopied: the batch is marked
  (attribute bit 6, KIP-534) and its base timestamp becomes now + ``delete.retention.ms``; a later
  cleaning after that time drops them.
* Transactions (Kafka's CleanedTransactionMetadata; everything cleaned is below the last stable offset,
  so every transaction met is decided and the aborted ones are known ahead from the ``.txnindex`` files):

  - data batches of aborted transactions are discarded whole; they never count as the latest value of
    a key (nor enter the offset map);
  - a COMMIT or ABORT marker can go once a cleaning meets none of its transaction's data batches (all
    of them compacted or discarded by earlier cleanings). Such a marker first gets
    a delete horizon, like a tombstone (attribute bit 6, base timestamp now + ``delete.retention.ms``),
    and a cleaning after that time drops it. Until then it stays, so a consumer that read the data
    also reads the marker;
  - the cleaned segment's ``.txnindex`` gets exactly the aborted transactions whose ABORT marker is
    kept because data of theirs was met; the others' entries go with their data;
  - the batch holding a producer id's last data offset (or, when its last record is a marker, that
    marker of its current epoch) is kept, emptied of records if need be (Kafka's writeEmptyHeader: no
    codec, no base timestamp, the old max timestamp), so producer state survives a reload;
  - so is the batch that ends right at the first uncleanable offset (since Kafka 4.1, KAFKA-17076).

  The transaction state is carried from group to group through one cleaning, as in Kafka.
* Swap (crash-safe, storage.local_log.replace_segments): the group is written to ``<base>.log.cleaned``
  (+ indexes), fsynced, renamed ``.swap``, swapped into the log under the log's lock (only if the log
  still has exactly those segments: a truncation or retention meanwhile aborts the cleaning), the old
  segments renamed ``.deleted``, the ``.swap`` suffix dropped. Recovery completes or discards the rest.

On disk it also keeps ``cleaner-offset-checkpoint`` per log dir (first dirty offset per partition).
Threading: the cleaner thread reads old segments without the log's lock (they are immutable, and it
holds a reference on each ``.log`` file), takes the lock only to swap.
"""

from __future__ import annotations

import heapq
import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from storage.checkpoints import CLEANER_OFFSET_CHECKPOINT, OffsetCheckpointFile
from storage.segment import CLEANED_FILE_SUFFIX, LogSegment, filename_prefix_from_offset
from storage.segment import LOG_FILE_SUFFIX as _LOG
from storage.transaction_index import AbortedTxn, TransactionIndex
from wire import (
    DELETE_HORIZON_FLAG_MASK,
    NO_TIMESTAMP,
    ControlRecordType,
    Record,
    RecordBatchHeader,
    TimestampType,
    build_batch,
    decode_records,
    parse_batch_header,
    parse_control_record,
)

if TYPE_CHECKING:
    from storage.log import Log

log = logging.getLogger("storage.cleaner")

__all__ = ["CleanResult", "CleanedTransactionMetadata", "LogCleaner", "LogToClean", "clean_log", "cleanable_offsets"]

DEFAULT_MAX_MAP_ENTRIES = 2_000_000
_ATTRIBUTES = struct.Struct(">h")
_CRC = struct.Struct(">I")
_INT32_MAX = (1 << 31) - 1


@dataclass(slots=True)
class LogToClean:
    """A compacted log's cleanable range and dirty ratio (Kafka's LogToClean)."""

    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    needs_compaction_now: bool = False

    @property
    def cleanable_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


@dataclass(slots=True)
class CleanResult:
    """What one cleaning did."""

    next_dirty_offset: int
    segments_cleaned: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_removed: int = 0
    aborted: bool = False
    swapped_groups: list[int] = field(default_factory=list)


def cleanable_offsets(log_: Log, checkpointed_dirty_offset: int | None, now_ms: int) -> tuple[int, int, bool]:
    """(first dirty offset, first uncleanable offset, dirty data older than max.compaction.lag.ms)."""
    config = log_.config
    start = log_.log_start_offset
    first_dirty = checkpointed_dirty_offset if checkpointed_dirty_offset is not None else start
    if first_dirty < start or first_dirty > log_.log_end_offset:
        first_dirty = start
    segments = log_.local.segments.snapshot()
    active_base = segments[-1].base_offset
    candidates = [log_.last_stable_offset, active_base]
    dirty_non_active = [s for s in segments[:-1] if _next_base(segments, s) > first_dirty]
    if config.min_compaction_lag_ms > 0:
        for segment in dirty_non_active:
            if segment.largest_timestamp() > now_ms - config.min_compaction_lag_ms:
                candidates.append(segment.base_offset)
                break
    first_uncleanable = max(first_dirty, min(candidates))
    must_clean = False
    if config.max_compaction_lag_ms < (1 << 63) - 1 and dirty_non_active:
        first_ts = dirty_non_active[0].first_batch_timestamp()
        must_clean = first_ts < (1 << 63) - 1 and now_ms - first_ts > config.max_compaction_lag_ms
    return first_dirty, first_uncleanable, must_clean


def _next_base(segments: list[LogSegment], segment: LogSegment) -> int:
    i = segments.index(segment)
    return segments[i + 1].base_offset if i + 1 < len(segments) else (1 << 63) - 1


def _bytes_between(segments: list[LogSegment], start: int, end: int) -> int:
    total = 0
    for i, segment in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else (1 << 63) - 1
        if segment.base_offset >= end or nxt <= start:
            continue
        total += segment.size
    return total


def log_to_clean(log_: Log, checkpointed_dirty_offset: int | None, now_ms: int) -> LogToClean:
    first_dirty, first_uncleanable, must = cleanable_offsets(log_, checkpointed_dirty_offset, now_ms)
    segments = log_.local.segments.snapshot()
    clean = _bytes_between(segments, log_.log_start_offset, first_dirty)
    dirty = _bytes_between(segments, first_dirty, first_uncleanable)
    return LogToClean(log_, first_dirty, first_uncleanable, clean, dirty, must)


# -- the cleaning ---------------------------------------------------------------------------------------


class CleanedTransactionMetadata:
    """The transactions met while the cleaner walks a log in offset order (Kafka's CleanedTransactionMetadata).

    Fed the aborted transactions of the range ahead of the walk (``add_aborted_transactions``, from the
    ``.txnindex`` files; duplicates are harmless), then every batch in offset order: ``on_batch_read``
    says whether a data batch belongs to an aborted transaction (so it can go), ``on_control_batch_read``
    whether a marker's transaction has no data left that this walk met (so the marker can go, after its
    delete horizon). An ABORT marker that must stay appends its transaction to ``cleaned_index``.
    Used by the cleaner thread only.
    """

    def __init__(self) -> None:
        self._aborted: list[tuple[int, int, AbortedTxn]] = []  # min-heap by first offset
        self._pushed = 0
        self._ongoing_committed: set[int] = set()  # producer ids with data met of a not yet ended txn
        self._ongoing_aborted: dict[int, _AbortedTxnMetadata] = {}
        self.cleaned_index: TransactionIndex | None = None

    def add_aborted_transactions(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            heapq.heappush(self._aborted, (txn.first_offset, self._pushed, txn))
            self._pushed += 1

    def _consume_aborted_txns_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            txn = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedTxnMetadata(txn))

    def on_batch_read(self, header: RecordBatchHeader) -> bool:
        """A data batch was met; True if it belongs to an aborted transaction (safe to discard)."""
        self._consume_aborted_txns_up_to(header.last_offset)
        if not header.is_transactional:
            return False
        aborted = self._ongoing_aborted.get(header.producer_id)
        if aborted is None:
            self._ongoing_committed.add(header.producer_id)
            return False
        aborted.last_observed_batch_offset = header.last_offset
        return True

    def on_control_batch_read(self, header: RecordBatchHeader, records: list[Record]) -> bool:
        """A control batch was met; True if no data of its transaction was met (safe to discard)."""
        self._consume_aborted_txns_up_to(header.last_offset)
        if not records:
            return True  # emptied by an earlier cleaning
        control_type, _ = parse_control_record(records[0])
        if control_type is ControlRecordType.ABORT:
            aborted = self._ongoing_aborted.pop(header.producer_id, None)
            if aborted is not None and aborted.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(aborted.txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if header.producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(header.producer_id)
                return False
            return True
        return False


@dataclass(slots=True)
class _AbortedTxnMetadata:
    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class _LastRecord(NamedTuple):
    """What the cleaner keeps of a producer id (Kafka's LastRecord): its last data offset, or None when
    its producer state knows no data batch (then its latest marker of ``producer_epoch`` is kept)."""

    last_data_offset: int | None
    producer_epoch: int


def _last_records_of_active_producers(log_: Log) -> dict[int, _LastRecord]:
    with log_.lock:
        return {pid: _LastRecord(e.last_data_offset if e.last_data_offset >= 0 else None, e.producer_epoch)
                for pid, e in log_.producer_state.producers.items()}


def _is_last_record_of_producer(header: RecordBatchHeader, last_records: dict[int, _LastRecord]) -> bool:
    last = last_records.get(header.producer_id)
    if last is None:
        return False
    if last.last_data_offset is not None:
        return header.last_offset == last.last_data_offset
    return header.is_control and header.producer_epoch == last.producer_epoch


def _walk(segment: LogSegment, start: int = 0) -> Iterable[tuple[int, RecordBatchHeader]]:
    return segment.log.batches_from(start)


def _build_offset_map(log_: Log, segments: list[LogSegment], start: int, end: int,
                      max_entries: int) -> tuple[dict[bytes, int], int]:
    """key -> last offset for [start, end); stops at a segment boundary when the map is full. Returns
    the map and the offset up to which it is complete."""
    offset_map: dict[bytes, int] = {}
    txn_metadata = CleanedTransactionMetadata()
    txn_metadata.add_aborted_transactions(log_.collect_aborted_transactions(start, end))
    mapped_to = start
    for segment in segments:
        if segment.base_offset >= end:
            break
        if len(offset_map) >= max_entries:
            break
        for pos, header in _walk(segment):
            if header.base_offset + header.last_offset_delta < start:
                continue
            if header.base_offset >= end:
                break
            if header.is_control:
                _, records = decode_records(segment.log.read(pos, header.total_size))
                txn_metadata.on_control_batch_read(header, records)
                continue
            if txn_metadata.on_batch_read(header):
                continue  # an aborted transaction's data: never the latest value of a key
            _, records = decode_records(segment.log.read(pos, header.total_size))
            base = header.base_offset
            for record in records:
                offset = base + record.offset_delta
                if record.key is not None and start <= offset < end:
                    offset_map[record.key] = offset
        mapped_to = min(end, _next_base(segments, segment))
    return offset_map, max(mapped_to, start)


def _group_segments(segments: list[LogSegment], max_size: int, max_index_size: int) -> list[list[LogSegment]]:
    """Consecutive segments whose combined log and index sizes fit one segment (Kafka's groupSegmentsBySize)."""
    groups: list[list[LogSegment]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        log_size = group[0].size
        index_size = group[0].offset_index.entries * 8
        time_index_size = group[0].time_index.entries * 12
        while rest:
            candidate = rest[0]
            if (log_size + candidate.size > max_size or index_size + candidate.offset_index.entries * 8 > max_index_size
                    or time_index_size + candidate.time_index.entries * 12 > max_index_size
                    or candidate.read_next_offset() - 1 - group[0].base_offset > _INT32_MAX):
                break
            group.append(rest.pop(0))
            log_size += candidate.size
            index_size += candidate.offset_index.entries * 8
            time_index_size += candidate.time_index.entries * 12
        groups.append(group)
    return groups


def _set_delete_horizon(batch: bytearray) -> None:
    import crc32c  # here, not at the top: importing it costs ~20 ms of start-up (see wire._records)

    (attributes,) = _ATTRIBUTES.unpack_from(batch, 21)
    _ATTRIBUTES.pack_into(batch, 21, attributes | DELETE_HORIZON_FLAG_MASK)
    _CRC.pack_into(batch, 17, crc32c.crc32c(memoryview(batch)[21:]))


def _rebuild(header: RecordBatchHeader, records: list[Record], horizon: int | None) -> bytes:
    """A batch of ``records`` (a non-empty subset of ``header``'s) as Kafka's MemoryRecordsBuilder writes it
    for the cleaner: same base and last offsets, codec and producer fields; the base timestamp is the
    delete horizon (``horizon`` if new, else the batch's own) or else the first kept record's, the max
    timestamp that of the kept records (under LOG_APPEND_TIME the batch's)."""
    log_append = header.timestamp_type is TimestampType.LOG_APPEND_TIME
    timestamps = [header.timestamp_of(r) for r in records]
    if horizon is None:
        horizon = header.delete_horizon_ms
    base_ts = horizon if horizon is not None else timestamps[0]
    for record, timestamp in zip(records, timestamps, strict=True):
        record.timestamp_delta = timestamp - base_ts
    batch = bytearray(build_batch(
        records, base_offset=header.base_offset, base_timestamp=base_ts, compression=header.compression,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, is_transactional=header.is_transactional,
        is_control=header.is_control, partition_leader_epoch=header.partition_leader_epoch,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append else TimestampType.CREATE_TIME,
        max_timestamp=header.max_timestamp if log_append else max(timestamps),
        # the original last offset: it carries the producer's last sequence (Kafka's overrideLastOffset)
        last_offset_delta=header.last_offset_delta))
    if horizon is not None:
        _set_delete_horizon(batch)
    return bytes(batch)


def _empty_batch(header: RecordBatchHeader) -> bytes:
    """``header``'s batch with no records (Kafka's writeEmptyHeader): same offsets, producer fields and max
    timestamp, no codec, no base timestamp (-1), no delete horizon."""
    return build_batch(
        [], base_offset=header.base_offset, base_timestamp=NO_TIMESTAMP,
        max_timestamp=header.max_timestamp, last_offset_delta=header.last_offset_delta,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        is_transactional=header.is_transactional, is_control=header.is_control,
        partition_leader_epoch=header.partition_leader_epoch, timestamp_type=header.timestamp_type)


def clean_log(log_: Log, *, first_dirty_offset: int | None = None, now_ms: int | None = None,
              max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
              before_swap: Callable[[], None] | None = None) -> CleanResult:
    """Compact ``log_`` once (see the module docstring); returns the next first dirty offset.

    ``before_swap`` is a test hook called after the cleaned files are written, before the swap.
    """
    now = log_.time_ms() if now_ms is None else now_ms
    with log_.lock:
        target = log_to_clean(log_, first_dirty_offset, now)
        segments = log_.local.segments.snapshot()
        for segment in segments:
            segment.log.file.retain()
    try:
        start, end = target.first_dirty_offset, target.first_uncleanable_offset
        if end <= start:
            return CleanResult(start)
        log.info("Cleaner: beginning cleaning of log %s: building the offset map for offsets [%d, %d)",
                 log_.name, start, end)
        started = time.monotonic()
        offset_map, mapped_to = _build_offset_map(log_, [s for s in segments if _next_base(segments, s) > start],
                                                  start, end, max_map_entries)
        log.info("Cleaner: offset map for log %s complete: %d keys up to offset %d in %d ms", log_.name,
                 len(offset_map), mapped_to, (time.monotonic() - started) * 1000)
        if mapped_to <= log_.log_start_offset:
            return CleanResult(start)
        to_clean = [s for s in segments[:-1] if s.base_offset < mapped_to and _next_base(segments, s) <= mapped_to]
        if not to_clean:
            return CleanResult(start)
        result = CleanResult(mapped_to)
        config = log_.config
        cleaning = _Cleaning(offset_map, CleanedTransactionMetadata(), now, now + config.delete_retention_ms, end,
                             result)
        groups = _group_segments(to_clean, config.segment_size, config.max_index_size)
        group_bytes = [sum(s.size for s in group) for group in groups]  # read now: cleaned groups are swapped out
        total_bytes = max(sum(group_bytes), 1)
        done_bytes = 0
        for i, group in enumerate(groups, 1):
            if not _clean_group(log_, group, cleaning, before_swap):
                result.aborted = True
                result.next_dirty_offset = start
                break
            # One line per swapped group: how far the cleaning of this log is, by the bytes it had to read.
            done_bytes += group_bytes[i - 1]
            log.info("Cleaner: cleaned segments %d..%d of log %s: group %d/%d, %d%% of %d bytes in %d ms",
                     group[0].base_offset, group[-1].base_offset, log_.name, i, len(groups),
                     done_bytes * 100 // total_bytes, total_bytes, (time.monotonic() - started) * 1000)
        return result
    finally:
        for segment in segments:
            segment.log.file.release()


@dataclass(slots=True)
class _Cleaning:
    """What one cleaning carries from group to group."""

    offset_map: dict[bytes, int]
    txn_metadata: CleanedTransactionMetadata
    now: int
    delete_horizon_ms: int  # given to tombstones and markers first found removable
    upper_bound_offset: int  # the first uncleanable offset: the batch ending there stays, even empty
    result: CleanResult


def _clean_group(log_: Log, group: list[LogSegment], cleaning: _Cleaning,
                 before_swap: Callable[[], None] | None) -> bool:
    result = cleaning.result
    directory = log_.dir
    base = group[0].base_offset
    prefix = os.path.join(directory, filename_prefix_from_offset(base))
    for suffix in (_LOG, ".index", ".timeindex", ".txnindex"):
        path = prefix + suffix + CLEANED_FILE_SUFFIX
        if os.path.exists(path):
            os.unlink(path)
    config = log_.config
    cleaned = LogSegment.open(directory, base, index_interval_bytes=config.index_interval_bytes,
                              max_index_size=config.max_index_size, time_ms=log_.time_ms,
                              suffix=CLEANED_FILE_SUFFIX)
    cleaning.txn_metadata.cleaned_index = cleaned.txn_index
    try:
        last_records = _last_records_of_active_producers(log_)
        for i, segment in enumerate(group):
            # The aborted transactions overlapping the whole segment: the cleaned .txnindex is rebuilt
            # from those whose ABORT marker stays.
            upper = group[i + 1].base_offset if i + 1 < len(group) else segment.read_next_offset()
            cleaning.txn_metadata.add_aborted_transactions(
                log_.collect_aborted_transactions(segment.base_offset, upper))
            _copy_segment(segment, cleaned, cleaning, last_records)
            result.bytes_read += segment.size
        cleaned.on_become_inactive_segment()
        cleaned.flush()
        mtime = os.stat(group[-1].log.path).st_mtime
        os.utime(cleaned.log.path, (mtime, mtime))
        if before_swap is not None:
            before_swap()
        with log_.lock:
            current = {s.base_offset: s for s in log_.local.segments.snapshot()}
            if log_.deleted or log_._closed or any(current.get(s.base_offset) is not s for s in group):
                log.info("Cleaning of %s aborted: its segments changed meanwhile", log_.name)
                cleaned.close_handlers()
                for path in cleaned.file_paths():
                    if os.path.exists(path):
                        os.unlink(path)
                return False
            with log_._io("swapping cleaned segments"):
                log_.local.replace_segments([cleaned], group)
        result.bytes_written += cleaned.size
        result.segments_cleaned += len(group)
        result.swapped_groups.append(base)
        return True
    except BaseException:
        cleaned.close_handlers()
        for path in cleaned.file_paths():
            if path.endswith(CLEANED_FILE_SUFFIX) and os.path.exists(path):
                os.unlink(path)
        raise


def _copy_segment(segment: LogSegment, cleaned: LogSegment, cleaning: _Cleaning,
                  last_records: dict[int, _LastRecord]) -> None:
    """Recopy what ``segment`` keeps into ``cleaned`` (Kafka's cleanInto and its RecordFilter)."""
    now, offset_map, txn_metadata = cleaning.now, cleaning.offset_map, cleaning.txn_metadata
    out = bytearray()
    out_batches: list[tuple[int, RecordBatchHeader]] = []

    def emit(data: bytes | bytearray) -> None:
        out_batches.append((len(out), parse_batch_header(data, 0)))
        out.extend(data)

    for pos, header in _walk(segment):
        data = segment.log.read(pos, header.total_size)
        records: list[Record] | None = None
        if header.is_control:
            _, records = decode_records(data)
            can_discard = txn_metadata.on_control_batch_read(header, records)
            horizon = header.delete_horizon_ms
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = discard_records = txn_metadata.on_batch_read(header)
        retain_empty = ((header.has_producer_id and _is_last_record_of_producer(header, last_records))
                        or header.next_offset == cleaning.upper_bound_offset)
        if discard_records:
            cleaning.result.records_removed += header.records_count
            if retain_empty:
                emit(_empty_batch(header))
            continue
        if records is None:
            _, records = decode_records(data)
        kept = records if header.is_control else _retained_records(header, records, offset_map, now)
        cleaning.result.records_removed += len(records) - len(kept)
        if not kept:
            if retain_empty:
                emit(_empty_batch(header))
        else:
            # A tombstone, or the marker of a transaction with no data left, gets a delete horizon.
            has_tombstone = any(r.value is None for r in kept)
            marker_for_empty_txn = can_discard and header.is_control
            needs_horizon = (has_tombstone or marker_for_empty_txn) and not header.has_delete_horizon
            if len(kept) == len(records) and not needs_horizon:
                emit(data)
            else:
                emit(_rebuild(header, kept, cleaning.delete_horizon_ms if needs_horizon else None))
        if len(out) >= 8 * 1024 * 1024:
            cleaned.append(bytes(out), out_batches)
            out.clear()
            out_batches.clear()
    if out_batches:
        cleaned.append(bytes(out), out_batches)


def _retained_records(header: RecordBatchHeader, records: list[Record], offset_map: dict[bytes, int],
                      now: int) -> list[Record]:
    """The records of a data batch that stay: keyed, the latest of their key, and not a tombstone past
    its delete horizon (Kafka's Cleaner.shouldRetainRecord)."""
    kept = []
    for record in records:
        if record.key is None:
            continue
        if offset_map.get(record.key, -1) > header.base_offset + record.offset_delta:
            continue
        if record.value is None and header.has_delete_horizon and now >= header.base_timestamp:
            continue  # the tombstone's delete horizon has passed
        kept.append(record)
    return kept


# -- the thread -------------------------------------------------------------------------------------------


class LogCleaner:
    """The cleaner thread: cleans the dirtiest compacted log, checkpoints, backs off when idle."""

    def __init__(self, logs: Callable[[], list[Log]], *, backoff_ms: int = 15_000,
                 time_ms: Callable[[], int] | None = None, max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES) -> None:
        self._logs = logs
        self.backoff_ms = backoff_ms
        self.time_ms = time_ms or (lambda: time.time_ns() // 1_000_000)
        self.max_map_entries = max_map_entries
        self._checkpoints: dict[str, dict[tuple[str, int], int]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.cleanings = 0

    # -- checkpoints -----------------------------------------------------------------------------------
    def _checkpoint_file(self, log_dir: str) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(os.path.join(log_dir, CLEANER_OFFSET_CHECKPOINT))

    def _offsets(self, log_dir: str) -> dict[tuple[str, int], int]:
        """The checkpointed offsets of ``log_dir``, read once (the caller holds the lock)."""
        offsets = self._checkpoints.get(log_dir)
        if offsets is None:
            try:
                offsets = self._checkpoint_file(log_dir).read()
            except Exception as exc:  # noqa: BLE001 - a bad checkpoint means: clean from the start
                log.warning("ignoring cleaner checkpoint in %s: %s", log_dir, exc)
                offsets = {}
            self._checkpoints[log_dir] = offsets
        return offsets

    def checkpointed_offset(self, log_: Log) -> int | None:
        with self._lock:
            return self._offsets(log_.parent_dir).get((log_.topic, log_.partition))

    def update_checkpoint(self, log_: Log, offset: int | None) -> None:
        self.update_checkpoints(log_.parent_dir, {(log_.topic, log_.partition): offset})

    def update_checkpoints(self, log_dir: str, changes: Mapping[tuple[str, int], int | None]) -> None:
        """Set (None: remove) the checkpointed offsets of ``log_dir``'s partitions in ``changes``, in one write of
        the checkpoint; none when nothing changes (the deleted logs of a topic never cleaned: deleting 800 of them
        wrote it, two fsyncs each, 800 times)."""
        with self._lock:
            offsets = self._offsets(log_dir)
            changed = False
            for key, offset in changes.items():
                if offset is None:
                    changed |= offsets.pop(key, None) is not None
                elif offsets.get(key) != offset:
                    offsets[key] = offset
                    changed = True
            if not changed:
                return
            snapshot = dict(offsets)
        self._checkpoint_file(log_dir).write(snapshot)

    # -- one pass ---------------------------------------------------------------------------------------
    def grab_filthiest_log(self) -> LogToClean | None:
        now = self.time_ms()
        best: LogToClean | None = None
        for log_ in self._logs():
            if not log_.config.compact or log_.deleted or log_._closed or log_.is_offline:
                continue
            with log_.lock:
                candidate = log_to_clean(log_, self.checkpointed_offset(log_), now)
            if candidate.first_uncleanable_offset <= candidate.first_dirty_offset:
                continue
            if candidate.cleanable_ratio < log_.config.min_cleanable_dirty_ratio and not candidate.needs_compaction_now:
                continue
            if best is None or candidate.cleanable_ratio > best.cleanable_ratio:
                best = candidate
        return best

    def clean_once(self) -> CleanResult | None:
        target = self.grab_filthiest_log()
        if target is None:
            return None
        log_ = target.log
        started = time.monotonic()
        result = clean_log(log_, first_dirty_offset=target.first_dirty_offset, now_ms=self.time_ms(),
                           max_map_entries=self.max_map_entries)
        if not result.aborted:
            self.update_checkpoint(log_, result.next_dirty_offset)
        self.cleanings += 1
        log.info("Cleaned log %s: %d segments, %d -> %d bytes, %d records removed in %d ms (next dirty offset %d)",
                 log_.name, result.segments_cleaned, result.bytes_read, result.bytes_written, result.records_removed,
                 (time.monotonic() - started) * 1000, result.next_dirty_offset)
        return result

    # -- thread ----------------------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="kafka-log-cleaner-thread-0", daemon=True)
            self._thread.start()

    def wakeup(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                result = self.clean_once()
            except Exception:
                log.exception("Error cleaning logs; backing off")
                result = None
            if result is None:
                self._wake.wait(self.backoff_ms / 1000)
                self._wake.clear()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
