"""The group coordinator's settings, by Kafka property name (``group.*``, ``offsets.*``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["GroupCoordinatorConfig"]

_I32_MAX = 2**31 - 1


@dataclass(frozen=True)
class GroupCoordinatorConfig:
    offsets_topic_num_partitions: int = 50
    offsets_retention_ms: int = 10080 * 60_000
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    group_max_size: int = _I32_MAX
    # Kafka's GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a new member's parked
    # JoinGroup is answered (and the member dropped) after this long if the rebalance has not finished.
    classic_group_new_member_join_timeout_ms: int = 5 * 60_000
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer", "streams")
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_heartbeat_interval_ms: int = 5000
    consumer_group_assignment_interval_ms: int = 1000  # KIP-1263 (Kafka 4.3)
    consumer_group_max_size: int = _I32_MAX
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")
    # Kafka's group.consumer.migration.policy (default BIDIRECTIONAL): classic <-> consumer conversion.
    consumer_group_migration_policy: str = "bidirectional"
    # KIP-932 share groups, hosted by the same shards (group.share.*)
    share_group_session_timeout_ms: int = 45_000
    share_group_heartbeat_interval_ms: int = 5000
    share_group_assignment_interval_ms: int = 1000  # KIP-1263 (Kafka 4.3)
    share_group_max_size: int = 200
    share_group_initialize_retry_interval_ms: int = 30_000  # a share-partition initializing longer is asked again
    streams_group_session_timeout_ms: int = 45_000
    streams_group_heartbeat_interval_ms: int = 5000
    streams_group_num_standby_replicas: int = 0
    streams_group_acceptable_recovery_lag: int = 10_000
    streams_group_task_offset_interval_ms: int = 60_000
    streams_group_initial_rebalance_delay_ms: int = 3000
    streams_group_assignment_interval_ms: int = 1000
    streams_group_num_warmup_replicas: int = 2
    streams_group_rack_aware_assignment_tags: tuple[str, ...] = ()
    # pykbroker's built-in topology description store (KIP-1331; Kafka: a plugin class)
    streams_topology_description_store: bool = False

    @classmethod
    def from_properties(cls, get: Callable[[str], Any]) -> GroupCoordinatorConfig:
        """Build from a lookup of parsed broker properties by Kafka name (``Config.__getitem__``)."""
        return cls(
            offsets_topic_num_partitions=get("offsets.topic.num.partitions"),
            offsets_retention_ms=get("offsets.retention.minutes") * 60_000,
            offsets_retention_check_interval_ms=get("offsets.retention.check.interval.ms"),
            offset_metadata_max_bytes=get("offset.metadata.max.bytes"),
            group_initial_rebalance_delay_ms=get("group.initial.rebalance.delay.ms"),
            group_min_session_timeout_ms=get("group.min.session.timeout.ms"),
            group_max_session_timeout_ms=get("group.max.session.timeout.ms"),
            group_max_size=get("group.max.size"),
            rebalance_protocols=tuple(p.strip().lower() for p in get("group.coordinator.rebalance.protocols")),
            consumer_group_session_timeout_ms=get("group.consumer.session.timeout.ms"),
            consumer_group_heartbeat_interval_ms=get("group.consumer.heartbeat.interval.ms"),
            consumer_group_assignment_interval_ms=get("group.consumer.assignment.interval.ms"),
            consumer_group_max_size=get("group.consumer.max.size"),
            consumer_group_assignors=tuple(a.strip().lower() for a in get("group.consumer.assignors")),
            share_group_session_timeout_ms=get("group.share.session.timeout.ms"),
            share_group_heartbeat_interval_ms=get("group.share.heartbeat.interval.ms"),
            share_group_assignment_interval_ms=get("group.share.assignment.interval.ms"),
            share_group_max_size=get("group.share.max.size"),
            share_group_initialize_retry_interval_ms=get("group.share.initialize.retry.interval.ms"),
            streams_group_session_timeout_ms=get("group.streams.session.timeout.ms"),
            streams_group_heartbeat_interval_ms=get("group.streams.heartbeat.interval.ms"),
            streams_group_num_standby_replicas=get("group.streams.num.standby.replicas"),
            streams_group_acceptable_recovery_lag=get("group.streams.acceptable.recovery.lag"),
            streams_group_task_offset_interval_ms=get("group.streams.task.offset.interval.ms"),
            streams_group_initial_rebalance_delay_ms=get("group.streams.initial.rebalance.delay.ms"),
            streams_group_assignment_interval_ms=get("group.streams.assignment.interval.ms"),
            streams_group_num_warmup_replicas=get("group.streams.num.warmup.replicas"),
            streams_group_rack_aware_assignment_tags=tuple(
                t.strip() for t in get("group.streams.rack.aware.assignment.tags") if t.strip()),
            streams_topology_description_store=get("group.streams.topology.description.store.enable"),
        )

    @property
    def consumer_protocol_enabled(self) -> bool:
        return "consumer" in self.rebalance_protocols

    @property
    def streams_protocol_enabled(self) -> bool:
        return "streams" in self.rebalance_protocols

    @property
    def upgrade_enabled(self) -> bool:
        return self.consumer_group_migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        return self.consumer_group_migration_policy in ("bidirectional", "downgrade")
