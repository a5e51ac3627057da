"""The order answers leave in: a long poll woken by an append goes out at once, before the producer's answer.

Which of two sockets was written first cannot be seen from the clients, so the broker runs embedded and its two
connections' writers write to transports that record the order; everything else (dispatch, handlers, log,
watchers) is the broker's own.
"""

from __future__ import annotations

import asyncio
import time

from pykbroker.dispatch import Dispatcher
from pykbroker.embedded_broker import EmbeddedBroker
from pykbroker.response_writer import ResponseWriter
from wire import ApiKey, Reader, RequestHeader, Writer, build_simple_batch, encode_request_header
from wire.messages import CreateTopicsRequest, FetchRequest, FetchResponse, ProduceRequest
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData


class _Recorder:
    """A transport that appends (name, bytes) of each write to a shared list."""

    def __init__(self, name: str, log: list[tuple[str, bytes]]) -> None:
        self.name = name
        self.log = log

    def write(self, data: bytes) -> None:
        self.log.append((self.name, bytes(data)))

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


def _frame(api_key: int, version: int, request, correlation_id: int) -> bytearray:
    w = Writer()
    encode_request_header(w, RequestHeader(api_key, version, correlation_id, "client", header_version=2))
    request.encode_into(w, version)
    return bytearray(w.getvalue())


async def _topic(broker, producer: Dispatcher, name: str):
    """Create ``name`` (one partition) through ``producer``'s connection; its topic id once the log exists."""
    await producer.dispatch(_frame(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
        topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)], timeout_ms=30_000), 1),
        "User:ANONYMOUS")
    deadline = time.monotonic() + 30
    while broker.replica_manager.get_partition(name, 0) is None:
        assert time.monotonic() < deadline, "the topic was not created"
        await asyncio.sleep(0.01)
    return broker.metadata.image.topics[name].topic_id


def _fetch(topic_id, max_wait_ms: int) -> FetchRequest:
    return FetchRequest(max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20, session_id=0, session_epoch=-1,
                        topics=[FetchTopic(topic_id=topic_id, partitions=[FetchPartition(
                            partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])


def test_a_long_poll_woken_by_an_append_is_answered_before_the_producer_and_in_that_loop_pass():
    with EmbeddedBroker({"num.partitions": "1"}) as embedded:
        server = embedded.server
        assert server is not None and server.broker is not None and embedded._loop is not None
        broker = server.broker
        listener = server.config.listeners[0]

        async def scenario() -> tuple[list[tuple[str, bytes]], bool]:
            writes: list[tuple[str, bytes]] = []
            producer = Dispatcher(broker, listener, "p", ResponseWriter(_Recorder("produce", writes), None,
                                                                        lambda: None))  # type: ignore[arg-type]
            consumer = Dispatcher(broker, listener, "c", ResponseWriter(_Recorder("fetch", writes), None,
                                                                        lambda: None))  # type: ignore[arg-type]
            topic_id = await _topic(broker, producer, "tail")
            writes.clear()
            fetch = _fetch(topic_id, 30_000)
            waiting = asyncio.ensure_future(consumer.dispatch(_frame(ApiKey.FETCH, 16, fetch, 2), "User:ANONYMOUS"))
            while broker.replica_manager.watchers.waiting(("tail", 0)) == 0:
                assert not waiting.done(), "the fetch did not wait"
                await asyncio.sleep(0)
            produce = ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
                topic_id=topic_id, partition_data=[PartitionProduceData(
                    index=0, records=build_simple_batch([b"v"], timestamp=1_700_000_000_000))])])
            await producer.dispatch(_frame(ApiKey.PRODUCE, 13, produce, 3), "User:ANONYMOUS")
            # Both answers were written by the time the produce's handling returned: none waits for a later pass.
            return list(writes), waiting.done()

        writes, fetch_done = asyncio.run_coroutine_threadsafe(scenario(), embedded._loop).result(60)
    assert fetch_done
    assert [name for name, _ in writes] == ["fetch", "produce"]
    r = Reader(writes[0][1][8:])  # size and correlation id
    r.tagged_fields()
    answer = FetchResponse.decode_from(r, 16)
    assert answer.responses[0].partitions[0].high_watermark == 1
    assert len(answer.responses[0].partitions[0].records) > 0


def test_a_fetch_answer_with_file_regions_is_all_written_when_its_handling_returns():
    with EmbeddedBroker({"num.partitions": "1"}) as embedded:
        server = embedded.server
        assert server is not None and server.broker is not None and embedded._loop is not None
        broker = server.broker
        listener = server.config.listeners[0]

        async def scenario() -> tuple[int, int]:
            writes: list[tuple[str, bytes]] = []
            client = Dispatcher(broker, listener, "c", ResponseWriter(_Recorder("c", writes), None,
                                                                      lambda: None))  # type: ignore[arg-type]
            topic_id = await _topic(broker, client, "large")
            records = build_simple_batch([b"v" * 40_000], timestamp=1_700_000_000_000)  # a region, not copied
            await client.dispatch(_frame(ApiKey.PRODUCE, 13, ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[
                TopicProduceData(topic_id=topic_id, partition_data=[PartitionProduceData(index=0, records=records)])]),
                2), "User:ANONYMOUS")
            await asyncio.sleep(0)  # the produce answer's end-of-pass flush
            writes.clear()
            await client.dispatch(_frame(ApiKey.FETCH, 16, _fetch(topic_id, 0), 3), "User:ANONYMOUS")
            data = b"".join(d for _, d in writes)
            return len(data), int.from_bytes(data[:4], "big") + 4

        written, framed = asyncio.run_coroutine_threadsafe(scenario(), embedded._loop).result(60)
    assert written == framed > 40_000  # the bytes after the records too, not left for the end of the pass
