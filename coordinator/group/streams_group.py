"""A streams group's record-backed state (KIP-1071) and its replay (Kafka 4.4's StreamsGroup and the streams
part of GroupMetadataManager.replay).

``StreamsGroups`` holds a shard's streams groups; ``replay`` applies one record of types 17, 19-23 and 1331 (see
``streams_group_records``) and is the only way this record-backed state changes; a log written by Kafka 4.4
loads into it. A group also keeps, as Kafka's StreamsGroup does in memory only, the epoch of its endpoint
information (for interactive queries), the member that asked the application to shut down and the task offsets
its members report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.group import records as rec
from coordinator.group import streams_group_records as srec
from wire.java import timeline_order, timeline_table_size
from wire.messages import (
    StreamsGroupMemberMetadataValue,
    StreamsGroupTopologyValue,
    StreamsTopologyDescriptionValue,
)

__all__ = ["StreamsGroup", "StreamsGroupMember", "StreamsGroups"]


@dataclass(slots=True)
class StreamsGroupMember:
    """A member as its records hold it: metadata (type 19) and current assignment (type 22)."""

    member_id: str
    metadata: StreamsGroupMemberMetadataValue | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = 1  # Kafka's streams MemberState.STABLE
    assigned: srec.TasksTuple = srec.EMPTY_TASKS
    pending_revocation: srec.TasksTuple = srec.EMPTY_TASKS
    active_epochs: dict[tuple[str, int], int] = field(default_factory=dict)

    def view(self) -> tuple:
        return (self.member_id, self.metadata, self.member_epoch, self.previous_member_epoch, self.state,
                self.assigned, self.pending_revocation, sorted(self.active_epochs.items()))


@dataclass(slots=True)
class StreamsGroup:
    """As Kafka 4.4's StreamsGroup, a new group starts at group epoch 1 with its (empty) target at epoch 1."""

    group_id: str
    metadata: srec.GroupMetadata = srec.GroupMetadata(1, 0)
    topology: StreamsGroupTopologyValue | None = None
    # the topology description pushed to the built-in store (pykbroker's record 1331), with its topology epoch
    description: StreamsTopologyDescriptionValue | None = None
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, srec.TasksTuple] = field(default_factory=dict)
    target_assignment_epoch: int = 1
    last_assignment_ms: int = 0  # when the assignor last ran (the target's assignment timestamp)
    endpoint_information_epoch: int = 0  # in memory only, as Kafka's
    shutdown_request_member_id: str | None = None  # in memory only, as Kafka's
    # Each member's last reported changelog offsets and end offsets by task (Kafka's MemberTaskOffsets, in memory).
    task_offsets: dict[str, tuple[dict[tuple[str, int], int], dict[tuple[str, int], int]]] = field(
        default_factory=dict)
    members_table: int = 2  # the slots of Kafka's TimelineHashMap of members: grown by the most ever held (in memory)

    def static_member(self, instance_id: str) -> StreamsGroupMember | None:
        """The member holding ``instance_id`` (a static member), if any."""
        return next((m for m in self.members.values()
                     if m.metadata is not None and m.metadata.instance_id == instance_id), None)

    @property
    def group_epoch(self) -> int:
        return self.metadata.epoch

    def member(self, member_id: str) -> StreamsGroupMember:
        m = self.members.get(member_id)
        if m is None:
            self.members_table = timeline_table_size(len(self.members) + 1, self.members_table)
            m = self.members[member_id] = StreamsGroupMember(member_id)
        return m

    def member_order(self) -> list[str]:
        """The member ids in the order Kafka's TimelineHashMap of members iterates them (its assignor breaks
        ties by it)."""
        return timeline_order(self.members, self.members_table)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """Whether live members read ``topic`` (a source or repartition source topic of the topology): its
        offsets neither expire nor may be deleted."""
        return bool(self.members) and any(
            topic in s.source_topics or any(t.name == topic for t in s.repartition_source_topics)
            for s in (self.topology.subtopologies if self.topology else ()))

    def tombstone_records(self) -> list[rec.CoordinatorRecord]:
        """The records deleting the group, in Kafka's order (createGroupTombstoneRecords)."""
        g = self.group_id
        out = [srec.current_assignment_tombstone(g, m) for m in self.members]
        out += [srec.target_assignment_tombstone(g, m) for m in self.members]
        out.append(srec.target_assignment_epoch_tombstone(g))
        out += [srec.member_metadata_tombstone(g, m) for m in self.members]
        if self.description is not None:
            out.append(srec.description_tombstone(g))
        out += [srec.epoch_tombstone(g), srec.topology_tombstone(g)]
        return out

    def view(self) -> dict:
        """The record-backed state, comparable between a live shard and a replayed one."""
        return {"type": "streams", "metadata": self.metadata, "topology": self.topology,
                "description": self.description,
                "members": {mid: m.view() for mid, m in sorted(self.members.items())},
                "target_assignment": dict(sorted(self.target_assignment.items())),
                "target_assignment_epoch": self.target_assignment_epoch}


