"""Produce v3-13 (v0-2 are advertised, as Kafka 4.4 does for librdkafka, and answered UNSUPPORTED_VERSION).

- acks 0: no response at all (an error closes the connection, as in Kafka); 1: after the leader's append;
  -1: after every in-sync replica has it (NOT_ENOUGH_REPLICAS when the ISR is smaller than min.insync.replicas).
- Each partition's records must be exactly one magic-2 batch (no zstd before v7), else INVALID_RECORD
  (UNSUPPORTED_COMPRESSION_TYPE), as Kafka's ProduceRequest.validateRecords.
- Batches are validated (magic 2, CRC-32C, sizes, timestamps, keys on compacted topics) and stored as
  they arrived, compressed or not; offsets are assigned by rewriting the batch header.
- v5+: log_start_offset. v8+: record_errors and error_message. v9+: flexible.
- v13+: topics by id (unknown id: UNKNOWN_TOPIC_ID).
- Transactional batches (v3+ carry the transactional id) must belong to the producer's ongoing
  transaction on this partition (KIP-890 verification, ``transaction.partition.verification.enable``):
  otherwise TRANSACTION_ABORTABLE (v11+) or INVALID_TXN_STATE, so a late write cannot hang the partition.
  v12+ (transaction version 2): the batch adds its partition to the transaction itself. While a batch is
  being checked, the leader keeps its sequence (Kafka's VerificationStateEntry): a later batch of the same
  producer gets OUT_OF_ORDER_SEQUENCE_NUMBER until the earlier one, whose check failed, is written.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from pykbroker.connection import CloseConnection
from pykbroker.context import RequestContext
from pykbroker.handlers.data._leader_hints import LeaderHints
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    filter_by_authorized,
    has_authorizer,
)
from pykbroker.transaction_checks import check_transactional_writes
from wire import (
    NO_CURRENT_LEADER,
    NO_RECORD_ERRORS,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    ZERO_UUID,
    ApiKey,
    ErrorCode,
    ProduceAnswer,
    decode_produce_request,
    parse_batch_header,
)
from wire.messages import ProduceRequest, ProduceResponse
from wire.messages.produce_response import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceResponse,
    TopicProduceResponse,
)

log = logging.getLogger("pykbroker.handlers.produce")

VALID_ACKS = (-1, 0, 1)
HEADER_SIZE_UP_TO_MAGIC = 17  # base offset, length, partition leader epoch, magic
MIN_RECORD_OVERHEAD = 14  # the smallest legacy message after its offset and length
ZSTD = 4
_INT32 = struct.Struct(">i")


def _too_short(length: int) -> str:
    return f"Record size {length} is less than the minimum record overhead ({MIN_RECORD_OVERHEAD})"


def _batch_at(records: bytes | memoryview, pos: int) -> int | None:
    """The size of the complete batch at ``pos``, None when there is none (a partial one is ignored)."""
    if len(records) - pos < HEADER_SIZE_UP_TO_MAGIC:
        return None
    length = _INT32.unpack_from(records, pos + 8)[0]
    if length < MIN_RECORD_OVERHEAD:
        raise ValueError(_too_short(length))
    return length + 12 if len(records) - pos >= length + 12 else None


def _records_error(version: int, records: bytes | memoryview) -> tuple[int, str] | None:
    """Kafka's ProduceRequest.validateRecords: one magic-2 batch per partition (no zstd before v7). The first
    batch's framing is read here (every partition of every request), what may follow it by ``_batch_at``."""
    size = len(records)
    if size >= HEADER_SIZE_UP_TO_MAGIC:
        length = _INT32.unpack_from(records, 8)[0]
        if length < MIN_RECORD_OVERHEAD:
            return ErrorCode.CORRUPT_MESSAGE, _too_short(length)
        first = length + 12
        if size >= first:
            if records[16] != 2:
                return ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to " \
                    "contain record batches with magic version 2"
            if version < 7 and records[22] & 0x07 == ZSTD:
                return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"Produce requests with version {version} are not " \
                    "allowed to use ZStandard compression"
            if size - first < HEADER_SIZE_UP_TO_MAGIC:  # the usual: nothing after the batch
                return None
            try:
                second = _batch_at(records, first)
            except ValueError as exc:
                return ErrorCode.CORRUPT_MESSAGE, str(exc)
            if second is not None:
                return ErrorCode.INVALID_RECORD, f"Produce requests with version {version} are only allowed to " \
                    "contain exactly one record batch per partition"
            return None
    return ErrorCode.INVALID_RECORD, f"Produce requests with version {version} must have at least one record " \
        "batch per partition"


