"""The runtime: append failures, loading from a log, unknown records, leadership."""

from __future__ import annotations

import struct

from coordinator.runtime.errors import CoordinatorLogError
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
