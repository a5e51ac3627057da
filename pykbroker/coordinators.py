"""The broker's coordinators: group (``__consumer_offsets``), transaction (``__transaction_state``) and share
(``__share_group_state``), each built on first use (importing them is a third of start-up) or at start when
its topic exists, and what the metadata publisher tells them: a coordinator partition led here (load it), led
elsewhere now (unload it), a data partition's leadership moved (share-partitions reload), a topic deleted (its
committed offsets and share state go).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from pykbroker.internal_topics import (
    GROUP_METADATA_TOPIC_NAME,
    SHARE_GROUP_STATE_TOPIC_NAME,
    TRANSACTION_STATE_TOPIC_NAME,
    InternalTopics,
)
from replication.metadata.features import SHARE_VERSION, TRANSACTION_VERSION

if TYPE_CHECKING:
    from coordinator.group import GroupCoordinator
    from coordinator.share.service import ShareGroupService
    from coordinator.transaction.coordinator import TransactionCoordinator
    from pykbroker.config import Config
    from pykbroker.dynamic_config import DynamicBrokerConfig
    from pykbroker.txn_marker_channel import TxnMarkerChannel
    from replication.broker_client import BrokerClientPool
    from replication.metadata.image import MetadataWriter, TopicState
    from replication.replica_manager import ReplicaManager

__all__ = ["Coordinators"]

Spawn = Callable[[Coroutine[Any, Any, Any]], Any]
# WriteTxnMarkers' own connection to each broker (Kafka's TransactionMarkerChannelManager has its own NetworkClient):
# a marker append waits for acks=all, and nothing else should queue behind it.
TXN_MARKER_CHANNEL = "txn-markers"


class Coordinators:
    """The coordinators of broker ``node_id``, built on first use; ``spawn`` runs a background task."""

    def __init__(self, config: Config, node_id: int, metadata: MetadataWriter, replica_manager: ReplicaManager,
                 internal_topics: InternalTopics, dynamic_config: DynamicBrokerConfig, producer_ids: Any,
                 broker_clients: BrokerClientPool, spawn: Spawn) -> None:
        self.config = config
        self.node_id = node_id
        self.metadata = metadata
        self.replica_manager = replica_manager
        self.internal_topics = internal_topics
        self.dynamic_config = dynamic_config
        self.producer_ids = producer_ids
        self.broker_clients = broker_clients
        self.spawn = spawn
        self.cluster_mode = config["zookeeper.connect"] is not None
        self._group: GroupCoordinator | None = None
        self._transaction: TransactionCoordinator | None = None
        self._share: ShareGroupService | None = None
        self.dead_letters: Any = None  # the share groups' ShareGroupDeadLetters, built with ``share``
        self._marker_channel: TxnMarkerChannel | None = None

    # -- the coordinators, built on first use ----------------------------------------------------------
    @property
    def group(self) -> GroupCoordinator:
        """Consumer groups and committed offsets, stored in __consumer_offsets."""
        if self._group is None:
            from coordinator.group import (
                GroupCoordinator,
                GroupCoordinatorConfig,
                MetadataStoreTopics,
                SystemClock,
            )
            from coordinator.group.group_config import GroupConfigs
            from coordinator.runtime.partition_log import ReplicaCoordinatorLog

            clock = SystemClock()
            topics = self.internal_topics
            self._group = GroupCoordinator(
                GroupCoordinatorConfig.from_properties(self.config.__getitem__), self.node_id,
                MetadataStoreTopics(self.metadata),
                lambda partition: ReplicaCoordinatorLog(self.replica_manager, partition, clock,
                                                        topic=GROUP_METADATA_TOPIC_NAME,
                                                        append_timeout_ms=self.config["offsets.commit.timeout.ms"]),
                clock=clock,
                partition_leader=lambda p: topics.partition_leader(GROUP_METADATA_TOPIC_NAME, p),
                partition_hosted=lambda p: self._leads(GROUP_METADATA_TOPIC_NAME, p),
                ensure_offsets_topic=topics.ensure_offsets_topic,
                group_configs=GroupConfigs(lambda: self.metadata.image.group_configs,
                                           lambda name: self.dynamic_config.current[name]))
        return self._group

    @property
    def transaction(self) -> TransactionCoordinator:
        """Transactions, stored in __transaction_state."""
        if self._transaction is None:
            from coordinator.runtime.partition_log import ReplicaCoordinatorLog
            from coordinator.transaction.coordinator import TransactionConfig, TransactionCoordinator

            group_coordinator = self.group
            clock = group_coordinator.clock
            topics = self.internal_topics
            self._transaction = TransactionCoordinator(
                TransactionConfig.from_properties(self.config.__getitem__), self.node_id,
                log_factory=lambda partition: ReplicaCoordinatorLog(self.replica_manager, partition, clock,
                                                                    topic=TRANSACTION_STATE_TOPIC_NAME,
                                                                    append_timeout_ms=self.config["request.timeout.ms"]),
                replica_manager=self.replica_manager, group_coordinator=group_coordinator,
                producer_ids=self.producer_ids, ensure_state_topic=topics.ensure_transaction_state_topic,
                partition_leader=lambda p: topics.partition_leader(TRANSACTION_STATE_TOPIC_NAME, p),
                coordinator_epoch=self._transaction_state_leader_epoch, clock=clock,
                transaction_version=lambda: self.metadata.image.finalized_features.get(TRANSACTION_VERSION, 0),
                data_partition_leader=self._partition_leader, remote_markers=self._send_txn_markers,
                partition_hosted=lambda p: self._leads(TRANSACTION_STATE_TOPIC_NAME, p))
        return self._transaction

    @property
    def share(self) -> ShareGroupService:
        """Share groups (KIP-932): state in __share_group_state."""
        if self._share is None:
            from coordinator.runtime.partition_log import ReplicaCoordinatorLog
            from coordinator.share.service import ShareGroupService

            clock = self.group.clock
            topics = self.internal_topics

            def topic_by_name(name: str):
                topic = self.metadata.image.topics.get(name)
                return (topic.topic_id, len(topic.partitions)) if topic is not None else None

            def topic_name(topic_id):
                topic = self.metadata.image.topics_by_id.get(topic_id)
                return topic.name if topic is not None else None

            self._share = ShareGroupService(
                self.config.__getitem__, self.node_id, self.replica_manager,
                lambda partition: ReplicaCoordinatorLog(self.replica_manager, partition, clock,
                                                        topic=SHARE_GROUP_STATE_TOPIC_NAME),
                topic_by_name=topic_by_name, topic_name=topic_name,
                group_configs=lambda group_id: self.metadata.image.group_configs.get(group_id, {}),
                ensure_state_topic=topics.ensure_share_group_state_topic, clock=clock,
                partition_leader=lambda p: topics.partition_leader(SHARE_GROUP_STATE_TOPIC_NAME, p),
                existing_topics=lambda: self.metadata.image.topics,
                send=self._send_to_broker if self.cluster_mode else None,
                coordinates=self._coordinates_group if self.cluster_mode else (lambda group_id: True),
                group_coordinator=self.group, dead_letters=self._dead_letter_sink(),
                dead_letters_enabled=lambda group_id: self.dead_letters.enabled(group_id),
                partition_hosted=lambda p: self._leads(SHARE_GROUP_STATE_TOPIC_NAME, p))
        return self._share

    def _dead_letter_sink(self):
        """The share groups' dead-letter queue (KIP-1191) as a share-partition's callback."""
        from pykbroker.share_dead_letters import DeadLetter, ShareGroupDeadLetters
        from replication.partition import read_bytes
        from replication.replica_manager import FetchPartition
        from wire.messages import ProduceRequest, ProduceResponse
        from wire.messages.produce_request import PartitionProduceData, TopicProduceData

        image = lambda: self.metadata.image  # noqa: E731 - the image of the moment

        def topic(name: str):
            state = image().topics.get(name)
            if state is None:
                return None
            return len(state.partitions), state.configs, lambda p: state.partitions[p].leader

        async def produce(leader: int, name: str, partition: int, batch: bytes) -> int:
            request = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
                name=name, partition_data=[PartitionProduceData(index=partition, records=batch)])])
            response = await self.broker_clients.get(leader).request(request, 9, ProduceResponse)
            return response.responses[0].partition_responses[0].error_code

        def read(name: str, partition: int, offset: int, max_bytes: int) -> bytes:
            fetched = self.replica_manager.read_partitions([FetchPartition(name, partition, offset, max_bytes)],
                                                           max_bytes, False)[0]
            return read_bytes(fetched.read.records) if fetched.read is not None else b""

        self.dead_letters = ShareGroupDeadLetters(
            config=lambda name: self.dynamic_config.current[name],
            group_configs=lambda group_id: image().group_configs.get(group_id, {}),
            share_version=lambda: image().finalized_features.get(SHARE_VERSION, 0), topic=topic,
            create_topic=self.internal_topics.create_dead_letter_topic, produce=produce, read=read)
        sink = self.dead_letters
        return lambda group_id, name, partition, first, last, count, cause, done: sink.enqueue(
            DeadLetter(group_id, name, partition, first, last, count, cause, done))

    @property
    def built_group(self) -> GroupCoordinator | None:
        """The group coordinator if something built it already (observers must not build it)."""
        return self._group

    @property
    def built_share(self) -> ShareGroupService | None:
        """The share group service if something built it already (observers must not build it)."""
        return self._share

    def load_all(self) -> None:
        """At start: each coordinator whose topic exists replays the partitions led here."""
        topics = self.metadata.image.topics
        if GROUP_METADATA_TOPIC_NAME in topics:
            self.group.load_all()  # rebuild groups and offsets by replaying __consumer_offsets
        if TRANSACTION_STATE_TOPIC_NAME in topics:
            self.transaction.load_all()  # and transactions, finishing half-ended ones
        if SHARE_GROUP_STATE_TOPIC_NAME in topics:
            self.share.load_all()  # and share-partition state, by replaying __share_group_state

    async def close(self) -> None:
        if self._share is not None:
            await self._share.close()
        if self._transaction is not None:
            await self._transaction.close()
        if self._group is not None:
            await self._group.close()

    # -- what the metadata publisher tells them --------------------------------------------------------
    def elected(self, topic: str, partition: int) -> None:
        """Leading a coordinator partition: its coordinator loads it (a coordinator not built yet loads on use)."""
        if topic == GROUP_METADATA_TOPIC_NAME and self._group is not None:
            self._group.on_election(partition)
        elif topic == TRANSACTION_STATE_TOPIC_NAME and self._transaction is not None:
            self._transaction.on_election(partition)
        elif topic == SHARE_GROUP_STATE_TOPIC_NAME and self._share is not None:
            self._share.coordinator.on_election(partition)
        if topic in (GROUP_METADATA_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME) and self._share is not None:
            self._share.coordination_changed()

    def resigned(self, topic: str, partition: int) -> None:
        """No longer leading a coordinator partition: its coordinator unloads it."""
        if topic == GROUP_METADATA_TOPIC_NAME and self._group is not None:
            self.spawn(self._group.on_resignation(partition))
        elif topic == TRANSACTION_STATE_TOPIC_NAME and self._transaction is not None:
            self._transaction.on_resignation(partition)
        elif topic == SHARE_GROUP_STATE_TOPIC_NAME and self._share is not None:
            self.spawn(self._share.coordinator.on_resignation(partition))

    def leadership_changed(self, topic_id: uuid.UUID, partition: int) -> None:
        """Share-partitions of a partition this broker stopped leading (or leads anew) are loaded again."""
        if self._share is not None:
            self._share.partitions.on_leadership_changed(topic_id, partition)

    async def topic_deleted(self, topic: TopicState) -> None:
        """As Kafka, on every broker: the groups this broker coordinates lose their committed offsets of the
        deleted topic, and its share-partition state goes (an internal topic's share state is never kept)."""
        if self._group is not None:  # else no group has state yet
            await self._group.on_partitions_deleted([(topic.name, p.partition) for p in topic.partitions])
        if self._share is not None and not topic.name.startswith("__"):
            await self._share.on_topic_deleted(topic.topic_id)

    def connection_closed(self, peer: str) -> None:
        """A client connection closed: as Kafka, the share sessions opened on it end and release their records."""
        if self._share is not None:
            self._share.connection_closed(peer)

    # -- what the coordinators ask of the broker -------------------------------------------------------
    def _coordinates_group(self, group_id: str) -> bool:
        """Whether this broker is ``group_id``'s coordinator (leads its __consumer_offsets partition)."""
        return self.group.coordinator_for(group_id) == self.node_id

    async def _send_to_broker(self, node_id: int, request: Any, version: int, response_class: Any) -> Any:
        """One request to another broker of the cluster (the share coordinator's state RPCs)."""
        return await self.broker_clients.get(node_id).request(request, version, response_class)

    def _transaction_state_leader_epoch(self, partition: int) -> int:
        """The coordinator epoch of a __transaction_state partition: its leader epoch."""
        p = self.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, partition)
        return max(p.leader_epoch, 0) if p is not None else 0

    def _leads(self, topic: str, partition: int) -> bool:
        """Whether this broker's replica manager leads ``topic-partition`` (a coordinator loads it only then)."""
        p = self.replica_manager.get_partition(topic, partition)
        return p is not None and p.is_leader

    def _partition_leader(self, topic: str, partition: int) -> int | None:
        """The leader of ``topic-partition`` in the current image (-1: none), None when it does not exist."""
        p = self.metadata.image.partition(topic, partition)
        return p.leader if p is not None else None

    async def _send_txn_markers(self, leader: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                commit: bool, partitions: list[tuple[str, int]],
                                transaction_version: int) -> dict[tuple[str, int], int]:
        """A transaction's marker to the broker leading ``partitions``, in the next WriteTxnMarkers to that broker
        with every other transaction's queued for it (``TxnMarkerChannel``); each partition's error code."""
        from wire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic

        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        result = await self._txn_marker_channel().write(leader, WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch, transaction_version=transaction_version,
            topics=[WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()]))
        return {(t.name, p.partition_index): p.error_code for t in result.topics for p in t.partitions}

    def _txn_marker_channel(self) -> TxnMarkerChannel:
        if self._marker_channel is None:
            from pykbroker.txn_marker_channel import TxnMarkerChannel

            self._marker_channel = TxnMarkerChannel(self._write_txn_markers, self.spawn)
        return self._marker_channel

    async def _write_txn_markers(self, leader: int, markers: list) -> list:
        """One WriteTxnMarkers to ``leader`` at the highest version both serve, as Kafka's
        TransactionMarkerChannelManager through its NetworkClient: v2 with the transaction version (KIP-1228) when
        the peer serves it, v1 (without) to an older one."""
        from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse

        client = self.broker_clients.get(leader, TXN_MARKER_CHANNEL)
        version = await client.usable_version(WriteTxnMarkersRequest)
        response = await client.request(WriteTxnMarkersRequest(markers=markers), version, WriteTxnMarkersResponse)
        return list(response.markers)
