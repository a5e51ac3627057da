"""ReadShareGroupState v0 (KIP-932, broker to broker): a share-partition leader reads the persisted state of its
share-partitions (state epoch, start offset, state batches). Its leader epoch is checked and recorded: a lower
one than the coordinator knows is FENCED_LEADER_EPOCH. As Kafka 4.4, a share-partition without state is
INVALID_REQUEST "Read operation on uninitialized share partition not allowed." (its leader reads only state the
group coordinator initialized), and so are a negative leader epoch or partition and a zero topic id. CLUSTER_ACTION, else CLUSTER_AUTHORIZATION_FAILED; NOT_COORDINATOR when not led here."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.share._state import by_topic, cluster_action_allowed, coordinator, per_partition
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import ReadShareGroupStateRequest, ReadShareGroupStateResponse
from wire.messages.read_share_group_state_response import PartitionResult, ReadStateResult, StateBatch


def _result(p, code, message, state=None) -> PartitionResult:
    if state is None:  # an error: Kafka's error answer leaves the state epoch and start offset 0
        return PartitionResult(partition=p.partition, error_code=code, error_message=message, state_epoch=0,
                               start_offset=0)
    return PartitionResult(partition=p.partition, error_code=code, error_message=message,
                           state_epoch=state.state_epoch, start_offset=state.start_offset, state_batches=[
                               StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                          delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                               for b in state.state_batches])


def error_response(request: ReadShareGroupStateRequest | None, version: int, code: int) -> ReadShareGroupStateResponse:
    topics = [] if request is None else request.topics
    return ReadShareGroupStateResponse(results=[ReadStateResult(
        topic_id=t.topic_id, partitions=[_result(p, code, None) for p in t.partitions]) for t in topics])


@handler(ApiKey.READ_SHARE_GROUP_STATE, 0, 0, error_response=error_response)
async def handle_read_share_group_state(ctx: RequestContext, request: ReadShareGroupStateRequest
                                        ) -> ReadShareGroupStateResponse:
    if not cluster_action_allowed(ctx):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    sc = coordinator(ctx)
    rows = await per_partition(ctx, request.group_id, request.topics,
                               lambda key, p: sc.read_state_request(key, p.leader_epoch),
                               what="read share group state")
    return ReadShareGroupStateResponse(results=[ReadStateResult(topic_id=t, partitions=ps)
                                                for t, ps in by_topic(rows, _result).items()])
