"""The share coordinator: share-partition state persisted in ``__share_group_state`` (KIP-932).

Kafka's ShareCoordinatorService in one process: each __share_group_state partition this node leads is a
``ShareCoordinatorShard`` on the coordinator runtime (single-writer task, records appended through the
replica manager, state = replay of the partition). A share-partition's key ``groupId:topicId:partition``
picks the partition as Kafka does (``Utils.abs(key.hashCode()) % share.coordinator.state.topic.num.partitions``).
The broker's share-partition manager calls ``read_state`` / ``write_state`` / ``initialize_state`` /
``delete_state`` directly (on a single node the Read/WriteShareGroupState RPCs would go to itself).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from coordinator.runtime.clock import Clock, SystemClock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.log import CoordinatorLogFactory
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.runtime.timer import CoordinatorTimer
from coordinator.share.records import SHARE_GROUP_STATE_TOPIC_NAME, decode_record
from coordinator.share.shard import ShareCoordinatorShard, ShareGroupOffset, SharePartitionKey, uninitialized
from coordinator.share.state_batch import StateBatch
from storage.checkpoints import topic_id_to_string
from wire import ErrorCode, java

__all__ = ["ShareCoordinator", "coordinator_key"]

log = logging.getLogger("pykbroker.coordinator.share")


def coordinator_key(key: SharePartitionKey) -> str:
    """Kafka's SharePartitionKey.asCoordinatorKey(): ``groupId:topicId:partition``."""
    return f"{key[0]}:{topic_id_to_string(key[1])}:{key[2]}"


class ShareCoordinator:
    def __init__(self, node_id: int, num_partitions: int, log_factory: CoordinatorLogFactory, *,
                 clock: Clock | None = None, snapshot_every: int = 500,
                 partition_leader: Callable[[int], int | None] | None = None,
                 ensure_state_topic: Callable[[], Any] | None = None,
                 partition_hosted: Callable[[int], bool] | None = None) -> None:
        """``partition_hosted(partition)``: whether this broker leads that __share_group_state partition in its
        replica manager (its log exists and the election was applied); None: always."""
        self.node_id = node_id
        self.num_partitions = num_partitions
        self.clock = clock or SystemClock()
        self.snapshot_every = snapshot_every
        self._partition_leader = partition_leader or (lambda _p: node_id)
        self._partition_hosted = partition_hosted or (lambda _p: True)
        self._ensure_state_topic = ensure_state_topic
        self._ready_future: asyncio.Future | None = None
        self.runtime = CoordinatorRuntime(self._new_shard, log_factory, self.clock, decode_record=decode_record,
                                          topic=SHARE_GROUP_STATE_TOPIC_NAME)

    def _new_shard(self, partition: int, timer: CoordinatorTimer) -> ShareCoordinatorShard:
        return ShareCoordinatorShard(partition, self.snapshot_every, self.clock.now_ms)

    def partition_for(self, key: SharePartitionKey) -> int:
        h = java.string_hash(coordinator_key(key))
        return (0 if h == -(1 << 31) else abs(h)) % self.num_partitions

    # -- lifecycle --------------------------------------------------------------------------------------
    def load_all(self) -> None:
        for partition in range(self.num_partitions):
            if self._partition_leader(partition) == self.node_id:
                self._load(partition)

    async def ready(self) -> None:
        """__share_group_state exists (created on first use) and the partitions led here are loading."""
        await self._ready()

    async def _ready(self) -> None:
        if self._ready_future is None:
            async def start() -> None:
                if self._ensure_state_topic is not None:
                    result = self._ensure_state_topic()
                    if asyncio.iscoroutine(result):
                        await result
                self.load_all()
            self._ready_future = asyncio.ensure_future(start())
        try:
            await asyncio.shield(self._ready_future)
        except Exception:
            self._ready_future = None
            log.exception("creating %s failed", SHARE_GROUP_STATE_TOPIC_NAME)
            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None

    async def close(self) -> None:
        await self.runtime.close()

    def on_election(self, partition: int) -> None:
        """This node leads __share_group_state-``partition`` now: load it by replaying it."""
        self.runtime.load(partition)

    def _load(self, partition: int) -> None:
        """Load ``partition`` once this broker leads it (``CoordinatorRuntime.load_if_hosted``)."""
        self.runtime.load_if_hosted(partition, self._partition_hosted)

    async def on_resignation(self, partition: int) -> None:
        """Another node leads it now: stop serving it (its requests get NOT_COORDINATOR)."""
        await self.runtime.unload(partition)

    def leader_of(self, key: SharePartitionKey) -> int | None:
        """The node that coordinates ``key``: the leader of its __share_group_state partition (None: unknown)."""
        return self._partition_leader(self.partition_for(key))

    async def _partition(self, key: SharePartitionKey) -> int:
        await self._ready()
        partition = self.partition_for(key)
        if self._partition_leader(partition) != self.node_id:
            raise ApiError(ErrorCode.NOT_COORDINATOR)
        self._load(partition)
        return partition

    # -- the persister's operations --------------------------------------------------------------------
    async def read_state(self, key: SharePartitionKey, leader_epoch: int = -1) -> ShareGroupOffset | None:
        """The state of ``key`` (None: none); a share-partition leader passes its leader epoch, which fences older
        leaders."""
        partition = await self._partition(key)
        if leader_epoch < 0:
            return await self.runtime.read(partition, lambda shard: shard.read_state(key))
        try:
            return await self.runtime.write(partition,
                                            lambda shard: shard.read_state_with_leader_epoch(key, leader_epoch))
        except ApiError as exc:
            if uninitialized(exc):
                return None
            raise

    async def read_state_request(self, key: SharePartitionKey, leader_epoch: int) -> ShareGroupOffset:
        """ReadShareGroupState as asked on the wire: a negative leader epoch or no state is INVALID_REQUEST."""
        partition = await self._partition(key)
        return await self.runtime.write(partition, lambda shard: shard.read_state_with_leader_epoch(key, leader_epoch))

    async def read_summary(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        return await self.runtime.read(await self._partition(key), lambda shard: shard.summary(key))

    async def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> None:
        await self.runtime.write(await self._partition(key),
                                 lambda shard: shard.initialize_state(key, state_epoch, start_offset))

    async def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                          batches: list[StateBatch], delivery_complete_count: int = -1) -> None:
        await self.runtime.write(await self._partition(key), lambda shard: shard.write_state(
            key, state_epoch, leader_epoch, start_offset, batches, delivery_complete_count))

    async def delete_state(self, key: SharePartitionKey) -> None:
        await self.runtime.write(await self._partition(key), lambda shard: shard.delete_state(key))

    async def all_states(self, group_id: str | None = None) -> dict[SharePartitionKey, ShareGroupOffset]:
        """Every persisted share-partition (of ``group_id``), for describe and delete."""
        await self._ready()
        out: dict[SharePartitionKey, ShareGroupOffset] = {}
        for partition in range(self.num_partitions):
            if self._partition_leader(partition) != self.node_id:
                continue
            self._load(partition)
            states = await self.runtime.read(partition, lambda shard: dict(shard.state))
            out.update({k: v for k, v in states.items() if group_id is None or k[0] == group_id})
        return out
