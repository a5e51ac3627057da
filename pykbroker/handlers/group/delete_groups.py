"""DeleteGroups v0-3: delete empty groups and their committed offsets (tombstones in __consumer_offsets).

- v1+: on quota violation the response goes before throttling. v2+: flexible. v3+: a per-group
  ``error_message`` (null for the codes that say it all, as Kafka 4.4 answers them).
A group with members gets NON_EMPTY_GROUP; an unknown one GROUP_ID_NOT_FOUND. Share groups (while share
groups are on) are deleted with their share-partition state in __share_group_state.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import DeleteGroupsRequest, DeleteGroupsResponse
from wire.messages.delete_groups_response import DeletableGroupResult


def error_response(request: DeleteGroupsRequest | None, version: int, code: int) -> DeleteGroupsResponse:
    names = [] if request is None else request.groups_names
    return DeleteGroupsResponse(results=[DeletableGroupResult(group_id=g, error_code=code) for g in names])


@handler(ApiKey.DELETE_GROUPS, 0, 3, error_response=error_response)
async def handle_delete_groups(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    names = list(dict.fromkeys(request.groups_names))
    allowed = filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    denied = [DeletableGroupResult(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
              for g in names if g not in allowed]
    names = [g for g in names if g in allowed]
    shared: list[DeletableGroupResult] = []
    if names and ctx.broker.share_groups_enabled:
        share = ctx.broker.share_groups
        await share.groups_with_state()
        for name in [g.group_id for g in await share.listed_groups() if g.group_id in names]:
            names.remove(name)
            code = await share.delete_group(name)
            if code == 0:
                for key in await share.states(name):
                    await share.partitions.delete(key)
            shared.append(DeletableGroupResult(group_id=name, error_code=code))
    results = await coordinator(ctx).delete_groups(request_info(ctx), names) if names else []
    return DeleteGroupsResponse(results=list(results) + shared + denied)
