"""The replica manager: partitions hosted here, leadership, appends with acks, reads with long polls.

It owns the Partition objects (made leader or follower from cluster metadata), turns storage and
leadership errors into Kafka error codes, and is the one append path for every caller: clients'
produces, coordinator records and transaction markers. An acks=all append completes once the high
watermark passes it (a delayed produce woken by high-watermark moves) or times out with
REQUEST_TIMED_OUT. Reads serve consumers up to the high watermark and followers (``replica_id`` >= 0)
up to the log end, and a follower's fetch position moves the leader's high watermark and ISR. ISR
changes go through an ``IsrUpdater`` (the cluster's metadata) and apply once committed; a task shrinks
the ISR of followers that lag past ``replica.lag.time.max.ms``. Delayed fetches and produces wait on
``PartitionWatchers``, woken by appends and offset moves. Replicas move between this broker's log dirs
with AlterReplicaLogDirs (a future log filled by replication.replica_alter_log_dirs, then swapped in), and
DescribeLogDirs reports every current and future log per dir. Event-loop only.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from replication.metadata.image import MetadataWriter
from replication.partition import Partition, PartitionError, ReadResult
from replication.pending_logs import PendingLogs
from replication.replica_alter_log_dirs import ReplicaAlterLogDirsManager
from replication.replica_selector import ReplicaView
from replication.watchers import PartitionWatchers
from storage import AppendOrigin, KafkaStorageError, LogDirNotFoundError, release_records
from storage.errors import InvalidTimestampError, OffsetMovedToTieredStorageError, RecordValidationError
from wire import ErrorCode

log = logging.getLogger("replication.replica_manager")

__all__ = ["AppendResult", "FetchPartition", "LogDirInfo", "ReplicaLogInfo", "FetchedPartition", "IsrUpdater", "LocalIsrUpdater", "MetadataIsrUpdater",
           "ReplicaManager"]

TopicPartition = tuple[str, int]


class AppendResult(NamedTuple):
    """Outcome of one partition's append, as Produce reports it (a successful append's is made by
    ``tuple.__new__``: no Python call)."""

    error_code: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: Sequence[tuple[int, str | None]] = ()  # immutable: no list made for every append


_new_result = tuple.__new__


@dataclass(slots=True)
class FetchPartition:
    """One partition a fetch asks for."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    log_start_offset: int = -1  # a follower's own log start offset (Fetch v5+)


@dataclass(slots=True)
class FetchedPartition:
    """One partition's fetch answer: an error or a read."""

    request: FetchPartition
    error_code: int = ErrorCode.NONE
    read: ReadResult | None = None
    preferred_read_replica: int = -1  # KIP-392: the replica the consumer should fetch from instead (-1: here)
    remote_pending: bool = False  # the offset is only in remote storage: read by ReplicaManager.fetch

    @property
    def size(self) -> int:
        return self.read.size if self.read is not None else 0


@dataclass(slots=True)
class ReplicaLogInfo:
    """One replica's log in a log dir, as DescribeLogDirs reports it."""

    topic: str
    partition: int
    size: int
    offset_lag: int
    is_future: bool


@dataclass(slots=True)
class LogDirInfo:
    """One log dir, as DescribeLogDirs reports it: KAFKA_STORAGE_ERROR (and -1 bytes) when offline."""

    log_dir: str
    error_code: int
    replicas: list[ReplicaLogInfo] = field(default_factory=list)
    total_bytes: int = -1
    usable_bytes: int = -1
    is_cordoned: bool = False


# Fallback for exceptions without an ``error_code`` attribute (storage errors carry their own).
_ERROR_CODES_BY_NAME = {
    "CorruptRecordError": ErrorCode.CORRUPT_MESSAGE,
    "InvalidRecordError": ErrorCode.INVALID_RECORD,
    "RecordTooLargeError": ErrorCode.MESSAGE_TOO_LARGE,
    "RecordBatchTooLargeError": ErrorCode.RECORD_LIST_TOO_LARGE,
    "InvalidTimestampError": ErrorCode.INVALID_TIMESTAMP,
    "OffsetOutOfRangeError": ErrorCode.OFFSET_OUT_OF_RANGE,
    "KafkaStorageError": ErrorCode.KAFKA_STORAGE_ERROR,
}


def storage_error_code(exc: BaseException) -> tuple[int, str | None]:
    """Map a storage exception to (Kafka error code, message)."""
    code = getattr(exc, "error_code", None)
    if code is None:
        code = _ERROR_CODES_BY_NAME.get(type(exc).__name__, ErrorCode.UNKNOWN_SERVER_ERROR)
    return code, str(exc) or None


# The refusals Kafka's ReplicaManager expects (appendToLocalLog): counted as produce requests, not as failed ones,
# and not logged. Any other refusal (not enough replicas, sequence and epoch errors, invalid records or timestamps)
# is a failed produce request and an ERROR line (INFO for a fenced producer epoch), as Kafka's processFailedRecord.
_EXPECTED_APPEND_ERRORS = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.MESSAGE_TOO_LARGE,
    ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE, ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.UNKNOWN_TOPIC_ID})


