"""Streams groups (KIP-1071) as records of __consumer_offsets, at Kafka 4.4's group coordinator's versions.

Kafka 4.4 writes, all at value version 0 (flexible), keyed by group id (and member id):

- StreamsGroupMetadata (17): the group epoch, the metadata hash, the validated topology epoch, the last
  assignment configs and the topology-description epochs (tagged);
- StreamsGroupMemberMetadata (19): a member's instance, rack, client, rebalance timeout, topology epoch,
  process id, interactive-query endpoint and client tags;
- StreamsGroupTargetAssignmentMetadata (20): the target assignment epoch and when the assignor computed it;
- StreamsGroupTargetAssignmentMember (21): a member's target active, standby and warm-up tasks;
- StreamsGroupCurrentMemberAssignment (22): a member's epoch, previous epoch, state and tasks, with the tasks
  pending revocation;
- StreamsGroupTopology (23): the topology (sub-topologies with their source, repartition and changelog topics);

and pykbroker's own StreamsTopologyDescription (1331): the topology description a member pushed
(KIP-1331) with its topology epoch, the built-in store of ``group.streams.topology.description.store.enable``.

A task set is ``{subtopology id: partitions}``; records list sub-topologies sorted, without empty ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from coordinator.group.records import CoordinatorRecord
from wire.messages import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMemberMetadataValue,
    StreamsGroupMetadataKey,
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
    StreamsTopologyDescriptionKey,
    StreamsTopologyDescriptionValue,
)
from wire.messages import streams_group_current_member_assignment_value as _current
from wire.messages import streams_group_metadata_value as _metadata
from wire.messages import streams_group_target_assignment_member_value as _target

__all__ = ["GroupMetadata", "Tasks", "TasksTuple", "EMPTY_TASKS", "tasks_of", "epoch_record", "epoch_tombstone",
           "topology_record",
           "topology_tombstone", "member_metadata_record", "member_metadata_tombstone", "target_assignment_record",
           "target_assignment_tombstone", "target_assignment_epoch_record", "target_assignment_epoch_tombstone",
           "current_assignment_record", "current_assignment_tombstone", "description_record", "description_tombstone"]

Tasks = tuple[tuple[str, tuple[int, ...]], ...]


def canonical(tasks: Mapping[str, Iterable[int]]) -> Tasks:
    """A task set as sorted tuples, without empty sub-topologies (what records hold and states compare)."""
    return tuple((s, tuple(sorted(set(p)))) for s, p in sorted(tasks.items()) if p)


@dataclass(frozen=True, slots=True)
class TasksTuple:
    """Kafka's TasksTuple: a member's active, standby and warm-up tasks."""

    active: Tasks = ()
    standby: Tasks = ()
    warmup: Tasks = ()

    @classmethod
    def of(cls, active: Mapping[str, Iterable[int]] | None = None, standby: Mapping[str, Iterable[int]] | None = None,
           warmup: Mapping[str, Iterable[int]] | None = None) -> TasksTuple:
        return cls(canonical(active or {}), canonical(standby or {}), canonical(warmup or {}))

    def is_empty(self) -> bool:
        return not (self.active or self.standby or self.warmup)


EMPTY_TASKS = TasksTuple()


def tasks_of(task_ids) -> Tasks:
    """A record's ``[{subtopology_id, partitions}]`` -> canonical task set."""
    out: dict[str, set[int]] = {}
    for t in task_ids:
        out.setdefault(t.subtopology_id, set()).update(t.partitions)
    return canonical(out)


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    """The fields of StreamsGroupMetadataValue."""

    epoch: int
    metadata_hash: int
    validated_topology_epoch: int = -1
    last_assignment_configs: tuple[tuple[str, str], ...] = ()
    stored_description_topology_epoch: int = -1
    failed_description_topology_epoch: int = -1


def epoch_record(group_id: str, m: GroupMetadata) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupMetadataKey(group_id=group_id), StreamsGroupMetadataValue(
        epoch=m.epoch, metadata_hash=m.metadata_hash, validated_topology_epoch=m.validated_topology_epoch,
        last_assignment_configs=[_metadata.LastAssignmentConfig(key=k, value=v)
                                 for k, v in sorted(m.last_assignment_configs)],
        stored_description_topology_epoch=m.stored_description_topology_epoch,
        failed_description_topology_epoch=m.failed_description_topology_epoch), 0)


def epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupMetadataKey(group_id=group_id), None)


def topology_record(group_id: str, topology: StreamsGroupTopologyValue) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupTopologyKey(group_id=group_id), topology, 0)


def topology_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupTopologyKey(group_id=group_id), None)


def member_metadata_record(group_id: str, member_id: str, value: StreamsGroupMemberMetadataValue) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupMemberMetadataKey(group_id=group_id, member_id=member_id), value, 0)


def member_metadata_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def _target_ids(tasks: Tasks) -> list[_target.TaskIds]:
    return [_target.TaskIds(subtopology_id=s, partitions=list(p)) for s, p in tasks]


def target_assignment_record(group_id: str, member_id: str, tasks: TasksTuple) -> CoordinatorRecord:
    return CoordinatorRecord(
        StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        StreamsGroupTargetAssignmentMemberValue(active_tasks=_target_ids(tasks.active),
                                                standby_tasks=_target_ids(tasks.standby),
                                                warmup_tasks=_target_ids(tasks.warmup)), 0)


def target_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def target_assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> CoordinatorRecord:
    """``timestamp_ms``: when the assignor computed it (0 when no assignor ran: the group became empty)."""
    return CoordinatorRecord(StreamsGroupTargetAssignmentMetadataKey(group_id=group_id),
                             StreamsGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                                       assignment_timestamp=timestamp_ms), 0)


def target_assignment_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupTargetAssignmentMetadataKey(group_id=group_id), None)


def _current_ids(tasks: Tasks, epochs: Mapping[tuple[str, int], int] | None = None) -> list[_current.TaskIds]:
    return [_current.TaskIds(subtopology_id=s, partitions=list(p),
                             assignment_epochs=None if epochs is None else [epochs.get((s, q), -1) for q in p])
            for s, p in tasks]


def current_assignment_record(group_id: str, member_id: str, member_epoch: int, previous_member_epoch: int,
                              state: int, assigned: TasksTuple, pending_revocation: TasksTuple,
                              active_epochs: Mapping[tuple[str, int], int] | None = None) -> CoordinatorRecord:
    """``active_epochs``: the epoch each active task was assigned at (fences zombie commits), None to leave out."""
    return CoordinatorRecord(
        StreamsGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
        StreamsGroupCurrentMemberAssignmentValue(
            member_epoch=member_epoch, previous_member_epoch=previous_member_epoch, state=state,
            active_tasks=_current_ids(assigned.active, active_epochs),
            standby_tasks=_current_ids(assigned.standby), warmup_tasks=_current_ids(assigned.warmup),
            active_tasks_pending_revocation=_current_ids(pending_revocation.active),
            standby_tasks_pending_revocation=_current_ids(pending_revocation.standby),
            warmup_tasks_pending_revocation=_current_ids(pending_revocation.warmup)), 0)


def current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def description_record(group_id: str, value: StreamsTopologyDescriptionValue) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsTopologyDescriptionKey(group_id=group_id), value, 0)


def description_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(StreamsTopologyDescriptionKey(group_id=group_id), None)
