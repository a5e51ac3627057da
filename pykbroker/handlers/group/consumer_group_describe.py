"""ConsumerGroupDescribe v0-1: consumer groups (KIP-848) with members, epochs, assignments and targets.

- v1: each member's type (0 consumer protocol, 1 classic protocol).
UNSUPPORTED_VERSION for every group when the consumer protocol is off (rebalance protocols or group.version).
Groups that do not exist or are not consumer groups get GROUP_ID_NOT_FOUND; authorized operations
when asked (no ACLs yet: READ, DELETE, DESCRIBE).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import consumer_protocol_enabled, coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    authorized_operations,
    filter_by_authorized,
)
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
    refused = [g for g in request.group_ids if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    allowed = [g for g in request.group_ids if g not in refused]
    groups = await coordinator(ctx).consumer_group_describe(request_info(ctx), allowed) if allowed else []
    if request.include_authorized_operations:
        for g in groups:
            if g.error_code == 0:
                g.authorized_operations = authorized_operations(ctx, ResourceType.GROUP, g.group_id)
    # Kafka 4.4: a group whose members are assigned topics the principal may not describe is not described.
    assigned = {tp.topic_name for g in groups for m in g.members for a in (m.assignment, m.target_assignment)
                if a is not None for tp in a.topic_partitions}
    describable = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, assigned) if assigned else set()
    groups = [g if all(tp.topic_name in describable for m in g.members for a in (m.assignment, m.target_assignment)
                       if a is not None for tp in a.topic_partitions)
              else DescribedGroup(group_id=g.group_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                  error_message=HIDDEN_TOPICS, members=[]) for g in groups]
    return ConsumerGroupDescribeResponse(groups=[
        *[DescribedGroup(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, members=[]) for g in refused],
        *groups])


HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."
