"""ShareAcknowledge v1-2 (KIP-932): acknowledgements without fetching, in the member's share session.

Epoch 0 is INVALID_SHARE_SESSION_EPOCH (a session is opened by ShareFetch), n > 0 must be the session's
epoch, -1 closes the session after the acknowledgements (releasing what the member still holds). Each
partition answers its acknowledgement's error (INVALID_RECORD_STATE for records the member does not hold), as
Kafka 4.4: a partition this broker has not loaded (never fetched here, not led here, not initialized)
UNKNOWN_TOPIC_OR_PARTITION with its default message, a partition the topic does not have the same code without
one, an unknown topic id UNKNOWN_TOPIC_ID; the current leader only with NOT_LEADER_OR_FOLLOWER.
v2: RENEW (type 4) restarts the acquisition locks when ``is_renew_ack`` (else, and for unknown types, the
partition answers INVALID_REQUEST). Top-level errors carry no message, as Kafka 4.4's. UNSUPPORTED_VERSION while
share groups are off.
"""

from __future__ import annotations

import logging

from coordinator.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError
from pykbroker.context import RequestContext
from pykbroker.handlers.share._common import enabled, leader_of, member_id_valid, readable_topic_ids, service
from pykbroker.handlers.share._session import (
    acknowledge,
    close_session,
    parse_acks,
    session_for,
)
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import ShareAcknowledgeRequest, ShareAcknowledgeResponse
from wire.messages.share_acknowledge_response import (
    LeaderIdAndEpoch,
    PartitionData,
    ShareAcknowledgeTopicResponse,
)

log = logging.getLogger("pykbroker.handlers.share_acknowledge")


def error_response(request: ShareAcknowledgeRequest | None, version: int, code: int,
                   message: str | None = None) -> ShareAcknowledgeResponse:
    """Kafka 4.4's ShareAcknowledgeRequest.getErrorResponse: the code only (``message`` is for the log)."""
    return ShareAcknowledgeResponse(error_code=code, responses=[])


@handler(ApiKey.SHARE_ACKNOWLEDGE, 1, 2, error_response=error_response)
async def handle_share_acknowledge(ctx: RequestContext, request: ShareAcknowledgeRequest) -> ShareAcknowledgeResponse:
    if not enabled(ctx):
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    group_id, member_id, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id or not member_id_valid(member_id):
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST,
                              "Invalid group id or member id in the request.")
    if epoch == INITIAL_EPOCH:
        return error_response(request, ctx.api_version, ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                              "Acknowledge request cannot open a share session")
    acks = parse_acks(group_id, request.topics)
    try:
        session_for(ctx, group_id, member_id, epoch, [])
    except ShareSessionError as exc:
        log.info("ShareAcknowledge of group %s member %s refused: %s (%s)", group_id, member_id, exc, ctx.describe())
        return error_response(request, ctx.api_version, exc.code, str(exc))
    codes = await acknowledge(ctx, group_id, member_id, acks, readable_topic_ids(ctx, {k[1] for k in acks}),
                              ctx.api_version >= 2 and request.is_renew_ack)
    if epoch == FINAL_EPOCH:
        await close_session(ctx, group_id, member_id)
    by_topic: dict = {}
    for (_, topic_id, index), (code, message) in codes.items():
        by_topic.setdefault(topic_id, []).append(PartitionData(
            partition_index=index, error_code=code, error_message=message,
            current_leader=_leader(ctx, topic_id, index, code)))
    lock_ms = service(ctx).settings(group_id).record_lock_duration_ms
    return ShareAcknowledgeResponse(error_code=ErrorCode.NONE, acquisition_lock_timeout_ms=lock_ms,
                                    responses=[ShareAcknowledgeTopicResponse(topic_id=t, partitions=p)
                                               for t, p in by_topic.items()], node_endpoints=[])


def _leader(ctx: RequestContext, topic_id, index: int, error: int) -> LeaderIdAndEpoch:
    leader_id, leader_epoch = leader_of(ctx, topic_id, index, error)
    return LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
