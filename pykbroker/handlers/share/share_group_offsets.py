"""DescribeShareGroupOffsets v0-1, AlterShareGroupOffsets v0, DeleteShareGroupOffsets v0 (KIP-932 admin).

In a cluster only the group's coordinator answers; the other brokers say NOT_COORDINATOR.
A share group's "offset" of a partition is its share-partition start offset, read from __share_group_state.
- Describe: the listed partitions (``topics`` null: every partition with state); no state is start offset -1,
  leader epoch 0, also for a topic that does not exist (zero topic id, no error) and for a group that does not
  exist (no error; ``topics`` null: none), as Kafka 4.4 answers them.
  v1 adds the lag: records from the start offset to the high watermark not yet acknowledged or archived.
- Alter (``kafka-share-groups --reset-offsets``): only while the group has no members (NON_EMPTY_GROUP);
  each partition starts again at the given offset with a new state epoch.
- Delete: only while empty; the state of the named topics' initialized share-partitions is deleted (a topic with
  none, or unknown, is UNKNOWN_TOPIC_OR_PARTITION), and the group initializes them again when a member subscribes.
- Alter marks the partitions initialized, so a member subscribing later is assigned them at once.
UNSUPPORTED_VERSION while share groups are off.

ACLs as Kafka 4.2 checks them: Describe needs DESCRIBE on the group (else the group's GROUP_AUTHORIZATION_FAILED)
and on each topic (named topics: TOPIC_AUTHORIZATION_FAILED partitions after the others; all topics: those
not describable are left out); Alter needs READ on the group and on each topic; Delete DELETE on the group and
READ on each topic (TOPIC_AUTHORIZATION_FAILED topics first).
"""

from __future__ import annotations

import logging

from coordinator.share.service import NO_OFFSETS
from pykbroker.context import RequestContext
from pykbroker.handlers.share._common import UNKNOWN_TOPIC_MESSAGE, enabled, service, share_group
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ZERO_UUID, ApiKey, ErrorCode
from wire.messages import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from wire.messages.alter_share_group_offsets_response import (
    AlterShareGroupOffsetsResponsePartition,
    AlterShareGroupOffsetsResponseTopic,
)
from wire.messages.delete_share_group_offsets_response import DeleteShareGroupOffsetsResponseTopic
from wire.messages.describe_share_group_offsets_response import (
    DescribeShareGroupOffsetsResponseGroup,
    DescribeShareGroupOffsetsResponsePartition,
    DescribeShareGroupOffsetsResponseTopic,
)
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

log = logging.getLogger("pykbroker.handlers.share_group_offsets")

LATEST_TIMESTAMP = -1  # ListOffsets: the high watermark (read_uncommitted)
LIST_OFFSETS_VERSION = 7

TOPIC_AUTHORIZATION_MESSAGE = "Topic authorization failed."  # Errors.TOPIC_AUTHORIZATION_FAILED.message()


async def _group_exists(ctx: RequestContext, group_id: str) -> bool:
    svc = service(ctx)
    return (await share_group(ctx, group_id))[1] is not None or bool(await svc.states(group_id))


async def _high_watermark(ctx: RequestContext, topic: str, index: int) -> int | None:
    """The partition's high watermark: from this broker if it leads the partition, else asked of its leader
    (ListOffsets, latest), as Kafka asks the leader when the answering coordinator holds no replica."""
    partition = ctx.broker.replica_manager.get_partition(topic, index)
    if partition is not None and partition.is_leader:
        return partition.log.high_watermark
    state = ctx.metadata.partition(topic, index)
    if state is None or state.leader < 0 or not ctx.broker.cluster_mode:
        return partition.log.high_watermark if partition is not None else None
    request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(name=topic, partitions=[
        ListOffsetsPartition(partition_index=index, current_leader_epoch=-1, timestamp=LATEST_TIMESTAMP)])])
    try:
        response = await ctx.broker.broker_clients.get(state.leader).request(request, LIST_OFFSETS_VERSION,
                                                                             ListOffsetsResponse)
        answer = response.topics[0].partitions[0]
    except Exception as exc:
        log.info("high watermark of %s-%d from broker %d: %s", topic, index, state.leader, exc)
        return None
    return answer.offset if answer.error_code == ErrorCode.NONE else None


