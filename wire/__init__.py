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
