"""DescribeTopicPartitions v0 (KIP-966; what the Java admin client's describeTopics uses).

Topics come back sorted by name, all of them when the request names none. At most
``response_partition_limit`` partitions (and never more than max.request.partition.size.limit) are
answered; when that cuts a topic or leaves topics out, ``next_cursor`` says where the next request starts.
"""

from __future__ import annotations

from collections.abc import Collection

from pykbroker.context import RequestContext
from pykbroker.handlers.authorized_operations import AUTHORIZED_OPERATIONS_OMITTED
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, authorized_operations
from pykbroker.topic_names import INTERNAL_TOPICS, topic_name_error
from replication.metadata.image import MetadataImage, PartitionState, partition_leader_view
from wire import ZERO_UUID, ApiKey, ErrorCode
from wire.messages import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from wire.messages.describe_topic_partitions_response import (
    Cursor,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)

MAX_PARTITIONS_PER_RESPONSE = 2000  # Kafka's max.request.partition.size.limit default


class CursorError(Exception):
    """The cursor names a topic the request does not cover (INVALID_REQUEST)."""


def error_response(request: DescribeTopicPartitionsRequest | None, version: int, code: int
                   ) -> DescribeTopicPartitionsResponse:
    topics = [] if request is None else request.topics
    return DescribeTopicPartitionsResponse(topics=[
        DescribeTopicPartitionsResponseTopic(error_code=code, name=t.name, topic_id=ZERO_UUID, partitions=[])
        for t in topics], next_cursor=None)


def _partition(image: MetadataImage, p: PartitionState, listener: str,
               lost: Collection[int]) -> DescribeTopicPartitionsResponsePartition:
    _, leader, offline = partition_leader_view(image, p, listener, lost)
    return DescribeTopicPartitionsResponsePartition(  # no error code: Kafka answers a leaderless one with leader -1
        error_code=ErrorCode.NONE, partition_index=p.partition, leader_id=leader, leader_epoch=p.leader_epoch,
        replica_nodes=list(p.replicas), isr_nodes=list(p.isr), eligible_leader_replicas=list(p.elr),
        last_known_elr=list(p.last_known_elr),
        offline_replicas=offline)


def _failed(name: str, code: int) -> DescribeTopicPartitionsResponseTopic:
    return DescribeTopicPartitionsResponseTopic(error_code=code, name=name, topic_id=ZERO_UUID, is_internal=False,
                                                partitions=[], topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


@handler(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, 0, error_response=error_response)
async def handle_describe_topic_partitions(ctx: RequestContext, request: DescribeTopicPartitionsRequest
                                           ) -> DescribeTopicPartitionsResponse:
    store = ctx.metadata
    names = sorted({t.name for t in request.topics}) if request.topics else sorted(store.topics)
    # Topics the principal may not describe: left out of "all topics", TOPIC_AUTHORIZATION_FAILED when named.
    describable = {n for n in names if authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n,
                                                 log_if_denied=bool(request.topics))}
    refused = [_failed(n, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for n in names if n not in describable]
    names = [n for n in names if n in describable]
    cursor = request.cursor
    if cursor is not None:
        if cursor.topic_name not in names:
            return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST)
        names = [n for n in names if n >= cursor.topic_name]
    remaining = max(1, min(request.response_partition_limit, MAX_PARTITIONS_PER_RESPONSE))
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor = None
    for i, name in enumerate(names):
        message = topic_name_error(name)
        if message is not None:
            topics.append(_failed(name, ErrorCode.INVALID_TOPIC_EXCEPTION))
            continue
        topic = store.topics.get(name)
        if topic is None:
            topics.append(_failed(name, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        if remaining == 0:
            next_cursor = Cursor(topic_name=name, partition_index=0)
            break
        start = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        chosen = [p for p in topic.partitions if p.partition >= start][:remaining]
        remaining -= len(chosen)
        topics.append(DescribeTopicPartitionsResponseTopic(
            error_code=ErrorCode.NONE, name=name, topic_id=topic.topic_id, is_internal=name in INTERNAL_TOPICS,
            topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
            partitions=[_partition(store, p, ctx.listener.name, ctx.broker.lost_replicas(name, p.partition))
                        for p in chosen]))
        last = chosen[-1].partition if chosen else start - 1
        if remaining == 0 and last + 1 < len(topic.partitions):
            next_cursor = Cursor(topic_name=name, partition_index=last + 1)
            break
        if remaining == 0 and any(n in store.topics for n in names[i + 1:]):
            next_cursor = Cursor(topic_name=next(n for n in names[i + 1:] if n in store.topics), partition_index=0)
            break
    for t in topics:
        assert t.name is not None  # every described topic has its name
        t.topic_authorized_operations = authorized_operations(ctx, ResourceType.TOPIC, t.name)
    return DescribeTopicPartitionsResponse(topics=topics + (refused if request.topics else []),
                                           next_cursor=next_cursor)
