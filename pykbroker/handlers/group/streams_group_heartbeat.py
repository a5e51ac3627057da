"""StreamsGroupHeartbeat v0-1: the Streams group protocol of KIP-1071 (``coordinator.group.streams_protocol``).

Served and advertised only with ``group.streams.enable`` (unfinished: the broker does not create missing
internal topics yet); otherwise UNSUPPORTED_VERSION. READ on the group is required, DESCRIBE on the
topology's source topics as Kafka checks them.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse


def error_response(request: StreamsGroupHeartbeatRequest | None, version: int,
                   code: int) -> StreamsGroupHeartbeatResponse:
    return StreamsGroupHeartbeatResponse(error_code=code)


@handler(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, error_response=error_response)
async def handle_streams_group_heartbeat(ctx: RequestContext,
                                         request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse:
    if not ctx.broker.streams_groups_enabled:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if request.topology is not None:
        sources = {t for s in request.topology.subtopologies for t in s.source_topics}
        if sources and len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, sources)) < len(sources):
            return error_response(request, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return await coordinator(ctx).streams_group_heartbeat(request_info(ctx), request)
