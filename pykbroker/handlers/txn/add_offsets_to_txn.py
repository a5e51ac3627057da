"""AddOffsetsToTxn v0-4: the group's __consumer_offsets partition joins the producer's transaction.

The producer then sends TxnOffsetCommit to the group coordinator; the offsets become visible when
the transaction commits. v0-1: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH. v3+: flexible.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import TxnError, for_version, transaction_coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse


def error_response(request: AddOffsetsToTxnRequest | None, version: int, code: int) -> AddOffsetsToTxnResponse:
    return AddOffsetsToTxnResponse(error_code=code)


@handler(ApiKey.ADD_OFFSETS_TO_TXN, 0, 4, error_response=error_response)
async def handle_add_offsets_to_txn(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return error_response(request, ctx.api_version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    tc = transaction_coordinator(ctx)
    if not request.group_id:
        return error_response(request, ctx.api_version, ErrorCode.INVALID_GROUP_ID)
    try:
        await ctx.broker.group_coordinator.ensure_offsets_topic()
        await tc.add_partitions(request.transactional_id, request.producer_id, request.producer_epoch,
                                [tc.offsets_partition(request.group_id)])
    except TxnError as exc:
        return error_response(request, ctx.api_version, for_version(exc.error_code, ctx.api_version, 2))
    return AddOffsetsToTxnResponse(error_code=ErrorCode.NONE)
