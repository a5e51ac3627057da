"""Shared broker state: configuration, cluster metadata, the handler registry."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from coordinator.transaction.producer_ids import ProducerIdManager
from pykbroker.config import Config, Listener
from pykbroker.dynamic_config import MIN_INSYNC_REPLICAS, DynamicBrokerConfig
from pykbroker.iceberg.config import split_topic_configs
from pykbroker.iceberg.writer import ICEBERG_BROKER_PROPERTIES, IcebergService
from pykbroker.quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, QuotaManager, RequestQuotaManager
from pykbroker.registry import REGISTRY, Registry
from pykbroker.remote_storage import build_remote_log_manager
from pykbroker.replication_quota import ReplicationQuotaManager
from pykbroker.security.authorizer import build_authorizer
from pykbroker.security.delegation_tokens import DelegationTokenManager
from pykbroker.security.listeners import ListenerSecurity
from pykbroker.security.tls import reload_stores
from replication.assignment import assign_replicas
from replication.broker_client import BrokerClientPool
from replication.fetch_session import FetchSessionCache
from replication.metadata.embedded_store import (
    EmbeddedMetadataStore,
    load_or_create_cluster_id,
    uuid_to_kafka_string,
)
from replication.metadata.features import SHARE_VERSION, TRANSACTION_VERSION
from replication.metadata.image import BrokerImage, Endpoint, MetadataImage, PartitionState, TopicState
from replication.metadata.tokens import TokenStore
from replication.partition import Partition
from replication.pending_logs import PendingLogs
from replication.replica_fetcher import FetcherConfig, ReplicaFetcherManager
from replication.replica_manager import AppendResult, MetadataIsrUpdater, ReplicaManager
from replication.replica_selector import selector_for
from storage import LogConfig, LogManager
from wire import ApiKey, ErrorCode
from wire.messages import ApiVersionsResponse
from wire.messages.api_versions_response import ApiVersion

if TYPE_CHECKING:
    from coordinator.group import GroupCoordinator
    from coordinator.share.service import ShareGroupService
    from coordinator.transaction.coordinator import TransactionCoordinator
    from pykbroker.metrics.recorder import Recorder
    from replication.controller.zk_controller import ZkController
    from replication.metadata.image import MetadataWriter
    from replication.metadata.zk.cluster import ZooKeeperCluster
    from replication.metadata.zk.metadata_store import ZooKeeperMetadataStore

# The coordinators' topics, named here so that looking for them at start does not import the
# coordinators (tests/pykbroker/test_broker.py checks them against coordinator/).
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
SHARE_GROUP_STATE_TOPIC_NAME = "__share_group_state"
ELR_FEATURE = "eligible.leader.replicas.version"
# A hand-over write refused by a concurrent writer is decided again on the new state this many times per attempt,
# each after waiting up to CONFLICT_WAIT_S for that state to reach this broker's image.
CONFLICT_ROUNDS = 10
CONFLICT_WAIT_S = 1.0
# New logs one published image creates on the event loop (about 1.5 ms each): a topic of up to this many
# partitions (the internal topics' 50 included) serves as soon as CreateTopics answers; the logs of larger
# creations follow in the background (replication/pending_logs.py), their partitions led in the metadata at once.
SYNC_NEW_LOGS = 64

log = logging.getLogger("pykbroker.broker")


class Broker:
    """Everything request handlers share. Lives on the event loop; no locks needed."""

    # What the request path counts for metrics and the console (pykbroker.metrics); None while both are off.
    metrics: Recorder | None = None

    def __init__(self, config: Config, registry: Registry = REGISTRY) -> None:
        self.config = config
        self.registry = registry
        self.node_id = config.node_id
        self.zk: ZooKeeperCluster | None = None  # the ZooKeeper stores of a cluster broker
        self.controller: ZkController
        # Set by controlled shutdown: from then on this broker fetches nothing, so no leader adds it back to an
        # ISR it left (Kafka's controller sends StopReplica to the broker and refuses it as INELIGIBLE_REPLICA).
        self.shutting_down = False
        self.metadata: MetadataWriter
        self.producer_ids: Any
        if self.cluster_mode:
            self._init_cluster_mode()
        else:
            self.cluster_id = load_or_create_cluster_id(config.log_dirs, config.node_id, config["cluster.id"])
            self.metadata = EmbeddedMetadataStore(config.log_dirs[0], config.node_id, self.cluster_id)
            self.producer_ids = ProducerIdManager(config.log_dirs[0], config.node_id)
        # ACLs: the embedded store's, or ZooKeeper's /kafka-acl in a cluster (loaded when the broker starts).
        self.acl_store = self._acl_store()
        self.authorizer = build_authorizer(config, self.acl_store)  # None without authorizer.class.name
        self.delegation_tokens = self._delegation_token_manager()
        # Static properties < cluster-wide dynamic defaults < this broker's dynamic configs.
        self.dynamic_config = DynamicBrokerConfig(config, self.metadata.image.broker_configs.get("", {}),
                                                  self.metadata.image.broker_configs.get(str(self.node_id), {}))
        self.default_log_config = LogConfig.from_properties(self.dynamic_config.current.topic_defaults())
        self.log_manager = LogManager(
            list(config.log_dirs),
            default_config=self.default_log_config,
            log_initial_task_delay_ms=config["log.initial.task.delay.ms"],
            log_retention_check_interval_ms=config["log.retention.check.interval.ms"],
            log_flush_scheduler_interval_ms=config["log.flush.scheduler.interval.ms"],
            log_flush_offset_checkpoint_interval_ms=config["log.flush.offset.checkpoint.interval.ms"],
            log_flush_start_offset_checkpoint_interval_ms=config["log.flush.start.offset.checkpoint.interval.ms"],
            replica_high_watermark_checkpoint_interval_ms=config["replica.high.watermark.checkpoint.interval.ms"],
            num_recovery_threads_per_data_dir=config["num.recovery.threads.per.data.dir"],
            log_cleaner_enable=config["log.cleaner.enable"],
            log_cleaner_backoff_ms=config["log.cleaner.backoff.ms"],
            producer_id_expiration_ms=config["producer.id.expiration.ms"],
        )
        self.replica_manager = ReplicaManager(self.log_manager, self.node_id,
                                              replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
                                              isr_updater=MetadataIsrUpdater(self.metadata),
                                              in_metadata=lambda t, p: self.metadata.image.partition(t, p) is not None)
        self.replica_manager.leader_quota = self._replication_quota("leader")
        self.replica_manager.alter_log_dirs.io_max_bytes_per_second = self._alter_log_dirs_rate
        self.replica_manager.replica_selector = selector_for(config["replica.selector.class"])
        self.replica_manager.broker_racks = self.broker_racks
        self.remote_log_manager = build_remote_log_manager(self)  # tiered storage (KIP-405); None when off
        self.broker_clients = BrokerClientPool(self.node_id, self._inter_broker_endpoint,
                                               timeout_ms=config["request.timeout.ms"],
                                               max_idle_ms=config["connections.max.idle.ms"])
        self.replica_fetchers = ReplicaFetcherManager(
            self.node_id, self.replica_manager.get_partition, self._inter_broker_endpoint, FetcherConfig(
                max_wait_ms=config["replica.fetch.wait.max.ms"], min_bytes=config["replica.fetch.min.bytes"],
                partition_max_bytes=config["replica.fetch.max.bytes"],
                response_max_bytes=config["replica.fetch.response.max.bytes"],
                backoff_ms=config["replica.fetch.backoff.ms"], socket_timeout_ms=config["replica.socket.timeout.ms"]),
            quota=self._replication_quota("follower"))
        self.listener_security: dict[str, ListenerSecurity] = {}  # by listener name, set by the server
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"])
        # Built on first use (or at start when their topics exist): importing them is a third of start-up.
        self._group_coordinator: GroupCoordinator | None = None
        self._transaction_coordinator: TransactionCoordinator | None = None
        self._share_groups: ShareGroupService | None = None
        self.transaction_verification = bool(self.dynamic_config.current["transaction.partition.verification.enable"])
        # Client quotas (stored in the metadata store): produced and fetched bytes, and request handling time.
        self.produce_quota = QuotaManager(PRODUCER_BYTE_RATE, lambda: self.metadata.image.client_quotas,
                                          samples=config["quota.window.num"],
                                          window_seconds=config["quota.window.size.seconds"])
        self.fetch_quota = QuotaManager(CONSUMER_BYTE_RATE, lambda: self.metadata.image.client_quotas,
                                        samples=config["quota.window.num"],
                                        window_seconds=config["quota.window.size.seconds"])
        self.request_quota = RequestQuotaManager(lambda: self.metadata.image.client_quotas,
                                                 samples=config["quota.window.num"],
                                                 window_seconds=config["quota.window.size.seconds"])
        # Set by the server once sockets are bound (port 0 becomes the real port).
        self.bound_listeners: dict[str, Listener] = {}
        self._api_versions_cache: list[ApiVersion] | None = None
        self._background: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.log_manager.failure_channel.add_listener(self._on_log_dir_offline)
        self.pending_logs = PendingLogs(self.log_manager, self._logs_created)
        # Topics with iceberg.mode set: their led partitions are written into Iceberg tables (pykbroker.iceberg).
        self.iceberg = IcebergService({n: config[n] for n in ICEBERG_BROKER_PROPERTIES}, config.log_dirs[0],
                                      self.replica_manager, lambda: self.metadata.image)

    def _alter_log_dirs_rate(self) -> int | None:
        """replica.alter.log.dirs.io.max.bytes.per.second of this broker (or the cluster default); None: unset."""
        name = "replica.alter.log.dirs.io.max.bytes.per.second"
        value = self.dynamic_config.per_broker.get(name, self.dynamic_config.default.get(name))
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def _replication_quota(self, side: str) -> ReplicationQuotaManager:
        """The leader's or the follower's replication throttle (kafka-reassign-partitions --throttle)."""
        def topic_configs(name: str):
            topic = self.metadata.image.topics.get(name)
            return topic.configs if topic is not None else None

        return ReplicationQuotaManager(
            self.node_id, f"{side}.replication.throttled.rate", f"{side}.replication.throttled.replicas",
            lambda: (self.dynamic_config.per_broker, self.dynamic_config.default), topic_configs,
            samples=self.config["replication.quota.window.num"],
            window_seconds=self.config["replication.quota.window.size.seconds"])

    @property
    def group_coordinator(self) -> GroupCoordinator:
        """Consumer groups and committed offsets, stored in __consumer_offsets (created on first use)."""
        if self._group_coordinator is None:
            from coordinator.group import (
                GroupCoordinator,
                GroupCoordinatorConfig,
                MetadataStoreTopics,
                SystemClock,
            )
            from coordinator.group.group_config import GroupConfigs
            from coordinator.runtime.partition_log import ReplicaCoordinatorLog

            clock = SystemClock()
            self._group_coordinator = GroupCoordinator(
                GroupCoordinatorConfig.from_properties(self.config.__getitem__), self.node_id,
                MetadataStoreTopics(self.metadata),
                lambda partition: ReplicaCoordinatorLog(self.replica_manager, partition, clock,
                                                        topic=GROUP_METADATA_TOPIC_NAME,
                                                        append_timeout_ms=self.config["offsets.commit.timeout.ms"]),
                clock=clock,
                partition_leader=self._offsets_partition_leader, ensure_offsets_topic=self._ensure_offsets_topic,
                group_configs=GroupConfigs(lambda: self.metadata.image.group_configs,
                                           lambda name: self.dynamic_config.current[name]))
        return self._group_coordinator

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        """Transactions, stored in __transaction_state (created on first use)."""
        if self._transaction_coordinator is None:
            from coordinator.runtime.partition_log import ReplicaCoordinatorLog
            from coordinator.transaction.coordinator import TransactionConfig, TransactionCoordinator

            group_coordinator = self.group_coordinator
            clock = group_coordinator.clock
            self._transaction_coordinator = TransactionCoordinator(
                TransactionConfig.from_properties(self.config.__getitem__), self.node_id,
                log_factory=lambda partition: ReplicaCoordinatorLog(self.replica_manager, partition, clock,
                                                                    topic=TRANSACTION_STATE_TOPIC_NAME,
                                                                    append_timeout_ms=self.config["request.timeout.ms"]),
                replica_manager=self.replica_manager, group_coordinator=group_coordinator,
                producer_ids=self.producer_ids, ensure_state_topic=self._ensure_transaction_state_topic,
                partition_leader=self._transaction_state_partition_leader,
                coordinator_epoch=self._transaction_state_leader_epoch, clock=clock,
                transaction_version=lambda: self.metadata.image.finalized_features.get(TRANSACTION_VERSION, 0),
                data_partition_leader=self._partition_leader, remote_markers=self._send_txn_markers)
        return self._transaction_coordinator

    @property
    def share_groups(self) -> ShareGroupService:
        """Share groups (KIP-932): state in __share_group_state (created on first use)."""
        if self._share_groups is None:
            from coordinator.runtime.partition_log import ReplicaCoordinatorLog
            from coordinator.share.service import ShareGroupService

            clock = self.group_coordinator.clock

            def topic_by_name(name: str):
                topic = self.metadata.image.topics.get(name)
                return (topic.topic_id, len(topic.partitions)) if topic is not None else None

            def topic_name(topic_id):
                topic = self.metadata.image.topics_by_id.get(topic_id)
                return topic.name if topic is not None else None

            self._share_groups = ShareGroupService(
                self.config.__getitem__, self.node_id, self.replica_manager,
                lambda partition: ReplicaCoordinatorLog(self.replica_manager, partition, clock,
                                                        topic=SHARE_GROUP_STATE_TOPIC_NAME),
                topic_by_name=topic_by_name, topic_name=topic_name,
                group_configs=lambda group_id: self.metadata.image.group_configs.get(group_id, {}),
                ensure_state_topic=self._ensure_share_group_state_topic, clock=clock,
                partition_leader=self._share_group_state_partition_leader,
                existing_topics=lambda: self.metadata.image.topics,
                send=self._send_to_broker if self.cluster_mode else None,
                coordinates=self._coordinates_group if self.cluster_mode else (lambda group_id: True),
                group_coordinator=self.group_coordinator)
        return self._share_groups

    def _coordinates_group(self, group_id: str) -> bool:
        """Whether this broker is ``group_id``'s coordinator (leads its __consumer_offsets partition)."""
        return self.group_coordinator.coordinator_for(group_id) == self.node_id

    async def _send_to_broker(self, node_id: int, request: Any, version: int, response_class: Any) -> Any:
        """One request to another broker of the cluster (the share coordinator's state RPCs)."""
        return await self.broker_clients.get(node_id).request(request, version, response_class)

    def connection_closed(self, peer: str) -> None:
        """A client connection closed: as Kafka, the share sessions opened on it end and release their records."""
        if self._share_groups is not None:
            self._share_groups.connection_closed(peer)

    @property
    def share_groups_enabled(self) -> bool:
        """As Kafka: share.version >= 1 finalized, or the internal switch group.share.enable."""
        return self.metadata.image.finalized_features.get(SHARE_VERSION, 0) >= 1 or bool(self.config["group.share.enable"])

    def _share_group_state_partition_leader(self, partition: int) -> int | None:
        """The share coordinator of a __share_group_state partition: that partition's leader."""
        return self._coordinator_partition_leader(SHARE_GROUP_STATE_TOPIC_NAME, partition)

    async def _ensure_share_group_state_topic(self) -> None:
        """Create __share_group_state on first use (delete policy, retention -1, as Kafka's share coordinator
        creates it): one replica per partition on a single node, share.coordinator.state.topic.replication.factor
        in a cluster with min.insync.replicas share.coordinator.state.topic.min.isr."""
        if SHARE_GROUP_STATE_TOPIC_NAME in self.metadata.image.topics:
            return
        assignment = self._internal_topic_assignment(
            SHARE_GROUP_STATE_TOPIC_NAME, self.config["share.coordinator.state.topic.num.partitions"],
            self.config["share.coordinator.state.topic.replication.factor"])
        min_isr = min(self.config["share.coordinator.state.topic.min.isr"], len(assignment[0])) \
            if self.cluster_mode else 1
        await self._create_internal_topic(SHARE_GROUP_STATE_TOPIC_NAME, assignment, {
            "cleanup.policy": "delete", "compression.type": "producer", "retention.ms": "-1",
            "min.insync.replicas": str(min_isr),
            "segment.bytes": str(self.config["share.coordinator.state.topic.segment.bytes"])})

    @property
    def controller_id(self) -> int:
        """The controller's node id, as the cluster metadata has it (a single node is its own controller)."""
        return self.metadata.image.controller_id

    def advertised_listener(self, listener_name: str) -> Listener:
        """The address clients connected on ``listener_name`` should use for this broker."""
        advertised = {lst.name: lst for lst in self.config.advertised_listeners}
        lst = advertised.get(listener_name) or self.config.advertised_listeners[0]
        bound = self.bound_listeners.get(lst.name)
        port = lst.port
        host = lst.host
        if bound is not None and port == 0:
            port = bound.port
        if host in ("", "0.0.0.0", "::"):
            host = bound.host if bound is not None and bound.host not in ("", "0.0.0.0", "::") else "localhost"
        return Listener(lst.name, host, port)

    def api_versions(self) -> list[ApiVersion]:
        """The ApiVersions entries, computed from the registry."""
        if self._api_versions_cache is None:
            self._api_versions_cache = [ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                        for k, lo, hi in self.registry.api_versions()]
        return self._api_versions_cache

    def unsupported_api_versions_response(self) -> ApiVersionsResponse:
        """The v0-encoded answer to an ApiVersions request newer than we serve: like Kafka's
        ApiVersionsRequest.getErrorResponse, UNSUPPORTED_VERSION with ApiVersions' own range alone."""
        return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
            v for v in self.api_versions() if v.api_key == ApiKey.API_VERSIONS])

    # -- lifecycle -----------------------------------------------------------------------------------
    def _acl_store(self):
        if self.zk is None:
            return self.metadata
        return self.zk.acl_store

    def _delegation_token_manager(self) -> DelegationTokenManager:
        """Tokens in the embedded store, or in ZooKeeper's /delegation_token in a cluster (loaded at start)."""
        config = self.config
        store: TokenStore
        if self.zk is not None:
            store = self.zk.token_store
        else:
            assert isinstance(self.metadata, EmbeddedMetadataStore)
            store = self.metadata
        return DelegationTokenManager(store, config["delegation.token.secret.key"],
                                      config["delegation.token.max.lifetime.ms"],
                                      config["delegation.token.expiry.time.ms"],
                                      config["delegation.token.expiry.check.interval.ms"], self.now_ms)

    def _init_cluster_mode(self) -> None:
        """A broker of a ZooKeeper cluster: metadata in ZooKeeper, a part in the controller election."""
        from replication.controller.zk_controller import ZkController
        from replication.metadata.zk.cluster import ZooKeeperCluster

        self.cluster_id = ""  # read from /cluster/id at start
        self.zk = ZooKeeperCluster(self.config, self.node_id)
        self.election = self.zk.election
        self.controller = ZkController(self.zk.client, self.election, self.node_id,
                                       unclean_leader_election_default=lambda: bool(
                                           self.dynamic_config.current["unclean.leader.election.enable"]),
                                       auto_leader_rebalance=self.config["auto.leader.rebalance.enable"],
                                       leader_imbalance_check_interval_s=self.config[
                                           "leader.imbalance.check.interval.seconds"],
                                       leader_imbalance_per_broker_percentage=self.config[
                                           "leader.imbalance.per.broker.percentage"])
        self.election.on_elected = self.controller.on_elected
        self.election.on_resigned = self.controller.on_resigned
        self.metadata = self.zk.metadata
        self.producer_ids = self.zk.producer_ids

    async def _start_cluster_mode(self) -> None:
        """Connect to ZooKeeper, load the cluster's metadata and check this node's log dirs belong to it."""
        assert self.zk is not None
        await self.zk.start()
        self.cluster_id = self.metadata.image.cluster_id
        await asyncio.to_thread(load_or_create_cluster_id, self.config.log_dirs, self.node_id, self.cluster_id)
        await self.producer_ids.start()
        if self.authorizer is not None:  # ACLs in ZooKeeper; other brokers' changes reload the authorizer
            await self.acl_store.start(on_change=self.authorizer.reload)
            self.authorizer.reload()
        if self.delegation_tokens.enabled:  # and tokens, likewise
            await self.delegation_tokens.store.start(on_change=self.delegation_tokens.reload)  # type: ignore[attr-defined]
            self.delegation_tokens.reload()
        self._apply_broker_configs(self.metadata.image)
        log.info("broker %d joined cluster %s through ZooKeeper at %s", self.node_id, self.cluster_id,
                 self.config["zookeeper.connect"])

    async def start(self) -> None:
        """Load (and recover) every log off the event loop, then host every partition assigned here;
        from then on every published metadata image is applied as it comes."""
        self._loop = asyncio.get_running_loop()
        if self.cluster_mode:
            await self._start_cluster_mode()
        if self.elr_enabled:
            await self.ensure_elr_min_insync_replicas()
            self._apply_broker_configs(self.metadata.image)
        await asyncio.to_thread(self.log_manager.startup, self.log_config_for_topic)
        offline_at_start = self._mark_offline_at_start()
        if self.cluster_mode:
            self._delete_stray_logs()
        else:
            await self._elect_recovered_replicas()
        new_logs = SYNC_NEW_LOGS
        for topic in self.metadata.image.topics.values():
            new_logs = self._host_topic(topic, new_logs=new_logs)
        if offline_at_start:
            in_offline = self.replica_manager.offline_partitions.__contains__
            dirs = ",".join(self.log_manager.failure_channel.offline_dirs)
            self._spawn(self._hand_over(lambda t, p: in_offline((t, p)), f"log dirs {dirs} offline at start", 10)
                        if self.cluster_mode else self._directory_offline(lambda t, p: in_offline((t, p)), dirs,
                                                                          at_start=True))
        self.metadata.subscribe(self._apply_metadata)
        self.iceberg.apply(None, self.metadata.image)
        self.metadata.subscribe(self.iceberg.apply)
        self.replica_manager.start_isr_expiration()
        if GROUP_METADATA_TOPIC_NAME in self.metadata.image.topics:
            self.group_coordinator.load_all()  # rebuild groups and offsets by replaying __consumer_offsets
        if TRANSACTION_STATE_TOPIC_NAME in self.metadata.image.topics:
            self.transaction_coordinator.load_all()  # and transactions, finishing half-ended ones
        if SHARE_GROUP_STATE_TOPIC_NAME in self.metadata.image.topics:
            self.share_groups.load_all()  # and share-partition state, by replaying __share_group_state
        if self.remote_log_manager is not None:
            self.remote_log_manager.start()

    def _delete_stray_logs(self) -> None:
        """Logs of partitions reassigned away while this broker was down: deleted at start, as Kafka's broker
        deletes stray replicas."""
        image = self.metadata.image
        for topic, partition in [(lg.topic, lg.partition) for lg in self.log_manager.all_logs()]:
            p = image.partition(topic, partition)
            if p is not None and self.node_id not in p.replicas:
                log.info("broker %d: deleting stray log %s-%d (replicas %s)", self.node_id, topic, partition,
                         list(p.replicas))
                self.log_manager.delete_log(topic, partition)

    async def controlled_shutdown(self) -> None:
        """Before a cluster broker stops: hand every partition it leads to an in-sync replica and leave the
        ISRs it is in (controlled.shutdown.enable), retrying controlled.shutdown.max.retries times after
        controlled.shutdown.retry.backoff.ms; what is left then stays as it is, as Kafka stops anyway.

        Kafka's broker asks the controller to do this; here the broker writes the partition states itself,
        each conditional on the partition epoch it read (the controller's and leaders' concurrent writes
        make it read and decide again), which changes the same znodes the same way.
        """
        if not self.cluster_mode or not self.config["controlled.shutdown.enable"]:
            return
        self.shutting_down = True
        await self._hand_over(lambda topic, partition: True, "controlled shutdown",
                              self.config["controlled.shutdown.max.retries"] + 1)

    def _on_log_dir_offline(self, log_dir: str) -> None:
        """A log dir failed (any thread): in a cluster the partitions it held go to other replicas, as Kafka's
        controller moves them on a log dir event; on a single node they are left without a leader, as Kafka's
        KRaft controller does (``_directory_offline``). Either way they answer KAFKA_STORAGE_ERROR here.
        Once every log dir has failed the process halts (exit code 1, no shutdown), as Kafka's
        LogManager.handleLogDirFailure does: a broker with no disk left serves nothing, and its partitions
        move to other replicas only once it is gone."""
        offline = self.log_manager.failure_channel.offline_dirs
        if all(d in offline for d in self.log_manager.log_dirs):
            log.critical("Shutdown broker because all log dirs in %s have failed", ", ".join(self.log_manager.log_dirs))
            logging.shutdown()  # the line above reaches the log before the halt
            os._exit(1)
        if self._loop is None:
            return

        def in_dir(topic: str, partition: int) -> bool:
            p = self.replica_manager.get_partition(topic, partition)
            return p is not None and p.log.parent_dir == log_dir

        if self.cluster_mode:
            self._loop.call_soon_threadsafe(lambda: self._spawn(self._hand_over(
                in_dir, f"log dir {log_dir} offline", attempts=10)))
        else:
            self._loop.call_soon_threadsafe(lambda: self._spawn(self._directory_offline(in_dir, log_dir)))

    def _mark_offline_at_start(self) -> int:
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
        """Whether ``lost_replicas`` can name a replica at all (a log dir here is or was offline)."""
        return not self.cluster_mode and bool(self.replica_manager.offline_partitions
                                              or self.log_manager.failure_channel.offline_dirs)

    def lost_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """Replicas of the partition that are offline for want of their log dir, as far as this broker knows:
        on a single node its own replica when the dir holding it is offline (Kafka's broker registration lists
        its offline dirs and the controller marks their replicas offline); in a cluster none (the controller
        moves the leadership away)."""
        if self.cluster_mode:
            return ()
        if (topic, partition) in self.replica_manager.offline_partitions:
            return (self.node_id,)
        p = self.replica_manager.get_partition(topic, partition)
        return (self.node_id,) if p is not None and p.log.is_offline else ()

    async def _directory_offline(self, selected: Callable[[str, int], bool], log_dir: str, *,
                                 at_start: bool = False) -> None:
        """Single node: the partitions of an offline log dir lose their leader (leader -1, a new leader epoch,
        this replica out of the ISR with ELR) as Kafka's controller answers a heartbeat naming the dir
        (handleDirectoriesOffline); Metadata then answers LEADER_NOT_AVAILABLE with the replica offline.
        ``at_start``: the dir was offline when the broker started (registered): as in Kafka, its replica is then
        no longer an eligible leader either, though it stays the last known one."""
        from replication.controller.elections import (
            NO_LEADER,
            LeaderAndIsr,
            directory_offline_change,
            eligible_leader_replicas,
        )
        from replication.metadata.image import PartitionState

        image = self.metadata.image
        changed = 0
        for topic in image.topics.values():
            for p in topic.partitions:
                if self.node_id not in p.replicas or not selected(topic.name, p.partition):
                    continue
                new = directory_offline_change(LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.replicas,
                                               image.brokers, self.node_id, self.elr_enabled)
                if new is None:
                    if not (at_start and self.node_id in p.elr):
                        continue
                    new, eligible, last_known = LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.elr, p.last_known_elr
                else:
                    min_isr = self.log_config_for_topic(topic.name).min_insync_replicas
                    eligible = eligible_leader_replicas(p.isr, new.isr, p.elr, min_isr, self.elr_enabled)
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

    async def _elect_recovered_replicas(self) -> None:
        """Single node, at start: a partition left leaderless by an offline log dir whose log is online again is
        led by this broker once more, as Kafka's controller elects the last eligible replica when its broker
        registers with the dir online."""
        from replication.controller.elections import LeaderAndIsr, recovered_replica_election
        from replication.metadata.image import PartitionState

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

    async def _hand_over(self, selected: Callable[[str, int], bool], why: str, attempts: int) -> None:
        """Move the selected partitions' leadership to other in-sync replicas and leave their ISRs (Kafka's
        controlled-shutdown election), conditionally on each partition epoch, in up to ``attempts`` rounds
        ``controlled.shutdown.retry.backoff.ms`` apart. A write refused because another writer (the controller,
        a leader changing its ISR) got there first is decided again on the state it wrote, at once: Kafka's
        controller, the only writer there, never sees such a conflict, so it must not cost a backoff here."""
        remaining = 0
        for attempt in range(1, attempts + 1):
            moved = remaining = 0
            for _ in range(CONFLICT_ROUNDS):
                done, stuck, conflicted = await self._hand_over_round(selected)
                moved += done
                remaining = stuck + len(conflicted)
                if not conflicted:
                    break
                # The refused writes' winners are on their way: decide again once the image has them.
                await cast("ZooKeeperMetadataStore", self.metadata).wait_for(
                    functools.partial(_newer_than, conflicted), CONFLICT_WAIT_S)
            log.info("%s of broker %d, attempt %d: %d partitions handed over, %d remaining", why, self.node_id,
                     attempt, moved, remaining)
            if not remaining:
                return
            if attempt < attempts:
                await asyncio.sleep(self.config["controlled.shutdown.retry.backoff.ms"] / 1000)
        log.warning("%s of broker %d: %d partitions still led here after %d attempts", why, self.node_id, remaining,
                    attempts)

    async def _hand_over_round(self, selected: Callable[[str, int], bool]
                               ) -> tuple[int, int, list[tuple[str, int, int]]]:
        """One pass of ``_hand_over`` over the current image: (partitions moved, partitions led here that no
        other live in-sync replica can take, (topic, partition, epoch read) of the writes refused)."""
        from replication.controller.elections import LeaderAndIsr, controlled_shutdown_election
        from replication.metadata.image import PartitionState

        image = self.metadata.image
        moved = stuck = 0
        conflicted: list[tuple[str, int, int]] = []
        for topic in image.topics.values():
            for p in topic.partitions:
                if self.node_id not in p.replicas or not selected(topic.name, p.partition):
                    continue
                if self.shutting_down and p.leader != self.node_id:
                    self.replica_fetchers.unfollow(topic.name, p.partition)  # before it leaves the ISR
                new = controlled_shutdown_election(LeaderAndIsr(p.leader, p.leader_epoch, p.isr), p.replicas,
                                                   image.brokers, self.node_id)
                if new is None:
                    # Led here with nobody else in sync: waiting helps only if another replica is alive.
                    stuck += p.leader == self.node_id and any(
                        r != self.node_id and r in image.brokers for r in p.replicas)
                    continue
                committed = await self.metadata.alter_partition(topic.name, p.partition, PartitionState(
                    p.partition, new.leader, new.leader_epoch, p.replicas, new.isr, p.partition_epoch + 1))
                if committed is None:
                    conflicted.append((topic.name, p.partition, p.partition_epoch))
                else:
                    moved += 1
        return moved, stuck, conflicted

    async def shutdown(self) -> None:
        """Flush, checkpoint and close every log; writes the clean-shutdown marker."""
        await self.iceberg.close()
        if self._share_groups is not None:
            await self._share_groups.close()
        if self._transaction_coordinator is not None:
            await self._transaction_coordinator.close()
        if self._group_coordinator is not None:
            await self._group_coordinator.close()
        if self.remote_log_manager is not None:
            await self.remote_log_manager.close()
        await self.pending_logs.close()
        await self.replica_fetchers.close()
        self.broker_clients.close()
        await self.replica_manager.close()
        if self.zk is not None:
            # Leaving ZooKeeper ends this broker's registration, so the controller moves its leaderships.
            await self.controller.close()
            await self.zk.close()
        await asyncio.to_thread(self.log_manager.shutdown)

    def log_config_for_topic(self, topic_name: str) -> LogConfig:
        """Broker defaults overlaid with the topic's explicitly set configs."""
        topic = self.metadata.image.topics.get(topic_name)
        if topic is None or not topic.configs:
            return self.default_log_config
        return LogConfig.from_properties(split_topic_configs(topic.configs)[0], defaults=self.default_log_config)

    def _host_topic(self, topic: TopicState, old: TopicState | None = None, new_logs: int = 0) -> int:
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
        if p.leader == self.node_id:
            self.replica_fetchers.unfollow(topic.name, p.partition)
            rm.become_leader(topic.name, p.partition, topic.topic_id, p.leader_epoch, list(p.replicas),
                             list(p.isr), log_config, p.partition_epoch)
            if not was_leader or old_epoch != p.leader_epoch:
                self._coordinator_elected(topic.name, p.partition)
                self._share_leadership_changed(topic, p.partition)
        elif self.node_id in p.replicas:
            rm.become_follower(topic.name, p.partition, topic.topic_id, p.leader, p.leader_epoch,
                               list(p.replicas), list(p.isr), log_config, p.partition_epoch)
            if self.shutting_down:  # handed over: it must not fetch its way back into the ISR
                self.replica_fetchers.unfollow(topic.name, p.partition)
            else:
                self.replica_fetchers.follow(topic.name, p.partition, p.leader)
            if was_leader:
                self._coordinator_resigned(topic.name, p.partition)
                self._share_leadership_changed(topic, p.partition)
        elif hosted is not None:
            # Reassigned away (Kafka's StopReplica with deletion): stop fetching, drop the log.
            self.replica_fetchers.unfollow(topic.name, p.partition)
            rm.stop_replica(topic.name, p.partition)
            if was_leader:
                self._coordinator_resigned(topic.name, p.partition)
                self._share_leadership_changed(topic, p.partition)
            log.info("broker %d: %s-%d is no longer assigned here (replicas %s); its log is deleted", self.node_id,
                     topic.name, p.partition, list(p.replicas))

    def _logs_created(self, created: list[tuple[str, int]], failed: list[tuple[tuple[str, int], Exception]]) -> None:
        """``pending_logs`` created these logs: host each partition as the current image has it. A log whose
        partition is gone meanwhile (topic deleted, or deleted and created again, or reassigned away) is deleted."""
        image = self.metadata.image
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

    def _share_leadership_changed(self, topic: TopicState, partition: int) -> None:
        """Share-partitions of a partition this broker stopped leading (or leads anew) are loaded again."""
        if self._share_groups is not None:
            self._share_groups.partitions.on_leadership_changed(topic.topic_id, partition)

    def _apply_metadata(self, old: MetadataImage, new: MetadataImage) -> None:
        """Make this broker match a newly published image: host new and changed partitions, drop deleted
        topics, reload changed topic and broker configs."""
        if new.broker_configs is not old.broker_configs:
            self._apply_broker_configs(new)
        new_logs = SYNC_NEW_LOGS
        for name, topic in new.topics.items():
            before = old.topics.get(name)
            if before is not None and before.topic_id != topic.topic_id:
                self._drop_topic(name)  # deleted and created again between two images
                self._share_state_of_deleted_topic(before)
                before = None
            if before is topic:
                continue
            if before is not None and before.configs != topic.configs:
                self.replica_manager.update_log_config(name, self.log_config_for_topic(name))
                if self.zk is not None:
                    self.controller.topic_configs_changed(name)
            new_logs = self._host_topic(topic, before, new_logs)
        for name in old.topics.keys() - new.topics.keys():
            self._drop_topic(name)
            self._share_state_of_deleted_topic(old.topics[name])

    def _share_state_of_deleted_topic(self, topic: TopicState) -> None:
        """As Kafka: a deleted topic's share-partition state goes with it, on every broker whose share coordinator
        holds some (whichever broker handled the DeleteTopics)."""
        if self._share_groups is not None and not topic.name.startswith("__"):
            self._spawn(self._share_groups.on_topic_deleted(topic.topic_id))

    def _coordinator_elected(self, topic: str, partition: int) -> None:
        """Leading a coordinator partition: its coordinator loads it (a coordinator not built yet loads on use)."""
        if topic == GROUP_METADATA_TOPIC_NAME and self._group_coordinator is not None:
            self._group_coordinator.on_election(partition)
        elif topic == TRANSACTION_STATE_TOPIC_NAME and self._transaction_coordinator is not None:
            self._transaction_coordinator.on_election(partition)
        elif topic == SHARE_GROUP_STATE_TOPIC_NAME and self._share_groups is not None:
            self._share_groups.coordinator.on_election(partition)
        if topic in (GROUP_METADATA_TOPIC_NAME, SHARE_GROUP_STATE_TOPIC_NAME) and self._share_groups is not None:
            self._share_groups.coordination_changed()

    def _coordinator_resigned(self, topic: str, partition: int) -> None:
        if topic == GROUP_METADATA_TOPIC_NAME and self._group_coordinator is not None:
            self._spawn(self._group_coordinator.on_resignation(partition))
        elif topic == TRANSACTION_STATE_TOPIC_NAME and self._transaction_coordinator is not None:
            self._transaction_coordinator.on_resignation(partition)
        elif topic == SHARE_GROUP_STATE_TOPIC_NAME and self._share_groups is not None:
            self._spawn(self._share_groups.coordinator.on_resignation(partition))

    def _partition_leader(self, topic: str, partition: int) -> int | None:
        """The leader of ``topic-partition`` in the current image (-1: none), None when it does not exist."""
        p = self.metadata.image.partition(topic, partition)
        return p.leader if p is not None else None

    async def _send_txn_markers(self, leader: int, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                                commit: bool, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """WriteTxnMarkers to the broker leading ``partitions``, as Kafka's TransactionMarkerChannelManager."""
        from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
        from wire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic

        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            coordinator_epoch=coordinator_epoch,
            topics=[WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in by_topic.items()])])
        response = await self.broker_clients.get(leader).request(request, 1, WriteTxnMarkersResponse)
        return {(t.name, p.partition_index): p.error_code for m in response.markers for t in m.topics
                for p in t.partitions}

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _drop_topic(self, name: str) -> None:
        self.pending_logs.discard_topic(name)
        for (topic, partition) in [tp for tp in self.replica_manager.partitions if tp[0] == name]:
            self.replica_fetchers.unfollow(topic, partition)
        self.replica_manager.delete_partitions(name)
        self.fetch_sessions.remove_topic(name)

    # -- topics --------------------------------------------------------------------------------------
    async def create_topic(self, name: str, assignments: list[list[int]], configs: dict[str, str]) -> TopicState:
        """Create a topic (metadata first; its logs follow the published image); the caller has validated it."""
        topic = await self.metadata.create_topic(name, assignments, configs)
        log.info("created topic %s (id %s) with %d partitions", name, uuid_to_kafka_string(topic.topic_id),
                 len(assignments))
        return topic

    async def delete_topic(self, name: str) -> None:
        topic = await self.metadata.delete_topic(name)
        if self._group_coordinator is not None:  # else no group has state yet
            await self._group_coordinator.on_partitions_deleted([(name, p.partition) for p in topic.partitions])
        if self._share_groups is not None:  # as Kafka: the share groups' state of the topic goes with it
            await self._share_groups.on_topic_deleted(topic.topic_id)
        log.info("deleted topic %s", name)

    async def create_partitions(self, name: str, new_assignments: list[list[int]]) -> None:
        await self.metadata.add_partitions(name, new_assignments)

    async def alter_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        """Replace the topic's explicitly set configs; live logs pick them up at once."""
        await self.metadata.set_topic_configs(name, configs)

    @property
    def inter_broker_listener_name(self) -> str:
        return self.config["inter.broker.listener.name"] or self.config.listeners[0].name

    def _inter_broker_endpoint(self, node_id: int) -> tuple[str, int] | None:
        """Where this broker reaches broker ``node_id`` (its registered inter-broker endpoint)."""
        registered = self.metadata.image.brokers.get(node_id)
        endpoint = registered.endpoint(self.inter_broker_listener_name) if registered is not None else None
        return (endpoint.host, endpoint.port) if endpoint is not None else None

    async def register(self) -> None:
        """Publish this broker's endpoints (once its listeners are bound) in the cluster metadata."""
        from pykbroker.security.listeners import protocol_map

        protocols = protocol_map(self.config)
        endpoints = tuple(Endpoint(lst.name, (a := self.advertised_listener(lst.name)).host, a.port,
                                   protocols.get(lst.name, lst.name))
                          for lst in self.config.advertised_listeners)
        await self.metadata.register_broker(BrokerImage(self.node_id, endpoints, self.config.rack))
        if self.zk is not None:
            await self.election.start()  # after registering, as Kafka's controller startup

    # -- dynamic broker configs --------------------------------------------------------------------------
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

    async def alter_broker_configs(self, resource_name: str, configs: dict[str, str]) -> None:
        """Store the dynamic configs of one BROKER resource; the published image applies them at once."""
        await self.metadata.set_broker_configs({resource_name: configs})

    def _apply_broker_configs(self, image: MetadataImage) -> None:
        before = self.dynamic_config.current
        self.dynamic_config.update(image.broker_configs.get("", {}), image.broker_configs.get(str(self.node_id), {}))
        current = self.dynamic_config.current
        reload_tls = self.dynamic_config.reloaded_listeners(current, before)
        self.default_log_config = LogConfig.from_properties(current.topic_defaults())
        self.log_manager.default_config = self.default_log_config
        for topic in image.topics.values():
            self.replica_manager.update_log_config(topic.name, self.log_config_for_topic(topic.name))
        self.transaction_verification = bool(current["transaction.partition.verification.enable"])
        for listener in reload_tls:  # a new key or trust store for an SSL listener, as Kafka's SslFactory reloads
            security = self.listener_security.get(listener.name)
            if security is not None and security.ssl_context is not None:
                reload_stores(security.ssl_context, current, listener.name, security.protocol)
                log.info("reloaded the key and trust stores of listener %s", listener.name)

    def broker_racks(self) -> dict[int, str | None]:
        """Each registered broker's broker.rack (None: none), for rack-aware replica placement."""
        return {b.node_id: b.rack for b in self.metadata.image.brokers.values()}

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

    # -- __consumer_offsets ---------------------------------------------------------------------------
    def _offsets_partition_leader(self, partition: int) -> int | None:
        """The coordinator of the groups of a __consumer_offsets partition: that partition's leader."""
        return self._coordinator_partition_leader(GROUP_METADATA_TOPIC_NAME, partition)

    def _coordinator_partition_leader(self, topic_name: str, partition: int) -> int | None:
        """The leader of a coordinator topic's partition. Before the topic exists a single node is going to
        lead it (it creates it on first use); a cluster's broker does not know yet (None)."""
        topic = self.metadata.image.topics.get(topic_name)
        if topic is None or partition >= len(topic.partitions):
            return None if self.cluster_mode else self.node_id
        return topic.partitions[partition].leader

    @property
    def cluster_mode(self) -> bool:
        return self.config["zookeeper.connect"] is not None

    def _internal_topic_assignment(self, name: str, partitions: int, replication_factor: int) -> list[list[int]]:
        """Replicas of a coordinator topic: a single node holds one replica of each partition; a cluster
        places ``replication_factor`` of them, and refuses (COORDINATOR_NOT_AVAILABLE) until enough brokers
        are registered, as Kafka does."""
        live = self.metadata.image.live_broker_ids() or [self.node_id]
        if not self.cluster_mode:
            return [[self.node_id] for _ in range(partitions)]
        if len(live) < replication_factor:
            # Imported here: a broker starts without importing the coordinators.
            from coordinator.runtime.errors import ApiError

            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE,
                           f"Number of alive brokers '{len(live)}' does not meet the required replication factor "
                           f"'{replication_factor}' for the {name} topic")
        return assign_replicas(partitions, replication_factor, live, racks=self.broker_racks())

    async def _create_internal_topic(self, name: str, assignment: list[list[int]], configs: dict[str, str]) -> None:
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

    async def _ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets (compacted) on first use."""
        if GROUP_METADATA_TOPIC_NAME in self.metadata.image.topics:
            return
        assignment = self._internal_topic_assignment(GROUP_METADATA_TOPIC_NAME,
                                                     self.config["offsets.topic.num.partitions"],
                                                     self.config["offsets.topic.replication.factor"])
        await self._create_internal_topic(GROUP_METADATA_TOPIC_NAME, assignment, {
            "cleanup.policy": "compact", "compression.type": "producer",
            "segment.bytes": str(self.config["offsets.topic.segment.bytes"])})

    # -- __transaction_state -------------------------------------------------------------------------
    def _transaction_state_partition_leader(self, partition: int) -> int | None:
        return self._coordinator_partition_leader(TRANSACTION_STATE_TOPIC_NAME, partition)

    def _transaction_state_leader_epoch(self, partition: int) -> int:
        """The coordinator epoch of a __transaction_state partition: its leader epoch."""
        p = self.replica_manager.get_partition(TRANSACTION_STATE_TOPIC_NAME, partition)
        return max(p.leader_epoch, 0) if p is not None else 0

    async def _ensure_transaction_state_topic(self) -> None:
        """Create __transaction_state (compacted) on first use."""
        if TRANSACTION_STATE_TOPIC_NAME in self.metadata.image.topics:
            return
        assignment = self._internal_topic_assignment(TRANSACTION_STATE_TOPIC_NAME,
                                                     self.config["transaction.state.log.num.partitions"],
                                                     self.config["transaction.state.log.replication.factor"])
        min_isr = min(self.config["transaction.state.log.min.isr"], len(assignment[0])) if self.cluster_mode else 1
        await self._create_internal_topic(TRANSACTION_STATE_TOPIC_NAME, assignment, {
            "cleanup.policy": "compact", "compression.type": "uncompressed", "unclean.leader.election.enable": "false",
            "min.insync.replicas": str(min_isr),
            "segment.bytes": str(self.config["transaction.state.log.segment.bytes"])})

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    # -- data path -----------------------------------------------------------------------------------
    async def append_records(self, entries, acks: int, timeout_ms: int, ctx) -> dict[tuple[str, int], AppendResult]:
        """Append a Produce request's partitions; acks=-1 returns once the ISR has them or after ``timeout_ms``.
        Partitions led here whose logs are still being created are waited for (up to ``timeout_ms``) rather than
        refused, so that clients producing to a topic just created do not retry in a storm."""
        if self.pending_logs:
            await self.pending_logs.wait_for(entries, timeout_ms / 1000)
        return await self.replica_manager.append_records(entries, acks, timeout_ms)


def _newer_than(read: list[tuple[str, int, int]], image: MetadataImage) -> bool:
    """Whether ``image`` holds a newer state than the (topic, partition, partition epoch) ``read`` (or none)."""
    return all((p := image.partition(t, n)) is None or p.partition_epoch > epoch for t, n, epoch in read)
