"""ReadShareGroupStateSummary v0-1 (KIP-932, broker to broker): the state epoch, leader epoch and start offset of
share-partitions (describing a share group's offsets); v1 adds the delivery complete count (offsets at or above
the start offset acknowledged or archived). No state: state and leader epoch 0, start offset and delivery complete
count -1, no error (Kafka 4.4's answer; ``persister.summary_has_state`` tells it apart); an error leaves the
fields at their defaults (epochs and offset 0, count -1). CLUSTER_ACTION, else
CLUSTER_AUTHORIZATION_FAILED; NOT_COORDINATOR when the key's partition is not led here."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.share._state import by_topic, cluster_action_allowed, coordinator, per_partition
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import ReadShareGroupStateSummaryRequest, ReadShareGroupStateSummaryResponse
from wire.messages.read_share_group_state_summary_response import PartitionResult, ReadStateSummaryResult


def _result(p, code, message, state=None) -> PartitionResult:
    if state is None and code == ErrorCode.NONE:
        return PartitionResult(partition=p.partition, error_code=code, error_message=message, state_epoch=0,
                               leader_epoch=0, start_offset=-1, delivery_complete_count=-1)
    if state is None:  # an error: the fields at their defaults, as Kafka 4.4 answers
        return PartitionResult(partition=p.partition, error_code=code, error_message=message)
    return PartitionResult(partition=p.partition, error_code=code, error_message=message,
                           state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                           start_offset=state.start_offset, delivery_complete_count=state.delivery_complete_count)


def error_response(request: ReadShareGroupStateSummaryRequest | None, version: int,
                   code: int) -> ReadShareGroupStateSummaryResponse:
    topics = [] if request is None else request.topics
    return ReadShareGroupStateSummaryResponse(results=[ReadStateSummaryResult(
        topic_id=t.topic_id, partitions=[_result(p, code, None) for p in t.partitions]) for t in topics])


@handler(ApiKey.READ_SHARE_GROUP_STATE_SUMMARY, 0, 1, error_response=error_response)
async def handle_read_share_group_state_summary(ctx: RequestContext, request: ReadShareGroupStateSummaryRequest
                                                ) -> ReadShareGroupStateSummaryResponse:
    if not cluster_action_allowed(ctx):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    sc = coordinator(ctx)
    rows = await per_partition(ctx, request.group_id, request.topics, lambda key, p: sc.read_summary(key),
                               what="read share group state summary")
    return ReadShareGroupStateSummaryResponse(results=[ReadStateSummaryResult(topic_id=t, partitions=ps)
                                                       for t, ps in by_topic(rows, _result).items()])
