"""Delayed-operation watchers wake on notify and time out without polling."""

from __future__ import annotations

import asyncio

import pytest

from replication.watchers import PartitionWatchers


def test_notify_wakes_a_waiter_registered_on_several_keys():
    async def main():
        w = PartitionWatchers()
        waiter = asyncio.create_task(w.wait([("t", 0), ("t", 1)], timeout=5))
        await asyncio.sleep(0)
        assert w.waiting(("t", 1)) == 1
        w.notify(("t", 1))
        assert await waiter is True
        # the waiter unregistered itself from every key
        assert w.waiting(("t", 0)) == 0 and w.waiting(("t", 1)) == 0

    asyncio.run(main())


def test_timeout_returns_false_and_cleans_up():
    async def main():
        w = PartitionWatchers()
        assert await w.wait([("t", 0)], timeout=0.01) is False
        assert w.waiting(("t", 0)) == 0
        assert await w.wait([("t", 0)], timeout=0) is False

    asyncio.run(main())


def test_notify_without_waiters_is_harmless():
    w = PartitionWatchers()
    w.notify(("nobody", 0))


def test_a_waiter_cancelled_as_it_is_notified_stays_cancelled():
    """A cancel that arrives with the wake-up is not swallowed (Python 3.11's wait_for returned instead, so a
    cancelled task ran on)."""
    async def main():
        w = PartitionWatchers()
        waiter = asyncio.create_task(w.wait([("t", 0)], timeout=5))
        await asyncio.sleep(0)
        w.notify(("t", 0))
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert w.waiting(("t", 0)) == 0

    asyncio.run(main())


def test_a_followers_fetch_is_woken_by_appends_not_by_moves_below_the_log_end():
    """notify_except_followers (a high watermark moved, a share-partition released records) wakes consumers and
    produces waiting on the key and leaves a follower's fetch waiting, which notify (an append) then wakes."""
    async def main():
        w = PartitionWatchers()
        follower = asyncio.create_task(w.wait([("t", 0), ("t", 1)], timeout=5, follower=True))
        consumer = asyncio.create_task(w.wait([("t", 0)], timeout=5))
        await asyncio.sleep(0)
        woken = w.woken
        w.notify_except_followers(("t", 0))
        assert await consumer is True and w.woken == woken + 1
        await asyncio.sleep(0)
        assert not follower.done() and w.waiting(("t", 0)) == 1
        w.notify_except_followers(("t", 1))  # only the follower waits there
        await asyncio.sleep(0)
        assert not follower.done() and w.woken == woken + 1
        w.notify(("t", 1))
        assert await follower is True
        assert w.waiting(("t", 0)) == 0 and w.waiting(("t", 1)) == 0 and not w._followers

    asyncio.run(main())