def _count_failed_append(metrics: Any, tp: tuple[str, int], code: int, message: str | None, *,
                         logged: bool = False) -> None:
    """Record a refused append as Kafka does: the metric it moves and, for an unexpected refusal, a log line."""
    if code in _EXPECTED_APPEND_ERRORS:
        if metrics is not None:
            metrics.append_refused(tp[0])
        return
    if metrics is not None:
        metrics.append_failed(tp[0])
    if not logged:
        log.log(logging.INFO if code == ErrorCode.INVALID_PRODUCER_EPOCH else logging.ERROR,
                "Error processing append operation on partition %s-%d: %s: %s", tp[0], tp[1],
                ErrorCode(code).name, message or "")


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


class IsrUpdater(Protocol):
    """Where a leader's ISR changes are committed (Kafka's AlterPartition path to the controller)."""

    async def alter_isr(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
                        isr: list[int]) -> int | None:
        """Commit ``isr`` if the partition is still at these epochs; the new partition epoch, None if refused."""
        ...


class LocalIsrUpdater:
    """A single node's ISR changes: nobody else to ask, so every change commits at once."""

    async def alter_isr(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
                        isr: list[int]) -> int | None:
        return partition_epoch + 1


class MetadataIsrUpdater:
    """ISR changes committed to the cluster's metadata: the partition's state with the new ISR, written only
    if the partition is still at the leader and partition epochs the leader knows (else refused). As Kafka's
    controller (KIP-841), a broker that is not registered may not join an ISR: a replica of a broker still
    starting up fetches, but counts as in sync only once the cluster knows it is alive."""

    def __init__(self, store: MetadataWriter) -> None:
        self.store = store

    async def alter_isr(self, topic: str, partition: int, leader_epoch: int, partition_epoch: int,
                        isr: list[int]) -> int | None:
        image = self.store.image
        current = image.partition(topic, partition)
        if current is None or current.leader_epoch != leader_epoch or current.partition_epoch != partition_epoch:
            return None
        if any(r not in current.isr and r not in image.brokers for r in isr):
            return None
        committed = await self.store.alter_partition(topic, partition, replace(
            current, isr=tuple(isr), partition_epoch=partition_epoch + 1))
        return committed.partition_epoch if committed is not None else None


class ReplicationQuota(Protocol):
    """A replication throttle (Kafka's ReplicaQuota): which partitions it applies to, and whether it is spent."""

    def is_throttled(self, topic: str, partition: int) -> bool: ...

    def is_quota_exceeded(self) -> bool: ...

    def record(self, size: int) -> None: ...


