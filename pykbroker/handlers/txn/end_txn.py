"""EndTxn v0-5: commit or abort the producer's transaction.

The answer comes once the decision is durable in __transaction_state; on one node the markers and
the completed state are written before it too, so the next transaction can start at once.
v0-1: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH. v3+: flexible. v5+: transaction version 2
(KIP-890): every end bumps the epoch, and the answer carries the producer id and epoch to use next.
"""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import TxnError, for_version, transaction_coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import EndTxnRequest, EndTxnResponse

log = logging.getLogger("pykbroker.handlers.end_txn")


def error_response(request: EndTxnRequest | None, version: int, code: int) -> EndTxnResponse:
    return EndTxnResponse(error_code=code, producer_id=-1, producer_epoch=-1)


@handler(ApiKey.END_TXN, 0, 5, error_response=error_response)
async def handle_end_txn(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return error_response(request, ctx.api_version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    try:
        producer_id, epoch = await transaction_coordinator(ctx).end_transaction(
            request.transactional_id, request.producer_id, request.producer_epoch, request.committed,
            client_version=2 if ctx.api_version >= 5 else 0)
    except TxnError as exc:
        if exc.error_code != ErrorCode.CONCURRENT_TRANSACTIONS:
            log.info("EndTxn(%s) for transactional.id=%s refused: %s (%s)",
                     "commit" if request.committed else "abort", request.transactional_id, exc, ctx.describe())
        return error_response(request, ctx.api_version, for_version(exc.error_code, ctx.api_version, 2))
    return EndTxnResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=epoch)