def error_response(request: ProduceRequest | None, version: int, code: int) -> ProduceResponse:
    topics = [] if request is None else request.topic_data
    return ProduceResponse(responses=[
        TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=[
            PartitionProduceResponse(index=p.index, error_code=code, base_offset=-1) for p in t.partition_data])
        for t in topics
    ])


async def _check_transactional(ctx: RequestContext, transactional_id: str,
                                batches: dict[tuple[int, int], tuple[str, Any]]) -> dict[tuple[int, int], int]:
    """The error for each transactional batch that may not be written (Kafka's transaction checks), by key.

    v12+ (transaction version 2): the writes add their partitions to the producer's transaction. Older
    versions, with ``transaction.partition.verification.enable``: each partition must already be in the
    ongoing transaction. The partitions of one producer epoch are checked together, in one call to the
    coordinator, as Kafka's AddPartitionsToTxnManager does: one check per partition, one after the other, makes a
    request to many partitions wait for as many transaction-state writes.
    """
    if ctx.api_version < 12 and not ctx.broker.transaction_verification:
        return {}
    by_producer: dict[tuple[int, int], dict[tuple[str, int], tuple[int, int]]] = {}
    for key, (topic, p) in batches.items():
        records = p.records
        if len(records) < RECORD_BATCH_OVERHEAD:
            continue  # storage refuses it with the right error
        try:
            header = parse_batch_header(records, 0)
        except Exception:
            continue
        if not header.attributes & TRANSACTIONAL_FLAG_MASK:
            continue
        partition = ctx.broker.replica_manager.get_partition(topic, p.index)
        if partition is not None and partition.is_leader:
            # As Kafka's leader: a later batch must not be written while this one's check is retried.
            partition.log.maybe_start_transaction_verification(header.producer_id, header.base_sequence,
                                                               header.producer_epoch, ctx.api_version >= 12)
        by_producer.setdefault((header.producer_id, header.producer_epoch), {})[(topic, p.index)] = key
    errors: dict[tuple[int, int], int] = {}
    for (producer_id, producer_epoch), keys in by_producer.items():
        codes = await check_transactional_writes(ctx.broker, transactional_id, producer_id, producer_epoch,
                                                 list(keys), add=ctx.api_version >= 12,
                                                 abortable_error=ctx.api_version >= 11)
        for tp, code in codes.items():
            if ctx.api_version < 12 or code != ErrorCode.CONCURRENT_TRANSACTIONS:
                # As Kafka: retriable verification failures become NOT_ENOUGH_REPLICAS, which old clients retry
                # (with transaction version 2 the client knows to retry CONCURRENT_TRANSACTIONS itself).
                if code in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                            ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR):
                    code = ErrorCode.NOT_ENOUGH_REPLICAS
            if code:
                errors[keys[tp]] = code
    return errors


def _has_transactional_records(request: ProduceRequest) -> bool:
    """Kafka's ProduceRequest.hasTransactionalRecords: some partition's (magic 2) batch is transactional."""
    for t in request.topic_data:
        for p in t.partition_data:
            records = p.records
            if records is not None and len(records) >= 23 and records[16] == 2 \
                    and records[22] & TRANSACTIONAL_FLAG_MASK:  # the flag is in the attributes' low byte
                return True
    return False


