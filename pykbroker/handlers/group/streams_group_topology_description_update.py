"""StreamsGroupTopologyDescriptionUpdate v0 (KIP-1331): a member pushes its topology's description.

Kafka 4.4 keeps these descriptions only through a ``group.streams.topology.description.plugin.class`` (a Java
plugin, unset by default); without one it answers UNSUPPORTED_VERSION with the message below, never asks a
member for a description (the heartbeat's TopologyDescriptionRequired stays false) and StreamsGroupDescribe
reports NOT_STORED. pykbroker has no plugins: it answers as a default Kafka 4.4 does, unless
``group.streams.topology.description.store.enable`` turns its built-in store on
(``coordinator.group.streams_topology_description``). The checks are Kafka's, in its order: streams groups on,
READ on the group, a store, the member id, the group id, then the group's coordinator (the group, the member, the
topology epoch, the description's nodes).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import (
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
)

NO_PLUGIN = "The broker has no streams group topology description plugin configured."


def error_response(request: StreamsGroupTopologyDescriptionUpdateRequest | None, version: int,
                   code: int) -> StreamsGroupTopologyDescriptionUpdateResponse:
    return StreamsGroupTopologyDescriptionUpdateResponse(error_code=code)


@handler(ApiKey.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE, 0, 0, error_response=error_response)
async def handle_streams_group_topology_description_update(
        ctx: RequestContext,
        request: StreamsGroupTopologyDescriptionUpdateRequest) -> StreamsGroupTopologyDescriptionUpdateResponse:
    if not ctx.broker.streams_groups_enabled:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    group_coordinator = coordinator(ctx)
    if not group_coordinator.config.streams_topology_description_store:
        return StreamsGroupTopologyDescriptionUpdateResponse(error_code=ErrorCode.UNSUPPORTED_VERSION,
                                                             error_message=NO_PLUGIN)
    for value, name in ((request.member_id, "MemberId"), (request.group_id, "GroupId")):
        if not value.strip():
            return StreamsGroupTopologyDescriptionUpdateResponse(error_code=ErrorCode.INVALID_REQUEST,
                                                                 error_message=f"{name} can't be empty.")
    return await group_coordinator.streams_group_topology_description_update(request)