# -- describe ----------------------------------------------------------------------------------------------
def describe_error(request: DescribeShareGroupOffsetsRequest | None, version: int,
                   code: int) -> DescribeShareGroupOffsetsResponse:
    groups = [] if request is None else request.groups
    return DescribeShareGroupOffsetsResponse(groups=[DescribeShareGroupOffsetsResponseGroup(
        group_id=g.group_id, error_code=code, topics=[]) for g in groups])


@handler(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, 0, 1, error_response=describe_error)
async def handle_describe_share_group_offsets(ctx: RequestContext, request: DescribeShareGroupOffsetsRequest
                                              ) -> DescribeShareGroupOffsetsResponse:
    if not enabled(ctx):
        return describe_error(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    svc = service(ctx)
    store = ctx.metadata
    out = []
    for g in request.groups:
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id):
            out.append(DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[],
                                                              error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED))
            continue
        if not svc.coordinates(g.group_id):  # a cluster's other brokers: the client finds the coordinator
            out.append(DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[],
                                                              error_code=ErrorCode.NOT_COORDINATOR))
            continue
        states = await svc.states(g.group_id)
        if (await share_group(ctx, g.group_id))[0]:  # a group of another type (unchanged from 4.2's answer)
            out.append(DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=[],
                                                              error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                                                              error_message=f"Group {g.group_id} not found."))
            continue
        denied: dict[str, list[int]] = {}
        if g.topics is None:  # every topic with state, less those the principal may not describe (unlogged)
            wanted: dict[str, list[int]] = {}
            for (_, topic_id, index) in sorted(states, key=lambda k: (str(k[1]), k[2])):
                topic = store.topics_by_id.get(topic_id)
                if topic is not None:
                    wanted.setdefault(topic.name, []).append(index)
            wanted = {name: indexes for name, indexes in wanted.items()
                      if authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, name, log_if_denied=False)}
        else:
            wanted = {}
            for t in g.topics:
                allowed = authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic_name)
                (wanted if allowed else denied)[t.topic_name] = list(t.partitions)
        topics = []
        for name, indexes in wanted.items():
            topic = store.topics.get(name)
            if topic is None:  # Kafka 4.4: no error, the zero topic id, the partitions without state
                topics.append(DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
                    DescribeShareGroupOffsetsResponsePartition(partition_index=i, start_offset=-1, leader_epoch=0,
                                                               lag=-1) for i in indexes]))
                continue
            parts = []
            for i in indexes:
                state = states.get((g.group_id, topic.topic_id, i))
                start, lag, epoch = -1, -1, 0  # no state: the share coordinator's summary of none
                if state is not None:
                    start = state.start_offset
                    epoch = state.leader_epoch
                    hw = await _high_watermark(ctx, name, i) if start >= 0 else None  # -1: no lag yet
                    if hw is not None:
                        lag = state.lag(hw)
                parts.append(DescribeShareGroupOffsetsResponsePartition(partition_index=i, start_offset=start,
                                                                        leader_epoch=epoch, lag=lag))
            topics.append(DescribeShareGroupOffsetsResponseTopic(topic_name=name, topic_id=topic.topic_id,
                                                                 partitions=parts))
        topics.extend(DescribeShareGroupOffsetsResponseTopic(topic_name=name, partitions=[
            DescribeShareGroupOffsetsResponsePartition(
                partition_index=i, start_offset=-1, lag=-1, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                error_message=TOPIC_AUTHORIZATION_MESSAGE) for i in indexes]) for name, indexes in denied.items())
        out.append(DescribeShareGroupOffsetsResponseGroup(group_id=g.group_id, topics=topics))
    return DescribeShareGroupOffsetsResponse(groups=out)


# -- alter -------------------------------------------------------------------------------------------------
def alter_error(request: AlterShareGroupOffsetsRequest | None, version: int, code: int,
                message: str | None = None) -> AlterShareGroupOffsetsResponse:
    return AlterShareGroupOffsetsResponse(error_code=code, error_message=message, responses=[])