@handler(ApiKey.PRODUCE, 0, 13, error_response=error_response, decode=decode_produce_request)
async def handle_produce(ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    broker = ctx.broker
    version = ctx.api_version
    if version < 3:  # advertised for librdkafka's sake (KAFKA-18659), refused like Kafka 4.4 does
        return None if request.acks == 0 else error_response(request, version, ErrorCode.UNSUPPORTED_VERSION)
    by_id = version >= 13
    acks = request.acks
    store = ctx.metadata
    if acks not in VALID_ACKS:
        return error_response(request, version, ErrorCode.INVALID_REQUIRED_ACKS)

    if _has_transactional_records(request) and not (request.transactional_id and authorize(
            ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id)):
        if acks == 0:
            raise CloseConnection  # Kafka's error response to acks=0 is a closed connection
        return error_response(request, version, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    errors: dict[tuple[int, int], int] = {}  # (topic index, partition index) -> code for unresolvable entries
    entries = {}
    transactional: dict[tuple[int, int], tuple[str, Any]] = {}  # batches to check with the coordinator first
    topics = [store.topics_by_id.get(t.topic_id) if by_id else store.topics.get(t.name) for t in request.topic_data]
    # None: no authorizer, every topic writable (nothing to count or look up per partition)
    writable = filter_by_authorized(ctx, AclOperation.WRITE, ResourceType.TOPIC, [
        topic.name if by_id and topic is not None else t.name for t, topic in zip(request.topic_data, topics, strict=True)
        if topic is not None or not by_id for _ in t.partition_data]) if has_authorizer(ctx) else None
    for ti, t in enumerate(request.topic_data):
        topic = topics[ti]
        for pi, p in enumerate(t.partition_data):
            if topic is None and by_id:
                errors[(ti, pi)] = ErrorCode.UNKNOWN_TOPIC_ID
            elif writable is not None and (topic.name if topic else t.name) not in writable:
                errors[(ti, pi)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif topic is None:
                errors[(ti, pi)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif p.records is None:
                errors[(ti, pi)] = ErrorCode.CORRUPT_MESSAGE
            elif (invalid := _records_error(version, p.records)) is not None:
                errors[(ti, pi)] = invalid[0]
                log.debug("produce to %s-%d refused: %s (%s)", topic.name, p.index, invalid[1], ctx.describe())
            elif request.transactional_id:
                transactional[(ti, pi)] = (topic.name, p)
            else:
                entries[(topic.name, p.index)] = p.records
    if transactional:
        assert request.transactional_id is not None
        unverified = await _check_transactional(ctx, request.transactional_id, transactional)
        errors.update(unverified)
        entries.update({(name, p.index): p.records for key, (name, p) in transactional.items()
                        if key not in unverified})
    results = await broker.replica_manager.append_records(entries, acks, request.timeout_ms)
    quota = broker.produce_quota
    ctx.throttle_ms = quota.record(ctx.user, ctx.client_id or "", sum(len(p.records or b"") for t in request.topic_data
                                                                      for p in t.partition_data), broker.now_ms()) \
        if quota.enabled() else 0
    if acks == 0:
        failed = {f"{request.topic_data[ti].name}-{request.topic_data[ti].partition_data[pi].index}": ErrorCode(code).name
                  for (ti, pi), code in errors.items()}
        failed.update({f"{tp[0]}-{tp[1]}": ErrorCode(r.error_code).name for tp, r in results.items()
                       if r.error_code != ErrorCode.NONE})
        if failed:
            # As Kafka: an acks=0 producer gets no answer, so closing the connection is how it learns of the
            # error (it reconnects and refreshes its metadata).
            log.info("closing connection after an acks=0 produce failed (%s): %s", ctx.describe(), failed)
            raise CloseConnection
        return None
    responses = []
    hints: LeaderHints | None = None  # made for the first partition in error (most responses have none)
    for ti, t in enumerate(request.topic_data):
        parts = []
        topic = topics[ti]
        for pi, p in enumerate(t.partition_data):
            refused = errors.get((ti, pi)) if errors else None
            if refused is not None:
                parts.append(PartitionProduceResponse(index=p.index, error_code=refused, base_offset=-1))
                continue
            assert topic is not None  # a partition not refused above is of a known topic
            name = topic.name
            r = results[(name, p.index)]
            if not r.error_code:  # appended (the usual): no record errors, message nor leader hint
                parts.append(PartitionProduceResponse(index=p.index, base_offset=r.base_offset,
                                                      log_append_time_ms=r.log_append_time_ms,
                                                      log_start_offset=r.log_start_offset,
                                                      record_errors=NO_RECORD_ERRORS, current_leader=NO_CURRENT_LEADER))
                continue
            answer = PartitionProduceResponse(
                index=p.index,
                error_code=r.error_code,
                base_offset=r.base_offset,
                log_append_time_ms=r.log_append_time_ms,
                log_start_offset=r.log_start_offset,
                record_errors=[BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                               for i, m in r.record_errors] if r.record_errors else [],
                error_message=r.error_message,
            )
            hints = hints or LeaderHints(ctx.metadata, ctx.listener.name)
            leader = hints.leader(name, p.index, r.error_code)
            if leader is not None:
                answer.current_leader = LeaderIdAndEpoch(leader_id=leader[0], leader_epoch=leader[1])
            parts.append(answer)
        responses.append(TopicProduceResponse(name=t.name if not by_id else "", topic_id=t.topic_id if by_id else ZERO_UUID,
                                              partition_responses=parts))
    return ProduceAnswer(responses=responses, throttle_time_ms=ctx.throttle_ms,
                         node_endpoints=hints.node_endpoints(NodeEndpoint) if hints is not None else [])
