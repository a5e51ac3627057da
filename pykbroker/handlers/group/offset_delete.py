"""OffsetDelete v0: remove committed offsets of a group (KIP-496).

Refused with NON_EMPTY_GROUP for a live classic group not using the consumer protocol; per partition,
GROUP_SUBSCRIBED_TO_TOPIC while a member subscribes to the topic and UNKNOWN_TOPIC_OR_PARTITION for
partitions that do not exist. Unknown groups get GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import OffsetDeleteRequest, OffsetDeleteResponse
from wire.messages.offset_delete_response import OffsetDeleteResponsePartition, OffsetDeleteResponseTopic


def error_response(request: OffsetDeleteRequest | None, version: int, code: int) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(error_code=code)


@handler(ApiKey.OFFSET_DELETE, 0, 0, error_response=error_response)
async def handle_offset_delete(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    if not authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    allowed = filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics))
    refused = [t for t in request.topics if t.name not in allowed]
    if not refused:
        return await coordinator(ctx).delete_offsets(request_info(ctx), request)
    request.topics = [t for t in request.topics if t.name in allowed]
    response = await coordinator(ctx).delete_offsets(request_info(ctx), request)
    # Kafka's OffsetDeleteResponse.Builder.merge: refused topics first; a group error of the coordinator is lost
    response.topics = [OffsetDeleteResponseTopic(name=t.name, partitions=[OffsetDeleteResponsePartition(
        partition_index=p.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED) for p in t.partitions])
        for t in refused] + list(response.topics)
    response.error_code = ErrorCode.NONE
    return response
