"""ConsumerGroupHeartbeat v0-1: the consumer group protocol of KIP-848.

- v0: an empty member id on the first heartbeat gets one chosen by the coordinator.
- v1: the client chooses its member id (KIP-1082; empty is INVALID_REQUEST) and may subscribe with a
  regular expression (``subscribed_topic_regex``, INVALID_REGULAR_EXPRESSION when it does not compile).
Epoch 0 joins, -1 leaves, -2 is a static member leaving for a while; otherwise the member's epoch.
Refused with UNSUPPORTED_VERSION when ``group.coordinator.rebalance.protocols`` lacks "consumer".
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from wire import ApiKey
from wire.messages import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse


def error_response(request: ConsumerGroupHeartbeatRequest | None, version: int,
                   code: int) -> ConsumerGroupHeartbeatResponse:
    return ConsumerGroupHeartbeatResponse(error_code=code)


@handler(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1, error_response=error_response)
async def handle_consumer_group_heartbeat(ctx: RequestContext,
                                          request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
    return await coordinator(ctx).consumer_group_heartbeat(request_info(ctx), request)
