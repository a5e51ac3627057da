"""ConsumerGroupHeartbeat v0-1: the consumer group protocol of KIP-848.

- v0: an empty member id on the first heartbeat gets one chosen by the coordinator.
- v1: the client chooses its member id (KIP-1082; empty is INVALID_REQUEST) and may subscribe with a
  regular expression (``subscribed_topic_regex``, INVALID_REGULAR_EXPRESSION when it does not compile).
Epoch 0 joins, -1 leaves, -2 is a static member leaving for a while; otherwise the member's epoch.
Refused with UNSUPPORTED_VERSION when ``group.coordinator.rebalance.protocols`` lacks "consumer" or
group.version 1 is not finalized.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import consumer_protocol_enabled, coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse


def error_response(request: ConsumerGroupHeartbeatRequest | None, version: int,
                   code: int) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code)


@handler(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, error_response=error_response)
async def handle_consumer_group_heartbeat(ctx: RequestContext,
                                          request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    if not consumer_protocol_enabled(ctx):
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if request.subscribed_topic_names:  # every subscribed topic must be describable (Kafka 4.4)
        wanted = set(request.subscribed_topic_names)
        if len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted)) < len(wanted):
            return error_response(request, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return await coordinator(ctx).consumer_group_heartbeat(request_info(ctx), request)
