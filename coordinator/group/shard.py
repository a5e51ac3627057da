"""One __consumer_offsets partition's coordinator state machine (Kafka's GroupCoordinatorShard).

The shard owns the groups and offsets whose group ids hash to its partition, share groups included
(``share``, whose records are types 10-15) and streams groups (``streams``, types 17 and 19-23; replay only
so far). Its operations run on the shard's task and return a ``CoordinatorResult``; ``replay`` applies one record and is the only
way record-backed state changes — at load (every record of the partition, in order) and after each
append. Operations never do I/O.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from coordinator.group import records as rec
from coordinator.group import streams_describe
from coordinator.group.classic_group import ClassicGroup, Responder
from coordinator.group.config import GroupCoordinatorConfig
from coordinator.group.group_config import GroupConfigs
from coordinator.group.group_metadata_manager import GroupMetadataManager
from coordinator.group.offsets import FetchTopic, OffsetMetadataManager
from coordinator.group.request_info import RequestInfo
from coordinator.group.streams_config import StreamsGroupConfigs
from coordinator.group.streams_group import StreamsGroups
from coordinator.group.streams_protocol import StreamsProtocol
from coordinator.group.streams_topology_description import TopologyDescriptions
from coordinator.group.topics import TopicsImage
from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.result import CoordinatorResult
from coordinator.runtime.timer import CoordinatorTimer
from coordinator.share.share_group import ShareGroupCoordinator
from wire import ErrorCode
from wire.messages import (
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupTopologyDescriptionUpdateRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from wire.messages.delete_groups_response import DeletableGroupResult

__all__ = ["GroupCoordinatorShard"]

log = logging.getLogger("pykbroker.coordinator.group")

GROUP_EXPIRATION_KEY = "expire-group-metadata"


class GroupCoordinatorShard:
    def __init__(self, partition: int, config: GroupCoordinatorConfig, clock: Clock, timer: CoordinatorTimer,
                 topics: TopicsImage, new_uuid: Callable[[], uuid.UUID] = uuid.uuid4,
                 group_configs: GroupConfigs | None = None) -> None:
        self.partition = partition
        self.config = config
        self.clock = clock
        self.timer = timer
        self.group_configs = group_configs
        self.groups = GroupMetadataManager(config, clock, timer, topics, new_uuid, group_configs)
        self.share = ShareGroupCoordinator(timer, topics, session_timeout_ms=config.share_group_session_timeout_ms,
                                           heartbeat_interval_ms=config.share_group_heartbeat_interval_ms,
                                           max_size=config.share_group_max_size,
                                           assignment_interval_ms=self._share_assignment_interval_ms,
                                           now_ms=clock.now_ms,
                                           initialize_retry_interval_ms=config.share_group_initialize_retry_interval_ms)
        self.streams = StreamsGroups(on_create=self._drop_simple_group)
        self.groups.groups.other_type = self.streams.groups.__contains__
        self.groups.groups.release_empty_other = self._release_empty_streams_group
        self.offsets = OffsetMetadataManager(self.groups, self.streams)
        self.streams_protocol = StreamsProtocol(self.streams, topics, timer, clock,
                                                StreamsGroupConfigs(config, group_configs),
                                                other_group=self._is_other_group,
                                                empty_classic_group=self._is_empty_classic_group)
        self.descriptions = TopologyDescriptions(self.streams, clock, config.streams_topology_description_store,
                                                 other_group=self.groups.groups.__contains__)

    def _share_assignment_interval_ms(self, group_id: str) -> int:
        """The group's share.assignment.interval.ms, else the broker's group.share.assignment.interval.ms."""
        if self.group_configs is None:
            return self.config.share_group_assignment_interval_ms
        return self.group_configs.get_int(group_id, "share.assignment.interval.ms")

    def _is_other_group(self, group_id: str) -> bool:
        """A classic or consumer group holds ``group_id`` (a simple group of offsets alone does not count)."""
        g = self.groups.groups.get(group_id)
        return g is not None and not (isinstance(g, ClassicGroup) and g.is_simple_group)

    def _is_empty_classic_group(self, group_id: str) -> bool:
        g = self.groups.groups.get(group_id)
        return isinstance(g, ClassicGroup) and g.is_empty

    def _release_empty_streams_group(self, group_id: str) -> list[rec.CoordinatorRecord] | None:
        """An empty streams group gives way to a classic JoinGroup (Kafka's maybeDeleteEmptyStreamsGroup): removed at
        once, its tombstones (its stored topology description's too) returned; None for a group with members."""
        group = self.streams.groups.get(group_id)
        if group is None or group.members:
            return None
        del self.streams.groups[group_id]
        self.descriptions.backoff.clear_group(group_id)
        log.info("[GroupId %s] Converted the empty streams group to a classic group.", group_id)
        return group.tombstone_records()

    def _drop_simple_group(self, group_id: str) -> None:
        if not self._is_other_group(group_id):
            self.groups.groups.pop(group_id, None)

    # -- replay and lifecycle --------------------------------------------------------------------------
    def replay(self, offset: int, record: rec.CoordinatorRecord, producer_id: int = -1) -> None:
        if record.record_type in (rec.RecordType.OFFSET_COMMIT, rec.RecordType.LEGACY_OFFSET_COMMIT):
            self.offsets.replay(offset, record, producer_id)
        elif record.record_type in rec.SHARE_GROUP_RECORD_TYPES:
            self.share.replay(record)
        elif record.record_type in rec.STREAMS_GROUP_RECORD_TYPES:
            self.streams.replay(record)
        elif producer_id < 0:
            self.groups.replay(record)

    def replay_end_transaction(self, offset: int, producer_id: int, commit: bool) -> None:
        """A transaction marker: the producer's pending offsets become committed or are dropped."""
        self.offsets.replay_end_transaction(producer_id, commit)

    def on_loaded(self) -> None:
        self.groups.on_loaded()
        self.share.on_loaded()
        self.streams_protocol.on_loaded()
        self._schedule_group_metadata_expiration()
        if self.groups.groups:
            log.info("__consumer_offsets-%d: %d groups loaded", self.partition, len(self.groups.groups))

    def on_unloaded(self) -> None:
        self.groups.on_unloaded()

    # -- classic protocol -------------------------------------------------------------------------------
    def join_group(self, info: RequestInfo, request: JoinGroupRequest, responder: Responder) -> CoordinatorResult:
        return self.groups.classic.classic_group_join(info, request, responder)

    def sync_group(self, info: RequestInfo, request: SyncGroupRequest, responder: Responder) -> CoordinatorResult:
        return self.groups.classic.classic_group_sync(info, request, responder)

    def heartbeat(self, info: RequestInfo, request: HeartbeatRequest) -> CoordinatorResult:
        return self.groups.classic.classic_group_heartbeat(info, request)

    def leave_group(self, info: RequestInfo, request: LeaveGroupRequest) -> CoordinatorResult:
        return self.groups.classic.classic_group_leave(info, request)

    # -- consumer protocol ------------------------------------------------------------------------------
    def consumer_group_heartbeat(self, info: RequestInfo, request: ConsumerGroupHeartbeatRequest) -> CoordinatorResult:
        return self.groups.consumer.consumer_group_heartbeat(info, request)

    # -- streams protocol (KIP-1071) --------------------------------------------------------------------
    def streams_group_heartbeat(self, info: RequestInfo, request: StreamsGroupHeartbeatRequest) -> CoordinatorResult:
        result = self.streams_protocol.heartbeat(info, request)
        if result.response is not None:
            group = self.streams.groups.get(request.group_id)
            epoch = next((r.value.epoch for r in result.records
                          if r.record_type == rec.RecordType.STREAMS_GROUP_TOPOLOGY and r.value is not None),
                         group.topology.epoch if group is not None and group.topology is not None else -1)
            self.descriptions.maybe_require(info.api_version, request.member_epoch, request.group_id, epoch,
                                            result.response)
        return result

    def streams_group_topology_description_update(
            self, request: StreamsGroupTopologyDescriptionUpdateRequest) -> CoordinatorResult:
        return self.descriptions.update(request)

    # -- offsets ----------------------------------------------------------------------------------------
    def commit_offset(self, info: RequestInfo, request: OffsetCommitRequest,
                      unknown_partitions: set[tuple[str, int]]) -> CoordinatorResult:
        return self.offsets.commit_offset(info, request, unknown_partitions)

    def commit_transactional_offset(self, info: RequestInfo, request: TxnOffsetCommitRequest,
                                    unknown_partitions: set[tuple[str, int]]) -> CoordinatorResult:
        return self.offsets.commit_transactional_offset(info, request, unknown_partitions)

    def fetch_offsets(self, group_id: str, topics: list[FetchTopic] | None, member_id: str | None,
                      member_epoch: int, require_stable: bool = False):
        return self.offsets.fetch_offsets(group_id, topics, member_id, member_epoch, require_stable)

    def delete_offsets(self, request: OffsetDeleteRequest, unknown_partitions: set[tuple[str, int]]) -> CoordinatorResult:
        return self.offsets.delete_offsets(request, unknown_partitions)

    def on_partitions_deleted(self, topic_partitions: set[tuple[str, int]]) -> CoordinatorResult:
        return CoordinatorResult(self.offsets.on_partitions_deleted(topic_partitions))

    # -- groups -----------------------------------------------------------------------------------------
    def delete_groups(self, group_ids: list[str]) -> CoordinatorResult:
        records: list[rec.CoordinatorRecord] = []
        results = []
        deleted = []
        offsets = 0
        for group_id in group_ids:
            streams = self.streams.groups.get(group_id)
            if streams is not None:  # Kafka's StreamsGroup.validateDeleteGroup: only an empty group
                if streams.members:
                    results.append(DeletableGroupResult(group_id=group_id, error_code=ErrorCode.NON_EMPTY_GROUP))
                    continue
                offsets += self.offsets.delete_all_offsets(group_id, records)
                self.descriptions.backoff.clear_group(group_id)
                records.extend(streams.tombstone_records())
                deleted.append(group_id)
                results.append(DeletableGroupResult(group_id=group_id, error_code=ErrorCode.NONE))
                continue
            try:
                self.groups.validate_delete_group(group_id)
                offsets += self.offsets.delete_all_offsets(group_id, records)
                records.extend(self.groups.group_tombstone_records(group_id))
                deleted.append(group_id)
                results.append(DeletableGroupResult(group_id=group_id, error_code=ErrorCode.NONE))
            except ApiError as exc:
                results.append(DeletableGroupResult(group_id=group_id, error_code=exc.error_code))
        if deleted:
            log.info("deleted groups %s and %d offsets", deleted, offsets)
        return CoordinatorResult(records, results)

    def list_groups(self, states: list[str], types: list[str]):
        listed = self.groups.list_groups(states, types)
        state_filter = {s.strip().lower() for s in states}
        type_filter = {t.strip().lower() for t in types}
        for g in self.streams.groups.values():
            entry = streams_describe.listed(g, self.streams_protocol.topics)
            if (not state_filter or entry.group_state.lower() in state_filter) and (
                    not type_filter or entry.group_type in type_filter):
                listed.append(entry)
        return listed

    def describe_groups(self, group_ids: list[str], api_version: int):
        described = self.groups.describe_groups(group_ids, api_version)
        for d in described:  # Kafka: a streams group is GROUP_ID_NOT_FOUND to DescribeGroups, as a consumer group
            if d.group_id in self.streams.groups and api_version >= 6:
                d.error_message = f"Group {d.group_id} is not a classic group."
        return described

    def streams_group_describe(self, group_ids: list[str]):
        out = []
        for group_id in group_ids:
            g = self.streams.groups.get(group_id)
            if g is not None:
                out.append(d := streams_describe.describe(g, self.streams_protocol.topics))
                self.descriptions.describe(g, d)
            elif group_id in self.groups.groups:
                out.append(streams_describe.not_found(group_id, f"Group {group_id} is not a streams group."))
            else:
                out.append(streams_describe.not_found(group_id, f"Group {group_id} not found."))
        return out

    def consumer_group_describe(self, group_ids: list[str]):
        return self.groups.consumer_group_describe(group_ids)

    # -- expiry -----------------------------------------------------------------------------------------
    def cleanup_group_metadata(self) -> CoordinatorResult:
        """Expire old offsets of groups not using them; delete empty groups left without offsets."""
        records: list[rec.CoordinatorRecord] = []
        for group_id in self.groups.group_ids():
            if self.offsets.cleanup_expired_offsets(group_id, records):
                self.groups.maybe_delete_group(group_id, records)
        for group_id, streams in list(self.streams.groups.items()):
            if self.offsets.cleanup_expired_offsets(group_id, records) and not streams.members:
                # As Kafka's: a group with a stored description loses the description first, the group next cycle
                described = self.descriptions.cleanup_records(streams)
                records.extend(described or streams.tombstone_records())
        if records:
            log.info("__consumer_offsets-%d: %d tombstones from offset and group expiry", self.partition, len(records))
        self._schedule_group_metadata_expiration()
        return CoordinatorResult(records)

    def _schedule_group_metadata_expiration(self) -> None:
        self.timer.schedule(GROUP_EXPIRATION_KEY, self.config.offsets_retention_check_interval_ms,
                            self.cleanup_group_metadata)

    # -- tests ------------------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        return {"groups": self.groups.snapshot(), "offsets": self.offsets.snapshot(),
                "share_groups": {gid: g.view() for gid, g in self.share.groups.items()},
                "streams_groups": self.streams.snapshot()}
