"""Sans-IO codec for the Kafka wire protocol.

wire/ turns bytes into typed messages and back; it never does I/O and imports nothing else of ours.

Hand-written (private modules, public names re-exported here):
- ``_primitives``: int types, varint/varlong, (compact) strings/bytes/arrays, UUID, tagged fields.
- ``_frames``: the incremental frame reader (4-byte size prefix).
- ``_headers``: request header v0-v2, response header v0-v1.
- ``_errors``: ``ErrorCode`` and ``ApiKey``.
- ``_records``: record batch v2 (header, CRC-32C, records, control batches).
- ``_compression``: gzip, snappy (raw and xerial-framed), lz4 (frame), zstd.

Generated (``wire/messages``, from the JSON definitions in ``wire/schemas`` and kafka-python's copy
of Kafka's own JSON; regenerate with ``make gen``): one class per request/response.
"""


from wire._compression import (
    CompressionType,
    CorruptRecordError,
    DecompressedSizeError,
    RecordError,
    UnrebuildableBatchError,
    compress,
    decompress,
)
from wire._errors import ApiKey, ErrorCode
from wire._frames import DEFAULT_MAX_FRAME_SIZE, FrameError, FrameReader, frame
from wire._headers import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    peek_request_header,
    request_header_version,
    response_header_version,
)
from wire._message import FieldSpec, Message
from wire._primitives import ZERO_UUID, DecodeError, FileRegion, Reader, Writer
from wire._produce import NO_CURRENT_LEADER, NO_RECORD_ERRORS, ProduceAnswer, decode_produce_request
from wire._records import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchScan,
    ControlRecordType,
    InvalidRecordError,
    Record,
    RecordBatchHeader,
    TimestampType,
    assign_leader_offsets,
    batch_crc_is_valid,
    build_batch,
    build_control_batch,
    build_simple_batch,
    decode_records,
    decode_records_from,
    decode_records_in_place,
    iter_batch_headers,
    parse_batch_header,
    parse_control_record,
    scan_batches,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
from wire.messages import REQUESTS, RESPONSES

__all__ = [
    "ApiKey",
    "BatchScan",
    "batch_crc_is_valid",
    "build_batch",
    "build_control_batch",
    "build_simple_batch",
    "compress",
    "CompressionType",
    "COMPRESSION_CODEC_MASK",
    "ControlRecordType",
    "CONTROL_FLAG_MASK",
    "CorruptRecordError",
    "DecompressedSizeError",
    "DecodeError",
    "decode_records",
    "decode_records_in_place",
    "decode_records_from",
    "decode_produce_request",
    "ProduceAnswer",
    "NO_CURRENT_LEADER",
    "NO_RECORD_ERRORS",
    "decode_request_header",
    "decode_response_header",
    "decompress",
    "DEFAULT_MAX_FRAME_SIZE",
    "DELETE_HORIZON_FLAG_MASK",
    "encode_request_header",
    "encode_response_header",
    "ErrorCode",
    "FieldSpec",
    "FileRegion",
    "frame",
    "FrameError",
    "FrameReader",
    "InvalidRecordError",
    "iter_batch_headers",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "Message",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "parse_batch_header",
    "parse_control_record",
    "peek_request_header",
    "Reader",
    "Record",
    "RecordBatchHeader",
    "RecordError",
    "UnrebuildableBatchError",
    "RECORD_BATCH_OVERHEAD",
    "RequestHeader",
    "REQUESTS",
    "request_header_version",
    "RESPONSES",
    "response_header_version",
    "scan_batches",
    "assign_leader_offsets",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "TimestampType",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_FLAG_MASK",
    "validate_batch",
    "Writer",
    "ZERO_UUID",
]
