"""Answers of a broker that follows a partition, over a real socket (the broker runs in this process so
the test can register a second broker and move leadership): Produce says NOT_LEADER_OR_FOLLOWER with the
current leader and its endpoint (KIP-951), a consumer's Fetch v11+ is served (KIP-392); Metadata names the leader, or LEADER_NOT_AVAILABLE
and the offline replicas when the leader is not registered."""

from __future__ import annotations

import asyncio

from pykbroker.config import Config
from pykbroker.server import Server
from replication.broker_client import BrokerClient
from replication.metadata.image import BrokerImage, Endpoint, PartitionState
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    FetchRequest,
    FetchResponse,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    ProduceResponse,
)
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

TOPIC = "hinted"


async def scenario(tmp_path) -> None:
    server = Server(Config({"listeners": "PLAINTEXT://127.0.0.1:0", "node.id": "1", "log.dirs": str(tmp_path)}))
    await server.start()
    broker = server.broker
    port = broker.bound_listeners["PLAINTEXT"].port
    client = BrokerClient(1, "127.0.0.1", port, client_id="hints-test")
    try:
        await broker.metadata.create_topic(TOPIC, [[1, 2]], {})
        await broker.metadata.register_broker(BrokerImage(2, (Endpoint("PLAINTEXT", "other.example", 9999),), "r2"))
        await broker.metadata.alter_partition(TOPIC, 0, PartitionState(0, 2, 3, (2, 1), (2, 1), partition_epoch=1))
        assert broker.replica_manager.get_partition(TOPIC, 0).is_follower

        produce = await client.request(ProduceRequest(acks=1, timeout_ms=1000, topic_data=[TopicProduceData(
            name=TOPIC, partition_data=[PartitionProduceData(index=0, records=build_simple_batch(
                [b"v"], timestamp=1_700_000_000_000))])]), 11, ProduceResponse)
        answer = produce.responses[0].partition_responses[0]
        assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (2, 3)
        assert [(n.node_id, n.host, n.port, n.rack) for n in produce.node_endpoints] == [(2, "other.example", 9999, "r2")]

        fetch = await client.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20,
                                                  session_id=0, session_epoch=-1, topics=[FetchTopic(
                                                      topic=TOPIC, partitions=[FetchPartition(
                                                          partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]),
                                     12, FetchResponse)
        # As Kafka 4.1 (KIP-392): a consumer's Fetch v11+ may be served by a follower, up to its high watermark.
        data = fetch.responses[0].partitions[0]
        assert (data.error_code, data.high_watermark, bytes(data.records)) == (ErrorCode.NONE, 0, b"")

        def metadata_partition(response: MetadataResponse):
            p = response.topics[0].partitions[0]
            return p.error_code, p.leader_id, p.leader_epoch, p.offline_replicas

        request = MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False)
        metadata = await client.request(request, 12, MetadataResponse)
        assert metadata_partition(metadata) == (ErrorCode.NONE, 2, 3, [])
        assert [b.node_id for b in metadata.brokers] == [1, 2]
        # A leader that is not registered (broker 7 never started, or died): no available leader, and its
        # replica is offline.
        await broker.metadata.alter_partition(TOPIC, 0, PartitionState(0, 7, 4, (7, 1), (7,), partition_epoch=2))
        metadata = await client.request(request, 12, MetadataResponse)
        assert metadata_partition(metadata) == (ErrorCode.LEADER_NOT_AVAILABLE, -1, 4, [7])
    finally:
        client.close()
        await server.stop()


def test_a_follower_answers_with_the_current_leader(tmp_path):
    asyncio.run(scenario(tmp_path))
