"""DescribeProducers v0: the active producers of partitions this broker leads (kafka-transactions.sh).

Per producer: id, epoch, last sequence, last timestamp, coordinator epoch and the first offset of
its open transaction (-1 when none).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from pykbroker.topic_names import topic_name_error
from wire import ApiKey, ErrorCode
from wire.messages import DescribeProducersRequest, DescribeProducersResponse
from wire.messages.describe_producers_response import PartitionResponse, ProducerState, TopicResponse


def error_response(request: DescribeProducersRequest | None, version: int, code: int) -> DescribeProducersResponse:
    topics = [] if request is None else request.topics
    return DescribeProducersResponse(topics=[
        TopicResponse(name=t.name, partitions=[
            PartitionResponse(partition_index=p, error_code=code, error_message=None, active_producers=[])
            for p in t.partition_indexes])
        for t in topics])


def _describe(ctx: RequestContext, topic: str, index: int) -> PartitionResponse:
    partition = ctx.broker.replica_manager.get_partition(topic, index)
    if partition is None:
        return PartitionResponse(partition_index=index, error_code=ctx.not_hosted_error(topic, index),
                                 error_message=None, active_producers=[])
    if not partition.is_leader:
        return PartitionResponse(partition_index=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                 error_message=None, active_producers=[])
    producers = [
        ProducerState(producer_id=e.producer_id, producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                      last_timestamp=e.last_timestamp, coordinator_epoch=e.coordinator_epoch,
                      current_txn_start_offset=-1 if e.current_txn_first_offset is None
                      else e.current_txn_first_offset)
        for e in sorted(partition.log.producer_state.producers.values(), key=lambda e: e.producer_id)]
    return PartitionResponse(partition_index=index, error_code=ErrorCode.NONE, error_message=None,
                             active_producers=producers)


@handler(ApiKey.DESCRIBE_PRODUCERS, 0, 0, error_response=error_response)
async def handle_describe_producers(ctx: RequestContext, request: DescribeProducersRequest) -> DescribeProducersResponse:
    return DescribeProducersResponse(topics=[
        TopicResponse(name=t.name, partitions=[_describe(ctx, t.name, p) for p in t.partition_indexes])
        if topic_name_error(t.name) is not None or authorize(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)
        else TopicResponse(name=t.name, partitions=[PartitionResponse(
            partition_index=p, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, error_message="Topic authorization failed.",
            active_producers=[]) for p in t.partition_indexes])
        for t in request.topics])
