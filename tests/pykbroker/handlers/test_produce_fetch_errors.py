"""Every error Produce and Fetch answer with, provoked over a real socket, as Kafka answers them."""

from __future__ import annotations

import time
import uuid

from crc32c import crc32c

from pykbroker.testing import RawClient
from wire import CompressionType, ErrorCode, build_simple_batch
from wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    FetchRequest,
    ProduceRequest,
)
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

NOW = int(time.time() * 1000)


def create(c, name: str, **configs: str) -> uuid.UUID:
    topic = CreatableTopic(name=name, num_partitions=1, replication_factor=1,
                           configs=[CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()])
    result = c.request(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 7).topics[0]
    assert result.error_code == ErrorCode.NONE
    return result.topic_id


def batch(count: int = 3, *, size: int = 10, timestamp: int = NOW, keys: bool = True) -> bytes:
    return build_simple_batch([b"x" * size] * count, keys=[b"k%d" % i for i in range(count)] if keys else None,
                              timestamp=timestamp)


def lz4_batch_with_flg(flg_clear: int) -> bytes:
    """An lz4 batch whose frame descriptor has the FLG bits ``flg_clear`` cleared (its checksums made right again)."""
    import crc32c
    import xxhash
    data = bytearray(build_simple_batch([b"hello hello hello"] * 3, timestamp=NOW, compression=CompressionType.LZ4))
    frame = 61  # the records section of a v2 batch
    assert data[frame:frame + 4] == b"\x04\x22\x4d\x18"
    data[frame + 4] &= ~flg_clear & 0xFF
    data[frame + 6] = (xxhash.xxh32_intdigest(bytes(data[frame + 4:frame + 6])) >> 8) & 0xFF
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def garbled_batch(codec: CompressionType) -> bytes:
    """A ``codec`` batch whose compressed records are garbled in the middle, its CRC made right again."""
    data = bytearray(build_simple_batch([b"hello hello hello " * 20] * 5, timestamp=NOW, compression=codec))
    middle = 61 + (len(data) - 61) // 2
    for i in range(middle, middle + 8):
        data[i] ^= 0x5A
    data[17:21] = crc32c(bytes(data[21:])).to_bytes(4, "big")
    return bytes(data)


def produce(c, topic: str, records: bytes, *, acks: int = -1, partition: int = 0, version: int = 11,
            topic_id: uuid.UUID | None = None):
    data = TopicProduceData(name=topic, partition_data=[PartitionProduceData(index=partition, records=records)])
    if topic_id is not None:
        data.topic_id = topic_id
    response = c.request(ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[data]), version)
    return response.responses[0].partition_responses[0]


def fetch(c, topic: str, offset: int, *, epoch: int = -1, version: int = 12, topic_id: uuid.UUID | None = None):
    t = FetchTopic(topic=topic, partitions=[FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=epoch,
                                                           partition_max_bytes=1 << 20)])
    if topic_id is not None:
        t.topic_id = topic_id
    response = c.request(FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[t]), version)
    return response.responses[0].partitions[0]


def test_produce_errors(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "pe-a")
        create(c, "pe-small", max_message_bytes="1000")
        create(c, "pe-compacted", cleanup_policy="compact")
        create(c, "pe-isr", min_insync_replicas="2")
        assert produce(c, "pe-a", batch(), acks=2).error_code == ErrorCode.INVALID_REQUIRED_ACKS
        assert produce(c, "pe-a", batch(), partition=7).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produce(c, "pe-missing", batch()).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert produce(c, "", batch(), version=13, topic_id=uuid.uuid4()).error_code == ErrorCode.UNKNOWN_TOPIC_ID
        corrupt = bytearray(batch())
        corrupt[-1] ^= 0xFF  # the CRC no longer matches
        assert produce(c, "pe-a", bytes(corrupt)).error_code == ErrorCode.CORRUPT_MESSAGE
        # Kafka's lz4 reader refuses dependent blocks (as lz4js, used by KafkaJS codecs, marks its frames) with a
        # RuntimeException: UNKNOWN_SERVER_ERROR, judged by Kafka 4.4 in compat_tests/test_kafkajs.py's history
        assert produce(c, "pe-a", lz4_batch_with_flg(0)).error_code == ErrorCode.NONE
        assert produce(c, "pe-a", lz4_batch_with_flg(0x20)).error_code == ErrorCode.UNKNOWN_SERVER_ERROR
        # Kafka decompresses every compressed client batch: data that does not decompress (its CRC made right) fails
        # with UNKNOWN_SERVER_ERROR and no message, as Kafka 4.4 answered gzip and lz4 garbage; none of it is stored.
        for codec in (CompressionType.GZIP, CompressionType.LZ4):
            garbled = produce(c, "pe-a", garbled_batch(codec))
            assert (garbled.error_code, garbled.error_message) == (ErrorCode.UNKNOWN_SERVER_ERROR, None), codec
        too_large = produce(c, "pe-small", batch(1, size=2000))
        assert (too_large.error_code, too_large.error_message) == (ErrorCode.MESSAGE_TOO_LARGE, None)
        inconsistent = bytearray(batch(3))
        inconsistent[57:61] = (5).to_bytes(4, "big")  # a record count the offsets do not span
        inconsistent[17:21] = crc32c(bytes(inconsistent[21:])).to_bytes(4, "big")
        # a refused batch (not a refused record) gets Kafka's code without its message
        assert (produce(c, "pe-a", bytes(inconsistent)).error_code, produce(c, "pe-a", bytes(inconsistent)).error_message) \
            == (ErrorCode.INVALID_RECORD, None)
        future = produce(c, "pe-a", batch(timestamp=NOW + 2 * 3_600_000))  # message.timestamp.after.max.ms: 1 h
        assert future.error_code == ErrorCode.INVALID_TIMESTAMP
        keyless = produce(c, "pe-compacted", batch(keys=False))
        assert keyless.error_code == ErrorCode.INVALID_RECORD and keyless.error_message
        # Kafka caps min.insync.replicas at the replication factor (1 here); see tests/replication/test_partition.py
        assert produce(c, "pe-isr", batch()).error_code == ErrorCode.NONE
        ok = produce(c, "pe-a", batch(), version=13, topic_id=create(c, "pe-by-id"))
        assert (ok.error_code, ok.base_offset) == (ErrorCode.NONE, 0)


