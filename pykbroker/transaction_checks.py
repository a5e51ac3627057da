"""Whether a transactional write may proceed, asked of the transaction coordinator wherever it runs.

A partition leader that takes a transactional write (Produce, TxnOffsetCommit) first checks it with the
producer's transaction coordinator (KIP-890): with transaction version 2 (Produce v12+, TxnOffsetCommit
v5+) the write adds its partition to the transaction; before that, with
``transaction.partition.verification.enable``, the partition must already be in it. When the coordinator
is this broker the check is a call; otherwise it is an AddPartitionsToTxn v5 request to the coordinator's
broker (``verify_only`` for the older check), as Kafka's AddPartitionsToTxnManager sends. Either way the
answer is the error the write gets, mapped as Kafka's partition leaders map it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from replication.broker_client import BrokerConnectionError
from wire import ErrorCode
from wire.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from wire.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction

if TYPE_CHECKING:
    from pykbroker.services import BrokerServices

__all__ = ["check_transactional_write"]

log = logging.getLogger("pykbroker.transactions")

TopicPartition = tuple[str, int]
ADD_PARTITIONS_VERSION = 5


async def check_transactional_write(broker: BrokerServices, transactional_id: str, producer_id: int, producer_epoch: int,
                                    tp: TopicPartition, *, add: bool, abortable_error: bool) -> int:
    """The error a transactional write to ``tp`` gets (NONE: it may proceed).

    ``add``: transaction version 2, the write adds ``tp`` to the transaction. Otherwise ``tp`` must be in
    the ongoing transaction; ``abortable_error`` (Produce v11+, TxnOffsetCommit v4+) says whether a
    partition outside it is TRANSACTION_ABORTABLE or INVALID_TXN_STATE.
    """
    coordinator = broker.transaction_coordinator
    node = coordinator.coordinator_for(transactional_id)
    if node == broker.node_id:
        if add:
            return await coordinator.add_partition_from_write(transactional_id, producer_id, producer_epoch, tp)
        return coordinator.verify_partition(transactional_id, producer_id, producer_epoch, tp,
                                            abortable_error=abortable_error)
    if node is None or node < 0:  # __transaction_state not known here yet, or the partition has no leader
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    request = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnTransaction(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=not add, topics=[AddPartitionsToTxnTopic(name=tp[0], partitions=[tp[1]])])])
    try:
        response = await broker.broker_clients.get(node).request(request, ADD_PARTITIONS_VERSION,
                                                                 AddPartitionsToTxnResponse)
    except BrokerConnectionError as exc:
        log.info("transaction check of transactional.id=%s with broker %d failed: %s", transactional_id, node, exc)
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    code = response.error_code
    if code == ErrorCode.NONE:
        code = next((p.partition_error_code for r in response.results_by_transaction for t in r.topic_results
                     for p in t.results_by_partition if (t.name, p.partition_index) == tp),
                    ErrorCode.UNKNOWN_SERVER_ERROR)
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and not abortable_error:
        return ErrorCode.INVALID_TXN_STATE
    return code
