"""Topics the broker creates by itself: the coordinators' internal topics on first use, and topics a Metadata
request names when auto.create.topics.enable allows it (Kafka's AutoTopicCreationManager).

Creation goes through the metadata store like any CreateTopics; the logs follow the published image.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from replication.assignment import assign_replicas
from wire import ErrorCode

if TYPE_CHECKING:
    from coordinator.group.streams_topology import InternalTopic
    from pykbroker.config import Config
    from replication.metadata.image import MetadataWriter, TopicState

__all__ = ["GROUP_METADATA_TOPIC_NAME", "SHARE_GROUP_STATE_TOPIC_NAME", "TRANSACTION_STATE_TOPIC_NAME",
           "InternalTopics"]

# The coordinators' topics, named here so that looking for them at start does not import the
# coordinators (tests/pykbroker/test_broker.py checks them against coordinator/).
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"

log = logging.getLogger("pykbroker.broker")

CreateTopic = Callable[[str, list[list[int]], dict[str, str]], Awaitable["TopicState"]]


class InternalTopics:
    """Creates the coordinators' topics and auto-created topics of broker ``node_id``; ``create_topic`` writes a
    new topic to the metadata (and raises KeyError when it exists)."""

    def __init__(self, config: Config, node_id: int, metadata: MetadataWriter, create_topic: CreateTopic,
                 broker_racks: Callable[[], dict[int, str | None]],
                 spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task] | None = None) -> None:
        """``spawn`` runs a background task (the broker's, so that it is waited for or cancelled at shutdown)."""
        self.config = config
        self.node_id = node_id
        self.metadata = metadata
        self.create_topic = create_topic
        self.broker_racks = broker_racks
        self.cluster_mode = config["zookeeper.connect"] is not None
        self._spawn = spawn or (lambda coro: asyncio.get_running_loop().create_task(coro))
        self._creating: set[str] = set()  # streams internal topics being created in the background

    def partition_leader(self, topic_name: str, partition: int) -> int | None:
        """The leader of a coordinator topic's partition. Before the topic exists a single node is going to
        lead it (it creates it on first use); a cluster's broker does not know yet (None)."""
        topic = self.metadata.image.topics.get(topic_name)
        if topic is None or partition >= len(topic.partitions):
            return None if self.cluster_mode else self.node_id
        return topic.partitions[partition].leader

    async def auto_create_topic(self, name: str) -> TopicState | None:
        """Create ``name`` with the broker defaults for a Metadata request; None when not allowed."""
        if not self.config.auto_create_topics_enable:
            return None
        existing = self.metadata.image.topics.get(name)
        if existing is not None:
            return existing
        live = self.metadata.image.live_broker_ids() or [self.node_id]
        replication = self.config.default_replication_factor if self.cluster_mode else 1
        if replication > len(live):
            log.info("not creating topic %s: default.replication.factor %d exceeds the %d registered brokers",
                     name, replication, len(live))
            return None
        try:
            return await self.create_topic(name, assign_replicas(self.config.num_partitions, replication, live,
                                                                   racks=self.broker_racks()), {})
        except KeyError:  # created meanwhile (by another request, or another broker)
            return self.metadata.image.topics.get(name)

    async def create_streams_internal_topic(self, name: str, partitions: int, replication_factor: int,
                                            configs: dict[str, str]) -> bool:
        """A streams group's repartition or changelog topic (replication 0: default.replication.factor), as
        Kafka 4.4's group coordinator creates them (a factor of 0 or -1: default.replication.factor); False when
        it cannot be placed yet or exists."""
        if self.metadata.image.topics.get(name) is not None:
            return False
        live = self.metadata.image.live_broker_ids() or [self.node_id]
        replication = replication_factor if replication_factor > 0 else (
            self.config.default_replication_factor if self.cluster_mode else 1)
        if replication > len(live):
            log.warning("not creating streams internal topic %s: replication factor %d exceeds the %d live brokers",
                        name, replication, len(live))
            return False
        try:
            await self.create_topic(name, assign_replicas(partitions, replication, live, racks=self.broker_racks()),
                                    configs)
        except KeyError:
            return False
        return True

    def create_streams_internal_topics(self, group_id: str, topics: Sequence[InternalTopic]) -> None:
        """Create a streams group's missing repartition and changelog topics in the background, all at once, as
        Kafka 4.4's AutoTopicCreationManager does: the heartbeat that found them missing is answered at once
        (MISSING_INTERNAL_TOPICS, no tasks) and a later one finds them. A topic whose creation is under way is not
        asked for again by the heartbeats meanwhile."""
        wanted = [t for t in topics if t.name not in self._creating]
        if not wanted:
            return
        self._creating.update(t.name for t in wanted)

        async def create(t: InternalTopic) -> None:
            try:
                if await self.create_streams_internal_topic(t.name, t.partitions, t.replication_factor,
                                                            dict(t.configs)):
                    log.info("streams group %s: created internal topic %s (%d partitions)", group_id, t.name,
                             t.partitions)
            except Exception as exc:  # noqa: BLE001 - the status stays MISSING_INTERNAL_TOPICS; the next beat retries
                log.warning("streams group %s: cannot create internal topic %s: %s", group_id, t.name, exc)
            finally:
                self._creating.discard(t.name)

        async def create_all() -> None:
            await asyncio.gather(*(create(t) for t in wanted))

        self._spawn(create_all())

    async def create_dead_letter_topic(self, name: str, configs: dict[str, str]) -> bool:
        """A share group's dead-letter queue topic (KIP-1191) with the broker's num.partitions and
        default.replication.factor, as Kafka's DLQ manager creates it; False when it cannot be placed or exists."""
        if self.metadata.image.topics.get(name) is not None:
            return False
        live = self.metadata.image.live_broker_ids() or [self.node_id]
        replication = self.config.default_replication_factor if self.cluster_mode else 1
        if replication > len(live):
            log.warning("not creating dead-letter queue topic %s: default.replication.factor %d exceeds the %d live "
                        "brokers", name, replication, len(live))
            return False
        try:
            await self.create_topic(name, assign_replicas(self.config.num_partitions, replication, live,
                                                          racks=self.broker_racks()), configs)
        except KeyError:
            return False
        return True

    def _assignment(self, name: str, partitions: int, replication_factor: int) -> list[list[int]]:
        """Replicas of a coordinator topic: a single node holds one replica of each partition; a cluster
        places ``replication_factor`` of them, and refuses (COORDINATOR_NOT_AVAILABLE) until enough brokers
        are registered, as Kafka does. A broker that is down but was registered (it holds replicas of other
        topics) counts, as Kafka 4.4's fenced brokers count: with too few live brokers the leader and the ISR
        are live ones and the rest of the replicas go to the down brokers, which catch up when they are back
        (Kafka's StripedReplicaPlacer), so that a 3-broker cluster that lost one still gets its first
        transactional producer or share group going."""
        live = self.metadata.image.live_broker_ids() or [self.node_id]
        if not self.cluster_mode:
            return [[self.node_id] for _ in range(partitions)]
        if len(live) >= replication_factor:
            return assign_replicas(partitions, replication_factor, live, racks=self.broker_racks())
        down = sorted({b for t in self.metadata.image.topics.values() for p in t.partitions for b in p.replicas}
                      - set(live))
        if len(live) + len(down) < replication_factor:
            # Imported here: a broker starts without importing the coordinators.
            from coordinator.runtime.errors import ApiError

            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                           f"Number of alive brokers '{len(live)}' does not meet the required replication factor "
                           f"'{replication_factor}' for the {name} topic")
        extra = replication_factor - len(live)
        return [replicas + [down[(i + j) % len(down)] for j in range(extra)]
                for i, replicas in enumerate(assign_replicas(partitions, len(live), live, racks=self.broker_racks()))]

    async def _create(self, name: str, assignment: list[list[int]], configs: dict[str, str]) -> None:
        """Create a coordinator topic on first use. Another broker asked at the same moment (or this one's
        earlier attempt, whose answer a lost ZooKeeper connection swallowed) may have created it first: that is
        no failure, as Kafka's AutoTopicCreationManager lets TopicExistsException go; the topic is waited
        for in this broker's image, and the client, told COORDINATOR_NOT_AVAILABLE meanwhile, asks again."""
        try:
            await self.create_topic(name, assignment, configs)
        except KeyError:
            log.info("topic %s was created meanwhile (another broker, or an earlier attempt); using it", name)
            wait_for = getattr(self.metadata, "wait_for", None)
            if wait_for is not None:
                await wait_for(lambda image: name in image.topics, 30.0)

    async def ensure_topic(self, name: str, partitions: int, replication_factor: int,
                           configs: Callable[[list[list[int]]], dict[str, str]]) -> None:
        """Create another internal topic (tiered storage's __remote_log_metadata) on first use, placed as the
        coordinator topics are; ``configs`` gets the assignment. Raises ApiError while too few brokers live."""
        if name in self.metadata.image.topics:
            return
        assignment = self._assignment(name, partitions, replication_factor)
        await self._create(name, assignment, configs(assignment))

    async def ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets (compacted) on first use."""
        if GROUP_METADATA_TOPIC_NAME in self.metadata.image.topics:
            return
        assignment = self._assignment(GROUP_METADATA_TOPIC_NAME, self.config["offsets.topic.num.partitions"],
                                      self.config["offsets.topic.replication.factor"])
        await self._create(GROUP_METADATA_TOPIC_NAME, assignment, {
            "cleanup.policy": "compact", "compression.type": "producer",
            "segment.bytes": str(self.config["offsets.topic.segment.bytes"])})

    async def ensure_transaction_state_topic(self) -> None:
        """Create __transaction_state (compacted) on first use."""
        if TRANSACTION_STATE_TOPIC_NAME in self.metadata.image.topics:
            return
        assignment = self._assignment(TRANSACTION_STATE_TOPIC_NAME,
                                      self.config["transaction.state.log.num.partitions"],
                                      self.config["transaction.state.log.replication.factor"])
        min_isr = min(self.config["transaction.state.log.min.isr"], len(assignment[0])) if self.cluster_mode else 1
        await self._create(TRANSACTION_STATE_TOPIC_NAME, assignment, {
            "cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(min_isr),
            "segment.bytes": str(self.config["transaction.state.log.segment.bytes"])})

    async def ensure_share_group_state_topic(self) -> None:
        """Create __share_group_state on first use (delete policy, retention -1, as Kafka's share coordinator
        creates it): one replica per partition on a single node, share.coordinator.state.topic.replication.factor
        in a cluster with min.insync.replicas share.coordinator.state.topic.min.isr."""
        if SHARE_GROUP_STATE_TOPIC_NAME in self.metadata.image.topics:
            return
        assignment = self._assignment(
            SHARE_GROUP_STATE_TOPIC_NAME, self.config["share.coordinator.state.topic.num.partitions"],
            self.config["share.coordinator.state.topic.replication.factor"])
        min_isr = min(self.config["share.coordinator.state.topic.min.isr"], len(assignment[0])) \
            if self.cluster_mode else 1
        await self._create(SHARE_GROUP_STATE_TOPIC_NAME, assignment, {
            "cleanup.policy": "delete", "compression.type": "producer", "retention.ms": "-1",
            "min.insync.replicas": str(min_isr),
            "segment.bytes": str(self.config["share.coordinator.state.topic.segment.bytes"])})
