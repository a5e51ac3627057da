"""Committed offsets of the groups of one __consumer_offsets partition (Kafka's OffsetMetadataManager).

State: group -> topic -> partition -> ``OffsetAndMetadata``, changed only by replaying OffsetCommit
records (type 1, or legacy type 0). An offset committed to a group that does not exist creates a
"simple" classic group (empty, no protocol type), as Kafka does; it is what standalone consumers
using ``assign()`` commit to.
"""

from __future__ import annotations

import logging
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING

from coordinator.group import records as rec
from coordinator.group.classic_group import ClassicGroup, ClassicGroupState
from coordinator.group.consumer_group import ConsumerGroup
from coordinator.group.records import OffsetAndMetadata
from coordinator.group.request_info import RequestInfo
from coordinator.group.streams_group import StreamsGroups
from coordinator.runtime.errors import ApiError
from coordinator.runtime.result import CoordinatorResult
from wire import ErrorCode
from wire.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from wire.messages import offset_commit_response as ocr
from wire.messages import offset_delete_response as odr
from wire.messages import offset_fetch_response as ofr
from wire.messages import txn_offset_commit_response as tocr

if TYPE_CHECKING:
    from coordinator.group.group_metadata_manager import GroupMetadataManager

__all__ = ["OffsetMetadataManager", "FetchTopic"]

log = logging.getLogger("pykbroker.coordinator.group")

S = ClassicGroupState
INVALID_OFFSET = -1
# OffsetCommit v2-v4 retention_time_ms meaning "use the broker's offsets.retention.minutes".
DEFAULT_RETENTION_TIME = -1
# OffsetCommit v9+ is the first version members of consumer groups may use.
CONSUMER_PROTOCOL_MIN_COMMIT_VERSION = 9

# (topic name, partition indexes) of an OffsetFetch group; None for all committed topics.
FetchTopic = tuple[str, list[int]]



def _unknown_first(parts: list) -> list:
    """Partitions of a commit answer, the unknown ones first: Kafka's broker answers those before it hands the
    rest to the group coordinator, whose answers are appended to the same topic."""
    return sorted(parts, key=lambda p: p.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)

