"""DescribeTransactions v0: state, producer, timeout, start time and partitions of transactional ids.

Unknown ids get TRANSACTIONAL_ID_NOT_FOUND; ids coordinated elsewhere NOT_COORDINATOR.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import TxnError, transaction_coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import DescribeTransactionsRequest, DescribeTransactionsResponse
from wire.messages.describe_transactions_response import TopicData, TransactionState


def _error_state(transactional_id: str, code: int) -> TransactionState:
    return TransactionState(error_code=code, transactional_id=transactional_id, transaction_state="",
                            transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                            producer_epoch=-1, topics=[])


def error_response(request: DescribeTransactionsRequest | None, version: int,
                   code: int) -> DescribeTransactionsResponse:
    ids = [] if request is None else request.transactional_ids
    return DescribeTransactionsResponse(transaction_states=[_error_state(i, code) for i in ids])


@handler(ApiKey.DESCRIBE_TRANSACTIONS, 0, 0, error_response=error_response)
async def handle_describe_transactions(ctx: RequestContext,
                                       request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    tc = transaction_coordinator(ctx)
    states = []
    for transactional_id in request.transactional_ids:
        if not authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            states.append(_error_state(transactional_id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        try:
            m = await tc.describe(transactional_id)
        except TxnError as exc:
            states.append(_error_state(transactional_id, exc.error_code))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(m.partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(TransactionState(
            error_code=ErrorCode.NONE, transactional_id=transactional_id, transaction_state=m.state.display_name,
            transaction_timeout_ms=m.timeout_ms, transaction_start_time_ms=m.start_timestamp_ms,
            producer_id=m.producer_id, producer_epoch=m.producer_epoch,
            topics=[TopicData(topic=t, partitions=ps) for t, ps in by_topic.items()  # only describable topics
                    if authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, t)]))
    return DescribeTransactionsResponse(transaction_states=states)
