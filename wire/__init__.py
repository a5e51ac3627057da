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
# -- records & compression (wire/_records.py, wire/_compression.py) --
# isort: off
from wire._compression import (
    CompressionType as CompressionType,
    CorruptRecordError as CorruptRecordError,
    RecordError as RecordError,
    compress as compress,
    decompress as decompress,
)
from wire._records import (
    COMPRESSION_CODEC_MASK as COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK as CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK as DELETE_HORIZON_FLAG_MASK,
    LOG_OVERHEAD as LOG_OVERHEAD,
    MAGIC_V2 as MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH as NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH as NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID as NO_PRODUCER_ID,
    NO_SEQUENCE as NO_SEQUENCE,
    NO_TIMESTAMP as NO_TIMESTAMP,
    RECORD_BATCH_OVERHEAD as RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK as TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK as TRANSACTIONAL_FLAG_MASK,
    BatchScan as BatchScan,
    ControlRecordType as ControlRecordType,
    InvalidRecordError as InvalidRecordError,
    Record as Record,
    RecordBatchHeader as RecordBatchHeader,
    TimestampType as TimestampType,
    batch_crc_is_valid as batch_crc_is_valid,
    build_batch as build_batch,
    build_control_batch as build_control_batch,
    build_simple_batch as build_simple_batch,
    decode_records as decode_records,
    iter_batch_headers as iter_batch_headers,
    parse_batch_header as parse_batch_header,
    parse_control_record as parse_control_record,
    scan_batches as scan_batches,
    set_base_offset as set_base_offset,
    set_log_append_time as set_log_append_time,
    set_partition_leader_epoch as set_partition_leader_epoch,
    validate_batch as validate_batch,
)
# isort: on
# -- end records --

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
from wire.messages import REQUESTS, RESPONSES

__all__ = [
    "ApiKey",
    "DEFAULT_MAX_FRAME_SIZE",
    "DecodeError",
    "ErrorCode",
    "FieldSpec",
    "FileRegion",
    "FrameError",
    "FrameReader",
    "Message",
    "REQUESTS",
    "RESPONSES",
    "Reader",
    "RequestHeader",
    "Writer",
    "ZERO_UUID",
    "decode_request_header",
    "decode_response_header",
    "encode_request_header",
    "encode_response_header",
    "frame",
    "peek_request_header",
    "request_header_version",
    "response_header_version",
]
