"""Leadership handed over by the broker itself: controlled shutdown, a failed log dir, replicas whose log dir is
back at start, and stray logs of partitions reassigned away while the broker was down.

Kafka's broker asks its controller for these; in a ZooKeeper cluster here the broker writes the partition
states itself with the same election rules (``replication.controller.elections``), each write conditional on
the partition epoch it read, so the controller's and leaders' concurrent writes make it read and decide again.
On a single node the broker is its own controller.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import uuid
from collections.abc import Callable, Coroutine, Mapping
from types import MappingProxyType
from typing import Any

from replication.controller.elections import (
    NO_LEADER,
    LeaderAndIsr,
    controlled_shutdown_election,
    directory_offline_change,
    eligible_leader_replicas,
    recovered_replica_election,
)
from replication.metadata.image import MetadataImage, MetadataWriter, PartitionState

__all__ = ["CONFLICT_ROUNDS", "CONFLICT_WAIT_S", "HAND_OVER_WRITES", "LeadershipHandOver"]

# A hand-over write refused by a concurrent writer is decided again on the new state this many times per attempt,
# each after waiting up to CONFLICT_WAIT_S for that state to reach this broker's image.
CONFLICT_ROUNDS = 10
CONFLICT_WAIT_S = 1.0
# Partition-state writes of one hand-over round in flight at once (ZooKeeper pipelines them on one session).
HAND_OVER_WRITES = 64

log = logging.getLogger("pykbroker.broker")


class LeadershipHandOver:
    """The hand-overs of broker ``node_id`` (``cluster_mode``: a ZooKeeper cluster's, else a single node's).
    ``shutting_down`` is set by controlled shutdown: from then on this broker fetches nothing, so no leader adds
    it back to an ISR it left (Kafka's controller sends StopReplica to the broker and refuses it as
    INELIGIBLE_REPLICA)."""

    def __init__(self, node_id: int, metadata: MetadataWriter, replica_manager: Any, log_manager: Any,
                 replica_fetchers: Any, *, cluster_mode: bool, elr_enabled: Callable[[], bool],
                 min_insync_replicas: Callable[[str], int],
                 spawn: Callable[[Coroutine[Any, Any, Any]], Any], controlled_shutdown_enable: bool = True,
                 controlled_shutdown_max_retries: int = 3, retry_backoff_ms: int = 5000) -> None:
        self.node_id = node_id
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.log_manager = log_manager
        self.replica_fetchers = replica_fetchers
        self.cluster_mode = cluster_mode
        self.elr_enabled = elr_enabled
        self.min_insync_replicas = min_insync_replicas
        self.spawn = spawn
        self.controlled_shutdown_enable = controlled_shutdown_enable
        self.controlled_shutdown_max_retries = controlled_shutdown_max_retries
        self.retry_backoff_ms = retry_backoff_ms
        self.shutting_down = False
        # The broker's loop, set as it starts: log dir failures (reported from any thread) are handled from then on.
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self, offline_at_start: int) -> None:
        """Once the logs are loaded and hosted: the partitions of dirs offline at start (``offline_at_start`` of
        them, marked by ``mark_offline_at_start``) move away."""
        if offline_at_start:
            in_offline = self.replica_manager.offline_partitions.__contains__
            dirs = ",".join(self.log_manager.failure_channel.offline_dirs)
            self.spawn(self._offline_in_cluster(lambda t, p: in_offline((t, p)), f"log dirs {dirs} offline at start")
                       if self.cluster_mode else self.directory_offline(lambda t, p: in_offline((t, p)), dirs,
                                                                        at_start=True))

    def _offline_here(self) -> list[tuple[str, int]]:
        """The partitions whose replica here is in an offline log dir."""
        out = set(self.replica_manager.offline_partitions)
        for (topic, partition), p in list(self.replica_manager.partitions.items()):
            if p.log is not None and p.log.is_offline:
                out.add((topic, partition))
        return sorted(out)

    async def _offline_in_cluster(self, selected: Callable[[str, int], bool], why: str) -> None:
        """A cluster broker's log dir is offline: every broker is told its replicas there are offline (Metadata's
        offline replicas, as Kafka's controller marks them), then their leadership moves to other replicas."""
        announce = getattr(self.metadata, "set_offline_replicas", None)
        if announce is not None:
            try:
                await announce(self.node_id, self._offline_here())
            except Exception:  # noqa: BLE001 - ZooKeeper unreachable: the hand-over still moves the leaders
                log.exception("broker %d: could not record its offline replicas", self.node_id)
        await self.hand_over(selected, why, attempts=10)

    async def controlled_shutdown(self) -> None:
        """Before a cluster broker stops: hand every partition it leads to an in-sync replica and leave the
        ISRs it is in (controlled.shutdown.enable), retrying controlled.shutdown.max.retries times after
        controlled.shutdown.retry.backoff.ms; what is left then stays as it is, as Kafka stops anyway.

        Kafka's broker asks the controller to do this; here the broker writes the partition states itself,
        each conditional on the partition epoch it read (the controller's and leaders' concurrent writes
        make it read and decide again), which changes the same znodes the same way.
        """
        if not self.cluster_mode or not self.controlled_shutdown_enable:
            return
        self.shutting_down = True
        await self.hand_over(lambda topic, partition: True, "controlled shutdown",
                             self.controlled_shutdown_max_retries + 1)

    def log_dir_offline(self, log_dir: str) -> None:
        """A log dir failed (any thread): in a cluster the partitions it held go to other replicas, as Kafka's
        controller moves them on a log dir event; on a single node they are left without a leader, as Kafka's
        KRaft controller does (``directory_offline``). Either way they answer KAFKA_STORAGE_ERROR here.
        Once every log dir has failed the process halts (exit code 1, no shutdown), as Kafka's
        LogManager.handleLogDirFailure does: a broker with no disk left serves nothing, and its partitions
        move to other replicas only once it is gone."""
        offline = self.log_manager.failure_channel.offline_dirs
        if all(d in offline for d in self.log_manager.log_dirs):
            log.critical("Shutdown broker because all log dirs in %s have failed", ", ".join(self.log_manager.log_dirs))
            logging.shutdown()  # the line above reaches the log before the halt
            os._exit(1)
        if self.loop is None:
            return

        def in_dir(topic: str, partition: int) -> bool:
            p = self.replica_manager.get_partition(topic, partition)
            return p is not None and p.log.parent_dir == log_dir

        if self.cluster_mode:
            self.loop.call_soon_threadsafe(lambda: self.spawn(self._offline_in_cluster(
                in_dir, f"log dir {log_dir} offline")))
        else:
            self.loop.call_soon_threadsafe(lambda: self.spawn(self.directory_offline(in_dir, log_dir)))

    def mark_offline_at_start(self) -> int:
        """With a log dir offline at start, a partition assigned here whose log no online dir holds is taken to
        be in the offline dir (Kafka knows from the directory assigned in the metadata): it is marked offline
        instead of hosted, so no empty log is created for it elsewhere. Returns how many."""
        if not self.log_manager.failure_channel.offline_dirs:
            return 0
        marked = 0
        for topic in self.metadata.image.topics.values():
            for p in topic.partitions:
                if self.node_id in p.replicas and self.log_manager.get_log(topic.name, p.partition) is None:
                    self.replica_manager.mark_offline(topic.name, p.partition)
                    marked += 1
        return marked

    def any_lost_replicas(self) -> bool:
        """Whether ``lost_replicas`` can name a replica at all (a log dir here, or in a cluster any broker's, is
        or was offline)."""
        if self.cluster_mode:
            return bool(self.metadata.image.offline_replicas)
        return bool(self.replica_manager.offline_partitions or self.log_manager.failure_channel.offline_dirs)

    def lost_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """Replicas of the partition that are offline for want of their log dir, as far as this broker knows:
        on a single node its own replica when the dir holding it is offline (Kafka's broker registration lists
        its offline dirs and the controller marks their replicas offline); in a cluster those every broker
        announced (``_offline_in_cluster``)."""
        if self.cluster_mode:
            return self.metadata.image.offline_replicas.get((topic, partition), ())
        if (topic, partition) in self.replica_manager.offline_partitions:
            return (self.node_id,)
        p = self.replica_manager.get_partition(topic, partition)
        return (self.node_id,) if p is not None and p.log.is_offline else ()

    async def directory_offline(self, selected: Callable[[str, int], bool], log_dir: str, *,
                                 at_start: bool = False) -> None:
        """Single node: the partitions of an offline log dir lose their leader (leader -1, a new leader epoch,
        this replica out of the ISR with ELR) as Kafka's controller answers a heartbeat naming the dir
        (handleDirectoriesOffline); Metadata then answers LEADER_NOT_AVAILABLE with the replica offline.
        ``at_start``: the dir was offline when the broker started (registered): as in Kafka, its replica is then
        no longer an eligible leader either, though it stays the last known one."""
        image = self.metadata.image
        changed = 0
        for topic in image.topics.values():
            for p in topic.partitions:
                if self.node_id not in p.replicas or not selected(topic.name, p.partition):
                    continue
                new = directory_offline_change(LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.replicas,
                                               image.brokers, self.node_id, self.elr_enabled())
                if new is None:
                    if not (at_start and self.node_id in p.elr):
                        continue
                    new, eligible, last_known = LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.elr, p.last_known_elr
                else:
                    min_isr = self.min_insync_replicas(topic.name)
                    eligible = eligible_leader_replicas(p.isr, new.isr, p.elr, min_isr, self.elr_enabled())
                    last_known = eligible if new.leader == NO_LEADER else ()
                elr = tuple(r for r in eligible if r != self.node_id) if at_start else eligible
                try:
                    committed = await self.metadata.alter_partition(topic.name, p.partition, PartitionState(
                        p.partition, new.leader, new.leader_epoch, p.replicas, new.isr, p.partition_epoch + 1,
                        elr=elr, last_known_elr=last_known))
                except OSError as exc:  # the metadata's own dir failed too: Kafka's broker would halt
                    log.error("log dir %s offline: cannot record the partitions' new state: %s", log_dir, exc)
                    return
                changed += committed is not None
        log.info("log dir %s offline: %d partitions of broker %d left without a leader", log_dir, changed,
                 self.node_id)

    async def elect_recovered_replicas(self) -> None:
        """Single node, at start: a partition left leaderless by an offline log dir whose log is online again is
        led by this broker once more, as Kafka's controller elects the last eligible replica when its broker
        registers with the dir online."""
        image = self.metadata.image
        for topic in image.topics.values():
            for p in topic.partitions:
                new = recovered_replica_election(LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.replicas,
                                                 self.node_id)
                log_ = self.log_manager.get_log(topic.name, p.partition)
                if new is None or log_ is None or log_.is_offline:
                    continue
                await self.metadata.alter_partition(topic.name, p.partition, PartitionState(
                    p.partition, new.leader, new.leader_epoch, p.replicas, new.isr, p.partition_epoch + 1))
                log.info("%s-%d: led by broker %d again in epoch %d, its log dir online", topic.name, p.partition,
                         self.node_id, new.leader_epoch)

    async def hand_over(self, selected: Callable[[str, int], bool], why: str, attempts: int) -> None:
        """Move the selected partitions' leadership to other in-sync replicas and leave their ISRs (Kafka's
        controlled-shutdown election), conditionally on each partition epoch, in up to ``attempts`` rounds
        ``controlled.shutdown.retry.backoff.ms`` apart. A write refused because another writer (the controller,
        a leader changing its ISR) got there first is decided again on the state it wrote, at once: Kafka's
        controller, the only writer there, never sees such a conflict, so it must not cost a backoff here."""
        remaining = 0
        for attempt in range(1, attempts + 1):
            moved = remaining = 0
            for _ in range(CONFLICT_ROUNDS):
                done, stuck, conflicted = await self._round(selected)
                moved += done
                remaining = stuck + len(conflicted)
                if not conflicted:
                    break
                # The refused writes' winners are on their way: decide again once the image has them.
                await self.metadata.wait_for(  # type: ignore[attr-defined]
                    functools.partial(_newer_than, conflicted), CONFLICT_WAIT_S)
            log.info("%s of broker %d, attempt %d: %d partitions handed over, %d remaining", why, self.node_id,
                     attempt, moved, remaining)
            if not remaining:
                return
            if attempt < attempts:
                await asyncio.sleep(self.retry_backoff_ms / 1000)
        log.warning("%s of broker %d: %d partitions still led here after %d attempts", why, self.node_id, remaining,
                    attempts)

    async def _round(self, selected: Callable[[str, int], bool]
                               ) -> tuple[int, int, list[tuple[str, int, int]]]:
        """One pass of ``hand_over`` over the current image: (partitions moved, partitions led here that no
        other live in-sync replica can take, (topic, partition, epoch read) of the writes refused).

        Every partition is decided on the same image and written at once (up to HAND_OVER_WRITES in flight), as
        Kafka's controller moves a shutting-down broker's partitions in one batch: one write after another took
        a ZooKeeper round trip and an image per partition, 8 s for 300 partitions on 2 busy cores, while the
        cluster's clients and replicas took in leadership changes one by one. A partition followed here stops
        being fetched just before its own write, as before."""
        image = self.metadata.image
        stuck = 0
        writes: list[tuple[str, PartitionState, bool]] = []
        for topic in image.topics.values():
            for p in topic.partitions:
                if self.node_id not in p.replicas or not selected(topic.name, p.partition):
                    continue
                hosted = self.replica_manager.get_partition(topic.name, p.partition)
                if hosted is not None and hosted.log is not None and hosted.log.is_offline:
                    self.replica_fetchers.unfollow(topic.name, p.partition)  # no log to fetch into: out for good
                new = controlled_shutdown_election(LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.replicas,
                                                   image.brokers, self.node_id)
                if new is None:
                    if self.shutting_down and p.leader != self.node_id:
                        self.replica_fetchers.unfollow(topic.name, p.partition)
                    # Led here with nobody else in sync: waiting helps only if another replica is alive.
                    stuck += p.leader == self.node_id and any(
                        r != self.node_id and r in image.brokers for r in p.replicas)
                    continue
                writes.append((topic.name, PartitionState(p.partition, new.leader, new.leader_epoch, p.replicas,
                                                          new.isr, p.partition_epoch + 1), p.leader != self.node_id))
        in_flight = asyncio.Semaphore(HAND_OVER_WRITES)

        async def write(name: str, state: PartitionState, following: bool) -> PartitionState | None:
            async with in_flight:
                if following and self.shutting_down:
                    self.replica_fetchers.unfollow(name, state.partition)  # just before it leaves the ISR
                return await self.metadata.alter_partition(name, state.partition, state)

        committed = await asyncio.gather(*(write(*w) for w in writes))
        conflicted = [(name, state.partition, state.partition_epoch - 1)
                      for (name, state, _), done in zip(writes, committed, strict=True) if done is None]
        return len(writes) - len(conflicted), stuck, conflicted

    def delete_stray_logs(self, deleted_topics: Mapping[uuid.UUID, str] = MappingProxyType({})) -> None:
        """Stray logs at start, never served, as Kafka 4.4's broker finds them (LogManager.isStrayKraftReplica): a
        log without a topic id (its partition.metadata is written before its first records: it has none), or whose
        topic id the metadata does not have (its topic deleted while this broker was down or before it renamed the
        dirs, or deleted and created again under the same name), is renamed ``-stray`` and kept, as Kafka keeps
        it (a metadata read wrongly empty must not cost data), and the current topic's partition gets a new log;
        a log of a partition reassigned away is deleted. ``deleted_topics`` (id -> name: a single node's store,
        which remembers the topics it deleted until their logs are renamed): their logs are deleted, as the renames
        would have (one without a topic id by its name, when no topic has that name now). A topic of ZooKeeper's
        without an id (created before Kafka 2.8) has logs without one too: those stay."""
        image = self.metadata.image
        deleted_names = set(deleted_topics.values())
        for lg in self.log_manager.all_logs():
            topic, partition, topic_id = lg.topic, lg.partition, lg.topic_id
            current = image.topics.get(topic)
            if topic_id in deleted_topics if topic_id is not None else current is None and topic in deleted_names:
                log.info("broker %d: deleting the log of %s-%d (topic id %s): its topic was deleted before the "
                         "broker stopped", self.node_id, topic, partition, topic_id)
                self.log_manager.delete_log(topic, partition)
                continue
            if current is None or (current.topic_id.int and current.topic_id != topic_id):
                log.info("broker %d: stray log %s-%d (topic id %s): the metadata's topic %s is %s", self.node_id,
                         topic, partition, topic_id, topic, current.topic_id if current is not None else "absent")
                self.log_manager.mark_stray(topic, partition)
                continue
            p = image.partition(topic, partition)
            if p is not None and self.node_id not in p.replicas:
                log.info("broker %d: deleting stray log %s-%d (replicas %s)", self.node_id, topic, partition,
                         list(p.replicas))
                self.log_manager.delete_log(topic, partition)


def _newer_than(read: list[tuple[str, int, int]], image: MetadataImage) -> bool:
    """Whether ``image`` holds a newer state than the (topic, partition, partition epoch) ``read`` (or none)."""
    return all((p := image.partition(t, n)) is None or p.partition_epoch > epoch for t, n, epoch in read)
