"""Requests in flight across all connections, bounded as Kafka bounds them.

- ``queued.max.requests``: requests read but not yet being handled. Kafka's network threads block when
  its request queue is full; here a connection that reads while the queue is full stops reading
  (its socket is paused) until a queued request is taken.
- ``queued.max.request.bytes``: bytes of requests in memory, read and not yet answered (Kafka's
  SimpleMemoryPool, non-strict: an allocation succeeds while any memory is left, so the pool can go
  over by at most one request). A connection whose next request does not fit stops reading, its frame
  unallocated, until memory is released. -1 (Kafka's default) or 0: no pool.

Both wake the waiting connections in the order they started waiting. Lives on the event loop; no locks.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

log = logging.getLogger("pykbroker.request_channel")


class MemoryPool:
    """Request bytes in memory: ``try_allocate`` before a frame's buffer exists, ``release`` once answered."""

    __slots__ = ("capacity", "available", "_waiters", "peak_used", "denied")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.available = capacity
        self._waiters: deque[Callable[[], None]] = deque()
        self.peak_used = 0
        self.denied = 0  # allocations refused (for tests and the logs)

    @property
    def bounded(self) -> bool:
        return self.capacity > 0

    @property
    def used(self) -> int:
        return self.capacity - self.available

    def try_allocate(self, size: int) -> bool:
        if self.available <= 0:
            self.denied += 1
            return False
        self.available -= size
        if self.used > self.peak_used:
            self.peak_used = self.used
        return True

    def release(self, size: int) -> None:
        self.available += size
        while self._waiters and self.available > 0:
            self._waiters.popleft()()

    def wait(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once memory is released (it tries again, and waits again if it must)."""
        self._waiters.append(callback)


class RequestChannel:
    """The queue of requests read and not yet being handled, and the memory pool of their bytes."""

    __slots__ = ("queued_max_requests", "queued", "memory_pool", "_waiters")

    def __init__(self, queued_max_requests: int, queued_max_request_bytes: int) -> None:
        self.queued_max_requests = queued_max_requests
        self.queued = 0
        self.memory_pool = MemoryPool(queued_max_request_bytes)
        self._waiters: deque[Callable[[], None]] = deque()

    @property
    def full(self) -> bool:
        return self.queued >= self.queued_max_requests

    def enqueue(self) -> None:
        self.queued += 1

    def dequeue(self, n: int = 1) -> None:
        """``n`` queued requests were taken (or dropped with their connection): wake a waiting reader."""
        self.queued -= n
        if self._waiters:  # (the common case, nobody waiting, costs one test per request)
            while self._waiters and self.queued < self.queued_max_requests:
                self._waiters.popleft()()

    def wait(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the queue has room."""
        self._waiters.append(callback)
