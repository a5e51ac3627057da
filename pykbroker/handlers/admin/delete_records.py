"""DeleteRecords v0-2: move partitions' log start offsets (offset -1 means the high watermark)."""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from storage.errors import OffsetOutOfRangeError
from wire import ApiKey, ErrorCode
from wire.messages import DeleteRecordsRequest, DeleteRecordsResponse
from wire.messages.delete_records_response import DeleteRecordsPartitionResult, DeleteRecordsTopicResult

log = logging.getLogger("pykbroker.handlers.delete_records")

HIGH_WATERMARK = -1


def error_response(request: DeleteRecordsRequest | None, version: int, code: int) -> DeleteRecordsResponse:
    topics = [] if request is None else request.topics
    return DeleteRecordsResponse(topics=[DeleteRecordsTopicResult(name=t.name, partitions=[
        DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=-1, error_code=code)
        for p in t.partitions]) for t in topics])


def delete_before(ctx: RequestContext, topic: str, partition: int, offset: int) -> tuple[int, int]:
    """(error code, new low watermark) for one partition."""
    p = ctx.broker.replica_manager.partitions.get((topic, partition))
    if p is None:  # as Kafka: NOT_LEADER_OR_FOLLOWER when the metadata has it (its log still being created)
        return ctx.not_hosted_error(topic, partition), -1
    log_ = p.log
    if not log_.config.delete:
        log.info("DeleteRecords on %s-%d refused: cleanup.policy has no delete (%s)", topic, partition, ctx.describe())
        return ErrorCode.POLICY_VIOLATION, -1
    target = log_.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    try:
        low_watermark = log_.delete_records_before(target)
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, -1
    log.info("DeleteRecords: %s-%d now starts at %d (%s)", topic, partition, low_watermark, ctx.describe())
    return ErrorCode.NONE, low_watermark


@handler(ApiKey.DELETE_RECORDS, 0, 2, error_response=error_response)
async def handle_delete_records(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics = []
    deletable = filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        if t.name not in deletable:
            topics.append(error_response(DeleteRecordsRequest(topics=[t]), ctx.api_version,
                                         ErrorCode.TOPIC_AUTHORIZATION_FAILED).topics[0])
            continue
        results = []
        for p in t.partitions:
            code, low = delete_before(ctx, t.name, p.partition_index, p.offset)
            results.append(DeleteRecordsPartitionResult(partition_index=p.partition_index, low_watermark=low,
                                                        error_code=code))
        topics.append(DeleteRecordsTopicResult(name=t.name, partitions=results))
    return DeleteRecordsResponse(topics=topics)
