"""A partition's log: what the broker appends to and reads from (Kafka's UnifiedLog).

On disk: the partition directory ``<topic>-<partition>`` (segments, ``*.snapshot`` producer state,
``leader-epoch-checkpoint``, ``partition.metadata``); its offsets live in the data-dir checkpoints the log
manager writes (recovery point, log start offset, high watermark). A new log makes its first segment's ``.log``,
``.index`` and ``.timeindex`` (as Kafka); its leader-epoch checkpoint and ``partition.metadata`` are written by
the scheduler thread ``CHECKPOINT_WRITE_DELAY_MS`` later (or at close; ``partition.metadata`` by the first append
if sooner, as Kafka's, so that a log with records always names its topic id): after a crash, recovery rebuilds the
epochs from the batches, and a log without a topic id is stray (``LeadershipHandOver.delete_stray_logs``).

Offsets: ``log_start_offset <= high_watermark <= log_end_offset``; ``last_stable_offset <= high_watermark``
(the first offset of an undecided or unreplicated transaction, else the high watermark). An offset, once
assigned, never changes; the high watermark only moves forward, except by truncation.

Concurrency — who serializes what:

* ``Log.lock`` (an RLock) guards the segment map, every offset above, producer state and the leader-epoch
  cache. Appends, reads, truncation, DeleteRecords, retention's and the cleaner's segment swaps take it,
  each for a short, bounded time (page-cache writes, in-memory index lookups, header preads).
* The event loop thread appends and reads. fsync (``flush``), delayed file deletion, checkpoint writes,
  retention and recovery run on the storage scheduler / log manager threads, compaction on the cleaner
  thread: none of them holds the lock while doing disk work.
* Segment files are closed only on the scheduler thread (see storage.local_log), and read regions hold
  their own file reference, so a region stays readable when its segment is deleted.

Errors: a refused append (CorruptRecordError, InvalidRecordError, RecordTooLargeError, ...) writes
nothing. An OSError takes the log directory offline (LogDirFailureChannel) and raises KafkaStorageError;
every later call raises KafkaStorageError too.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

from storage import log_validator
from storage.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA_FILE,
    LeaderEpochCheckpointFile,
    PartitionMetadataFile,
)
from storage.config import LogConfig
from storage.errors import (
    InconsistentTopicIdError,
    KafkaStorageError,
    OffsetMovedToTieredStorageError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
)
from storage.file_records import atomic_write
from storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochFileCache
from storage.local_log import FetchDataInfo, LocalLog
from storage.log_dir_failure import LogDirFailureChannel
from storage.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerAppendInfo,
    ProducerStateManager,
    control_marker,
)
from storage.scheduler import InlineScheduler
from storage.segment import TimestampAndOffset
from storage.transaction_index import AbortedTxn
from wire import (
    CONTROL_FLAG_MASK,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    CorruptRecordError,
    RecordBatchHeader,
    TimestampType,
    UnrebuildableBatchError,
    decode_records,
)

log = logging.getLogger("storage.log")

_TRANSACTIONAL_OR_CONTROL = TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK

# Told how long each flush (fsync) took, in ms, on the flushing thread: Kafka's LogFlushStats (set by the
# broker's metrics; None: nobody listens).
flush_observer: Callable[[float], None] | None = None

__all__ = ["Log", "LogAppendInfo", "DELETE_DIR_SUFFIX", "FUTURE_DIR_SUFFIX", "STRAY_DIR_SUFFIX", "future_dir_name", "EARLIEST_TIMESTAMP", "LATEST_TIMESTAMP", "MAX_TIMESTAMP",
           "EARLIEST_LOCAL_TIMESTAMP", "LATEST_TIERED_TIMESTAMP", "EARLIEST_PENDING_UPLOAD_TIMESTAMP",
           "parse_topic_partition_name",
           "topic_partition_dir_name"]

# ListOffsets special timestamps (Kafka's ListOffsetsRequest)
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6
_LONG_MAX = (1 << 63) - 1


def topic_partition_dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"


# Suffixes of partition directories that are not the partition's current log (Kafka's UnifiedLog): a deleted
# one awaiting removal, a future one being filled by AlterReplicaLogDirs, a stray one.
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"
STRAY_DIR_SUFFIX = "-stray"
_DIR_SUFFIXES = (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)


# A test hook, PYKBROKER_TEST_LOG_WORK_DELAY_MS (unset: 0): the file work that follows an admin answer (these
# writes, and the broker's background creation of new logs and renames of deleted ones) waits at least this long,
# so that a test can kill -9 inside that window every time. It only delays work that is deferred anyway.
TEST_LOG_WORK_DELAY_MS = int(os.environ.get("PYKBROKER_TEST_LOG_WORK_DELAY_MS") or 0)

# How long the scheduler thread waits before writing a leader-epoch checkpoint or a partition.metadata (two fsyncs
# each). A CreateTopics of hundreds of partitions makes their logs in a burst on the event loop; their writes, started
# at once, made each file created meanwhile slower (the disk's journal, the interpreter's lock): measured on one node
# creating 10 x 40 partitions under load, the answer came 25% sooner with them 300 ms later. Only the first append
# waits for partition.metadata (written then, as Kafka's); after a crash recovery rebuilds the epochs.
CHECKPOINT_WRITE_DELAY_MS = max(300, TEST_LOG_WORK_DELAY_MS)


def future_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>.<uuid without dashes>-future``: a replica moving into this log dir."""
    return f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_topic_partition_name(name: str) -> tuple[str, int]:
    """``my-topic-3`` (or ``my-topic-3.<uuid>-future``, ``-delete``, ``-stray``) → ("my-topic", 3); ValueError
    for anything else."""
    if name.endswith(_DIR_SUFFIXES):
        base, dot, _unique = name[: name.rindex("-")].rpartition(".")
        if dot and base:
            name = base
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"Found directory {name}, '{name}' is not in the form of topic-partition")
    return topic, int(partition)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogAppendInfo(NamedTuple):
    """What an append did (Kafka's LogAppendInfo); an append makes it with ``tuple.__new__`` (no Python call).

    ``offset_of_max_timestamp`` is the last offset of the batch with the largest timestamp (Kafka's
    shallow offset). ``log_append_time`` is set when the topic uses LogAppendTime, else None.
    ``duplicate``: the batch was a producer retry already in the log; its original offsets are returned
    and nothing was written.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int | None
    log_start_offset: int
    records_count: int
    num_batches: int
    valid_bytes: int
    last_leader_epoch: int = -1
    duplicate: bool = False


_new_append_info = tuple.__new__


class Log:
    """One partition's log (see the module docstring for formats, invariants and locking)."""

    def __init__(self, directory: str, config: LogConfig, local_log: LocalLog, *, log_start_offset: int,
                 producer_state: ProducerStateManager, leader_epoch_cache: LeaderEpochFileCache,
                 high_watermark: int = 0, scheduler: Any = None, time_ms: Callable[[], int] = _wall_clock_ms,
                 failure_channel: LogDirFailureChannel | None = None, topic_id: uuid.UUID | None = None,
                 lock: threading.RLock | None = None) -> None:
        self.dir = directory
        # The log dir holding this partition's directory; fixed (a delete renames within the same dir).
        self.parent_dir = os.path.dirname(os.path.abspath(directory))
        self.topic, self.partition = parse_topic_partition_name(os.path.basename(directory))
        self.name = f"{self.topic}-{self.partition}"  # fixed as the topic and partition (every append names it)
        # A future replica (AlterReplicaLogDirs): filled by the copy from the current log, then swapped in.
        self.is_future = directory.endswith(FUTURE_DIR_SUFFIX)
        # Told (under the lock) of every truncation: (offset, fully) — the copy to a future replica follows it.
        self.truncation_listener: Callable[[int, bool], None] | None = None
        self.config = config
        self.local = local_log
        self.lock = lock or threading.RLock()
        self.producer_state = producer_state
        self.leader_epoch_cache = leader_epoch_cache
        self.scheduler = scheduler if scheduler is not None else InlineScheduler()
        self.time_ms = time_ms
        self.failure_channel = failure_channel or LogDirFailureChannel()
        self.partition_metadata_file = PartitionMetadataFile(os.path.join(directory, PARTITION_METADATA_FILE))
        self.topic_id = topic_id
        self._log_start_offset = log_start_offset
        # Tiered storage (KIP-405): the local segments start here; [log_start_offset, local_log_start_offset) is
        # only in remote storage. The remote log manager tells the log what is copied (highest_offset_in_remote_
        # storage, -1: nothing) and where the remote data starts (set_log_start_offset_from_remote).
        self._local_log_start_offset = log_start_offset
        self.highest_offset_in_remote_storage = -1
        # The log start offset of the checkpoint this log was opened with (recovery raises the start to the first
        # local segment; the remote log manager lowers it again, to no less than this).
        self.checkpointed_log_start_offset = log_start_offset
        self._high_watermark = min(max(high_watermark, log_start_offset), local_log.log_end_offset)
        self._truncations = 0  # bumped by every truncation: a flush started before one must not move the recovery point
        self._flush_pending = False
        self._closed = False
        self.deleted = False

    # -- opening ---------------------------------------------------------------------------------------
    @classmethod
    def open(cls, directory: str, config: LogConfig | None = None, *, log_start_offset: int = 0,
             recovery_point: int = 0, high_watermark: int = 0, had_clean_shutdown: bool = False,
             scheduler: Any = None, time_ms: Callable[[], int] = _wall_clock_ms,
             failure_channel: LogDirFailureChannel | None = None, topic_id: uuid.UUID | None = None,
             producer_id_expiration_ms: int = 86_400_000, log_recovery_progress: bool = True) -> Log:
        """Open (creating if needed) and recover the log in ``directory``; see storage.recovery. A directory this
        call creates (a new partition) is known empty: nothing in it is looked for or read, only the first
        segment's files are created (creating a log took about 30 system calls on the event loop, now 10)."""
        from storage.recovery import LogLoader

        config = config or LogConfig()
        scheduler = scheduler if scheduler is not None else InlineScheduler()
        try:
            os.mkdir(directory)
        except FileExistsError:
            new_dir = False
        except FileNotFoundError:
            os.makedirs(directory, exist_ok=True)
            new_dir = False
        else:
            new_dir = True
        name = os.path.basename(directory)
        producer_state = ProducerStateManager(directory, name, producer_id_expiration_ms=producer_id_expiration_ms,
                                              new_dir=new_dir)

        def persist(write: Callable[[], None]) -> None:
            def run() -> None:
                try:
                    write()
                except FileNotFoundError:
                    if os.path.isdir(os.path.dirname(epoch_cache.checkpoint.path)):
                        raise  # else the log was deleted (its directory renamed) meanwhile
            scheduler.schedule_once(f"leader-epoch-checkpoint-{name}", run, CHECKPOINT_WRITE_DELAY_MS)

        epoch_cache = LeaderEpochFileCache(
            LeaderEpochCheckpointFile(os.path.join(directory, LEADER_EPOCH_CHECKPOINT)), persist, new_dir=new_dir)
        loaded = LogLoader(directory, name, config, time_ms=time_ms, scheduler=scheduler,
                           had_clean_shutdown=had_clean_shutdown, log_start_offset=log_start_offset,
                           recovery_point=recovery_point, producer_state=producer_state, leader_epoch_cache=epoch_cache,
                           log_progress=log_recovery_progress, new_dir=new_dir).load()
        local = LocalLog(directory, config, loaded.segments, loaded.recovery_point, loaded.log_end_offset, name,
                         time_ms, scheduler)
        log_ = cls(directory, config, local, log_start_offset=loaded.log_start_offset, producer_state=producer_state,
                   leader_epoch_cache=epoch_cache, high_watermark=high_watermark, scheduler=scheduler, time_ms=time_ms,
                   failure_channel=failure_channel, topic_id=topic_id)
        log_.checkpointed_log_start_offset = log_start_offset
        if topic_id is not None:
            log_.assign_topic_id(topic_id, new_dir=new_dir)
        elif not new_dir and log_.partition_metadata_file.exists():
            try:
                log_.topic_id = log_.partition_metadata_file.read()
            except Exception as exc:  # noqa: BLE001 - a bad metadata file is rewritten when the id is known
                log.warning("ignoring unreadable %s: %s", log_.partition_metadata_file.path, exc)
        return log_

    def assign_topic_id(self, topic_id: uuid.UUID, *, new_dir: bool = False) -> None:
        """Record the topic id for partition.metadata, written on the scheduler thread (InconsistentTopicIdError
        if another one is there or recorded). ``new_dir``: the directory was just created (no file to read)."""
        file = self.partition_metadata_file
        with self.lock:
            existing = file.recorded
            if existing is None and not new_dir and file.exists():
                try:
                    existing = file.read()
                except Exception:  # noqa: BLE001
                    existing = None
            if existing is not None and existing != topic_id:
                raise InconsistentTopicIdError(f"Tried to assign topic ID {topic_id} to log for topic partition "
                                               f"{self.name}, but log already contained topic ID {existing}")
            self.topic_id = topic_id
            if existing == topic_id:
                return
            file.record(topic_id)
        self.scheduler.schedule_once(f"flush-metadata-file-{self.name}",
                                     self._guard_background(self._flush_partition_metadata, "flushing partition metadata"),
                                     CHECKPOINT_WRITE_DELAY_MS)

    def _flush_partition_metadata(self) -> None:
        """Write the recorded topic id (Kafka's maybeFlushMetadataFile): the temp file is written and fsynced and
        the directory fsynced without the log's lock, which only the rename takes (skipped for a log deleted or
        closed meanwhile), so that an append after it never waits for these fsyncs (the first append writes the id
        itself, with another temp file, if it comes first)."""
        file = self.partition_metadata_file
        topic_id = file.recorded
        if topic_id is None:
            return
        try:
            tmp = file.write_temp(topic_id)
        except FileNotFoundError:
            if self._closed or self.deleted or file.recorded != topic_id:
                return  # its directory was renamed meanwhile
            raise
        with self.lock:
            if self._closed or self.deleted:
                return
            if tmp != file.path + ".tmp":  # the directory moved meanwhile (a future replica swapped in)
                file.flush()
                return
            file.commit_temp(tmp, topic_id)
        try:
            file.sync_dir()
        except FileNotFoundError:
            if not (self._closed or self.deleted):
                raise

    # -- offsets ---------------------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self.local.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def local_log_start_offset(self) -> int:
        return max(self._local_log_start_offset, self._log_start_offset)

    @property
    def remote_log_enabled(self) -> bool:
        """remote.storage.enable: older segments are copied to remote storage and read back from there."""
        return self.config.remote_storage_enable and not self.is_future

    @property
    def remote_log_enabled_and_copy_enabled(self) -> bool:
        return self.remote_log_enabled and not self.config.remote_log_copy_disable

    def set_log_start_offset_from_remote(self, offset: int) -> None:
        """Remote storage holds data from ``offset``: the log starts there, before its local segments (a restart
        or a new replica learns it from the remote log metadata). Never above the local start."""
        with self.lock:
            offset = min(offset, self.local_log_start_offset)
            if offset != self._log_start_offset:
                self._local_log_start_offset = self.local_log_start_offset
                log.info("log start offset %d from remote storage (local log start offset %d) (%s)", offset,
                         self._local_log_start_offset, self.name)
                self._log_start_offset = offset

    def build_remote_log_aux_state(self, epochs: list[tuple[int, int]], producer_snapshot: bytes | None,
                                   offset: int) -> None:
        """KIP-405: this replica starts at ``offset`` with what is below only in remote storage; it takes the
        leader epochs (``(epoch, start offset)`` of the remote leader-epoch checkpoint) and the producer state
        (the remote producer snapshot as of ``offset``) of that data, as Kafka's follower builds its aux state."""
        with self.lock:
            self._check_online()
            for epoch, start in epochs:
                if start <= offset:
                    self.leader_epoch_cache.assign(epoch, start)
            if producer_snapshot is not None and self.log_end_offset == offset:
                with self._io("writing a producer snapshot from remote storage"):
                    atomic_write(self.producer_state.snapshot_path(offset), producer_snapshot)
                    self.producer_state.reload_from_snapshots(self._log_start_offset, self.time_ms())
                    self.producer_state.update_map_end_offset(offset)

    def restore_early_epochs(self, entries: list[tuple[int, int]]) -> bool:
        """Leader epochs below the cache's earliest, from the remote log metadata (a tiered log written before
        its epochs below the local segments were kept across restarts lost them): remote segments of those epochs
        are on the lineage again, so retention reaches them. True if the cache changed."""
        with self.lock:
            self._check_online()
            return self.leader_epoch_cache.restore_early(entries)

    def maybe_increment_local_log_start_offset(self, offset: int, reason: str) -> bool:
        """Local segments below ``offset`` are gone (copied to remote storage, then past local retention)."""
        with self.lock:
            if offset <= self.local_log_start_offset:
                return False
            log.info("Incremented local log start offset to %d due to %s (%s)", offset, reason, self.name)
            self._local_log_start_offset = offset
            return True

    @property
    def recovery_point(self) -> int:
        return self.local.recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def maybe_increment_high_watermark(self, value: int) -> bool:
        """Move the high watermark forward to ``value`` (capped at the log end offset); never backwards."""
        with self.lock:
            new = min(value, self.local.log_end_offset)
            if new <= self._high_watermark:
                return False
            self._high_watermark = new
            self.producer_state.on_high_watermark_updated(new)
            return True

    def update_high_watermark(self, value: int) -> int:
        """Set the high watermark within [log_start_offset, log_end_offset], either way (follower sync)."""
        with self.lock:
            new = max(self._log_start_offset, min(value, self.local.log_end_offset))
            self._high_watermark = new
            self.producer_state.on_high_watermark_updated(new)
            return new

    @property
    def last_stable_offset(self) -> int:
        with self.lock:
            unstable = self.producer_state.first_unstable_offset()
            hw = self._high_watermark
            return unstable if unstable is not None and unstable < hw else hw

    @property
    def first_unstable_offset(self) -> int | None:
        return self.producer_state.first_unstable_offset()

    @property
    def size_in_bytes(self) -> int:
        return self.local.size_in_bytes()

    @property
    def num_segments(self) -> int:
        return len(self.local.segments)

    @property
    def segments(self):
        return self.local.segments

    @property
    def active_segment(self):
        return self.local.active_segment

    @property
    def is_offline(self) -> bool:
        return self.failure_channel.is_offline(self.parent_dir)

    # -- failure handling ------------------------------------------------------------------------------
    def _check_online(self) -> None:
        if self._closed:
            raise KafkaStorageError(f"The log for partition {self.name} is closed")
        if self.failure_channel.is_offline(self.parent_dir):
            raise KafkaStorageError(f"The log dir {self.parent_dir} of partition {self.name} is offline")

    def _io(self, what: str):
        return _IOGuard(self, what)

    def _go_offline(self, what: str, exc: OSError) -> KafkaStorageError:
        message = f"Error while {what} for {self.name} in dir {self.parent_dir}"
        self.failure_channel.maybe_add_offline_log_dir(self.parent_dir, message, exc)
        return KafkaStorageError(f"{message}: {exc}")

    # -- append ----------------------------------------------------------------------------------------
    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int, *,
                         log_append_time_ms: int | None = None, origin: str = AppendOrigin.CLIENT,
                         keep_tail: bool = False) -> LogAppendInfo:
        """Validate, assign offsets to and append ``records`` (one or more v2 batches) as the leader.

        Every batch is checked (magic, lengths, CRC-32C, Kafka's client rules, size, timestamps, producer
        sequence) before anything is written; a refusal raises and writes nothing. Offsets are assigned by
        rewriting each batch's base_offset and partition_leader_epoch in place (outside the CRC); under
        LogAppendTime the max timestamp is rewritten too (and the CRC recomputed). Header-only work: the
        records of a batch are decoded only when storage.log_validator needs them (keys on compacted topics,
        timestamps past a bound), for a
        topic-level compression.type that differs from the batch's codec, and for transaction markers.
        ``keep_tail``: reads wait at the log end; the batch's bytes are kept for them until ``drop_tail``
        (LocalLog.append).
        """
        return self._append(records, origin, leader_epoch=leader_epoch, log_append_time_ms=log_append_time_ms,
                            keep_tail=keep_tail)

    def drop_tail(self) -> None:
        """Forget the batch an ``append_as_leader(keep_tail=True)`` kept for the reads it woke."""
        self.local.drop_tail()

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches fetched from the leader, offsets and epochs as given (CRC and order checked).

        A partial batch at the end (a fetch response may end with one) is dropped.
        """
        return self._append(records, AppendOrigin.REPLICATION, leader_epoch=None, log_append_time_ms=None)

    def _append(self, records: bytes | bytearray | memoryview, origin: str, *, leader_epoch: int | None,
                log_append_time_ms: int | None, keep_tail: bool = False) -> LogAppendInfo:
        """Append as the leader of ``leader_epoch`` (offsets assigned), or as a follower (None: offsets as fetched)."""
        # Offsets are assigned by rewriting batch headers in place: a writable buffer (a request's own
        # frame, see wire's FrameReader) is used as it is, anything else is copied once.
        buf = records if (isinstance(records, memoryview) and not records.readonly) or isinstance(records, bytearray) \
            else bytearray(records)
        config = self.config
        with self.lock:
            if self._closed or self.failure_channel.is_offline(self.parent_dir):
                self._check_online()  # raises
            unrebuildable: list[UnrebuildableBatchError] = []
            batches, buf = log_validator.analyze_and_validate(buf, origin, config, self.name, unrebuildable)
            if not batches:
                return LogAppendInfo(-1, -1, -1, -1, None, self._log_start_offset, 0, 0, 0)
            now = self.time_ms()
            log_append_time = None
            if leader_epoch is not None:
                if config.timestamp_type is TimestampType.LOG_APPEND_TIME:
                    log_append_time = log_append_time_ms if log_append_time_ms is not None else now
                log_validator.validate_records(buf, batches, config, self.name, now,
                                               require_keys=config.compact and origin == AppendOrigin.CLIENT)
                if unrebuildable:  # after the records' own refusals, as Kafka's rebuild fails after them
                    raise unrebuildable[0]
                if origin == AppendOrigin.CLIENT and config.compression_type != "producer":
                    buf, batches = log_validator.maybe_recompress(buf, batches, config)
                batches = log_validator.assign_offsets(buf, batches, self.local.log_end_offset, leader_epoch,
                                                       log_append_time)
            else:
                batches = log_validator.check_follower_offsets(batches, self.local.log_end_offset, self.name)

            # Producer state: a retry of a batch already in the log answers with its original offsets. An
            # idempotent producer's next batch (the usual case) skips the general checks (continued_entry).
            # A batch without a producer id (a producer that is not idempotent) has neither: no duplicate to find,
            # no state to update.
            continued = None
            last_header = batches[-1][1]
            last_offset = last_header.base_offset + last_header.last_offset_delta
            if len(batches) == 1:  # what a client sends: the loop below, for one batch
                first_offset = last_header.base_offset
                if last_header.producer_id < 0:
                    producer_checks = False
                else:
                    if origin == AppendOrigin.CLIENT and not last_header.attributes & _TRANSACTIONAL_OR_CONTROL:
                        continued = self.producer_state.continued_entry(last_header)
                    producer_checks = continued is None
                max_timestamp, offset_of_max = (last_header.max_timestamp, last_offset) \
                    if last_header.max_timestamp > -1 else (-1, first_offset)
                records_count = last_header.records_count
            else:
                producer_checks = True
                first_offset = batches[0][1].base_offset
                max_timestamp, offset_of_max = -1, first_offset
                records_count = 0
                for _, header in batches:
                    if header.max_timestamp > max_timestamp:
                        max_timestamp = header.max_timestamp
                        offset_of_max = header.base_offset + header.last_offset_delta
                    records_count += header.records_count
            if producer_checks:
                duplicate = self._find_duplicate(batches, origin)
                if duplicate is not None:
                    return duplicate
                updates, completed = self._prepare_producer_updates(buf, batches, origin)
            size = len(buf)
            if size > config.segment_size:
                raise RecordBatchTooLargeError(
                    f"Message batch size is {size} bytes in append to partition {self.name} which exceeds the "
                    f"maximum configured segment size of {config.segment_size}.")
            local = self.local
            try:  # as ``with self._io(...)``, without the guard object on every append
                if self.partition_metadata_file.recorded is not None:
                    # The topic id is on disk (fsynced, and its dir) before the first records (Kafka's append
                    # calls maybeFlushMetadataFile): a log found without one at start has none, and is stray.
                    self.partition_metadata_file.flush()
                self._maybe_roll(size, max_timestamp, first_offset, last_offset, now)
                local.append(last_offset, buf, batches, keep_tail)
                epochs = self.leader_epoch_cache
                for _, header in batches:
                    if header.partition_leader_epoch >= 0:
                        latest = epochs.latest_epoch
                        if latest is None or header.partition_leader_epoch > latest:
                            epochs.assign(header.partition_leader_epoch, header.base_offset)
                if self._high_watermark > local.log_end_offset:
                    self._high_watermark = local.log_end_offset
                if continued is not None:
                    self.producer_state.continue_entry(continued, last_header, last_offset)
                elif producer_checks:
                    producer_state = self.producer_state
                    for info in updates.values():
                        producer_state.update(info)
                    for txn in completed:
                        self._complete_txn(txn)
                    producer_state.update_map_end_offset(last_offset + 1)
                else:  # no producer id: no producer state to change
                    self.producer_state.update_map_end_offset(last_offset + 1)
            except OSError as exc:
                raise self._go_offline("appending to the log", exc) from exc
            if config.flush_messages < _LONG_MAX and local.unflushed_messages() >= config.flush_messages:
                self.schedule_flush()
            return _new_append_info(LogAppendInfo, (
                first_offset, last_offset, max_timestamp, offset_of_max, log_append_time, self._log_start_offset,
                records_count, len(batches), size, last_header.partition_leader_epoch, False))

    def _find_duplicate(self, batches: list[tuple[int, RecordBatchHeader]], origin: str) -> LogAppendInfo | None:
        if origin != AppendOrigin.CLIENT:
            return None
        for _, header in batches:
            if header.producer_id < 0:
                continue
            entry = self.producer_state.last_entry(header.producer_id)
            if entry is None:
                continue
            dup = entry.find_duplicate_batch(header)
            if dup is not None:
                return LogAppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, dup.last_offset, None,
                                     self._log_start_offset, header.records_count, 1, 0, duplicate=True)
        return None

    def _prepare_producer_updates(self, buf: bytearray | memoryview, batches: list[tuple[int, RecordBatchHeader]],
                                  origin: str) -> tuple[dict[int, ProducerAppendInfo], list[CompletedTxn]]:
        updates: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        for pos, header in batches:
            if header.producer_id < 0:
                continue
            info = updates.get(header.producer_id)
            if info is None:
                info = updates[header.producer_id] = self.producer_state.prepare_update(header.producer_id, origin)
            if header.is_control:
                control_type, coordinator_epoch = control_marker(buf, pos)
                txn = info.append(header, control_type, coordinator_epoch)
            else:
                txn = info.append(header)
            if header.is_transactional:
                self.producer_state.after_transactional_batch(header)
            if txn is not None:
                completed.append(txn)
        return updates, completed

    def maybe_start_transaction_verification(self, producer_id: int, sequence: int, producer_epoch: int,
                                             supports_epoch_bump: bool) -> None:
        """A transactional write is about to be checked with its coordinator (KIP-890): unless the producer's
        transaction is already open here, remember its sequence (producer_state.VerificationStateEntry)."""
        with self.lock:
            state = self.producer_state
            if not state.has_ongoing_transaction(producer_id, producer_epoch, supports_epoch_bump):
                state.maybe_create_verification_state_entry(producer_id, sequence, producer_epoch,
                                                            supports_epoch_bump, self.time_ms())

    def _complete_txn(self, txn: CompletedTxn) -> None:
        lso = self.producer_state.last_stable_offset(txn)
        if txn.is_aborted:
            self.local.active_segment.txn_index.append(
                AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, lso))
        self.producer_state.complete_txn(txn)

    # -- roll --------------------------------------------------------------------------------------------
    def _maybe_roll(self, messages_size: int, max_timestamp: int, first_offset: int, last_offset: int,
                    now: int) -> None:
        segment = self.local.active_segment
        config = self.config
        if segment.should_roll(max_segment_bytes=config.segment_size, messages_size=messages_size,
                               max_timestamp_in_messages=max_timestamp, max_offset_in_messages=last_offset, now=now,
                               max_segment_ms=config.max_segment_ms):
            log.debug("Rolling new log segment for %s (log_size = %d/%d, time_since_roll = %d/%d, offset index full "
                      "= %s)", self.name, segment.size, config.segment_size,
                      segment.time_waited_for_roll(now, max_timestamp), config.max_segment_ms,
                      segment.offset_index.is_full())
            self._roll(first_offset)

    def roll(self, expected_next_offset: int | None = None):
        """Start a new active segment now (at the log end offset)."""
        with self.lock:
            self._check_online()
            with self._io("rolling the log"):
                return self._roll(expected_next_offset)

    def _roll(self, expected_next_offset: int | None):
        start = time.monotonic()
        segment = self.local.roll(expected_next_offset)
        self.producer_state.update_map_end_offset(segment.base_offset)
        snapshot = self.producer_state.take_snapshot(sync=False)
        log.info("Rolled new log segment at offset %d in %d ms (%s)", segment.base_offset,
                 (time.monotonic() - start) * 1000, self.name)
        base = segment.base_offset

        def flush_rolled() -> None:
            if snapshot is not None and os.path.exists(snapshot):
                fd = os.open(snapshot, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            self.flush(base)

        self.scheduler.schedule_once(f"flush-log-{self.name}", self._guard_background(flush_rolled, "flushing"))
        return segment

    def _guard_background(self, fn: Callable[[], None], what: str) -> Callable[[], None]:
        def run() -> None:
            if self._closed or self.deleted:
                return
            try:
                fn()
            except KafkaStorageError:
                pass
            except OSError as exc:
                self._go_offline(what, exc)
        return run

    # -- flush -------------------------------------------------------------------------------------------
    def flush(self, offset: int | None = None) -> None:
        """fsync everything below ``offset`` (default: the log end offset) and move the recovery point.

        Blocking: call it on a storage thread (``schedule_flush`` does), not on the event loop.
        """
        with self.lock:
            self._check_online()
            target = self.local.log_end_offset if offset is None else min(offset, self.local.log_end_offset)
            if target <= self.local.recovery_point:
                return
            segments = self.local.segments_to_flush(target)
            recovery_point = self.local.recovery_point
            truncations = self._truncations
        started = time.perf_counter()
        with self._io("flushing the log"):
            try:
                self.local.flush_segments(segments, recovery_point)
            except FileNotFoundError:
                # The dir was renamed meanwhile (a future log swapped in, a deletion): rename_dir holds the lock,
                # so under it the dir has its new name (Kafka's flushDirIfExists covers the same race).
                with self.lock:
                    if self._closed or self.deleted:
                        return
                    self.local.flush_segments(segments, recovery_point)
        if flush_observer is not None:
            flush_observer((time.perf_counter() - started) * 1000)
        with self.lock:
            if truncations == self._truncations:
                self.local.mark_flushed(target)

    def schedule_flush(self) -> None:
        """Flush on the scheduler thread (at most one pending at a time)."""
        if self._flush_pending:
            return
        self._flush_pending = True

        def run() -> None:
            self._flush_pending = False
            self.flush()

        self.scheduler.schedule_once(f"flush-log-{self.name}", self._guard_background(run, "flushing"))

    def time_since_last_flush_ms(self, now_ms: int | None = None) -> int:
        return (self.time_ms() if now_ms is None else now_ms) - self.local.last_flush_time_ms

    # -- read --------------------------------------------------------------------------------------------
    def read(self, fetch_offset: int, max_bytes: int, *, max_offset: int | None = None,
             min_one_message: bool = False) -> FetchDataInfo:
        """Batches from the one holding ``fetch_offset`` as a sendfile-able region.

        At most ``max_bytes`` (the first batch whole anyway with ``min_one_message``), and nothing at or
        past ``max_offset`` (the high watermark or last stable offset for consumers; default: the log end
        offset). OffsetOutOfRangeError below log_start_offset or above log_end_offset. The region keeps
        its file open until released, even if the segment is deleted meanwhile.
        """
        with self.lock:
            self._check_online()
            leo = self.local.log_end_offset
            # fetch_offset < local_log_start_offset (the larger of the two), without the property's call
            if self._log_start_offset <= fetch_offset < self._local_log_start_offset:
                raise OffsetMovedToTieredStorageError(
                    f"Offset {fetch_offset} of partition {self.name} is in remote storage (local log start offset "
                    f"{self.local_log_start_offset})")
            if fetch_offset > leo or fetch_offset < self._log_start_offset:
                raise OffsetOutOfRangeError(
                    f"Received request for offset {fetch_offset} for partition {self.name}, but we only have log "
                    f"segments from offset {self._log_start_offset} up to {leo}.")
            limit = leo if max_offset is None else min(max_offset, leo)
            try:  # as ``with self._io(...)``, without the guard object on every read (a long poll's, per message)
                return self.local.read(fetch_offset, max_bytes, limit, min_one_message)
            except OSError as exc:
                raise self._go_offline("reading the log", exc) from exc

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_bound_offset) (read_committed fetches).

        An entry sits in the segment of its marker, which may be any later one: the search goes on from
        the segment of ``start_offset`` until an entry's last stable offset reaches the upper bound, as
        Kafka's LocalLog.collectAbortedTransactions.
        """
        with self.lock:
            found: list[AbortedTxn] = []
            for segment in self.local.segments.from_floor(start_offset):
                if not segment.txn_index.entries:  # no abort marker in this segment (most: no transactions at all)
                    continue
                result = segment.collect_aborted_txns(start_offset, upper_bound_offset)
                found.extend(result.aborted_transactions)
                if result.is_complete:
                    break
            return found

    def fetch_offset_by_timestamp(self, target_timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: (timestamp, offset, leader_epoch) for ``target_timestamp``.

        -2 earliest (log start offset), -4 earliest local (the local log start offset), -1 latest (log end
        offset), -3 the record with the largest timestamp, -5 latest tiered (the highest offset copied to remote
        storage; -1 without tiered storage), -6 earliest pending upload (KIP-1023: the first offset not copied
        yet), t >= 0 the first record whose timestamp is >= t in the local segments (None when there is none).
        An epoch Kafka answers as empty is -1.
        """
        with self.lock:
            self._check_online()
            cache = self.leader_epoch_cache
            if target_timestamp == EARLIEST_TIMESTAMP:
                earliest = cache.earliest_entry
                epoch = earliest[0] if earliest is not None and earliest[1] <= self._log_start_offset else -1
                return TimestampAndOffset(-1, self._log_start_offset, epoch)
            if target_timestamp == EARLIEST_LOCAL_TIMESTAMP:
                offset = self.local_log_start_offset
                return TimestampAndOffset(-1, offset, self._epoch_or_none(offset))
            if target_timestamp == LATEST_TIMESTAMP:
                latest = cache.latest_epoch
                return TimestampAndOffset(-1, self.local.log_end_offset, latest if latest is not None else -1)
            if target_timestamp == LATEST_TIERED_TIMESTAMP:
                if not self.remote_log_enabled:
                    return TimestampAndOffset(-1, -1, -1)
                highest = self.highest_offset_in_remote_storage
                return TimestampAndOffset(-1, highest, self._epoch_or_none(highest))
            if target_timestamp == EARLIEST_PENDING_UPLOAD_TIMESTAMP:
                if not self.remote_log_enabled:
                    return TimestampAndOffset(-1, -1, -1)
                highest = self.highest_offset_in_remote_storage
                if highest == -1:
                    if self.local_log_start_offset == self._log_start_offset:  # nothing copied yet
                        return self.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
                    return TimestampAndOffset(-1, -1, -1)  # copied segments this replica does not know of yet
                offset = max(highest + 1, self._log_start_offset)
                return TimestampAndOffset(-1, offset, self._epoch_or_none(offset))
            segments = self.local.segments.snapshot()
            with self._io("searching the log by timestamp"):
                if target_timestamp == MAX_TIMESTAMP:
                    return self._max_timestamp_entry(segments)
                if target_timestamp < 0:
                    return None
                for segment in segments:
                    if segment.largest_timestamp() >= target_timestamp:
                        found = segment.find_offset_by_timestamp(target_timestamp, self._log_start_offset)
                        if found is not None:
                            return found
            return None

    def _epoch_or_none(self, offset: int) -> int:
        epoch = self.leader_epoch_cache.epoch_for_offset(offset) if offset >= 0 else None
        return -1 if epoch is None else epoch

    def _max_timestamp_entry(self, segments: list) -> TimestampAndOffset | None:
        if not segments or self.local.log_end_offset == self._log_start_offset:
            return None
        best = max(segments, key=lambda s: s.max_timestamp_so_far)
        target = best.max_timestamp_and_offset_so_far
        if target.timestamp < 0:
            return None
        position = best.offset_index.lookup(target.offset).position
        for pos, header in best.log.batches_from(position):
            if header.max_timestamp == target.timestamp:
                epoch = header.partition_leader_epoch if header.partition_leader_epoch >= 0 else -1
                if header.timestamp_type is TimestampType.LOG_APPEND_TIME:
                    return TimestampAndOffset(header.max_timestamp, header.base_offset, epoch)
                _, records = decode_records(best.log.read(pos, header.batch_length + LOG_OVERHEAD))
                for record in records:
                    if header.base_timestamp + record.timestamp_delta == header.max_timestamp:
                        return TimestampAndOffset(header.max_timestamp, header.base_offset + record.offset_delta, epoch)
                return TimestampAndOffset(header.max_timestamp, header.base_offset + header.last_offset_delta, epoch)
        return None

    # -- leader epochs -----------------------------------------------------------------------------------
    @property
    def latest_epoch(self) -> int | None:
        return self.leader_epoch_cache.latest_epoch

    def latest_epoch_for_offset(self, offset: int) -> int:
        """The leader epoch in which ``offset`` was (or will be) written; -1 when unknown."""
        with self.lock:
            epoch = self.leader_epoch_cache.epoch_for_offset(offset)
            return -1 if epoch is None else epoch

    def assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> None:
        with self.lock:
            self._check_online()
            self.leader_epoch_cache.assign(leader_epoch, start_offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset); (-1, -1) when the epoch is unknown."""
        with self.lock:
            epoch, offset = self.leader_epoch_cache.end_offset_for(leader_epoch, self.local.log_end_offset)
            if offset == UNDEFINED_EPOCH_OFFSET:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            return epoch, offset

    # -- truncation and deletion -------------------------------------------------------------------------
    def truncate_to(self, target_offset: int) -> bool:
        """Remove everything at or after ``target_offset`` (a follower diverged); False when nothing to do."""
        if target_offset < 0:
            raise ValueError(f"Cannot truncate partition {self.name} to a negative offset ({target_offset}).")
        with self.lock:
            self._check_online()
            if target_offset >= self.local.log_end_offset:
                log.info("Truncating to %d has no effect as the largest offset in the log is %d (%s)",
                         target_offset, self.local.log_end_offset - 1, self.name)
                # As Kafka: an epoch this replica assigned at its log end as leader, without appending under
                # it, conflicts with the new leader's; left in place, the follower's next fetch names it as its
                # last fetched epoch and diverges again, forever.
                self.leader_epoch_cache.truncate_from_end(self.local.log_end_offset)
                return False
            log.info("Truncating to offset %d (%s)", target_offset, self.name)
            self._truncations += 1
            if self.truncation_listener is not None:
                self.truncation_listener(target_offset, False)
            with self._io("truncating the log"):
                first = self.local.segments.first_segment()
                if first is None or first.base_offset > target_offset:
                    self._truncate_fully_and_start_at(target_offset)
                else:
                    self.local.truncate_to(target_offset)
                    self.leader_epoch_cache.truncate_from_end(target_offset)
                    self._log_start_offset = min(self._log_start_offset, target_offset)
                    self._rebuild_producer_state(target_offset)
                    if self._high_watermark > target_offset:
                        self.update_high_watermark(target_offset)
            return True

    def truncate_fully_and_start_at(self, new_offset: int) -> None:
        """Delete all data and start empty at ``new_offset`` (a follower far behind the leader's start)."""
        with self.lock:
            self._check_online()
            self._truncations += 1
            if self.truncation_listener is not None:
                self.truncation_listener(new_offset, True)
            with self._io("truncating the log"):
                self._truncate_fully_and_start_at(new_offset)

    def _truncate_fully_and_start_at(self, new_offset: int) -> None:
        self.local.truncate_fully_and_start_at(new_offset)
        self.leader_epoch_cache.clear()
        self.producer_state.truncate_fully_and_start_at(new_offset)
        self._log_start_offset = new_offset
        self._local_log_start_offset = new_offset
        self._high_watermark = new_offset

    def _rebuild_producer_state(self, last_offset: int) -> None:
        from storage.recovery import rebuild_producer_state
        # No snapshot here (its fsync would stall the event loop); the next roll or close takes one.
        rebuild_producer_state(self.producer_state, self.local.segments, self._log_start_offset, last_offset,
                               self.time_ms(), take_snapshot=False)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move log_start_offset up to ``offset`` (<= high watermark); returns the new one.

        Segments wholly below the new log start offset are removed at once (renamed ``.deleted``, unlinked
        after file.delete.delay.ms).
        """
        with self.lock:
            self._check_online()
            if offset > self._high_watermark:
                raise OffsetOutOfRangeError(
                    f"Cannot increment the log start offset to {offset} of partition {self.name} since it is "
                    f"larger than the high watermark {self._high_watermark}")
            if self.maybe_increment_log_start_offset(offset, "client delete records request"):
                from storage.retention import delete_log_start_offset_breached_segments
                delete_log_start_offset_breached_segments(self)
            return self._log_start_offset

    def maybe_increment_log_start_offset(self, new_log_start_offset: int, reason: str) -> bool:
        with self.lock:
            if new_log_start_offset <= self._log_start_offset:
                return False
            log.info("Incremented log start offset to %d due to %s (%s)", new_log_start_offset, reason, self.name)
            self._log_start_offset = new_log_start_offset
            if self._high_watermark < new_log_start_offset:
                self._high_watermark = new_log_start_offset
            self.leader_epoch_cache.truncate_from_start(new_log_start_offset)
            self.producer_state.on_log_start_offset_incremented(new_log_start_offset)
            return True

    def delete_old_segments(self) -> int:
        """Retention: delete segments past retention.ms / retention.bytes / the log start offset; a count."""
        from storage.retention import delete_old_segments
        return delete_old_segments(self)

    # -- config and lifecycle ----------------------------------------------------------------------------
    def update_config(self, config: LogConfig) -> None:
        with self.lock:
            self.config = config
            self.local.config = config

    def take_producer_snapshot(self) -> None:
        with self.lock:
            with self._io("writing a producer snapshot"):
                self.producer_state.take_snapshot()

    def close(self) -> None:
        """Snapshot producer state at the log end offset, write a topic id (as Kafka's close) and leader epochs
        still to be written (the scheduler's writes wait CHECKPOINT_WRITE_DELAY_MS) and close every file (no
        fsync: flush first)."""
        with self.lock:
            if self._closed:
                return
            try:
                if not self.is_offline:
                    if not self.deleted:
                        self.partition_metadata_file.flush()
                        self.leader_epoch_cache.write_pending()
                    self.producer_state.update_map_end_offset(self.local.log_end_offset)
                    self.producer_state.take_snapshot()
                    self.local.close()
                else:
                    self.local.close_handlers()
            except OSError as exc:
                self.local.close_handlers()
                raise self._go_offline("closing the log", exc) from exc
            finally:
                self._closed = True

    def close_handlers(self) -> None:
        with self.lock:
            self._closed = True
            self.local.close_handlers()

    def rename_dir(self, new_dir: str) -> None:
        """Rename the partition directory to ``new_dir`` (same log dir or another on the same file system) and
        point every file of the log there; open files stay open (Kafka's renameDir). OSError: dir offline."""
        with self.lock:
            old_dir = self.dir
            with self._io("renaming the log dir"):
                os.rename(old_dir, new_dir)

            def moved(path: str) -> str:
                return os.path.join(new_dir, os.path.basename(path))

            self.dir = self.local.dir = new_dir
            self.parent_dir = os.path.dirname(os.path.abspath(new_dir))
            self.is_future = new_dir.endswith(FUTURE_DIR_SUFFIX)
            for segment in self.local.segments.snapshot():
                segment.log.path = segment.log.file.path = moved(segment.log.path)
                for index in (segment.offset_index, segment.time_index, segment.txn_index):
                    index.path = moved(index.path)
            state = self.producer_state
            state.log_dir = new_dir
            state.snapshots = {offset: moved(path) for offset, path in state.snapshots.items()}
            self.leader_epoch_cache.checkpoint.path = moved(self.leader_epoch_cache.checkpoint.path)
            self.partition_metadata_file.path = moved(self.partition_metadata_file.path)
        log.info("Renamed the dir of %s from %s to %s", self.name, old_dir, new_dir)

    def __repr__(self) -> str:
        return (f"Log(dir={self.dir}, log_start_offset={self._log_start_offset}, "
                f"log_end_offset={self.local.log_end_offset}, high_watermark={self._high_watermark})")


class _IOGuard:
    """``with log._io("what"):`` turns an OSError into an offline log dir and a KafkaStorageError."""

    __slots__ = ("log", "what")

    def __init__(self, log_: Log, what: str) -> None:
        self.log = log_
        self.what = what

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None and isinstance(exc, OSError):
            raise self.log._go_offline(self.what, exc) from exc


__all__ += ["FetchDataInfo", "TimestampAndOffset", "AppendOrigin", "CorruptRecordError"]
