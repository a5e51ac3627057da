"""LeaveGroup v0-5.

- v0-2: one ``member_id``; the response carries its error at the top level.
- v3+: a batch of members (``member_id`` and/or ``group_instance_id``; a static member can be removed
  by instance id alone), one result each (KIP-345). v4+: flexible. v5+: a ``reason`` per member.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import LeaveGroupRequest, LeaveGroupResponse
from wire.messages.leave_group_request import MemberIdentity


def error_response(request: LeaveGroupRequest | None, version: int, code: int) -> LeaveGroupResponse:
    return LeaveGroupResponse(error_code=code)


@handler(ApiKey.LEAVE_GROUP, 0, 5, error_response=error_response)
async def handle_leave_group(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if ctx.api_version < 3:
        request.members = [MemberIdentity(member_id=request.member_id, group_instance_id=None)]
    response = await coordinator(ctx).leave_group(request_info(ctx), request)
    if ctx.api_version < 3 and response.error_code == ErrorCode.NONE and response.members:
        response.error_code = response.members[0].error_code
    return response
