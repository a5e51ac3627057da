"""The share coordinator on the coordinator runtime: placement, writes, reads, and reload by replay."""

import uuid

import pytest

from coordinator.runtime.clock import FakeClock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.log import InMemoryCoordinatorLogs
from coordinator.share.coordinator import ShareCoordinator, coordinator_key
from coordinator.share.state_batch import StateBatch as B
from tests.coordinator.group.helpers import run
from wire import ErrorCode

TOPIC_ID = uuid.UUID("a4f0f3a2-5b8c-4d2e-9f10-1234567890ab")


def test_the_coordinator_key_and_partition_are_kafkas():
    c = ShareCoordinator(1, 50, InMemoryCoordinatorLogs())
    key = ("g", TOPIC_ID, 3)
    assert coordinator_key(key) == "g:pPDzoluMTS6fEBI0VniQqw:3"
    assert 0 <= c.partition_for(key) < 50


@run
async def test_state_survives_a_new_coordinator_replaying_the_logs():
    logs = InMemoryCoordinatorLogs()
    c = ShareCoordinator(1, 5, logs, clock=FakeClock(), snapshot_every=3)
    key = ("g", TOPIC_ID, 0)
    assert await c.read_state(key) is None
    await c.initialize_state(key, 0, 100)
    for i in range(5):
        await c.write_state(key, 0, 0, 100 + i, [B(100 + i, 100 + i, 2, 1), B(110, 110, 0, i + 1)])
    state = await c.read_state(key)
    assert state.start_offset == 104 and state.state_batches == [B(104, 104, 2, 1), B(110, 110, 0, 5)]
    await c.close()
    again = ShareCoordinator(1, 5, logs, clock=FakeClock(), snapshot_every=3)
    reloaded = await again.read_state(key)
    assert (reloaded.start_offset, reloaded.state_batches) == (state.start_offset, state.state_batches)
    assert list(await again.all_states("g")) == [key]
    await again.delete_state(key)
    assert await again.read_state(key) is None
    await again.close()


@run
async def test_a_partition_is_loaded_once_this_broker_hosts_it_as_leader():
    """The image names this broker the leader of every partition, but the replica manager leads none yet (their logs
    are still being created, as just after the topic's creation in a cluster): nothing is loaded (it failed, 'not
    hosted here', and was retried on every request) and a request answers NOT_COORDINATOR; the election loads."""
    hosted: set[int] = set()
    c = ShareCoordinator(1, 5, InMemoryCoordinatorLogs(), clock=FakeClock(), partition_hosted=hosted.__contains__)
    key = ("g", TOPIC_ID, 0)
    partition = c.partition_for(key)
    c.load_all()
    assert c.runtime.hosted_partitions() == []
    with pytest.raises(ApiError) as refused:
        await c.read_state(key)
    assert refused.value.error_code == ErrorCode.NOT_COORDINATOR and c.runtime.hosted_partitions() == []
    hosted.add(partition)
    c.on_election(partition)
    await c.initialize_state(key, 0, 100)
    assert (await c.read_state(key)).start_offset == 100
    await c.close()
