"""Lag of the groups this broker coordinates over the last minutes, sampled by the console, so a group's page
shows lag over time from the moment it opens (not only while it stays open).

Every ``LAG_INTERVAL_S`` the console reads this broker's group coordinator (``sampled_groups``: classic,
consumer and streams groups' committed offsets against the high watermarks of the partitions led here; share
groups' start offsets and lag as DescribeShareGroupOffsets answers them, from their share-partition state) and
keeps the last ``LAG_SAMPLES`` of each group's total lag and of each partition's. A partition led by another broker has no lag here (None, skipped);
a group coordinated elsewhere has its history on its coordinator's console. The page asks for a group's history
only after the user's own describe of it succeeded (the broker's ACLs decided).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from coordinator.share.records import SHARE_GROUP_STATE_TOPIC_NAME
from pykbroker.metrics import state

__all__ = ["LAG_INTERVAL_S", "LagHistory", "sampled_groups", "share_groups"]

LAG_INTERVAL_S = 6.0
LAG_SAMPLES = 100  # ten minutes


class LagHistory:
    """{group: (times, total lags, {(topic, partition): lags})}, the last LAG_SAMPLES samples of each."""

    def __init__(self, samples: int = LAG_SAMPLES) -> None:
        self.samples = samples
        self.groups: dict[str, tuple[deque[float], deque[int], dict[tuple[str, int], deque[int | None]]]] = {}

    def sample(self, groups: list[state.GroupView], now: float | None = None) -> None:
        """One sample of ``groups`` (``metrics.state.groups(broker)``: those coordinated here)."""
        now = time.time() if now is None else now
        seen = set()
        for g in groups:
            seen.add(g.group_id)
            times, totals, parts = self.groups.setdefault(
                g.group_id, (deque(maxlen=self.samples), deque(maxlen=self.samples), {}))
            n = len(times)
            times.append(now)
            totals.append(sum(lag for _, lag in g.offsets.values() if lag is not None))
            for tp, (_, lag) in g.offsets.items():
                series = parts.get(tp)
                if series is None:  # new since: unknown before it
                    series = parts[tp] = deque([None] * n, maxlen=self.samples)
                series.append(lag)
            for tp in parts.keys() - g.offsets.keys():
                parts[tp].append(None)
        for gone in self.groups.keys() - seen:  # deleted, or moved to another coordinator
            del self.groups[gone]

    def to_json(self, group_id: str) -> dict[str, Any] | None:
        """The group's samples: times (s), total lag, and each partition's as [topic, partition, lags]."""
        found = self.groups.get(group_id)
        if found is None:
            return None
        times, totals, parts = found
        return {"times": list(times), "lag": list(totals),
                "partitions": [[t, p, list(lags)] for (t, p), lags in sorted(parts.items())]}


async def sampled_groups(broker: Any) -> list[state.GroupView]:
    """Every group this broker coordinates, of each type, with its offsets and lag (``LagHistory.sample``)."""
    return state.groups(broker) + state.streams_groups(broker) + await share_groups(broker)


async def share_groups(broker: Any) -> list[state.GroupView]:
    """The share groups of the __consumer_offsets partitions loaded here, each partition as (share-partition
    start offset, lag): DescribeShareGroupOffsets v1's numbers, the lag for partitions led here. Nothing is
    built or created to look (no coordinator, no __share_group_state)."""
    service = getattr(getattr(broker, "coordinators", None), "built_share", None)
    if service is None:
        return []
    groups = [g for shard in state.group_shards(broker) for g in list(shard.share.groups.values())]
    with_state = SHARE_GROUP_STATE_TOPIC_NAME in broker.metadata.image.topics
    high_watermarks = state.leader_high_watermarks(broker)
    topics_by_id = broker.metadata.image.topics_by_id
    out = []
    for group in groups:
        view = state.GroupView(group.group_id, "share", group.state, "share", state.members(group))
        for (_, topic_id, partition), offset in (await service.states(group.group_id) if with_state else {}).items():
            topic = topics_by_id.get(topic_id)
            if topic is None:
                continue
            hw = high_watermarks.get((topic.name, partition))
            view.offsets[(topic.name, partition)] = (offset.start_offset, None if hw is None else offset.lag(hw))
        out.append(view)
    return out
