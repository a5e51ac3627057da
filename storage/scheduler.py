"""Background work of the storage layer, off the event loop (Kafka's KafkaScheduler, one thread).

Runs fsyncs, delayed file deletions, retention checks and checkpoint writes, one task at a time in
submission order among tasks due at the same time (so a leader-epoch checkpoint queued before a flush
is on disk before the recovery point moves past it). Thread-safe: ``schedule_once`` may be called from
any thread. A task that raises is logged and does not stop the thread.

``InlineScheduler`` runs everything at once on the caller's thread (delays ignored): what a log without
a log manager (tests, tools) uses, so its effects are immediate and deterministic.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger("storage.scheduler")

__all__ = ["InlineScheduler", "Scheduler"]


class InlineScheduler:
    """Runs every task immediately on the calling thread."""

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> None:
        fn()

    def schedule_periodic(self, name: str, fn: Callable[[], object], delay_ms: int, period_ms: int) -> None:
        raise NotImplementedError("periodic tasks need a Scheduler thread")

    def is_on_thread(self) -> bool:
        return True


class Scheduler:
    """One daemon thread running one-off and periodic tasks by due time (monotonic clock)."""

    def __init__(self, name: str = "kafka-scheduler") -> None:
        self.name = name
        self._heap: list[tuple[float, int, str, Callable[[], object], float | None]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                return
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def is_on_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def schedule_once(self, name: str, fn: Callable[[], object], delay_ms: int = 0) -> None:
        self._push(time.monotonic() + max(0, delay_ms) / 1000, name, fn, None)

    def schedule_periodic(self, name: str, fn: Callable[[], object], delay_ms: int, period_ms: int) -> None:
        self._push(time.monotonic() + max(0, delay_ms) / 1000, name, fn, max(1, period_ms) / 1000)

    def _push(self, due: float, name: str, fn: Callable[[], object], period: float | None) -> None:
        with self._cond:
            if self._stopping:
                log.debug("scheduler %s is stopping; dropped task %s", self.name, name)
                return
            heapq.heappush(self._heap, (due, next(self._seq), name, fn, period))
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    if self._stopping:
                        return
                    if self._heap:
                        wait = self._heap[0][0] - time.monotonic()
                        if wait <= 0:
                            due, _, name, fn, period = heapq.heappop(self._heap)
                            break
                        self._cond.wait(wait)
                    else:
                        self._cond.wait()
            try:
                fn()
            except Exception:
                log.exception("Uncaught exception in scheduled task '%s'", name)
            if period is not None:
                self._push(max(due + period, time.monotonic()), name, fn, period)

    def run_pending(self) -> None:
        """Run, on the calling thread, every one-off task already due (shutdown drains with this), in
        (due time, submission) order; tasks they schedule meanwhile run too if due. One sort per round,
        not a scan of the heap per task: a broker with thousands of partitions stops with thousands queued."""
        now = time.monotonic()
        while True:
            with self._cond:
                ready = sorted(t for t in self._heap if t[0] <= now and t[4] is None)
                if not ready:
                    return
                self._heap = [t for t in self._heap if not (t[0] <= now and t[4] is None)]
                heapq.heapify(self._heap)
            for item in ready:
                try:
                    item[3]()
                except Exception:
                    log.exception("Uncaught exception in scheduled task '%s'", item[2])

    def shutdown(self, drain: bool = True) -> None:
        """Stop the thread after the running task; with ``drain``, run the one-off tasks already due."""
        with self._cond:
            thread = self._thread
            self._stopping = True
            self._cond.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        if drain:
            self.run_pending()
        with self._cond:
            self._heap.clear()
            self._thread = None
