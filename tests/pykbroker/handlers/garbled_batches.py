"""Client batches whose records are garbled under a valid CRC, and the scenario that produces each one raw and
reads the partitions back: shared by test_produce_garbled_records (pykbroker alone) and
compat_tests/test_differential_kafka44 (the same bytes against Kafka 4.4)."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from crc32c import crc32c

from wire import CompressionType, compress
from wire.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

NOW = int(time.time() * 1000)
_HEADER = struct.Struct(">qiibIhiqqqhii")


def varint(value: int) -> bytes:
    """A zigzag varint (any width: a test may write an overlong one with ``pad``)."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u >= 0x80:
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def overlong(value: int, width: int) -> bytes:
    """``value`` as a zigzag varint padded with continuation bytes to ``width`` bytes."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    for _ in range(width - 1):
        out.append(u & 0x7F | 0x80)
        u >>= 7
    out.append(u & 0x7F)
    return bytes(out)


def body(offset_delta: int, key: bytes | None = b"k", value: bytes | None = b"value", headers=(), *,
         key_len: int | None = None, value_len: int | None = None, header_count: int | None = None,
         offset_field: bytes | None = None, ts_field: bytes | None = None) -> bytes:
    """A record's body (what its length varint counts); the ``*_len``/``*_count``/``*_field`` arguments garble it."""
    out = bytearray(b"\x00")
    out += varint(0) if ts_field is None else ts_field
    out += varint(offset_delta) if offset_field is None else offset_field
    out += varint((-1 if key is None else len(key)) if key_len is None else key_len) + (key or b"")
    out += varint((-1 if value is None else len(value)) if value_len is None else value_len) + (value or b"")
    out += varint(len(headers) if header_count is None else header_count)
    for k, v in headers:
        out += varint(len(k)) + k + varint(-1 if v is None else len(v)) + (v or b"")
    return bytes(out)


def record(payload: bytes, size: int | None = None, size_field: bytes | None = None) -> bytes:
    """A record: its length varint (``size`` or ``size_field`` garbles it) and ``payload``."""
    if size_field is None:
        size_field = varint(len(payload) if size is None else size)
    return size_field + payload


def good(n: int = 3, key: bytes | None = b"k") -> bytes:
    return b"".join(record(body(i, key, b"value-%d" % i)) for i in range(n))


def tail(n: int = 3) -> bytes:
    """Records 1 to ``n`` - 1 of ``good(n)``: what follows a garbled record 0."""
    return good(n)[len(record(body(0, b"k", b"value-0"))):]


def batch(records: bytes, count: int, *, codec: CompressionType = CompressionType.NONE,
          last_offset_delta: int | None = None) -> bytes:
    """A v2 client batch around ``records`` (compressed with ``codec``), its CRC right."""
    section = compress(codec, records) if codec else records
    header = bytearray(_HEADER.pack(0, 49 + len(section), -1, 2, 0, int(codec),
                                    count - 1 if last_offset_delta is None else last_offset_delta, NOW, NOW, -1, -1,
                                    -1, count))
    out = header + section
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


GZ = CompressionType.GZIP

