"""InitProducerId v0-5 (Kafka 4.4: v6, two-phase commit, is not yet stable).

- Idempotent producers (no transactional id): a fresh producer id with epoch 0 every time, as Kafka
  does (also when v3+ clients send their current id to recover from UNKNOWN_PRODUCER_ID).
- Transactional producers: the transaction coordinator bumps the epoch of the transactional id (or
  hands out its first producer id), fencing older producers; an open transaction of a previous
  producer is aborted first (CONCURRENT_TRANSACTIONS, the client retries).
- v0-3: PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH. v2+: flexible. v3+: producer_id/producer_epoch in the request (KIP-360 epoch bumps).
"""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import TxnError, for_version, transaction_coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    authorize_by_resource_type,
    authorize_cluster,
)
from wire import ApiKey, ErrorCode
from wire.messages import InitProducerIdRequest, InitProducerIdResponse

log = logging.getLogger("pykbroker.handlers.init_producer_id")


def error_response(request: InitProducerIdRequest | None, version: int, code: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)


@handler(ApiKey.INIT_PRODUCER_ID, 0, 5, error_response=error_response)
async def handle_init_producer_id(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
            return error_response(request, ctx.api_version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    elif not authorize_cluster(ctx, AclOperation.IDEMPOTENT_WRITE, log_if_denied=False) \
            and not authorize_by_resource_type(ctx, AclOperation.WRITE, ResourceType.TOPIC):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if request.transactional_id is None:
        producer_id = ctx.broker.producer_ids.next_producer_id()
        return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
    expected_id, expected_epoch = (request.producer_id, request.producer_epoch) if ctx.api_version >= 3 else (-1, -1)
    try:
        producer_id, epoch = await transaction_coordinator(ctx).init_producer_id(
            request.transactional_id, request.transaction_timeout_ms, expected_id, expected_epoch)
    except TxnError as exc:
        if exc.error_code != ErrorCode.CONCURRENT_TRANSACTIONS:
            log.info("InitProducerId for transactional.id=%s refused: %s (%s)", request.transactional_id, exc,
                     ctx.describe())
        return error_response(request, ctx.api_version, for_version(exc.error_code, ctx.api_version, 4))
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=epoch)
