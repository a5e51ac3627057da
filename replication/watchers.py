"""Delayed operations: futures that wait for a partition to change, woken by appends and offset moves.

A long-poll fetch or an acks=all produce registers one future under every partition it cares about and
awaits it with its timeout; an append (or high-watermark / last-stable-offset move) on a partition
completes every future registered there. No polling, no sleep loops.

A follower's fetch reads up to the log end, so a move of the high watermark (or a share-partition's released
records) gives it nothing to read: it waits as a follower (``wait(..., follower=True)``) and is woken by
``notify`` (appends, leadership and replica changes) but not by ``notify_except_followers``, as Kafka's delayed
follower fetch completes only on new data, its own bytes, or a partition's leadership or state moving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Container, Hashable, Iterable, Sequence

__all__ = ["PartitionWatchers"]


class PartitionWatchers:
    """Futures keyed by partition. Event-loop only."""

    def __init__(self) -> None:
        self._waiters: dict[Hashable, set[asyncio.Future[bool]]] = {}
        self.woken = 0  # waiters woken so far: a caller compares it before and after a change
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of the last watch
        self._followers: set[asyncio.Future[bool]] = set()  # the futures of followers' fetches

    def watch(self, keys: Iterable[Hashable], follower: bool = False) -> asyncio.Future[bool]:
        """A future completed (True) by the next ``notify`` of any of ``keys`` (and, unless ``follower``, by the
        next ``notify_except_followers``)."""
        loop = self._loop
        if loop is None or not loop.is_running():  # each get_running_loop() costs a getpid() syscall
            loop = self._loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        for key in keys:
            self._waiters.setdefault(key, set()).add(fut)
        if follower:
            self._followers.add(fut)
        return fut

    def unwatch(self, fut: asyncio.Future[bool], keys: Iterable[Hashable]) -> None:
        if self._followers:
            self._followers.discard(fut)
        for key in keys:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(fut)
                if not waiters:
                    del self._waiters[key]

    def notify(self, key: Hashable) -> None:
        """Wake everything waiting on ``key``."""
        waiters = self._waiters.pop(key, None)
        if waiters:
            self.woken += len(waiters)
            for fut in waiters:
                if not fut.done():
                    fut.set_result(True)

    def notify_except_followers(self, key: Hashable) -> None:
        """Wake everything waiting on ``key`` but followers' fetches: what moved (a high watermark, records a
        share-partition released) is below the log end they read to."""
        waiters = self._waiters.get(key)
        if not waiters:
            return
        followers = self._followers
        if followers and not waiters.isdisjoint(followers):
            woken = waiters - followers
            if not woken:
                return
            waiters -= woken
        else:  # what notify does, inline: this is on every acks=all produce's path
            woken = self._waiters.pop(key)
        self.woken += len(woken)
        for fut in woken:
            if not fut.done():
                fut.set_result(True)

    def notify_all(self) -> None:
        """Wake everything waiting on any key."""
        for key in list(self._waiters):
            self.notify(key)

    def waiting(self, key: Hashable) -> int:
        return len(self._waiters.get(key, ()))

    def keys(self) -> Container[Hashable]:
        """The keys something waits on now (a live view: ``key in keys()``)."""
        return self._waiters.keys()

    async def wait(self, keys: Sequence[Hashable], timeout: float, follower: bool = False) -> bool:
        """Wait up to ``timeout`` seconds for any of ``keys`` to change; True if one did. ``follower``: a
        follower's fetch, which ``notify_except_followers`` leaves waiting.

        The timer completes the future itself (False) rather than cancelling the task as asyncio.timeout
        would: a wake-up costs no exception, and no look-ups of the running loop and task (a getpid each).
        """
        if timeout <= 0:
            return False
        fut = self.watch(keys, follower)
        timer = fut.get_loop().call_later(timeout, _expire, fut)
        try:
            return await fut
        finally:
            timer.cancel()
            self.unwatch(fut, keys)


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)