# (topic, batch): "plain", "lz4_topic" (compression.type=lz4) and "compacted*" (cleanup.policy=compact) topics; what each case is named for is garbled, all else is right
CASES: dict[str, tuple[str, bytes]] = {
    "well_formed": ("plain", batch(good(), 3)),
    "size_beyond_record": ("plain", batch(record(body(0), len(body(0)) + 1) + tail(), 3)),
    "size_short_of_record": ("plain", batch(record(body(0), len(body(0)) - 1) + tail(), 3)),
    "size_past_batch": ("plain", batch(good(2) + record(body(2), 200), 3)),
    "size_negative": ("plain", batch(record(body(0), -1) + tail(), 3)),
    "size_varint_too_long": ("plain", batch(record(body(0), size_field=b"\xff\xff\xff\xff\xff\x01")
                                            + tail(), 3)),
    "offset_varint_too_long": ("plain", batch(record(body(0, offset_field=overlong(0, 6))) + tail(), 3)),
    "timestamp_varlong_too_long": ("plain", batch(record(body(0, ts_field=overlong(0, 11)))
                                                  + tail(), 3)),
    "offset_varint_5_bytes": ("plain", batch(record(body(0, offset_field=overlong(0, 5))) + tail(), 3)),
    "bytes_left_over": ("plain", batch(good(3) + b"\x00\x00", 3)),
    "record_missing": ("plain", batch(good(3), 4)),
    "records_beyond_count": ("plain", batch(good(4), 3)),
    "negative_header_count": ("plain", batch(record(body(0, header_count=-1)) + tail(), 3)),
    "header_count_past_record": ("plain", batch(record(body(0, header_count=60)) + tail(), 3)),
    "negative_header_key": ("plain", batch(record(body(0, headers=[(b"h", b"v")])[:-5] + varint(-1) + b"h"
                                                  + varint(1) + b"v"), 1)),
    "header_value_past_record": ("plain", batch(record(body(0, headers=[(b"h", b"v")])[:-2] + varint(9) + b"v")
                                                + tail(), 3)),
    "key_past_record": ("plain", batch(record(body(0, key_len=4)) + tail(), 3)),
    "key_past_batch": ("plain", batch(good(2) + record(body(2, key_len=5000)), 3)),
    "value_past_batch": ("plain", batch(good(2) + record(body(2, value_len=5000)), 3)),
    "key_length_minus_5": ("plain", batch(record(body(0, None, key_len=-5)) + tail(), 3)),
    "offset_deltas_out_of_order": ("plain", batch(record(body(0)) + record(body(2)) + record(body(1)), 3)),
    "offset_deltas_with_gap": ("plain", batch(record(body(0)) + record(body(1)) + record(body(7)), 3)),
    "second_batch_garbled": ("plain", batch(good(), 3) + batch(good(3) + b"\x00", 3)),
    "record_attributes_set": ("plain", batch(record(b"\x7f" + body(0)[1:]) + tail(), 3)),
    "gzip_well_formed": ("plain", batch(good(), 3, codec=GZ)),
    "gzip_size_beyond_record": ("plain", batch(record(body(0), len(body(0)) + 1) + tail(), 3,
                                               codec=GZ)),
    "gzip_size_past_batch": ("plain", batch(good(2) + record(body(2), 200), 3, codec=GZ)),
    "gzip_size_varint_too_long": ("plain", batch(record(body(0), size_field=b"\xff\xff\xff\xff\xff\x01")
                                                 + tail(), 3, codec=GZ)),
    "gzip_bytes_left_over": ("plain", batch(good(3) + b"\x00\x00", 3, codec=GZ)),
    "gzip_record_missing": ("plain", batch(good(3), 4, codec=GZ)),
    "gzip_negative_header_count": ("plain", batch(record(body(0, header_count=-1)) + tail(),
                                                  3, codec=GZ)),
    "gzip_key_past_batch": ("plain", batch(good(2) + record(body(2, key_len=5000)), 3, codec=GZ)),
    "gzip_offset_varint_too_long": ("plain", batch(record(body(0, offset_field=overlong(0, 6)))
                                                   + tail(), 3, codec=GZ)),
    "gzip_offset_deltas_out_of_order": ("plain", batch(record(body(0)) + record(body(2)) + record(body(1)), 3,
                                                       codec=GZ)),
    "gzip_size_negative": ("plain", batch(record(body(0), -1) + tail(), 3, codec=GZ)),
    "gzip_offset_deltas_from_1": ("plain", batch(record(body(1)) + record(body(2)) + record(body(3)), 3, codec=GZ)),
    "header_value_null": ("plain", batch(record(body(0, headers=[(b"h", None)])) + tail(), 3)),
    "timestamp_delta_negative": ("plain", batch(record(body(0, ts_field=varint(-5))) + tail(), 3)),
    # a topic whose compression.type (lz4) rebuilds every other batch: Kafka reads those records whole, renumbered
    "lz4_topic_offset_deltas_out_of_order": ("lz4_topic", batch(record(body(0)) + record(body(2)) + record(body(1)), 3)),
    "lz4_topic_offset_deltas_with_gap": ("lz4_topic", batch(record(body(0)) + record(body(1)) + record(body(7)), 3)),
    "lz4_topic_size_varint_too_long": ("lz4_topic", batch(record(body(0), size_field=b"\xff\xff\xff\xff\xff\x01")
                                                          + tail(), 3)),
    "lz4_topic_gzip_size_beyond_record": ("lz4_topic", batch(record(body(0), len(body(0)) + 1) + tail(), 3, codec=GZ)),
    "lz4_topic_gzip_size_varint_too_long": ("lz4_topic", batch(record(body(0), size_field=b"\xff\xff\xff\xff\xff\x01")
                                                               + tail(), 3, codec=GZ)),
    "lz4_topic_gzip_offset_deltas_out_of_order": ("lz4_topic", batch(record(body(0)) + record(body(2))
                                                                     + record(body(1)), 3, codec=GZ)),
    "compacted_size_beyond_record": ("compacted", batch(record(body(0), len(body(0)) + 1)
                                                        + tail(), 3)),
    "compacted_gzip_null_key": ("compacted", batch(good(1) + record(body(1, None)) + record(body(2, None)), 3,
                                                   codec=GZ)),
    # Kafka refuses the keyless record before failing to rebuild the batch (its offsets out of order)
    "compacted_gzip_null_key_out_of_order": ("compacted", batch(record(body(0, None)) + record(body(2))
                                                                + record(body(1)), 3, codec=GZ)),
    "compacted_gzip_size_beyond_record": ("compacted", batch(record(body(0), len(body(0)) + 1)
                                                             + tail(), 3, codec=GZ)),
}

