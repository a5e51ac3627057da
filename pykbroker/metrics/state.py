"""Read-only views of the broker's state for scrapes and the console: partitions hosted here, groups, lag.

Nothing here is on the request path: these walk the replica manager's partitions and the group
coordinator's loaded shards when asked (a scrape, a console refresh), on the event loop thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["PartitionView", "GroupView", "partitions", "groups", "streams_groups", "leader_high_watermarks",
           "members", "group_shards", "CLASSIC_STATES"]

# Kafka's classic group states, as GroupMetadataManager's NumGroups<State> gauges name them.
CLASSIC_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")


@dataclass
class PartitionView:
    """One partition hosted by this broker, as its replica and log stand now."""

    topic: str
    partition: int
    leader: bool
    replicas: list[int]
    isr: list[int]
    min_isr: int
    size: int
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    num_segments: int
    offline: bool

    @property
    def under_replicated(self) -> bool:
        return self.leader and len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        return self.leader and len(self.isr) < min(self.min_isr, max(len(self.replicas), 1))

    @property
    def at_min_isr(self) -> bool:
        return self.leader and len(self.isr) == min(self.min_isr, max(len(self.replicas), 1))


@dataclass
class MemberView:
    member_id: str
    client_id: str
    client_host: str
    instance_id: str | None = None


@dataclass
class GroupView:
    """One group coordinated here: its type, state, members and committed offsets with their lag
    (the partition's high watermark minus the committed offset; None when this broker does not host it)."""

    group_id: str
    type: str
    state: str
    protocol_type: str
    members: list[MemberView] = field(default_factory=list)
    offsets: dict[tuple[str, int], tuple[int, int | None]] = field(default_factory=dict)


def partitions(broker: Any) -> list[PartitionView]:
    """Every partition of the replica manager (leaders and followers)."""
    out = []
    for (topic, partition), p in list(broker.replica_manager.partitions.items()):
        log = p.log
        offline = bool(getattr(log, "is_offline", False))
        try:
            size = log.size_in_bytes if not offline else 0
            num_segments = log.num_segments if not offline else 0
        except Exception:  # noqa: BLE001 - a log closed meanwhile (deleted topic): sizes unknown
            size, num_segments = 0, 0
        out.append(PartitionView(
            topic, partition, bool(p.is_leader), list(p.replicas), list(p.isr), log.config.min_insync_replicas,
            size, log.log_start_offset, log.log_end_offset, log.high_watermark, num_segments, offline))
    return out


def members(group: Any) -> list[MemberView]:
    out = []
    for m in getattr(group, "members", {}).values():
        out.append(MemberView(m.member_id, getattr(m, "client_id", ""), getattr(m, "client_host", ""),
                              getattr(m, "group_instance_id", None) or getattr(m, "instance_id", None)))
    return out


def group_shards(broker: Any) -> list[Any]:
    """The group coordinator's shards of the __consumer_offsets partitions loaded here (none when no group was
    ever used: the coordinator is not built to look)."""
    coordinators = getattr(broker, "coordinators", None)
    coordinator = coordinators.built_group if coordinators is not None else None
    if coordinator is None:
        return []
    out = []
    for index in coordinator.runtime.loaded_partitions():
        try:
            out.append(coordinator.runtime.shard(index))
        except Exception:  # noqa: BLE001 - unloaded meanwhile
            continue
    return out


def groups(broker: Any) -> list[GroupView]:
    """Groups of every __consumer_offsets partition loaded here (nothing when no group was ever used)."""
    high_watermarks = leader_high_watermarks(broker)
    out = []
    for shard in group_shards(broker):
        committed = shard.offsets.offsets
        for group_id, group in list(shard.groups.groups.items()):
            kind = "classic" if hasattr(group, "protocol_name") else "consumer"
            view = GroupView(group_id, kind, group.state.value,
                             (getattr(group, "protocol_type", None) or "consumer"), members(group))
            _add_offsets(view, committed.get(group_id, {}), high_watermarks)
            out.append(view)
    return out


def streams_groups(broker: Any) -> list[GroupView]:
    """Streams groups (KIP-1071) of every __consumer_offsets partition loaded here, with their committed offsets
    and lag as ``groups`` (kept apart: the scrape's group gauges are Kafka's classic and consumer ones)."""
    high_watermarks = leader_high_watermarks(broker)
    out = []
    for shard in group_shards(broker):
        committed = shard.offsets.offsets
        for group_id, group in list(shard.streams.groups.items()):
            view = GroupView(group_id, "streams", "Stable" if group.members else "Empty", "streams", members(group))
            _add_offsets(view, committed.get(group_id, {}), high_watermarks)
            out.append(view)
    return out


def leader_high_watermarks(broker: Any) -> dict[tuple[str, int], int]:
    """{(topic, partition): high watermark} of the partitions led here."""
    return {(t, p): part.log.high_watermark
            for (t, p), part in list(broker.replica_manager.partitions.items()) if part.is_leader}


def _add_offsets(view: GroupView, committed: dict[str, Any], high_watermarks: dict[tuple[str, int], int]) -> None:
    for topic, by_partition in committed.items():
        for partition, om in by_partition.items():
            hw = high_watermarks.get((topic, partition))
            view.offsets[(topic, partition)] = (om.committed_offset,
                                                None if hw is None else max(hw - om.committed_offset, 0))
