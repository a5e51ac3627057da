"""Moving a replica between log dirs of this broker (Kafka's ReplicaAlterLogDirsManager and its threads).

AlterReplicaLogDirs gives a hosted partition a future log in the destination dir (storage.log_manager). One
asyncio task per moving partition fills it from the current log as a follower would: batches read from the
current log are appended to the future log with their offsets and epochs, the future log's start offset
follows the current one's, and a truncation of the current log (a follower that diverged, one far behind)
is repeated on the future log before the next copy. The reads and appends run in a worker thread, a
chunk at a time, so the event loop keeps serving produce and fetch meanwhile; only the last small gap is
copied on the event loop, where appends cannot interleave, and the swap follows at once: the future log
becomes the partition's log (``LogManager.replace_current_with_future``) and the old one is deleted.
The copy rate is capped by ``replica.alter.log.dirs.io.max.bytes.per.second`` (a dynamic broker quota, as
Kafka's ReplicaAlterLogDirs quota; unset: no cap), read before every chunk so a change applies at once.

A move stops when its partition stops being hosted, its future log is removed (redirected to another dir,
partition deleted) or a log dir involved fails. After a restart the broker resumes every future log it
loaded (``ReplicaManager`` starts a task when it hosts the partition). Event-loop only (the tasks); the
copy's own state is handed to the worker thread under a lock.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
from collections.abc import Callable
from typing import Any

from storage import KafkaStorageError, records_bytes

log = logging.getLogger("replication.replica_alter_log_dirs")

__all__ = ["ReplicaAlterLogDirsManager"]

TopicPartition = tuple[str, int]
# One read from the current log (replica.fetch.max.bytes' default; a larger first batch is read whole).
READ_MAX_BYTES = 1 << 20
# Bytes copied per worker-thread call: the task checks between calls whether the move is still wanted.
CHUNK_BYTES = 16 << 20
# The last gap is copied on the event loop (appends wait that long): at most this much at a time.
FINAL_COPY_BYTES = 1 << 20


class _Truncations:
    """Truncations of the current log not yet repeated on the future log (set under the current log's lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: tuple[int, bool] | None = None  # (offset, fully)

    def record(self, offset: int, fully: bool) -> None:
        with self._lock:
            if fully or self._pending is None:
                self._pending = (offset, fully)
            elif not self._pending[1]:
                self._pending = (min(offset, self._pending[0]), False)
            # else: a full truncation is pending; a later truncation of the new log stays above its start

    def take(self) -> tuple[int, bool] | None:
        with self._lock:
            pending, self._pending = self._pending, None
            return pending

    @property
    def pending(self) -> bool:
        return self._pending is not None


def copy_to_future(current: Any, future: Any, truncations: _Truncations, budget: int) -> bool:
    """Copy up to ``budget`` bytes of batches from ``current`` to ``future``; True once the future log ends
    where the current one does (at the time of the check). Any thread; each log serializes itself."""
    pending = truncations.take()
    if pending is not None:
        offset, fully = pending
        if fully:
            future.truncate_fully_and_start_at(offset)
        elif offset < future.log_end_offset:
            future.truncate_to(offset)
    copied = 0
    while True:
        start = current.log_start_offset
        if future.log_end_offset < start:
            future.truncate_fully_and_start_at(start)
        elif future.log_start_offset < start:
            future.maybe_increment_log_start_offset(start, "the current log's start offset moved")
        offset = future.log_end_offset
        if offset >= current.log_end_offset:
            return True
        if copied >= budget:
            return False
        info = current.read(offset, min(READ_MAX_BYTES, budget - copied), min_one_message=True)
        records = info.records
        data = records_bytes(records)
        if not data:
            return future.log_end_offset >= current.log_end_offset
        base_offset = struct.unpack_from(">q", data, 0)[0]
        if base_offset < future.log_end_offset:  # a truncation to the middle of a batch: take it whole again
            future.truncate_to(base_offset)
        future.append_as_follower(data)
        # As a follower takes its leader's: a kill right after the swap finds a high watermark checkpointed.
        future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
        copied += len(data)


class ReplicaAlterLogDirsManager:
    """The running moves, one task per partition (see the module docstring)."""

    def __init__(self, log_manager: Any, get_partition: Callable[[str, int], Any],
                 on_swapped: Callable[[str, int], None] | None = None,
                 io_max_bytes_per_second: Callable[[], int | None] = lambda: None) -> None:
        self.log_manager = log_manager
        self.get_partition = get_partition
        self.on_swapped = on_swapped
        self.io_max_bytes_per_second = io_max_bytes_per_second
        self._tasks: dict[TopicPartition, asyncio.Task] = {}

    def is_moving(self, topic: str, partition: int) -> bool:
        return (topic, partition) in self._tasks

    def start(self, topic: str, partition: int) -> None:
        """Copy ``topic-partition``'s current log to its future log, then swap (no-op while already running)."""
        tp = (topic, partition)
        if tp in self._tasks:
            return
        task = asyncio.get_running_loop().create_task(self._run(tp), name=f"alter-log-dir-{topic}-{partition}")
        self._tasks[tp] = task

        def done(t: asyncio.Task) -> None:
            if self._tasks.get(tp) is t:
                del self._tasks[tp]

        task.add_done_callback(done)

    def stop(self, topic: str, partition: int) -> None:
        task = self._tasks.pop((topic, partition), None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass

    async def _run(self, tp: TopicPartition) -> None:
        topic, partition = tp
        p = self.get_partition(topic, partition)
        future = self.log_manager.get_log(topic, partition, is_future=True)
        if p is None or future is None:
            return
        current = p.log
        truncations = _Truncations()
        current.truncation_listener = truncations.record
        log.info("Moving %s-%d from %s to %s: copying from offset %d (log end offset %d)", topic, partition,
                 current.parent_dir, future.parent_dir, future.log_end_offset, current.log_end_offset)
        loop = asyncio.get_running_loop()
        started = loop.time()
        window_start, window_bytes, window_rate = loop.time(), 0, None
        try:
            while True:
                rate = self.io_max_bytes_per_second()
                if rate != window_rate:
                    window_start, window_bytes, window_rate = loop.time(), 0, rate
                budget = CHUNK_BYTES if rate is None else max(1, min(CHUNK_BYTES, rate // 10))
                size_before = future.size_in_bytes
                caught_up = await asyncio.to_thread(copy_to_future, current, future, truncations, budget)
                if not self._still_wanted(tp, current, future):
                    return
                if rate is not None and rate > 0:  # the quota: sleep until the bytes copied are within it
                    window_bytes += max(0, future.size_in_bytes - size_before)
                    wait = window_start + window_bytes / rate - loop.time()
                    if wait > 0:
                        await asyncio.sleep(wait)
                        if not self._still_wanted(tp, current, future):
                            return
                if not caught_up:
                    continue
                # On the event loop from here: no append can come between the last copy and the swap.
                if not copy_to_future(current, future, truncations, FINAL_COPY_BYTES) or truncations.pending:
                    await asyncio.sleep(0)
                    continue
                self.log_manager.replace_current_with_future(topic, partition)
                p.log = future
                log.info("Moved %s-%d to %s in %.1f s (log end offset %d, %d bytes)", topic, partition,
                         future.parent_dir, loop.time() - started, future.log_end_offset, future.size_in_bytes)
                if self.on_swapped is not None:
                    self.on_swapped(topic, partition)
                return
        except KafkaStorageError as exc:
            log.error("Moving %s-%d to %s stopped: %s", topic, partition, future.parent_dir, exc)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Moving %s-%d to %s failed", topic, partition, future.parent_dir)
        finally:
            if current.truncation_listener == truncations.record:
                current.truncation_listener = None

    def _still_wanted(self, tp: TopicPartition, current: Any, future: Any) -> bool:
        p = self.get_partition(*tp)
        return (p is not None and p.log is current and not future.deleted
                and self.log_manager.get_log(*tp, is_future=True) is future)