# What Kafka 4.4 answers each case (error code; no message and no record errors but for the compacted topic's
# keyless records, RECORD_ERRORS), seen with these bytes against a Kafka 4.4 single node: 0 stores the batch, whole.
KAFKA_44: dict[str, int] = {
    "well_formed": 0, "size_beyond_record": 87, "size_short_of_record": 87, "size_past_batch": 87,
    "size_negative": 87, "size_varint_too_long": -1, "offset_varint_too_long": 87, "timestamp_varlong_too_long": 87,
    "offset_varint_5_bytes": 0, "bytes_left_over": 87, "record_missing": 87, "records_beyond_count": 87,
    "negative_header_count": 87, "header_count_past_record": 87, "negative_header_key": 87,
    "header_value_past_record": 87, "key_past_record": 87, "key_past_batch": 87, "value_past_batch": 87,
    "key_length_minus_5": 0, "offset_deltas_out_of_order": 0, "offset_deltas_with_gap": 0, "second_batch_garbled": 87,
    "record_attributes_set": 0, "gzip_well_formed": 0,
    # Kafka reads a compressed batch in place without its record lengths: it stores what its consumers cannot read
    "gzip_size_beyond_record": 0, "gzip_size_past_batch": 0,
    "gzip_size_varint_too_long": 87, "gzip_bytes_left_over": 87, "gzip_record_missing": 87,
    "gzip_negative_header_count": 87, "gzip_key_past_batch": 87, "gzip_offset_varint_too_long": 87,
    "gzip_offset_deltas_out_of_order": -1, "gzip_size_negative": 87, "gzip_offset_deltas_from_1": -1,
    "header_value_null": 0, "timestamp_delta_negative": 0,
    "lz4_topic_offset_deltas_out_of_order": 0, "lz4_topic_offset_deltas_with_gap": 0,  # stored as offsets 0, 1, 2
    "lz4_topic_size_varint_too_long": -1, "lz4_topic_gzip_size_beyond_record": 87,
    "lz4_topic_gzip_size_varint_too_long": 87, "lz4_topic_gzip_offset_deltas_out_of_order": 0,
    "compacted_size_beyond_record": 87, "compacted_gzip_null_key": 87, "compacted_gzip_null_key_out_of_order": 87,
    "compacted_gzip_size_beyond_record": 0,
}

# The cases answered with record errors (the batch indexes of the refused records) and Kafka's message for them.
RECORD_ERRORS: dict[str, list[int]] = {"compacted_gzip_null_key": [1, 2], "compacted_gzip_null_key_out_of_order": [0]}


def _create(c, name: str, **configs: str) -> None:
    c.request(CreateTopicsRequest(topics=[CreatableTopic(
        name=name, num_partitions=1, replication_factor=1,
        configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])], timeout_ms=10_000), 7)
    c.wait_for_topics(name)


def produce(c, topic: str, records: bytes, version: int = 11) -> tuple:
    """(error code, error message, record errors) of one raw produce of ``records``."""
    r = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]), version)
    p = r.responses[0].partition_responses[0]
    return p.error_code, p.error_message, [(e.batch_index, e.batch_index_error_message) for e in p.record_errors]


def fetched(c, topic: str) -> tuple[int, list[tuple[int, bytes | None]]]:
    """(high watermark, [(offset, key)]) of partition 0 read from the start."""
    from wire import InvalidRecordError, decode_records, iter_batch_headers
    r = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                               topics=[FetchTopic(topic=topic, partitions=[FetchPartition(
                                   partition=0, fetch_offset=0, current_leader_epoch=-1, partition_max_bytes=1 << 20)])]),
                  12)
    p = r.responses[0].partitions[0]
    data = p.records or b""
    out = []
    for pos, header in iter_batch_headers(data):
        try:
            out += [(header.base_offset + rec.offset_delta, rec.key) for rec in decode_records(data, pos)[1]]
        except InvalidRecordError:
            out.append((header.base_offset, b"<undecodable batch>"))
    return p.high_watermark, out


def garbled_records(c, cases: dict[str, tuple[str, bytes]] = CASES, prefix: str = "garbled", *,
                    topic_per_case: bool = False) -> dict[str, object]:
    """Each case produced raw, then the topics read back: one topic per case (a refused one shows nothing stored),
    or, quicker on Kafka, one per kind of topic, read back once after every case."""
    out: dict[str, object] = {}
    created: set[str] = set()
    for name, (kind, data) in cases.items():
        topic = f"{prefix}-{name if topic_per_case else kind}".replace("_", "-")
        if topic not in created:
            _create(c, topic, **({"cleanup.policy": "compact"} if kind.startswith("compacted")
                                 else {"compression.type": "lz4"} if kind == "lz4_topic" else {}))
            created.add(topic)
        out[name] = produce(c, topic, data)
        if topic_per_case:
            out[f"{name} read back"] = fetched(c, topic)
    if not topic_per_case:
        for kind in sorted({kind for kind, _ in cases.values()}):
            out[f"{kind} read back"] = fetched(c, f"{prefix}-{kind}".replace("_", "-"))
    return out


Scenario = Callable[[object], dict[str, object]]
