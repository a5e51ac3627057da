"""Shared broker state: configuration, cluster metadata, the handler registry."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from coordinator.transaction.producer_ids import ProducerIdManager
from pykbroker.admin_manager import AdminManager
from pykbroker.client_metrics.manager import ClientMetricsManager
from pykbroker.client_metrics.otlp import PrometheusTelemetryReceiver
from pykbroker.config import Config, Listener
from pykbroker.coordinators import Coordinators
from pykbroker.dynamic_config import DynamicBrokerConfig
from pykbroker.iceberg.config import split_topic_configs
from pykbroker.iceberg.writer import ICEBERG_BROKER_PROPERTIES, IcebergService
from pykbroker.internal_topics import (  # noqa: F401 (named here for tests and tools)
    GROUP_METADATA_TOPIC_NAME,
    SHARE_GROUP_STATE_TOPIC_NAME,
    TRANSACTION_STATE_TOPIC_NAME,
    InternalTopics,
)
from pykbroker.metadata_publisher import (  # noqa: F401
    DEFERRED_LOG_WORK_DELAY,
    SINGLE_NODE_LOG_WORK_DELAY,
    SINGLE_NODE_SYNC_NEW_LOGS,
    SYNC_NEW_LOGS,
    BrokerMetadataPublisher,
)
from pykbroker.quotas import CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, QuotaManager, RequestQuotaManager
from pykbroker.registry import REGISTRY, Registry
from pykbroker.remote_storage import build_remote_log_manager
from pykbroker.replication_quota import ReplicationQuotaManager
from pykbroker.security.delegation_tokens import DelegationTokenManager
from pykbroker.security.listeners import ListenerSecurity
from pykbroker.security.tls import reload_stores
from replication.broker_client import BrokerClientPool
from replication.controller.hand_over import LeadershipHandOver
from replication.fetch_session import FetchSessionCache
from replication.metadata.embedded_store import EmbeddedMetadataStore, load_or_create_cluster_id
from replication.metadata.features import SHARE_VERSION, STREAMS_VERSION
from replication.metadata.image import BrokerImage, Endpoint, MetadataImage, TopicState
from replication.metadata.tokens import TokenStore
from replication.pending_logs import SMALL_START_DELAY, PendingLogs
from replication.replica_fetcher_manager import FetcherConfig, ReplicaFetcherManager
from replication.replica_manager import MetadataIsrUpdater, ReplicaManager
from replication.replica_selector import selector_for
from storage import LogConfig, LogManager
from storage.log import TEST_LOG_WORK_DELAY_MS
from wire import ApiKey, ErrorCode
from wire.messages import ApiVersionsResponse
from wire.messages.api_versions_response import ApiVersion

if TYPE_CHECKING:
    from coordinator.group import GroupCoordinator
    from coordinator.share.service import ShareGroupService
    from coordinator.transaction.coordinator import TransactionCoordinator
    from pykbroker.metrics.recorder import Recorder
    from pykbroker.security.authorizer import StandardAuthorizer
    from replication.controller.zk_controller import ZkController
    from replication.metadata.image import MetadataWriter
    from replication.metadata.zk.cluster import ZooKeeperCluster

# Client telemetry (KIP-714): answered always, advertised (as Kafka) only with a receiver,
# metrics.client.telemetry.enable.
TELEMETRY_APIS = frozenset({ApiKey.GET_TELEMETRY_SUBSCRIPTIONS, ApiKey.PUSH_TELEMETRY})

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
        self.metadata: MetadataWriter
        self.producer_ids: Any
        if self.cluster_mode:
            self._init_cluster_mode()
        else:
            self.cluster_id = load_or_create_cluster_id(config.log_dirs, config.node_id, config["cluster.id"])
            self.metadata = EmbeddedMetadataStore(config.log_dirs[0], config.node_id, self.cluster_id)
            self.producer_ids = ProducerIdManager(config.log_dirs[0], config.node_id)
        # Admin writes of the cluster metadata (handlers call them); a deletion waits for the publisher.
        self.admin = AdminManager(config, self.metadata, lambda: self.publisher.deletions_done())
        # ACLs: the embedded store's, or ZooKeeper's /kafka-acl in a cluster (loaded when the broker starts).
        self.acl_store = self._acl_store()
        self.authorizer = self._authorizer()  # None without authorizer.class.name
        self.delegation_tokens = self._delegation_token_manager()
        # Static properties < cluster-wide dynamic defaults < this broker's dynamic configs.
        self.dynamic_config = DynamicBrokerConfig(config, self.metadata.image.broker_configs.get("", {}),
                                                  self.metadata.image.broker_configs.get(str(self.node_id), {}))
        self.default_log_config = LogConfig.from_properties(self.dynamic_config.current.topic_defaults())
        self.log_manager = LogManager(
            list(config.log_dirs), cordoned_log_dirs=config.cordoned_log_dirs,
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
        # Logs of partitions assigned here created in the background; the publisher hosts them once they exist.
        log_work_delay = max(DEFERRED_LOG_WORK_DELAY if self.cluster_mode else SINGLE_NODE_LOG_WORK_DELAY,
                             TEST_LOG_WORK_DELAY_MS / 1000)
        self.pending_logs = PendingLogs(self.log_manager, lambda created, failed: self.publisher.logs_created(
            created, failed, self.metadata.image), start_delay=log_work_delay,
            small_start_delay=None if TEST_LOG_WORK_DELAY_MS else SMALL_START_DELAY)
        self.replica_manager = ReplicaManager(self.log_manager, self.node_id,
                                              replica_lag_time_max_ms=config["replica.lag.time.max.ms"],
                                              isr_updater=MetadataIsrUpdater(self.metadata),
                                              in_metadata=lambda t, p: self.metadata.image.partition(t, p) is not None,
                                              pending_logs=self.pending_logs,
                                              leader_quota=self._replication_quota("leader"),
                                              replica_selector=selector_for(config["replica.selector.class"]),
                                              broker_racks=self.broker_racks,
                                              alter_log_dirs_io_max_bytes_per_second=self._alter_log_dirs_rate)
        self.broker_clients = BrokerClientPool(self.node_id, self._inter_broker_endpoint,
                                               timeout_ms=config["request.timeout.ms"],
                                               max_idle_ms=config["connections.max.idle.ms"])
        self.internal_topics = InternalTopics(config, self.node_id, self.metadata, self._create_own_topic,
                                              self.broker_racks, spawn=self._spawn)
        # Tiered storage (KIP-405); None when off. Reads of remote offsets go through the replica manager, and
        # followers build their remote aux state (the leader's log start is only in remote storage) through it.
        self.remote_log_manager = build_remote_log_manager(config, self.node_id, self.replica_manager,
                                                           self.broker_clients, self.internal_topics, self.metadata,
                                                           self.now_ms)
        if self.remote_log_manager is not None:
            self.replica_manager.attach_remote_log_manager(self.remote_log_manager)
        self.replica_fetchers = ReplicaFetcherManager(
            self.node_id, self.replica_manager.get_partition, self._inter_broker_endpoint, FetcherConfig(
                max_wait_ms=config["replica.fetch.wait.max.ms"], min_bytes=config["replica.fetch.min.bytes"],
                partition_max_bytes=config["replica.fetch.max.bytes"],
                response_max_bytes=config["replica.fetch.response.max.bytes"],
                backoff_ms=config["replica.fetch.backoff.ms"], socket_timeout_ms=config["replica.socket.timeout.ms"],
                fetch_last_tiered_offset=config["follower.fetch.last.tiered.offset.enable"]),
            quota=self._replication_quota("follower"),
            remote_aux_state=self.remote_log_manager.build_remote_log_aux_state if self.remote_log_manager else None)
        self.listener_security: dict[str, ListenerSecurity] = {}  # by listener name, set by the server
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"])
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
        self.hand_over = LeadershipHandOver(
            self.node_id, self.metadata, self.replica_manager, self.log_manager, self.replica_fetchers,
            cluster_mode=self.cluster_mode, elr_enabled=lambda: self.admin.elr_enabled,
            min_insync_replicas=lambda topic: self.log_config_for_topic(topic).min_insync_replicas, spawn=self._spawn,
            controlled_shutdown_enable=config["controlled.shutdown.enable"],
            controlled_shutdown_max_retries=config["controlled.shutdown.max.retries"],
            retry_backoff_ms=config["controlled.shutdown.retry.backoff.ms"])
        self.log_manager.failure_channel.add_listener(self.hand_over.log_dir_offline)
        self.coordinators = Coordinators(config, self.node_id, self.metadata, self.replica_manager,
                                         self.internal_topics, self.dynamic_config, self.producer_ids,
                                         self.broker_clients, self._spawn)
        self.publisher = BrokerMetadataPublisher(
            self.node_id, replica_manager=self.replica_manager, replica_fetchers=self.replica_fetchers,
            log_manager=self.log_manager, pending_logs=self.pending_logs, fetch_sessions=self.fetch_sessions,
            coordinators=self.coordinators, log_config_for_topic=self.log_config_for_topic,
            apply_broker_configs=self._apply_broker_configs, spawn=self._spawn,
            shutting_down=lambda: self.hand_over.shutting_down,
            topic_configs_changed=self.controller.topic_configs_changed if self.zk is not None else None,
            defer_log_work=True, log_work_delay=log_work_delay,
            sync_new_logs=None if self.cluster_mode else SINGLE_NODE_SYNC_NEW_LOGS,
            deleted_logs_renamed=self.metadata.forget_deleted_topics
            if isinstance(self.metadata, EmbeddedMetadataStore) else None)
        # Client telemetry (KIP-714): subscriptions from the image; pushes go to the Prometheus receiver when on.
        self.telemetry_receiver = PrometheusTelemetryReceiver() if config["metrics.client.telemetry.enable"] else None
        self.client_metrics = ClientMetricsManager(lambda: self.metadata.image.client_metrics_configs,
                                                   config["telemetry.max.bytes"], self.now_ms, self.telemetry_receiver)
        # Topics with iceberg.mode set: their led partitions are written into Iceberg tables (pykbroker.iceberg).
        self.iceberg = IcebergService({n: config[n] for n in ICEBERG_BROKER_PROPERTIES}, config.log_dirs[0],
                                      self.replica_manager)
        # The schema registry (pykbroker.schema_registry.SchemaRegistry) while schema.registry.listeners is set: the
        # server starts it once the listeners are bound; decoders (Iceberg topics, the console) look schemas up in it.
        self.schema_registry: Any = None
        self.iceberg.schema_registry = self.schema_registry_for_decoding

    async def _create_own_topic(self, name: str, assignments: list[list[int]], configs: dict[str, str]) -> TopicState:
        """A topic the broker creates itself (a coordinator's, auto-created, a Streams group's or a dead-letter one):
        on a single node its logs are waited for too, so that the coordinators' first requests find their topic's
        partitions loaded (the logs beyond SINGLE_NODE_SYNC_NEW_LOGS follow the metadata commit)."""
        topic = await self.admin.create_topic(name, assignments, configs)
        if not self.cluster_mode:
            await self.pending_logs.wait_for([(name, p) for p in range(len(assignments))],
                                             self.config["request.timeout.ms"] / 1000)
        return topic

    def schema_registry_for_decoding(self) -> Any:
        """The schema registry decoders look schemas up in: the served one, or (schema.registry.listeners unset)
        one reading schema.registry.topic without serving HTTP, made on first use."""
        if self.schema_registry is None:
            from pykbroker.schema_registry import SchemaRegistry

            self.schema_registry = SchemaRegistry(self)
        return self.schema_registry

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
        return self.coordinators.group

    @property
    def transaction_coordinator(self) -> TransactionCoordinator:
        """Transactions, stored in __transaction_state (created on first use)."""
        return self.coordinators.transaction

    @property
    def share_groups(self) -> ShareGroupService:
        """Share groups (KIP-932): state in __share_group_state (created on first use)."""
        return self.coordinators.share

    def connection_closed(self, peer: str) -> None:
        """A client connection closed: as Kafka, the share sessions opened on it end and release their records, and
        the client telemetry instance made on it is forgotten."""
        self.coordinators.connection_closed(peer)
        self.client_metrics.connection_closed(peer)

    @property
    def share_groups_enabled(self) -> bool:
        """As Kafka: share.version >= 1 finalized, or the internal switch group.share.enable."""
        return self.metadata.image.finalized_features.get(SHARE_VERSION, 0) >= 1 or bool(self.config["group.share.enable"])

    @property
    def streams_groups_enabled(self) -> bool:
        """Kafka's isStreamsGroupProtocolEnabled: "streams" in group.coordinator.rebalance.protocols and
        streams.version >= 1 finalized. The APIs are advertised either way, as Kafka 4.4 does."""
        return (self.group_coordinator.config.streams_protocol_enabled
                and self.metadata.image.finalized_features.get(STREAMS_VERSION, 0) >= 1)

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
            hidden = TELEMETRY_APIS if self.telemetry_receiver is None else frozenset()
            self._api_versions_cache = [ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                        for k, lo, hi in self.registry.api_versions() if k not in hidden]
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

    def _authorizer(self) -> StandardAuthorizer | None:
        """The authorizer ``authorizer.class.name`` asks for; without it, its module is not even imported."""
        if not self.config["authorizer.class.name"]:
            return None
        from pykbroker.security.authorizer import build_authorizer

        return build_authorizer(self.config, self.acl_store)

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
        # The controller answers the election's callbacks from its construction on.
        self.controller = ZkController(self.zk.controller_store, self.node_id,
                                       unclean_leader_election_default=lambda: bool(
                                           self.dynamic_config.current["unclean.leader.election.enable"]),
                                       auto_leader_rebalance=self.config["auto.leader.rebalance.enable"],
                                       leader_imbalance_check_interval_s=self.config[
                                           "leader.imbalance.check.interval.seconds"],
                                       leader_imbalance_per_broker_percentage=self.config[
                                           "leader.imbalance.per.broker.percentage"])
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
        self.hand_over.loop = asyncio.get_running_loop()
        if self.cluster_mode:
            await self._start_cluster_mode()
        if self.admin.elr_enabled:
            await self.admin.ensure_elr_min_insync_replicas()
            self._apply_broker_configs(self.metadata.image)
        await asyncio.to_thread(self.log_manager.startup, self.log_config_for_topic)
        offline_at_start = self.hand_over.mark_offline_at_start()
        # Logs the metadata no longer has (a broker killed between a DeleteTopics' commit and the renames): on a
        # single node as in a cluster, before any partition is hosted; a single node's store names the topics it
        # deleted whose logs were not yet renamed, and those are deleted rather than kept stray.
        if isinstance(self.metadata, EmbeddedMetadataStore):
            self.hand_over.delete_stray_logs(self.metadata.deleted_topics)
            self.metadata.forget_deleted_topics()
        else:
            self.hand_over.delete_stray_logs()
        if not self.cluster_mode:
            assert isinstance(self.metadata, EmbeddedMetadataStore)
            restarted = await self.metadata.restart_leaderships()
            if restarted:
                log.info("broker %d leads its %d partitions again, each in a new leader epoch", self.node_id, restarted)
            await self.hand_over.elect_recovered_replicas()
        self.publisher.host_all(self.metadata.image)
        if self.cluster_mode:  # one committer per Iceberg topic, through the coordinator runtime
            from pykbroker.iceberg.commits import CommitCoordination

            self.iceberg.coordination = CommitCoordination(self.iceberg, self)
            self.iceberg.coordination.start()
        self.hand_over.start(offline_at_start)
        self.metadata.subscribe(self.publisher.publish)
        self.replica_manager.start_isr_expiration()
        self.coordinators.load_all()
        self.iceberg.apply(None, self.metadata.image)
        self.metadata.subscribe(self.iceberg.apply)
        # Subscriptions change by change, as Kafka's broker applies each config record to its ClientMetricsManager.
        self.metadata.subscribe(lambda _old, _new: self.client_metrics.refresh())
        if self.remote_log_manager is not None:
            self.remote_log_manager.start()

    async def controlled_shutdown(self) -> None:
        """Before a cluster broker stops: hand its leaderships over and leave its ISRs (controlled.shutdown.enable)."""
        await self.hand_over.controlled_shutdown()

    def any_lost_replicas(self) -> bool:
        """Whether ``lost_replicas`` can name a replica at all (a log dir here is or was offline)."""
        return self.hand_over.any_lost_replicas()

    def lost_replicas(self, topic: str, partition: int) -> tuple[int, ...]:
        """Replicas of the partition offline for want of their log dir, as far as this broker knows."""
        return self.hand_over.lost_replicas(topic, partition)

    async def shutdown(self) -> None:
        """Flush, checkpoint and close every log; writes the clean-shutdown marker."""
        await self.iceberg.close()
        await self.coordinators.close()
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

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- inter-broker ------------------------------------------------------------------------------------
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
        self.log_manager.update_cordoned_log_dirs(current.cordoned_log_dirs)
        if self.remote_log_manager is not None:  # cluster-wide dynamic in Kafka
            for quota, name in ((self.remote_log_manager.copy_quota, "copy"),
                                (self.remote_log_manager.fetch_quota, "fetch")):
                if quota is not None:
                    quota.bytes_per_second = current[f"remote.log.manager.{name}.max.bytes.per.second"]
        for listener in reload_tls:  # a new key or trust store for an SSL listener, as Kafka's SslFactory reloads
            security = self.listener_security.get(listener.name)
            if security is not None and security.ssl_context is not None:
                reload_stores(security.ssl_context, current, listener.name, security.protocol)
                log.info("reloaded the key and trust stores of listener %s", listener.name)

    def broker_racks(self) -> dict[int, str | None]:
        """Each registered broker's broker.rack (None: none), for rack-aware replica placement."""
        return {b.node_id: b.rack for b in self.metadata.image.brokers.values()}

    @property
    def cluster_mode(self) -> bool:
        return self.config["zookeeper.connect"] is not None

    # -- __transaction_state -------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(time.time() * 1000)