def test_acks_zero_gets_no_response(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "pe-acks0")
        request = ProduceRequest(acks=0, timeout_ms=5000, topic_data=[TopicProduceData(
            name="pe-acks0", partition_data=[PartitionProduceData(index=0, records=batch())])])
        c.send(request, 9)
        correlation_id = c.send(ApiVersionsRequest(), 0)
        got, _ = c.recv(ApiVersionsResponse, 0)
        assert got == correlation_id  # the first answer on the connection is the ApiVersions one
        assert fetch(c, "pe-acks0", 0).high_watermark == 3


def test_fetch_errors_and_empty_records(broker):
    with RawClient(broker.bootstrap) as c:
        topic_id = create(c, "fe-a")
        assert produce(c, "fe-a", batch()).error_code == ErrorCode.NONE
        at_end = fetch(c, "fe-a", 3)
        assert (at_end.error_code, at_end.records, at_end.high_watermark) == (ErrorCode.NONE, b"", 3)
        out_of_range = fetch(c, "fe-a", 50)
        assert (out_of_range.error_code, out_of_range.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, -1)
        assert fetch(c, "fe-a", 0, epoch=5).error_code == ErrorCode.UNKNOWN_LEADER_EPOCH
        assert fetch(c, "fe-a", 0, epoch=0).error_code == ErrorCode.NONE
        assert fetch(c, "", 0, version=13, topic_id=uuid.uuid4()).error_code == ErrorCode.UNKNOWN_TOPIC_ID
        by_id = fetch(c, "", 0, version=13, topic_id=topic_id)
        assert by_id.error_code == ErrorCode.NONE and len(by_id.records) == len(batch())
        assert fetch(c, "fe-missing", 0).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_each_partition_takes_exactly_one_magic_2_batch(broker):
    from wire import CompressionType
    with RawClient(broker.bootstrap) as c:
        create(c, "pe-one")
        magic_1 = bytes.fromhex("0000000000000000" "00000022" "9ed6b0e9" "01" "00" "00000171a1b2c3d4" "ffffffff"
                                "00000008" "6f6c642d666d7421")
        assert produce(c, "pe-one", magic_1).error_code == ErrorCode.INVALID_RECORD
        assert produce(c, "pe-one", batch() + batch()).error_code == ErrorCode.INVALID_RECORD
        assert produce(c, "pe-one", batch()[:30]).error_code == ErrorCode.INVALID_RECORD  # no whole batch
        zstd = build_simple_batch([b"z"], timestamp=NOW, compression=CompressionType.ZSTD)
        assert produce(c, "pe-one", zstd, version=6).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        assert produce(c, "pe-one", zstd, version=7).error_code == ErrorCode.NONE


def test_a_failed_acks_0_produce_closes_the_connection(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "pe-acks0-err")
    with RawClient(broker.bootstrap) as c:
        c.send(ProduceRequest(acks=0, timeout_ms=5000, topic_data=[TopicProduceData(
            name="pe-acks0-err", partition_data=[PartitionProduceData(index=0, records=batch())])]), 9)
        assert not c.is_closed_by_peer(1.0)  # success: no answer, connection kept
    with RawClient(broker.bootstrap) as c:
        c.send(ProduceRequest(acks=0, timeout_ms=5000, topic_data=[TopicProduceData(
            name="pe-acks0-err", partition_data=[PartitionProduceData(index=3, records=batch())])]), 9)
        assert c.is_closed_by_peer()  # how an acks=0 producer learns of the error
