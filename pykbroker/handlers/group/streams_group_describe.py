"""StreamsGroupDescribe v0-1: streams groups (KIP-1071) with topology, members, tasks and targets.

Served while streams groups are on (``Broker.streams_groups_enabled``); otherwise UNSUPPORTED_VERSION for every
group. Groups that do not exist or are not streams groups get GROUP_ID_NOT_FOUND. v1's topology description
is never stored (no description plugin, as a default Kafka 4.4): asked for, its status is NOT_STORED.
DESCRIBE on the group is required, and on every topic of its topology: a group using a topic the principal may
not describe is answered TOPIC_AUTHORIZATION_FAILED without its members nor topology, as Kafka 4.4 does.
"""

from __future__ import annotations

from coordinator.group.streams_topology import topology_topics
from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    authorized_operations,
    filter_by_authorized,
)
from wire import ApiKey, ErrorCode
from wire.messages import StreamsGroupDescribeRequest, StreamsGroupDescribeResponse
from wire.messages.streams_group_describe_response import DescribedGroup

#: TopologyDescriptionStatus 0: the client did not ask for the description.
TOPOLOGY_DESCRIPTION_NOT_REQUESTED = 0


def error_response(request: StreamsGroupDescribeRequest | None, version: int,
                   code: int) -> StreamsGroupDescribeResponse:
    ids = [] if request is None else request.group_ids
    return StreamsGroupDescribeResponse(groups=[DescribedGroup(group_id=g, error_code=code, members=[]) for g in ids])


@handler(ApiKey.STREAMS_GROUP_DESCRIBE, 0, 1, error_response=error_response)
async def handle_streams_group_describe(ctx: RequestContext,
                                        request: StreamsGroupDescribeRequest) -> StreamsGroupDescribeResponse:
    if not ctx.broker.streams_groups_enabled:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    refused = [g for g in request.group_ids if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    allowed = [g for g in request.group_ids if g not in refused]
    groups = await coordinator(ctx).streams_group_describe(request_info(ctx), allowed) if allowed else []
    for g in groups:
        if g.error_code == 0:
            if request.include_authorized_operations:
                g.authorized_operations = authorized_operations(ctx, ResourceType.GROUP, g.group_id)
            if not request.include_topology_description:  # the coordinator attached it (or NOT_STORED)
                g.topology_description_status = TOPOLOGY_DESCRIPTION_NOT_REQUESTED
                g.topology_description = None
    return StreamsGroupDescribeResponse(groups=[
        *[DescribedGroup(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[]) for g in refused],
        *_hide_undescribable(ctx, groups)])


HIDDEN_TOPICS = "The described group uses topics that the client is not authorized to describe."


def _topics(group: DescribedGroup) -> set[str]:
    return set() if group.topology is None else set(topology_topics(group.topology))


def _hide_undescribable(ctx: RequestContext, groups: list[DescribedGroup]) -> list[DescribedGroup]:
    """Groups whose topology uses a topic the principal may not DESCRIBE become TOPIC_AUTHORIZATION_FAILED."""
    names = set().union(*map(_topics, groups))
    describable = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names) if names else set()
    return [g if _topics(g) <= describable else DescribedGroup(
        group_id=g.group_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message=HIDDEN_TOPICS, members=[])
        for g in groups]
