"""InitializeShareGroupState v0 (KIP-932, broker to broker): the share coordinator writes a fresh state for each
share-partition (its state epoch and start offset, no batches). CLUSTER_ACTION, else every partition is
CLUSTER_AUTHORIZATION_FAILED; NOT_COORDINATOR where this broker does not lead the key's partition."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.share._state import by_topic, cluster_action_allowed, coordinator, per_partition
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import InitializeShareGroupStateRequest, InitializeShareGroupStateResponse
from wire.messages.initialize_share_group_state_response import InitializeStateResult, PartitionResult


def _result(p, code, message, _result=None) -> PartitionResult:
    return PartitionResult(partition=p.partition, error_code=code, error_message=message)


def error_response(request: InitializeShareGroupStateRequest | None, version: int,
                   code: int) -> InitializeShareGroupStateResponse:
    topics = [] if request is None else request.topics
    return InitializeShareGroupStateResponse(results=[InitializeStateResult(
        topic_id=t.topic_id, partitions=[_result(p, code, None) for p in t.partitions]) for t in topics])


@handler(ApiKey.INITIALIZE_SHARE_GROUP_STATE, 0, 0, error_response=error_response)
async def handle_initialize_share_group_state(ctx: RequestContext, request: InitializeShareGroupStateRequest
                                              ) -> InitializeShareGroupStateResponse:
    if not cluster_action_allowed(ctx):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    sc = coordinator(ctx)
    rows = await per_partition(ctx, request.group_id, request.topics,
                               lambda key, p: sc.initialize_state(key, p.state_epoch, p.start_offset),
                               what="initialize share group state")
    return InitializeShareGroupStateResponse(results=[InitializeStateResult(topic_id=t, partitions=ps)
                                                      for t, ps in by_topic(rows, _result).items()])
