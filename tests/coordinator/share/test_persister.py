"""The share persister: the local coordinator when this node leads the key's __share_group_state partition, the
state RPCs to the leader otherwise (here a second ShareCoordinator behind a real codec round trip), retries while
the coordinator moves, and errors that end the call."""

import uuid

import pytest

from coordinator.runtime.clock import FakeClock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.log import InMemoryCoordinatorLogs
from coordinator.share.coordinator import ShareCoordinator
from coordinator.share.persister import SharePersister
from coordinator.share.state_batch import StateBatch as B
from tests.coordinator.group.helpers import run
from wire import ErrorCode

TOPIC_ID = uuid.UUID("a4f0f3a2-5b8c-4d2e-9f10-1234567890ab")
KEY = ("g", TOPIC_ID, 0)


class TwoNodes:
    """Node 1 asks, node 2 coordinates every __share_group_state partition: ``leader`` is the leader as node 1's
    metadata has it, ``truth`` as node 2's."""

    def __init__(self) -> None:
        self.leader: int | None = 2
        self.truth: int | None = 2
        self.remote = ShareCoordinator(2, 5, InMemoryCoordinatorLogs(), clock=FakeClock(),
                                       partition_leader=lambda p: self.truth)
        self.local = ShareCoordinator(1, 5, InMemoryCoordinatorLogs(), clock=FakeClock(),
                                      partition_leader=lambda p: self.leader)
        self.sent: list[str] = []
        self.persister = SharePersister(1, self.local, self.send, timeout_ms=2_000, backoff_ms=1)

    async def send(self, node: int, request, version: int, response_class):
        """Node ``node`` serves the request with its handler, through the wire codec both ways."""
        from pykbroker.handlers.share import (
            delete_share_group_state,
            initialize_share_group_state,
            read_share_group_state,
            read_share_group_state_summary,
            write_share_group_state,
        )
        if node != 2:
            raise ConnectionError(f"broker {node} is down")
        self.sent.append(type(request).__name__)
        modules = {"InitializeShareGroupStateRequest": initialize_share_group_state,
                   "ReadShareGroupStateRequest": read_share_group_state,
                   "WriteShareGroupStateRequest": write_share_group_state,
                   "DeleteShareGroupStateRequest": delete_share_group_state,
                   "ReadShareGroupStateSummaryRequest": read_share_group_state_summary}
        module = modules[type(request).__name__]
        decoded = type(request).decode(request.encode(version), version)
        handle = next(getattr(module, n) for n in dir(module) if n.startswith("handle_"))
        response = await handle(_Ctx(self.remote, version), decoded)
        return response_class.decode(response.encode(version), version)


class _Ctx:
    """What the state handlers read from a request context: the service's coordinator, the version, no ACLs."""

    def __init__(self, coordinator, version: int) -> None:
        self.api_version = version
        self.broker = type("B", (), {"authorizer": None,
                                     "share_groups": type("S", (), {"coordinator": coordinator})()})()

    def describe(self) -> str:
        return "test"


@run
async def test_state_kept_by_another_node_through_the_rpcs():
    nodes = TwoNodes()
    p = nodes.persister
    assert await p.read_state(KEY, 0) is None
    await p.initialize_state(KEY, 0, 10)
    await p.write_state(KEY, 0, 3, 10, [B(10, 12, 2, 1), B(13, 13, 0, 2)], 3)
    state = await p.read_state(KEY, 3)
    assert (state.state_epoch, state.start_offset, state.state_batches) == (0, 10, [B(10, 12, 2, 1), B(13, 13, 0, 2)])
    summary = await p.read_summary(KEY)
    assert (summary.start_offset, summary.delivery_complete_count) == (10, 3)
    assert list(await p.states("g", [(TOPIC_ID, 0), (TOPIC_ID, 1)])) == [KEY]
    assert nodes.local.runtime.loaded_partitions() == []  # nothing was written on node 1
    await p.delete_state(KEY)
    assert await p.read_state(KEY, 3) is None  # Kafka 4.4's refusal of a read without state, as no state
    assert set(nodes.sent) == {"InitializeShareGroupStateRequest", "ReadShareGroupStateRequest",
                               "WriteShareGroupStateRequest", "DeleteShareGroupStateRequest",
                               "ReadShareGroupStateSummaryRequest"}
    await nodes.remote.close()
    await nodes.local.close()


@run
async def test_a_fenced_leader_gets_its_error_and_a_moving_coordinator_is_waited_for():
    nodes = TwoNodes()
    p = nodes.persister
    await p.initialize_state(KEY, 0, 0)
    await p.read_state(KEY, 7)  # the partition's new leader, at epoch 7
    with pytest.raises(ApiError) as err:
        await p.write_state(KEY, 0, 6, 0, [B(0, 0, 2, 1)])  # the old one
    assert err.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    # node 2 stopped leading the partition, node 1 does not know yet: NOT_COORDINATOR, retried until the timeout
    nodes.truth = 3
    await nodes.remote.on_resignation(nodes.remote.partition_for(KEY))
    impatient = SharePersister(1, nodes.local, nodes.send, timeout_ms=50, backoff_ms=1)
    sent = len(nodes.sent)
    with pytest.raises(ApiError) as err:
        await impatient.read_state(KEY)
    assert err.value.error_code == ErrorCode.NOT_COORDINATOR and len(nodes.sent) - sent > 1  # asked again
    nodes.leader = 3  # metadata names a broker that is down: COORDINATOR_NOT_AVAILABLE in the end
    with pytest.raises(ApiError) as err:
        await impatient.read_state(KEY)
    assert err.value.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    nodes.truth = nodes.leader = 2  # node 2 leads it again and loads it by replaying its log
    nodes.remote.on_election(nodes.remote.partition_for(KEY))
    state = await p.read_state(KEY, 7)
    assert (state.start_offset, state.state_batches) == (0, [])
    await nodes.remote.close()
    await nodes.local.close()
