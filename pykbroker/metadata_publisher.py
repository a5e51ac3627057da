"""The one road from a published metadata image to this broker's state (Kafka's BrokerMetadataPublisher).

Every image a store publishes (embedded: after each write; ZooKeeper: after each watched change) comes here
with the image before it, on every broker alike, whichever broker made the change:

- broker configs changed: the dynamic broker config is reloaded (``apply_broker_configs``);
- a partition assigned here whose state changed (once the controller has written its first state, as Kafka's
  brokers wait for its LeaderAndIsr: a new topic's logs are not created on every broker while the controller,
  on one of them, is still deciding its leaders): this broker leads it (a coordinator partition: its
  coordinator loads it) or follows its leader (a replica fetcher; a coordinator partition led here before is
  unloaded), and a partition reassigned away is stopped and its log deleted. A partition whose log does not
  exist yet gets it on the loop, up to ``sync_new_logs`` per image (``SYNC_NEW_LOGS`` at start, ``host_all``);
  the others are hosted once ``PendingLogs`` has created theirs in the background (``logs_created``);
- a topic's configs changed: its logs take them (and the controller, which elects with them, is told);
- a topic deleted (or deleted and created again between two images): its partitions are dropped (pending
  logs, fetchers, logs, fetch sessions), and the coordinators drop what they keep of it: committed offsets
  and share-partition state.

With ``defer_log_work`` (every broker, a single node's as a cluster's) no log is renamed, and no more than
``sync_new_logs`` created (a cluster: none; a single node: ``SINGLE_NODE_SYNC_NEW_LOGS``), while an image is applied:
the new image is every broker's answer to a client at once (the broker that handled a CreateTopics,
CreatePartitions or DeleteTopics answers when its image shows the change, as Kafka's controller answers once the
change is committed), and the file work follows ``log_work_delay`` later in slices between other requests, as
Kafka's brokers create and delete logs after the metadata changed:
new logs by ``PendingLogs`` (a produce waits for them; a fetch meanwhile is NOT_LEADER_OR_FOLLOWER, as on a Kafka
broker that has not applied the change yet), deleted topics' log dirs renamed by ``LogManager.rename_deleted`` (a
log created again under the same name first renames the old one; a broker killed before the renames finds them
stray at its next start, ``LeadershipHandOver.delete_stray_logs``, where a single node, whose store remembers the
deleted topics until ``deleted_logs_renamed``, deletes them instead). Measured on three
brokers under load: ten topics of 12 partitions created at 120 logs a broker (1.5 to 4 ms each) and deleted at
120 renames (3.7 ms each) kept both answers waiting up to 0.5 s.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from replication.pending_logs import SLICE_GAP_SECONDS

if TYPE_CHECKING:
    import uuid

    from replication.metadata.image import MetadataImage, PartitionState, TopicState
    from replication.partition import Partition
    from storage import LogConfig

__all__ = [
    "DEFERRED_LOG_WORK_DELAY",
    "SINGLE_NODE_LOG_WORK_DELAY",
    "SINGLE_NODE_SYNC_NEW_LOGS",
    "SYNC_NEW_LOGS",
    "BrokerMetadataPublisher",
]

# New logs created on the event loop (about 1.5 ms each) when the broker starts (``host_all``) or when an image is
# applied without ``defer_log_work``; the others follow in the background (replication/pending_logs.py), their
# partitions led in the metadata at once.
SYNC_NEW_LOGS = 64
# A single node's new logs created while an image is applied, before the CreateTopics or CreatePartitions answer:
# a topic of a few partitions then serves every request as soon as it is answered, as before (scripts and tests
# that do not retry a Fetch or ListOffsets rely on it); the logs of larger changes follow the answer, as on Kafka,
# whose answer comes once the change is committed and whose broker creates the logs when it applies the change
# (a request meanwhile: NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION, both retried by clients; a produce
# here waits for its logs instead). 10 topics x 40 partitions: the answer no longer waits for 64 logs (~0.1 s).
SINGLE_NODE_SYNC_NEW_LOGS = 8

# The longest a deleted topics' renames hold the loop before it serves others again (as PendingLogs' slices).
RENAME_SLICE_SECONDS = 0.02
# With defer_log_work: how long after an image the file work starts, so that the answers waiting for the image
# (a few hops through the event loop) go out before the first slice rather than one slice per hop. A cluster
# broker's answers wait for ZooKeeper's watches; a single node's commit is a few loop hops from its answer, and a
# longer delay only makes a client that asks at once for a new partition retry (NOT_LEADER_OR_FOLLOWER). A few new
# logs (replication.pending_logs.SMALL_BATCH_LOGS) start sooner: only a burst waits this long.
DEFERRED_LOG_WORK_DELAY = 0.05
SINGLE_NODE_LOG_WORK_DELAY = 0.002

log = logging.getLogger("pykbroker.broker")


class CoordinatorListener(Protocol):
    """What the publisher tells the coordinators (pykbroker.coordinators.Coordinators)."""

    def elected(self, topic: str, partition: int) -> None: ...

    def resigned(self, topic: str, partition: int) -> None: ...

    def leadership_changed(self, topic_id: uuid.UUID, partition: int) -> None: ...

    async def topic_deleted(self, topic: TopicState) -> None: ...


class BrokerMetadataPublisher:
    """Applies each new image of broker ``node_id``'s metadata to its replica manager, replica fetchers, logs
    and coordinators. ``shutting_down()``: controlled shutdown began (partitions followed here then fetch
    nothing); ``topic_configs_changed(name)``: the controller's hook (cluster mode); ``spawn`` runs a task;
    ``defer_log_work``: rename logs and create all but ``sync_new_logs`` (default none) ``log_work_delay`` seconds
    after an image is applied, not while (False: the first ``SYNC_NEW_LOGS`` new logs are created while and deleted
    logs renamed; the unit tests use it to see an image's effect at once);
    ``deleted_logs_renamed``: called once every deleted log so far has been renamed (a single node's store then
    forgets the deleted topics it kept for a restart)."""

    def __init__(self, node_id: int, *, replica_manager: Any, replica_fetchers: Any, log_manager: Any,
                 pending_logs: Any, fetch_sessions: Any, coordinators: CoordinatorListener,
                 log_config_for_topic: Callable[[str], LogConfig],
                 apply_broker_configs: Callable[[MetadataImage], None],
                 spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task],
                 shutting_down: Callable[[], bool] = lambda: False,
                 topic_configs_changed: Callable[[str], None] | None = None, defer_log_work: bool = False,
                 log_work_delay: float = DEFERRED_LOG_WORK_DELAY, sync_new_logs: int | None = None,
                 deleted_logs_renamed: Callable[[], None] | None = None) -> None:
        self.node_id = node_id
        self.replica_manager = replica_manager
        self.replica_fetchers = replica_fetchers
        self.log_manager = log_manager
        self.pending_logs = pending_logs
        self.fetch_sessions = fetch_sessions
        self.coordinators = coordinators
        self.log_config_for_topic = log_config_for_topic
        self.apply_broker_configs = apply_broker_configs
        self.spawn = spawn
        self.shutting_down = shutting_down
        self.topic_configs_changed = topic_configs_changed
        self.defer_log_work = defer_log_work
        self.log_work_delay = log_work_delay
        self.sync_new_logs = sync_new_logs if sync_new_logs is not None else 0 if defer_log_work else SYNC_NEW_LOGS
        self.deleted_logs_renamed = deleted_logs_renamed
        self._deletions: set[asyncio.Task] = set()  # the coordinators dropping deleted topics' state
        self._renames: asyncio.Task | None = None  # deleted topics' log dirs being renamed

    def publish(self, old: MetadataImage, new: MetadataImage) -> None:
        """Make this broker match a newly published image (a store's subscriber)."""
        if new.broker_configs is not old.broker_configs:
            self.apply_broker_configs(new)
        new_logs = self.sync_new_logs
        for name, topic in new.topics.items():
            before = old.topics.get(name)
            if before is not None and before.topic_id != topic.topic_id:
                self._topic_deleted(before)  # deleted and created again between two images
                before = None
            if before is topic:
                continue
            if before is not None and before.configs != topic.configs:
                self.replica_manager.update_log_config(name, self.log_config_for_topic(name))
                if self.topic_configs_changed is not None:
                    self.topic_configs_changed(name)
            new_logs = self.host_topic(topic, before, new_logs)
        for name in old.topics.keys() - new.topics.keys():
            self._topic_deleted(old.topics[name])

    def host_all(self, image: MetadataImage) -> None:
        """At start: lead or follow every partition of ``image`` assigned here."""
        new_logs = SYNC_NEW_LOGS
        for topic in image.topics.values():
            new_logs = self.host_topic(topic, new_logs=new_logs)

    def host_topic(self, topic: TopicState, old: TopicState | None = None, new_logs: int = 0) -> int:
        """Lead or follow each partition of ``topic`` assigned here whose state changed since ``old``. Up to
        ``new_logs`` partitions whose log does not exist yet get it now, on the loop; the others are hosted once
        ``pending_logs`` has created theirs in the background (Kafka's metadata, too, shows a new partition's
        leader before its broker has created the log). Returns how many of ``new_logs`` are left."""
        log_config = self.log_config_for_topic(topic.name)
        rm = self.replica_manager
        for p in topic.partitions:
            if (topic.name, p.partition) in rm.offline_partitions:
                continue  # its log dir is offline: never hosted (nor created) elsewhere
            if old is not None and p.partition < len(old.partitions) and old.partitions[p.partition] == p \
                    and rm.get_partition(topic.name, p.partition) is not None:
                continue
            hosted = rm.get_partition(topic.name, p.partition)
            if hosted is None and p.leader < 0 and not p.isr:
                continue  # no state yet (the controller has not decided it): Kafka's brokers wait for LeaderAndIsr
            if self.node_id not in p.replicas:
                self.pending_logs.discard(topic.name, p.partition)
            elif hosted is None and self.log_manager.get_log(topic.name, p.partition) is None:
                if new_logs <= 0:
                    self.pending_logs.add(topic.name, p.partition, topic.topic_id, log_config)
                    continue
                new_logs -= 1
            self._host_partition(topic, p, hosted, log_config)
        return new_logs

    def _host_partition(self, topic: TopicState, p: PartitionState, hosted: Partition | None,
                        log_config: LogConfig) -> None:
        """Lead, follow or drop ``p`` as its state says (``hosted``: the replica manager's partition, if any)."""
        rm = self.replica_manager
        was_leader = hosted is not None and hosted.is_leader
        old_epoch = hosted.leader_epoch if hosted is not None else -1
        if hosted is not None and hosted.log.is_offline and self.node_id in p.replicas:
            # Its log dir failed (Kafka's HostedPartition.Offline, skipped by applyDelta): it neither leads nor
            # fetches, or its fetches would take it back into the new leader's ISR without a log to write to.
            self.replica_fetchers.unfollow(topic.name, p.partition)
            return
        if p.leader == self.node_id:
            self.replica_fetchers.unfollow(topic.name, p.partition)
            rm.become_leader(topic.name, p.partition, topic.topic_id, p.leader_epoch, list(p.replicas),
                             list(p.isr), log_config, p.partition_epoch)
            if not was_leader or old_epoch != p.leader_epoch:
                self.coordinators.elected(topic.name, p.partition)
                self.coordinators.leadership_changed(topic.topic_id, p.partition)
        elif self.node_id in p.replicas:
            rm.become_follower(topic.name, p.partition, topic.topic_id, p.leader, p.leader_epoch,
                               list(p.replicas), list(p.isr), log_config, p.partition_epoch)
            if self.shutting_down():  # handed over: it must not fetch its way back into the ISR
                self.replica_fetchers.unfollow(topic.name, p.partition)
            else:
                self.replica_fetchers.follow(topic.name, p.partition, p.leader)
            if was_leader:
                self.coordinators.resigned(topic.name, p.partition)
                self.coordinators.leadership_changed(topic.topic_id, p.partition)
        elif hosted is not None:
            # Reassigned away (Kafka's StopReplica with deletion): stop fetching, drop the log.
            self.replica_fetchers.unfollow(topic.name, p.partition)
            rm.stop_replica(topic.name, p.partition)
            if was_leader:
                self.coordinators.resigned(topic.name, p.partition)
                self.coordinators.leadership_changed(topic.topic_id, p.partition)
            log.info("broker %d: %s-%d is no longer assigned here (replicas %s); its log is deleted", self.node_id,
                     topic.name, p.partition, list(p.replicas))

    def logs_created(self, created: list[tuple[str, int]], failed: list[tuple[tuple[str, int], Exception]],
                     image: MetadataImage) -> None:
        """``pending_logs`` created these logs: host each partition as ``image`` (the current one) has it. A log
        whose partition is gone meanwhile (topic deleted, or deleted and created again, or reassigned away) is
        deleted."""
        rm = self.replica_manager
        for name, partition in created:
            if rm.get_partition(name, partition) is not None:
                continue  # hosted meanwhile (its log existed when a newer image was applied)
            topic = image.topics.get(name)
            p = topic.partitions[partition] if topic is not None and partition < len(topic.partitions) else None
            log_ = self.log_manager.get_log(name, partition)
            if log_ is None:
                continue
            if topic is None or p is None or log_.topic_id != topic.topic_id or self.node_id not in p.replicas:
                self.log_manager.delete_log(name, partition)
                if topic is not None and p is not None and self.node_id in p.replicas:
                    self.pending_logs.add(name, partition, topic.topic_id, self.log_config_for_topic(name))
                continue
            if (name, partition) in rm.offline_partitions:
                continue
            self._host_partition(topic, p, None, self.log_config_for_topic(name))
        for (name, partition), exc in failed:
            log.error("could not create the log of %s-%d: %s", name, partition, exc)
            if name in image.topics:
                rm.mark_offline(name, partition)

    def _topic_deleted(self, topic: TopicState) -> None:
        """Drop a deleted topic's partitions here; the coordinators drop its offsets and share state (as Kafka,
        on every broker, whichever handled the DeleteTopics)."""
        name = topic.name
        self.pending_logs.discard_topic(name)
        for (t, partition) in [tp for tp in self.replica_manager.partitions if tp[0] == name]:
            self.replica_fetchers.unfollow(t, partition)
        self.replica_manager.delete_partitions(name, defer_renames=self.defer_log_work)
        if self.defer_log_work and (self._renames is None or self._renames.done()):
            self._renames = self.spawn(self._rename_deleted())
        self.fetch_sessions.remove_topic(name)
        task = self.spawn(self.coordinators.topic_deleted(topic))
        self._deletions.add(task)
        task.add_done_callback(self._deletions.discard)

    async def _rename_deleted(self) -> None:
        """Rename deleted logs' dirs in slices of ``RENAME_SLICE_SECONDS``, other work served between them."""
        await asyncio.sleep(self.log_work_delay)
        while self.log_manager.rename_deleted(RENAME_SLICE_SECONDS):
            await asyncio.sleep(SLICE_GAP_SECONDS)
        if self.deleted_logs_renamed is not None:
            self.deleted_logs_renamed()

    async def deletions_done(self) -> None:
        """Wait until the coordinators have dropped the state of every topic deleted so far (a single node's
        image loses a topic at once: its DeleteTopics answers once the topic's offsets are gone)."""
        if self._deletions:
            await asyncio.gather(*self._deletions, return_exceptions=True)
