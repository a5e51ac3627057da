"""AddPartitionsToTxn v0-5.

- v0-3 (clients): one transaction; its partitions join the producer's transaction (starting it).
- v4+ (brokers, KIP-890): several transactions, each possibly ``verify_only`` (which partitions are
  already in the ongoing transaction), with a top-level error code. v3+: flexible.
- Partitions the cluster does not know get UNKNOWN_TOPIC_OR_PARTITION and the others of the same
  transaction OPERATION_NOT_ATTEMPTED, without reaching the coordinator; a coordinator error
  (PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, NOT_COORDINATOR, ...) applies to every partition;
  v0-1 get INVALID_PRODUCER_EPOCH for PRODUCER_FENCED, as Kafka answers them.
- v4+ adds (not ``verify_only``) come from the leader of a partition a transaction version 2 write goes to:
  CONCURRENT_TRANSACTIONS is retried here first (``TransactionCoordinator.add_partitions_from_broker``).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import TxnError, for_version, transaction_coordinator, unknown_partitions
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    authorize_cluster,
    filter_by_authorized,
)
from pykbroker.topic_names import INTERNAL_TOPICS
from wire import ApiKey, ErrorCode
from wire.messages import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from wire.messages.add_partitions_to_txn_response import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopicResult,
)


def _results(codes: dict[tuple[str, int], int]) -> list[AddPartitionsToTxnTopicResult]:
    by_topic: dict[str, list[AddPartitionsToTxnPartitionResult]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(
            AddPartitionsToTxnPartitionResult(partition_index=partition, partition_error_code=code))
    return [AddPartitionsToTxnTopicResult(name=t, results_by_partition=ps) for t, ps in by_topic.items()]


def _partitions(topics) -> list[tuple[str, int]]:
    return [(t.name, p) for t in topics for p in t.partitions]


def error_response(request: AddPartitionsToTxnRequest | None, version: int, code: int) -> AddPartitionsToTxnResponse:
    if version >= 4:
        return AddPartitionsToTxnResponse(error_code=code, results_by_transaction=[])
    partitions = [] if request is None else _partitions(request.v3_and_below_topics)
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_results(dict.fromkeys(partitions, code)))


async def _add(ctx: RequestContext, transactional_id: str, producer_id: int, epoch: int,
               partitions: list[tuple[str, int]], verify_only: bool) -> dict[tuple[str, int], int]:
    unknown = unknown_partitions(ctx, partitions)
    refused: set[tuple[str, int]] = set()
    if ctx.api_version < 4:  # from clients: WRITE on the transactional id and on each (non-internal) topic
        if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
            return dict.fromkeys(partitions, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        writable = filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC,
                                        [t for t, _ in partitions if t not in INTERNAL_TOPICS])
        refused = {tp for tp in partitions if tp[0] not in writable}
    if unknown or refused:
        return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED if tp in refused else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED for tp in partitions}
    tc = transaction_coordinator(ctx)
    if verify_only:
        return await tc.verify_partitions(transactional_id, producer_id, epoch, partitions)
    if ctx.api_version >= 4:  # from the leader of a partition a transaction version 2 write goes to
        return dict.fromkeys(partitions, await tc.add_partitions_from_broker(transactional_id, producer_id, epoch,
                                                                             partitions))
    try:
        await tc.add_partitions(transactional_id, producer_id, epoch, partitions)
    except TxnError as exc:
        return dict.fromkeys(partitions, exc.error_code)
    return dict.fromkeys(partitions, ErrorCode.NONE)




@handler(ApiKey.ADD_PARTITIONS_TO_TXN, 0, 5, error_response=error_response)
async def handle_add_partitions_to_txn(ctx: RequestContext,
                                       request: AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse:
    if ctx.api_version < 4:
        codes = await _add(ctx, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                           request.v3_and_below_producer_epoch, _partitions(request.v3_and_below_topics), False)
        codes = {tp: for_version(code, ctx.api_version, 2) for tp, code in codes.items()}
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_results(codes))
    if not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):  # v4+ come from brokers
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    results = []
    for txn in request.transactions:
        codes = await _add(ctx, txn.transactional_id, txn.producer_id, txn.producer_epoch, _partitions(txn.topics),
                           txn.verify_only)
        results.append(AddPartitionsToTxnResult(transactional_id=txn.transactional_id, topic_results=_results(codes)))
    return AddPartitionsToTxnResponse(error_code=ErrorCode.NONE, results_by_transaction=results)
