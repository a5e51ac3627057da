"""Share-group membership as records of __consumer_offsets (Kafka 4.2's group coordinator, KIP-932).

Kafka 4.2 writes, all at value version 0 (flexible), keyed by group id (and member id):

- ShareGroupMemberMetadata (10): a member's rack, client id, client host and subscribed topic names;
- ShareGroupMetadata (11): the group epoch and the metadata hash of the subscribed topics;
- ShareGroupTargetAssignmentMetadata (12): the assignment epoch;
- ShareGroupTargetAssignmentMember (13): a member's target partitions;
- ShareGroupCurrentMemberAssignment (14): a member's epoch, previous epoch, state (0 = stable) and partitions;
- ShareGroupStatePartitionMetadata (15): the share-partitions the group is initializing and has initialized, and the
  topics whose offsets it is deleting.

``records_between(before, after)`` turns two views of a group (``view(group)``, None for "no group") into the
records that take a replay from one to the other, in the order Kafka's heartbeat writes them: member
subscriptions, removed members' tombstones, the group epoch, target assignments, the assignment epoch,
current assignments, state-partition metadata.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from uuid import UUID

from coordinator.group.records import CoordinatorRecord
from wire.messages import (
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)
from wire.messages import share_group_current_member_assignment_value as _current
from wire.messages import share_group_state_partition_metadata_value as _state
from wire.messages import share_group_target_assignment_member_value as _target

__all__ = ["GroupView", "MemberView", "records_between", "assignment_of"]

# Kafka's MemberState.STABLE: share-group members have no revocation, so they are always stable.
MEMBER_STATE_STABLE = 0

Partitions = tuple[tuple[UUID, tuple[int, ...]], ...]


def canonical(assignment: Mapping[UUID, Iterable[int]]) -> Partitions:
    """An assignment as sorted tuples, without empty topics (what records hold and views compare)."""
    return tuple((t, tuple(sorted(set(p)))) for t, p in sorted(assignment.items(), key=lambda kv: str(kv[0])) if p)


def assignment_of(topic_partitions) -> dict[UUID, list[int]]:
    """A record's ``[{topic_id, partitions}]`` -> topic id -> sorted partitions."""
    out: dict[UUID, set[int]] = {}
    for tp in topic_partitions:
        out.setdefault(tp.topic_id, set()).update(tp.partitions)
    return {t: sorted(p) for t, p in out.items() if p}


@dataclass(frozen=True)
class MemberView:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    member_epoch: int
    previous_member_epoch: int
    assignment: Partitions


@dataclass(frozen=True)
class GroupView:
    group_epoch: int
    metadata_hash: int
    assignment_epoch: int
    members: Mapping[str, MemberView]
    target: Mapping[str, Partitions]
    initialized: tuple[tuple[UUID, str, tuple[int, ...]], ...]
    assignment_timestamp: int = 0  # when the assignment of assignment_epoch was computed (0: never, or emptied)
    initializing: tuple[tuple[UUID, str, tuple[int, ...]], ...] = ()
    deleting: tuple[tuple[UUID, str], ...] = ()


def member_subscription_record(group_id: str, member_id: str, m: MemberView) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id),
                             ShareGroupMemberMetadataValue(rack_id=m.rack_id, client_id=m.client_id,
                                                           client_host=m.client_host,
                                                           subscribed_topic_names=list(m.subscribed_topic_names)), 0)


def epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupMetadataKey(group_id=group_id),
                             ShareGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash), 0)


def target_assignment_record(group_id: str, member_id: str, assignment: Partitions) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        ShareGroupTargetAssignmentMemberValue(topic_partitions=[
            _target.TopicPartition(topic_id=t, partitions=list(p)) for t, p in assignment]), 0)


def assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupTargetAssignmentMetadataKey(group_id=group_id),
                             ShareGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                                     assignment_timestamp=timestamp_ms), 0)


def current_assignment_record(group_id: str, member_id: str, m: MemberView) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
        ShareGroupCurrentMemberAssignmentValue(
            member_epoch=m.member_epoch, previous_member_epoch=m.previous_member_epoch, state=MEMBER_STATE_STABLE,
            assigned_partitions=[_current.TopicPartitions(topic_id=t, partitions=list(p)) for t, p in m.assignment]),
        0)


def state_partition_metadata_record(group_id: str, view: GroupView) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupStatePartitionMetadataKey(group_id=group_id),
        ShareGroupStatePartitionMetadataValue(
            initializing_topics=[_state.TopicPartitionsInfo(topic_id=t, topic_name=name, partitions=list(p))
                                 for t, name, p in view.initializing],
            initialized_topics=[_state.TopicPartitionsInfo(topic_id=t, topic_name=name, partitions=list(p))
                                for t, name, p in view.initialized],
            deleting_topics=[_state.TopicInfo(topic_id=t, topic_name=name) for t, name in view.deleting]), 0)


def _member_key_tombstones(group_id: str, member_id: str) -> list[CoordinatorRecord]:
    return [CoordinatorRecord(ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None),
            CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None),
            CoordinatorRecord(ShareGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)]


def records_between(group_id: str, before: GroupView | None, after: GroupView | None) -> list[CoordinatorRecord]:
    """The records that move a replayed group from ``before`` to ``after`` (None: absent; tombstones)."""
    out: list[CoordinatorRecord] = []
    if after is None:
        if before is None:
            return out
        for member_id in before.members:
            out.extend(_member_key_tombstones(group_id, member_id))
        for member_id in before.target.keys() - before.members.keys():
            out.append(CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
                                         None))
        out.append(CoordinatorRecord(ShareGroupTargetAssignmentMetadataKey(group_id=group_id), None))
        out.append(CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id=group_id), None))
        out.append(CoordinatorRecord(ShareGroupMetadataKey(group_id=group_id), None))
        return out
    old_members = before.members if before is not None else {}
    for member_id, m in after.members.items():
        o = old_members.get(member_id)
        if o is None or (o.rack_id, o.client_id, o.client_host, o.subscribed_topic_names) != \
                (m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names):
            out.append(member_subscription_record(group_id, member_id, m))
    for member_id in old_members.keys() - after.members.keys():
        out.extend(_member_key_tombstones(group_id, member_id))
    if before is None or (before.group_epoch, before.metadata_hash) != (after.group_epoch, after.metadata_hash):
        out.append(epoch_record(group_id, after.group_epoch, after.metadata_hash))
    old_target = before.target if before is not None else {}
    for member_id, assignment in after.target.items():
        if old_target.get(member_id) != assignment:
            out.append(target_assignment_record(group_id, member_id, assignment))
    for member_id in old_target.keys() - after.target.keys() - (old_members.keys() - after.members.keys()):
        out.append(CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
                                     None))
    if before is None or (before.assignment_epoch, before.assignment_timestamp) != \
            (after.assignment_epoch, after.assignment_timestamp):
        out.append(assignment_epoch_record(group_id, after.assignment_epoch, after.assignment_timestamp))
    for member_id, m in after.members.items():
        o = old_members.get(member_id)
        if o is None or (o.member_epoch, o.previous_member_epoch, o.assignment) != \
                (m.member_epoch, m.previous_member_epoch, m.assignment):
            out.append(current_assignment_record(group_id, member_id, m))
    old_state = (before.initialized, before.initializing, before.deleting) if before is not None else ((), (), ())
    if old_state != (after.initialized, after.initializing, after.deleting):
        out.append(state_partition_metadata_record(group_id, after))
    return out
