"""A Kafka Streams group (KIP-1071, ``group.protocol=streams``) as the console shows it: what the group's
coordinator answers to StreamsGroupDescribe v0, as the logged-in principal.

Each member with its process id, client, epochs and tasks (active, standby, warm-up; assigned and target);
the topology (subtopologies with their source, sink, changelog and repartition topics) and its status: ready,
or why not (no topology yet, internal topics Metadata does not list, members still on an older topology
epoch); each task's changelog lag where members report task offsets (their standby and warm-up tasks
catching up). The committed offsets with lag are the group's
OffsetFetch answer, as for any group (``admin.describe_group``).
"""

from __future__ import annotations

from typing import Any

from pykbroker.console.kafka import KafkaSession, check
from wire.messages import StreamsGroupDescribeRequest

__all__ = ["describe_streams_group", "streams_group_json"]


def _tasks(task_ids: Any) -> list[dict[str, Any]]:
    return [{"subtopology": t.subtopology_id, "partitions": sorted(t.partitions)}
            for t in sorted(task_ids or [], key=lambda t: t.subtopology_id)]


def _assignment(a: Any) -> dict[str, list[dict[str, Any]]]:
    return {"active": _tasks(a.active_tasks), "standby": _tasks(a.standby_tasks), "warmup": _tasks(a.warmup_tasks)}


def _task_lag(m: Any) -> list[dict[str, Any]]:
    """(subtopology, partition) -> the member's offset in the task's changelog, its end offset and their
    difference, where it reports both (Kafka Streams sends them in its heartbeats)."""
    ends = {(t.subtopology_id, t.partition): t.offset for t in m.task_end_offsets or []}
    out = []
    for t in sorted(m.task_offsets or [], key=lambda t: (t.subtopology_id, t.partition)):
        end = ends.get((t.subtopology_id, t.partition))
        out.append({"subtopology": t.subtopology_id, "partition": t.partition, "offset": t.offset, "end": end,
                    "lag": None if end is None or end < 0 or t.offset < 0 else max(end - t.offset, 0)})
    return out


def streams_group_json(g: Any, topics: set[str]) -> dict[str, Any]:
    """One described streams group (a StreamsGroupDescribe ``DescribedGroup``) as the page's JSON;
    ``topics``: the topic names Metadata lists to this principal (for the topology's missing internal topics)."""
    topology = g.topology
    subtopologies = []
    for s in sorted(topology.subtopologies or [] if topology is not None else [], key=lambda s: s.subtopology_id):
        subtopologies.append({
            "id": s.subtopology_id, "source_topics": sorted(s.source_topics),
            "repartition_sink_topics": sorted(s.repartition_sink_topics),
            "changelog_topics": [{"name": t.name, "partitions": t.partitions} for t in s.state_changelog_topics],
            "repartition_source_topics": [{"name": t.name, "partitions": t.partitions}
                                          for t in s.repartition_source_topics]})
    epoch = topology.epoch if topology is not None else None
    internal = sorted({t["name"] for s in subtopologies for t in s["changelog_topics"] + s["repartition_source_topics"]})
    missing = [t for t in internal if t not in topics]
    behind = sorted(m.member_id for m in g.members if epoch is not None and m.topology_epoch != epoch)
    if topology is None:
        status = "no topology yet: no member has sent one"
    elif missing:
        status = f"not ready: internal topics not created yet ({', '.join(missing)})"
    elif g.group_state == "NotReady":
        status = "not ready: the coordinator cannot configure the topology's topics yet"
    elif behind:
        status = f"{len(behind)} member(s) still on an older topology epoch"
    else:
        status = "ready"
    members = [{
        "member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
        "instance_id": m.instance_id, "process_id": m.process_id, "rack": m.rack_id, "member_epoch": m.member_epoch,
        "topology_epoch": m.topology_epoch,
        "endpoint": f"{m.user_endpoint.host}:{m.user_endpoint.port}" if m.user_endpoint is not None else None,
        "tasks": _assignment(m.assignment), "target": _assignment(m.target_assignment), "task_lag": _task_lag(m),
        "assignment": [],  # topic partitions: a streams member is assigned tasks instead
    } for m in sorted(g.members, key=lambda m: (m.process_id, m.member_id))]
    return {"state": g.group_state, "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
            "members": members, "topology": {"epoch": epoch, "status": status, "ready": status == "ready",
                                             "subtopologies": subtopologies, "missing_topics": missing}}


async def describe_streams_group(session: KafkaSession, group_id: str) -> dict[str, Any]:
    """The streams group ``group_id`` as its coordinator describes it (RequestError when refused: not a
    streams group, GROUP_AUTHORIZATION_FAILED, or a broker without streams groups)."""
    answer = await session.to_coordinator(group_id, StreamsGroupDescribeRequest(
        group_ids=[group_id], include_authorized_operations=False))
    [g] = answer.groups
    check(g.error_code, g.error_message, f"group {group_id}")
    topics = {t.name for t in (await session.metadata(None)).topics if t.error_code == 0}
    return streams_group_json(g, topics)
