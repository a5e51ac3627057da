"""What one Produce request costs the broker in Python, measured so that a loaded machine hardly moves it.

    python -m bench produce-path         # PRODUCE_PATH_REQUESTS=5000 for more CPU-time blocks

Requests shaped as the Java producer of ``python -m bench broker`` sends them with 1 KiB records (Produce
v13, one partition, one batch of 54 records of 1 KiB: what ProducerPerformance's batches averaged there; and of
800 to 1,200-byte values, as producers of JSON send, whose batches have no one record layout) go through an embedded
broker's ``Dispatcher.dispatch`` in its own event loop, with the response written to nowhere: decode, validation, log
append, indexes, producer state, acks=all wait and response encoding, but no socket. For acks=1 (no producer id, as
the Java producer without idempotence), idempotent acks=all and acks=1 of varying record sizes; then lz4 batches kept
as sent, as ProducerPerformance's with compression.type=lz4 (records of random capital letters, a frame without
content size): 564 records of 100 B and 58 of 1 KiB (what a real ProducerPerformance run's lz4 batches hold,
counted by helper lz4b in stop 23), acks=1:

- bytecodes and Python calls per request, counted by a tracer over 100 requests: the same on every run of the
  same code, whatever else the machine does (a change of the produce path shows as a change of this number);
- CPU microseconds per request (thread time), the fastest of blocks of 250 requests: less steady.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from types import FrameType
from typing import Any

from pykbroker.dispatch import Dispatcher
from pykbroker.embedded_broker import EmbeddedBroker
from pykbroker.response_writer import ResponseWriter
from wire import ApiKey, CompressionType, Record, RequestHeader, Writer, build_batch, encode_request_header
from wire.messages import ProduceRequest
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

RECORDS_PER_REQUEST = 54
RECORD_SIZE = 1024
TRACED = 100  # requests counted bytecode by bytecode
BLOCK = 250  # requests per CPU-time block
PRODUCER_ID = 1000
NONE = CompressionType.NONE


class Nowhere:
    """A transport that takes every response and keeps none."""

    def write(self, data: object) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


_CAPITALS = bytes(65 + b % 26 for b in range(256))  # random bytes to ProducerPerformance's random capital letters


def produce_frames(topic_id: Any, count: int, acks: int, idempotent: bool, varying: bool = False,
                   compression: CompressionType = CompressionType.NONE, records_per_request: int = RECORDS_PER_REQUEST,
                   record_size: int = RECORD_SIZE) -> list[bytes]:
    """``count`` Produce v13 request frames (header and body) of one batch each, sequences following; ``varying``:
    values of 800 to 1,200 bytes (the same on every run), else all of ``record_size``; compressed batches have
    values of random capital letters, each its own (ProducerPerformance's), and timestamp deltas of a few ms."""
    value = os.urandom(RECORD_SIZE)
    sizes = random.Random(0)
    records = [Record(offset_delta=i, timestamp_delta=0, key=None, value=value[:record_size])
               for i in range(records_per_request)]
    frames = []
    for n in range(count):
        if varying:
            records = [Record(offset_delta=i, timestamp_delta=0, key=None, value=value[:sizes.randint(800, 1200)])
                       for i in range(records_per_request)]
        elif compression != CompressionType.NONE:
            letters = os.urandom(records_per_request * record_size).translate(_CAPITALS)
            records = [Record(offset_delta=i, timestamp_delta=i * 5 // records_per_request, key=None,
                              value=letters[i * record_size:(i + 1) * record_size]) for i in range(records_per_request)]
        batch = build_batch(records, base_timestamp=int(time.time() * 1000), compression=compression,
                            producer_id=PRODUCER_ID if idempotent else -1, producer_epoch=0 if idempotent else -1,
                            base_sequence=n * records_per_request if idempotent else -1)
        request = ProduceRequest(transactional_id=None, acks=acks, timeout_ms=30_000, topic_data=[
            TopicProduceData(topic_id=topic_id, partition_data=[PartitionProduceData(index=0, records=batch)])])
        w = Writer()
        encode_request_header(w, RequestHeader(ApiKey.PRODUCE, 13, n, "producer-1", header_version=2))
        request.encode_into(w, 13)
        frames.append(w.getvalue())
    return frames


async def create_topic(broker: Any, listener: Any, name: str) -> Any:
    """Create ``name`` (one partition) through CreateTopics as a client would; its topic id once its log exists."""
    from wire.messages import CreateTopicsRequest
    from wire.messages.create_topics_request import CreatableTopic

    dispatcher = Dispatcher(broker, listener, "127.0.0.1:0", ResponseWriter(Nowhere(), None, lambda: None))  # type: ignore[arg-type]
    w = Writer()
    encode_request_header(w, RequestHeader(ApiKey.CREATE_TOPICS, 7, 0, "bench", header_version=2))
    CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                        timeout_ms=30_000).encode_into(w, 7)
    await dispatcher.dispatch(bytearray(w.getvalue()), "User:ANONYMOUS")
    deadline = time.monotonic() + 30
    while broker.replica_manager.get_partition(name, 0) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the topic {name} was not created within 30 s")
        await asyncio.sleep(0.01)
    return broker.metadata.image.topics[name].topic_id


