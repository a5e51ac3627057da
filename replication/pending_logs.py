"""Logs of partitions assigned to this broker that are still to be created, created in short slices between the
event loop's other work.

Kafka answers CreateTopics once the metadata is committed, and its brokers create the logs of the new
partitions afterwards, while applying the metadata delta: the metadata shows the leaders at once, and a produce
that arrives before the leader's log exists is answered NOT_LEADER_OR_FOLLOWER (retriable; clients refresh
their metadata and retry). pykbroker does the same for large creations: creating a log costs directories, files
and an fsync or two (about 1.5 ms each here), so 10,000 of them on the event loop would stop every other client
for seconds. The broker hosts a partition (leader or follower) only once its log exists, so nothing is ever
acknowledged by a partition without a log. A produce to a partition whose log is pending waits for it (up to
its timeout) instead of being refused: clients that produce to a topic as soon as it is created would otherwise
retry in a storm that takes the loop from the creation.

The logs are created on the event loop itself, a slice of at most SLICE_SECONDS at a time, other clients served
between slices. Not on a worker thread: creating a log is mostly short system calls, each of which hands the
GIL back, and a thread then waits for the busy loop's switch interval (5 ms) after every one of them (measured:
2,000 logs took 37 s on a thread while clients retried, 3 s on the loop).

Access: the event loop's only.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable

from storage.config import LogConfig
from storage.log_manager import LogManager

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# The longest the loop creates logs before it serves others again (a log costs about 1.5 ms here).
SLICE_SECONDS = 0.02
# The pause between two slices (shared with the renames of deleted logs, pykbroker/metadata_publisher.py): a
# request takes several passes of the loop from its bytes to its answer (read, handler, awaited writes, answer),
# and a bare yield let one pass run between two slices, so each request waited a slice per pass (a CreateTopics
# right after a DeleteTopics of 400 logs: 38-144 ms); a timer lets every pass that is ready run first.
SLICE_GAP_SECONDS = 0.001
# A start_delay batches a burst (thousands of logs) behind the answers that published it; a few logs (a topic of a
# few partitions: well under a slice) start after SMALL_START_DELAY instead, so that a client asking for a new
# partition right after the admin answer finds its log (Kafka 4.4's three nodes: 14-29 ms after the answer).
SMALL_BATCH_LOGS = 8
SMALL_START_DELAY = 0.002


class PendingLogs:
    """Partitions waiting for their log: ``add`` them, and ``on_created`` is called with each slice's partitions
    whose logs now exist, and with those whose log could not be created (and why)."""

    def __init__(self, log_manager: LogManager,
                 on_created: Callable[[list[TopicPartition], list[tuple[TopicPartition, Exception]]], None],
                 slice_seconds: float = SLICE_SECONDS, start_delay: float = 0.0,
                 small_start_delay: float | None = None) -> None:
        """``start_delay``: seconds from the first ``add`` to the first slice (the answer that published the change
        goes out first); with ``small_start_delay`` (SMALL_START_DELAY), that long when no more than
        ``SMALL_BATCH_LOGS`` are pending by then."""
        self.log_manager = log_manager
        self.start_delay = start_delay
        self.small_start_delay = start_delay if small_start_delay is None else min(start_delay, small_start_delay)
        self.on_created = on_created
        self.slice_seconds = slice_seconds
        self._pending: dict[TopicPartition, tuple[uuid.UUID, LogConfig]] = {}
        self._task: asyncio.Task | None = None
        self._progress = asyncio.Event()  # set (and replaced) after every slice
        self.created = 0  # logs created here since the start (a figure for tests and logs)

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, tp: object) -> bool:
        return tp in self._pending

    def add(self, topic: str, partition: int, topic_id: uuid.UUID, config: LogConfig) -> None:
        """Create the log of ``topic-partition`` soon (again with the newest id and config when already pending)."""
        self._pending[(topic, partition)] = (topic_id, config)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    def discard(self, topic: str, partition: int) -> None:
        self._pending.pop((topic, partition), None)

    def discard_topic(self, topic: str) -> None:
        for tp in [tp for tp in self._pending if tp[0] == topic]:
            del self._pending[tp]

    async def _run(self) -> None:
        if self.start_delay:
            await asyncio.sleep(self.small_start_delay)
            if self.small_start_delay < self.start_delay and len(self._pending) > SMALL_BATCH_LOGS:
                await asyncio.sleep(self.start_delay - self.small_start_delay)
        started, total = time.monotonic(), 0
        while self._pending:
            await asyncio.sleep(SLICE_GAP_SECONDS)  # the others first: this runs between their requests
            created, failed = self._create_slice()
            total += len(created)
            self.created += len(created)
            try:
                self.on_created(created, failed)
            except Exception:  # noqa: BLE001 - the remaining logs must still be created
                log.exception("hosting %d newly created logs failed", len(created))
            self._progress.set()
            self._progress = asyncio.Event()
        log.info("created %d logs in the background in %.2f s", total, time.monotonic() - started)

    def _create_slice(self) -> tuple[list[TopicPartition], list[tuple[TopicPartition, Exception]]]:
        """Create pending logs for at most ``slice_seconds`` (at least one)."""
        created: list[TopicPartition] = []
        failed: list[tuple[TopicPartition, Exception]] = []
        end = time.perf_counter() + self.slice_seconds
        while self._pending:
            tp = next(iter(self._pending))
            topic_id, config = self._pending.pop(tp)
            try:
                self.log_manager.get_or_create_log(tp[0], tp[1], topic_id, config)
                created.append(tp)
            except Exception as exc:  # noqa: BLE001 - one partition's failure (its dir offline) is its own
                failed.append((tp, exc))
            if time.perf_counter() >= end:
                break
        return created, failed

    async def wait_for(self, partitions: Iterable[TopicPartition], timeout: float) -> None:
        """Until none of ``partitions`` is pending any more (created and hosted, or dropped), or ``timeout``
        seconds have passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while any(tp in self._pending for tp in partitions):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            try:
                async with asyncio.timeout(remaining):
                    await self._progress.wait()
            except TimeoutError:
                return

    async def close(self) -> None:
        """Stop creating (at shutdown): the partitions still pending are created at the next start, which hosts
        every partition of the metadata."""
        self._pending.clear()
        if self._task is not None:
            try:
                await self._task
            except Exception:  # noqa: BLE001 - logged by the task
                pass
