"""DescribeGroups v0-6 (classic groups).

- v1+: throttle time. v3+: authorized operations when asked (no ACLs yet: READ, DELETE, DESCRIBE).
- v4+: members' ``group_instance_id``. v5+: flexible.
- v6+: GROUP_ID_NOT_FOUND with a message for unknown groups and for groups that are not classic
  (KIP-1043); earlier versions describe those as Dead with no members.
Member metadata and the protocol are only filled in while the group is Stable.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, authorized_operations
from wire import ApiKey, ErrorCode
from wire.messages import DescribeGroupsRequest, DescribeGroupsResponse
from wire.messages.describe_groups_response import DescribedGroup


def error_response(request: DescribeGroupsRequest | None, version: int, code: int) -> DescribeGroupsResponse:
    groups = [] if request is None else request.groups
    return DescribeGroupsResponse(groups=[DescribedGroup(group_id=g, error_code=code, members=[]) for g in groups])


@handler(ApiKey.DESCRIBE_GROUPS, 0, 6, error_response=error_response)
async def handle_describe_groups(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    refused = [g for g in request.groups if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    allowed = [g for g in request.groups if g not in refused]
    groups = await coordinator(ctx).describe_groups(request_info(ctx), allowed) if allowed else []
    if ctx.api_version >= 3 and request.include_authorized_operations:
        for g in groups:
            if g.error_code == 0:
                g.authorized_operations = authorized_operations(ctx, ResourceType.GROUP, g.group_id)
    return DescribeGroupsResponse(groups=[*[
        DescribedGroup(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[]) for g in refused],
        *groups])
