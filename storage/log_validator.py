"""What a log checks in batches before appending them, and how it assigns their offsets (Kafka's LogValidator,
with UnifiedLog.analyzeAndValidateRecords).

* ``analyze_and_validate`` — structure: every batch whole (a follower's partial last batch is dropped),
  magic 2, CRC, size under max.message.bytes, Kafka's client rules (wire.validate_batch), one batch when
  compressed.
* ``validate_records`` — per record, as LogValidator.validateRecord (KIP-467): a key on compacted topics,
  CreateTime timestamps within message.timestamp.before/after.max.ms, no LogAppendTime from producers.
  Every refused record of a batch is named by its index in the batch; the first batch with refusals
  raises RecordValidationError (INVALID_TIMESTAMP when any timestamp is refused, else INVALID_RECORD),
  with Kafka's messages. Records are decoded only when a rule needs them: compacted topics, a finite
  before-bound, a header max timestamp past the after-bound, a producer's LogAppendTime batch.
* ``maybe_recompress`` — into the topic's compression.type when it is not "producer", the records' offset deltas
  renumbered 0..n-1 as Kafka's rebuild does.
* ``assign_offsets`` / ``check_follower_offsets`` — a leader rewrites base offsets (and leader epoch, and
  LogAppendTime) in the batch headers; a follower's offsets must follow the log end offset, in order.

No state and no I/O: the log calls these under its lock and writes nothing when one raises.
"""

from __future__ import annotations

from storage.config import LogConfig
from storage.errors import (
    InvalidTimestampError,
    RecordTooLargeError,
    RecordValidationError,
    UnexpectedAppendOffsetError,
)
from storage.producer_state import AppendOrigin
from wire import (
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    CompressionType,
    ErrorCode,
    InvalidRecordError,
    Record,
    RecordBatchHeader,
    TimestampType,
    UnrebuildableBatchError,
    assign_leader_offsets,
    build_batch,
    decode_records,
    decode_records_in_place,
    parse_batch_header,
    set_log_append_time,
    validate_batch,
)

__all__ = ["analyze_and_validate", "assign_offsets", "check_follower_offsets", "maybe_recompress",
           "validate_records"]

Batches = list[tuple[int, RecordBatchHeader]]
# a record set whose batch headers can be rewritten in place (offsets, timestamps)
WritableBuffer = bytearray | memoryview
_LONG_MAX = (1 << 63) - 1
_NO_TIMESTAMP = -1


def analyze_and_validate(buf: WritableBuffer, origin: str, config: LogConfig, name: str,
                         deferred: list[UnrebuildableBatchError] | None = None) -> tuple[Batches, WritableBuffer]:
    """Structural checks of every batch (Kafka's analyzeAndValidateRecords); returns (batches, buf). A batch Kafka
    refuses only when rebuilding it (after its records' own refusals: validate_records) goes to ``deferred`` when
    given, its error for the caller to raise then."""
    batches: Batches = []
    end = len(buf)
    pos = 0
    max_size = config.max_message_bytes
    follower = origin == AppendOrigin.REPLICATION
    target = config.compression_type
    # the codec a client's batch is rebuilt in (Kafka then reads its records whole), None when kept as sent
    target_codec = None if target == "producer" else \
        CompressionType.NONE if target == "uncompressed" else CompressionType[target.upper()]
    while pos < end:
        if follower:
            if end - pos < RECORD_BATCH_OVERHEAD:
                break
            header = parse_batch_header(buf, pos)
            if pos + header.batch_length + LOG_OVERHEAD > end:
                break  # a partial batch at the end of a fetch response
        try:
            header = validate_batch(buf, pos, from_client=origin == AppendOrigin.CLIENT, target_codec=target_codec)
        except UnrebuildableBatchError as exc:
            if deferred is None:
                raise
            deferred.append(exc)
            header = parse_batch_header(buf, pos)
        size = header.batch_length + LOG_OVERHEAD
        if size > max_size and not follower:
            raise RecordTooLargeError(
                f"The record batch size in the append to {name} is {size} bytes which exceeds the maximum "
                f"configured value of {max_size}.")
        batches.append((pos, header))
        pos += size
    if follower and pos < end:
        buf = buf[:pos]
    if origin == AppendOrigin.CLIENT:
        if not batches:
            raise InvalidRecordError("Record batch has no batches at all")
        if len(batches) > 1 and (any(h.attributes & 0x07 for _, h in batches)
                                 or config.compression_type not in ("producer", "uncompressed")):
            raise InvalidRecordError("Compressed outer record has more than one batch")
    return batches, buf


