"""TxnOffsetCommit v0-5: offsets committed inside a transaction (read-process-write).

The group coordinator writes them to __consumer_offsets as part of the producer's transaction; they
are visible to OffsetFetch only after the COMMIT marker (OffsetFetch with require_stable answers
UNSTABLE_OFFSET_COMMIT meanwhile). The group's partition must have been added with AddOffsetsToTxn
(checked as Kafka's transaction verification does); from v5 (transaction version 2) the commit adds
it itself. v2+: committed_leader_epoch. v3+: flexible, with member id, generation and group instance
id (KIP-447), checked against the group.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import request_info
from pykbroker.handlers.txn._common import transaction_coordinator
from pykbroker.registry import handler
from pykbroker.transaction_checks import check_transactional_write
from wire import ApiKey, ErrorCode
from wire.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from wire.messages.txn_offset_commit_response import (
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)


def error_response(request: TxnOffsetCommitRequest | None, version: int, code: int) -> TxnOffsetCommitResponse:
    if request is None:
        return TxnOffsetCommitResponse(topics=[])
    return TxnOffsetCommitResponse(topics=[
        TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions])
        for t in request.topics])


@handler(ApiKey.TXN_OFFSET_COMMIT, 0, 5, error_response=error_response)
async def handle_txn_offset_commit(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    groups = ctx.broker.group_coordinator
    tc = transaction_coordinator(ctx)
    if groups.coordinator_for(request.group_id) != ctx.broker.node_id:
        return error_response(request, ctx.api_version, ErrorCode.NOT_COORDINATOR)
    offsets_partition = tc.offsets_partition(request.group_id)
    # Transaction version 2 (v5+): the commit adds the group's partition itself; before, it must be in.
    code = await check_transactional_write(ctx.broker, request.transactional_id, request.producer_id,
                                           request.producer_epoch, offsets_partition, add=ctx.api_version >= 5,
                                           abortable_error=ctx.api_version >= 4)
    if code != ErrorCode.NONE:
        return error_response(request, ctx.api_version, code)
    return await groups.commit_transactional_offsets(request_info(ctx), request)
