"""PendingLogs: logs created in slices between the loop's other work, waiters woken as their partitions get one."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from replication.pending_logs import SMALL_BATCH_LOGS, SMALL_START_DELAY, PendingLogs
from storage import LogConfig, LogManager


@pytest.fixture
def log_manager(tmp_path):
    m = LogManager([str(tmp_path / "logs")], log_cleaner_enable=False)
    m.startup()
    yield m
    m.shutdown()


def test_logs_are_created_in_slices_and_reported(log_manager):
    topic_id = uuid.uuid4()
    slices: list[list[tuple[str, int]]] = []

    async def run() -> None:
        pending = PendingLogs(log_manager, lambda created, failed: slices.append(created), slice_seconds=0.0)
        for p in range(5):
            pending.add("orders", p, topic_id, LogConfig())
        assert len(pending) == 5 and ("orders", 4) in pending
        await pending.wait_for([("orders", 4)], timeout=30)
        assert not pending and pending.created == 5

    asyncio.run(run())
    assert slices == [[("orders", p)] for p in range(5)]  # a zero-length slice still creates one log
    assert all(log_manager.get_log("orders", p).topic_id == topic_id for p in range(5))


def test_a_waiter_is_woken_by_its_partitions_not_by_the_rest(log_manager):
    async def run() -> None:
        hosted: set[tuple[str, int]] = set()
        pending = PendingLogs(log_manager, lambda created, failed: hosted.update(created), slice_seconds=0.0)
        for p in range(20):
            pending.add("orders", p, uuid.uuid4(), LogConfig())
        await pending.wait_for([("orders", 2)], timeout=30)
        assert ("orders", 2) in hosted and len(pending) > 0  # returned before the last slices were created
        started = asyncio.get_running_loop().time()
        await pending.wait_for([("orders", 19), ("elsewhere", 0)], timeout=30)  # never-pending ones do not hold it
        assert asyncio.get_running_loop().time() - started < 30 and ("orders", 19) in hosted

    asyncio.run(run())


def test_wait_for_gives_up_after_its_timeout(log_manager):
    async def run() -> None:
        pending = PendingLogs(log_manager, lambda created, failed: None)
        pending.add("orders", 0, uuid.uuid4(), LogConfig())
        task = pending._task  # noqa: SLF001 - a creation that never ends
        assert task is not None
        task.cancel()
        await pending.wait_for([("orders", 0)], timeout=0.05)
        assert ("orders", 0) in pending

    asyncio.run(run())


def test_discarded_partitions_are_not_created(log_manager):
    created: list[tuple[str, int]] = []

    async def run() -> None:
        pending = PendingLogs(log_manager, lambda c, failed: created.extend(c))
        pending.add("gone", 0, uuid.uuid4(), LogConfig())
        pending.add("gone", 1, uuid.uuid4(), LogConfig())
        pending.add("moved", 0, uuid.uuid4(), LogConfig())
        pending.add("kept", 0, uuid.uuid4(), LogConfig())
        pending.discard_topic("gone")
        pending.discard("moved", 0)
        await pending.wait_for([("kept", 0)], timeout=30)

    asyncio.run(run())
    assert created == [("kept", 0)]
    assert log_manager.get_log("gone", 0) is None and log_manager.get_log("moved", 0) is None


def test_a_log_that_cannot_be_created_is_reported_failed(tmp_path):
    """Its log dir goes offline (as Kafka's); the next log is created in the other dir."""
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    log_manager = LogManager([str(d) for d in dirs], log_cleaner_enable=False)
    log_manager.startup()
    failures: list[tuple[tuple[str, int], Exception]] = []
    created: list[tuple[str, int]] = []

    def on_created(c: list[tuple[str, int]], failed: list[tuple[tuple[str, int], Exception]]) -> None:
        created.extend(c)
        failures.extend(failed)

    async def run() -> None:
        pending = PendingLogs(log_manager, on_created)
        (dirs[0] / "blocked-0").write_text("a file where the log's directory should be")
        pending.add("blocked", 0, uuid.uuid4(), LogConfig())
        pending.add("fine", 0, uuid.uuid4(), LogConfig())
        await pending.wait_for([("blocked", 0), ("fine", 0)], timeout=30)
        assert log_manager.get_log("fine", 0).parent_dir == str(dirs[1])

    try:
        asyncio.run(run())
    finally:
        log_manager.shutdown()
    assert created == [("fine", 0)]
    assert [tp for tp, _ in failures] == [("blocked", 0)]


def test_a_few_logs_start_at_once_a_burst_waits_for_the_start_delay(log_manager):
    async def run() -> None:
        loop = asyncio.get_running_loop()
        few = PendingLogs(log_manager, lambda created, failed: None, start_delay=5.0,
                         small_start_delay=SMALL_START_DELAY)
        started = loop.time()
        for p in range(SMALL_BATCH_LOGS):
            few.add("few", p, uuid.uuid4(), LogConfig())
        await few.wait_for([("few", p) for p in range(SMALL_BATCH_LOGS)], timeout=5.0)
        assert not few and loop.time() - started < 4.0  # a new topic's partitions serve soon after the answer
        burst = PendingLogs(log_manager, lambda created, failed: None, start_delay=0.5,
                           small_start_delay=SMALL_START_DELAY)
        started = loop.time()
        for p in range(SMALL_BATCH_LOGS + 1):
            burst.add("burst", p, uuid.uuid4(), LogConfig())
        await burst.wait_for([("burst", 0)], timeout=5.0)
        assert loop.time() - started >= 0.5  # batched behind the answers that published it

    asyncio.run(run())
