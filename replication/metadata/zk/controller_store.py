"""The controller's view of ZooKeeper: named reads and writes of the znodes it decides on (Kafka's
KafkaZkClient, the part its KafkaController calls).

The controller (``replication.controller.zk_controller``) never sees a path, an op or the client: it reads
broker registrations, topic assignments, partition states, topic configs, pending deletions and the legacy
reassignment request through this store, and writes them back through it. Every controller write but the
deletion of a topic's own znodes is fenced (``ControllerElection.fenced_multi``): a deposed controller's
write fails with ``ControllerMovedError``. Conditional writes that lose against a concurrent one (the znode
version moved, or the znode went) raise ``StaleWriteError``; the controller rereads and decides again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Protocol

from replication.metadata.zk.client import (
    BadVersionError,
    CreateOp,
    DeleteOp,
    NoNodeError,
    NotEmptyError,
    SetDataOp,
    Watch,
    ZooKeeperClient,
    ZooKeeperMultiError,
)
from replication.metadata.zk.controller_election import ControllerElection
from replication.metadata.zk.znodes import (
    BrokerIdsZNode,
    ConfigEntityZNode,
    DeleteTopicsTopicZNode,
    DeleteTopicsZNode,
    PartitionState,
    ReassignPartitionsZNode,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicPartitionsZNode,
    TopicPartitionZNode,
    TopicsZNode,
    TopicZNode,
    ZNodeDecodeError,
)

__all__ = ["ZkControllerStore", "StaleWriteError", "LeaderAndIsrLike", "PartitionState", "TopicAssignment",
           "ZNodeDecodeError", "REASSIGN_PARTITIONS_PATH", "STATES_PER_MULTI"]

TopicPartition = tuple[str, int]
# The legacy reassignment request's znode, for the controller's log lines.
REASSIGN_PARTITIONS_PATH = ReassignPartitionsZNode.path
# Partitions whose state znodes one multi creates or deletes (two znodes each, well under 1 KB even with a topic
# name of 249 characters: far below ZooKeeper's 1 MB request limit, jute.maxbuffer).
STATES_PER_MULTI = 500


class LeaderAndIsrLike(Protocol):
    """A partition state to write (the controller's ``LeaderAndIsr``); ``unclean`` writes it RECOVERING."""

    @property
    def leader(self) -> int: ...
    @property
    def leader_epoch(self) -> int: ...
    @property
    def isr(self) -> Sequence[int]: ...
    @property
    def unclean(self) -> bool: ...


class StaleWriteError(Exception):
    """A conditional controller write lost: a znode it depended on changed or went meanwhile."""

    def __init__(self, reason: str, node_missing: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node_missing = node_missing


def _stale(exc: ZooKeeperMultiError) -> StaleWriteError:
    return StaleWriteError(type(exc.error).__name__, isinstance(exc.error, NoNodeError))


class ZkControllerStore:
    """The znodes controller ``election`` reads and writes, over session ``zk``."""

    def __init__(self, zk: ZooKeeperClient, election: ControllerElection) -> None:
        self.zk = zk
        self.election = election

    # -- brokers ---------------------------------------------------------------------------------------
    async def live_broker_epochs(self, watch: Watch | None = None) -> dict[int, int]:
        """Each registered broker's broker epoch (its registration's creation zxid); ``watch`` fires when the
        set of registrations changes."""
        children = await self.zk.get_children(BrokerIdsZNode.path, watch=watch) or []
        epochs = {}
        for child in children:
            if child.lstrip("-").isdigit():
                stat = await self.zk.exists(f"{BrokerIdsZNode.path}/{child}")
                if stat is not None:
                    epochs[int(child)] = stat.czxid
        return epochs

    async def live_broker_ids(self) -> set[int]:
        """The registered brokers as they are now (no watch)."""
        children = await self.zk.get_children(BrokerIdsZNode.path) or []
        return {int(c) for c in children if c.lstrip("-").isdigit()}

    # -- topics ----------------------------------------------------------------------------------------
    async def ensure_admin_paths(self) -> None:
        """The persistent parents the controller watches (Kafka's top-level paths)."""
        await self.zk.ensure_path(DeleteTopicsZNode.path)

    async def topic_names(self, watch: Watch | None = None) -> list[str]:
        """Every topic with an assignment znode; ``watch`` fires when one is added or removed."""
        return await self.zk.get_children(TopicsZNode.path, watch=watch) or []

    async def topic_assignment(self, topic: str, watch: Watch | None = None) -> TopicAssignment | None:
        """The topic's replica assignment (None: no such topic); ``watch`` fires when it changes. Raises
        ``ZNodeDecodeError`` for an unreadable znode."""
        found = await self.zk.get(TopicZNode.path(topic), watch=watch)
        if found is None:
            return None
        return TopicZNode.decode(topic, found[0])

    async def topic_exists(self, topic: str) -> bool:
        return await self.zk.exists(TopicZNode.path(topic)) is not None

    async def topic_configs(self, topic: str) -> dict[str, str]:
        """The topic's config overrides (empty when it has none or they are unreadable)."""
        found = await self.zk.get(ConfigEntityZNode.path("topics", topic))
        if found is None:
            return {}
        try:
            return dict(ConfigEntityZNode.decode(found[0]))
        except ZNodeDecodeError:
            return {}

    async def set_topic_assignment(self, topic: str,
                                   changes: Mapping[int, tuple[Sequence[int], Sequence[int], Sequence[int]]],
                                   states: Sequence[tuple[int, LeaderAndIsrLike, int]] = ()) -> bool:
        """Rewrite the topic znode with ``changes`` (partition: replicas, adding, removing), conditional on its
        version, and each of ``states`` (partition, state, expected state version) in one fenced multi. False
        when the topic is gone (nothing written); ``StaleWriteError`` when a concurrent write won."""
        found = await self.zk.get(TopicZNode.path(topic))
        if found is None:
            return False
        current = TopicZNode.decode(topic, found[0])
        partitions = {p: list(r) for p, r in current.partitions.items()}
        adding = {p: list(r) for p, r in current.adding_replicas.items()}
        removing = {p: list(r) for p, r in current.removing_replicas.items()}
        for p, (replicas, adds, removes) in changes.items():
            partitions[p], adding[p], removing[p] = list(replicas), list(adds), list(removes)
        data = TopicZNode.encode(partitions, current.topic_id, adding_replicas=adding, removing_replicas=removing)
        ops = [SetDataOp(TopicZNode.path(topic), data, found[1].version),
               *(self._state_op((topic, p), state, version) for p, state, version in states)]
        try:
            await self.election.fenced_multi(ops)
        except ZooKeeperMultiError as exc:
            if isinstance(exc.error, (BadVersionError, NoNodeError)):
                raise _stale(exc) from None
            raise
        return True

    # -- partition states ------------------------------------------------------------------------------
    async def partition_state(self, tp: TopicPartition, watch: Watch | None = None) -> PartitionState | None:
        """The partition's leader, ISR and partition epoch (``zk_version``), or None when it has no state
        yet; ``watch`` fires on its next change, or on its creation when it has none."""
        path = TopicPartitionStateZNode.path(*tp)
        found = await self.zk.get(path, watch=watch)
        if found is None:
            if watch is not None:
                await self.zk.exists(path, watch=watch)
            return None
        return TopicPartitionStateZNode.decode(found[0], found[1].version)

    async def create_partition_state(self, tp: TopicPartition, state: LeaderAndIsrLike) -> None:
        """The partition's first state (and its missing parents), fenced; ``StaleWriteError`` when it raced
        (``node_missing``: a parent went, as when the topic is being deleted)."""
        topic, partition = tp
        ops: list[CreateOp] = []
        if await self.zk.exists(TopicPartitionsZNode.path(topic)) is None:
            ops.append(CreateOp(TopicPartitionsZNode.path(topic)))
        if await self.zk.exists(TopicPartitionZNode.path(topic, partition)) is None:
            ops.append(CreateOp(TopicPartitionZNode.path(topic, partition)))
        ops.append(CreateOp(TopicPartitionStateZNode.path(topic, partition), self._encode_state(state)))
        try:
            await self.election.fenced_multi(ops)
        except ZooKeeperMultiError as exc:
            raise _stale(exc) from None

    async def create_partition_states(self, topic: str, states: Mapping[int, LeaderAndIsrLike],
                                      parent_exists: bool | None = None) -> None:
        """The first states of many partitions of ``topic`` (and their missing parents) in fenced multis of up to
        ``STATES_PER_MULTI`` partitions each: one ZooKeeper write for a new topic's partitions, where one per
        partition raced on their common parent and cost a round trip each. ``StaleWriteError`` as
        ``create_partition_state`` (the partitions of the failed multi have no state: decide them again).
        ``parent_exists`` known (a topic just created: False; partitions just added: True): the partitions' own
        znodes are missing too, and nothing is looked up first (a write finding one is a ``StaleWriteError``)."""
        partitions = sorted(states)
        parent = TopicPartitionsZNode.path(topic)
        if parent_exists is None:
            found = await asyncio.gather(self.zk.exists(parent),
                                         *(self.zk.exists(TopicPartitionZNode.path(topic, p)) for p in partitions))
            parent_exists, missing = found[0] is not None, [stat is None for stat in found[1:]]
        else:
            missing = [True] * len(partitions)
        ops: list[CreateOp] = [] if parent_exists else [CreateOp(parent)]
        for i, (p, absent) in enumerate(zip(partitions, missing, strict=True)):
            if absent:
                ops.append(CreateOp(TopicPartitionZNode.path(topic, p)))
            ops.append(CreateOp(TopicPartitionStateZNode.path(topic, p), self._encode_state(states[p])))
            if i + 1 == len(partitions) or (i + 1) % STATES_PER_MULTI == 0:
                try:
                    await self.election.fenced_multi(ops)
                except ZooKeeperMultiError as exc:
                    raise _stale(exc) from None
                ops = []

    async def create_new_topics_states(self, states: Mapping[str, Mapping[int, LeaderAndIsrLike]]) -> None:
        """The first states of several new topics (their partitions' znodes missing, as an admin client writes
        only the topic znodes) in one fenced multi: Kafka 4.4 commits a CreateTopics' topics in one batch, so a
        broker lists them all, with their leaders, or none. ``StaleWriteError`` as ``create_partition_states``
        (nothing was written)."""
        ops: list[CreateOp] = []
        for topic, topic_states in states.items():
            ops.append(CreateOp(TopicPartitionsZNode.path(topic)))
            for p in sorted(topic_states):
                ops += [CreateOp(TopicPartitionZNode.path(topic, p)),
                        CreateOp(TopicPartitionStateZNode.path(topic, p), self._encode_state(topic_states[p]))]
        try:
            await self.election.fenced_multi(ops)
        except ZooKeeperMultiError as exc:
            raise _stale(exc) from None

    async def set_partition_state(self, tp: TopicPartition, state: LeaderAndIsrLike, version: int) -> None:
        """The partition's new state if its state is still at ``version`` (fenced); ``StaleWriteError`` when a
        leader changed the ISR meanwhile or the topic went."""
        try:
            await self.election.fenced_multi([self._state_op(tp, state, version)])
        except ZooKeeperMultiError as exc:
            if isinstance(exc.error, (BadVersionError, NoNodeError)):
                raise _stale(exc) from None
            raise

    def _encode_state(self, state: LeaderAndIsrLike) -> bytes:
        return TopicPartitionStateZNode.encode(state.leader, state.leader_epoch, state.isr, self.election.epoch,
                                               1 if state.unclean else 0)

    def _state_op(self, tp: TopicPartition, state: LeaderAndIsrLike, version: int) -> SetDataOp:
        return SetDataOp(TopicPartitionStateZNode.path(*tp), self._encode_state(state), version)

    # -- reassignments (the legacy /admin/reassign_partitions request) --------------------------------
    async def reassign_partitions_request(self, watch: Watch | None = None) -> dict[TopicPartition, list[int]] | None:
        """The legacy request's moves (None: no request); ``watch`` fires on its change, deletion or
        creation. Raises ``ZNodeDecodeError`` for an unreadable request."""
        found = await self.zk.get(ReassignPartitionsZNode.path, watch=watch)
        if found is None:
            if watch is not None:
                await self.zk.exists(ReassignPartitionsZNode.path, watch=watch)
            return None
        return ReassignPartitionsZNode.decode(found[0])

    async def set_reassign_partitions_request(self, remaining: Mapping[TopicPartition, Sequence[int]]) -> None:
        """What is left of the legacy request; the znode goes when nothing is (fenced)."""
        path = ReassignPartitionsZNode.path
        try:
            if remaining:
                await self.election.fenced_multi([SetDataOp(path, ReassignPartitionsZNode.encode(remaining))])
            else:
                await self.election.fenced_multi([DeleteOp(path)])
        except ZooKeeperMultiError as exc:
            if not isinstance(exc.error, NoNodeError):
                raise

    # -- topic deletion --------------------------------------------------------------------------------
    async def topic_deletions(self, watch: Watch | None = None) -> list[str]:
        """Topics with a pending deletion request; ``watch`` fires when the requests change."""
        return await self.zk.get_children(DeleteTopicsZNode.path, watch=watch) or []

    async def delete_topic(self, topic: str) -> None:
        """The topic's assignment, partition states, config and deletion request: children before parents in
        multis of up to ``STATES_PER_MULTI`` partitions, the topic znode, its config and the request in the last,
        fenced (every broker sees the topic go at once, not partition by partition, each a round trip, as a
        recursive delete had it; and the request goes with it, one write less). Each partition znode is taken to
        hold only its state (Kafka's layout, not read per partition: 24 reads before a topic of 24 partitions could
        go); recursively when the tree holds more or changed meanwhile, the request then removed after."""
        root = TopicZNode.path(topic)
        config = ConfigEntityZNode.path("topics", topic)
        partitions, config_stat = await asyncio.gather(self.zk.get_children(TopicPartitionsZNode.path(topic)),
                                                       self.zk.exists(config))
        batches: list[list[DeleteOp]] = [[]]
        if partitions is not None:
            for i, p in enumerate(partitions):
                if i and i % STATES_PER_MULTI == 0:
                    batches.append([])
                path = f"{TopicPartitionsZNode.path(topic)}/{p}"
                batches[-1] += [DeleteOp(f"{path}/state"), DeleteOp(path)]
            batches[-1].append(DeleteOp(TopicPartitionsZNode.path(topic)))
        batches[-1].append(DeleteOp(root))
        if config_stat is not None:
            batches[-1].append(DeleteOp(config))
        batches[-1].append(DeleteOp(DeleteTopicsTopicZNode.path(topic)))
        try:
            for ops in batches[:-1]:
                await self.zk.multi(ops)
            await self.election.fenced_multi(batches[-1])
        except ZooKeeperMultiError as exc:
            if not isinstance(exc.error, (NoNodeError, NotEmptyError)):
                raise
            if await self.zk.exists(root) is not None:
                await self.zk.delete(root, recursive=True)
            await self.delete_topic_configs(topic)
            await self.delete_topic_deletion(topic)

    async def delete_topics(self, topics: Sequence[str]) -> None:
        """Several topics' znodes, configs and deletion requests as ``delete_topic``, the topic znodes of them all
        in the last multi: Kafka 4.4 removes a DeleteTopics request's topics in one batch of records, so a broker
        lists them all or none. Each topic alone (``delete_topic``) when that multi fails (one of them changed
        meanwhile, or has no topic znode left)."""
        if len(topics) == 1:
            await self.delete_topic(topics[0])
            return
        found = await asyncio.gather(*(asyncio.gather(self.zk.get_children(TopicPartitionsZNode.path(t)),
                                                      self.zk.exists(ConfigEntityZNode.path("topics", t)))
                                       for t in topics))
        batches: list[list[DeleteOp]] = [[]]
        last: list[DeleteOp] = []
        count = 0
        for topic, (partitions, config_stat) in zip(topics, found, strict=True):
            for p in partitions or ():
                if count and count % STATES_PER_MULTI == 0:
                    batches.append([])
                count += 1
                path = f"{TopicPartitionsZNode.path(topic)}/{p}"
                batches[-1] += [DeleteOp(f"{path}/state"), DeleteOp(path)]
            if partitions is not None:
                batches[-1].append(DeleteOp(TopicPartitionsZNode.path(topic)))
            last.append(DeleteOp(TopicZNode.path(topic)))
            if config_stat is not None:
                last.append(DeleteOp(ConfigEntityZNode.path("topics", topic)))
            last.append(DeleteOp(DeleteTopicsTopicZNode.path(topic)))
        batches[-1] += last
        try:
            for ops in batches[:-1]:
                await self.zk.multi(ops)
            await self.election.fenced_multi(batches[-1])
        except ZooKeeperMultiError as exc:
            if not isinstance(exc.error, (NoNodeError, NotEmptyError)):
                raise
            for topic in topics:
                await self.delete_topic(topic)

    async def delete_topic_configs(self, topic: str) -> None:
        try:
            await self.zk.delete(ConfigEntityZNode.path("topics", topic))
        except NoNodeError:
            pass

    async def delete_topic_deletion(self, topic: str) -> None:
        """The topic's deletion request, once its znodes are gone (fenced)."""
        try:
            await self.election.fenced_multi([DeleteOp(DeleteTopicsTopicZNode.path(topic))])
        except ZooKeeperMultiError as exc:
            if not isinstance(exc.error, NoNodeError):
                raise
