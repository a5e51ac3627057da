"""InitProducerId v0-5 (Kafka 4.1: v6, two-phase commit, is not yet stable).

- Idempotent producers (no transactional id): a fresh producer id with epoch 0 every time, as Kafka
  does (also when v3+ clients send their current id to recover from UNKNOWN_PRODUCER_ID).
- Transactional producers: answered by the transaction coordinator once it exists; until then
  COORDINATOR_NOT_AVAILABLE, which clients treat as retriable.
- v2+: flexible. v3+: producer_id/producer_epoch in the request.
"""

from __future__ import annotations

import logging

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from wire import ApiKey, ErrorCode
from wire.messages import InitProducerIdRequest, InitProducerIdResponse

log = logging.getLogger("pykbroker.handlers.init_producer_id")


def error_response(request: InitProducerIdRequest | None, version: int, code: int) -> InitProducerIdResponse:
    return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)


@handler(ApiKey.INIT_PRODUCER_ID, 0, 5, error_response=error_response)
async def handle_init_producer_id(ctx: RequestContext, request: InitProducerIdRequest) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        coordinator = getattr(ctx.broker, "transaction_coordinator", None)
        if coordinator is None:
            log.info("InitProducerId for transactional.id=%s refused: no transaction coordinator yet (%s)",
                     request.transactional_id, ctx.describe())
            return error_response(request, ctx.api_version, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return await coordinator.init_producer_id(ctx, request)
    producer_id = ctx.broker.producer_ids.next_producer_id()
    return InitProducerIdResponse(error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
