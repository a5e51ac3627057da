"""The runtime: append failures, loading from a log, unknown records, leadership."""

from __future__ import annotations

import asyncio
import struct

from coordinator.runtime.errors import CoordinatorLogError
from coordinator.runtime.log import InMemoryCoordinatorLog
from tests.coordinator.group.helpers import Harness, info, run, types
from tests.coordinator.group.test_offsets import codes, commit, fetched
from wire import ErrorCode


@run
async def test_failed_append_changes_nothing_and_maps_the_error():
    h = Harness()
    c = h.coordinator
    await h.settle()
    log = h.logs(c.partition_for("g"))
    log.fail_next_append = CoordinatorLogError(ErrorCode.NOT_ENOUGH_REPLICAS)
    r = await c.commit_offsets(info(9), commit("g", {("a", 0): 1}))
    assert codes(r) == {("a", 0): ErrorCode.COORDINATOR_NOT_AVAILABLE}
    assert await fetched(h, "g") == {}
    log.fail_next_append = CoordinatorLogError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    r = await c.commit_offsets(info(9), commit("g", {("a", 0): 1}))
    assert codes(r) == {("a", 0): ErrorCode.NOT_COORDINATOR}
    r = await c.commit_offsets(info(9), commit("g", {("a", 0): 2}))
    assert codes(r) == {("a", 0): 0}
    assert (await fetched(h, "g"))[("a", 0)][0] == 2


@run
async def test_load_skips_unknown_record_types_and_keeps_the_rest():
    h = Harness()
    c = h.coordinator
    await c.commit_offsets(info(9), commit("g", {("a", 0): 3}))
    log = h.logs(c.partition_for("g"))
    # A share-group record (type 11) left by a newer broker, and garbage.
    log.entries.append((log.log_end_offset, struct.pack(">hh", 11, 1) + b"g", b"\x00\x00"))
    log.entries.append((log.log_end_offset, b"\x00", None))
    other = await h.replayed()
    assert (await fetched(other, "g"))[("a", 0)][0] == 3


@run
async def test_batches_are_one_per_operation():
    h = Harness()
    c = h.coordinator
    await c.commit_offsets(info(9), commit("g", {("a", 0): 1, ("a", 1): 2}))
    log = h.logs(c.partition_for("g"))
    assert [len(b) for b in log.batches] == [2]
    assert types(h.records("g")) == ["OffsetCommit", "OffsetCommit"]


@run
async def test_groups_led_elsewhere_get_not_coordinator():
    from coordinator.group import FakeClock, GroupCoordinator, InMemoryCoordinatorLogs, StaticTopics
    from tests.coordinator.group.helpers import CONFIG
    c = GroupCoordinator(CONFIG, node_id=1, topics=StaticTopics(), log_factory=InMemoryCoordinatorLogs(),
                         clock=FakeClock(), partition_leader=lambda p: 2)
    r = await c.commit_offsets(info(9), commit("g", {("a", 0): 1}))
    assert codes(r) == {("a", 0): ErrorCode.NOT_COORDINATOR}
    assert c.coordinator_for("g") == 2
    await c.close()


class GatedLog(InMemoryCoordinatorLog):
    """A log whose appends wait until the gate opens, as an acks=all append waits for the followers."""

    def __init__(self, appending: asyncio.Event) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.appending = appending

    async def append(self, records, *, producer_id: int = -1, producer_epoch: int = -1) -> int:
        self.appending.set()
        await self.gate.wait()
        return await super().append(records, producer_id=producer_id, producer_epoch=producer_epoch)


@run
async def test_unload_takes_effect_at_once_and_fails_the_operations_in_flight_and_queued():
    from coordinator.group import FakeClock, GroupCoordinator, StaticTopics
    from tests.coordinator.group.helpers import CONFIG, TOPIC_A
    logs: dict[int, GatedLog] = {}
    appending = asyncio.Event()
    c = GroupCoordinator(CONFIG, node_id=1, topics=StaticTopics([TOPIC_A]), clock=FakeClock(),
                         log_factory=lambda p: logs.setdefault(p, GatedLog(appending)))
    partition = c.partition_for("g")
    in_flight = asyncio.ensure_future(c.commit_offsets(info(9), commit("g", {("a", 0): 1})))
    await appending.wait()  # the commit waits in its append
    queued = c.runtime.submit(partition, lambda shard: None)
    stopped = c.runtime.unload(partition)
    assert not c.runtime.is_loaded(partition) and partition not in c.runtime.hosted_partitions()
    await stopped
    assert codes(await in_flight) == {("a", 0): ErrorCode.NOT_COORDINATOR}
    assert queued.exception().error_code == ErrorCode.NOT_COORDINATOR
    # Led here again: the next request loads the partition and is served.
    logs[partition].gate.set()
    assert codes(await c.commit_offsets(info(9), commit("g", {("a", 0): 2}))) == {("a", 0): ErrorCode.NONE}
    assert c.runtime.is_loaded(partition)
    await c.close()


class FlakyLog(InMemoryCoordinatorLog):
    """A log whose first read fails, as when the partition is not hosted yet."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read_all(self):
        self.reads += 1
        if self.reads == 1:
            raise CoordinatorLogError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return super().read_all()


@run
async def test_a_failed_load_answers_coordinator_not_available_and_is_started_again():
    from coordinator.group import FakeClock, GroupCoordinator, StaticTopics
    from tests.coordinator.group.helpers import CONFIG, TOPIC_A
    logs: dict[int, FlakyLog] = {}
    c = GroupCoordinator(CONFIG, node_id=1, topics=StaticTopics([TOPIC_A]), clock=FakeClock(),
                         log_factory=lambda p: logs.setdefault(p, FlakyLog()))
    partition = c.partition_for("g")
    c.runtime.load(partition)
    await c.runtime.settle()
    assert not c.runtime.is_loaded(partition) and logs[partition].reads == 1
    # The next request starts the load again, and is served once it is done.
    assert codes(await c.commit_offsets(info(9), commit("g", {("a", 0): 1}))) == {("a", 0): ErrorCode.NONE}
    assert c.runtime.is_loaded(partition) and logs[partition].reads == 2
    await c.close()
