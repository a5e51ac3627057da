"""ShareFetch v1-2 (KIP-932): acknowledge (piggybacked) and acquire records for the member.

- Share session: epoch 0 opens it with the listed partitions (acknowledgements there are INVALID_REQUEST),
  n > 0 continues it (adding ``topics``, dropping ``forgotten_topics_data``), -1 closes it after its
  acknowledgements and releases what the member still holds. A wrong epoch is INVALID_SHARE_SESSION_EPOCH,
  a missing session SHARE_SESSION_NOT_FOUND (top-level errors).
- Records come from the first available offset of each share-partition, whole batches up to
  ``max_records`` (v2 ``share_acquire_mode`` 1 stops at exactly ``max_records``), long-polling up to
  ``max_wait_ms`` for ``min_bytes``. ``max_bytes`` is capped by the broker's ``fetch.max.bytes`` and shared
  equally among the share-partitions read. As Kafka 4.4, the session's partitions are tried in an order rotated
  by the session epoch, and a partition that answered records moves to the end of the session, so that none
  starves the others when ``max_records`` or ``max_bytes`` binds. Only share-partitions already loaded are read; when none is
  loaded yet, the first to load (its state read from the share coordinator) is the only one served, as Kafka 4.4
  completes a delayed share fetch once one share-partition finishes initializing. Each partition answers its acquired ranges with their delivery count
  and the batches holding them (new records past ``batch_size`` in ranges of at least that many, cut at log
  batch boundaries); ``acquisition_lock_timeout_ms`` is the group's lock duration.
- Piggybacked acknowledgements and the acquisition run as in Kafka 4.4, where they start together and a
  record's new state counts once persisted: the first acquisition attempt does not see the records this
  request's own acknowledgements release. Only a fetch that found nothing and may wait (``max_wait_ms`` > 0)
  acquires them, woken by their release (with their delivery count raised). With ``max_wait_ms`` 0 they stay
  available for the next fetch, as Kafka 4.4 answers. (Kafka's fetch is not ordered after the persist: it
  acquires the released records instead when the persist wins, e.g. while the previous fetch still holds the
  share-partition's fetch lock, released after its answer is sent. pykbroker always answers the usual order.)
- v2: ``is_renew_ack`` means only acknowledgements (RENEW allowed), no new records; max_bytes, min_bytes,
  max_records and max_wait_ms must then be 0 (else INVALID_REQUEST, the session epoch not advanced). A RENEW
  without it, or an unknown type, is the partition's acknowledge error INVALID_REQUEST; the fetch goes on.
- Top-level errors carry no message, as Kafka 4.4's (its getErrorResponse keeps the code only).
- A full session (epoch 0) answers every partition but those still loading (left out, as Kafka 4.4's answer leaves
  out the share-partitions its fetch could not acquire); later requests only those with records, errors or
  acknowledgement results. The current leader is filled only for NOT_LEADER_OR_FOLLOWER and
  FENCED_LEADER_EPOCH (zeros else, as Kafka 4.4). A request that acknowledges anything has an acknowledgement result for every partition
  it names (error 0 for those without batches and for batches below the start offset, done already), a closing
  one (epoch -1) answers exactly those, as Kafka 4.4. A share-partition the group coordinator never initialized (no persisted state, e.g.
  a topic the group is not subscribed to) gets no records and no state: UNKNOWN_SERVER_ERROR once the fetch
  waited out ``max_wait_ms`` empty, left out when other partitions answer records (Kafka 4.4's answers).
  UNSUPPORTED_VERSION while share groups are off.
- Client quotas: no more than ``consumer_byte_rate`` allows in one quota window is read; the answered bytes count
  against it, and over it (or over ``request_percentage``) the answer is empty with a throttle time the broker
  waits out, the bytes not counted, as Kafka 4.4's: what was acquired stays locked to the member until its lock
  expires.
"""

from __future__ import annotations

import logging