def validate_records(buf: WritableBuffer, batches: Batches, config: LogConfig, name: str, now: int, *,
                     require_keys: bool) -> None:
    """Per-record rules of LogValidator.validateRecord; raises RecordValidationError for the first batch
    with refused records. ``require_keys``: a client's append to a compacted topic."""
    create_time = config.timestamp_type is TimestampType.CREATE_TIME
    before = config.message_timestamp_before_max_ms
    after = config.message_timestamp_after_max_ms
    for pos, header in batches:
        producer_log_append_time = header.attributes & TIMESTAMP_TYPE_MASK != 0  # LogAppendTime set by the producer
        if not (require_keys or producer_log_append_time or (create_time and (
                before < _LONG_MAX or header.max_timestamp - now > after))):
            continue  # no rule needs the records: header-only, as the hot path must be
        try:
            _, records = decode_records(buf, pos)
        except InvalidRecordError:
            if not header.attributes & 0x07 or config.compression_type not in ("producer", header.compression.name.lower()):
                raise
            # Kafka reads a compressed batch it keeps in place without the record lengths: one whose lengths do not
            # match its fields (which analyze_and_validate let through as Kafka does) is judged on what it reads
            records = decode_records_in_place(buf, pos)
        errors: list[tuple[int, int, str]] = []  # (index in the batch, error code, message)
        for index, record in enumerate(records):
            if require_keys and record.key is None:
                errors.append((index, ErrorCode.INVALID_RECORD,
                               f"Compacted topic cannot accept message without key in topic partition {name}"))
                continue
            timestamp = header.max_timestamp if producer_log_append_time \
                else header.base_timestamp + record.timestamp_delta
            if create_time and timestamp != _NO_TIMESTAMP:
                if now - timestamp > before or timestamp - now > after:
                    errors.append((index, ErrorCode.INVALID_TIMESTAMP,
                                   f"Timestamp {timestamp} of message with offset {record.offset_delta} is out of "
                                   f"range. The timestamp should be within [{now - before}, {now + after}]"))
            elif producer_log_append_time:
                errors.append((index, ErrorCode.INVALID_TIMESTAMP,
                               f"Invalid timestamp type in message {_describe(record, timestamp)}. Producer should "
                               f"not set timestamp type to LogAppendTime."))
        if errors:
            _raise_record_errors(errors)


def _describe(record: Record, timestamp: int) -> str:
    """Kafka's DefaultRecord.toString."""
    key = -1 if record.key is None else len(record.key)
    value = -1 if record.value is None else len(record.value)
    return f"DefaultRecord(offset={record.offset_delta}, timestamp={timestamp}, key={key} bytes, value={value} bytes)"


def _raise_record_errors(errors: list[tuple[int, int, str]]) -> None:
    """LogValidator.processRecordErrors: one exception for the batch, every refused record listed."""
    record_errors: list[tuple[int, str | None]] = [(index, message) for index, _, message in errors]
    if any(code == ErrorCode.INVALID_TIMESTAMP for _, code, _ in errors):
        raise InvalidTimestampError("One or more records have been rejected due to invalid timestamp", record_errors)
    shown = ", ".join(f"RecordError(batchIndex={index}, message='{message}')" for index, message in record_errors[:3])
    raise RecordValidationError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing the "
        f"first three errors at most: [{shown}]", record_errors)


def maybe_recompress(buf: WritableBuffer, batches: Batches, config: LogConfig) -> tuple[WritableBuffer, Batches]:
    """Rewrite batches into the topic's compression.type when it is not "producer" (per-record work)."""
    target_name = config.compression_type
    if target_name == "producer":
        return buf, batches
    target = CompressionType.NONE if target_name == "uncompressed" else CompressionType[target_name.upper()]
    if all(h.attributes & 0x07 == target for _, h in batches):
        return buf, batches
    out = bytearray()
    new_batches = []
    level = {CompressionType.GZIP: config.compression_gzip_level, CompressionType.LZ4: config.compression_lz4_level,
             CompressionType.ZSTD: config.compression_zstd_level}.get(target)
    for pos, header in batches:
        _, records = decode_records(buf, pos)
        for index, record in enumerate(records):  # Kafka renumbers the records it rebuilds
            record.offset_delta = index
        rebuilt = build_batch(records, base_offset=header.base_offset, base_timestamp=header.base_timestamp,
                              compression=target, producer_id=header.producer_id,
                              producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
                              is_transactional=header.is_transactional,
                              timestamp_type=header.timestamp_type, max_timestamp=header.max_timestamp,
                              last_offset_delta=len(records) - 1,
                              compression_level=level if level is not None and level >= 0 else None)
        new_batches.append((len(out), parse_batch_header(rebuilt, 0)))
        out += rebuilt
    return out, new_batches


def assign_offsets(buf: WritableBuffer, batches: Batches, next_offset: int, leader_epoch: int,
                   log_append_time: int | None) -> Batches:
    """A leader's offsets from ``next_offset`` on and its epoch, rewritten in the headers (outside the CRC, except
    under LogAppendTime, whose max timestamp rewrite recomputes it)."""
    out = []
    for pos, header in batches:
        if log_append_time is not None:
            set_log_append_time(buf, pos, log_append_time)
        out.append((pos, assign_leader_offsets(buf, pos, next_offset, leader_epoch)))
        next_offset += header.last_offset_delta + 1
    return out


def check_follower_offsets(batches: Batches, log_end_offset: int, name: str) -> Batches:
    """A follower's batches start at or after the log end offset and increase."""
    first = batches[0][1]
    if first.base_offset < log_end_offset:
        raise UnexpectedAppendOffsetError(
            f"Unexpected offset in append to {name}. First offset {first.base_offset} is less than the next "
            f"offset {log_end_offset}. First 10 offsets in append: {[h.base_offset for _, h in batches[:10]]}")
    previous = -1
    for _, header in batches:
        if header.base_offset <= previous:
            raise UnexpectedAppendOffsetError(f"Out of order offsets found in append to {name}: "
                                              f"{[h.base_offset for _, h in batches[:10]]}")
        previous = header.base_offset + header.last_offset_delta
    return batches
