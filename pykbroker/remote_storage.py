"""Tiered storage on a broker: the backend named by its properties, and the remote log manager wired in.

``remote.log.storage.system.enable=true`` turns it on. ``remote.log.storage.manager.class.name`` picks the
backend, with its settings under Kafka's ``rsm.config.`` prefix:

* ``org.apache.kafka.server.log.remote.storage.LocalTieredStorage`` (Kafka's test backend's name): a
  directory, local or mounted, ``rsm.config.dir``;
* ``pykbroker.remote.S3RemoteStorageManager``: an S3-compatible server, ``rsm.config.s3.endpoint``,
  ``rsm.config.s3.bucket``, ``rsm.config.s3.region``, ``rsm.config.s3.access.key``,
  ``rsm.config.s3.secret.key`` (never logged, never described).

``__remote_log_metadata`` has ``rlmm.config.remote.log.metadata.topic.num.partitions`` partitions (50) and
``rlmm.config.remote.log.metadata.topic.replication.factor`` replicas (3; one on a single node).

The tiered-storage modules (the remote log manager, its metadata manager, the object stores) are imported only
when it is enabled: a broker without it does not pay for them at start.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from pykbroker.config import Config, ConfigError
from wire import ErrorCode

if TYPE_CHECKING:
    from pykbroker.internal_topics import InternalTopics
    from replication.broker_client import BrokerClientPool
    from replication.metadata.image import MetadataWriter
    from replication.remote_log_manager import RemoteLogManager
    from replication.replica_manager import ReplicaManager
    from storage.remote.object_store import ObjectStore

log = logging.getLogger("pykbroker.remote_storage")

__all__ = ["LOCAL_TIERED_STORAGE", "S3_REMOTE_STORAGE_MANAGER", "build_remote_log_manager", "object_store_from_config",
           "ensure_remote_log_metadata_topic"]

LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
S3_REMOTE_STORAGE_MANAGER = "pykbroker.remote.S3RemoteStorageManager"


def _rsm(config: Config, name: str, default: str | None = None) -> str | None:
    return config.remote_storage_properties.get(f"rsm.config.{name}", default)


def _rlmm_int(config: Config, name: str, default: int) -> int:
    raw = config.remote_storage_properties.get(f"rlmm.config.{name}")
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        raise ConfigError(f"rlmm.config.{name}: expected an integer, got '{raw}'") from None


def object_store_from_config(config: Config) -> ObjectStore:
    """The backend ``remote.log.storage.manager.class.name`` names; ConfigError naming what is missing."""
    from storage.remote.object_store import LocalFileObjectStore

    class_name = config["remote.log.storage.manager.class.name"]
    if class_name == LOCAL_TIERED_STORAGE:
        root = _rsm(config, "dir")
        if not root:
            raise ConfigError(f"rsm.config.dir: required with remote.log.storage.manager.class.name={class_name} "
                              "(the directory remote segments are copied to)")
        return LocalFileObjectStore(root)
    if class_name == S3_REMOTE_STORAGE_MANAGER:
        from storage.remote.s3 import S3ObjectStore

        missing = [n for n in ("s3.endpoint", "s3.bucket") if not _rsm(config, n)]
        if missing:
            raise ConfigError(f"rsm.config.{missing[0]}: required with remote.log.storage.manager.class.name="
                              f"{class_name}")
        return S3ObjectStore(endpoint=_rsm(config, "s3.endpoint") or "", bucket=_rsm(config, "s3.bucket") or "",
                             region=_rsm(config, "s3.region", "us-east-1") or "us-east-1",
                             access_key=_rsm(config, "s3.access.key"), secret_key=_rsm(config, "s3.secret.key"))
    raise ConfigError(f"remote.log.storage.manager.class.name: '{class_name}' is not a backend pykbroker has; use "
                      f"{LOCAL_TIERED_STORAGE} (rsm.config.dir) or {S3_REMOTE_STORAGE_MANAGER} (rsm.config.s3.*)")


def build_remote_log_manager(config: Config, node_id: int, replica_manager: ReplicaManager,
                             broker_clients: BrokerClientPool, internal_topics: InternalTopics,
                             metadata: MetadataWriter, time_ms: Callable[[], int]) -> RemoteLogManager | None:
    """The broker's RemoteLogManager, None unless tiered storage is enabled (the broker attaches it to its
    replica manager and gives its aux-state builder to the replica fetchers)."""
    if not config["remote.log.storage.system.enable"]:
        return None
    from replication.remote_log_manager import RemoteLogManager
    from replication.remote_log_metadata import TopicBasedRemoteLogMetadataManager
    from replication.rlm_quota import RLMQuotaManager
    from storage.remote.reader import ChunkCache, RemoteLogReader
    from storage.remote.storage_manager import RemoteStorageManager

    store = object_store_from_config(config)
    rsm = RemoteStorageManager(store)
    reader = RemoteLogReader(rsm, ChunkCache(config["remote.log.index.file.cache.total.size.bytes"]))

    async def send_produce(leader: int, topic: str, partition: int, batch: bytes) -> int:
        from wire.messages import ProduceRequest, ProduceResponse
        from wire.messages.produce_request import PartitionProduceData, TopicProduceData

        request = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])])
        try:
            response = await broker_clients.get(leader).request(request, 9, ProduceResponse)
        except Exception as exc:  # noqa: BLE001 - any failure to reach the leader: retried next round
            log.info("writing remote log metadata through broker %d failed: %s", leader, exc)
            return ErrorCode.NETWORK_EXCEPTION
        return response.responses[0].partition_responses[0].error_code

    async def end_offset(leader: int, topic: str, partition: int) -> int | None:
        from wire.messages import ListOffsetsRequest, ListOffsetsResponse
        from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=partition, timestamp=-1)])])
        try:
            response = await broker_clients.get(leader).request(request, 7, ListOffsetsResponse)
        except Exception as exc:  # noqa: BLE001 - any failure to reach the leader: asked again next round
            log.info("asking broker %d for the end of %s-%d failed: %s", leader, topic, partition, exc)
            return None
        answer = response.topics[0].partitions[0]
        return answer.offset if answer.error_code == ErrorCode.NONE else None

    cluster_mode = config["zookeeper.connect"] is not None
    rlmm = TopicBasedRemoteLogMetadataManager(
        replica_manager, node_id, _rlmm_int(config, "remote.log.metadata.topic.num.partitions", 50),
        leader_of=internal_topics.partition_leader, send_produce=send_produce if cluster_mode else None,
        end_offset=end_offset if cluster_mode else None, time_ms=time_ms)
    rlm = RemoteLogManager(replica_manager, node_id, rsm, reader, rlmm,
                           task_interval_ms=config["remote.log.manager.task.interval.ms"], time_ms=time_ms,
                           copy_quota=RLMQuotaManager(
                               config["remote.log.manager.copy.max.bytes.per.second"],
                               samples=config["remote.log.manager.copy.quota.window.num"],
                               window_seconds=config["remote.log.manager.copy.quota.window.size.seconds"]),
                           ensure_metadata_topic=lambda: ensure_remote_log_metadata_topic(config, metadata,
                                                                                          internal_topics),
                           topic_exists=lambda topic_id: topic_id in metadata.image.topics_by_id)
    rlm.fetch_quota = RLMQuotaManager(config["remote.log.manager.fetch.max.bytes.per.second"],
                                      samples=config["remote.log.manager.fetch.quota.window.num"],
                                      window_seconds=config["remote.log.manager.fetch.quota.window.size.seconds"])
    log.info("tiered storage enabled: remote segments in %r", store)
    return rlm


async def ensure_remote_log_metadata_topic(config: Config, metadata: MetadataWriter,
                                           internal_topics: InternalTopics) -> bool:
    """Create ``__remote_log_metadata`` when it is missing; False while a cluster has too few brokers for it."""
    from replication.remote_log_metadata import REMOTE_LOG_METADATA_TOPIC_NAME

    if REMOTE_LOG_METADATA_TOPIC_NAME in metadata.image.topics:
        return True
    try:
        await internal_topics.ensure_topic(
            REMOTE_LOG_METADATA_TOPIC_NAME, _rlmm_int(config, "remote.log.metadata.topic.num.partitions", 50),
            _rlmm_int(config, "remote.log.metadata.topic.replication.factor", 3),
            lambda assignment: {"cleanup.policy": "delete", "retention.ms": "-1",
                                "min.insync.replicas": str(min(2, len(assignment[0])))})
    except Exception as exc:  # noqa: BLE001 - ApiError: not enough live brokers yet
        log.info("%s not created yet: %s", REMOTE_LOG_METADATA_TOPIC_NAME, exc)
        return False
    return True
