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

__all__ = ["check_transactional_write", "check_transactional_writes"]

log = logging.getLogger("pykbroker.transactions")

TopicPartition = tuple[str, int]
ADD_PARTITIONS_VERSION = 5
# The inter-broker channel of these checks: their own connection to the coordinator's broker, as Kafka's
# AddPartitionsToTxnManager has its own NetworkClient, so a check never queues behind a slow WriteTxnMarkers.
CHANNEL = "txn-verification"


async def check_transactional_write(broker: BrokerServices, transactional_id: str, producer_id: int, producer_epoch: int,
                                    tp: TopicPartition, *, add: bool, abortable_error: bool) -> int:
    """The error a transactional write to ``tp`` gets (NONE: it may proceed); see ``check_transactional_writes``."""
    codes = await check_transactional_writes(broker, transactional_id, producer_id, producer_epoch, [tp], add=add,
                                             abortable_error=abortable_error)
    return codes[tp]


async def check_transactional_writes(broker: BrokerServices, transactional_id: str, producer_id: int,
                                     producer_epoch: int, tps: list[TopicPartition], *, add: bool,
                                     abortable_error: bool) -> dict[TopicPartition, int]:
    """The error each transactional write of one request to ``tps`` gets (NONE: it may proceed), checked in one
    call (one AddPartitionsToTxn, one transaction-state write), as Kafka's AddPartitionsToTxnManager batches them.

    ``add``: transaction version 2, the writes add ``tps`` to the transaction. Otherwise each partition must be
    in the ongoing transaction; ``abortable_error`` (Produce v11+, TxnOffsetCommit v4+) says whether a
    partition outside it is TRANSACTION_ABORTABLE or INVALID_TXN_STATE.
    """
    coordinator = broker.transaction_coordinator
    node = coordinator.coordinator_for(transactional_id)
    if node == broker.node_id:
        if add:
            code = await coordinator.add_partitions_from_broker(transactional_id, producer_id, producer_epoch, tps)
            return dict.fromkeys(tps, ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else code)
        return {tp: coordinator.verify_partition(transactional_id, producer_id, producer_epoch, tp,
                                                 abortable_error=abortable_error) for tp in tps}
    if node is None or node < 0:  # __transaction_state not known here yet, or the partition has no leader
        return dict.fromkeys(tps, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    by_topic: dict[str, list[int]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append(partition)
    request = AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnTransaction(
        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
        verify_only=not add, topics=[AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()])])
    try:
        response = await broker.broker_clients.get(node, CHANNEL).request(request, ADD_PARTITIONS_VERSION,
                                                                          AddPartitionsToTxnResponse)
    except BrokerConnectionError as exc:
        log.info("transaction check of transactional.id=%s with broker %d failed: %s", transactional_id, node, exc)
        return dict.fromkeys(tps, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    answered = {(t.name, p.partition_index): p.partition_error_code for r in response.results_by_transaction
                for t in r.topic_results for p in t.results_by_partition}
    return {tp: _leader_code(response.error_code or answered.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR),
                             abortable_error) for tp in tps}


def _leader_code(code: int, abortable_error: bool) -> int:
    """The coordinator's answer as a partition leader maps it for the write (Kafka's AddPartitionsToTxnManager)."""
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code == ErrorCode.TRANSACTION_ABORTABLE and not abortable_error:
        return ErrorCode.INVALID_TXN_STATE
    return code
