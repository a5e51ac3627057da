"""pykbroker/txn_marker_channel: the markers queued for a broker while a WriteTxnMarkers to it is out go in the
next request, one marker per producer id, each caller getting its own marker's result from a real broker."""

from __future__ import annotations

import asyncio

from pykbroker.testing import RawClient
from pykbroker.txn_marker_channel import TxnMarkerChannel
from replication.broker_client import BrokerClient
from wire import ErrorCode
from wire.messages import ListOffsetsRequest, WriteTxnMarkersRequest, WriteTxnMarkersResponse
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic


def marker(producer_id: int, topic: str, partitions: list[int]) -> WritableTxnMarker:
    return WritableTxnMarker(producer_id=producer_id, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
                             topics=[WritableTxnMarkerTopic(name=topic, partition_indexes=partitions)])


def test_queued_markers_share_the_next_request(kafka_broker, kafka_topic):
    sent: list[list[int]] = []

    async def scenario() -> list:
        client = BrokerClient(1, "127.0.0.1", kafka_broker.port, client_id="marker-channel-test")

        async def send(node_id: int, markers: list[WritableTxnMarker]) -> list:
            sent.append([m.producer_id for m in markers])
            version = await client.usable_version(WriteTxnMarkersRequest)
            response = await client.request(WriteTxnMarkersRequest(markers=markers), version, WriteTxnMarkersResponse)
            return list(response.markers)

        channel = TxnMarkerChannel(send)
        try:
            first = asyncio.ensure_future(channel.write(1, marker(100, kafka_topic, [0])))
            await asyncio.sleep(0)  # its request is out: the next ones queue behind it
            rest = [channel.write(1, marker(pid, kafka_topic, parts))
                    for pid, parts in ((101, [0]), (102, [0, 9]), (101, [0]), (103, [0]))]
            return [await first, *await asyncio.gather(*rest)]
        finally:
            client.close()

    results = asyncio.run(scenario())
    assert sent == [[100], [101, 102, 103], [101]]
    assert [r.producer_id for r in results] == [100, 101, 102, 101, 103]
    codes = [{p.partition_index: p.error_code for t in r.topics for p in t.partitions} for r in results]
    assert codes == [{0: ErrorCode.NONE}, {0: ErrorCode.NONE},
                     {0: ErrorCode.NONE, 9: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, {0: ErrorCode.NONE},
                     {0: ErrorCode.NONE}]
    with RawClient(kafka_broker.bootstrap) as c:
        r = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=kafka_topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
    assert r.topics[0].partitions[0].offset == 5  # each marker is a record


def test_a_stopped_channel_leaves_no_caller_waiting():
    """The broker stops (its background tasks cancelled) with a request out and markers queued: every caller
    hears an error rather than waiting forever."""
    async def scenario() -> list[BaseException | None]:
        never = asyncio.Event()

        async def unanswered(node_id: int, markers: list[WritableTxnMarker]) -> list:
            await never.wait()
            return []

        senders: list[asyncio.Task] = []

        def spawn(coro):
            senders.append(asyncio.ensure_future(coro))
            return senders[-1]

        channel = TxnMarkerChannel(unanswered, spawn)
        writes = [asyncio.ensure_future(channel.write(2, marker(pid, "t", [0]))) for pid in (1, 1)]
        for _ in range(3):
            await asyncio.sleep(0)
        senders[0].cancel()
        done, _ = await asyncio.wait(writes, timeout=5)
        return [w.exception() if w in done else None for w in writes]

    errors = asyncio.run(scenario())
    assert [type(e) for e in errors] == [RuntimeError, RuntimeError]