async def _measure(dispatcher: Dispatcher, frames: list[bytes]) -> dict[str, float]:
    """Bytecodes and calls per request over TRACED requests, then CPU time per request over the rest."""
    counts = {"bytecodes": 0, "calls": 0}

    def trace(frame: FrameType, event: str, _arg: object) -> Any:
        if event == "call":
            counts["calls"] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            counts["bytecodes"] += 1
        return trace

    for data in frames[:TRACED]:  # warm-up: segment and index files opened, producer state made
        await dispatcher.dispatch(bytearray(data), "User:ANONYMOUS")
    sys.settrace(trace)
    try:
        for data in frames[TRACED:2 * TRACED]:
            await dispatcher.dispatch(bytearray(data), "User:ANONYMOUS")
    finally:
        sys.settrace(None)
    blocks = []
    rest = frames[2 * TRACED:]
    for start in range(0, len(rest) - BLOCK + 1, BLOCK):
        began = time.thread_time()
        for data in rest[start:start + BLOCK]:
            await dispatcher.dispatch(bytearray(data), "User:ANONYMOUS")
        blocks.append((time.thread_time() - began) / BLOCK)
    for data in rest[len(blocks) * BLOCK:]:  # less than a block left: sent too (every request must be appended)
        await dispatcher.dispatch(bytearray(data), "User:ANONYMOUS")
    return {"bytecodes": counts["bytecodes"] / TRACED, "calls": counts["calls"] / TRACED,
            "cpu_us": min(blocks) * 1e6 if blocks else float("nan")}


def run(requests: int, acks: int, idempotent: bool, varying: bool = False,
        compression: CompressionType = CompressionType.NONE, records_per_request: int = RECORDS_PER_REQUEST,
        record_size: int = RECORD_SIZE) -> dict[str, float]:
    """One workload on a fresh embedded broker; raises unless every request's records were appended."""
    with EmbeddedBroker({"num.partitions": "1", "auto.create.topics.enable": "false"}) as embedded:
        server = embedded.server
        loop = embedded._loop
        assert server is not None and loop is not None
        broker = server.broker
        assert broker is not None

        async def setup_and_measure() -> dict[str, float]:
            writer = ResponseWriter(Nowhere(), None, lambda: None)  # type: ignore[arg-type]
            dispatcher = Dispatcher(broker, server.config.listeners[0], "127.0.0.1:0", writer)
            topic_id = await create_topic(broker, server.config.listeners[0], "produce-path")
            frames = produce_frames(topic_id, requests, acks, idempotent, varying, compression, records_per_request,
                                    record_size)
            figures = await _measure(dispatcher, frames)
            partition = broker.replica_manager.get_partition("produce-path", 0)
            assert partition is not None
            appended = partition.log.log_end_offset
            if appended != requests * records_per_request:
                raise RuntimeError(f"{appended} records appended, {requests * records_per_request} produced")
            return figures

        return asyncio.run_coroutine_threadsafe(setup_and_measure(), loop).result(600)


def main(requests: int | None = None) -> dict[str, dict[str, float]]:
    requests = requests or int(os.environ.get("PRODUCE_PATH_REQUESTS", "2200"))
    out = {}
    lz4 = CompressionType.LZ4
    for label, acks, idempotent, varying, codec, count, size in (
            ("acks=1", 1, False, False, NONE, RECORDS_PER_REQUEST, RECORD_SIZE),
            ("acks=all idempotent", -1, True, False, NONE, RECORDS_PER_REQUEST, RECORD_SIZE),
            ("acks=1 varying", 1, False, True, NONE, RECORDS_PER_REQUEST, RECORD_SIZE),
            ("acks=1 lz4", 1, False, False, lz4, 564, 100), ("acks=1 lz4", 1, False, False, lz4, 58, 1024)):
        figures = out[f"{label} {count} x {size}" if codec != NONE else label] = run(
            requests, acks, idempotent, varying, codec, count, size)
        sizes = "800-1200" if varying else size
        print(f"  produce {count:3} x {sizes!s:<8} B, {label:<20} {figures['bytecodes']:7.0f} bytecodes "
              f"{figures['calls']:5.0f} Python calls {figures['cpu_us']:7.1f} CPU us per request", flush=True)
    return out


if __name__ == "__main__":
    main()
