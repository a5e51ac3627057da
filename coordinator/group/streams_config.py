"""A streams group's settings: its ``streams.*`` group configs over the broker's ``group.streams.*`` defaults
(Kafka 4.4's GroupConfig, read by its GroupMetadataManager at every heartbeat)."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.group.config import GroupCoordinatorConfig
from coordinator.group.group_config import GroupConfigs

__all__ = ["StreamsGroupConfig", "StreamsGroupConfigs"]


@dataclass(frozen=True, slots=True)
class StreamsGroupConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5000
    num_standby_replicas: int = 0
    initial_rebalance_delay_ms: int = 3000
    assignment_interval_ms: int = 1000
    acceptable_recovery_lag: int = 10_000
    task_offset_interval_ms: int = 60_000
    num_warmup_replicas: int = 2
    rack_aware_assignment_tags: tuple[str, ...] = ()


class StreamsGroupConfigs:
    """``of(group_id)``: the settings a streams group runs with now (a group config changes them at once)."""

    def __init__(self, config: GroupCoordinatorConfig, group_configs: GroupConfigs | None = None) -> None:
        self.config = config
        self.group_configs = group_configs

    def of(self, group_id: str) -> StreamsGroupConfig:
        c = self.config
        if self.group_configs is None:
            return StreamsGroupConfig(
                c.streams_group_session_timeout_ms, c.streams_group_heartbeat_interval_ms,
                c.streams_group_num_standby_replicas, c.streams_group_initial_rebalance_delay_ms,
                c.streams_group_assignment_interval_ms, c.streams_group_acceptable_recovery_lag,
                c.streams_group_task_offset_interval_ms, c.streams_group_num_warmup_replicas,
                c.streams_group_rack_aware_assignment_tags)
        g = self.group_configs

        def get(name: str) -> int:
            return g.get_int(group_id, f"streams.{name}")
        tags = g.get(group_id, "streams.rack.aware.assignment.tags")
        return StreamsGroupConfig(
            get("session.timeout.ms"), get("heartbeat.interval.ms"), get("num.standby.replicas"),
            get("initial.rebalance.delay.ms"), get("assignment.interval.ms"), get("acceptable.recovery.lag"),
            get("task.offset.interval.ms"), get("num.warmup.replicas"),
            tuple(t.strip() for t in (tags if isinstance(tags, list) else str(tags).split(",")) if t.strip()))