@handler(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, 0, error_response=alter_error)
async def handle_alter_share_group_offsets(ctx: RequestContext, request: AlterShareGroupOffsetsRequest
                                           ) -> AlterShareGroupOffsetsResponse:
    if not enabled(ctx):
        return alter_error(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return alter_error(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    svc = service(ctx)
    if not svc.coordinates(request.group_id):  # only the coordinator knows whether the group has members
        return alter_error(request, ctx.api_version, ErrorCode.NOT_COORDINATOR)
    code, group = await share_group(ctx, request.group_id)
    if code:
        return alter_error(request, ctx.api_version, code)
    if group is not None and group.members:
        return alter_error(request, ctx.api_version, ErrorCode.NON_EMPTY_GROUP,
                           "The group is not empty.")
    group = await svc.ensure_group(request.group_id)  # its epoch is the state epoch of the offsets written
    store = ctx.metadata
    denied, responses = [], []
    for t in request.topics:
        topic = store.topics.get(t.topic_name)
        if not authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name):
            denied.append(AlterShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=topic.topic_id if topic is not None else ZERO_UUID, partitions=[
                    AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index,
                                                            error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                            error_message=TOPIC_AUTHORIZATION_MESSAGE)
                    for p in t.partitions]))
            continue
        parts, reset = [], []
        for p in t.partitions:
            code, message = ErrorCode.NONE, None
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                code, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic or partition does not exist."
            else:
                try:
                    await svc.partitions.reset((request.group_id, topic.topic_id, p.partition_index), p.start_offset,
                                               group.group_epoch)
                    reset.append(p.partition_index)
                    log.info("share group %s %s-%d: start offset reset to %d (%s)", request.group_id, t.topic_name,
                             p.partition_index, p.start_offset, ctx.describe())
                except Exception as exc:
                    code = getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR)
                    message = str(exc)
            if reset and topic is not None:  # initialized: assigned as soon as a member subscribes
                await svc.mark_initialized(request.group_id, topic.topic_id, reset)
            parts.append(AlterShareGroupOffsetsResponsePartition(partition_index=p.partition_index, error_code=code,
                                                                 error_message=message))
        responses.append(AlterShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, topic_id=topic.topic_id if topic is not None else ZERO_UUID, partitions=parts))
    return AlterShareGroupOffsetsResponse(error_code=ErrorCode.NONE, responses=denied + responses)


# -- delete ------------------------------------------------------------------------------------------------
def delete_error(request: DeleteShareGroupOffsetsRequest | None, version: int, code: int,
                 message: str | None = None) -> DeleteShareGroupOffsetsResponse:
    return DeleteShareGroupOffsetsResponse(error_code=code, error_message=message, responses=[])


@handler(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, 0, error_response=delete_error)
async def handle_delete_share_group_offsets(ctx: RequestContext, request: DeleteShareGroupOffsetsRequest
                                            ) -> DeleteShareGroupOffsetsResponse:
    if not enabled(ctx):
        return delete_error(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return delete_error(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = [t for t in request.topics if authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.topic_name)]
    svc = service(ctx)
    if not svc.coordinates(request.group_id):
        return delete_error(request, ctx.api_version, ErrorCode.NOT_COORDINATOR)
    if not await _group_exists(ctx, request.group_id):
        return delete_error(request, ctx.api_version, ErrorCode.GROUP_ID_NOT_FOUND,
                            f"Group {request.group_id} not found.")
    group = (await share_group(ctx, request.group_id))[1]
    if group is not None and group.members:
        return delete_error(request, ctx.api_version, ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    store = ctx.metadata
    responses = [DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name,
                                                      error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                      error_message=TOPIC_AUTHORIZATION_MESSAGE)
                 for t in request.topics if t not in readable]
    known = {t.topic_name: store.topics[t.topic_name].topic_id for t in readable if t.topic_name in store.topics}
    outcome = await svc.delete_offsets(request.group_id, {topic_id: name for name, topic_id in known.items()})
    for t in readable:
        topic_id = known.get(t.topic_name)
        why = outcome.get(topic_id) if topic_id is not None else UNKNOWN_TOPIC_MESSAGE
        if why is None:
            responses.append(DeleteShareGroupOffsetsResponseTopic(topic_name=t.topic_name,
                                                                  topic_id=known[t.topic_name],
                                                                  error_code=ErrorCode.NONE))
        elif topic_id is None or why == NO_OFFSETS:  # unknown topic, or none of its share-partitions initialized
            responses.append(DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, error_message=why))
        else:
            responses.append(DeleteShareGroupOffsetsResponseTopic(
                topic_name=t.topic_name, topic_id=known[t.topic_name], error_code=ErrorCode.UNKNOWN_SERVER_ERROR,
                error_message=why))
    return DeleteShareGroupOffsetsResponse(error_code=ErrorCode.NONE, responses=responses)
