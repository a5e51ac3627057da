"""The records of __consumer_offsets, byte-compatible with Apache Kafka 4.4.

On disk every record is a plain key/value record in a v2 record batch (no headers):

- key   = int16 record type + key struct encoded at version 0
- value = int16 value version + value struct encoded at that version, or null for a tombstone

The record type is the ``apiKey`` of the key's JSON definition (``wire/schemas/*Key.json``):

==== =========================================== ==============================================
type key / value                                 written by pykbroker
==== =========================================== ==============================================
0    OffsetCommitKey / OffsetCommitValue          never (legacy; read as type 1)
1    OffsetCommitKey / OffsetCommitValue          value v3 (v1 when an expire timestamp is set)
2    GroupMetadataKey / GroupMetadataValue        value v3 (classic groups)
3    ConsumerGroupMetadataKey / ...Value          v0: group epoch + metadata hash (tagged)
4    ConsumerGroupPartitionMetadataKey / ...      tombstones only (4.1 replaced it by the hash)
5    ConsumerGroupMemberMetadataKey / ...         v0: a member's subscription
6    ConsumerGroupTargetAssignmentMetadataKey     v0: the target assignment epoch
7    ConsumerGroupTargetAssignmentMemberKey       v0: a member's target assignment
8    ConsumerGroupCurrentMemberAssignmentKey      v0: a member's epochs, state and owned partitions
16   ConsumerGroupRegularExpressionKey            v0: the topics a subscription regex resolved to
10   ShareGroupMemberMetadataKey / ...Value       v0: a share member's subscription (Kafka 4.2)
11   ShareGroupMetadataKey / ...Value             v0: a share group's epoch + metadata hash
12   ShareGroupTargetAssignmentMetadataKey        v0: a share group's target assignment epoch
13   ShareGroupTargetAssignmentMemberKey          v0: a share member's target assignment
14   ShareGroupCurrentMemberAssignmentKey         v0: a share member's epochs, state and partitions
15   ShareGroupStatePartitionMetadataKey          v0: the partitions whose share state is initialized
17   StreamsGroupMetadataKey / ...Value           v0: a streams group's epoch, hash, validated topology epoch
19   StreamsGroupMemberMetadataKey / ...Value     v0: a streams member's process, topology epoch, endpoint, tags
20   StreamsGroupTargetAssignmentMetadataKey      v0: a streams group's target assignment epoch
21   StreamsGroupTargetAssignmentMemberKey        v0: a streams member's target active/standby/warm-up tasks
22   StreamsGroupCurrentMemberAssignmentKey       v0: a streams member's epochs, state and tasks (pending revocation)
23   StreamsGroupTopologyKey / ...Value           v0: a streams group's topology (sub-topologies, topics)
1331 StreamsTopologyDescriptionKey / ...Value v0: pykbroker's own: a pushed topology description (KIP-1331)
==== =========================================== ==============================================

The share-group records (10-15, built in ``coordinator.share.share_group_records``) are Kafka 4.2's; type 9
(ShareGroupPartitionMetadata, gone in 4.2) and 18 (StreamsGroupPartitionMetadata, gone in 4.1) are skipped at load
with a warning, as Kafka skips record types it does not know. The streams-group records (17, 19-23, KIP-1071, built in
``coordinator.group.streams_group_records``) are Kafka 4.4's. Type 1331 is pykbroker's built-in topology description
store (``group.streams.topology.description.store.enable``; Kafka keeps descriptions in a plugin instead): Kafka
skips it at load as a type it does not know. Kafka's own tools (``kafka-dump-log --offsets-decoder``,
``kafka-console-consumer`` with the group-metadata formatter) read these records as written here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any
from uuid import UUID

from coordinator.runtime.errors import UnknownRecordTypeError
from coordinator.runtime.records import CoordinatorRecord, decode_coordinator_record
from wire.messages import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
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
from wire.messages import consumer_group_current_member_assignment_value as _current
from wire.messages import consumer_group_target_assignment_member_value as _target

__all__ = ["CoordinatorRecord", "OffsetAndMetadata", "RecordType", "UnknownRecordTypeError", "decode_record",
           "GROUP_METADATA_VALUE_VERSION", "SHARE_GROUP_RECORD_TYPES", "STREAMS_GROUP_RECORD_TYPES"]

# Kafka 4.4 writes GroupMetadataValue v3 and OffsetCommitValue v3 (v1 with an expire timestamp): the
# highest non-flexible versions, so older brokers can still read the log after a downgrade.
GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP = 1

class RecordType(IntEnum):
    """The int16 prefix of a record key (the key definition's apiKey)."""

    LEGACY_OFFSET_COMMIT = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    STREAMS_GROUP_METADATA = 17
    STREAMS_GROUP_MEMBER_METADATA = 19
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
    STREAMS_GROUP_TOPOLOGY = 23
    PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION = 1331


SHARE_GROUP_RECORD_TYPES = frozenset(range(RecordType.SHARE_GROUP_MEMBER_METADATA,
                                           RecordType.SHARE_GROUP_STATE_PARTITION_METADATA + 1))
STREAMS_GROUP_RECORD_TYPES = frozenset({
    RecordType.STREAMS_GROUP_METADATA, RecordType.STREAMS_GROUP_MEMBER_METADATA,
    RecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA, RecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER,
    RecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT, RecordType.STREAMS_GROUP_TOPOLOGY,
    RecordType.PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION})


_CLASSES: dict[int, tuple[Any, Any]] = {
    RecordType.LEGACY_OFFSET_COMMIT: (OffsetCommitKey, OffsetCommitValue),
    RecordType.OFFSET_COMMIT: (OffsetCommitKey, OffsetCommitValue),
    RecordType.GROUP_METADATA: (GroupMetadataKey, GroupMetadataValue),
    RecordType.CONSUMER_GROUP_METADATA: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    RecordType.CONSUMER_GROUP_PARTITION_METADATA: (ConsumerGroupPartitionMetadataKey,
                                                   ConsumerGroupPartitionMetadataValue),
    RecordType.CONSUMER_GROUP_MEMBER_METADATA: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: (ConsumerGroupTargetAssignmentMetadataKey,
                                                           ConsumerGroupTargetAssignmentMetadataValue),
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: (ConsumerGroupTargetAssignmentMemberKey,
                                                         ConsumerGroupTargetAssignmentMemberValue),
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: (ConsumerGroupCurrentMemberAssignmentKey,
                                                          ConsumerGroupCurrentMemberAssignmentValue),
    RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION: (ConsumerGroupRegularExpressionKey,
                                                   ConsumerGroupRegularExpressionValue),
    RecordType.SHARE_GROUP_MEMBER_METADATA: (ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue),
    RecordType.SHARE_GROUP_METADATA: (ShareGroupMetadataKey, ShareGroupMetadataValue),
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA: (ShareGroupTargetAssignmentMetadataKey,
                                                        ShareGroupTargetAssignmentMetadataValue),
    RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER: (ShareGroupTargetAssignmentMemberKey,
                                                      ShareGroupTargetAssignmentMemberValue),
    RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT: (ShareGroupCurrentMemberAssignmentKey,
                                                       ShareGroupCurrentMemberAssignmentValue),
    RecordType.SHARE_GROUP_STATE_PARTITION_METADATA: (ShareGroupStatePartitionMetadataKey,
                                                      ShareGroupStatePartitionMetadataValue),
    RecordType.STREAMS_GROUP_METADATA: (StreamsGroupMetadataKey, StreamsGroupMetadataValue),
    RecordType.STREAMS_GROUP_MEMBER_METADATA: (StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue),
    RecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA: (StreamsGroupTargetAssignmentMetadataKey,
                                                          StreamsGroupTargetAssignmentMetadataValue),
    RecordType.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER: (StreamsGroupTargetAssignmentMemberKey,
                                                        StreamsGroupTargetAssignmentMemberValue),
    RecordType.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT: (StreamsGroupCurrentMemberAssignmentKey,
                                                         StreamsGroupCurrentMemberAssignmentValue),
    RecordType.STREAMS_GROUP_TOPOLOGY: (StreamsGroupTopologyKey, StreamsGroupTopologyValue),
    RecordType.PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION: (StreamsTopologyDescriptionKey,
                                                              StreamsTopologyDescriptionValue),
}


def decode_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """Parse a __consumer_offsets record; raises UnknownRecordTypeError or DecodeError."""
    return decode_coordinator_record(key, value, _CLASSES, "__consumer_offsets")


# -- offsets -----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset as stored: Kafka's OffsetAndMetadata (leader_epoch None = unknown)."""

    committed_offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None
    record_offset: int = -1

    @classmethod
    def from_record(cls, record_offset: int, value: OffsetCommitValue) -> OffsetAndMetadata:
        return cls(
            committed_offset=value.offset,
            leader_epoch=None if value.leader_epoch == -1 else value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
            expire_timestamp_ms=None if value.expire_timestamp == -1 else value.expire_timestamp,
            record_offset=record_offset,
        )


def offset_commit_record(group_id: str, topic: str, partition: int, om: OffsetAndMetadata) -> CoordinatorRecord:
    version = (OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRE_TIMESTAMP if om.expire_timestamp_ms is not None
               else OFFSET_COMMIT_VALUE_VERSION)
    return CoordinatorRecord(
        OffsetCommitKey(group=group_id, topic=topic, partition=partition),
        OffsetCommitValue(
            offset=om.committed_offset,
            leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch,
            metadata=om.metadata,
            commit_timestamp=om.commit_timestamp_ms,
            expire_timestamp=-1 if om.expire_timestamp_ms is None else om.expire_timestamp_ms,
        ),
        version,
    )


def offset_commit_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(OffsetCommitKey(group=group_id, topic=topic, partition=partition), None)


# -- classic groups -----------------------------------------------------------------------------------

def group_metadata_record(group_id: str, value: GroupMetadataValue) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group=group_id), value, GROUP_METADATA_VALUE_VERSION)


