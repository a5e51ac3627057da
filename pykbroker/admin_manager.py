"""The admin operations request handlers call (Kafka's ZkAdminManager): topics, partitions, topic and broker
configs, and the cluster-wide min.insync.replicas eligible leader replicas require.

Each writes the cluster metadata and returns; every broker then acts on the published image (its
``BrokerMetadataPublisher``). Handlers validate first: these operations trust their arguments.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping

from pykbroker.config import Config
from pykbroker.dynamic_config import MIN_INSYNC_REPLICAS
from pykbroker.topic_names import topic_name_error
from replication.metadata.embedded_store import uuid_to_kafka_string
from replication.metadata.image import MetadataWriter, TopicState

__all__ = ["AdminManager", "ELR_FEATURE"]

ELR_FEATURE = "eligible.leader.replicas.version"

log = logging.getLogger("pykbroker.broker")


class AdminManager:
    """Admin writes to ``metadata``; ``deletions_done`` waits until this broker's publisher has dropped the
    state of every deleted topic (``BrokerMetadataPublisher.deletions_done``)."""

    def __init__(self, config: Config, metadata: MetadataWriter,
                 deletions_done: Callable[[], Awaitable[None]]) -> None:
        self.config = config
        self.metadata = metadata
        self._deletions_done = deletions_done

    # -- topics ------------------------------------------------------------------------------------------
    async def create_topic(self, name: str, assignments: list[list[int]], configs: dict[str, str]) -> TopicState:
        """Create a topic (metadata first; its logs follow the published image); the caller has validated it."""
        topic = await self.metadata.create_topic(name, assignments, configs)
        log.info("created topic %s (id %s) with %d partitions", name, uuid_to_kafka_string(topic.topic_id),
                 len(assignments))
        return topic

    async def catch_up(self, names: Collection[str]) -> None:
        """Until this broker's metadata has topics ``names`` as the cluster has them now (a moment after another
        broker's write): CreateTopics, DeleteTopics, CreatePartitions and AlterConfigs decide on that, as Kafka's
        controller. Names no topic can have are left out (their requests are refused without looking)."""
        await self.metadata.catch_up([name for name in names if topic_name_error(name) is None])

    async def delete_topic(self, name: str) -> None:
        """Delete a topic; every broker's publisher drops its partitions, offsets and share state once the
        image without it arrives (on a single node at once: the answer waits for that)."""
        await self.metadata.delete_topic(name)
        await self._deletions_done()
        log.info("deleted topic %s", name)

    async def create_partitions(self, name: str, new_assignments: list[list[int]], expected: int) -> None:
        """Add partitions to a topic planned with ``expected`` partitions (``PartitionCountChanged`` if it has
        another count now, ``KeyError`` if it is gone)."""
        await self.metadata.add_partitions(name, new_assignments, expected)

    async def alter_topic_configs(self, name: str, configs: dict[str, str],
                                  base: Mapping[str, str] | None = None) -> None:
        """Replace the topic's explicitly set configs, or (``base``: what they were made from) change the keys
        that differ from it; live logs pick them up at once."""
        await self.metadata.set_topic_configs(name, configs, base)

    # -- dynamic broker configs --------------------------------------------------------------------------
    async def alter_broker_configs(self, resource_name: str, configs: dict[str, str],
                                   base: Mapping[str, str] | None = None) -> None:
        """Store the dynamic configs of one BROKER resource (``base``: as for topics); the published image applies
        them at once."""
        await self.metadata.set_broker_configs({resource_name: configs},
                                               None if base is None else {resource_name: base})

    @property
    def elr_enabled(self) -> bool:
        """Eligible leader replicas (KIP-966) are finalized: min.insync.replicas is then cluster-wide only."""
        return self.metadata.image.finalized_features.get(ELR_FEATURE, 0) >= 1

    async def ensure_elr_min_insync_replicas(self) -> None:
        """With ELR enabled the cluster holds a dynamic default min.insync.replicas and no broker overrides it;
        Kafka's controller writes them when ELR gets enabled (a new cluster: at first start), and so does this."""
        stored = self.metadata.image.broker_configs
        if MIN_INSYNC_REPLICAS in stored.get("", {}) and not any(
                MIN_INSYNC_REPLICAS in configs for name, configs in stored.items() if name):
            return
        changes = {name: {k: v for k, v in configs.items() if k != MIN_INSYNC_REPLICAS}
                   for name, configs in stored.items() if name and MIN_INSYNC_REPLICAS in configs}
        default = dict(stored.get("", {}))
        default.setdefault(MIN_INSYNC_REPLICAS, str(self.config["min.insync.replicas"]))
        changes[""] = default
        await self.metadata.set_broker_configs(changes)
        log.info("generated cluster-level min.insync.replicas of %s (eligible leader replicas are enabled)",
                 default[MIN_INSYNC_REPLICAS])
