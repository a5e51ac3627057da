"""TxnOffsetCommit v0-6: offsets committed inside a transaction (read-process-write).

The group coordinator writes them to __consumer_offsets as part of the producer's transaction; they
are visible to OffsetFetch only after the COMMIT marker (OffsetFetch with require_stable answers
UNSTABLE_OFFSET_COMMIT meanwhile). The group's partition must have been added with AddOffsetsToTxn
(checked as Kafka's transaction verification does); from v5 (transaction version 2) the commit adds
it itself. v2+: committed_leader_epoch. v3+: flexible, with member id, generation and group instance
id (KIP-447), checked against the group. v6+ (KIP-1319): topics by id, not name; an unknown id is
UNKNOWN_TOPIC_ID, answered first with the refused topics, in the request's order, as Kafka 4.4.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import request_info
from pykbroker.handlers.group._topic_ids import answer_by_id, topic_name
from pykbroker.handlers.txn._common import transaction_coordinator
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from pykbroker.transaction_checks import check_transactional_write
from wire import ApiKey, ErrorCode
from wire.messages import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from wire.messages.txn_offset_commit_response import (
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
)


def error_response(request: TxnOffsetCommitRequest | None, version: int, code: int) -> TxnOffsetCommitResponse:
    if request is None:
        return TxnOffsetCommitResponse(topics=[])
    return TxnOffsetCommitResponse(topics=[
        TxnOffsetCommitResponseTopic(name=t.name, topic_id=t.topic_id, partitions=[
            TxnOffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
            for p in t.partitions])
        for t in request.topics])


@handler(ApiKey.TXN_OFFSET_COMMIT, 0, 6, error_response=error_response)
async def handle_txn_offset_commit(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id):
        return error_response(request, ctx.api_version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    by_id = ctx.api_version >= 6
    if by_id:
        for t in request.topics:
            t.name = topic_name(ctx, t.topic_id) or ""
    readable = filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC,
                                    (t.name for t in request.topics if t.name or not by_id))
    refused_response = []
    for t in request.topics:  # in the request's order, as Kafka's checks answer them
        if by_id and not t.name:
            refused_response += error_response(TxnOffsetCommitRequest(topics=[t]), ctx.api_version,
                                               ErrorCode.UNKNOWN_TOPIC_ID).topics
        elif t.name not in readable:
            refused_response += error_response(TxnOffsetCommitRequest(topics=[t]), ctx.api_version,
                                               ErrorCode.TOPIC_AUTHORIZATION_FAILED).topics
    if refused_response:  # answered first; the rest goes on (nothing left: answered at once, as Kafka)
        request.topics = [t for t in request.topics if t.name in readable and (t.name or not by_id)]
        response = (await _commit(ctx, request) if request.topics else TxnOffsetCommitResponse(topics=[]))
        response.topics = refused_response + list(response.topics)
    else:
        response = await _commit(ctx, request)
    if by_id:
        answer_by_id(ctx, response.topics)
    return response


async def _commit(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    """The readable topics' offsets, through the transaction's checks and the group coordinator."""
    groups = ctx.broker.group_coordinator
    tc = transaction_coordinator(ctx)
    if groups.coordinator_for(request.group_id) != ctx.broker.node_id:
        return error_response(request, ctx.api_version, ErrorCode.NOT_COORDINATOR)
    offsets_partition = tc.offsets_partition(request.group_id)
    # Transaction version 2 (v5+): the commit adds the group's partition itself; before, it must be in.
    code = await check_transactional_write(ctx.broker, request.transactional_id, request.producer_id,
                                           request.producer_epoch, offsets_partition, add=ctx.api_version >= 5,
                                           abortable_error=ctx.api_version >= 4)
    if code != ErrorCode.NONE:
        return error_response(request, ctx.api_version, code)
    return await groups.commit_transactional_offsets(request_info(ctx), request)
