"""WriteTxnMarkers v1-2: write COMMIT/ABORT markers to partitions this broker leads.

v2 (KIP-1228) names the transaction version of each marker (0/1: the classic protocol, 2: KIP-890's, whose
coordinator bumps the epoch with every transaction); the marker itself is written the same way, but a version-2
marker must carry a newer epoch than the producer's on the partition while its transaction is open (the same
epoch is a zombie's: INVALID_PRODUCER_EPOCH), as Kafka 4.4's ProducerAppendInfo.checkProducerEpoch; v1 markers
are version 0.

Every marker of a request, and every partition of a marker, is written at once (one append for a marker's data
partitions). Sent by transaction coordinators to partition leaders, and by the admin client's abortTransaction
(``kafka-transactions.sh abort``) to end a hanging transaction. Markers on __consumer_offsets go
through the group coordinator, which makes the transaction's offsets visible or drops them; it passes the
transaction version on, so the same epoch check guards them (Kafka 4.4's completeTransaction; refused, the
offsets stay pending). A marker
older than the partition's coordinator epoch gets TRANSACTION_COORDINATOR_FENCED.
"""

from __future__ import annotations

import asyncio
import logging

from coordinator.group.partitioner import GROUP_METADATA_TOPIC_NAME
from pykbroker.context import RequestContext
from pykbroker.handlers.txn._common import error_code, unknown_partitions
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from replication.replica_manager import storage_error_code
from storage import AppendOrigin
from wire import ApiKey, ControlRecordType, ErrorCode, build_control_batch
from wire.messages import WriteTxnMarkersRequest, WriteTxnMarkersResponse
from wire.messages.write_txn_markers_response import (
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopicResult,
)

log = logging.getLogger("pykbroker.handlers.write_txn_markers")


def error_response(request: WriteTxnMarkersRequest | None, version: int, code: int) -> WriteTxnMarkersResponse:
    markers = [] if request is None else request.markers
    return WriteTxnMarkersResponse(markers=[
        WritableTxnMarkerResult(producer_id=m.producer_id, topics=[
            WritableTxnMarkerTopicResult(name=t.name, partitions=[
                WritableTxnMarkerPartitionResult(partition_index=p, error_code=code) for p in t.partition_indexes])
            for t in m.topics])
        for m in markers])


async def _write_group_marker(ctx: RequestContext, marker, partition: int) -> int:
    try:
        await ctx.broker.group_coordinator.complete_transaction(
            partition, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, marker.transaction_result,
            transaction_version=marker.transaction_version)
    except Exception as exc:
        return error_code(exc)
    return ErrorCode.NONE


def _same_epoch_refused(ctx: RequestContext, marker, tp: tuple[str, int]) -> bool:
    """``ProducerStateManager.marker_epoch_fenced`` on a data partition this broker leads."""
    partition = ctx.broker.replica_manager.get_partition(*tp)
    if partition is None or not partition.is_leader:
        return False  # the append answers it (not hosted, not the leader)
    return partition.log.producer_state.marker_epoch_fenced(marker.producer_id, marker.producer_epoch,
                                                            marker.transaction_version)


async def _write_marker(ctx: RequestContext, marker, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """One marker's error code on each of its partitions: the data partitions' control batches in one append
    (one acks=all wait for them all, as Kafka's handler appends a marker's partitions together), the
    __consumer_offsets ones through the group coordinator alongside."""
    batch = build_control_batch(ControlRecordType.COMMIT if marker.transaction_result else ControlRecordType.ABORT,
                                producer_id=marker.producer_id, producer_epoch=marker.producer_epoch,
                                timestamp=ctx.broker.now_ms(), partition_leader_epoch=-1,
                                coordinator_epoch=marker.coordinator_epoch)
    refused = {tp: ErrorCode.INVALID_PRODUCER_EPOCH for tp in partitions
               if tp[0] != GROUP_METADATA_TOPIC_NAME and _same_epoch_refused(ctx, marker, tp)}
    data: dict[tuple[str, int], bytes | memoryview] = {tp: batch for tp in partitions
                                                       if tp[0] != GROUP_METADATA_TOPIC_NAME and tp not in refused}
    groups = [tp for tp in partitions if tp[0] == GROUP_METADATA_TOPIC_NAME]

    async def append() -> dict[tuple[str, int], int]:
        if not data:
            return {}
        try:
            results = await ctx.broker.replica_manager.append_records(
                data, -1, ctx.broker.config["request.timeout.ms"], origin=AppendOrigin.COORDINATOR)
        except Exception as exc:
            return dict.fromkeys(data, storage_error_code(exc)[0])
        return {tp: result.error_code for tp, result in results.items()}

    appended, group_codes = await asyncio.gather(
        append(), asyncio.gather(*(_write_group_marker(ctx, marker, p) for _, p in groups)))
    return {**refused, **appended, **dict(zip(groups, group_codes, strict=True))}


async def _marker_result(ctx: RequestContext, marker) -> WritableTxnMarkerResult:
    partitions = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
    unknown = unknown_partitions(ctx, partitions)
    codes = await _write_marker(ctx, marker, [tp for tp in partitions if tp not in unknown])
    topics: dict[str, list[WritableTxnMarkerPartitionResult]] = {}
    for tp in partitions:
        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else codes[tp]
        if code != ErrorCode.NONE:
            log.info("%s marker of producer id %d on %s-%d refused: %s (%s)",
                     "COMMIT" if marker.transaction_result else "ABORT", marker.producer_id, tp[0], tp[1],
                     ErrorCode(code).name, ctx.describe())
        topics.setdefault(tp[0], []).append(WritableTxnMarkerPartitionResult(partition_index=tp[1], error_code=code))
    return WritableTxnMarkerResult(producer_id=marker.producer_id, topics=[
        WritableTxnMarkerTopicResult(name=name, partitions=ps) for name, ps in topics.items()])


@handler(ApiKey.WRITE_TXN_MARKERS, 1, 2, error_response=error_response)
async def handle_write_txn_markers(ctx: RequestContext, request: WriteTxnMarkersRequest) -> WriteTxnMarkersResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER, log_if_denied=False) \
            and not authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    # Every marker at once, each partition's in the request's order (Kafka's handler appends them all and
    # answers when the last is replicated): one after the other, a coordinator's markers queued behind each
    # partition's acks=all wait in turn, seconds under load on a cluster.
    results = await asyncio.gather(*(_marker_result(ctx, marker) for marker in request.markers))
    return WriteTxnMarkersResponse(markers=list(results))