def group_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group=group_id), None)


# -- consumer groups (KIP-848) ---------------------------------------------------------------------------

def _sorted_partitions(assignment: Mapping[UUID, Iterable[int]]) -> list[tuple[UUID, list[int]]]:
    return [(topic_id, sorted(parts)) for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0]))
            if parts]


def consumer_group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMetadataKey(group_id=group_id),
                             ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=metadata_hash), 0)


def consumer_group_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMetadataKey(group_id=group_id), None)


def consumer_group_partition_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupPartitionMetadataKey(group_id=group_id), None)


def consumer_group_member_subscription_record(group_id: str, value: ConsumerGroupMemberMetadataValue,
                                              member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), value, 0)


def consumer_group_member_subscription_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def consumer_group_target_assignment_record(group_id: str, member_id: str,
                                            assignment: Mapping[UUID, Iterable[int]]) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        ConsumerGroupTargetAssignmentMemberValue(topic_partitions=[
            _target.TopicPartition(topic_id=t, partitions=p) for t, p in _sorted_partitions(assignment)]),
        0,
    )


def consumer_group_target_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def consumer_group_target_assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> CoordinatorRecord:
    """The target assignment's epoch and when it was computed (0: never, or the group became empty)."""
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
                             ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                                        assignment_timestamp=timestamp_ms), 0)


