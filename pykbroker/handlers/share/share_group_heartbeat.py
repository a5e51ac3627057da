"""ShareGroupHeartbeat v1 (KIP-932): join (epoch 0, with the subscribed topics), heartbeat, leave (epoch -1).

The member chooses its id; an empty or too long one is INVALID_REQUEST ("Invalid member id in the request.").
A share-partition is assigned only once its state is initialized, as Kafka 4.4's group coordinator does: the
heartbeat that finds a subscribed partition uninitialized marks it initializing (ShareGroupStatePartitionMetadata)
and starts writing its state at the share coordinator without waiting for it, so a first heartbeat answers an empty
assignment; once written, the next heartbeat bumps the group epoch and assigns it. The state starts at offset -1
("not yet known"; DescribeShareGroupOffsets shows -1), which the first ShareFetch turns into an offset by
``share.auto.offset.reset``, or at 0 for partitions added to a topic the group already has. A group id already used by a classic or consumer group is GROUP_ID_NOT_FOUND ("Group <id> is not a share
group."). The answer carries the member epoch, the heartbeat interval and, when it changed, the assignment (topic ids
and partitions) from the simple assignor. UNSUPPORTED_VERSION while share groups are off.
"""

from __future__ import annotations

import logging

from coordinator.runtime.errors import ApiError
from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import request_info
from pykbroker.handlers.share._common import client_host, enabled, member_id_valid, service, share_group
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse
from wire.messages.share_group_heartbeat_response import Assignment, TopicPartitions

log = logging.getLogger("pykbroker.handlers.share_group_heartbeat")


def error_response(request: ShareGroupHeartbeatRequest | None, version: int, code: int,
                   message: str | None = None) -> ShareGroupHeartbeatResponse:
    return ShareGroupHeartbeatResponse(error_code=code, error_message=message)


@handler(ApiKey.SHARE_GROUP_HEARTBEAT, 1, 1, error_response=error_response)
async def handle_share_group_heartbeat(ctx: RequestContext,
                                       request: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse:
    if not enabled(ctx):
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not member_id_valid(request.member_id):
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST, "Invalid member id in the request.")
    if request.subscribed_topic_names:  # every subscribed topic must be describable, as Kafka checks
        wanted = set(request.subscribed_topic_names)
        if len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted)) < len(wanted):
            return error_response(request, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if ctx.broker.cluster_mode and ctx.broker.group_coordinator.coordinator_for(request.group_id) != ctx.broker.node_id:
        # the group's coordinator leads its __consumer_offsets partition; the client finds it again
        return error_response(request, ctx.api_version, ErrorCode.NOT_COORDINATOR)
    code, group = await share_group(ctx, request.group_id)
    if code:
        return error_response(request, ctx.api_version, code)
    if group is None and await _other_kind_of_group(ctx, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_ID_NOT_FOUND,
                              f"Group {request.group_id} is not a share group.")
    try:
        result = await service(ctx).heartbeat(request.group_id, request.member_id, request.member_epoch,
                                              request.rack_id, request.subscribed_topic_names, ctx.client_id or "",
                                              client_host(ctx))
    except ApiError as exc:
        return error_response(request, ctx.api_version, exc.error_code)
    if result.error_code != ErrorCode.NONE:
        return error_response(request, ctx.api_version, result.error_code, result.error_message)
    if result.initialize is not None:
        service(ctx).start_initializing(result.initialize)
    assignment = None
    if result.assignment is not None:
        assignment = Assignment(topic_partitions=[TopicPartitions(topic_id=t, partitions=p)
                                                  for t, p in result.assignment.items()])
    return ShareGroupHeartbeatResponse(error_code=ErrorCode.NONE, member_id=result.member_id,
                                       member_epoch=result.member_epoch,
                                       heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)


async def _other_kind_of_group(ctx: RequestContext, group_id: str) -> bool:
    """Whether ``group_id`` is a classic or consumer group (Kafka refuses to make it a share group too)."""
    if not group_id:
        return False
    code, groups = await ctx.broker.group_coordinator.list_groups(request_info(ctx), [], [])
    return code == ErrorCode.NONE and any(g.group_id == group_id for g in groups)
