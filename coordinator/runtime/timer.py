"""Keyed timeouts of one coordinator shard (Kafka's CoordinatorTimer).

``schedule(key, delay_ms, operation)`` replaces any timeout under ``key``; when it fires, the runtime
runs ``operation()`` as a write operation on the shard's task (its records are appended like a
request's). A timeout that was cancelled or replaced before its turn does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.runtime.clock import Clock, TimerHandle

__all__ = ["CoordinatorTimer"]

Operation = Callable[[], Any]


class CoordinatorTimer:
    def __init__(self, clock: Clock, fire: Callable[[str, int], None]) -> None:
        """``fire(key, token)`` is called by the clock when a timeout is due (it enqueues it)."""
        self._clock = clock
        self._fire = fire
        self._entries: dict[str, tuple[int, TimerHandle, Operation]] = {}
        self._tokens = 0

    def schedule(self, key: str, delay_ms: int, operation: Operation) -> None:
        self.cancel(key)
        self._tokens += 1
        token = self._tokens
        handle = self._clock.call_later(delay_ms, lambda: self._fire(key, token))
        self._entries[key] = (token, handle, operation)

    def schedule_if_absent(self, key: str, delay_ms: int, operation: Operation) -> None:
        if key not in self._entries:
            self.schedule(key, delay_ms, operation)

    def cancel(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            entry[1].cancel()

    def is_scheduled(self, key: str) -> bool:
        return key in self._entries

    def take(self, key: str, token: int) -> Operation | None:
        """The operation of a due timeout, or None if it was cancelled or rescheduled since."""
        entry = self._entries.get(key)
        if entry is None or entry[0] != token:
            return None
        del self._entries[key]
        return entry[2]

    def cancel_all(self) -> None:
        for _, handle, _ in self._entries.values():
            handle.cancel()
        self._entries.clear()

    def keys(self) -> list[str]:
        return list(self._entries)
