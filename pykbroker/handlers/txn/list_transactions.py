"""ListTransactions v0-2: the transactional ids this broker coordinates.

Filters: states (unknown names are echoed in ``unknown_state_filters``), producer ids, v1+ a minimum
running duration in ms, v2+ a regular expression the whole transactional id must match.
"""

from __future__ import annotations

import re

from coordinator.transaction.metadata import TxnState
from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import TxnError, transaction_coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import ListTransactionsRequest, ListTransactionsResponse
from wire.messages.list_transactions_response import TransactionState


def error_response(request: ListTransactionsRequest | None, version: int, code: int) -> ListTransactionsResponse:
    return ListTransactionsResponse(error_code=code, unknown_state_filters=[], transaction_states=[])


@handler(ApiKey.LIST_TRANSACTIONS, 0, 2, error_response=error_response)
async def handle_list_transactions(ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    states, unknown = set(), []
    for name in request.state_filters:
        state = TxnState.from_display_name(name)
        if state is None:
            unknown.append(name)
        else:
            states.add(state)
    if request.state_filters and not states:
        return ListTransactionsResponse(error_code=ErrorCode.NONE, unknown_state_filters=unknown, transaction_states=[])
    duration = request.duration_filter if ctx.api_version >= 1 else -1
    pattern = request.transactional_id_pattern if ctx.api_version >= 2 else None
    if pattern:
        try:
            re.compile(pattern)
        except re.error:
            return ListTransactionsResponse(error_code=ErrorCode.INVALID_REGULAR_EXPRESSION,
                                            unknown_state_filters=unknown, transaction_states=[])
    try:
        listed = await transaction_coordinator(ctx).list_transactions(states, set(request.producer_id_filters),
                                                                      duration, pattern)
    except TxnError as exc:
        return error_response(request, ctx.api_version, exc.error_code)
    return ListTransactionsResponse(error_code=ErrorCode.NONE, unknown_state_filters=unknown, transaction_states=[
        TransactionState(transactional_id=m.transactional_id, producer_id=m.producer_id,
                         transaction_state=m.state.display_name)
        for m in sorted(listed, key=lambda m: m.transactional_id)
        if authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, m.transactional_id)])
