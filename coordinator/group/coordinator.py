"""The group coordinator service: what request handlers call (Kafka's GroupCoordinatorService).

It routes each group to its __consumer_offsets partition (``partition_for``), refuses groups whose
partition this node does not lead, applies the request-level checks Kafka makes before a shard sees
a request (empty group id, session timeout bounds, unknown topics), runs the operation on the
partition's shard through the runtime, and turns errors into each API's error response.

What the broker must provide (see ``log.py`` for the log contract):

- ``log_factory(partition) -> CoordinatorLog`` for each __consumer_offsets partition;
- ``topics``: a ``TopicsImage`` (topic names, ids, partition counts) — the metadata store;
- ``partition_leader(partition) -> node id | None``: who leads a __consumer_offsets partition. This
  is the one place that decides which node coordinates a group; today every partition is led by the
  local node, replication will answer from the partition state;
- optionally ``ensure_offsets_topic()``, called when a group is first looked up, to create
  __consumer_offsets on first use (as Kafka does from FindCoordinator).

``load_all()`` replays every partition this node leads (the broker calls it at start when
__consumer_offsets exists; otherwise the first group request does, after creating the topic).
``on_election`` / ``on_resignation`` are the hooks for leadership changes once replication exists.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Any

from coordinator.group import records as rec
from coordinator.group.config import GroupCoordinatorConfig
from coordinator.group.group_config import GroupConfigs
from coordinator.group.offsets import FetchTopic
from coordinator.group.partitioner import GROUP_METADATA_TOPIC_NAME, partition_for
from coordinator.group.request_info import RequestInfo
from coordinator.group.shard import GroupCoordinatorShard
from coordinator.group.topics import TopicsImage
from coordinator.runtime.clock import Clock, SystemClock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.log import CoordinatorLogFactory
from coordinator.runtime.result import CoordinatorResult
from coordinator.runtime.runtime import CoordinatorRuntime
from coordinator.runtime.timer import CoordinatorTimer
from wire import ErrorCode
from wire.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
    SyncGroupRequest,
    SyncGroupResponse,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from wire.messages import consumer_group_describe_response as cgd
from wire.messages import offset_commit_response as ocr
from wire.messages import offset_fetch_response as ofr
from wire.messages import streams_group_describe_response as sgd
from wire.messages import txn_offset_commit_response as tocr
from wire.messages.delete_groups_response import DeletableGroupResult
from wire.messages.describe_groups_response import DescribedGroup
from wire.messages.leave_group_response import MemberResponse
from wire.messages.list_groups_response import ListedGroup

__all__ = ["GroupCoordinator"]

log = logging.getLogger("pykbroker.coordinator.group")


def _error_code(exc: BaseException) -> int:
    if isinstance(exc, ApiError):
        return exc.error_code
    return ErrorCode.UNKNOWN_SERVER_ERROR


def _error_message(exc: BaseException) -> str | None:
    return exc.message if isinstance(exc, ApiError) else None


class GroupCoordinator:
    def __init__(self, config: GroupCoordinatorConfig, node_id: int, topics: TopicsImage,
                 log_factory: CoordinatorLogFactory, clock: Clock | None = None,
                 partition_leader: Callable[[int], int | None] | None = None,
                 ensure_offsets_topic: Callable[[], Any] | None = None,
                 new_uuid: Callable[[], uuid.UUID] = uuid.uuid4, group_configs: GroupConfigs | None = None,
                 partition_hosted: Callable[[int], bool] | None = None) -> None:
        """``partition_hosted(partition)``: whether this broker leads that __consumer_offsets partition in its
        replica manager (its log exists and the election was applied); None: always (a single node's tests)."""
        self.config = config
        self.group_configs = group_configs
        self.node_id = node_id
        self.topics = topics
        self.clock = clock or SystemClock()
        self._partition_leader = partition_leader or (lambda _partition: node_id)
        self._partition_hosted = partition_hosted or (lambda _partition: True)
        self._ensure_offsets_topic = ensure_offsets_topic
        self._offsets_topic_ready = False
        self._offsets_topic_creation: asyncio.Future | None = None
        self._new_uuid = new_uuid
        self.runtime = CoordinatorRuntime(self._new_shard, log_factory, self.clock, decode_record=rec.decode_record,
                                          topic=GROUP_METADATA_TOPIC_NAME)
        self._started = False

    def _new_shard(self, partition: int, timer: CoordinatorTimer) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(partition, self.config, self.clock, timer, self.topics, self._new_uuid,
                                     self.group_configs)

    # -- placement --------------------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        return self.config.offsets_topic_num_partitions

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def coordinator_for(self, group_id: str) -> int | None:
        """The node coordinating ``group_id``: the leader of its __consumer_offsets partition."""
        return self._partition_leader(self.partition_for(group_id))

    async def ensure_offsets_topic(self) -> None:
        """Create __consumer_offsets on first use (FindCoordinator and the first group request call this)."""
        ensure = self._ensure_offsets_topic
        if self._offsets_topic_ready or ensure is None:
            return
        if self._offsets_topic_creation is None:
            async def create() -> None:
                result = ensure()
                if asyncio.iscoroutine(result):
                    await result
            self._offsets_topic_creation = asyncio.ensure_future(create())
        try:
            await asyncio.shield(self._offsets_topic_creation)
        except Exception:
            self._offsets_topic_creation = None
            log.exception("creating %s failed", "__consumer_offsets")
            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE) from None
        self._offsets_topic_ready = True

    async def _ready(self) -> None:
        if not self._started:
            await self.ensure_offsets_topic()
            self.load_all()

    def load_all(self) -> None:
        """Load every __consumer_offsets partition this node leads (idempotent)."""
        for partition in range(self.num_partitions):
            if self._partition_leader(partition) == self.node_id:
                self._load(partition)
        self._started = True

    def on_election(self, partition: int) -> None:
        self.runtime.load(partition)

    def _load(self, partition: int) -> None:
        """Load ``partition`` once this broker leads it (``CoordinatorRuntime.load_if_hosted``)."""
        self.runtime.load_if_hosted(partition, self._partition_hosted)

    async def on_resignation(self, partition: int) -> None:
        await self.runtime.unload(partition)

    async def close(self) -> None:
        await self.runtime.close()

    async def _partition(self, group_id: str) -> int:
        await self._ready()
        partition = self.partition_for(group_id)
        if self._partition_leader(partition) != self.node_id:
            raise ApiError(ErrorCode.NOT_COORDINATOR)
        self._load(partition)
        return partition

    async def _write(self, group_id: str, operation) -> Any:
        return await self.runtime.write(await self._partition(group_id), operation)

    async def _parked(self, group_id: str, operation, error_response: Callable[[int], Any]) -> Any:
        """Run an operation that answers through a callback, possibly much later (JoinGroup, SyncGroup)."""
        partition = await self._partition(group_id)
        response: asyncio.Future = asyncio.get_running_loop().create_future()

        def responder(r) -> None:
            if not response.done():
                response.set_result(r)

        def on_done(f: asyncio.Future) -> None:
            exc = f.exception() if not f.cancelled() else None
            if exc is not None and not response.done():
                response.set_result(error_response(_error_code(exc)))

        self.runtime.submit(partition, lambda shard: operation(shard, responder)).add_done_callback(on_done)
        return await response

    # -- classic protocol -------------------------------------------------------------------------------
    async def join_group(self, info: RequestInfo, request: JoinGroupRequest) -> JoinGroupResponse:
        if not request.group_id:
            return JoinGroupResponse(member_id=request.member_id, error_code=ErrorCode.INVALID_GROUP_ID)
        if not (self.config.group_min_session_timeout_ms <= request.session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            return JoinGroupResponse(member_id=request.member_id, error_code=ErrorCode.INVALID_SESSION_TIMEOUT)
        if info.api_version == 0:
            request.rebalance_timeout_ms = request.session_timeout_ms
        try:
            return await self._parked(request.group_id, lambda shard, r: shard.join_group(info, request, r),
                                      lambda code: JoinGroupResponse(member_id=request.member_id, error_code=code))
        except ApiError as exc:
            return JoinGroupResponse(member_id=request.member_id, error_code=exc.error_code)

    async def sync_group(self, info: RequestInfo, request: SyncGroupRequest) -> SyncGroupResponse:
        if not request.group_id:
            return SyncGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            return await self._parked(request.group_id, lambda shard, r: shard.sync_group(info, request, r),
                                      lambda code: SyncGroupResponse(error_code=code))
        except ApiError as exc:
            return SyncGroupResponse(error_code=exc.error_code)

    async def heartbeat(self, info: RequestInfo, request: HeartbeatRequest) -> HeartbeatResponse:
        if not request.group_id:
            return HeartbeatResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            return await self._write(request.group_id, lambda shard: shard.heartbeat(info, request))
        except Exception as exc:
            return HeartbeatResponse(error_code=_error_code(exc))

    async def leave_group(self, info: RequestInfo, request: LeaveGroupRequest) -> LeaveGroupResponse:
        if not request.group_id:
            return LeaveGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        try:
            return await self._write(request.group_id, lambda shard: shard.leave_group(info, request))
        except Exception as exc:
            code = _error_code(exc)
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                # The group does not exist: every member is unknown.
                return LeaveGroupResponse(members=[
                    MemberResponse(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                   error_code=ErrorCode.UNKNOWN_MEMBER_ID) for m in request.members])
            return LeaveGroupResponse(error_code=code)

    # -- consumer protocol ------------------------------------------------------------------------------
    async def consumer_group_heartbeat(self, info: RequestInfo,
                                       request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        if not self.config.consumer_protocol_enabled:
            return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
        try:
            return await self._write(request.group_id, lambda shard: shard.consumer_group_heartbeat(info, request))
        except Exception as exc:
            return ConsumerGroupHeartbeatResponse(error_code=_error_code(exc), error_message=_error_message(exc))

    async def streams_group_heartbeat(self, info: RequestInfo,
                                      request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse:
        """KIP-1071's heartbeat (not served to clients yet: no handler, not in ApiVersions)."""
        try:
            return await self._write(request.group_id, lambda shard: shard.streams_group_heartbeat(info, request))
        except Exception as exc:
            return StreamsGroupHeartbeatResponse(error_code=_error_code(exc), error_message=_error_message(exc))

    async def streams_group_topology_description_update(
            self, request: StreamsGroupTopologyDescriptionUpdateRequest) -> StreamsGroupTopologyDescriptionUpdateResponse:
        """KIP-1331's push into the built-in store (``group.streams.topology.description.store.enable``)."""
        try:
            return await self._write(request.group_id,
                                     lambda shard: shard.streams_group_topology_description_update(request))
        except Exception as exc:
            return StreamsGroupTopologyDescriptionUpdateResponse(error_code=_error_code(exc),
                                                                 error_message=_error_message(exc))

    async def streams_group_topology(self, group_id: str):
        """The streams group's topology (StreamsGroupTopologyValue), or None."""
        partition = await self._partition(group_id)
        return await self.runtime.read(partition, lambda shard: (  # noqa: B023 - awaited here
            g.topology if (g := shard.streams.groups.get(group_id)) is not None else None))

    async def streams_group_describe(self, info: RequestInfo, group_ids: list[str]) -> list[sgd.DescribedGroup]:
        """KIP-1071's describe (not served to clients yet: no handler, not in ApiVersions)."""
        out = []
        for group_id in group_ids:
            if not group_id:
                out.append(sgd.DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID, members=[]))
                continue
            try:
                partition = await self._partition(group_id)
                out.extend(await self.runtime.read(partition, lambda shard: shard.streams_group_describe([group_id])))  # noqa: B023 - awaited here
            except Exception as exc:
                out.append(sgd.DescribedGroup(group_id=group_id, error_code=_error_code(exc), members=[]))
        return out

    async def consumer_group_describe(self, info: RequestInfo, group_ids: list[str]) -> list[cgd.DescribedGroup]:
        out = []
        for group_id in group_ids:
            if not group_id:
                out.append(cgd.DescribedGroup(group_id=group_id, error_code=ErrorCode.INVALID_GROUP_ID, members=[]))
                continue
            try:
                partition = await self._partition(group_id)
                out.extend(await self.runtime.read(partition, lambda shard: shard.consumer_group_describe([group_id])))  # noqa: B023 - awaited here
            except Exception as exc:
                out.append(cgd.DescribedGroup(group_id=group_id, error_code=_error_code(exc), members=[]))
        return out

    # -- share groups (KIP-932; their membership lives in the same shards) --------------------------------
    async def share_write(self, group_id: str, operation: Callable[[Any], CoordinatorResult]) -> Any:
        """Run ``operation(share_groups)`` on the group's shard (its ``ShareGroupCoordinator``) as a write."""
        return await self._write(group_id, lambda shard: operation(shard.share))

    async def share_read(self, group_id: str, reader: Callable[[Any], Any]) -> Any:
        """``reader(share_groups)`` on the group's shard, once it is loaded."""
        return await self.runtime.read(await self._partition(group_id), lambda shard: reader(shard.share))

    async def share_groups(self) -> list[Any]:
        """Every share group of the partitions this node leads (ListGroups)."""
        await self._ready()
        out: list[Any] = []
        for partition in range(self.num_partitions):
            if self._partition_leader(partition) != self.node_id:
                continue
            try:
                out.extend(await self.runtime.read(partition, lambda shard: list(shard.share.groups.values())))
            except ApiError as exc:
                if exc.error_code != ErrorCode.NOT_COORDINATOR:
                    raise
        return out

    # -- offsets ----------------------------------------------------------------------------------------
    def _unknown_partitions(self, topics) -> set[tuple[str, int]]:
        unknown = set()
        for topic in topics:
            info = self.topics.by_name(topic.name)
            for p in topic.partitions:
                if info is None or not 0 <= p.partition_index < info.num_partitions:
                    unknown.add((topic.name, p.partition_index))
        return unknown

    async def commit_offsets(self, info: RequestInfo, request: OffsetCommitRequest) -> OffsetCommitResponse:
        unknown = self._unknown_partitions(request.topics)
        try:
            return await self._write(request.group_id,
                                     lambda shard: shard.commit_offset(info, request, unknown))
        except Exception as exc:
            code = _error_code(exc)
            return OffsetCommitResponse(topics=[
                ocr.OffsetCommitResponseTopic(name=t.name, partitions=[
                    ocr.OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                    for p in t.partitions])
                for t in request.topics])

    async def fetch_offsets(self, info: RequestInfo, group_id: str, topics: list[FetchTopic] | None,
                            require_stable: bool = False, member_id: str | None = None,
                            member_epoch: int = -1) -> ofr.OffsetFetchResponseGroup:
        """One group of an OffsetFetch (``topics`` None: every committed offset)."""
        try:
            partition = await self._partition(group_id)
            if require_stable:
                # Queued behind pending writes, so the answer includes every offset already accepted.
                result = await self.runtime.write(partition, lambda shard: CoordinatorResult(
                    response=shard.fetch_offsets(group_id, topics, member_id, member_epoch, True)))
            else:
                result = await self.runtime.read(
                    partition, lambda shard: shard.fetch_offsets(group_id, topics, member_id, member_epoch))
            return ofr.OffsetFetchResponseGroup(group_id=group_id, topics=result, error_code=ErrorCode.NONE)
        except Exception as exc:
            return ofr.OffsetFetchResponseGroup(group_id=group_id, topics=[], error_code=_error_code(exc))

    async def commit_transactional_offsets(self, info: RequestInfo,
                                           request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit: the offsets go into the producer's transaction in __consumer_offsets."""
        unknown = self._unknown_partitions(request.topics)
        try:
            if not request.group_id:
                raise ApiError(ErrorCode.INVALID_GROUP_ID)
            return await self._write(request.group_id,
                                     lambda shard: shard.commit_transactional_offset(info, request, unknown))
        except Exception as exc:
            code = _error_code(exc)
            return TxnOffsetCommitResponse(topics=[
                tocr.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
                    tocr.TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                    for p in t.partitions])
                for t in request.topics])

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   coordinator_epoch: int, commit: bool, *, transaction_version: int = 0) -> None:
        """Write a transaction marker to ``__consumer_offsets-<partition>`` (the transaction coordinator's call);
        a transaction-version-2 marker of the producer's current epoch while its transaction is open there is
        refused (INVALID_PRODUCER_EPOCH), as on a data partition."""
        await self._ready()
        if self._partition_leader(partition) != self.node_id:
            raise ApiError(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self._load(partition)
        await self.runtime.complete_transaction(partition, producer_id, producer_epoch, coordinator_epoch, commit,
                                                transaction_version=transaction_version)

    async def delete_offsets(self, info: RequestInfo, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        if not request.group_id:
            return OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID)
        unknown = self._unknown_partitions(request.topics)
        try:
            return await self._write(request.group_id, lambda shard: shard.delete_offsets(request, unknown))
        except Exception as exc:
            return OffsetDeleteResponse(error_code=_error_code(exc))

    async def on_partitions_deleted(self, topic_partitions: list[tuple[str, int]]) -> None:
        """Drop the committed offsets of deleted partitions from every group this node coordinates.

        Only loaded shards are cleaned: before the first group request nothing is loaded yet.
        """
        wanted = {(t, p) for t, p in topic_partitions if t != GROUP_METADATA_TOPIC_NAME}
        if not wanted:
            return
        for partition in self.runtime.loaded_partitions():
            try:
                await self.runtime.write(partition, lambda shard: shard.on_partitions_deleted(wanted))
            except Exception:
                log.exception("removing offsets of deleted partitions from __consumer_offsets-%d failed", partition)

    # -- whole groups -----------------------------------------------------------------------------------
    async def list_groups(self, info: RequestInfo, states: list[str], types: list[str]) -> tuple[int, list[ListedGroup]]:
        try:
            await self._ready()
        except ApiError as exc:
            return exc.error_code, []
        groups: list[ListedGroup] = []
        for partition in range(self.num_partitions):
            if self._partition_leader(partition) != self.node_id:
                continue
            try:
                groups.extend(await self.runtime.read(partition, lambda shard: shard.list_groups(states, types)))
            except ApiError as exc:
                if exc.error_code != ErrorCode.NOT_COORDINATOR:
                    return exc.error_code, []
        return ErrorCode.NONE, groups

    async def describe_groups(self, info: RequestInfo, group_ids: list[str]) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            try:
                partition = await self._partition(group_id)
                out.extend(await self.runtime.read(
                    partition, lambda shard: shard.describe_groups([group_id], info.api_version)))  # noqa: B023 - awaited here
            except Exception as exc:
                out.append(DescribedGroup(group_id=group_id, error_code=_error_code(exc), members=[]))
        return out

    async def delete_groups(self, info: RequestInfo, group_ids: list[str]) -> list[DeletableGroupResult]:
        by_partition: dict[int, list[str]] = {}
        out: list[DeletableGroupResult] = []
        for group_id in group_ids:
            try:
                by_partition.setdefault(await self._partition(group_id), []).append(group_id)
            except Exception as exc:
                out.append(DeletableGroupResult(group_id=group_id, error_code=_error_code(exc)))
        for partition, ids in by_partition.items():
            try:
                out.extend(await self.runtime.write(partition, lambda shard: shard.delete_groups(ids)))  # noqa: B023 - awaited here
            except Exception as exc:
                out.extend(DeletableGroupResult(group_id=g, error_code=_error_code(exc)) for g in ids)
        return out

