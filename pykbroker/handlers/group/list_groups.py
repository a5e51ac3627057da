"""ListGroups v0-5: the groups this broker coordinates.

- v1+: throttle time. v3+: flexible. v4+: ``states_filter`` and each group's state (KIP-518).
- v5+: ``types_filter`` ("classic", "consumer", "share") and each group's type (KIP-848, KIP-932).
Share groups (``coordinator.share``) are listed while share groups are on, with protocol type "share".
Filters are case-insensitive; an empty filter matches everything.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, authorize_cluster
from wire import ApiKey
from wire.messages import ListGroupsRequest, ListGroupsResponse
from wire.messages.list_groups_response import ListedGroup


def error_response(request: ListGroupsRequest | None, version: int, code: int) -> ListGroupsResponse:
    return ListGroupsResponse(error_code=code, groups=[])


@handler(ApiKey.LIST_GROUPS, 0, 5, error_response=error_response)
async def handle_list_groups(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    states = list(request.states_filter) if ctx.api_version >= 4 else []
    types = list(request.types_filter) if ctx.api_version >= 5 else []
    code, groups = await coordinator(ctx).list_groups(request_info(ctx), states, types)
    if code == 0 and ctx.broker.share_groups_enabled:
        await ctx.broker.share_groups.groups_with_state()
        groups = groups + share_groups_listed(ctx, await ctx.broker.share_groups.listed_groups(), states, types)
    if not authorize_cluster(ctx, AclOperation.DESCRIBE, log_if_denied=False):  # else only describable groups
        groups = [g for g in groups if authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id,
                                                 log_if_denied=False)]
    return ListGroupsResponse(error_code=code, groups=groups)


def share_groups_listed(ctx: RequestContext, share_groups: list, states: list[str], types: list[str]
                        ) -> list[ListedGroup]:
    if types and "share" not in {t.lower() for t in types}:
        return []
    wanted = {s.lower() for s in states}
    svc = ctx.broker.share_groups
    return [ListedGroup(group_id=g.group_id, protocol_type="share", group_state=g.state, group_type="share")
            for g in share_groups
            if (not wanted or g.state.lower() in wanted) and svc.coordinates(g.group_id)]
