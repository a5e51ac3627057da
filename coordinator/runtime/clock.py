"""Time for the coordinator, injected: wall-clock milliseconds and one-shot callbacks.

The coordinator reads time only through a ``Clock`` and schedules timeouts only through
``Clock.call_later``, so tests drive it with a ``FakeClock`` (``advance(ms)`` fires what is due, in
deadline order) and never sleep.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "FakeClock", "SystemClock", "TimerHandle"]


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the epoch (commit timestamps and state timestamps use it)."""
        ...

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        """Call ``callback`` once, ``delay_ms`` from now, on the event loop."""
        ...


class SystemClock:
    """Wall-clock time; callbacks through the running event loop."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0, delay_ms) / 1000.0, callback)


class _FakeHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that moves only when told to; ``advance`` runs due callbacks synchronously.

    A callback with no delay runs on the next event-loop iteration, as it would with a real clock.
    """

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now = now_ms
        self._heap: list[tuple[int, int, _FakeHandle, Callable[[], None]]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> TimerHandle:
        if delay_ms <= 0:
            # Due now: runs on the next loop iteration, as with a real clock.
            return asyncio.get_running_loop().call_soon(callback)
        handle = _FakeHandle()
        heapq.heappush(self._heap, (self._now + max(0, delay_ms), next(self._seq), handle, callback))
        return handle

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``, firing every callback that falls due on the way."""
        target = self._now + ms
        while self._heap and self._heap[0][0] <= target:
            deadline, _, handle, callback = heapq.heappop(self._heap)
            if handle.cancelled:
                continue
            self._now = max(self._now, deadline)
            callback()
        self._now = target

    def next_deadline(self) -> int | None:
        """When the earliest pending callback is due (None if there is none)."""
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def pending(self) -> int:
        """Callbacks scheduled and not cancelled (for tests)."""
        return sum(1 for _, _, h, _ in self._heap if not h.cancelled)
