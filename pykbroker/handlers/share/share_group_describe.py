"""ShareGroupDescribe v1 (KIP-932): state, epochs, assignor ("simple") and members with their assignments.

An unknown group is GROUP_ID_NOT_FOUND ("Group <id> not found."). UNSUPPORTED_VERSION while share groups are off.
As Kafka 4.2: a group the principal may not DESCRIBE is GROUP_AUTHORIZATION_FAILED (listed first), a group whose
members are assigned a topic the principal may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED without members, and
``include_authorized_operations`` answers the principal's operations on the group.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.authorized_operations import AUTHORIZED_OPERATIONS_OMITTED
from pykbroker.handlers.share._common import enabled, service, share_group
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    authorized_operations,
    filter_by_authorized,
)
from wire import ApiKey, ErrorCode
from wire.messages import ShareGroupDescribeRequest, ShareGroupDescribeResponse
from wire.messages.share_group_describe_response import Assignment, DescribedGroup, Member, TopicPartitions

HIDDEN_TOPICS = "The group has described topic(s) that the client is not authorized to describe."


def error_response(request: ShareGroupDescribeRequest | None, version: int, code: int) -> ShareGroupDescribeResponse:
    ids = [] if request is None else request.group_ids
    return ShareGroupDescribeResponse(groups=[DescribedGroup(group_id=g, error_code=code) for g in ids])


@handler(ApiKey.SHARE_GROUP_DESCRIBE, 1, 1, error_response=error_response)
async def handle_share_group_describe(ctx: RequestContext,
                                      request: ShareGroupDescribeRequest) -> ShareGroupDescribeResponse:
    if not enabled(ctx):
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    await service(ctx).groups_with_state()
    topics_by_id = ctx.metadata.topics_by_id
    refused = [g for g in request.group_ids if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g)]
    out = []
    for group_id in [g for g in request.group_ids if g not in refused]:
        if not service(ctx).coordinates(group_id):  # in a cluster, another broker coordinates it
            out.append(DescribedGroup(group_id=group_id, error_code=ErrorCode.NOT_COORDINATOR))
            continue
        code, group = await share_group(ctx, group_id)
        if code:
            out.append(DescribedGroup(group_id=group_id, error_code=code))
            continue
        if group is None:
            out.append(DescribedGroup(group_id=group_id, error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                      error_message=f"Group {group_id} not found."))
            continue
        members = []
        for m in group.members.values():
            tps = [TopicPartitions(topic_id=t, topic_name=topics_by_id[t].name, partitions=sorted(p))
                   for t, p in m.assignment.items() if t in topics_by_id]
            members.append(Member(member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
                                  client_id=m.client_id, client_host=m.client_host,
                                  subscribed_topic_names=list(m.subscribed_topic_names),
                                  assignment=Assignment(topic_partitions=tps)))
        authorized = AUTHORIZED_OPERATIONS_OMITTED
        if request.include_authorized_operations:
            authorized = authorized_operations(ctx, ResourceType.GROUP, group_id)
        out.append(DescribedGroup(group_id=group_id, error_code=ErrorCode.NONE, group_state=group.state,
                                  group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                  assignor_name="simple", members=members, authorized_operations=authorized))
    assigned = {tp.topic_name for g in out for m in g.members for tp in m.assignment.topic_partitions}
    describable = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, assigned) if assigned else set()
    out = [g if all(tp.topic_name in describable for m in g.members for tp in m.assignment.topic_partitions)
           else DescribedGroup(group_id=g.group_id, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                               error_message=HIDDEN_TOPICS, members=[]) for g in out]
    return ShareGroupDescribeResponse(groups=[
        *[DescribedGroup(group_id=g, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED) for g in refused], *out])
