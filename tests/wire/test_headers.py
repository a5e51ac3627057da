"""Request and response headers: version rules, round trips, kafka-python's encoders, real client bytes."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.protocol.api_header import RequestHeader as KpRequestHeader
from kafka.protocol.api_header import ResponseHeader as KpResponseHeader
from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse

from wire import (
    REQUESTS,
    ApiKey,
    DecodeError,
    ErrorCode,
    FrameReader,
    Reader,
    RequestHeader,
    Writer,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    frame,
    peek_request_header,
    request_header_version,
    response_header_version,
)
from wire.messages import ApiVersionsRequest, ApiVersionsResponse

GOLDEN = Path(__file__).parent / "golden"


def encode_header(header: RequestHeader) -> bytes:
    w = Writer()
    encode_request_header(w, header)
    return w.getvalue()


# -- which header version ---------------------------------------------------------------------------------


@pytest.mark.parametrize("api_key, api_version, expected", [
    (ApiKey.API_VERSIONS, 0, 1),
    (ApiKey.API_VERSIONS, 2, 1),
    (ApiKey.API_VERSIONS, 3, 2),
    (ApiKey.METADATA, 8, 1),
    (ApiKey.METADATA, 9, 2),
    (ApiKey.PRODUCE, 8, 1),
    (ApiKey.PRODUCE, 9, 2),
    (ApiKey.FETCH, 11, 1),
    (ApiKey.FETCH, 12, 2),
    (68, 0, 2),  # ConsumerGroupHeartbeat: flexible from v0 (our own schema)
    (72, 0, 2),  # PushTelemetry
    (9999, 0, 1),  # an API we do not know: assume the classic header, enough to answer with an error
])
def test_request_header_version(api_key: int, api_version: int, expected: int) -> None:
    assert request_header_version(api_key, api_version) == expected


def test_request_header_version_follows_every_generated_request() -> None:
    for api_key, cls in REQUESTS.items():
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            flexible = cls.FIRST_FLEXIBLE_VERSION is not None and version >= cls.FIRST_FLEXIBLE_VERSION
            assert request_header_version(api_key, version) == (2 if flexible else 1), (cls.NAME, version)


def test_response_header_version() -> None:
    # ApiVersions answers always carry header v0: a client that sent a version we do not know must be
    # able to read the answer before it knows which versions we speak.
    for version in range(0, 10):
        assert response_header_version(ApiKey.API_VERSIONS, version) == 0
    assert response_header_version(ApiKey.METADATA, 8) == 0
    assert response_header_version(ApiKey.METADATA, 9) == 1
    assert response_header_version(ApiKey.FETCH, 12) == 1
    for api_key, cls in REQUESTS.items():
        if api_key == ApiKey.API_VERSIONS:
            continue
        for version in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
            assert response_header_version(api_key, version) == request_header_version(api_key, version) - 1


# -- round trips and kafka-python -----------------------------------------------------------------------

HEADERS = [
    RequestHeader(ApiKey.METADATA, 8, 7, "client-1", 1),
    RequestHeader(ApiKey.METADATA, 8, -1, None, 1),
    RequestHeader(ApiKey.METADATA, 12, 2**31 - 1, "client-ünï", 2),
    RequestHeader(ApiKey.METADATA, 12, 0, None, 2),
    RequestHeader(ApiKey.API_VERSIONS, 3, 1, "rdkafka", 2),
    RequestHeader(ApiKey.FETCH, 17, 5, "c", 2, {0: b"\x01\x02", 7: b""}),
]


@pytest.mark.parametrize("header", HEADERS, ids=lambda h: f"v{h.header_version}-{h.client_id}")
def test_request_header_round_trip(header: RequestHeader) -> None:
    raw = encode_header(header)
    r = Reader(raw + b"body")
    assert peek_request_header(r) == (header.request_api_key, header.request_api_version, header.correlation_id)
    assert r.pos == 0
    assert decode_request_header(r) == header
    assert bytes(r.buf[r.pos:]) == b"body"
    # v2 keeps the classic (non-compact) nullable client id and adds tagged fields.
    expected_tail = 0 if header.header_version == 1 else 1
    assert len(raw) == 8 + 2 + len((header.client_id or "").encode()) + expected_tail + sum(
        2 + len(v) for v in header.tagged_fields.values())


@pytest.mark.parametrize("header", [h for h in HEADERS if not h.tagged_fields],
                         ids=lambda h: f"v{h.header_version}-{h.client_id}")
def test_request_header_matches_kafka_python(header: RequestHeader) -> None:
    theirs = KpRequestHeader(request_api_key=header.request_api_key,
                             request_api_version=header.request_api_version,
                             correlation_id=header.correlation_id, client_id=header.client_id)
    flexible = header.header_version == 2
    assert encode_header(header) == bytes(theirs.encode(flexible=flexible))


def test_truncated_request_header_is_a_decode_error() -> None:
    raw = encode_header(HEADERS[2])
    for cut in range(len(raw)):
        with pytest.raises(DecodeError):
            decode_request_header(Reader(raw[:cut]))
    with pytest.raises(DecodeError):
        peek_request_header(Reader(raw[:7]))


@pytest.mark.parametrize("header_version", [0, 1])
def test_response_header_round_trip_and_kafka_python(header_version: int) -> None:
    w = Writer()
    encode_response_header(w, 42, header_version)
    raw = w.getvalue()
    assert raw == bytes(KpResponseHeader(correlation_id=42).encode(flexible=header_version == 1))
    assert decode_response_header(Reader(raw), header_version) == 42
    assert len(raw) == 4 + header_version


def test_response_header_v1_skips_tagged_fields() -> None:
    r = Reader(b"\x00\x00\x00\x09" + b"\x01\x05\x02ab" + b"rest")
    assert decode_response_header(r, 1) == 9
    assert bytes(r.buf[r.pos:]) == b"rest"


# -- the ApiVersions v0 fallback --------------------------------------------------------------------------


def test_api_versions_fallback_is_readable_by_a_client_that_asked_for_v3() -> None:
    """A broker that cannot serve the requested ApiVersions version answers with header v0 and a v0
    body: UNSUPPORTED_VERSION and the ApiVersions range it does serve. Clients (here kafka-python)
    parse that whatever version they sent."""
    body = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=[
        ApiVersionsResponse.FIELDS[1].struct(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=3)])
    w = Writer()
    encode_response_header(w, 11, response_header_version(ApiKey.API_VERSIONS, 5))
    body.encode_into(w, 0)
    data = w.getvalue()
    assert data == bytes.fromhex("0000000b" "0023" "00000001" "0012" "0000" "0003")
    theirs = KpApiVersionsResponse.decode(frame(len(data)) + data, version=3, header=True, framed=True)
    assert theirs.header.correlation_id == 11
    assert theirs.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [(k.api_key, k.min_version, k.max_version) for k in theirs.api_keys] == [(18, 0, 3)]


# -- bytes captured from real clients (see golden/capture.py) --------------------------------------------


def golden_frame(name: str) -> bytes:
    text = (GOLDEN / f"{name}.txt").read_text()
    return bytes.fromhex("".join(line for line in text.splitlines() if not line.startswith("#")))


def frames_of(data: bytes, *, byte_at_a_time: bool) -> list[bytes]:
    reader = FrameReader()
    out = []
    for chunk in ([data[i:i + 1] for i in range(len(data))] if byte_at_a_time else [data]):
        reader.feed(chunk)
        while (f := reader.next_frame()) is not None:
            out.append(f)
    assert reader.buffered == 0
    return out


def decode_request(name: str, *, byte_at_a_time: bool) -> tuple[RequestHeader, object]:
    data = golden_frame(name)
    (body,) = frames_of(data, byte_at_a_time=byte_at_a_time)
    r = Reader(body)
    header = decode_request_header(r)
    cls = REQUESTS[header.request_api_key]
    msg = cls.decode(body[r.pos:], header.request_api_version)
    # And back: our header and body encoders give the client's bytes.
    w = Writer()
    encode_request_header(w, header)
    msg.encode_into(w, header.request_api_version)
    assert frame(len(w)) + w.getvalue() == data
    return header, msg


@pytest.mark.parametrize("byte_at_a_time", [False, True], ids=["whole", "byte-at-a-time"])
def test_librdkafka_api_versions_v3(byte_at_a_time: bool) -> None:
    header, msg = decode_request("librdkafka_api_versions_first", byte_at_a_time=byte_at_a_time)
    assert (header.request_api_key, header.request_api_version, header.header_version) == (18, 3, 2)
    assert header.client_id == "rdkafka"
    assert header.tagged_fields == {}
    assert isinstance(msg, ApiVersionsRequest)
    assert msg.client_software_name == "confluent-kafka-python"
    assert msg.client_software_version.startswith("2.") and "rdkafka" in msg.client_software_version


@pytest.mark.parametrize("byte_at_a_time", [False, True], ids=["whole", "byte-at-a-time"])
def test_librdkafka_retries_with_api_versions_v0_after_the_fallback(byte_at_a_time: bool) -> None:
    header, msg = decode_request("librdkafka_api_versions_v0_retry", byte_at_a_time=byte_at_a_time)
    assert (header.request_api_key, header.request_api_version, header.header_version) == (18, 0, 1)
    assert header.correlation_id == 2 and header.client_id == "rdkafka"
    assert msg == ApiVersionsRequest()


@pytest.mark.parametrize("byte_at_a_time", [False, True], ids=["whole", "byte-at-a-time"])
def test_kafka_python_api_versions_v4(byte_at_a_time: bool) -> None:
    header, msg = decode_request("kafka_python_first_request", byte_at_a_time=byte_at_a_time)
    assert (header.request_api_key, header.request_api_version, header.header_version) == (18, 4, 2)
    assert header.client_id == "kafka-python-producer-1"
    assert (msg.client_software_name, msg.client_software_version) == ("kafka-python", "3.0.12")


@pytest.mark.parametrize("byte_at_a_time", [False, True], ids=["whole", "byte-at-a-time"])
def test_aiokafka_first_request(byte_at_a_time: bool) -> None:
    header, msg = decode_request("aiokafka_first_request", byte_at_a_time=byte_at_a_time)
    assert (header.request_api_key, header.request_api_version, header.header_version) == (18, 0, 1)
    assert header.client_id == "aiokafka-producer-1"
    assert msg == ApiVersionsRequest()