class OffsetMetadataManager:
    def __init__(self, groups: GroupMetadataManager, streams: StreamsGroups | None = None) -> None:
        self.groups = groups
        # The shard's streams groups (KIP-1071): their members commit with their member epoch.
        self.streams = streams or StreamsGroups()
        self.offsets: dict[str, dict[str, dict[int, OffsetAndMetadata]]] = {}
        # Offsets committed inside open transactions: producer id -> group -> topic -> partition.
        self.pending: dict[int, dict[str, dict[str, dict[int, OffsetAndMetadata]]]] = {}

    @property
    def config(self):
        return self.groups.config

    # -- queries ----------------------------------------------------------------------------------------
    def offset(self, group_id: str, topic: str, partition: int) -> OffsetAndMetadata | None:
        return self.offsets.get(group_id, {}).get(topic, {}).get(partition)

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.offsets.get(group_id))

    def has_pending_offset(self, group_id: str, topic: str, partition: int) -> bool:
        return any(partition in by_group.get(group_id, {}).get(topic, {}) for by_group in self.pending.values())

    # -- TxnOffsetCommit --------------------------------------------------------------------------------
    def _validate_txn_commit(self, info: RequestInfo, request: TxnOffsetCommitRequest):
        """Kafka's validateTransactionalOffsetCommit: member and generation when the request names them."""
        group = self.groups.groups.get(request.group_id)
        generation = request.generation_id_or_member_epoch if info.api_version >= 3 else -1
        member_id = request.member_id if info.api_version >= 3 else ""
        instance_id = request.group_instance_id if info.api_version >= 3 else None
        streams = self.streams.groups.get(request.group_id) if group is None else None
        if streams is not None:
            if generation < 0 and not member_id:
                return None
            streams_member = streams.members.get(member_id)
            if streams_member is None:
                raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation != streams_member.member_epoch:
                raise ApiError(ErrorCode.ILLEGAL_GENERATION)
            return None
        if group is None:
            if generation < 0:
                return self.groups.get_or_create_classic_group(request.group_id, True)
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        if isinstance(group, ClassicGroup):
            if group.state is S.DEAD:
                raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            if generation < 0 and not member_id and instance_id is None:
                return group  # producers before KIP-447 (v0-2) carry no member information
            group.validate_member(member_id, instance_id)
            if generation != group.generation_id:
                raise ApiError(ErrorCode.ILLEGAL_GENERATION)
            return group
        if generation < 0 and not member_id:
            return group
        member = group.members.get(member_id)
        if member is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != member.member_epoch:
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        return group

    def _partition_error(self, topic: str, p, unknown_partitions: AbstractSet[tuple[str, int]]) -> int:
        """The error of one committed partition (OffsetCommit and TxnOffsetCommit alike), NONE when valid."""
        if (topic, p.partition_index) in unknown_partitions:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if p.committed_metadata is not None and len(p.committed_metadata) > self.config.offset_metadata_max_bytes:
            return ErrorCode.OFFSET_METADATA_TOO_LARGE
        return ErrorCode.NONE

    def commit_transactional_offset(self, info: RequestInfo, request: TxnOffsetCommitRequest,
                                    unknown_partitions: AbstractSet[tuple[str, int]] = frozenset()) -> CoordinatorResult:
        """Offsets written in the producer's transaction; visible once the COMMIT marker is replayed."""
        self._validate_txn_commit(info, request)
        now = self.groups.clock.now_ms()
        records = []
        topics = []
        for topic in request.topics:
            parts = []
            for p in topic.partitions:
                code = self._partition_error(topic.name, p, unknown_partitions)
                if code == ErrorCode.NONE:
                    epoch = p.committed_leader_epoch if info.api_version >= 2 else -1
                    om = OffsetAndMetadata(committed_offset=p.committed_offset,
                                           leader_epoch=None if epoch == -1 else epoch,
                                           metadata=p.committed_metadata or "", commit_timestamp_ms=now,
                                           expire_timestamp_ms=None)
                    records.append(rec.offset_commit_record(request.group_id, topic.name, p.partition_index, om))
                parts.append(tocr.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code))
            topics.append(tocr.TxnOffsetCommitResponseTopic(name=topic.name, partitions=_unknown_first(parts)))
        return CoordinatorResult(records, TxnOffsetCommitResponse(topics=topics), producer_id=request.producer_id,
                                 producer_epoch=request.producer_epoch)

    # -- OffsetCommit -----------------------------------------------------------------------------------
    def _streams_member_check(self, group_id: str, member_id: str | None, member_epoch: int, commit: bool) -> bool:
        """A streams group's commit or fetch: the member and its epoch, as for a consumer group; False when
        ``group_id`` is no streams group. Without member and epoch a commit needs an empty group (an admin)."""
        group = self.streams.groups.get(group_id)
        if group is None:
            return False
        if member_epoch < 0 and (not group.members if commit else member_id is None):
            return True
        member = group.members.get(member_id or "")
        if member is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if member_epoch != member.member_epoch:
            raise ApiError(ErrorCode.STALE_MEMBER_EPOCH)
        return True

    def _validate_commit(self, info: RequestInfo, request: OffsetCommitRequest):
        group = self.groups.groups.get(request.group_id)
        generation = request.generation_id_or_member_epoch
        if group is None and self._streams_member_check(request.group_id, request.member_id, generation, True):
            return None
        if group is None:
            if generation < 0:
                # A simple consumer (assign()) or an admin client: the group is created on the fly.
                log.info("creating simple group %s through a manual offset commit", request.group_id)
                return self.groups.get_or_create_classic_group(request.group_id, True)
            if info.api_version >= CONSUMER_PROTOCOL_MIN_COMMIT_VERSION:
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} not found.")
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        member_id, instance_id = request.member_id, request.group_instance_id
        if isinstance(group, ClassicGroup):
            if group.state is S.DEAD:
                raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            if generation < 0 and group.state is S.EMPTY:
                return group
            if generation >= 0 or member_id or instance_id is not None:
                group.validate_member(member_id, instance_id)
                if generation != group.generation_id:
                    raise ApiError(ErrorCode.ILLEGAL_GENERATION)
            elif group.state is not S.EMPTY:
                # Without member id and generation, commits are only accepted while the group is empty.
                raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
            if group.state is S.COMPLETING_REBALANCE:
                raise ApiError(ErrorCode.REBALANCE_IN_PROGRESS)
            return group
        if generation < 0 and not group.members:
            return group
        member = group.member(member_id)
        if not member.uses_classic_protocol and info.api_version < CONSUMER_PROTOCOL_MIN_COMMIT_VERSION:
            raise ApiError(ErrorCode.UNSUPPORTED_VERSION,
                           "OffsetCommit version 9 or above must be used by members using the modern group protocol")
        if generation != member.member_epoch:
            if member.uses_classic_protocol:
                raise ApiError(ErrorCode.ILLEGAL_GENERATION)
            if generation > member.member_epoch or generation < 0:
                raise ApiError(ErrorCode.STALE_MEMBER_EPOCH)
            return group, member  # an older epoch: judged partition by partition (KIP-1251)
        return group

    def _stale_partitions(self, member, epoch: int, topics) -> set[tuple[str, int]]:
        """KIP-1251: the partitions of a commit made with ``epoch``, older than the member's, that were not
        assigned to the member at or before that epoch; with any, the commit is STALE_MEMBER_EPOCH."""
        stale = set()
        for topic in topics:
            info = self.groups.topics.by_name(topic.name)
            for p in topic.partitions:
                assigned_at = None if info is None else member.assignment_epoch(info.topic_id, p.partition_index)
                if assigned_at is None or assigned_at > epoch:
                    stale.add((topic.name, p.partition_index))
        return stale

    def commit_offset(self, info: RequestInfo, request: OffsetCommitRequest,
                      unknown_partitions: AbstractSet[tuple[str, int]] = frozenset()) -> CoordinatorResult:
        """``unknown_partitions``: (topic, partition) the caller found missing from the cluster."""
        group = self._validate_commit(info, request)
        if isinstance(group, tuple):  # committed with an older member epoch
            group, member = group
            stale = self._stale_partitions(member, request.generation_id_or_member_epoch, request.topics)
            if stale - set(unknown_partitions):  # Kafka 4.4 refuses the whole commit then
                raise ApiError(ErrorCode.STALE_MEMBER_EPOCH)
        if isinstance(group, ClassicGroup) and group.state in (S.STABLE, S.PREPARING_REBALANCE):
            member = group.members.get(request.member_id)
            if member is not None:
                # Commits keep a classic member's session alive.
                self.groups.classic.reschedule_classic_heartbeat(group, member)
        now = self.groups.clock.now_ms()
        retention = request.retention_time_ms if 2 <= info.api_version <= 4 else DEFAULT_RETENTION_TIME
        expire = None if retention == DEFAULT_RETENTION_TIME else now + retention
        records = []
        topics = []
        for topic in request.topics:
            parts = []
            for p in topic.partitions:
                code = self._partition_error(topic.name, p, unknown_partitions)
                if code == ErrorCode.NONE:
                    om = OffsetAndMetadata(
                        committed_offset=p.committed_offset,
                        leader_epoch=None if p.committed_leader_epoch == -1 else p.committed_leader_epoch,
                        metadata=p.committed_metadata or "", commit_timestamp_ms=now, expire_timestamp_ms=expire)
                    records.append(rec.offset_commit_record(request.group_id, topic.name, p.partition_index, om))
                parts.append(ocr.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code))
            topics.append(ocr.OffsetCommitResponseTopic(name=topic.name, partitions=_unknown_first(parts)))
        return CoordinatorResult(records, OffsetCommitResponse(topics=topics))

    # -- OffsetFetch ------------------------------------------------------------------------------------
    def _validate_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> bool:
        """False when the group does not exist (every offset is then unknown); raises on member errors."""
        group = self.groups.groups.get(group_id)
        if group is None:
            return self._streams_member_check(group_id, member_id, member_epoch, False)
        if isinstance(group, ClassicGroup):
            return group.state is not S.DEAD
        if member_id is None and member_epoch < 0:
            return True
        member = group.members.get(member_id or "")
        if member is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if member_epoch != member.member_epoch:
            if member.uses_classic_protocol:
                raise ApiError(ErrorCode.ILLEGAL_GENERATION)
            raise ApiError(ErrorCode.STALE_MEMBER_EPOCH)
        return True

    def fetch_offsets(self, group_id: str, topics: list[FetchTopic] | None, member_id: str | None = None,
                      member_epoch: int = -1, require_stable: bool = False) -> list[ofr.OffsetFetchResponseTopics]:
        """The committed offsets of ``topics`` (all committed ones when None), as OffsetFetch v8+ topics.

        ``require_stable``: a partition with an offset pending in an open transaction answers
        UNSTABLE_OFFSET_COMMIT (the client retries until the transaction ends).
        """
        exists = self._validate_fetch(group_id, member_id, member_epoch)
        committed = self.offsets.get(group_id, {}) if exists else {}

        def fetched(topic: str, partition: int, om: OffsetAndMetadata | None) -> ofr.OffsetFetchResponsePartitions:
            if require_stable and self.has_pending_offset(group_id, topic, partition):
                return self._fetched(partition, None, ErrorCode.UNSTABLE_OFFSET_COMMIT)
            return self._fetched(partition, om)

        out = []
        if topics is None:
            for topic, partitions in committed.items():
                out.append(ofr.OffsetFetchResponseTopics(name=topic, partitions=[
                    fetched(topic, p, om) for p, om in sorted(partitions.items())]))
            return out
        for name, indexes in topics:
            partitions = committed.get(name, {})
            out.append(ofr.OffsetFetchResponseTopics(name=name, partitions=[
                fetched(name, p, partitions.get(p)) for p in indexes]))
        return out

    @staticmethod
    def _fetched(partition: int, om: OffsetAndMetadata | None,
                 error_code: int = ErrorCode.NONE) -> ofr.OffsetFetchResponsePartitions:
        if om is None:
            return ofr.OffsetFetchResponsePartitions(partition_index=partition, committed_offset=INVALID_OFFSET,
                                                     committed_leader_epoch=-1, metadata="",
                                                     error_code=error_code)
        return ofr.OffsetFetchResponsePartitions(
            partition_index=partition, committed_offset=om.committed_offset,
            committed_leader_epoch=-1 if om.leader_epoch is None else om.leader_epoch, metadata=om.metadata,
            error_code=ErrorCode.NONE)

    # -- OffsetDelete -----------------------------------------------------------------------------------
    def delete_offsets(self, request: OffsetDeleteRequest,
                       unknown_partitions: AbstractSet[tuple[str, int]] = frozenset()) -> CoordinatorResult:
        group = self.streams.groups.get(request.group_id) or self.groups.group(request.group_id)
        if isinstance(group, ClassicGroup):
            if group.state is S.DEAD:
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {request.group_id} is in dead state.")
            if group.state in (S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE) \
                    and not group.uses_consumer_protocol():
                raise ApiError(ErrorCode.NON_EMPTY_GROUP)
        records = []
        topics = []
        for topic in request.topics:
            subscribed = group.is_subscribed_to_topic(topic.name)
            parts = []
            for p in topic.partitions:
                if (topic.name, p.partition_index) in unknown_partitions:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif subscribed:
                    code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    code = ErrorCode.NONE
                    if self.offset(request.group_id, topic.name, p.partition_index) is not None:
                        records.append(rec.offset_commit_tombstone(request.group_id, topic.name, p.partition_index))
                parts.append(odr.OffsetDeleteResponsePartition(partition_index=p.partition_index, error_code=code))
            topics.append(odr.OffsetDeleteResponseTopic(name=topic.name, partitions=parts))
        return CoordinatorResult(records, OffsetDeleteResponse(error_code=ErrorCode.NONE, topics=topics))

    def delete_all_offsets(self, group_id: str, records: list[rec.CoordinatorRecord]) -> int:
        n = 0
        for topic, partitions in self.offsets.get(group_id, {}).items():
            for p in sorted(partitions):
                records.append(rec.offset_commit_tombstone(group_id, topic, p))
                n += 1
        return n

    def on_partitions_deleted(self, topic_partitions: set[tuple[str, int]]) -> list[rec.CoordinatorRecord]:
        """Tombstones for every committed offset of deleted partitions (Kafka's onPartitionsDeleted)."""
        records = []
        for group_id, by_topic in self.offsets.items():
            for topic, partitions in by_topic.items():
                for p in sorted(partitions):
                    if (topic, p) in topic_partitions:
                        records.append(rec.offset_commit_tombstone(group_id, topic, p))
        return records

    # -- expiry -----------------------------------------------------------------------------------------
    @staticmethod
    def _commit_timestamp(om: OffsetAndMetadata) -> int:
        return om.commit_timestamp_ms

    def _expiration_base(self, group):
        """Kafka's offsetExpirationCondition: which timestamp an offset's retention counts from, or None."""
        if isinstance(group, ConsumerGroup):
            return lambda om: om.commit_timestamp_ms
        if group.protocol_type is None:
            return lambda om: om.commit_timestamp_ms
        if group.state is S.EMPTY:
            ts = group.current_state_timestamp
            return lambda om: ts if ts is not None else om.commit_timestamp_ms
        if group.uses_consumer_protocol() and group.subscribed_topics is not None and group.state is S.STABLE:
            return lambda om: om.commit_timestamp_ms
        return None

    def cleanup_expired_offsets(self, group_id: str, records: list[rec.CoordinatorRecord]) -> bool:
        """Tombstone expired offsets of ``group_id``; True if none are left."""
        by_topic = self.offsets.get(group_id)
        if not by_topic:
            return True
        group = self.groups.groups.get(group_id)
        streams = self.streams.groups.get(group_id) if group is None else None
        if group is None and streams is None:
            return False
        if streams is not None:  # Kafka's StreamsGroup: from the commit, but not the topics it reads while live
            base = self._commit_timestamp
            subscribed = streams.is_subscribed_to_topic
        else:
            assert group is not None
            base = self._expiration_base(group)
            subscribed = group.is_subscribed_to_topic
        if base is None:
            return False
        now = self.groups.clock.now_ms()
        retention = self.config.offsets_retention_ms
        all_expired = True
        for topic, partitions in by_topic.items():
            if subscribed(topic):
                all_expired = False
                continue
            for p, om in sorted(partitions.items()):
                expired = (now >= om.expire_timestamp_ms if om.expire_timestamp_ms is not None
                           else now - base(om) >= retention)
                if expired:
                    records.append(rec.offset_commit_tombstone(group_id, topic, p))
                else:
                    all_expired = False
        return all_expired

    # -- replay -----------------------------------------------------------------------------------------
    def replay(self, record_offset: int, record: rec.CoordinatorRecord, producer_id: int = -1) -> None:
        key, value = record.key, record.value
        if producer_id >= 0:
            if value is not None:
                if key.group not in self.groups.groups and key.group not in self.streams.groups:
                    self.groups.get_or_create_classic_group(key.group, True)
                self.pending.setdefault(producer_id, {}).setdefault(key.group, {}).setdefault(key.topic, {})[
                    key.partition] = OffsetAndMetadata.from_record(record_offset, value)
            return
        if value is not None:
            if key.group not in self.groups.groups and key.group not in self.streams.groups:
                self.groups.get_or_create_classic_group(key.group, True)
            self.offsets.setdefault(key.group, {}).setdefault(key.topic, {})[key.partition] = \
                OffsetAndMetadata.from_record(record_offset, value)
            return
        by_topic = self.offsets.get(key.group)
        if by_topic is None:
            return
        partitions = by_topic.get(key.topic)
        if partitions is None:
            return
        partitions.pop(key.partition, None)
        if not partitions:
            del by_topic[key.topic]
        if not by_topic:
            del self.offsets[key.group]

    def replay_end_transaction(self, producer_id: int, commit: bool) -> None:
        """A COMMIT marker makes the producer's pending offsets committed (unless a later commit won)."""
        pending = self.pending.pop(producer_id, None)
        if not pending or not commit:
            return
        for group_id, by_topic in pending.items():
            for topic, partitions in by_topic.items():
                committed = self.offsets.setdefault(group_id, {}).setdefault(topic, {})
                for partition, om in partitions.items():
                    existing = committed.get(partition)
                    if existing is None or existing.record_offset < om.record_offset:
                        committed[partition] = om

    def snapshot(self) -> dict:
        """Offsets without record offsets (those differ between a live shard and a replayed one)."""
        return {g: {t: {p: (om.committed_offset, om.leader_epoch, om.metadata, om.commit_timestamp_ms,
                            om.expire_timestamp_ms) for p, om in sorted(parts.items())}
                    for t, parts in sorted(topics.items())}
                for g, topics in sorted(self.offsets.items())}
