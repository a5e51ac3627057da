"""Share groups as one service for the broker: the share coordinator, share-partitions, sessions, members.

``ShareGroupService`` owns:

- ``coordinator``: the ``ShareCoordinator`` over the __share_group_state partitions this node leads;
- ``persister``: the ``SharePersister``, the way to any share-partition's state (local or by RPC);
- ``partitions``: the ``SharePartitionManager`` (in-flight records, acquisitions, acknowledgements);
- ``sessions``: the ``ShareSessionCache``;
- membership (members, heartbeats, assignment): the ``ShareGroupCoordinator`` of each __consumer_offsets shard
  of the group coordinator, reached through ``heartbeat``, ``group``, ``listed_groups``, ``ensure_group``,
  ``delete_group``, ``mark_initialized`` and ``delete_offsets`` (persisted in __consumer_offsets as Kafka does).

Share-partitions are assigned only once initialized, as in Kafka 4.4: a heartbeat that finds subscribed partitions
neither initialized nor initializing marks them initializing and hands back an ``InitializeRequest``;
``initialize`` (started by the heartbeat handler, not awaited by it) writes their state at the share coordinator
and then marks them initialized (or, on failure, no longer initializing, so a later heartbeat asks again).

The broker gives it callables for what lives above this layer (topic lookups, group configs, creating the
state topic), so nothing here imports pykbroker. ``settings(group_id)`` merges the broker's ``group.share.*``
defaults with the group's configs (``share.auto.offset.reset``, ``share.isolation.level``,
``share.record.lock.duration.ms``, ``share.delivery.count.limit``, ``share.partition.max.record.locks``,
``share.renew.acknowledge.enable``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from coordinator.runtime.clock import Clock, SystemClock
from coordinator.runtime.log import CoordinatorLogFactory
from coordinator.share.coordinator import ShareCoordinator
from coordinator.share.persister import Send, SharePersister
from coordinator.share.records import SHARE_GROUP_STATE_TOPIC_NAME
from coordinator.share.share_group import HeartbeatResult, InitializeRequest, ShareGroup
from coordinator.share.share_partition_manager import (
    DeadLetterSink,
    ShareGroupSettings,
    SharePartitionManager,
)
from coordinator.share.share_session import ShareSessionCache

__all__ = ["ShareGroupService"]

log = logging.getLogger("pykbroker.coordinator.share")

# DeleteShareGroupOffsets of a topic the group has no initialized share-partitions of (Kafka's message)
NO_OFFSETS = "There is no offset information to delete."


class ShareGroupService:
    def __init__(self, config: Callable[[str], Any], node_id: int, replica_manager, log_factory: CoordinatorLogFactory,
                 *, topic_by_name: Callable[[str], tuple[uuid.UUID, int] | None],
                 topic_name: Callable[[uuid.UUID], str | None], group_configs: Callable[[str], Mapping[str, str]],
                 ensure_state_topic: Callable[[], Any] | None = None,
                 partition_leader: Callable[[int], int | None] | None = None, clock: Clock | None = None,
                 existing_topics: Callable[[], Any] = lambda: (), send: Send | None = None,
                 coordinates: Callable[[str], bool] = lambda group_id: True, group_coordinator: Any = None,
                 dead_letters: DeadLetterSink | None = None,
                 dead_letters_enabled: Callable[[str], bool] = lambda group_id: True,
                 partition_hosted: Callable[[int], bool] | None = None) -> None:
        """``send(node_id, request, version, response_class)``: the inter-broker transport of a cluster (None on
        a single node, where every __share_group_state partition is led here). ``coordinates(group_id)``: whether
        this node is the group's coordinator (in a cluster, the leader of its __consumer_offsets partition).
        ``group_coordinator``: the ``GroupCoordinator`` whose shards hold the share groups' membership.
        ``dead_letters``: the share groups' dead-letter queue (KIP-1191), None for none; ``dead_letters_enabled``:
        whether a group has one. ``partition_hosted(partition)``: whether this broker leads that __share_group_state
        partition in its replica manager."""
        self.group_coordinator = group_coordinator
        self.coordinates = coordinates
        self._topic_name = topic_name
        self.config = config
        self.clock = clock or SystemClock()
        self._group_configs = group_configs
        self.coordinator = ShareCoordinator(
            node_id, config("share.coordinator.state.topic.num.partitions"), log_factory, clock=self.clock,
            snapshot_every=config("share.coordinator.snapshot.update.records.per.snapshot"),
            partition_leader=partition_leader, ensure_state_topic=ensure_state_topic,
            partition_hosted=partition_hosted)
        self.persister = SharePersister(node_id, self.coordinator, send,
                                        timeout_ms=int(config("request.timeout.ms")))
        self.partitions = SharePartitionManager(replica_manager, self.persister, topic_name, self.settings,
                                                self.clock, dead_letters, dead_letters_enabled)
        self.sessions = ShareSessionCache(config("group.share.max.share.sessions"))
        self._tasks: set[asyncio.Task] = set()
        self._topic_deletions: dict[uuid.UUID, asyncio.Future] = {}
        self._groups_loaded = False
        self._existing_topics = existing_topics

    # -- membership (on the group coordinator's shards) -------------------------------------------------
    async def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                        subscribed_topic_names: list[str] | None, client_id: str, client_host: str) -> HeartbeatResult:
        return await self.group_coordinator.share_write(group_id, lambda groups: groups.heartbeat(
            group_id, member_id, member_epoch, rack_id, subscribed_topic_names, client_id, client_host))

    async def group(self, group_id: str) -> ShareGroup | None:
        """The share group ``group_id`` if this node coordinates it and it exists."""
        return await self.group_coordinator.share_read(group_id, lambda groups: groups.groups.get(group_id))

    async def listed_groups(self) -> list[ShareGroup]:
        return await self.group_coordinator.share_groups()

    async def ensure_group(self, group_id: str) -> ShareGroup:
        return await self.group_coordinator.share_write(group_id, lambda groups: groups.ensure_group(group_id))

    async def delete_group(self, group_id: str) -> int:
        return await self.group_coordinator.share_write(group_id, lambda groups: groups.delete(group_id))

    async def mark_initialized(self, group_id: str, topic_id: uuid.UUID, partitions: list[int]) -> None:
        """Record that the group's share-partition state of ``partitions`` is initialized
        (ShareGroupStatePartitionMetadata), so they are assigned from the next heartbeat on."""
        name = self._topic_name(topic_id) or ""
        await self.group_coordinator.share_write(group_id, lambda groups: groups.initialized_state(
            group_id, {topic_id: (name, partitions)}))

    def start_initializing(self, request: InitializeRequest) -> None:
        """Initialize the share-partitions of ``request`` in the background (a heartbeat's answer does not wait)."""
        task = asyncio.ensure_future(self.initialize(request))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def initialize(self, request: InitializeRequest) -> None:
        """Write the initial state of the request's share-partitions at the request's state epoch (the group epoch;
        start offset -1 or 0; state a partition already has is kept), then mark those done initialized and the rest no longer initializing."""
        group_id = request.group_id
        done: dict[uuid.UUID, tuple[str, list[int]]] = {}
        failed: dict[uuid.UUID, list[int]] = {}
        for topic_id, (partitions, start_offset) in request.topics.items():
            name = self._topic_name(topic_id) or ""
            for index in partitions:
                try:
                    await self.partitions.initialize_uninitialized((group_id, topic_id, index), request.state_epoch,
                                                                    start_offset)
                    done.setdefault(topic_id, (name, []))[1].append(index)
                except Exception as exc:
                    log.warning("share group %s: initializing %s-%d failed: %s", group_id, name, index, exc)
                    failed.setdefault(topic_id, []).append(index)
        try:
            if done:
                await self.group_coordinator.share_write(group_id, lambda groups: groups.initialized_state(
                    group_id, done))
            if failed:
                await self.group_coordinator.share_write(group_id, lambda groups: groups.uninitialized_state(
                    group_id, failed))
        except Exception as exc:  # the coordinator moved: its new home retries after the retry interval
            log.warning("share group %s: recording initialized share-partitions failed: %s", group_id, exc)

    async def delete_offsets(self, group_id: str, topics: dict[uuid.UUID, str]) -> dict[uuid.UUID, str | None]:
        """DeleteShareGroupOffsets of ``topics`` (id -> name): answers per topic None (deleted) or why not: no
        offsets (not initialized), or the share coordinator's error. The topics are marked deleting first and
        cleared once their state is deleted, as Kafka does, so a retry completes an interrupted deletion."""
        partitions = await self.group_coordinator.share_write(group_id, lambda groups: groups.start_deleting(
            group_id, topics))
        out: dict[uuid.UUID, str | None] = {t: NO_OFFSETS for t in topics if t not in partitions}
        for topic_id, indexes in partitions.items():
            out[topic_id] = None
            for index in indexes:
                try:
                    await self.partitions.delete((group_id, topic_id, index))
                except Exception as exc:
                    out[topic_id] = str(exc) or type(exc).__name__
        deleted = {t for t, why in out.items() if why is None}
        if deleted:
            await self.group_coordinator.share_write(group_id, lambda groups: groups.deleted(group_id, deleted))
        return out

    def settings(self, group_id: str) -> ShareGroupSettings:
        configs = self._group_configs(group_id)
        lock_ms = int(configs.get("share.record.lock.duration.ms", self.config("group.share.record.lock.duration.ms")))
        return ShareGroupSettings(
            auto_offset_reset=configs.get("share.auto.offset.reset", "latest").lower(),
            read_committed=configs.get("share.isolation.level", "read_uncommitted").lower() == "read_committed",
            record_lock_duration_ms=lock_ms,
            delivery_count_limit=int(configs.get("share.delivery.count.limit",
                                                 self.config("group.share.delivery.count.limit"))),
            max_record_locks=int(configs.get("share.partition.max.record.locks",
                                             self.config("group.share.partition.max.record.locks"))),
            renew_enabled=str(configs.get("share.renew.acknowledge.enable", "true")).lower() == "true")

    async def groups_with_state(self) -> None:
        """Groups known only from __share_group_state (after a restart, before any member is back) are
        listed as Empty groups, as Kafka lists the share groups its __consumer_offsets records."""
        if self._groups_loaded or SHARE_GROUP_STATE_TOPIC_NAME not in self._existing_topics():
            return
        known = {g.group_id for g in await self.listed_groups()}
        for key in await self.coordinator.all_states():
            if key[0] not in known and self.coordinates(key[0]):  # a cluster lists a group once: on its coordinator
                await self.ensure_group(key[0])
                known.add(key[0])
        self._groups_loaded = True

    def coordination_changed(self) -> None:
        """This node leads another __consumer_offsets or __share_group_state partition: the groups known from
        persisted state are looked for again on the next listing."""
        self._groups_loaded = False

    async def states(self, group_id: str) -> dict:
        """Every persisted share-partition state of ``group_id``, wherever it is coordinated (describe, delete)."""
        topics = self._existing_topics()
        candidates = [(t.topic_id, p) for name, t in getattr(topics, "items", lambda: [])()
                      if not name.startswith("__") for p in range(len(t.partitions))]
        return await self.persister.states(group_id, candidates)

    async def on_topic_deleted(self, topic_id: uuid.UUID) -> None:
        """A topic was deleted (every broker hears of it from the metadata; the one that handled DeleteTopics also
        calls this before answering): drop its share-partitions and delete the persisted state its share
        coordinator here holds (the other brokers delete what theirs hold). Runs once per topic id."""
        task = self._topic_deletions.get(topic_id)
        if task is None:
            task = self._topic_deletions[topic_id] = asyncio.ensure_future(self._delete_topic_state(topic_id))
        await asyncio.shield(task)

    async def _delete_topic_state(self, topic_id: uuid.UUID) -> None:
        self.partitions.drop_topic(topic_id)
        await self._forget_topic(topic_id)
        if SHARE_GROUP_STATE_TOPIC_NAME not in self._existing_topics():
            return  # no share-partition state anywhere yet
        try:
            states = await self.coordinator.all_states()
        except Exception as exc:
            log.warning("deleting share state of deleted topic %s failed: %s", topic_id, exc)
            return
        for key in [k for k in states if k[1] == topic_id]:
            try:
                await self.partitions.delete(key)
            except Exception as exc:
                log.warning("deleting share state %s failed: %s", key, exc)
        for session in self.sessions.all():
            for tp in [tp for tp in session.partitions if tp[0] == topic_id]:
                session.partitions.pop(tp, None)

    async def _forget_topic(self, topic_id: uuid.UUID) -> None:
        """The share groups coordinated here forget the deleted topic's share-partitions (Kafka's
        maybeCleanupShareGroupState), so a topic of the same name created later is initialized afresh."""
        if self.group_coordinator is None:
            return
        try:
            groups = await self.listed_groups()
        except Exception as exc:
            log.warning("share groups: forgetting deleted topic %s failed: %s", topic_id, exc)
            return
        for group in groups:
            if topic_id in group.initialized or topic_id in group.initializing or topic_id in group.deleting:
                try:
                    await self.group_coordinator.share_write(group.group_id, lambda g, gid=group.group_id: g.forget_topics(
                        gid, {topic_id}))
                except Exception as exc:
                    log.warning("share group %s: forgetting deleted topic %s failed: %s", group.group_id, topic_id,
                                exc)

    def connection_closed(self, connection: object) -> None:
        """Kafka's ShareSessionCache disconnect listener: end the sessions opened on ``connection`` and release
        what their members hold."""
        for session in self.sessions.sessions_of(connection):
            self.sessions.remove(session.group_id, session.member_id)
            keys = [(session.group_id, t, p) for t, p in session.partitions]
            task = asyncio.ensure_future(self.partitions.release_member(session.group_id, session.member_id, keys))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def load_all(self) -> None:
        self.coordinator.load_all()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self.partitions.close()
        await self.coordinator.close()
