"""A streams group's topology checked against the topics image (Kafka's ConfiguredTopology, InternalTopicManager).

``validate`` refuses a malformed topology (STREAMS_INVALID_TOPOLOGY, 130). ``configure`` finds each
sub-topology's number of tasks (partitions of its source topics, which must agree) or the status that keeps the
group from being assigned: missing source topics (1), incorrectly partitioned topics (2), missing internal
topics (3): the heartbeat handler (pykbroker.handlers.group.streams_group_heartbeat) creates those.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.group.topics import TopicsImage
from coordinator.runtime.errors import ApiError
from wire import ErrorCode, java
from wire.messages import StreamsGroupTopologyValue
from wire.messages import streams_group_describe_response as described
from wire.messages import streams_group_heartbeat_request as heartbeat

__all__ = ["ConfiguredTopology", "InternalTopic", "StatusCode", "configure", "hash_map_order", "missing_internal_topics",
           "topology_topics", "validate"]


class StatusCode:
    """The status codes of StreamsGroupHeartbeatResponse (Kafka's StreamsGroupHeartbeatResponse.Status)."""

    STABLE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6


@dataclass(frozen=True, slots=True)
class ConfiguredTopology:
    """Tasks per sub-topology when the topology is ready (``status`` None), else the status and its detail."""

    tasks: dict[str, int]
    status: int | None = None
    detail: str = ""


def hash_map_order(names: list[str]) -> list[str]:
    """``names`` (once each) as Kafka lists missing internal topics: in the order of the java.util.HashMap it keeps
    them in."""
    return java.hash_set_order(names)  # a HashMap's keys iterate as a HashSet's (one is inside the other)


def topology_topics(topology: heartbeat.Topology | described.Topology | StreamsGroupTopologyValue) -> list[str]:
    """Every topic a topology names, once each in its order: sub-topology by sub-topology, the source, repartition
    sink, repartition source and changelog topics (regex sources are not names); what ACLs are checked on."""
    names = (name for sub in topology.subtopologies or () for name in (
        *sub.source_topics, *sub.repartition_sink_topics, *(t.name for t in sub.repartition_source_topics),
        *(t.name for t in sub.state_changelog_topics)))
    return list(dict.fromkeys(names))


def validate(topology: StreamsGroupTopologyValue) -> None:
    """STREAMS_INVALID_TOPOLOGY for a topology no assignment can be built from."""
    seen: set[str] = set()
    for sub in topology.subtopologies:
        if not sub.subtopology_id or sub.subtopology_id in seen:
            raise ApiError(ErrorCode.STREAMS_INVALID_TOPOLOGY,
                           f"Subtopology id '{sub.subtopology_id}' is empty or not unique.")
        seen.add(sub.subtopology_id)
        if not sub.source_topics and not sub.source_topic_regex and not sub.repartition_source_topics:
            raise ApiError(ErrorCode.STREAMS_INVALID_TOPOLOGY,
                           f"Subtopology {sub.subtopology_id} has no source topics.")
        for group in sub.copartition_groups:
            if (any(i < 0 or i >= len(sub.source_topics) for i in group.source_topics)
                    or any(i < 0 or i >= len(sub.repartition_source_topics) for i in group.repartition_source_topics)):
                raise ApiError(ErrorCode.STREAMS_INVALID_TOPOLOGY,
                               f"Subtopology {sub.subtopology_id} has a copartition group index out of range.")


def configure(topology: StreamsGroupTopologyValue, topics: TopicsImage) -> ConfiguredTopology:
    missing = sorted({t for sub in topology.subtopologies for t in sub.source_topics if topics.by_name(t) is None})
    if missing:
        return ConfiguredTopology({}, StatusCode.MISSING_SOURCE_TOPICS,
                                  f"Source topics {', '.join(missing)} are missing.")
    internal = [t.name for sub in topology.subtopologies
                for t in (*sub.repartition_source_topics, *sub.state_changelog_topics) if topics.by_name(t.name) is None]
    if internal:
        return ConfiguredTopology({}, StatusCode.MISSING_INTERNAL_TOPICS,
                                  f"Internal topics are missing: {', '.join(hash_map_order(internal))}")
    tasks: dict[str, int] = {}
    for sub in topology.subtopologies:
        names = (*sub.source_topics, *(t.name for t in sub.repartition_source_topics))
        counts = {name: info.num_partitions for name in names if (info := topics.by_name(name)) is not None}
        if len(set(counts.values())) > 1:
            return ConfiguredTopology({}, StatusCode.INCORRECTLY_PARTITIONED_TOPICS, "Following topics do not have "
                                      f"the same number of partitions: {sorted(counts.items())}")
        tasks[sub.subtopology_id] = max(counts.values(), default=0)
    return ConfiguredTopology(tasks)


@dataclass(frozen=True, slots=True)
class InternalTopic:
    """A repartition or changelog topic the broker creates for a streams group (Kafka's InternalTopicManager)."""

    name: str
    partitions: int
    replication_factor: int  # 0: the broker's default.replication.factor
    configs: dict[str, str]


def missing_internal_topics(topology: StreamsGroupTopologyValue, topics: TopicsImage) -> list[InternalTopic]:
    """The internal topics missing from ``topics`` whose partition count is known: a repartition topic's own,
    else its writers' task count; a changelog topic has its sub-topology's task count."""
    counts: dict[str, int] = {}
    for sub in topology.subtopologies:
        for name in sub.source_topics:
            if (info := topics.by_name(name)) is not None:
                counts[name] = info.num_partitions
        for t in sub.repartition_source_topics:
            if (info := topics.by_name(t.name)) is not None:
                counts[t.name] = info.num_partitions
            elif t.partitions > 0:
                counts[t.name] = t.partitions

    def tasks(sub) -> int:
        return max((counts.get(n, 0) for n in (*sub.source_topics, *(t.name for t in sub.repartition_source_topics))),
                   default=0)

    changed = True
    while changed:  # a repartition topic without a count takes its writers' task count
        changed = False
        for sub in topology.subtopologies:
            n = tasks(sub)
            for name in sub.repartition_sink_topics:
                if n > 0 and counts.get(name, 0) < n and topics.by_name(name) is None and not any(
                        t.name == name and t.partitions > 0 for s in topology.subtopologies
                        for t in s.repartition_source_topics):
                    counts[name] = n
                    changed = True
    out: list[InternalTopic] = []
    for sub in topology.subtopologies:
        for t in sub.repartition_source_topics:
            if topics.by_name(t.name) is None and counts.get(t.name, 0) > 0:
                out.append(InternalTopic(t.name, counts[t.name], t.replication_factor,
                                         {c.key: c.value for c in t.topic_configs}))
        n = tasks(sub)
        for t in sub.state_changelog_topics:
            if topics.by_name(t.name) is None and n > 0:
                out.append(InternalTopic(t.name, n, t.replication_factor, {c.key: c.value for c in t.topic_configs}))
    return out