def consumer_group_target_assignment_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), None)


def consumer_group_current_assignment_record(group_id: str, member_id: str, member_epoch: int,
                                             previous_member_epoch: int, state: int,
                                             assigned: Mapping[UUID, Iterable[int]],
                                             pending_revocation: Mapping[UUID, Iterable[int]],
                                             assignment_epochs: Mapping[tuple[UUID, int], int] | None = None,
                                             ) -> CoordinatorRecord:
    """``assignment_epochs``: (topic id, partition) -> the member epoch it was assigned at (KIP-1251), written
    for the assigned partitions (the member epoch for those without one)."""
    epochs = assignment_epochs or {}
    return CoordinatorRecord(
        ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=member_epoch,
            previous_member_epoch=previous_member_epoch,
            state=state,
            assigned_partitions=[_current.TopicPartitions(topic_id=t, partitions=p, assignment_epochs=[
                epochs.get((t, i), member_epoch) for i in p]) for t, p in _sorted_partitions(assigned)],
            partitions_pending_revocation=[_current.TopicPartitions(topic_id=t, partitions=p)
                                           for t, p in _sorted_partitions(pending_revocation)],
        ),
        0,
    )


def consumer_group_current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def consumer_group_regex_record(group_id: str, regex: str, topics: Iterable[str], version: int,
                                timestamp_ms: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
        ConsumerGroupRegularExpressionValue(topics=sorted(topics), version=version, timestamp=timestamp_ms),
        0,
    )


def consumer_group_regex_tombstone(group_id: str, regex: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), None)


def assignment_epochs_from_record(topic_partitions, member_epoch: int) -> dict[tuple[UUID, int], int]:
    """(topic id, partition) -> assignment epoch of a record's assigned partitions (KIP-1251); a record written
    before them (no epochs) gives each the member epoch."""
    out: dict[tuple[UUID, int], int] = {}
    for tp in topic_partitions:
        epochs = tp.assignment_epochs if len(tp.assignment_epochs) == len(tp.partitions) else None
        for i, p in enumerate(tp.partitions):
            out[(tp.topic_id, p)] = epochs[i] if epochs is not None else member_epoch
    return out


def assignment_from_record(topic_partitions) -> dict[UUID, frozenset[int]]:
    """``[{topic_id, partitions}]`` of a record value -> topic id -> partitions."""
    out: dict[UUID, frozenset[int]] = {}
    for tp in topic_partitions:
        if tp.partitions:
            out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return out
