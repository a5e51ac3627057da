"""Request header v0-v2 and response header v0-v1 (hand-written; Kafka's RequestHeader/ResponseHeader)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from wire._errors import ApiKey
from wire._primitives import DecodeError, Reader, Writer
from wire.messages import REQUESTS


@dataclass(slots=True)
class RequestHeader:
    """Header of every request. ``client_id`` is a classic nullable string even in v2."""

    request_api_key: int
    request_api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int = 1
    tagged_fields: dict[int, bytes] = field(default_factory=dict)


_KEY_VERSION_CORRELATION = struct.Struct(">hhi")
_WITH_CLIENT_ID_LENGTH = struct.Struct(">hhih")
_CORRELATION = struct.Struct(">i")
_CORRELATION_NO_TAGS = struct.Struct(">ix")  # and an empty tagged-field section (a zero byte)

# api key -> its first flexible version (None: never flexible), filled on first use: this runs twice
# per request, and REQUESTS imports message classes lazily.
_FIRST_FLEXIBLE_VERSION: dict[int, int | None] = {}


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible request versions, else 1 (v0 only existed for ControlledShutdown v0)."""
    try:
        first_flexible = _FIRST_FLEXIBLE_VERSION[api_key]
    except KeyError:
        cls = REQUESTS.get(api_key)
        if cls is None:
            return 1  # an unknown key is not cached: garbage cannot grow the table
        first_flexible = _FIRST_FLEXIBLE_VERSION[api_key] = cls.FIRST_FLEXIBLE_VERSION
    if first_flexible is None:
        return 1
    return 2 if api_version >= first_flexible else 1


def response_header_version(api_key: int, api_version: int) -> int:
    """1 for flexible versions, else 0; ApiVersions responses always use v0 so old clients can parse them."""
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if request_header_version(api_key, api_version) == 2 else 0


def peek_request_header(r: Reader) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) without consuming: enough to answer any request with an error."""
    pos = r.pos
    if r.end - pos >= 8:  # every request (one unpack: this runs for each)
        return _KEY_VERSION_CORRELATION.unpack_from(r.buf, pos)
    try:
        return r.int16(), r.int16(), r.int32()  # raises DecodeError
    finally:
        r.pos = pos


def decode_request_header(r: Reader) -> RequestHeader:
    """Decode a request header; the header version follows from the api key and version."""
    pos, buf, end = r.pos, r.buf, r.end
    if end - pos >= 10:  # the fixed fields and the client id's length in one unpack, the client id inline
        api_key, api_version, correlation_id, n = _WITH_CLIENT_ID_LENGTH.unpack_from(buf, pos)
        pos += 10
        if n < 0:
            client_id = None
        elif n <= end - pos:
            try:
                client_id = str(buf[pos:pos + n], "utf-8")
            except UnicodeDecodeError as exc:
                raise DecodeError(f"invalid UTF-8 in string: {exc}") from None
            pos += n
        else:
            raise DecodeError(f"length {n} exceeds the {end - pos} bytes left")
        r.pos = pos
    else:
        api_key = r.int16()
        api_version = r.int16()
        correlation_id = r.int32()
        client_id = r.nullable_string()
    version = request_header_version(api_key, api_version)
    if version < 2:
        return RequestHeader(api_key, api_version, correlation_id, client_id, version, {})
    if pos < end and buf[pos] == 0 and r.pos == pos:  # no tagged fields: what every client sends
        r.pos = pos + 1
        return RequestHeader(api_key, api_version, correlation_id, client_id, version, {})
    fields = r.tagged_fields()
    return RequestHeader(api_key, api_version, correlation_id, client_id, version,
                         {k: bytes(v) for k, v in fields.items()})


def encode_request_header(w: Writer, header: RequestHeader) -> None:
    w.int16(header.request_api_key)
    w.int16(header.request_api_version)
    w.int32(header.correlation_id)
    if header.header_version >= 1:
        w.nullable_string(header.client_id)
    if header.header_version >= 2:
        w.tagged_fields(sorted(header.tagged_fields.items()))


def encode_response_header(w: Writer, correlation_id: int, header_version: int) -> None:
    """The correlation id, and from v1 no tagged fields: one pack (this runs for every answer)."""
    w.buf += (_CORRELATION_NO_TAGS if header_version >= 1 else _CORRELATION).pack(correlation_id)


def decode_response_header(r: Reader, header_version: int) -> int:
    """Returns the correlation id (tagged fields, if any, are skipped)."""
    correlation_id = r.int32()
    if header_version >= 1:
        r.tagged_fields()
    return correlation_id
