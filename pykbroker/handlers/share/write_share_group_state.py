"""WriteShareGroupState v0-1 (KIP-932, broker to broker): a share-partition leader writes the state batches that
changed and its start offset (-1: unchanged). As Kafka 4.4, a share-partition without state is INVALID_REQUEST
"Write operation on uninitialized share partition not allowed.", and so are negative epochs; writes from an older
leader epoch or state epoch are FENCED_LEADER_EPOCH / FENCED_STATE_EPOCH. v1 adds the delivery complete count. CLUSTER_ACTION, else
CLUSTER_AUTHORIZATION_FAILED; NOT_COORDINATOR when the key's partition is not led here."""

from __future__ import annotations

from coordinator.share.state_batch import StateBatch
from pykbroker.context import RequestContext
from pykbroker.handlers.share._state import by_topic, cluster_action_allowed, coordinator, per_partition
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import WriteShareGroupStateRequest, WriteShareGroupStateResponse
from wire.messages.write_share_group_state_response import PartitionResult, WriteStateResult


def _result(p, code, message, _result=None) -> PartitionResult:
    return PartitionResult(partition=p.partition, error_code=code, error_message=message)


def error_response(request: WriteShareGroupStateRequest | None, version: int,
                   code: int) -> WriteShareGroupStateResponse:
    topics = [] if request is None else request.topics
    return WriteShareGroupStateResponse(results=[WriteStateResult(
        topic_id=t.topic_id, partitions=[_result(p, code, None) for p in t.partitions]) for t in topics])


@handler(ApiKey.WRITE_SHARE_GROUP_STATE, 0, 1, error_response=error_response)
async def handle_write_share_group_state(ctx: RequestContext, request: WriteShareGroupStateRequest
                                         ) -> WriteShareGroupStateResponse:
    if not cluster_action_allowed(ctx):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    sc = coordinator(ctx)

    def write(key, p):
        batches = [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                   for b in p.state_batches]
        return sc.write_state(key, p.state_epoch, p.leader_epoch, p.start_offset, batches,
                              p.delivery_complete_count if ctx.api_version >= 1 else -1)

    rows = await per_partition(ctx, request.group_id, request.topics, write,
                               what="write share group state")
    return WriteShareGroupStateResponse(results=[WriteStateResult(topic_id=t, partitions=ps)
                                                 for t, ps in by_topic(rows, _result).items()])
