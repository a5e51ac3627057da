"""The runtime's pipelined writes (Kafka's CoordinatorRuntime): an operation's records are applied and written at
once, the next operation runs at once, and answers are held until the high watermark passes their records."""

from __future__ import annotations

import asyncio

from coordinator.runtime.errors import CoordinatorLogError
from coordinator.runtime.log import InMemoryCoordinatorLog, InMemoryCoordinatorLogs
from tests.coordinator.group.helpers import Harness, info, run
from tests.coordinator.group.test_offsets import codes, commit, fetched
from wire import ErrorCode


class HeldLog(InMemoryCoordinatorLog):
    """A log whose writes are committed only when the test moves its high watermark (or fails them), as the
    followers of a replicated partition would."""

    def __init__(self) -> None:
        super().__init__()
        self.high_watermark = 0
        self.failure: Exception | None = None
        self._waiters: list[asyncio.Future[None]] = []

    async def write(self, records, *, producer_id: int = -1, producer_epoch: int = -1):
        last = await self.append(records, producer_id=producer_id, producer_epoch=producer_epoch)
        return last, self._waiting_for(last)

    async def write_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, *,
                           transaction_version: int = 0):
        offset = await self.append_marker(producer_id, producer_epoch, coordinator_epoch, commit)
        return offset, self._waiting_for(offset)

    def _waiting_for(self, last: int):
        async def wait_committed() -> None:
            while self.high_watermark <= last:
                if self.failure is not None:
                    raise self.failure
                waiter = asyncio.get_running_loop().create_future()
                self._waiters.append(waiter)
                await waiter
        return wait_committed

    def commit(self, up_to: int | None = None) -> None:
        """Move the high watermark to ``up_to`` (default: the log end)."""
        self.high_watermark = self.log_end_offset if up_to is None else up_to
        self._wake()

    def fail(self, exc: Exception) -> None:
        self.failure = exc
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)


class HeldLogs(InMemoryCoordinatorLogs):
    def __call__(self, partition: int) -> HeldLog:
        log = self.logs.get(partition)
        if log is None:
            log = self.logs[partition] = HeldLog()
        assert isinstance(log, HeldLog)
        return log


async def until(condition, rounds: int = 1000) -> None:
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def idle(rounds: int = 50) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def loaded_harness() -> tuple[Harness, HeldLog]:
    h = Harness(logs=HeldLogs())
    await h.settle()
    return h, h.logs(h.coordinator.partition_for("g"))


def offset_now(h: Harness, group_id: str = "g") -> int | None:
    """The latest (not necessarily committed) offset of a-0 in the shard's state."""
    topics = h.shard(group_id).fetch_offsets(group_id, None, None, -1)
    return next((p.committed_offset for t in topics for p in t.partitions), None)


@run
async def test_writes_are_applied_at_once_and_answered_in_order_once_committed():
    h, log = await loaded_harness()
    c = h.coordinator
    answered: list[int] = []
    first = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 1})))
    second = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 2})))
    first.add_done_callback(lambda _: answered.append(1))
    second.add_done_callback(lambda _: answered.append(2))
    # Both are written and applied without waiting for the first one's replication.
    await until(lambda: log.log_end_offset == 2)
    assert offset_now(h) == 2 and [len(b) for b in log.batches] == [1, 1]
    await idle()
    assert not first.done() and not second.done()
    log.commit(up_to=1)  # the first batch is replicated
    await until(first.done)
    await idle()
    assert codes(first.result()) == {("a", 0): ErrorCode.NONE} and not second.done()
    log.commit()
    assert codes(await second) == {("a", 0): ErrorCode.NONE}
    assert answered == [1, 2]
    assert (await fetched(h, "g"))[("a", 0)][0] == 2


@run
async def test_reads_and_operations_without_records_are_answered_once_what_they_saw_is_committed():
    h, log = await loaded_harness()
    c = h.coordinator
    # Nothing written yet: answered at once.
    assert await fetched(h, "g") == {}
    writing = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 7})))
    await until(lambda: log.log_end_offset == 1)
    read = asyncio.ensure_future(fetched(h, "g"))  # OffsetFetch: a read
    stable = asyncio.ensure_future(fetched(h, "g", require_stable=True))  # a write of no records
    nothing = h.runtime.submit(c.partition_for("g"), lambda shard: None)
    await idle()
    assert not read.done() and not stable.done() and not nothing.done()
    log.commit()
    assert (await read)[("a", 0)][0] == 7 and (await stable)[("a", 0)][0] == 7
    await nothing
    assert codes(await writing) == {("a", 0): ErrorCode.NONE}


@run
async def test_a_failed_commit_fails_every_held_answer_and_reloads_the_shard_from_the_log():
    h, log = await loaded_harness()
    c = h.coordinator
    first = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 1})))
    second = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 2})))
    await until(lambda: log.log_end_offset == 2)
    read = asyncio.ensure_future(fetched(h, "g"))
    before = h.shard("g")
    log.fail(CoordinatorLogError(ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert codes(await first) == {("a", 0): ErrorCode.NOT_COORDINATOR}
    assert codes(await second) == {("a", 0): ErrorCode.NOT_COORDINATOR}
    # The shard is replayed from the log: what the leader wrote is there, as Kafka's coordinator keeps it.
    log.failure = None
    log.commit()
    assert (await read)[("a", 0)][0] == 2  # read again on the reloaded shard
    assert h.shard("g") is not before and offset_now(h) == 2
    third = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 3})))
    await until(lambda: log.log_end_offset == 3)
    log.commit()
    assert codes(await third) == {("a", 0): ErrorCode.NONE}
    assert (await fetched(h, "g"))[("a", 0)][0] == 3


@run
async def test_a_failed_leader_write_changes_nothing_and_keeps_the_pipeline():
    h, log = await loaded_harness()
    c = h.coordinator
    first = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 1})))
    await until(lambda: log.log_end_offset == 1)
    log.fail_next_append = CoordinatorLogError(ErrorCode.NOT_ENOUGH_REPLICAS)
    refused = await c.commit_offsets(info(9), commit("g", {("a", 0): 2}))
    assert codes(refused) == {("a", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert offset_now(h) == 1 and not first.done()
    log.commit()
    assert codes(await first) == {("a", 0): ErrorCode.NONE}


@run
async def test_unloading_fails_the_held_answers_and_the_waiting_reads_with_not_coordinator():
    h, log = await loaded_harness()
    c = h.coordinator
    partition = c.partition_for("g")
    held = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 1})))
    await until(lambda: log.log_end_offset == 1)
    read = asyncio.ensure_future(h.runtime.read(partition, lambda shard: "seen"))
    await idle()
    await h.runtime.unload(partition)
    assert codes(await held) == {("a", 0): ErrorCode.NOT_COORDINATOR}
    try:
        await read
        raise AssertionError("the read was answered")
    except Exception as exc:
        assert getattr(exc, "error_code", None) == ErrorCode.NOT_COORDINATOR
    await c.close()


@run
async def test_transaction_markers_are_pipelined_too():
    h, log = await loaded_harness()
    c = h.coordinator
    partition = c.partition_for("g")
    marker = asyncio.ensure_future(h.runtime.complete_transaction(partition, 42, 0, 0, True))
    after = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 5})))
    await until(lambda: log.log_end_offset == 2)  # the marker and the next commit are both written
    assert log.entries[0][1:] == (None, None, 42, True)
    await idle()
    assert not marker.done() and not after.done()
    log.commit()
    await marker
    assert codes(await after) == {("a", 0): ErrorCode.NONE}
