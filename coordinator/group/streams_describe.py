"""What StreamsGroupDescribe, ListGroups and DescribeGroups show of a streams group (Kafka 4.4's
StreamsGroup.asDescribedGroup, StreamsGroupState)."""

from __future__ import annotations

from coordinator.group import streams_group_records as srec
from coordinator.group.streams_group import StreamsGroup
from coordinator.group.streams_protocol import MemberState
from coordinator.group.streams_topology import configure
from coordinator.group.topics import TopicsImage
from wire import ErrorCode
from wire.messages import streams_group_describe_response as sgd
from wire.messages.list_groups_response import ListedGroup

__all__ = ["ASSIGNOR_NAME", "PROTOCOL_TYPE", "describe", "listed", "not_found", "state"]

PROTOCOL_TYPE = "streams"
#: The broker-side task assignor (Kafka 4.4's group.streams.assignors default, "sticky"), reported in v1.
ASSIGNOR_NAME = "sticky"
AUTHORIZED_OPERATIONS_OMITTED = -2147483648


def state(group: StreamsGroup, topics: TopicsImage) -> str:
    """Empty, NotReady (no topology, or its topics not ready), Assigning, Reconciling or Stable."""
    if not group.members:
        return "Empty"
    if group.topology is None or configure(group.topology, topics).status is not None:
        return "NotReady"
    if group.target_assignment_epoch != group.group_epoch:
        return "Assigning"
    if any(m.member_epoch != group.target_assignment_epoch or m.state != MemberState.STABLE
           for m in group.members.values()):
        return "Reconciling"
    return "Stable"


def listed(group: StreamsGroup, topics: TopicsImage) -> ListedGroup:
    return ListedGroup(group_id=group.group_id, protocol_type=PROTOCOL_TYPE, group_state=state(group, topics),
                       group_type=PROTOCOL_TYPE)


def not_found(group_id: str, message: str) -> sgd.DescribedGroup:
    return sgd.DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=message,
                              members=[], authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _ids(tasks: srec.Tasks) -> list[sgd.TaskIds]:
    return [sgd.TaskIds(subtopology_id=s, partitions=list(p)) for s, p in tasks]


def _assignment(t: srec.TasksTuple) -> sgd.Assignment:
    return sgd.Assignment(active_tasks=_ids(t.active), standby_tasks=_ids(t.standby), warmup_tasks=_ids(t.warmup))


def _offsets(group: StreamsGroup, member_id: str, which: int) -> list[sgd.TaskOffset]:
    """A member's last reported task offsets (``which`` 0) or end offsets (1)."""
    reported = group.task_offsets.get(member_id, ({}, {}))[which]
    return [sgd.TaskOffset(subtopology_id=s, partition=p, offset=o) for (s, p), o in sorted(reported.items())]


def _topic_info(i) -> sgd.TopicInfo:
    return sgd.TopicInfo(name=i.name, partitions=i.partitions, replication_factor=i.replication_factor,
                         topic_configs=[sgd.KeyValue(key=c.key, value=c.value) for c in i.topic_configs])


def describe(group: StreamsGroup, topics: TopicsImage) -> sgd.DescribedGroup:
    t = group.topology
    topology = None if t is None else sgd.Topology(epoch=t.epoch, subtopologies=[
        sgd.Subtopology(subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
                        repartition_sink_topics=list(s.repartition_sink_topics),
                        state_changelog_topics=[_topic_info(i) for i in s.state_changelog_topics],
                        repartition_source_topics=[_topic_info(i) for i in s.repartition_source_topics])
        for s in t.subtopologies])
    members = []
    for mid, m in group.members.items():
        md = m.metadata
        if md is None:
            continue
        members.append(sgd.Member(
            member_id=mid, member_epoch=m.member_epoch, instance_id=md.instance_id, rack_id=md.rack_id,
            client_id=md.client_id, client_host=md.client_host, topology_epoch=md.topology_epoch,
            process_id=md.process_id,
            user_endpoint=None if md.user_endpoint is None else sgd.Endpoint(host=md.user_endpoint.host,
                                                                             port=md.user_endpoint.port),
            client_tags=[sgd.KeyValue(key=k.key, value=k.value) for k in md.client_tags],
            task_offsets=_offsets(group, mid, 0), task_end_offsets=_offsets(group, mid, 1),
            assignment=_assignment(m.assigned),
            target_assignment=_assignment(group.target_assignment.get(mid, srec.EMPTY_TASKS)), is_classic=False))
    return sgd.DescribedGroup(
        group_id=group.group_id, group_state=state(group, topics), group_epoch=group.group_epoch,
        assignment_epoch=group.target_assignment_epoch, topology=topology, members=members,
        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED, assignor_name=ASSIGNOR_NAME)
