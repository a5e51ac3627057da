"""What a request handler may use of its broker: the named services on ``RequestContext.broker``.

Handlers see the broker only through this interface (mypy checks it), so a handler's reach is written down
here rather than being the whole ``Broker``: the metadata (``ctx.metadata`` is its image; writes go through
``admin``, the admin operations), the replica manager, the coordinators, security, quotas and configuration.
``pykbroker.broker.Broker`` is the one implementation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from coordinator.group import GroupCoordinator
    from coordinator.share.service import ShareGroupService
    from coordinator.transaction.coordinator import TransactionCoordinator
    from pykbroker.admin_manager import AdminManager
    from pykbroker.client_metrics.manager import ClientMetricsManager
    from pykbroker.config import Config, Listener
    from pykbroker.dynamic_config import DynamicBrokerConfig
    from pykbroker.internal_topics import InternalTopics
    from pykbroker.metrics.recorder import Recorder
    from pykbroker.quotas import QuotaManager, RequestQuotaManager
    from pykbroker.security.authorizer import StandardAuthorizer
    from pykbroker.security.delegation_tokens import DelegationTokenManager
    from replication.broker_client import BrokerClientPool
    from replication.controller.zk_controller import ZkController
    from replication.fetch_session import FetchSessionCache
    from replication.metadata.image import MetadataWriter
    from replication.replica_manager import ReplicaManager
    from storage import LogConfig, LogManager
    from wire.messages.api_versions_response import ApiVersion


class BrokerServices(Protocol):
    """The broker as handlers see it."""

    # -- identity and configuration ----------------------------------------------------------------------
    @property
    def node_id(self) -> int: ...
    @property
    def cluster_id(self) -> str: ...
    @property
    def cluster_mode(self) -> bool: ...
    @property
    def config(self) -> Config: ...
    @property
    def dynamic_config(self) -> DynamicBrokerConfig: ...
    @property
    def default_log_config(self) -> LogConfig: ...
    @property
    def transaction_verification(self) -> bool: ...
    def advertised_listener(self, listener_name: str) -> Listener: ...
    def api_versions(self) -> list[ApiVersion]: ...
    def now_ms(self) -> int: ...

    # -- metadata: read the image (ctx.metadata), write through the admin operations ---------------------
    @property
    def metadata(self) -> MetadataWriter: ...
    @property
    def admin(self) -> AdminManager: ...  # topics, partitions, topic and broker configs, ELR
    @property
    def internal_topics(self) -> InternalTopics: ...  # auto-creation for Metadata, the internal topics
    def lost_replicas(self, topic: str, partition: int) -> tuple[int, ...]: ...  # on an offline log dir
    def any_lost_replicas(self) -> bool: ...
    @property
    def controller(self) -> ZkController: ...  # cluster mode only
    @property
    def broker_clients(self) -> BrokerClientPool: ...  # requests to other brokers (cluster mode)

    # -- data ----------------------------------------------------------------------------------------------
    @property
    def log_manager(self) -> LogManager: ...
    @property
    def replica_manager(self) -> ReplicaManager: ...
    @property
    def fetch_sessions(self) -> FetchSessionCache: ...

    # -- coordinators --------------------------------------------------------------------------------------
    @property
    def group_coordinator(self) -> GroupCoordinator: ...
    @property
    def transaction_coordinator(self) -> TransactionCoordinator: ...
    @property
    def share_groups(self) -> ShareGroupService: ...
    @property
    def share_groups_enabled(self) -> bool: ...
    @property
    def streams_groups_enabled(self) -> bool: ...
    @property
    def producer_ids(self) -> Any: ...
    @property
    def client_metrics(self) -> ClientMetricsManager: ...  # client telemetry (KIP-714)  # ProducerIdManager, or ZkProducerIdManager in cluster mode

    # -- security and quotas -------------------------------------------------------------------------------
    @property
    def authorizer(self) -> StandardAuthorizer | None: ...
    @property
    def delegation_tokens(self) -> DelegationTokenManager: ...
    @property
    def produce_quota(self) -> QuotaManager: ...
    @property
    def fetch_quota(self) -> QuotaManager: ...
    @property
    def request_quota(self) -> RequestQuotaManager: ...

    # -- observation ---------------------------------------------------------------------------------------
    @property
    def metrics(self) -> Recorder | None: ...  # None while metrics and the console are off
