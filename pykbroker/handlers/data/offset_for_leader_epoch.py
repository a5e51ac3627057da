"""OffsetForLeaderEpoch v2-4.

For each partition: the end offset of the requested leader epoch (the start offset of the next larger
epoch, or the log end offset for the current one) and that epoch, from the leader-epoch cache; epochs
older than the first known one answer UNDEFINED (-1, -1). current_leader_epoch fences stale clients.
- v3+: replica_id (consumers send -1). v4+: flexible.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize_cluster, filter_by_authorized
from replication.partition import PartitionError
from wire import ApiKey, ErrorCode
from wire.messages import OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from wire.messages.offset_for_leader_epoch_response import EpochEndOffset, OffsetForLeaderTopicResult


def error_response(request: OffsetForLeaderEpochRequest | None, version: int,
                   code: int) -> OffsetForLeaderEpochResponse:
    topics = [] if request is None else request.topics
    return OffsetForLeaderEpochResponse(topics=[
        OffsetForLeaderTopicResult(topic=t.topic, partitions=[
            EpochEndOffset(error_code=code, partition=p.partition, leader_epoch=-1, end_offset=-1)
            for p in t.partitions])
        for t in topics])


@handler(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4, error_response=error_response)
async def handle_offset_for_leader_epoch(ctx: RequestContext,
                                         request: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
    rm = ctx.broker.replica_manager
    topics = []
    refused = []  # after the others, as Kafka: CLUSTER_ACTION allows all, else DESCRIBE on each topic
    names = [t.topic for t in request.topics]
    describable = set(names) if authorize_cluster(ctx, AclOperation.CLUSTER_ACTION, log_if_denied=False) else \
        filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
    for t in request.topics:
        if t.topic not in describable:
            refused.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=[EpochEndOffset(
                partition=p.partition, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, leader_epoch=-1, end_offset=-1)
                for p in t.partitions]))
            continue
        parts = []
        for p in t.partitions:
            answer = EpochEndOffset(partition=p.partition, leader_epoch=-1, end_offset=-1)
            try:
                partition = rm.leader_partition(t.topic, p.partition, p.current_leader_epoch)
                answer.leader_epoch, answer.end_offset = partition.log.end_offset_for_epoch(p.leader_epoch)
            except PartitionError as exc:
                answer.error_code = exc.code
            parts.append(answer)
        topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=parts))
    return OffsetForLeaderEpochResponse(topics=topics + refused)
