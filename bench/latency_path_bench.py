"""What one end-to-end message costs the broker in Python, counted so that a loaded machine does not move it.

    python -m bench latency-path

The cycle of ``python -m bench broker``'s librdkafka latency workload, in an embedded broker with its two
connections' answers written to transports that count: a consumer's Fetch waits at the log end, a Produce of one
small record (acks=all) arrives, the Fetch is answered. The requests are librdkafka 2.16's (as a broker sees them
from that workload): Fetch v16 without a session, read_committed (librdkafka's default isolation.level), the
partition's current leader epoch; Produce v10, the topic by name. Bytecodes and
Python calls of the broker's own code (the asyncio loop's machinery left out: uvloop runs it in C), per message:

- the Fetch, from its frame until it waits;
- the critical path, from the Produce frame until the consumer's answer is written (the end-to-end latency), and
  its two parts: the Produce until its append wakes the Fetch (the partition's waiters notified), and from the wake
  until the answer is written (the rest of the append, one loop pass, the woken Fetch);
- the Produce and the answers, until both are written.

It fails unless the consumer's answer is written before the producer's, by the time the Produce's handling
returned (no answer waits for a later loop pass).
"""

from __future__ import annotations

import asyncio
import sys
import time
from types import FrameType
from typing import Any

from pykbroker.dispatch import Dispatcher
from pykbroker.embedded_broker import EmbeddedBroker
from pykbroker.response_writer import ResponseWriter
from wire import ApiKey, RequestHeader, Writer, build_simple_batch, encode_request_header
from wire.messages import CreateTopicsRequest, FetchRequest, ProduceRequest
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

MESSAGES = 200  # counted, after as many uncounted
# The event loop's own Python, which uvloop (what the broker runs on) does in C.
_LOOP_FILES = ("asyncio/base_events.py", "asyncio/events.py", "selectors.py", "asyncio/base_futures.py")


class _Counted:
    """A transport that records which connection wrote, and the bytecode count when it did."""

    def __init__(self, name: str, writes: list[tuple[str, int]], counts: dict[str, int]) -> None:
        self.name, self.writes, self.counts = name, writes, counts

    def write(self, data: object) -> None:
        self.writes.append((self.name, self.counts["bytecodes"]))

    def is_closing(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return 0


def _frame(api_key: int, version: int, request: Any, correlation_id: int) -> bytearray:
    w = Writer()
    encode_request_header(w, RequestHeader(api_key, version, correlation_id, "rdkafka", header_version=2))
    request.encode_into(w, version)
    return bytearray(w.getvalue())


async def _cycles(broker: Any, listener: Any) -> dict[str, float]:
    counts = {"bytecodes": 0, "calls": 0}
    writes: list[tuple[str, int]] = []
    producer = Dispatcher(broker, listener, "p", ResponseWriter(_Counted("produce", writes, counts), None,  # type: ignore[arg-type]
                                                                lambda: None))
    consumer = Dispatcher(broker, listener, "c", ResponseWriter(_Counted("fetch", writes, counts), None,  # type: ignore[arg-type]
                                                                lambda: None))
    await producer.dispatch(_frame(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
        topics=[CreatableTopic(name="latency", num_partitions=1, replication_factor=1)], timeout_ms=30_000), 0),
        "User:ANONYMOUS")
    deadline = time.monotonic() + 30
    while broker.replica_manager.get_partition("latency", 0) is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the topic latency was not created within 30 s")
        await asyncio.sleep(0.01)
    topic_id = broker.metadata.image.topics["latency"].topic_id

    # The bytecode count when the append wakes the waiting Fetch: the partition's first notify with a waiter.
    watchers = broker.replica_manager.watchers
    notify, waited_on = watchers.notify, watchers.keys()  # a live view: no call to count
    woke: list[int] = []

    def noting_notify(key: Any) -> None:
        if not woke and key in waited_on:
            woke.append(counts["bytecodes"])
        notify(key)

    watchers.notify = noting_notify  # type: ignore[method-assign]

    def trace(frame: FrameType, event: str, _arg: object) -> Any:
        if frame.f_code.co_filename.endswith(_LOOP_FILES) or frame.f_code is noting_notify.__code__:
            return None
        if event == "call":
            counts["calls"] += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            counts["bytecodes"] += 1
        return trace

    totals = {"fetch until it waits": 0, "critical path": 0, "produce until the wake": 0,
              "wake until the answer": 0, "produce and answers": 0, "calls": 0}
    for n in range(2 * MESSAGES):
        fetch = _frame(ApiKey.FETCH, 16, FetchRequest(
            max_wait_ms=30_000, min_bytes=1, max_bytes=52428800, isolation_level=1, session_id=0, session_epoch=-1,
            topics=[FetchTopic(topic_id=topic_id, partitions=[FetchPartition(
                partition=0, current_leader_epoch=0, fetch_offset=n, partition_max_bytes=1 << 20)])]), n)
        produce = _frame(ApiKey.PRODUCE, 10, ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
            name="latency", partition_data=[PartitionProduceData(
                index=0, records=build_simple_batch([b"%.6f" % time.time()], timestamp=int(time.time() * 1000)))])]), n)
        counted = n >= MESSAGES
        start = dict(counts)
        if counted:
            sys.settrace(trace)
        waiting = asyncio.ensure_future(consumer.dispatch(fetch, "User:ANONYMOUS"))
        while broker.replica_manager.watchers.waiting(("latency", 0)) == 0:
            if waiting.done():
                raise RuntimeError("the fetch did not wait")
            await asyncio.sleep(0)
        sys.settrace(None)
        waited = dict(counts)
        writes.clear()
        woke.clear()
        if counted:
            sys.settrace(trace)
        await producer.dispatch(produce, "User:ANONYMOUS")
        sys.settrace(None)
        if [name for name, _ in writes] != ["fetch", "produce"] or not waiting.done() or not woke:
            raise RuntimeError(f"answers written when the produce returned: {[name for name, _ in writes]}")
        await waiting
        if counted:
            totals["fetch until it waits"] += waited["bytecodes"] - start["bytecodes"]
            totals["critical path"] += writes[0][1] - waited["bytecodes"]
            totals["produce until the wake"] += woke[0] - waited["bytecodes"]
            totals["wake until the answer"] += writes[0][1] - woke[0]
            totals["produce and answers"] += counts["bytecodes"] - waited["bytecodes"]
            totals["calls"] += counts["calls"] - start["calls"]
    return {k: v / MESSAGES for k, v in totals.items()}


def main() -> dict[str, float]:
    with EmbeddedBroker({"num.partitions": "1"}) as embedded:
        server = embedded.server
        assert server is not None and server.broker is not None and embedded._loop is not None
        figures = asyncio.run_coroutine_threadsafe(_cycles(server.broker, server.config.listeners[0]),
                                                   embedded._loop).result(600)
    for label in ("fetch until it waits", "critical path", "produce until the wake", "wake until the answer",
                  "produce and answers"):
        indent = "    " if label in ("produce until the wake", "wake until the answer") else "  "
        print(f"{indent}{label:<{28 - len(indent)}} {figures[label]:7.0f} bytecodes per message", flush=True)
    print(f"  {'Python calls':<26} {figures['calls']:7.0f} per message", flush=True)
    return figures


if __name__ == "__main__":
    main()
