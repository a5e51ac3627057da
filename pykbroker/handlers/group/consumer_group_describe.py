"""ConsumerGroupDescribe v0-1: consumer groups (KIP-848) with members, epochs, assignments and targets.

- v1: each member's type (0 consumer protocol, 1 classic protocol).
UNSUPPORTED_VERSION for every group when the consumer protocol is off (rebalance protocols or group.version).
Groups that do not exist or are not consumer groups get GROUP_ID_NOT_FOUND; authorized operations
when asked (no ACLs yet: READ, DELETE, DESCRIBE).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import consumer_protocol_enabled, coordinator, request_info
from pykbroker.handlers.group.describe_groups import GROUP_OPERATIONS
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse
from wire.messages.consumer_group_describe_response import DescribedGroup


def error_response(request: ConsumerGroupDescribeRequest | None, version: int,
                   code: int) -> ConsumerGroupDescribeResponse:
    ids = [] if request is None else request.group_ids
    return ConsumerGroupDescribeResponse(groups=[DescribedGroup(group_id=g, error_code=code, members=[])
                                                 for g in ids])


@handler(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1, error_response=error_response)
async def handle_consumer_group_describe(ctx: RequestContext,
                                         request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
    if not consumer_protocol_enabled(ctx):  # as Kafka: every group gets UNSUPPORTED_VERSION
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    groups = await coordinator(ctx).consumer_group_describe(request_info(ctx), list(request.group_ids))
    if request.include_authorized_operations:
        for g in groups:
            if g.error_code == 0:
                g.authorized_operations = GROUP_OPERATIONS
    return ConsumerGroupDescribeResponse(groups=groups)
