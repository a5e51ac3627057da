"""OffsetFetch v1-10 (v0 read ZooKeeper and was removed in Kafka 4.0).

- v1: the listed partitions of one group. v2+: ``topics`` null means every committed offset, and a
  top-level error code. v3+: throttle time. v5+: ``committed_leader_epoch``. v6+: flexible.
- v7+: ``require_stable``: answered after every offset already accepted is written.
- v8+: several groups in one request, one result each. v9+: ``member_id``/``member_epoch`` of a
  consumer-group member (STALE_MEMBER_EPOCH / UNKNOWN_MEMBER_ID when they do not match).
- v10+: topics by id, not name (KIP-848); the partitions of an unknown id answer UNKNOWN_TOPIC_ID, after the
  others. "All offsets" lists the topics that still exist, by id.
A partition without a committed offset answers offset -1, leader epoch -1, metadata "".
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.handlers.group._topic_ids import answer_by_id, topic_name
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import OffsetFetchRequest, OffsetFetchResponse
from wire.messages.offset_fetch_response import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)


def error_response(request: OffsetFetchRequest | None, version: int, code: int) -> OffsetFetchResponse:
    if version >= 8:
        groups = [] if request is None else request.groups
        return OffsetFetchResponse(groups=[OffsetFetchResponseGroup(group_id=g.group_id, error_code=code, topics=[])
                                           for g in groups])
    if version < 2 and request is not None and request.topics:
        return OffsetFetchResponse(topics=[OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponsePartition(partition_index=p, committed_offset=-1, metadata="", error_code=code)
            for p in t.partition_indexes]) for t in request.topics])
    return OffsetFetchResponse(error_code=code, topics=[])


async def _fetch_group(ctx: RequestContext, group_id: str, topics: list[tuple[str, list[int]]] | None,
                       require_stable: bool, member_id: str | None = None,
                       member_epoch: int = -1) -> OffsetFetchResponseGroup:
    """One group's offsets as Kafka authorizes them: DESCRIBE on the group, and only topics the principal may
    describe (left out of "all offsets", TOPIC_AUTHORIZATION_FAILED when named)."""
    if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return OffsetFetchResponseGroup(group_id=group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[])
    gc = coordinator(ctx)
    if topics is None:
        group = await gc.fetch_offsets(request_info(ctx), group_id, None, require_stable, member_id, member_epoch)
        if group.error_code == ErrorCode.NONE:
            visible = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in group.topics))
            group.topics = [t for t in group.topics if t.name in visible]
        return group
    allowed = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (name for name, _ in topics))
    group = await gc.fetch_offsets(request_info(ctx), group_id, [t for t in topics if t[0] in allowed],
                                   require_stable, member_id, member_epoch)
    if group.error_code == ErrorCode.NONE:
        group.topics = list(group.topics) + [OffsetFetchResponseTopics(name=name, partitions=[
            OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1,
                                          error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in partitions])
            for name, partitions in topics if name not in allowed]
    return group


async def _fetch_group_by_id(ctx: RequestContext, g, require_stable: bool) -> OffsetFetchResponseGroup:
    """v10: one group's offsets with topics named by id, resolved here (the coordinator keeps names)."""
    names = None if g.topics is None else [(t, topic_name(ctx, t.topic_id)) for t in g.topics]
    known = None if names is None else [(name, list(t.partition_indexes)) for t, name in names if name is not None]
    group = await _fetch_group(ctx, g.group_id, known, require_stable, g.member_id, g.member_epoch)
    if group.error_code != ErrorCode.NONE:
        return group
    if names is None:  # every committed offset: of the topics that still exist
        group.topics = [t for t in group.topics if ctx.metadata.topics.get(t.name) is not None]
    answer_by_id(ctx, group.topics)
    group.topics = list(group.topics) + [OffsetFetchResponseTopics(name="", topic_id=t.topic_id, partitions=[
        OffsetFetchResponsePartitions(partition_index=p, committed_offset=-1, metadata="",
                                      error_code=ErrorCode.UNKNOWN_TOPIC_ID) for p in t.partition_indexes])
        for t, name in names or [] if name is None]
    return group


@handler(ApiKey.OFFSET_FETCH, 1, 10, error_response=error_response)
async def handle_offset_fetch(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    version = ctx.api_version
    require_stable = request.require_stable if version >= 7 else False
    if version >= 10:
        return OffsetFetchResponse(groups=[await _fetch_group_by_id(ctx, g, require_stable) for g in request.groups])
    if version >= 8:
        groups = []
        for g in request.groups:
            topics = None if g.topics is None else [(t.name, list(t.partition_indexes)) for t in g.topics]
            groups.append(await _fetch_group(ctx, g.group_id, topics, require_stable,
                                             g.member_id if version >= 9 else None,
                                             g.member_epoch if version >= 9 else -1))
        return OffsetFetchResponse(groups=groups)
    topics = None if request.topics is None else [(t.name, list(t.partition_indexes)) for t in request.topics]
    group = await _fetch_group(ctx, request.group_id, topics, require_stable)
    if group.error_code != ErrorCode.NONE:
        return error_response(request, version, group.error_code)
    return OffsetFetchResponse(error_code=ErrorCode.NONE, topics=[
        OffsetFetchResponseTopic(name=t.name, partitions=[
            OffsetFetchResponsePartition(partition_index=p.partition_index, committed_offset=p.committed_offset,
                                         committed_leader_epoch=p.committed_leader_epoch, metadata=p.metadata,
                                         error_code=p.error_code)
            for p in t.partitions])
        for t in group.topics])