def _active_epochs(task_ids) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for t in task_ids:
        for i, p in enumerate(t.partitions):
            if t.assignment_epochs is not None and i < len(t.assignment_epochs):
                out[(t.subtopology_id, p)] = t.assignment_epochs[i]
    return out


class StreamsGroups:
    """A shard's streams groups, built by replay only."""

    def __init__(self, on_create: Callable[[str], None] | None = None) -> None:
        """``on_create(group_id)``: a streams group was created by replay (the shard drops a simple classic
        group of that id, made by offset commits alone, as Kafka replaces it)."""
        self.groups: dict[str, StreamsGroup] = {}
        self._on_create = on_create

    def _group(self, group_id: str, create: bool) -> StreamsGroup | None:
        g = self.groups.get(group_id)
        if g is None and create:
            g = self.groups[group_id] = StreamsGroup(group_id)
            if self._on_create is not None:
                self._on_create(group_id)
        return g

    def replay(self, record: rec.CoordinatorRecord) -> None:
        """Apply one streams-group record (types 17, 19-23, 1331); a tombstone for an unknown group is a no-op."""
        t, key, value = record.record_type, record.key, record.value
        g = self._group(key.group_id, value is not None)
        if g is None:
            return
        if t == rec.RecordType.STREAMS_GROUP_METADATA:
            if value is None:
                del self.groups[key.group_id]
                return
            g.metadata = srec.GroupMetadata(
                value.epoch, value.metadata_hash, value.validated_topology_epoch,
                tuple(sorted((c.key, c.value) for c in value.last_assignment_configs or ())),
                value.stored_description_topology_epoch, value.failed_description_topology_epoch)
        elif t == rec.RecordType.STREAMS_GROUP_TOPOLOGY:
            g.topology = value
        elif t == rec.RecordType.PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION:
            g.description = value
        elif t == rec.RecordType.STREAMS_GROUP_MEMBER_METADATA:
            if value is None:
                g.members.pop(key.member_id, None)
                g.task_offsets.pop(key.member_id, None)
            else:
                g.member(key.member_id).metadata = value
        elif t == rec.RecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                g.target_assignment.pop(key.member_id, None)
            else:
                g.target_assignment[key.member_id] = srec.TasksTuple(
                    srec.tasks_of(value.active_tasks), srec.tasks_of(value.standby_tasks),
                    srec.tasks_of(value.warmup_tasks))
        elif t == rec.RecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA:
            g.target_assignment_epoch = -1 if value is None else value.assignment_epoch
            if value is not None and value.assignment_timestamp:
                g.last_assignment_ms = value.assignment_timestamp
        elif t == rec.RecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            if value is None:
                m = g.members.get(key.member_id)
                if m is not None:  # Kafka resets the member's assignment; its metadata tombstone removes it
                    m.member_epoch, m.previous_member_epoch, m.state = 0, -1, 1
                    m.assigned = m.pending_revocation = srec.EMPTY_TASKS
                    m.active_epochs = {}
                return
            m = g.member(key.member_id)
            m.member_epoch, m.previous_member_epoch, m.state = (value.member_epoch, value.previous_member_epoch,
                                                                value.state)
            m.assigned = srec.TasksTuple(srec.tasks_of(value.active_tasks), srec.tasks_of(value.standby_tasks),
                                         srec.tasks_of(value.warmup_tasks))
            m.pending_revocation = srec.TasksTuple(srec.tasks_of(value.active_tasks_pending_revocation),
                                                   srec.tasks_of(value.standby_tasks_pending_revocation),
                                                   srec.tasks_of(value.warmup_tasks_pending_revocation))
            m.active_epochs = _active_epochs(value.active_tasks)

    def snapshot(self) -> dict:
        return {gid: g.view() for gid, g in sorted(self.groups.items())}
