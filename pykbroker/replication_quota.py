"""Replication throttles (Kafka's ReplicationQuotaManager, KIP-73): how fast out-of-sync replicas copy.

Two managers per broker, as in Kafka: the leader's (``leader.replication.throttled.rate``, for partitions
whose ``leader.replication.throttled.replicas`` names ``<partition>:<this broker>``) and the follower's
(``follower.replication.throttled.rate``, ``follower.replication.throttled.replicas``). Both rates are
dynamic broker configs (this broker's, else the cluster default; unset is unlimited) and the lists are
topic configs (``*`` throttles every replica of the topic), both read from the metadata image as it is, so
kafka-reassign-partitions --throttle and --verify take effect at once. A throttled partition copies only
while the bytes recorded over the last ``replication.quota.window.num`` windows of
``replication.quota.window.size.seconds`` stay under the rate: the leader answers a follower's fetch of it
without records, the follower leaves it out of its fetches. Replicas in the ISR are never throttled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from replication.sampled_rate import SampledRate

__all__ = ["ReplicationQuotaManager", "throttled_partitions"]

UNLIMITED = (1 << 63) - 1  # Kafka's default rate: Long.MAX_VALUE


def throttled_partitions(value: str | None, broker_id: int) -> frozenset[int] | bool:
    """The partitions a ``*.replication.throttled.replicas`` value throttles on ``broker_id`` (Kafka's
    ``parseThrottledPartitions``): True for ``*``, else those listed as ``<partition>:<broker_id>``."""
    if not value:
        return frozenset()
    if value.strip() == "*":
        return True
    out = set()
    for entry in value.split(","):
        partition, _, broker = entry.strip().partition(":")
        if partition.strip().isdigit() and broker.strip().lstrip("-").isdigit() and int(broker) == broker_id:
            out.add(int(partition))
    return frozenset(out)


class ReplicationQuotaManager:
    """One side's (leader or follower) replication throttle; event-loop only."""

    def __init__(self, broker_id: int, rate_config: str, replicas_config: str,
                 dynamic_configs: Callable[[], tuple[Mapping[str, str], Mapping[str, str]]],
                 topic_configs: Callable[[str], Mapping[str, str] | None], *, samples: int = 11,
                 window_seconds: int = 1, clock: Callable[[], float] = time.time) -> None:
        """``dynamic_configs()``: (this broker's dynamic configs, the cluster defaults); ``topic_configs(t)``:
        the topic's explicitly set configs."""
        self.broker_id = broker_id
        self.rate_config = rate_config
        self.replicas_config = replicas_config
        self._dynamic = dynamic_configs
        self._topic_configs = topic_configs
        self._sensor = SampledRate(samples, window_seconds * 1000)
        self._clock = clock
        self._parsed: dict[str, tuple[str | None, frozenset[int] | bool]] = {}

    def upper_bound(self) -> int:
        """The rate in bytes per second (unlimited when unset)."""
        per_broker, default = self._dynamic()
        raw = per_broker.get(self.rate_config, default.get(self.rate_config))
        try:
            return int(raw) if raw is not None else UNLIMITED
        except ValueError:
            return UNLIMITED

    def is_throttled(self, topic: str, partition: int) -> bool:
        configs = self._topic_configs(topic)
        value = configs.get(self.replicas_config) if configs else None
        cached = self._parsed.get(topic)
        if cached is None or cached[0] != value:
            cached = self._parsed[topic] = (value, throttled_partitions(value, self.broker_id))
        partitions = cached[1]
        return partitions is True or (partitions is not False and partition in partitions)

    def is_quota_exceeded(self) -> bool:
        bound = self.upper_bound()
        if bound >= UNLIMITED:
            return False
        if not self._sensor.windows:
            return bound <= 0
        rate, _window = self._sensor.rate_and_window(int(self._clock() * 1000))
        return rate > bound

    def record(self, size: int) -> None:
        if size > 0:
            self._sensor.record(size, int(self._clock() * 1000))

    def rate(self) -> float:
        """Bytes per second recorded over the current windows."""
        if not self._sensor.windows:
            return 0.0
        return self._sensor.rate_and_window(int(self._clock() * 1000))[0]
