"""DeleteShareGroupState v0 (KIP-932, broker to broker): the share coordinator deletes the state of share-partitions
(tombstones in __share_group_state). CLUSTER_ACTION, else CLUSTER_AUTHORIZATION_FAILED; NOT_COORDINATOR when the
key's partition is not led here."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.share._state import by_topic, cluster_action_allowed, coordinator, per_partition
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import DeleteShareGroupStateRequest, DeleteShareGroupStateResponse
from wire.messages.delete_share_group_state_response import DeleteStateResult, PartitionResult


def _result(p, code, message, _result=None) -> PartitionResult:
    return PartitionResult(partition=p.partition, error_code=code, error_message=message)


def error_response(request: DeleteShareGroupStateRequest | None, version: int,
                   code: int) -> DeleteShareGroupStateResponse:
    topics = [] if request is None else request.topics
    return DeleteShareGroupStateResponse(results=[DeleteStateResult(
        topic_id=t.topic_id, partitions=[_result(p, code, None) for p in t.partitions]) for t in topics])


@handler(ApiKey.DELETE_SHARE_GROUP_STATE, 0, 0, error_response=error_response)
async def handle_delete_share_group_state(ctx: RequestContext, request: DeleteShareGroupStateRequest
                                          ) -> DeleteShareGroupStateResponse:
    if not cluster_action_allowed(ctx):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    sc = coordinator(ctx)
    rows = await per_partition(ctx, request.group_id, request.topics, lambda key, p: sc.delete_state(key),
                               what="delete share group state")
    return DeleteShareGroupStateResponse(results=[DeleteStateResult(topic_id=t, partitions=ps)
                                                  for t, ps in by_topic(rows, _result).items()])
