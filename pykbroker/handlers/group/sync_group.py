"""SyncGroup v0-5.

- v1+: throttle time. v3+: ``group_instance_id``. v4+: flexible.
- v5+: the client sends (and the response carries) the protocol type and name, which must match the
  group's (INCONSISTENT_GROUP_PROTOCOL otherwise, KIP-559).
A follower's request waits until the leader's assignment is stored.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import SyncGroupRequest, SyncGroupResponse


def error_response(request: SyncGroupRequest | None, version: int, code: int) -> SyncGroupResponse:
    return SyncGroupResponse(error_code=code)


@handler(ApiKey.SYNC_GROUP, 0, 5, error_response=error_response)
async def handle_sync_group(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return await coordinator(ctx).sync_group(request_info(ctx), request)
