"""Heartbeat v0-4 (classic groups, and classic members of consumer groups).

- v1+: throttle time. v3+: ``group_instance_id``. v4+: flexible.
REBALANCE_IN_PROGRESS tells the member to rejoin; UNKNOWN_MEMBER_ID / ILLEGAL_GENERATION /
FENCED_INSTANCE_ID that it is no longer part of the generation.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import HeartbeatRequest, HeartbeatResponse


def error_response(request: HeartbeatRequest | None, version: int, code: int) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)


@handler(ApiKey.HEARTBEAT, 0, 4, error_response=error_response)
async def handle_heartbeat(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return await coordinator(ctx).heartbeat(request_info(ctx), request)
