"""JoinGroup v0-9.

- v0: no rebalance timeout (the session timeout is used). v1+: rebalance timeout. v2+: throttle time.
- v4+: a new member without an id first gets MEMBER_ID_REQUIRED and its id (KIP-394).
- v5+: ``group_instance_id`` (static membership, KIP-345). v6+: flexible.
- v7+: ``protocol_type`` in the response, ``protocol_name`` nullable (empty string before v7).
- v8+: ``reason``. v9+: ``skip_assignment`` for a static leader rejoining without a rebalance.
The request waits (parked) until the join phase of the rebalance completes.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import JoinGroupRequest, JoinGroupResponse


def error_response(request: JoinGroupRequest | None, version: int, code: int) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=code, member_id=request.member_id if request is not None else "",
                             protocol_name=None if version >= 7 else "")


@handler(ApiKey.JOIN_GROUP, 0, 9, error_response=error_response)
async def handle_join_group(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return JoinGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, generation_id=-1, member_id="",
                                 leader="", protocol_name=None if ctx.api_version >= 7 else "")
    response = await coordinator(ctx).join_group(request_info(ctx), request)
    if ctx.api_version < 7 and response.protocol_name is None:
        response.protocol_name = ""
    return response
