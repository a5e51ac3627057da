"""DescribeClientQuotas and AlterClientQuotas over a socket; byte-rate quotas throttle produce and fetch."""

from __future__ import annotations

import time

from pykbroker.testing import RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
    FetchRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.alter_client_quotas_request import EntityData, EntryData, OpData
from wire.messages.describe_client_quotas_request import ComponentData
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData


def alter(c: RawClient, client_id: str | None, **values: float | None):
    r = c.request(AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
        entity=[EntityData(entity_type="client-id", entity_name=client_id)],
        ops=[OpData(key=k, value=v or 0.0, remove=v is None) for k, v in values.items()])]), 1)
    return [(e.error_code, e.error_message) for e in r.entries]


def described(c: RawClient) -> list:
    r = c.request(DescribeClientQuotasRequest(components=[ComponentData(entity_type="client-id", match_type=2,
                                                                        match=None)], strict=False), 1)
    assert r.error_code == ErrorCode.NONE
    return sorted(([(e.entity_type, e.entity_name) for e in entry.entity], sorted((v.key, v.value) for v in entry.values))
                  for entry in r.entries)


def test_quotas_are_altered_described_and_kept_across_restarts(fresh_broker):
    with RawClient(fresh_broker.bootstrap) as c:
        assert alter(c, "cq-a", producer_byte_rate=1024.0, request_percentage=50.0) == [(ErrorCode.NONE, None)]
        assert alter(c, "cq-a", request_percentage=None) == [(ErrorCode.NONE, None)]
        assert alter(c, "cq-b", producer_byte_rate=1.5) == [
            (ErrorCode.INVALID_REQUEST, "producer_byte_rate cannot be a fractional value.")]
    fresh_broker.restart(hard=True)
    with RawClient(fresh_broker.bootstrap) as c:
        assert described(c) == [([("client-id", "cq-a")], [("producer_byte_rate", 1024.0)])]


def test_a_client_over_its_byte_rate_is_told_to_wait(broker):
    with RawClient(broker.bootstrap, client_id="cq-slow") as slow, RawClient(broker.bootstrap) as admin:
        admin.wait_for_topics("cq-t", auto_create=True)
        assert alter(admin, "cq-slow", producer_byte_rate=16_000.0, consumer_byte_rate=10_000.0)[0][0] == 0
        batch = build_simple_batch([b"x" * 50_000] * 4, timestamp=int(time.time() * 1000))  # 200 kB
        produced = slow.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="cq-t", partition_data=[PartitionProduceData(index=0, records=batch)])]), 9)
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE  # stored, then throttled
        # 200 kB over the 10 s window is 20 kB/s against 16 kB/s: wait (20 - 16) / 16 * 10 s
        assert 2_000 <= produced.throttle_time_ms <= 3_000
        fetched = slow.request(FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(
            topic="cq-t", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                               12)  # answered only after the produce's throttle time has passed
        assert fetched.throttle_time_ms > 0 and fetched.responses == []  # over its quota: nothing this time
        with RawClient(broker.bootstrap, client_id="cq-fast") as fast:
            other = fast.request(FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(
                topic="cq-t", partitions=[FetchPartition(partition=0, fetch_offset=0,
                                                         partition_max_bytes=1 << 20)])]), 12)
        assert other.throttle_time_ms == 0 and len(other.responses[0].partitions[0].records) > 200_000


def test_a_consumer_reads_no_more_than_its_quota_allows_in_one_window(broker):
    """As Kafka's handleFetchRequest: max_bytes is capped by consumer_byte_rate times the quota window (1,000 B/s
    over Kafka's 10 s: 10 kB), the first batch whole; a client without a quota reads all it asked for."""
    def fetch(c: RawClient) -> int:
        r = c.request(FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchTopic(
            topic="cq-cap", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                      12)
        assert r.throttle_time_ms == 0
        return len(r.responses[0].partitions[0].records)

    with RawClient(broker.bootstrap, client_id="cq-capped") as capped, RawClient(broker.bootstrap) as admin:
        admin.wait_for_topics("cq-cap", auto_create=True)
        for _ in range(20):  # 20 batches of ~2 kB
            produced = admin.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(
                name="cq-cap", partition_data=[PartitionProduceData(
                    index=0, records=build_simple_batch([b"y" * 2_000], timestamp=int(time.time() * 1000)))])]), 9)
            assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        assert alter(admin, "cq-capped", consumer_byte_rate=1_000.0)[0][0] == 0
        assert 2_000 < fetch(capped) <= 10_000
        assert fetch(admin) > 40_000


def test_a_client_over_its_request_percentage_is_throttled_one_window_at_most(broker):
    """request_percentage (Kafka's request quota): the broker's time on a client's requests, as a percentage of
    one thread. Over it, responses carry a throttle time of at most one quota window (1 s by default), a fetch
    is answered empty, and other clients are not affected."""
    with RawClient(broker.bootstrap, client_id="cq-busy") as busy, RawClient(broker.bootstrap) as admin:
        admin.wait_for_topics("cq-r", auto_create=True)
        assert alter(admin, "cq-busy", request_percentage=0.001) == [(ErrorCode.NONE, None)]
        try:
            throttles = []
            for _ in range(50):  # each Metadata request takes tens of microseconds: over 0.001% quickly
                throttles.append(busy.request(MetadataRequest(topics=None), 12).throttle_time_ms)
                if throttles[-1] > 0:
                    break
            assert 0 < throttles[-1] <= 1_000, throttles
            fetched = busy.request(FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(
                topic="cq-r", partitions=[FetchPartition(partition=0, fetch_offset=0,
                                                         partition_max_bytes=1 << 20)])]), 12)
            assert 0 < fetched.throttle_time_ms <= 1_000 and fetched.responses == []
            with RawClient(broker.bootstrap, client_id="cq-other") as other:
                assert other.request(MetadataRequest(topics=None), 12).throttle_time_ms == 0
        finally:
            assert alter(admin, "cq-busy", request_percentage=None) == [(ErrorCode.NONE, None)]
