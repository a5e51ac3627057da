"""Which leader each partition this broker follows is fetched from, one ``ReplicaFetcher`` per leader broker
(Kafka's ReplicaFetcherManager), and the followers' replica.* settings.

``replication.replica_fetcher`` (the Fetch requests, truncation, catch-up) is imported with the first fetcher: a
single node, which follows nothing, never imports it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from replication.partition import Partition
    from replication.replica_fetcher import ReplicaFetcher
    from replication.replica_manager import ReplicationQuota

__all__ = ["FetcherConfig", "ReplicaFetcherManager"]

log = logging.getLogger("replication.replica_fetcher")

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The follower's replica.* settings, with Kafka's defaults."""

    max_wait_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    partition_max_bytes: int = 1_048_576  # replica.fetch.max.bytes
    response_max_bytes: int = 10_485_760  # replica.fetch.response.max.bytes
    backoff_ms: int = 1_000  # replica.fetch.backoff.ms
    socket_timeout_ms: int = 30_000  # replica.socket.timeout.ms
    # follower.fetch.last.tiered.offset.enable (KIP-1023): an empty replica of a tiered topic starts after the
    # leader's last tiered offset instead of at its local log start.
    fetch_last_tiered_offset: bool = False


class ReplicaFetcherManager:
    """Which leader each followed partition is fetched from; one fetcher per leader broker."""

    def __init__(self, node_id: int, partition_lookup: Callable[[str, int], Partition | None],
                 endpoint_lookup: Callable[[int], tuple[str, int] | None], config: FetcherConfig,
                 quota: ReplicationQuota | None = None,
                 remote_aux_state: Callable[[Partition, int], Awaitable[None]] | None = None) -> None:
        """``remote_aux_state``: with tiered storage, builds a follower's state when the leader's log start is
        only in remote storage (``RemoteLogManager.build_remote_log_aux_state``)."""
        self.node_id = node_id
        self.quota = quota
        self._partition = partition_lookup
        self._endpoint = endpoint_lookup
        self.config = config
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self._leader_of: dict[TopicPartition, int] = {}
        self.remote_aux_state = remote_aux_state

    def follow(self, topic: str, partition: int, leader_id: int) -> None:
        """Fetch ``topic-partition`` from ``leader_id`` (moving it from its previous leader's fetcher)."""
        tp = (topic, partition)
        previous = self._leader_of.get(tp)
        if previous == leader_id and leader_id in self.fetchers:
            self.fetchers[leader_id].add_partitions([tp])  # a new epoch: fetch again at once
            return
        self.unfollow(topic, partition)
        if leader_id < 0:
            return
        endpoint = self._endpoint(leader_id)
        if endpoint is None:
            log.warning("%s-%d: leader %d has no known endpoint; not fetching", topic, partition, leader_id)
            return
        fetcher = self.fetchers.get(leader_id)
        if fetcher is None or (fetcher.client.host, fetcher.client.port) != endpoint:
            from replication.broker_client import BrokerClient
            from replication.replica_fetcher import ReplicaFetcher

            fetcher = ReplicaFetcher(self.node_id, leader_id, BrokerClient(
                leader_id, endpoint[0], endpoint[1], client_id=f"broker-{self.node_id}-fetcher-{leader_id}",
                timeout_ms=self.config.socket_timeout_ms), self._partition, self.config, self.quota,
                self.remote_aux_state)
            old = self.fetchers.pop(leader_id, None)
            if old is not None:
                fetcher.add_partitions(list(old.partitions))
                asyncio.get_running_loop().create_task(old.close())
            self.fetchers[leader_id] = fetcher
        fetcher.add_partitions([tp])
        self._leader_of[tp] = leader_id

    def unfollow(self, topic: str, partition: int) -> None:
        tp = (topic, partition)
        leader_id = self._leader_of.pop(tp, None)
        if leader_id is not None and leader_id in self.fetchers:
            self.fetchers[leader_id].remove_partitions([tp])

    async def close(self) -> None:
        for fetcher in self.fetchers.values():
            await fetcher.close()
        self.fetchers.clear()
        self._leader_of.clear()
