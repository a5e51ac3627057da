"""OffsetCommit v2-10 (v0-1 were removed in Kafka 4.0).

- v2-4: ``retention_time_ms`` (-1: the broker's ``offsets.retention.minutes``). v3+: throttle time.
- v5+: no retention. v6+: ``committed_leader_epoch``. v7+: ``group_instance_id``. v8+: flexible.
- v9+: usable by consumer-group (KIP-848) members, whose member epoch goes in
  ``generation_id_or_member_epoch``; GROUP_ID_NOT_FOUND for unknown groups (ILLEGAL_GENERATION before).
- v10+: topics by id, not name (KIP-848); an unknown id is UNKNOWN_TOPIC_ID, answered first with the refused
  topics, in the request's order, as Kafka 4.4.
Generation -1 with no member id commits as a simple consumer: allowed only to an empty or unknown
group (UNKNOWN_MEMBER_ID otherwise). Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.handlers.group._topic_ids import answer_by_id, topic_name
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import OffsetCommitRequest, OffsetCommitResponse
from wire.messages.offset_commit_response import OffsetCommitResponsePartition, OffsetCommitResponseTopic


def _failed(topics: list, code: int) -> list[OffsetCommitResponseTopic]:
    """Every partition of ``topics`` answered with ``code``."""
    return [OffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
        OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code) for p in t.partitions])
        for t in topics]


def error_response(request: OffsetCommitRequest | None, version: int, code: int) -> OffsetCommitResponse:
    return OffsetCommitResponse(topics=[] if request is None else _failed(request.topics, code))


@handler(ApiKey.OFFSET_COMMIT, 2, 10, error_response=error_response)
async def handle_offset_commit(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    by_id = ctx.api_version >= 10
    refused_response: list[OffsetCommitResponseTopic] = []
    if by_id:
        for t in request.topics:
            t.name = topic_name(ctx, t.topic_id) or ""
    allowed = filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                   (t.name for t in request.topics if t.name or not by_id))
    for t in request.topics:  # in the request's order, as Kafka's checks answer them
        if by_id and not t.name:
            refused_response += _failed([t], ErrorCode.UNKNOWN_TOPIC_ID)
        elif t.name not in allowed:
            refused_response += _failed([t], ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    request.topics = [t for t in request.topics if t.name in allowed and (t.name or not by_id)]
    if not request.topics:  # as Kafka: nothing left to commit is answered without the coordinator
        response = OffsetCommitResponse(topics=[])
    else:
        response = await coordinator(ctx).commit_offsets(request_info(ctx), request)
    response.topics = refused_response + list(response.topics)
    if by_id:
        answer_by_id(ctx, response.topics)
    return response