class ReplicaManager:
    """Partitions of this broker and the append/read paths over them."""

    # Counts appends and ISR changes for metrics (pykbroker.metrics.Recorder); None while metrics are off.
    metrics: Any = None

    def __init__(self, log_manager, node_id: int, *, replica_lag_time_max_ms: int = 30_000,
                 isr_updater: IsrUpdater | None = None, time_ms: Callable[[], int] = _wall_clock_ms,
                 in_metadata: Callable[[str, int], bool] = lambda _topic, _partition: False,
                 pending_logs: PendingLogs | None = None, leader_quota: ReplicationQuota | None = None,
                 replica_selector: Callable[[str | None, ReplicaView, list[ReplicaView]], ReplicaView] | None = None,
                 broker_racks: Callable[[], Mapping[int, str | None]] = dict,
                 alter_log_dirs_io_max_bytes_per_second: Callable[[], int | None] = lambda: None) -> None:
        """``in_metadata(topic, partition)``: whether the cluster has that partition (hosted here or not);
        ``pending_logs``: logs of partitions assigned here still being created, which a client's append waits for;
        ``leader_quota``: the leader's replication throttle (leader.replication.throttled.*), applied to
        out-of-sync followers; ``replica_selector`` (replica.selector.class) and ``broker_racks``: follower
        fetching (KIP-392); ``alter_log_dirs_io_max_bytes_per_second``: the cap on moving replicas between dirs."""
        self.log_manager = log_manager
        self.node_id = node_id
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.isr_updater: IsrUpdater = isr_updater or LocalIsrUpdater()
        self.time_ms = time_ms
        self.in_metadata = in_metadata
        self.pending_logs = pending_logs
        self.partitions: dict[TopicPartition, Partition] = {}
        # Assigned here but their log is in a dir that was offline at start: not hosted and never created
        # elsewhere; answered NOT_LEADER_OR_FOLLOWER, as Kafka 4.4 answers for them.
        self.offline_partitions: set[TopicPartition] = set()
        self.leader_quota = leader_quota
        self.replica_selector = replica_selector
        self.broker_racks = broker_racks
        # Tiered storage (KIP-405): reads of offsets only in remote storage (None: remote.log.storage.system.enable
        # is off, and such reads answer OFFSET_MOVED_TO_TIERED_STORAGE). Set once, by attach_remote_log_manager.
        self.remote_log_manager: Any = None
        self.watchers = PartitionWatchers()
        self.alter_log_dirs = ReplicaAlterLogDirsManager(log_manager, self.get_partition,
                                                         on_swapped=lambda t, p: self.watchers.notify((t, p)),
                                                         io_max_bytes_per_second=alter_log_dirs_io_max_bytes_per_second)
        self._isr_tasks: set[asyncio.Task] = set()
        self._isr_expiration: asyncio.Task | None = None
        self._closing = False

    # -- lifecycle -----------------------------------------------------------------------------------
    def attach_remote_log_manager(self, remote_log_manager: Any) -> None:
        """Tiered storage's RemoteLogManager, which is built over this replica manager (hence not a constructor
        argument): reads of offsets only in remote storage go through it from now on."""
        if self.remote_log_manager is not None:
            raise RuntimeError("a remote log manager is already attached")
        self.remote_log_manager = remote_log_manager

    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def leader_partition(self, topic: str, partition: int, current_leader_epoch: int) -> Partition:
        """The partition if this broker leads it in ``current_leader_epoch`` (-1: any epoch), else PartitionError
        with Kafka's code (getPartitionOrException, then the epoch check, then leadership)."""
        p = self.partitions.get((topic, partition))
        if p is None:
            raise PartitionError(self._not_hosted_error((topic, partition)))
        p.check_online()
        p.check_leader_epoch(current_leader_epoch)
        if not p.is_leader:
            raise PartitionError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return p

    def _partition(self, topic: str, partition: int, topic_id: uuid.UUID, log_config) -> Partition:
        p = self.partitions.get((topic, partition))
        if p is None:
            log_ = self.log_manager.get_or_create_log(topic, partition, topic_id, log_config)
            p = Partition(topic, partition, topic_id, log_, self.node_id,
                          on_high_watermark_changed=self._on_high_watermark_changed)
            self.partitions[(topic, partition)] = p
            if self.log_manager.get_log(topic, partition, is_future=True) is not None:
                self.alter_log_dirs.start(topic, partition)  # a move the broker was making when it stopped
        return p

    def become_leader(self, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int,
                      replicas: list[int], isr: list[int], log_config, partition_epoch: int = 0) -> Partition:
        """Host ``topic-partition`` as leader, creating its log if needed."""
        p = self._partition(topic, partition, topic_id, log_config)
        if p.make_leader(leader_epoch, replicas, isr, partition_epoch, now_ms=self.time_ms()):
            log.debug("%s-%d: leader in epoch %d from offset %d (replicas %s, isr %s)", topic, partition,
                     leader_epoch, p.log.log_end_offset, replicas, isr)
        self.watchers.notify((topic, partition))
        return p

    def become_follower(self, topic: str, partition: int, topic_id: uuid.UUID, leader_id: int, leader_epoch: int,
                        replicas: list[int], isr: list[int], log_config, partition_epoch: int = 0) -> Partition:
        """Host ``topic-partition`` as a follower of ``leader_id`` (-1: no leader), creating its log if needed."""
        p = self._partition(topic, partition, topic_id, log_config)
        if p.make_follower(leader_id, leader_epoch, replicas, isr, partition_epoch):
            log.debug("%s-%d: follower of broker %d in epoch %d at offset %d", topic, partition, leader_id,
                     leader_epoch, p.log.log_end_offset)
        self.watchers.notify((topic, partition))  # waiting produces and fetches learn the leadership is gone
        return p

    def mark_offline(self, topic: str, partition: int) -> None:
        """``topic-partition`` is assigned here but its log dir is offline: do not host it (Kafka's
        markPartitionOffline)."""
        self.offline_partitions.add((topic, partition))
        log.warning("%s-%d: its log dir is offline; the partition is offline on broker %d", topic, partition,
                    self.node_id)

    def _not_hosted_error(self, tp: TopicPartition) -> int:
        """As Kafka: a partition the cluster has but this broker does not host (one offline since the start
        included) is NOT_LEADER_OR_FOLLOWER."""
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if self.in_metadata(*tp) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    def _on_high_watermark_changed(self, p: Partition) -> None:
        # Delayed produces and consumers' fetches; a follower's fetch reads to the log end and gains nothing, as
        # Kafka's delayed follower fetch is not completed by the leader's high watermark (the follower learns it
        # with its next answer). Each acknowledgement of a share consumer writes __share_group_state, and its
        # high watermark move woke a follower's fetch of every partition it follows here for nothing.
        self.watchers.notify_except_followers((p.topic, p.partition))

    def stop_replica(self, topic: str, partition: int) -> None:
        """This broker no longer holds ``topic-partition`` (reassigned away): stop serving it, delete its log."""
        p = self.partitions.pop((topic, partition), None)
        if p is None:
            return
        self.alter_log_dirs.stop(topic, partition)
        self.log_manager.delete_log(topic, partition)
        self.watchers.notify((topic, partition))  # waiting produces and fetches learn it is gone

    def delete_partitions(self, topic: str, defer_renames: bool = False) -> None:
        """Stop hosting every partition of ``topic`` and delete their logs (``defer_renames``: their dirs are
        renamed later, ``LogManager.rename_deleted``)."""
        self.offline_partitions = {tp for tp in self.offline_partitions if tp[0] != topic}
        for key in [k for k in self.partitions if k[0] == topic]:
            p = self.partitions.pop(key)
            self.alter_log_dirs.stop(p.topic, p.partition)
            self.log_manager.delete_log(p.topic, p.partition, defer_rename=defer_renames)
            self.watchers.notify(key)
        if self.metrics is not None:
            self.metrics.forget_topic(topic)

    def update_log_config(self, topic: str, log_config) -> None:
        for (t, partition), p in self.partitions.items():
            if t == topic:
                p.log.update_config(log_config)
                future = self.log_manager.get_log(t, partition, is_future=True)
                if future is not None:  # a replica moving to another dir: the log it becomes
                    future.update_config(log_config)

    # -- log dirs ------------------------------------------------------------------------------------
    def alter_replica_log_dirs(self, dirs: Mapping[TopicPartition, str]) -> dict[TopicPartition, int]:
        """AlterReplicaLogDirs: move each hosted replica to its dir (a future log, copied then swapped in), or
        remember the dir for a replica not created yet; per-partition error codes as Kafka's replica manager
        answers: LOG_DIR_NOT_FOUND (not in log.dirs), KAFKA_STORAGE_ERROR (dir or partition offline, or any
        log dir offline when a future log is needed), REPLICA_NOT_AVAILABLE (not hosted here: not yet, retried
        by kafka-reassign-partitions, or in a dir offline since the start, as Kafka 4.4 answers) and
        UNKNOWN_TOPIC_OR_PARTITION (no such partition)."""
        results: dict[TopicPartition, int] = {}
        for tp, wanted_dir in dirs.items():
            topic, partition = tp
            log_dir = os.path.abspath(wanted_dir)
            try:
                if not self.log_manager.is_log_dir_online(log_dir):
                    raise KafkaStorageError(f"Log directory {log_dir} is offline")
                p = self.partitions.get(tp)
                if p is not None and p.log.is_offline:  # failed while hosted (Kafka's HostedPartition.Offline)
                    raise KafkaStorageError(f"Partition {topic}-{partition} is offline")
                future = self.log_manager.get_log(topic, partition, is_future=True)
                if p is not None and future is not None and future.parent_dir != log_dir:
                    self.alter_log_dirs.stop(topic, partition)  # redirected: the old destination is dropped
                    self.log_manager.remove_future_log(topic, partition)
                self.log_manager.maybe_update_preferred_log_dir(topic, partition, log_dir)
                if p is None:
                    results[tp] = (ErrorCode.REPLICA_NOT_AVAILABLE if self.in_metadata(topic, partition)
                                   else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    continue
                if self.log_manager.create_future_log(topic, partition, log_dir) is not None:
                    log.info("%s-%d: moving from log dir %s to %s", topic, partition, p.log.parent_dir, log_dir)
                if self.log_manager.get_log(topic, partition, is_future=True) is not None:
                    self.alter_log_dirs.start(topic, partition)
                results[tp] = ErrorCode.NONE
            except (LogDirNotFoundError, KafkaStorageError) as exc:
                results[tp] = exc.error_code
            except Exception:
                log.exception("Error while changing replica dir for partition %s-%d", topic, partition)
                results[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
        return results

    def describe_log_dirs(self, wanted: set[TopicPartition] | None = None) -> list[LogDirInfo]:
        """DescribeLogDirs: every configured log dir (in order) with the current and future logs of the
        ``wanted`` partitions (None: all) in it, their sizes and lags (a current replica's: how far its log end
        is below the high watermark; a future one's: how far below the current log's end), and the dir's total
        and usable bytes; an offline dir answers KAFKA_STORAGE_ERROR and nothing else, as Kafka's does."""
        lm = self.log_manager
        by_dir: dict[str, list[ReplicaLogInfo]] = {d: [] for d in lm.log_dirs}
        for log_ in sorted(lm.all_logs() + lm.future_logs(), key=lambda lg: (lg.topic, lg.partition, lg.is_future)):
            tp = (log_.topic, log_.partition)
            if log_.parent_dir not in by_dir or (wanted is not None and tp not in wanted):
                continue
            current = lm.get_log(*tp)
            if current is None:
                lag = -1  # as Kafka: the lag is not known without a current replica
            elif log_.is_future:
                lag = current.log_end_offset - log_.log_end_offset
            else:
                lag = max(current.high_watermark - log_.log_end_offset, 0)
            by_dir[log_.parent_dir].append(ReplicaLogInfo(log_.topic, log_.partition, log_.size_in_bytes, lag,
                                                          log_.is_future))
        out = []
        for log_dir, replicas in by_dir.items():
            if lm.failure_channel.is_offline(log_dir):
                out.append(LogDirInfo(log_dir, ErrorCode.KAFKA_STORAGE_ERROR))
                continue
            try:
                st = os.statvfs(log_dir)
            except OSError:
                out.append(LogDirInfo(log_dir, ErrorCode.KAFKA_STORAGE_ERROR))
                continue
            out.append(LogDirInfo(log_dir, ErrorCode.NONE, replicas, st.f_blocks * st.f_frsize,
                                  st.f_bavail * st.f_frsize, log_dir in lm.cordoned_log_dirs))
        return out

    # -- produce -------------------------------------------------------------------------------------
    def _append_local(self, entries: dict[TopicPartition, bytes | memoryview], required_acks: int,
                      origin: str) -> tuple[dict[TopicPartition, AppendResult], dict[TopicPartition, tuple[Partition, int]]]:
        """Append each partition's records as leader: per-partition results, and for the successful
        ones the partition and the offset its high watermark must reach for acks=all."""
        results: dict[TopicPartition, AppendResult] = {}
        appended: dict[TopicPartition, tuple[Partition, int]] = {}
        now_ms = self.time_ms()
        metrics = self.metrics
        waiting = self.watchers.keys()
        for tp, records in entries.items():
            p = self.partitions.get(tp)
            if p is None:
                results[tp] = AppendResult(self._not_hosted_error(tp))
                if metrics is not None:
                    metrics.append_refused(tp[0])
                continue
            try:
                # Reads waiting at the log end (long polls, followers) will want this batch at once: it is kept for
                # them (in memory, not read back from the file) until they had their turn (append_records).
                info = p.append_records_to_leader(records, required_acks, p.log.config.min_insync_replicas,
                                                  origin=origin, now_ms=now_ms, keep_tail=tp in waiting)
            except PartitionError as exc:
                results[tp] = AppendResult(exc.code, error_message=exc.message)
                _count_failed_append(metrics, tp, exc.code, exc.message)
                continue
            except Exception as exc:  # storage refusals: corrupt, too large, invalid, disk errors
                code, reason = storage_error_code(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("append to %s-%d failed", tp[0], tp[1])
                _count_failed_append(metrics, tp, code, reason, logged=code == ErrorCode.UNKNOWN_SERVER_ERROR)
                # Kafka answers its own text only for refused records (RecordValidationException), else null.
                message = reason if isinstance(exc, (RecordValidationError, InvalidTimestampError)) else None
                record_errors = list(getattr(exc, "record_errors", []) or [])
                results[tp] = AppendResult(code, error_message=message, record_errors=record_errors,
                                           log_start_offset=p.log.log_start_offset)
                continue
            results[tp] = _new_result(AppendResult, (
                ErrorCode.NONE, info.first_offset, info.log_append_time if info.log_append_time is not None else -1,
                info.log_start_offset, None, ()))
            # A retry answered from producer state waits for its original records; an empty append for none.
            appended[tp] = (p, info.last_offset + 1 if info.last_offset >= 0 else p.log.log_end_offset)
            if metrics is not None and not info.duplicate:
                metrics.appended(tp[0], len(records), info.records_count)
            self.watchers.notify(tp)  # followers and long polls waiting for the log end
        return results, appended

    async def append_records(self, entries: dict[TopicPartition, bytes | memoryview], required_acks: int,
                             timeout_ms: int, *, origin: str = AppendOrigin.CLIENT) -> dict[TopicPartition, AppendResult]:
        """Append each partition's records as leader; per-partition errors, never an exception.

        acks=all (-1) returns once every appended partition's high watermark reached its records, or
        after ``timeout_ms`` with REQUEST_TIMED_OUT for those still short (Kafka's DelayedProduce).
        ``origin`` COORDINATOR: coordinator records and transaction markers (no sequence checks).
        A client's partitions led here whose logs are still being created are waited for (up to ``timeout_ms``)
        rather than refused, so that clients producing to a topic just created do not retry in a storm.
        (``append_records_locally`` then ``wait_for_high_watermarks``, inlined: the produce path's cost.)
        """
        if self.pending_logs and origin == AppendOrigin.CLIENT:
            await self.pending_logs.wait_for(entries, timeout_ms / 1000)
        woken = self.watchers.woken
        results, appended = self._append_local(entries, required_acks, origin)
        if self.watchers.woken != woken:
            # The append woke long polls (a consumer or follower at the log end): they answer first, in this
            # loop pass, before this request's own answer is built (Kafka completes them on the append too).
            await asyncio.sleep(0)
            for p, _ in appended.values():  # their reads are done: the batches kept for them go
                p.log.drop_tail()
        if required_acks == -1 and appended and not self._settled_at_once(appended):
            await self.wait_for_high_watermarks(appended, results, timeout_ms)
        return results

    async def append_records_locally(self, entries: dict[TopicPartition, bytes | memoryview], required_acks: int,
                                     timeout_ms: int, *, origin: str = AppendOrigin.CLIENT
                                     ) -> tuple[dict[TopicPartition, AppendResult], dict[TopicPartition, tuple[Partition, int]]]:
        """The first half of ``append_records``: the leader's own append (acks=all checks min.insync.replicas
        first), without waiting for the followers. Per-partition results, and for the appended partitions the
        partition and the offset its high watermark must reach: what ``wait_for_high_watermarks`` waits for
        (the coordinator runtime's pipelined writes wait for it apart, as Kafka's CoordinatorPartitionWriter)."""
        if self.pending_logs and origin == AppendOrigin.CLIENT:
            await self.pending_logs.wait_for(entries, timeout_ms / 1000)
        woken = self.watchers.woken
        results, appended = self._append_local(entries, required_acks, origin)
        if self.watchers.woken != woken:  # as append_records: the woken reads answer first
            await asyncio.sleep(0)
            for p, _ in appended.values():
                p.log.drop_tail()
        return results, appended

    def _settled_at_once(self, appended: dict[TopicPartition, tuple[Partition, int]]) -> bool:
        """What a producer sends (one partition per leader) on a single replica: its acks=all produce settled by the
        append itself, answered without a waiting coroutine."""
        if len(appended) != 1:
            return False
        [(tp, (p, required_offset))] = appended.items()
        return self.partitions.get(tp) is p and \
            p.acks_all_error(required_offset, p.log.config.min_insync_replicas) == ErrorCode.NONE

    async def wait_for_high_watermarks(self, appended: dict[TopicPartition, tuple[Partition, int]],
                                       results: dict[TopicPartition, AppendResult], timeout_ms: int) -> None:
        """The second half of an acks=all append: until each of ``appended`` (``append_records_locally``'s) has
        its high watermark at its offset; ``results`` of those that fail (or time out) are replaced by the error."""
        # Known once something has to wait (a single replica's appends never do).
        loop: asyncio.AbstractEventLoop | None = None
        deadline = 0.0
        waiting = dict(appended)
        while True:
            for tp, (p, required_offset) in list(waiting.items()):
                current = self.partitions.get(tp)
                # No longer hosted: as Kafka's DelayedProduce (getPartitionOrError), UNKNOWN_TOPIC_OR_PARTITION once
                # its topic left the metadata (deleted while the produce waited for its followers)
                code = self._not_hosted_error(tp) if current is None else ErrorCode.NOT_LEADER_OR_FOLLOWER \
                    if current is not p else p.acks_all_error(required_offset, p.log.config.min_insync_replicas)
                if code is None:
                    continue
                del waiting[tp]
                if code != ErrorCode.NONE:
                    results[tp] = AppendResult(code, log_start_offset=results[tp].log_start_offset)
            if not waiting:
                return
            if loop is None:
                loop = asyncio.get_running_loop()
                deadline = loop.time() + max(timeout_ms, 0) / 1000
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            await self.watchers.wait(list(waiting), remaining)
        for tp in waiting:
            log.debug("acks=all produce to %s-%d timed out after %d ms", tp[0], tp[1], timeout_ms)
            results[tp] = AppendResult(ErrorCode.REQUEST_TIMED_OUT, log_start_offset=results[tp].log_start_offset)

    # -- fetch ---------------------------------------------------------------------------------------
    def read_partitions(self, wanted: list[FetchPartition], max_bytes: int, read_committed: bool,
                        replica_id: int = -1, client_metadata: tuple[str | None] | None = None
                        ) -> list[FetchedPartition]:
        """One pass over ``wanted``: the first partition with data may exceed ``max_bytes`` by one batch.

        A follower's read (``replica_id`` >= 0) goes up to the log end and records its fetch position.
        ``client_metadata`` (the client's rack, from a consumer's Fetch v11+): followers may serve the read,
        and a leader may answer with a preferred read replica instead of records (KIP-392).
        """
        out: list[FetchedPartition] = []
        remaining = max_bytes
        from_follower = replica_id >= 0
        # The time, for a follower's fetch state and for choosing a preferred read replica (not asked otherwise).
        selecting = client_metadata is not None and self.replica_selector is not None
        now_ms = self.time_ms() if from_follower or selecting else 0
        for fp in wanted:
            p = self.partitions.get((fp.topic, fp.partition))
            if p is None:
                out.append(FetchedPartition(fp, self._not_hosted_error((fp.topic, fp.partition))))
                continue
            limit = min(fp.max_bytes, remaining)
            try:
                if client_metadata is not None and self.replica_selector is not None and p.is_leader:
                    preferred = self._preferred_read_replica(p, client_metadata[0], fp.fetch_offset, now_ms)
                    if preferred is not None:
                        p.check_leader_epoch(fp.current_leader_epoch)
                        log_ = p.log
                        out.append(FetchedPartition(fp, ErrorCode.NONE, ReadResult(
                            b"", log_.high_watermark, log_.last_stable_offset, log_.log_start_offset,
                            [] if read_committed else None), preferred_read_replica=preferred))
                        continue
                read = p.read(fp.fetch_offset, limit, read_committed=read_committed,
                              min_one_message=remaining == max_bytes, current_leader_epoch=fp.current_leader_epoch,
                              last_fetched_epoch=fp.last_fetched_epoch, from_follower=from_follower,
                              allow_follower_read=client_metadata is not None)
                if from_follower and read.diverging_epoch is None:
                    read = self._maybe_throttle(p, replica_id, read)
                    expanded = p.update_follower_fetch_state(replica_id, fp.fetch_offset, fp.log_start_offset,
                                                             now_ms, self.replica_lag_time_max_ms)
                    if expanded is not None:
                        self._submit_isr(p, expanded)
            except PartitionError as exc:
                out.append(FetchedPartition(fp, exc.code))
                continue
            except OffsetMovedToTieredStorageError as exc:
                if from_follower or self.remote_log_manager is None:  # followers are told (KIP-405)
                    out.append(FetchedPartition(fp, exc.error_code))
                else:
                    out.append(FetchedPartition(fp, ErrorCode.NONE, remote_pending=True))
                    remaining = 0  # the remote read takes what is left of max_bytes
                continue
            except Exception as exc:
                code, _ = storage_error_code(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("read of %s-%d at %d failed", fp.topic, fp.partition, fp.fetch_offset)
                out.append(FetchedPartition(fp, code))  # as Kafka: no offsets with an error (all -1)
                continue
            remaining = max(0, remaining - read.size)
            out.append(FetchedPartition(fp, ErrorCode.NONE, read))
        return out

    def _preferred_read_replica(self, p: Partition, client_rack: str | None, fetch_offset: int,
                                now_ms: int) -> int | None:
        """Kafka's findPreferredReadReplica: the selector's choice among the leader and the in-sync followers
        holding ``fetch_offset``; None when it is the leader (or a broker no longer registered)."""
        racks = self.broker_racks()
        candidates = [ReplicaView(r, racks.get(r), s.log_end_offset, now_ms - s.last_caught_up_time_ms)
                      for r, s in p.remote_replicas.items()
                      if r in p.isr and r in racks and s.log_start_offset <= fetch_offset <= s.log_end_offset]
        leader = ReplicaView(self.node_id, racks.get(self.node_id), p.log.log_end_offset, 0)
        assert self.replica_selector is not None
        chosen = self.replica_selector(client_rack, leader, [*candidates, leader])
        return None if chosen.broker_id == self.node_id else chosen.broker_id

    def _maybe_throttle(self, p: Partition, replica_id: int, read: ReadResult) -> ReadResult:
        """Kafka's shouldLeaderThrottle: an out-of-sync follower of a throttled partition gets no records while
        the leader's replication quota is spent; what it does get counts against the quota."""
        quota = self.leader_quota
        if quota is None or replica_id in p.isr or not read.size or not quota.is_throttled(p.topic, p.partition):
            return read
        if quota.is_quota_exceeded():
            release_records(read.records)
            return replace(read, records=b"")
        quota.record(read.size)
        return read

    async def fetch(self, wanted: list[FetchPartition], *, max_wait_ms: int, min_bytes: int, max_bytes: int,
                    read_committed: bool, replica_id: int = -1,
                    client_metadata: tuple[str | None] | None = None) -> list[FetchedPartition]:
        """Read now; if fewer than ``min_bytes`` are there and nothing failed or points the consumer to
        another replica, wait for appends (long poll)."""
        deadline = time.monotonic() + max_wait_ms / 1000
        keys = [(fp.topic, fp.partition) for fp in wanted]
        while True:
            result = self.read_partitions(wanted, max_bytes, read_committed, replica_id, client_metadata)
            total, answer_now = 0, not wanted or self._closing
            for r in result:  # one pass: remote reads pending, bytes read, errors and preferred replicas
                if r.remote_pending:
                    await self._read_remote(result, max_bytes, read_committed)
                    return result
                if (read := r.read) is not None:
                    total += read.size
                if r.error_code or r.preferred_read_replica >= 0:
                    answer_now = True
            if total >= min_bytes or answer_now:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return result
            if not await self.watchers.wait(keys, remaining, replica_id >= 0):
                return self.read_partitions(wanted, max_bytes, read_committed, replica_id, client_metadata)

    async def _read_remote(self, result: list[FetchedPartition], max_bytes: int, read_committed: bool) -> None:
        """Fill the partitions whose fetch offset is only in remote storage (in a thread: object-store I/O), as
        Kafka's DelayedRemoteFetch answers at once with what the remote read found."""
        rlm = self.remote_log_manager
        assert rlm is not None
        budget = max_bytes - sum(r.size for r in result)
        for r in result:
            if not r.remote_pending:
                continue
            r.remote_pending = False
            fp = r.request
            p = self.partitions.get((fp.topic, fp.partition))
            if p is None:
                r.error_code = self._not_hosted_error((fp.topic, fp.partition))
                continue
            log_ = p.log
            hw, lso, start = log_.high_watermark, log_.last_stable_offset, log_.log_start_offset
            limit = lso if read_committed else hw
            quota = rlm.fetch_quota
            throttle_ms = quota.throttle_time_ms() if quota is not None else 0
            if quota is not None and throttle_ms > 0:  # Kafka: an empty answer, no error; retried
                quota.throttled += 1
                rlm.fetch_throttle_time.record(throttle_ms)
                r.read = ReadResult(b"", hw, lso, start, [] if read_committed else None)
                continue
            try:
                records, aborted = await asyncio.to_thread(rlm.read, p, fp.fetch_offset,
                                                           min(fp.max_bytes, max(budget, 0)), limit,
                                                           budget == max_bytes, read_committed)
            except Exception as exc:  # noqa: BLE001 - an unreachable store is the client's retriable error
                log.warning("remote read of %s-%d at %d failed: %s", fp.topic, fp.partition, fp.fetch_offset, exc)
                r.error_code = ErrorCode.KAFKA_STORAGE_ERROR
                continue
            budget -= len(records)
            if quota is not None:
                quota.record(len(records))
            r.read = ReadResult(records, hw, lso, start, aborted)

    async def remote_offset_for_timestamp(self, p: Partition, timestamp: int) -> tuple[int, int, int] | None:
        """ListOffsets of a timestamp >= 0 on a tiered partition: its answer from the remote segments (read in a
        thread), None when they have none (or the topic is not tiered): the local segments answer then."""
        rlm = self.remote_log_manager
        if rlm is None or timestamp < 0 or not p.log.remote_log_enabled \
                or p.log.local_log_start_offset == p.log.log_start_offset:
            return None
        found = await asyncio.to_thread(rlm.find_offset_by_timestamp, p, timestamp)
        return None if found is None else (found.timestamp, found.offset, found.leader_epoch)

    async def wait_for(self, keys: list[TopicPartition], timeout_s: float) -> bool:
        return await self.watchers.wait(keys, timeout_s)

    def notify(self, topic: str, partition: int) -> None:
        """Something below ``topic-partition``'s log end changed for its readers (a share-partition loaded or
        released records): the fetches and produces waiting on it are woken, followers' fetches not."""
        self.watchers.notify_except_followers((topic, partition))

    # -- ISR -----------------------------------------------------------------------------------------
    def _submit_isr(self, p: Partition, isr: list[int]) -> None:
        """Propose ``isr`` for ``p`` (pending until committed by the ``IsrUpdater``)."""
        p.pending_isr = list(isr)
        task = asyncio.get_running_loop().create_task(self._alter_isr(p, list(isr)))
        self._isr_tasks.add(task)
        task.add_done_callback(self._isr_tasks.discard)

    async def _alter_isr(self, p: Partition, isr: list[int]) -> None:
        old = list(p.isr)
        leader_epoch = p.leader_epoch
        try:
            partition_epoch = await self.isr_updater.alter_isr(p.topic, p.partition, leader_epoch,
                                                               p.partition_epoch, isr)
        except Exception as exc:  # noqa: BLE001 - the change is retried by the next fetch or expiration check
            log.warning("%s-%d: ISR change %s -> %s failed: %s", p.topic, p.partition, old, isr, exc)
            partition_epoch = None
        if self.partitions.get((p.topic, p.partition)) is not p or p.leader_epoch != leader_epoch:
            return  # leadership moved meanwhile: the new state came with it
        if partition_epoch is None:
            if p.pending_isr == isr:  # else a newer proposal of this leader is in flight
                p.pending_isr = None
            return
        p.commit_isr(isr, partition_epoch, self.time_ms())
        if self.metrics is not None:
            self.metrics.isr_changed(old, isr)
        log.info("%s-%d: ISR %s to %s from %s (leader epoch %d, partition epoch %d)",
                 p.topic, p.partition, "expanded" if len(isr) > len(old) else "shrunk", isr, old, leader_epoch,
                 partition_epoch)
        self.watchers.notify((p.topic, p.partition))

    def shrink_lagging_isrs(self) -> int:
        """Propose to drop followers lagging past replica.lag.time.max.ms from every ISR led here."""
        now_ms = self.time_ms()
        proposed = 0
        for p in self.partitions.values():
            lagging = p.out_of_sync_replicas(now_ms, self.replica_lag_time_max_ms)
            if lagging:
                log.info("%s-%d: shrinking ISR, followers %s lag past %d ms (log end offset %d, high watermark %d)",
                         p.topic, p.partition, lagging, self.replica_lag_time_max_ms, p.log.log_end_offset,
                         p.log.high_watermark)
                self._submit_isr(p, [r for r in p.isr if r not in lagging])
                proposed += 1
        return proposed

    def start_isr_expiration(self) -> None:
        """Check for lagging followers every half replica.lag.time.max.ms, as Kafka's isr-expiration task."""
        async def run() -> None:
            while True:
                await asyncio.sleep(self.replica_lag_time_max_ms / 2000)
                self.shrink_lagging_isrs()

        if self._isr_expiration is None:
            self._isr_expiration = asyncio.get_running_loop().create_task(run())

    def begin_shutdown(self) -> None:
        """Answer every waiting fetch now and every new one at once: the broker is stopping."""
        self._closing = True
        self.watchers.notify_all()

    async def close(self) -> None:
        await self.alter_log_dirs.close()
        tasks = [t for t in (self._isr_expiration, *self._isr_tasks) if t is not None]
        for t in tasks:
            t.cancel()
        for t in tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass
