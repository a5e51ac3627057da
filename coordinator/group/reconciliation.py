"""Moving a consumer-group member towards its target assignment (Kafka's CurrentAssignmentBuilder).

A member never owns a partition another member still owns: partitions it must give up are first
listed as pending revocation (state UNREVOKED_PARTITIONS, epoch unchanged); once its heartbeat no
longer reports them, it moves to the target epoch and receives the partitions that are free. Those
still owned by others are withheld (state UNRELEASED_PARTITIONS) until released.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from uuid import UUID

from coordinator.group.consumer_group import ConsumerGroupMember, MemberState
from coordinator.runtime.errors import ApiError
from wire import ErrorCode

__all__ = ["next_assignment"]

# (topic id, partition) -> epoch of the member owning it, -1 when free.
PartitionEpoch = Callable[[UUID, int], int]
# The partitions a member reports owning: [(topic id, [partitions])], or None when not sent.
Owned = list[tuple[UUID, list[int]]] | None


def _owns_any(owned: Owned, partitions: Mapping[UUID, frozenset[int]]) -> bool:
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, parts in owned for p in parts)


def next_assignment(member: ConsumerGroupMember, target_epoch: int, target: Mapping[UUID, frozenset[int]],
                    partition_epoch: PartitionEpoch, owned: Owned,
                    subscription_changed: bool = False) -> ConsumerGroupMember:
    """The member after one reconciliation step towards ``target`` at ``target_epoch``, each partition it keeps
    with the epoch it was first assigned at and each new one with the new member epoch (KIP-1251). A stable
    member whose subscription changed (``subscription_changed``; ``target`` holds only its subscribed topics)
    gives up the partitions of the topics it left at its epoch, as Kafka's updateCurrentAssignment."""
    updated = _next(member, target_epoch, target, partition_epoch, owned, subscription_changed)
    if updated is member:
        return member
    return replace(updated, assignment_epochs={
        (topic_id, p): (member.assignment_epochs.get((topic_id, p), member.member_epoch)
                        if p in member.assigned_partitions.get(topic_id, ()) else updated.member_epoch)
        for topic_id, parts in updated.assigned_partitions.items() for p in parts})


def _next(member: ConsumerGroupMember, target_epoch: int, target: Mapping[UUID, frozenset[int]],
          partition_epoch: PartitionEpoch, owned: Owned, subscription_changed: bool) -> ConsumerGroupMember:
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch or subscription_changed:
            return _compute(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        return _compute(member, member.member_epoch + 1, target_epoch, target, partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _compute(member, member.member_epoch, target_epoch, target, partition_epoch, owned)
    # UNKNOWN: written by a newer broker; start over from nothing.
    if owned is None or owned:
        raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH, "The consumer group member is in a unknown state. "
                       "The member must abandon all its partitions and rejoin.")
    return _compute(member, target_epoch, target_epoch, target, partition_epoch, owned)


def _compute(member: ConsumerGroupMember, member_epoch: int, target_epoch: int,
             target: Mapping[UUID, frozenset[int]], partition_epoch: PartitionEpoch,
             owned: Owned) -> ConsumerGroupMember:
    has_unreleased = False
    assigned: dict[UUID, frozenset[int]] = {}
    pending_revocation: dict[UUID, frozenset[int]] = {}
    pending_assignment: dict[UUID, frozenset[int]] = {}
    for topic_id in set(target) | set(member.assigned_partitions):
        want = target.get(topic_id, frozenset())
        have = member.assigned_partitions.get(topic_id, frozenset())
        keep = have & want
        revoke = have - keep
        add = want - keep
        free = frozenset(p for p in add if partition_epoch(topic_id, p) == -1)
        if free != add:
            has_unreleased = True
        if keep:
            assigned[topic_id] = keep
        if revoke:
            pending_revocation[topic_id] = revoke
        if free:
            pending_assignment[topic_id] = free

    if pending_revocation and _owns_any(owned, pending_revocation):
        # Give up partitions first, staying at the current epoch.
        return replace(member, state=MemberState.UNREVOKED_PARTITIONS, member_epoch=member_epoch,
                       previous_member_epoch=member.member_epoch, assigned_partitions=assigned,
                       partitions_pending_revocation=pending_revocation)
    for topic_id, parts in pending_assignment.items():
        assigned[topic_id] = assigned.get(topic_id, frozenset()) | parts
    new_state = MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE
    return replace(member, state=new_state, member_epoch=target_epoch, previous_member_epoch=member.member_epoch,
                   assigned_partitions=assigned, partitions_pending_revocation={})
