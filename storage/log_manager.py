"""All partition logs of this broker, across its ``log.dirs`` (Kafka's LogManager).

On disk, per log dir: ``.lock`` (held with flock while the broker runs: two brokers never share a dir),
the partition directories ``<topic>-<partition>``, the checkpoints ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint`` (high watermarks) and
``cleaner-offset-checkpoint``, and ``.kafka_cleanshutdown`` between a clean shutdown and the next start.
A deleted partition's directory is renamed ``<topic>-<partition>.<uuid>-delete`` and removed after
file.delete.delay.ms (or at the next start).

Future logs (AlterReplicaLogDirs, Kafka's futureLogs): a replica moving to another dir of this broker gets a
second log ``<topic>-<partition>.<uuid>-future`` in the destination dir, filled from the current log by
replication.replica_alter_log_dirs and swapped in once caught up (``replace_current_with_future``: the
current dir is renamed ``-delete`` first, then the future dir takes the partition's name, both under the
current log's lock with equal log end offsets). At start a future log is loaded and its copy resumed; one
left without a current log (a kill between the two renames) is promoted, as its data is the whole log.
A log dir chosen before the replica exists (``maybe_update_preferred_log_dir``) is where it is created.

Lifecycle: ``startup()`` (blocking: run it in a thread from asyncio) loads every log — in parallel,
``num_recovery_threads_per_data_dir`` per dir, one log line per partition with progress counts — skips
recovery where the dir was shut down cleanly, then starts the scheduler thread (retention every
``log_retention_check_interval_ms``, time-based flush, checkpoints, delayed deletions; the first run of
retention, flush and the two offset checkpoints after ``log_initial_task_delay_ms``) and the cleaner.
``shutdown()`` (blocking) stops both, flushes and closes every log, writes the checkpoints (recovery
points at the log end offsets) and the clean-shutdown marker.

Concurrency: the map of logs is guarded by ``self._lock``; the event loop calls get/create/delete (fast,
no fsync); everything periodic runs on the scheduler thread; each Log serializes itself. An I/O error
takes a dir offline (LogDirFailureChannel): its logs are closed and dropped, the others keep serving.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait

from storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CleanShutdownFile,
    CorruptCheckpointError,
    OffsetCheckpointFile,
)
from storage.cleaner import LogCleaner
from storage.config import LONG_MAX, LogConfig
from storage.errors import KafkaStorageError, LogDirNotFoundError
from storage.log import (
    DELETE_DIR_SUFFIX,
    STRAY_DIR_SUFFIX,
    Log,
    future_dir_name,
    parse_topic_partition_name,
    topic_partition_dir_name,
)
from storage.log_dir_failure import LogDirFailureChannel
from storage.scheduler import Scheduler

log = logging.getLogger("storage.log_manager")

__all__ = ["LogManager"]

TopicPartition = tuple[str, int]
LOCK_FILE_NAME = ".lock"
#: Directories other parts of the broker keep in a log dir: pykbroker.iceberg's default catalog and warehouse.
FOREIGN_DIRS = frozenset({"iceberg"})
# While a log dir is recovered after an unclean shutdown, a progress line (percent, counts, time left) at
# least this often, even while no log completes (one large log being scanned): never a silent minute.
RECOVERY_PROGRESS_INTERVAL_S = 10.0


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogManager:
    """Creates, loads, finds, deletes and maintains the logs of every log dir (module docstring).

    Broker property → argument: ``log.dirs`` → log_dirs, ``log.initial.task.delay.ms``,
    ``log.retention.check.interval.ms``,
    ``log.flush.scheduler.interval.ms``, ``log.flush.offset.checkpoint.interval.ms``,
    ``log.flush.start.offset.checkpoint.interval.ms``, ``replica.high.watermark.checkpoint.interval.ms``,
    ``num.recovery.threads.per.data.dir``, ``log.cleaner.enable``, ``log.cleaner.backoff.ms``,
    ``producer.id.expiration.ms`` (same names, underscores); topic defaults → ``default_config``.
    """

    def __init__(self, log_dirs: list[str], *, default_config: LogConfig | None = None,
                 log_initial_task_delay_ms: int = 30_000,
                 log_retention_check_interval_ms: int = 300_000,
                 log_flush_scheduler_interval_ms: int = LONG_MAX,
                 log_flush_offset_checkpoint_interval_ms: int = 60_000,
                 log_flush_start_offset_checkpoint_interval_ms: int = 60_000,
                 replica_high_watermark_checkpoint_interval_ms: int = 5_000,
                 num_recovery_threads_per_data_dir: int = 2,
                 log_cleaner_enable: bool = True, log_cleaner_backoff_ms: int = 15_000,
                 producer_id_expiration_ms: int = 86_400_000,
                 time_ms: Callable[[], int] = _wall_clock_ms, cordoned_log_dirs: Iterable[str] = ()) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is required")
        self.log_dirs = [os.path.abspath(d) for d in log_dirs]
        #: ``cordoned.log.dirs`` (KIP-1066): dirs that take no new partitions while another online dir can.
        self.cordoned_log_dirs = frozenset(os.path.abspath(d) for d in cordoned_log_dirs)
        self.default_config = default_config or LogConfig()
        self.initial_task_delay_ms = log_initial_task_delay_ms
        self.retention_check_interval_ms = log_retention_check_interval_ms
        self.flush_check_interval_ms = log_flush_scheduler_interval_ms
        self.recovery_checkpoint_interval_ms = log_flush_offset_checkpoint_interval_ms
        self.start_offset_checkpoint_interval_ms = log_flush_start_offset_checkpoint_interval_ms
        self.hw_checkpoint_interval_ms = replica_high_watermark_checkpoint_interval_ms
        self.recovery_threads = max(1, num_recovery_threads_per_data_dir)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.time_ms = time_ms
        self.failure_channel = LogDirFailureChannel()
        self.failure_channel.add_listener(self._on_dir_offline)
        self.scheduler = Scheduler("kafka-scheduler")
        self.cleaner = LogCleaner(self.all_logs, backoff_ms=log_cleaner_backoff_ms, time_ms=time_ms) \
            if log_cleaner_enable else None
        self._logs: dict[TopicPartition, Log] = {}
        self._future_logs: dict[TopicPartition, Log] = {}
        # Dirs chosen by AlterReplicaLogDirs for replicas not created yet (Kafka's preferredLogDirs).
        self._preferred_log_dirs: dict[TopicPartition, str] = {}
        # Logs taken out by delete_log(defer_rename=True), still in their dir until rename_deleted (Kafka's
        # logsToBeDeleted, whose renames also follow the metadata change rather than precede it).
        self._to_rename: dict[TopicPartition, Log] = {}
        self._lock = threading.Lock()
        self._dir_locks: dict[str, int] = {}
        self._checkpoint_lock = threading.Lock()
        self._started = False
        self.had_clean_shutdown: dict[str, bool] = {}
        self._recovery_progress_logged: dict[str, float] = {}  # log dir -> when its last progress line was

    # -- startup ------------------------------------------------------------------------------------------
    def startup(self, config_for: Callable[[str], LogConfig] | Mapping[str, LogConfig] | None = None) -> None:
        """Load every log (recovering where needed), then start the background threads. Blocking."""
        self._config_for = _config_lookup(config_for, self.default_config)
        self._create_and_lock_dirs()
        for log_dir in self.log_dirs:
            if self.failure_channel.is_offline(log_dir):
                continue
            try:
                self._load_logs_in_dir(log_dir)
            except OSError as exc:
                self.failure_channel.maybe_add_offline_log_dir(log_dir, f"Error while loading log dir {log_dir}", exc)
        self._promote_lone_future_logs()
        self.scheduler.start()
        self._schedule_tasks()
        if self.cleaner is not None:
            self.cleaner.start()
        self._started = True

    def _create_and_lock_dirs(self) -> None:
        for log_dir in self.log_dirs:
            try:
                os.makedirs(log_dir, exist_ok=True)
                fd = os.open(os.path.join(log_dir, LOCK_FILE_NAME), os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise KafkaStorageError(f"Failed to acquire lock on file .lock in {log_dir}. A Kafka instance "
                                            f"in another process or thread is using this directory.") from None
                self._dir_locks[log_dir] = fd
            except OSError as exc:
                self.failure_channel.maybe_add_offline_log_dir(log_dir, f"Failed to create or validate data "
                                                               f"directory {log_dir}", exc)

    def _read_checkpoint(self, log_dir: str, name: str) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(os.path.join(log_dir, name)).read()
        except CorruptCheckpointError as exc:
            log.warning("Error reading %s in %s, all partitions in it are treated as having none: %s", name,
                        log_dir, exc)
            return {}

    def _load_logs_in_dir(self, log_dir: str) -> None:
        started = time.monotonic()
        clean_file = CleanShutdownFile(log_dir)
        had_clean_shutdown = clean_file.exists()
        self.had_clean_shutdown[log_dir] = had_clean_shutdown
        if had_clean_shutdown:
            log.info("Skipping recovery of all logs in %s since clean shutdown file was found", log_dir)
        else:
            log.info("Attempting recovery of all logs in %s since no clean shutdown file was found", log_dir)
        recovery_points = self._read_checkpoint(log_dir, RECOVERY_POINT_CHECKPOINT)
        start_offsets = self._read_checkpoint(log_dir, LOG_START_OFFSET_CHECKPOINT)
        high_watermarks = self._read_checkpoint(log_dir, REPLICATION_OFFSET_CHECKPOINT)
        to_load = []
        for name in sorted(os.listdir(log_dir)):
            path = os.path.join(log_dir, name)
            if not os.path.isdir(path):
                continue
            if name.endswith(DELETE_DIR_SUFFIX):
                log.info("Deleting %s left by a topic deletion", path)
                shutil.rmtree(path, ignore_errors=True)
                continue
            if name.endswith(STRAY_DIR_SUFFIX):
                continue
            try:
                to_load.append((path, parse_topic_partition_name(name)))
            except ValueError:
                if name not in FOREIGN_DIRS:
                    log.warning("Ignoring %s in log dir %s: not a topic-partition directory", name, log_dir)
        total = len(to_load)
        done = [0]
        progress_lock = threading.Lock()

        def load(item: tuple[str, TopicPartition]) -> Log:
            path, tp = item
            t0 = time.monotonic()
            log_ = Log.open(path, self._config_for(tp[0]), log_start_offset=start_offsets.get(tp, 0),
                            recovery_point=recovery_points.get(tp, 0), high_watermark=high_watermarks.get(tp, 0),
                            had_clean_shutdown=had_clean_shutdown, scheduler=self.scheduler, time_ms=self.time_ms,
                            failure_channel=self.failure_channel,
                            producer_id_expiration_ms=self.producer_id_expiration_ms)
            with progress_lock:
                done[0] += 1
                log.info("Completed load of log %s with %d segments, local-log-start-offset %d, log-end-offset %d "
                         "and high watermark %d in %d ms (%d/%d completed in %s)", log_.name, log_.num_segments,
                         log_.log_start_offset, log_.log_end_offset, log_.high_watermark,
                         (time.monotonic() - t0) * 1000, done[0], total, log_dir)
            return log_

        with ThreadPoolExecutor(self.recovery_threads, thread_name_prefix="log-recovery") as pool:
            futures = {pool.submit(load, item): item for item in to_load}
            pending = set(futures)
            while pending:
                # Woken by the interval or the end, not by every log loaded: each wait() walks every pending
                # future, so waking per completion made loading N logs N^2 (10,000 logs: half a minute).
                _, pending = wait(pending, timeout=RECOVERY_PROGRESS_INTERVAL_S)
                if not had_clean_shutdown and total:
                    self._log_recovery_progress(log_dir, total - len(pending), total, started,
                                                [futures[f][1] for f in pending if f.running()])
            loaded = [f.result() for f in futures]  # in directory order; the first failure is raised
        with self._lock:
            for log_ in loaded:
                key = (log_.topic, log_.partition)
                if log_.is_future:
                    if key in self._future_logs:
                        raise KafkaStorageError(f"Duplicate future log directories for {key} are found in both "
                                                f"{self._future_logs[key].dir} and {log_.dir}.")
                    self._future_logs[key] = log_
                    continue
                if key in self._logs:
                    raise KafkaStorageError(f"Duplicate log directories for {key} are found in both "
                                            f"{self._logs[key].dir} and {log_.dir}.")
                self._logs[key] = log_
        clean_file.delete()
        log.info("Loaded %d logs in %s in %d ms", total, log_dir, (time.monotonic() - started) * 1000)

    def _promote_lone_future_logs(self) -> None:
        """A future log without a current log: the broker died between the two renames of a swap, after the
        current dir was renamed for deletion — the future log holds the whole log, so it becomes the current
        one. With a dir offline the current log may be there: the future log then stays as it is."""
        if self.failure_channel.offline_dirs:
            return
        with self._lock:
            lone = [tp for tp in self._future_logs if tp not in self._logs]
        for tp in lone:
            future = self._future_logs.pop(tp)
            future.rename_dir(os.path.join(future.parent_dir, topic_partition_dir_name(*tp)))
            with self._lock:
                self._logs[tp] = future
            log.warning("Promoted the future log of %s-%d in %s to the current log: its current log was deleted "
                        "by a swap the broker did not finish", tp[0], tp[1], future.parent_dir)

    def _log_recovery_progress(self, log_dir: str, done: int, total: int, started: float,
                               in_progress: list[TopicPartition]) -> None:
        """One progress line of an unclean-shutdown recovery of ``log_dir``, at most every
        RECOVERY_PROGRESS_INTERVAL_S (and the last): percent, counts, time so far and left."""
        now = time.monotonic()
        last = self._recovery_progress_logged.get(log_dir, 0.0)
        if done < total and now - last < RECOVERY_PROGRESS_INTERVAL_S:
            return
        self._recovery_progress_logged[log_dir] = now
        elapsed = now - started
        left = f", about {elapsed / done * (total - done):.0f} s left" if 0 < done < total else ""
        working = (f"; recovering {', '.join(f'{t}-{p}' for t, p in in_progress[:5])}"
                   + (" ..." if len(in_progress) > 5 else "")) if in_progress else ""
        log.info("Recovery of log dir %s: %d%% (%d/%d logs) in %.1f s%s%s", log_dir, done * 100 // total, done,
                 total, elapsed, left, working)

    def _schedule_tasks(self) -> None:
        s = self.scheduler
        delay = self.initial_task_delay_ms  # Kafka's LogManager.startup: log.initial.task.delay.ms
        s.schedule_periodic("kafka-log-retention", self.cleanup_logs, delay, self.retention_check_interval_ms)
        if self.flush_check_interval_ms < LONG_MAX // 2:
            s.schedule_periodic("kafka-log-flusher", self.flush_dirty_logs, delay, self.flush_check_interval_ms)
        s.schedule_periodic("kafka-recovery-point-checkpoint", self.checkpoint_recovery_offsets, delay,
                            self.recovery_checkpoint_interval_ms)
        s.schedule_periodic("kafka-log-start-offset-checkpoint", self.checkpoint_log_start_offsets, delay,
                            self.start_offset_checkpoint_interval_ms)
        s.schedule_periodic("highwatermark-checkpoint", self.checkpoint_high_watermarks,
                            self.hw_checkpoint_interval_ms, self.hw_checkpoint_interval_ms)

    # -- the map ------------------------------------------------------------------------------------------
    def all_logs(self) -> list[Log]:
        with self._lock:
            return list(self._logs.values())

    def get_log(self, topic: str, partition: int, is_future: bool = False) -> Log | None:
        with self._lock:
            return (self._future_logs if is_future else self._logs).get((topic, partition))

    def future_logs(self) -> list[Log]:
        with self._lock:
            return list(self._future_logs.values())

    def is_log_dir_online(self, log_dir: str) -> bool:
        """Whether ``log_dir`` (one of log.dirs, else LogDirNotFoundError) is online."""
        if log_dir not in self.log_dirs:
            raise LogDirNotFoundError(f"Log dir {log_dir} is not found in the config.")
        return not self.failure_channel.is_offline(log_dir)

    def maybe_update_preferred_log_dir(self, topic: str, partition: int, log_dir: str) -> None:
        """Remember ``log_dir`` as where ``topic-partition`` is to be created, unless its current or future
        log is already there (Kafka's maybeUpdatePreferredLogDir)."""
        with self._lock:
            current = self._logs.get((topic, partition))
            future = self._future_logs.get((topic, partition))
            if (current is None or current.parent_dir != log_dir) and (future is None or future.parent_dir != log_dir):
                self._preferred_log_dirs[(topic, partition)] = log_dir

    def get_or_create_log(self, topic: str, partition: int, topic_id: uuid.UUID | None = None,
                          config: LogConfig | None = None) -> Log:
        """The log of ``topic-partition``, created in the log dir with the fewest partitions if absent.

        With ``topic_id``, partition.metadata is written (or checked: InconsistentTopicIdError). A deleted log of
        this partition still in its dir is renamed away first.
        """
        self._rename_now((topic, partition))
        with self._lock:
            existing = self._logs.get((topic, partition))
            if existing is not None:
                if topic_id is not None and existing.topic_id != topic_id:
                    existing.assign_topic_id(topic_id)
                if config is not None and config != existing.config:
                    existing.update_config(config)
                return existing
            preferred = self._preferred_log_dirs.get((topic, partition))
            log_dir = preferred if preferred is not None and not self.failure_channel.is_offline(preferred) \
                else self._next_log_dir()
            path = os.path.join(log_dir, topic_partition_dir_name(topic, partition))
            try:
                log_ = Log.open(path, config or self._config_for_topic(topic), scheduler=self.scheduler,
                                time_ms=self.time_ms, failure_channel=self.failure_channel, topic_id=topic_id,
                                producer_id_expiration_ms=self.producer_id_expiration_ms,
                                log_recovery_progress=False)
            except OSError as exc:
                failure = exc
            else:
                self._logs[(topic, partition)] = log_
                self._preferred_log_dirs.pop((topic, partition), None)
                log.info("Created log for partition %s-%d in %s", topic, partition, path)
                return log_
        # Outside the lock: taking the dir offline drops its logs from the map under that same lock.
        message = f"Error while creating log for {topic}-{partition} in dir {log_dir}"
        self.failure_channel.maybe_add_offline_log_dir(log_dir, message, failure)
        raise KafkaStorageError(f"{message}: {failure}") from failure

    def create_future_log(self, topic: str, partition: int, log_dir: str) -> Log | None:
        """A future log of ``topic-partition`` in ``log_dir`` (the current log's config and topic id); None when
        the current log is already there or a future log exists (in that dir; in another: ValueError).
        KafkaStorageError when a log dir is offline (no future log then, as Kafka: the partition might be in
        the offline dir twice) or the new dir cannot be made."""
        with self._lock:
            current = self._logs.get((topic, partition))
            if current is None:
                raise KafkaStorageError(f"The current log of {topic}-{partition} is not found")
            if current.parent_dir == log_dir:
                log.info("Current log directory %s is same as requested log dir %s. Skipping future replica "
                         "creation (%s-%d)", log_dir, log_dir, topic, partition)
                return None
            future = self._future_logs.get((topic, partition))
            if future is not None:
                if future.parent_dir != log_dir:
                    raise ValueError(f"The future log dir {future.parent_dir} of {topic}-{partition} is different "
                                     f"from the requested log dir {log_dir}")
                return None
            offline = self.failure_channel.offline_dirs
            if offline:
                raise KafkaStorageError(f"Can not create log for {topic}-{partition} because log directories "
                                        f"{','.join(offline)} are offline")
            path = os.path.join(log_dir, future_dir_name(topic, partition))
            try:
                future = Log.open(path, current.config, scheduler=self.scheduler, time_ms=self.time_ms,
                                  failure_channel=self.failure_channel, topic_id=current.topic_id,
                                  producer_id_expiration_ms=self.producer_id_expiration_ms,
                                  log_recovery_progress=False)
            except OSError as exc:
                failure = exc
            else:
                self._future_logs[(topic, partition)] = future
                self._preferred_log_dirs.pop((topic, partition), None)
                log.info("Created the future log of %s-%d in %s", topic, partition, path)
                return future
        # Outside the lock, as in get_or_create_log: taking the dir offline takes the lock.
        message = f"Error while creating the future log for {topic}-{partition} in dir {log_dir}"
        self.failure_channel.maybe_add_offline_log_dir(log_dir, message, failure)
        raise KafkaStorageError(f"{message}: {failure}") from failure

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """Swap the caught-up future log in as ``topic-partition``'s log; returns it. The caller has seen equal
        log end offsets and keeps appends out (it runs on the event loop). The current log is renamed
        ``-delete`` first, then the future dir takes the partition's name: a kill between the two leaves the
        future log alone, which the next start promotes. The old log is closed and removed on the scheduler
        thread after file.delete.delay.ms (regions already handed out stay readable)."""
        tp = (topic, partition)
        with self._lock:
            source = self._logs.get(tp)
            dest = self._future_logs.get(tp)
        if source is None or dest is None:
            raise KafkaStorageError(f"The current or future log of {topic}-{partition} is missing")
        log.info("Attempting to replace current log %s with %s for %s-%d", source, dest, topic, partition)
        with source.lock, dest.lock:
            if source.log_end_offset != dest.log_end_offset:
                raise ValueError(f"The future log of {topic}-{partition} is not caught up")
            deleted_dir = os.path.join(source.parent_dir, f"{topic_partition_dir_name(*tp)}."
                                       f"{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
            latest = dest.latest_epoch  # epochs the leader began with no record yet: the future log lacks them
            for epoch, start_offset in source.leader_epoch_cache.entries():
                if latest is None or epoch > latest:
                    dest.assign_epoch_start_offset(epoch, start_offset)
            source.rename_dir(deleted_dir)
            source.deleted = True
            dest.rename_dir(os.path.join(dest.parent_dir, topic_partition_dir_name(*tp)))
            dest.update_high_watermark(source.high_watermark)
            source.truncation_listener = None
            with self._lock:
                self._future_logs.pop(tp, None)
                self._logs[tp] = dest
        if self.cleaner is not None and self._started:
            self.cleaner.update_checkpoint(source, None)

        def remove() -> None:
            try:
                source.close_handlers()
            finally:
                shutil.rmtree(deleted_dir, ignore_errors=True)
            log.info("Deleted the replaced log of %s in %s", source.name, deleted_dir)

        self._run_on_scheduler(f"delete-log-{source.name}", remove, source.config.file_delete_delay_ms)
        log.info("The current replica is successfully replaced with the future replica for %s-%d (now in %s)", topic,
                 partition, dest.parent_dir)
        return dest

    def remove_future_log(self, topic: str, partition: int) -> Log | None:
        """Drop ``topic-partition``'s future log (a move cancelled, redirected or its partition deleted): renamed
        ``-delete`` and removed on the scheduler thread."""
        with self._lock:
            future = self._future_logs.pop((topic, partition), None)
        if future is None:
            return None
        new_dir = self._rename_away(future, DELETE_DIR_SUFFIX, topic_partition_dir_name(topic, partition))
        log.info("The future log of %s is renamed to %s and is scheduled for deletion", future.name, new_dir)

        def remove() -> None:
            future.close_handlers()
            shutil.rmtree(new_dir, ignore_errors=True)

        self._run_on_scheduler(f"delete-future-log-{future.name}", remove, future.config.file_delete_delay_ms)
        return future

    def _config_for_topic(self, topic: str) -> LogConfig:
        lookup = getattr(self, "_config_for", None)
        return lookup(topic) if lookup is not None else self.default_config

    def update_cordoned_log_dirs(self, dirs: Iterable[str]) -> None:
        """Kafka's LogManager.updateCordonedLogDirs: a dynamic cordoned.log.dirs applies to the next new log."""
        self.cordoned_log_dirs = frozenset(os.path.abspath(d) for d in dirs)

    @property
    def all_cordoned(self) -> bool:
        """Every log dir is cordoned: the broker takes no new partitions (Kafka leaves it out of placement)."""
        return all(os.path.abspath(d) in self.cordoned_log_dirs for d in self.log_dirs)

    def _next_log_dir(self) -> str:
        online = [d for d in self.log_dirs if not self.failure_channel.is_offline(d)]
        if not online:
            raise KafkaStorageError(f"No log directories available. Tried {', '.join(self.log_dirs)}")
        # Cordoned dirs (KIP-1066) take no new partitions while another online dir can.
        online = [d for d in online if d not in self.cordoned_log_dirs] or online
        if len(online) == 1:  # as Kafka's nextLogDirs: no count of every log (creating N logs is not N^2)
            return online[0]
        counts = {d: 0 for d in online}
        for log_ in [*self._logs.values(), *self._future_logs.values()]:  # as Kafka: future logs count too
            if log_.parent_dir in counts:
                counts[log_.parent_dir] += 1
        return min(online, key=lambda d: counts[d])

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        for log_ in self.all_logs() + self.future_logs():
            if log_.topic == topic:
                log_.update_config(config)

    def delete_log(self, topic: str, partition: int, defer_rename: bool = False) -> Log | None:
        """Remove ``topic-partition``: renamed ``...-delete`` now, closed and removed on the scheduler thread
        after file.delete.delay.ms (regions already handed out stay readable). ``defer_rename``: only taken out
        (no longer found, appends refused) now; renamed by ``rename_deleted``, or before this partition's log is
        created again, or at shutdown."""
        self.remove_future_log(topic, partition)
        with self._lock:
            log_ = self._logs.pop((topic, partition), None)
            self._preferred_log_dirs.pop((topic, partition), None)
            if log_ is not None and defer_rename:
                self._to_rename[(topic, partition)] = log_
        if log_ is None:
            return None
        if defer_rename:
            with log_.lock:
                log_.deleted = True
            return log_
        self._rename_deleted_log(log_)
        return log_

    def mark_stray(self, topic: str, partition: int) -> Log | None:
        """Take ``topic-partition`` out and rename its dir ``...-stray``, kept (never loaded again, the operator's
        to remove), as Kafka keeps the log of a topic its metadata does not know at start."""
        with self._lock:
            log_ = self._logs.pop((topic, partition), None)
        if log_ is None:
            return None
        new_dir = self._rename_away(log_, STRAY_DIR_SUFFIX)
        log_.close_handlers()
        log.warning("Log for partition %s is marked as stray and renamed to %s", log_.name, new_dir)
        return log_

    @property
    def renames_pending(self) -> int:
        """Logs deleted with ``defer_rename`` still in their dirs."""
        return len(self._to_rename)

    def rename_deleted(self, budget_s: float = float("inf")) -> int:
        """Rename logs deleted with ``defer_rename`` for up to ``budget_s`` seconds (at least one); returns how many
        are left."""
        end = time.perf_counter() + budget_s
        while self._to_rename:
            self._rename_now(next(iter(self._to_rename)))
            if time.perf_counter() >= end:
                break
        return len(self._to_rename)

    def _rename_now(self, tp: TopicPartition) -> None:
        with self._lock:
            log_ = self._to_rename.pop(tp, None)
        if log_ is not None:
            try:
                self._rename_deleted_log(log_)
            except KafkaStorageError as exc:  # its dir went offline: dropped with the dir
                log.error("Could not rename the deleted log of %s: %s", log_.name, exc)

    def _rename_away(self, log_: Log, suffix: str, base: str | None = None) -> str:
        """Mark ``log_`` deleted and rename its dir ``<base>.<uuid><suffix>`` (base: its dir's name); the new dir.
        KafkaStorageError (its log dir taken offline) when the rename fails."""
        with log_.lock:
            log_.deleted = True
            new_dir = os.path.join(log_.parent_dir, f"{base or os.path.basename(log_.dir)}.{uuid.uuid4().hex}{suffix}")
            try:
                os.rename(log_.dir, new_dir)
            except OSError as exc:
                self.failure_channel.maybe_add_offline_log_dir(log_.parent_dir, f"Error while renaming dir for "
                                                               f"{log_.name} in log dir {log_.parent_dir}", exc)
                raise KafkaStorageError(str(exc)) from exc
        return new_dir

    def _rename_deleted_log(self, log_: Log) -> None:
        new_dir = self._rename_away(log_, DELETE_DIR_SUFFIX)
        log.info("Log for partition %s is renamed to %s and is scheduled for deletion", log_.name, new_dir)
        if self.cleaner is not None and self._started:
            self.cleaner.update_checkpoint(log_, None)

        def remove() -> None:
            log_.close_handlers()
            shutil.rmtree(new_dir, ignore_errors=True)
            log.info("Deleted log for partition %s in %s", log_.name, new_dir)

        self._run_on_scheduler(f"delete-log-{log_.name}", remove, log_.config.file_delete_delay_ms)

    def _run_on_scheduler(self, name: str, fn: Callable[[], None], delay_ms: int = 0) -> None:
        if self._started:
            self.scheduler.schedule_once(name, fn, delay_ms)
        else:
            fn()

    def _on_dir_offline(self, log_dir: str) -> None:
        with self._lock:
            dropped = [k for k, v in self._logs.items() if v.parent_dir == log_dir]
            logs = [self._logs.pop(k) for k in dropped]
            logs += [self._future_logs.pop(k) for k, v in list(self._future_logs.items()) if v.parent_dir == log_dir]
            logs += [self._to_rename.pop(k) for k, v in list(self._to_rename.items()) if v.parent_dir == log_dir]
        log.error("Stopped serving %d partitions in offline log dir %s: %s", len(logs), log_dir,
                  ", ".join(f"{t}-{p}" for t, p in dropped))

        def close() -> None:
            for log_ in logs:
                try:
                    log_.close_handlers()
                except OSError:
                    pass

        if self._started and not self.scheduler.is_on_thread():
            self.scheduler.schedule_once(f"close-offline-{log_dir}", close)
        else:
            close()

    # -- periodic work ------------------------------------------------------------------------------------
    def cleanup_logs(self) -> int:
        """Retention on every log (and producer id expiration); returns the number of segments deleted."""
        total = 0
        now = self.time_ms()
        for log_ in self.all_logs():
            try:
                total += log_.delete_old_segments()
                with log_.lock:
                    log_.producer_state.remove_expired_producers(now)
            except KafkaStorageError:
                continue
        if total:
            log.debug("Log cleanup completed. %d segments deleted", total)
        return total

    def flush_dirty_logs(self) -> None:
        """flush.ms: fsync every log (future ones too) whose last flush is older than its flush.ms."""
        now = self.time_ms()
        for log_ in self.all_logs() + self.future_logs():
            try:
                if log_.time_since_last_flush_ms(now) >= log_.config.flush_ms:
                    log_.flush()
            except KafkaStorageError:
                continue

    def _write_checkpoint(self, name: str, offset_of: Callable[[Log], int]) -> None:
        with self._checkpoint_lock:
            by_dir: dict[str, dict[TopicPartition, int]] = {d: {} for d in self.log_dirs}
            for log_ in self.all_logs() + self.future_logs():
                if log_.parent_dir in by_dir:
                    by_dir[log_.parent_dir][(log_.topic, log_.partition)] = offset_of(log_)
            for log_dir, offsets in by_dir.items():
                if self.failure_channel.is_offline(log_dir):
                    continue
                try:
                    OffsetCheckpointFile(os.path.join(log_dir, name)).write(offsets)
                except OSError as exc:
                    self.failure_channel.maybe_add_offline_log_dir(log_dir, f"Disk error while writing {name} to "
                                                                   f"{log_dir}", exc)

    def checkpoint_recovery_offsets(self) -> None:
        self._write_checkpoint(RECOVERY_POINT_CHECKPOINT, lambda lg: lg.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoint(LOG_START_OFFSET_CHECKPOINT, lambda lg: lg.log_start_offset)

    def checkpoint_high_watermarks(self) -> None:
        self._write_checkpoint(REPLICATION_OFFSET_CHECKPOINT, lambda lg: lg.high_watermark)

    # -- shutdown -----------------------------------------------------------------------------------------
    def shutdown(self, broker_epoch: int = -1) -> None:
        """Stop the threads, flush and close every log, write checkpoints and the clean-shutdown marker."""
        log.info("Shutting down the log manager")
        self.rename_deleted()
        if self.cleaner is not None:
            self.cleaner.shutdown()
        self.scheduler.shutdown(drain=True)
        dirty_dirs = set(self.failure_channel.offline_dirs)
        for log_ in self.all_logs() + self.future_logs():
            try:
                log_.flush()
            except KafkaStorageError:
                dirty_dirs.add(log_.parent_dir)
        self.checkpoint_recovery_offsets()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        for log_ in self.all_logs() + self.future_logs():
            try:
                log_.close()
            except KafkaStorageError:
                dirty_dirs.add(log_.parent_dir)
        for log_dir in self.log_dirs:
            if log_dir in dirty_dirs or self.failure_channel.is_offline(log_dir):
                continue
            try:
                CleanShutdownFile(log_dir).write(broker_epoch)
            except OSError as exc:
                log.error("Could not write the clean shutdown file in %s: %s", log_dir, exc)
        for fd in self._dir_locks.values():
            os.close(fd)
        self._dir_locks.clear()
        with self._lock:
            self._logs.clear()
            self._future_logs.clear()
        self._started = False
        log.info("Shutdown complete.")


def _config_lookup(config_for, default: LogConfig) -> Callable[[str], LogConfig]:
    if config_for is None:
        return lambda topic: default
    if callable(config_for):
        return config_for
    mapping = dict(config_for)
    return lambda topic: mapping.get(topic, default)
