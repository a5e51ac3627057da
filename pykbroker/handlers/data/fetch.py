"""Fetch v4-18.

- Long poll: answer once ``min_bytes`` are available or ``max_wait_ms`` passed, woken by appends (no
  sleep loops). ``max_bytes`` (capped by the broker's ``fetch.max.bytes`` and, for a consumer, by what its
  ``consumer_byte_rate`` quota allows in one window, as Kafka) bounds the response,
  ``partition_max_bytes`` each partition, except that the first partition with data always gets at least one
  whole batch.
- v4+: isolation_level (read_committed reads up to the last stable offset, with aborted transactions).
- v5+: log_start_offset. v7+: fetch sessions (KIP-227): full and incremental, forgotten topics.
- v9+: current_leader_epoch fencing (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH). v11+: rack_id and
  follower fetching (KIP-392): a follower serves consumers up to its high watermark, and with
  replica.selector.class set a leader may answer with a preferred_read_replica (-1: read from the
  leader) and no records. v12+: flexible. v13+: topics by id
  (UNKNOWN_TOPIC_ID). Records are never null: an empty record set is sent as zero bytes.
- A fetch with a replica id (v0-14: ``replica_id``, v15+: ``replica_state``) is a follower's: it reads up
  to the log end and its position moves the leader's high watermark and ISR; client quotas skip it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from pykbroker.context import RequestContext
from pykbroker.handlers.data._leader_hints import HINTED_ERRORS, LeaderHints
from pykbroker.registry import handler
from pykbroker.request_time import request_throttle_ms
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize_cluster,
    filter_by_authorized,
    has_authorizer,
)
from replication.fetch_session import FINAL_EPOCH, CachedPartition
from replication.replica_manager import FetchedPartition, FetchPartition
from storage import release_records
from wire import ZERO_UUID, ApiKey, ErrorCode

# The fetch codec loads with this handler (on the first Fetch), not at start: ``import wire`` does not import it.
from wire._fetch import NO_DIVERGING_EPOCH, NO_LEADER, NO_SNAPSHOT, FetchAnswer, decode_fetch_request
from wire.messages import FetchRequest, FetchResponse
from wire.messages.fetch_response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)

READ_COMMITTED = 1
# Fetch v0-2 had no max_bytes; Kafka treats it as unbounded.
UNBOUNDED = 2**31 - 1
# A partition's answers that Kafka's ReplicaManager.readFromLog expects (leadership moving, a stale epoch, an
# offline dir, an offset out of range): not marked in FailedFetchRequestsPerSec, which counts unexpected failures.
EXPECTED_FETCH_ERRORS = frozenset({
    ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.INCONSISTENT_TOPIC_ID, ErrorCode.OFFSET_OUT_OF_RANGE})


def error_response(request: FetchRequest | None, version: int, code: int) -> FetchResponse:
    return FetchResponse(error_code=code, session_id=0, responses=[])


def _partition_error(index: int, code: int) -> PartitionData:
    return PartitionData(partition_index=index, error_code=code, high_watermark=-1, last_stable_offset=-1,
                         log_start_offset=-1, records=b"")


def _readable(ctx: RequestContext, request: FetchRequest, names: list[str]) -> set[str]:
    """The topics the fetch may read: READ on each for consumers, CLUSTER_ACTION for all for followers."""
    replica_id = request.replica_state.replica_id if ctx.api_version >= 15 else request.replica_id
    if replica_id >= 0:
        return set(names) if authorize_cluster(ctx, AclOperation.CLUSTER_ACTION) else set()
    return filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names)


def _add(responses: list[FetchableTopicResponse], topic: str, topic_id: uuid.UUID, parts: list[PartitionData]) -> None:
    """Append ``parts`` (a list of its own, kept) to the last topic entry when it is the same topic, else as a new
    entry."""
    last = responses[-1] if responses else None
    if last is not None and last.topic == topic and last.topic_id == topic_id:
        last.partitions.extend(parts)
    else:
        responses.append(FetchableTopicResponse(topic=topic, topic_id=topic_id, partitions=parts))


@handler(ApiKey.FETCH, 4, 18, error_response=error_response, decode=decode_fetch_request)
async def handle_fetch(ctx: RequestContext, request: FetchRequest) -> FetchResponse:
    broker = ctx.broker
    version = ctx.api_version
    by_id = version >= 13
    store = ctx.metadata
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    read_committed = request.isolation_level == READ_COMMITTED and replica_id < 0

    # Resolve topics. By name (v12-), an unknown topic is answered with an error and never enters a session. By id
    # (v13+), as in Kafka, it enters the session unnamed: answered UNKNOWN_TOPIC_ID on every fetch until this
    # broker learns the topic, then fetched, though the client (a follower whose position has not moved, say)
    # never names it again.
    unresolved: dict[tuple[str | None, uuid.UUID], list[PartitionData]] = {}
    requested: list[CachedPartition] = []
    topics = [store.topics_by_id.get(t.topic_id) if by_id else store.topics.get(t.topic) for t in request.topics]
    # A topic named but unknown is, as in Kafka, refused when the principal may not read it (not disclosed).
    unknown_names = [] if by_id else [t.topic for t, topic in zip(request.topics, topics, strict=True)
                                      if topic is None for _ in t.partitions]
    readable_unknown = _readable(ctx, request, unknown_names) if unknown_names else set()
    for t, topic in zip(request.topics, topics, strict=True):
        if topic is None and not by_id:
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if t.topic in readable_unknown \
                else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            unresolved[(t.topic, t.topic_id)] = [_partition_error(p.partition, code) for p in t.partitions]
            continue
        for p in t.partitions:
            requested.append(CachedPartition(topic.name if topic else None, p.partition,
                                             topic.topic_id if topic else t.topic_id, p.fetch_offset,
                                             p.partition_max_bytes, p.log_start_offset, p.current_leader_epoch,
                                             p.last_fetched_epoch))
    forgotten: list[tuple[object, int]] = []
    for f in request.forgotten_topics_data:
        if by_id:
            forgotten.extend((f.topic_id, p) for p in f.partitions)
        elif f.topic in store.topics:
            forgotten.extend((f.topic, p) for p in f.partitions)

    if version >= 7:
        fctx = broker.fetch_sessions.new_context(request.session_id, request.session_epoch, requested, forgotten,
                                                 uses_topic_ids=by_id)
    else:
        fctx = broker.fetch_sessions.new_context(0, FINAL_EPOCH, requested, [])
    if fctx.error:
        return FetchResponse(error_code=fctx.error, session_id=0, responses=[])
    for cp in fctx.partitions:
        if cp.topic is None and (known := store.topics_by_id.get(cp.topic_id)) is not None:
            cp.topic = known.name  # the topic id this session holds became known (Kafka's maybeResolveUnknownName)

    # Every partition of the session is authorized on every fetch (incremental ones too), as in Kafka: one the
    # principal may no longer read is answered TOPIC_AUTHORIZATION_FAILED instead of its records.
    named = [cp for cp in fctx.partitions if cp.topic is not None]
    if has_authorizer(ctx):
        readable = _readable(ctx, request, [cp.topic for cp in named if cp.topic is not None])
        allowed = [cp for cp in named if cp.topic in readable]
    else:
        allowed = named  # without an authorizer every known topic may be read (followers' cluster action too)
    wanted = [FetchPartition(cp.topic or "", cp.partition, cp.fetch_offset, cp.max_bytes, cp.current_leader_epoch,
                             cp.last_fetched_epoch if version >= 12 else -1, cp.log_start_offset)
              for cp in allowed]
    # As Kafka: a fetch with nothing to read but unknown topics is answered at once; with something to read it
    # waits as usual, unknown topics or not (a session holding an unknown topic id must not answer every fetch at
    # once: a follower or consumer would spin).
    has_unknown = bool(unresolved) or len(named) < len(fctx.partitions)
    max_wait_ms = 0 if has_unknown and not allowed else request.max_wait_ms
    # As Kafka's handleFetchRequest: a consumer reads no more than its consumer_byte_rate quota allows in one
    # window (a follower is not bound), and min_bytes never asks for more than max_bytes.
    max_bytes = min(request.max_bytes if version >= 3 else UNBOUNDED, broker.config.fetch_max_bytes)
    if replica_id < 0 and broker.fetch_quota.enabled():
        max_bytes = int(min(max_bytes, broker.fetch_quota.max_value_in_window(ctx.user, ctx.client_id or "")))
    fetched = await broker.replica_manager.fetch(
        wanted, max_wait_ms=max(0, max_wait_ms), min_bytes=min(request.min_bytes, max_bytes), max_bytes=max_bytes,
        read_committed=read_committed,
        replica_id=replica_id, client_metadata=(request.rack_id or None,) if version >= 11 and replica_id < 0 else None)

    # Without a consumer_byte_rate quota nothing is counted (recording would find no quota to count against).
    throttle_ms = 0 if replica_id >= 0 or not broker.fetch_quota.enabled() else broker.fetch_quota.record(
        ctx.user, ctx.client_id or "", sum(fp.size for fp in fetched), broker.now_ms())
    if ctx.measure_time:  # request_percentage: the larger throttle wins, as in Kafka's handleFetchRequest
        throttle_ms = max(throttle_ms, request_throttle_ms(ctx))
    if throttle_ms > 0:
        # As Kafka: over a quota, the client gets an empty answer (the bytes are not counted) and waits.
        broker.fetch_quota.unrecord(ctx.user, ctx.client_id or "", sum(fp.size for fp in fetched), broker.now_ms())
        for fp in fetched:
            if fp.read is not None:
                release_records(fp.read.records)
        ctx.throttle_ms = throttle_ms
        return FetchResponse(error_code=ErrorCode.NONE, throttle_time_ms=throttle_ms,
                             session_id=fctx.response_session_id, responses=[])

    if broker.metrics is not None:  # Kafka's BrokerTopicMetrics: consumers' bytes out, every partition's fetch
        for fp in fetched:
            broker.metrics.fetched(fp.request.topic, fp.size if replica_id < 0 else 0,
                                   fp.error_code not in EXPECTED_FETCH_ERRORS)
    # Answers in the session's order (a full fetch's: the request's), a topic entry for each run of partitions of
    # one topic (by id from v13, an unknown id too; by name before), a topic named again when it recurs: Kafka's
    # FetchResponse.of. Partitions that returned records move to the end of an incremental session, so the next
    # fetches read the others first (Kafka's IncrementalFetchContext): a consumer behind on several topics
    # gets all of them in turn instead of one after another.
    responses: list[FetchableTopicResponse] = []
    with_records: list[CachedPartition] = []
    hints: LeaderHints | None = None  # built for the first partition answered with a hinted error
    incremental, recorded = fctx.incremental, fctx.session is not None  # sessionless: nothing to record
    if len(allowed) == len(fctx.partitions):  # every partition read (allowed is theirs, in order)
        found_in: Iterable[tuple[CachedPartition, FetchedPartition | None]] = zip(allowed, fetched, strict=True)
    else:
        fetched_by = {(cp.topic, cp.partition): fp for cp, fp in zip(allowed, fetched, strict=True)}
        found_in = [(cp, fetched_by.get((cp.topic, cp.partition))) for cp in fctx.partitions]
    for cp, found in found_in:
        read = found.read if found is not None else None
        # An error-free read of an incremental session is checked for news before its answer is built (which
        # costs more than the read): most of a follower's session has none each time one partition is written.
        checked = False
        if incremental and found is not None and read is not None and not found.error_code \
                and read.diverging_epoch is None:
            if not cp.needs_response(has_records=read.size > 0, error_code=ErrorCode.NONE,
                                     high_watermark=read.high_watermark, last_stable_offset=read.last_stable_offset,
                                     log_start_offset=read.log_start_offset):
                continue
            checked = True
        if cp.topic is None:
            data = _partition_error(cp.partition, ErrorCode.UNKNOWN_TOPIC_ID)
        elif found is None:
            data = _partition_error(cp.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        elif read is None:
            data = _partition_error(cp.partition, found.error_code)
        else:
            aborted = None
            if read_committed:
                txns = read.aborted_transactions
                aborted = [AbortedTransaction(producer_id=a.producer_id, first_offset=a.first_offset)
                           for a in txns] if txns else []
            data = PartitionData(
                partition_index=cp.partition,
                error_code=found.error_code,
                high_watermark=read.high_watermark,
                last_stable_offset=read.last_stable_offset,
                log_start_offset=read.log_start_offset,
                aborted_transactions=aborted,
                preferred_read_replica=found.preferred_read_replica,
                records=read.records,
                diverging_epoch=NO_DIVERGING_EPOCH if read.diverging_epoch is None else EpochEndOffset(
                    epoch=read.diverging_epoch[0], end_offset=read.diverging_epoch[1]),
                current_leader=NO_LEADER,
                snapshot_id=NO_SNAPSHOT,
            )
        if data.error_code in HINTED_ERRORS and cp.topic is not None:
            if hints is None:
                hints = LeaderHints(store, ctx.listener.name)
            leader = hints.leader(cp.topic, cp.partition, data.error_code)
            if leader is not None:
                data.current_leader = LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])
        size = read.size if read is not None else 0
        if incremental:
            if not checked and not cp.needs_response(
                has_records=size > 0, error_code=data.error_code, high_watermark=data.high_watermark,
                last_stable_offset=data.last_stable_offset, log_start_offset=data.log_start_offset,
            ) and (read is None or read.diverging_epoch is None):
                continue
        elif recorded:
            cp.needs_response(has_records=False, error_code=data.error_code, high_watermark=data.high_watermark,
                              last_stable_offset=data.last_stable_offset, log_start_offset=data.log_start_offset)
        if size > 0 and incremental:
            with_records.append(cp)
        _add(responses, "" if by_id else cp.topic or "", cp.topic_id if by_id else ZERO_UUID, [data])
    if incremental and fctx.session is not None:
        for cp in with_records:
            fctx.session.partitions.move_to_end(cp.key(by_id))
    for (unknown, topic_id), parts in unresolved.items():  # after the session's, as Kafka's erroneous partitions
        _add(responses, unknown or "", topic_id, parts)
    return FetchAnswer(error_code=ErrorCode.NONE, session_id=fctx.response_session_id, responses=responses,
                       node_endpoints=hints.node_endpoints(NodeEndpoint) if hints is not None else [])