from coordinator.share.share_partition_manager import ShareFetchResult
from coordinator.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSessionError
from pykbroker.context import RequestContext
from pykbroker.handlers.share._common import enabled, leader_of, member_id_valid, readable_topic_ids, service
from pykbroker.handlers.share._session import (
    acknowledge,
    close_session,
    parse_acks,
    partition_exists,
    session_for,
)
from pykbroker.registry import handler
from pykbroker.request_time import request_throttle_ms
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize
from wire import ApiKey, ErrorCode
from wire.messages import ShareFetchRequest, ShareFetchResponse
from wire.messages.share_fetch_response import (
    AcquiredRecords,
    LeaderIdAndEpoch,
    PartitionData,
    ShareFetchableTopicResponse,
)

log = logging.getLogger("pykbroker.handlers.share_fetch")

RECORD_LIMIT = 1  # ShareAcquireMode: 0 batch-optimized, 1 record-limit


def error_response(request: ShareFetchRequest | None, version: int, code: int,
                   message: str | None = None) -> ShareFetchResponse:
    """Kafka 4.4's ShareFetchRequest.getErrorResponse: the code only (``message`` is for the log)."""
    return ShareFetchResponse(error_code=code, responses=[])


@handler(ApiKey.SHARE_FETCH, 1, 2, error_response=error_response)
async def handle_share_fetch(ctx: RequestContext, request: ShareFetchRequest) -> ShareFetchResponse:
    if not enabled(ctx):
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    group_id, member_id, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if not group_id or not member_id_valid(member_id):
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST,
                              "Invalid group id or member id in the request.")
    renew = ctx.api_version >= 2 and request.is_renew_ack
    if renew and (request.max_bytes or request.min_bytes or request.max_records or request.max_wait_ms):
        log.info("ShareFetch of group %s member %s refused: a renewing fetch must set maxBytes, minBytes, "
                 "maxRecords and maxWaitMs to 0 (%s)", group_id, member_id, ctx.describe())
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST)
    acks = parse_acks(group_id, request.topics)
    if acks and epoch == INITIAL_EPOCH:
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST,
                              "Acknowledge data present on initial epoch")
    svc = service(ctx)
    added = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
    forgotten = [(f.topic_id, p) for f in request.forgotten_topics_data for p in f.partitions]
    try:
        session = session_for(ctx, group_id, member_id, epoch, added)
    except ShareSessionError as exc:
        log.info("ShareFetch of group %s member %s refused: %s (%s)", group_id, member_id, exc, ctx.describe())
        return error_response(request, ctx.api_version, exc.code, str(exc))
    if epoch > INITIAL_EPOCH:
        svc.sessions.update(session, added, forgotten)

    topics_by_id = ctx.metadata.topics_by_id
    readable = readable_topic_ids(ctx, {t for t, _ in session.partitions} | {k[1] for k in acks})
    settings = svc.settings(group_id)
    results: dict = {}
    fetching = epoch != FINAL_EPOCH and not renew
    keys = [(group_id, t, p) for t, p in session.partitions if t in readable and partition_exists(ctx, t, p)] \
        if fetching else []
    if fetching and epoch == INITIAL_EPOCH:  # offsets may have been reset since this broker cached a share-partition
        await svc.partitions.revalidate(keys)

    # as Kafka 4.4: no more than the broker's fetch.max.bytes and the client's consumer_byte_rate quota allows in one
    # window is read
    max_bytes = int(min(request.max_bytes, ctx.broker.config.fetch_max_bytes,
                        ctx.broker.fetch_quota.max_value_in_window(ctx.user, ctx.client_id or "")))

    async def fetch(max_wait_ms: int) -> dict:
        return await svc.partitions.fetch(
            group_id, member_id, keys, max_wait_ms=max_wait_ms, min_bytes=min(request.min_bytes, max_bytes),
            max_bytes=max_bytes, max_records=request.max_records if request.max_records > 0 else 500,
            record_limit=ctx.api_version >= 2 and request.share_acquire_mode == RECORD_LIMIT,
            batch_size=request.batch_size, session_epoch=epoch)

    # The first acquisition attempt goes before the acknowledgements land (see the docstring).
    first = await fetch(0) if fetching and acks else {}
    ack_codes = await acknowledge(ctx, group_id, member_id, acks, readable, renew) if acks else {}
    if epoch == FINAL_EPOCH:
        await close_session(ctx, group_id, member_id)
    elif fetching:
        results = {(group_id, t, p): ShareFetchResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                   for t, p in session.partitions if t in topics_by_id and t not in readable}
        results |= {(group_id, t, p): ShareFetchResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    for t, p in session.partitions if t in readable and not partition_exists(ctx, t, p)}
        if acks and (any(r.acquired or (r.error_code and not r.uninitialized) for r in first.values())
                     or request.max_wait_ms <= 0):
            results |= first
        else:
            results |= await fetch(request.max_wait_ms)
        if epoch > INITIAL_EPOCH:
            svc.sessions.answered_records(session, [(k[1], k[2]) for k, r in results.items() if r.acquired])

    full = epoch == INITIAL_EPOCH
    wanted = list(session.partitions) if epoch != FINAL_EPOCH else []
    named = set(wanted)
    for key in ack_codes:  # a closing fetch answers the partitions it acknowledged (all those it names)
        if (key[1], key[2]) not in named:
            wanted.append((key[1], key[2]))
            named.add((key[1], key[2]))
    by_topic: dict = {}
    for topic_id, index in wanted:
        key = (group_id, topic_id, index)
        result = results.get(key)
        ack_code, ack_message = ack_codes.get(key, (None, None))
        if result is not None and result.omitted and ack_code is None:
            continue
        if topic_id not in ctx.metadata.topics_by_id:
            data = PartitionData(partition_index=index, error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                                 acknowledge_error_code=ack_code or ErrorCode.NONE, records=b"")
        else:
            acquired = (result.acquired or []) if result is not None else []
            records = result.records if result is not None and acquired else b""
            has_records = bool(acquired)
            error = result.error_code if result is not None else ErrorCode.NONE
            if not (full or has_records or error or ack_code is not None):
                continue
            data = PartitionData(
                partition_index=index, error_code=error, acknowledge_error_code=ack_code or ErrorCode.NONE,
                acknowledge_error_message=ack_message,
                current_leader=_leader(ctx, topic_id, index, error), records=records,
                acquired_records=[AcquiredRecords(first_offset=a.first_offset, last_offset=a.last_offset,
                                                  delivery_count=a.delivery_count) for a in acquired])
        by_topic.setdefault(topic_id, []).append(data)
    # consumer_byte_rate binds a share consumer as a consumer: the bytes it is answered count, and over the quota
    # (or request_percentage's) the answer is empty, the bytes taken back, and it is told to wait, as Kafka 4.4
    # answers: the records acquired for it stay locked to the member until their lock expires.
    size = sum(len(d.records or b"") for parts in by_topic.values() for d in parts)
    quota = ctx.broker.fetch_quota
    throttle_ms = quota.record(ctx.user, ctx.client_id or "", size, ctx.broker.now_ms())
    if ctx.measure_time:
        throttle_ms = max(throttle_ms, request_throttle_ms(ctx))
    if throttle_ms > 0:
        quota.unrecord(ctx.user, ctx.client_id or "", size, ctx.broker.now_ms())
        ctx.throttle_ms = throttle_ms
        return ShareFetchResponse(error_code=ErrorCode.NONE, throttle_time_ms=throttle_ms,
                                  acquisition_lock_timeout_ms=settings.record_lock_duration_ms, responses=[],
                                  node_endpoints=[])
    return ShareFetchResponse(error_code=ErrorCode.NONE, throttle_time_ms=throttle_ms,
                              acquisition_lock_timeout_ms=settings.record_lock_duration_ms,
                              responses=[ShareFetchableTopicResponse(topic_id=t, partitions=parts)
                                         for t, parts in by_topic.items()], node_endpoints=[])


def _leader(ctx: RequestContext, topic_id, index: int, error: int) -> LeaderIdAndEpoch:
    leader_id, leader_epoch = leader_of(ctx, topic_id, index, error)
    return LeaderIdAndEpoch(leader_id=leader_id, leader_epoch=leader_epoch)
