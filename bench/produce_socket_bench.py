"""What one Produce request costs the broker in Python from socket to socket, counted so that a loaded machine
does not move it.

    python -m bench produce-socket                  # every workload
    PRODUCE_SOCKET_TOP=25 python -m bench produce-socket   # and the functions that cost the most, per workload
    PRODUCE_SOCKET_ONLY="acks=all" python -m bench produce-socket   # only the workloads whose label this regex finds

``python -m bench produce-path`` hands request frames to the dispatcher; this sends them over a real TCP
connection to an embedded broker on uvloop (as ``pykbroker`` runs), so the count also covers what every request
of ``python -m bench broker`` pays around the handler: the connection's reads and framing, its request loop, the
response writer and its flush. A client in this process sends Produce v13 frames of one batch each, shaped as
ProducerPerformance (``linger.ms=5 batch.size=65536``, idempotent with acks=all only) and librdkafka send them, one
request in flight at a time (the count is the same whether a read brings one frame or several):

- bytecodes and Python calls per request of the broker's event-loop thread, counted by a tracer over TRACED
  requests (uvloop's loop is C: what is counted is the broker's own code), and the reads (buffer_updated calls)
  a request took, which the kernel decides (a 64 KiB frame may come in one read or a few);
- CPU microseconds per request of that thread (thread time), the fastest of blocks of BLOCK requests.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import struct
import sys
import time
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

from bench.produce_path_bench import create_topic, produce_frames
from pykbroker.embedded_broker import EmbeddedBroker
from wire import CompressionType

TRACED = 100  # requests counted bytecode by bytecode
BLOCK = 200  # requests per CPU-time block
WARM_UP = 50
NONE, LZ4 = CompressionType.NONE, CompressionType.LZ4

# label, acks, idempotent, compression, records per batch, record size: the shapes of the bench's produce rows. Java's
# (ProducerPerformance, 64 KiB batches) hold what its runs averaged (54 x 1 KiB uncompressed, 564 x 100 B and 58 x 1 KiB
# lz4, see produce-path) or as many 100 B records as fill one; librdkafka's (not idempotent) as Java's. The Java
# producer is idempotent only with acks=all: enable.idempotence defaults to true, but since KAFKA-13673 (3.2) a
# producer whose acks is not all, and that did not set enable.idempotence itself, runs without it (no producer id).
WORKLOADS = (
    ("java 100 B acks=1 none", 1, False, NONE, 590, 100),
    ("java 100 B acks=1 lz4", 1, False, LZ4, 564, 100),
    ("java 100 B acks=all none", -1, True, NONE, 590, 100),
    ("java 100 B acks=all lz4", -1, True, LZ4, 564, 100),
    ("java 1 KiB acks=1 none", 1, False, NONE, 54, 1024),
    ("java 1 KiB acks=1 lz4", 1, False, LZ4, 58, 1024),
    ("java 1 KiB acks=all none", -1, True, NONE, 54, 1024),
    ("java 1 KiB acks=all lz4", -1, True, LZ4, 58, 1024),
    ("rdkafka 100 B acks=1 none", 1, False, NONE, 590, 100),
)


def _uvloop() -> asyncio.AbstractEventLoop:
    import uvloop

    return uvloop.new_event_loop()


class _Tracer:
    """Counts the bytecodes and calls of the thread it is installed on while ``armed``, per function too."""

    def __init__(self) -> None:
        self.armed = False
        self.bytecodes = self.calls = 0
        self.per_function: Counter[tuple[str, int, str]] = Counter()
        self.calls_per_function: Counter[tuple[str, int, str]] = Counter()

    def __call__(self, frame: FrameType, event: str, _arg: object) -> Any:
        if event == "call":
            frame.f_trace_opcodes = True
            if self.armed:
                self.calls += 1
                code = frame.f_code
                self.calls_per_function[(code.co_filename, code.co_firstlineno, code.co_qualname)] += 1
        elif event == "opcode" and self.armed:
            self.bytecodes += 1
            code = frame.f_code
            self.per_function[(code.co_filename, code.co_firstlineno, code.co_qualname)] += 1
        return self


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _round_trip(sock: socket.socket, frame: bytes) -> bytes:
    sock.sendall(struct.pack(">i", len(frame)) + frame)
    (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
    return _recv_exactly(sock, size)


def _in_loop(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> Any:
    """``fn()`` run on the loop's thread; its result."""
    async def call() -> Any:
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), loop).result(60)


def run(acks: int, idempotent: bool, compression: CompressionType, records_per_request: int, record_size: int,
        blocks: int = 3) -> dict[str, Any]:
    """One workload on a fresh embedded broker; raises unless every request was answered without error and
    every record appended."""
    requests = WARM_UP + TRACED + blocks * BLOCK
    with EmbeddedBroker({"num.partitions": "1", "auto.create.topics.enable": "false"},
                        loop_factory=_uvloop) as embedded:
        server, loop = embedded.server, embedded._loop
        assert server is not None and loop is not None and server.broker is not None
        broker = server.broker

        topic_id = asyncio.run_coroutine_threadsafe(
            create_topic(broker, server.config.listeners[0], "produce-socket"), loop).result(60)
        frames = produce_frames(topic_id, requests, acks, idempotent, compression=compression,
                                records_per_request=records_per_request, record_size=record_size)
        tracer = _Tracer()
        with socket.create_connection(("127.0.0.1", embedded.port)) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            answers = [_round_trip(sock, f) for f in frames[:WARM_UP]]
            _in_loop(loop, lambda: sys.settrace(tracer))
            try:
                tracer.armed = True
                answers += [_round_trip(sock, f) for f in frames[WARM_UP:WARM_UP + TRACED]]
                tracer.armed = False
            finally:
                _in_loop(loop, lambda: sys.settrace(None))
            cpu = []
            rest = frames[WARM_UP + TRACED:]
            for start in range(0, len(rest), BLOCK):
                began = _in_loop(loop, time.thread_time)
                answers += [_round_trip(sock, f) for f in rest[start:start + BLOCK]]
                cpu.append((_in_loop(loop, time.thread_time) - began) / BLOCK)
        for answer in answers:  # v13 answer: correlation id, tagged fields, throttle... partition error code
            if _error_code(answer) != 0:
                raise RuntimeError(f"a produce was answered with error {_error_code(answer)}")
        partition = broker.replica_manager.get_partition("produce-socket", 0)
        assert partition is not None
        if partition.log.log_end_offset != requests * records_per_request:
            raise RuntimeError(f"{partition.log.log_end_offset} records appended, "
                               f"{requests * records_per_request} produced")
    reads = sum(n for (_, _, name), n in tracer.calls_per_function.items() if name == "Connection.buffer_updated")
    return {"bytecodes": tracer.bytecodes / TRACED, "calls": tracer.calls / TRACED, "reads": reads / TRACED,
            "cpu_us": min(cpu) * 1e6, "per_function": tracer.per_function,
            "calls_per_function": tracer.calls_per_function}


def _error_code(answer: bytes) -> int:
    """The error code of a v13 Produce answer's one partition: after the correlation id and the header's tagged
    fields, the topics' count, the topic id, the partitions' count and the partition index."""
    return int.from_bytes(answer[4 + 1 + 1 + 16 + 1 + 4:][:2], "big", signed=True)


def main() -> dict[str, dict[str, float]]:
    top = int(os.environ.get("PRODUCE_SOCKET_TOP", "0"))
    only = re.compile(os.environ.get("PRODUCE_SOCKET_ONLY", ""))
    out = {}
    for label, acks, idempotent, compression, count, size in WORKLOADS:
        if not only.search(label):
            continue
        figures = run(acks, idempotent, compression, count, size)
        out[label] = {k: v for k, v in figures.items() if isinstance(v, float)}
        print(f"  {label:<27} ({count:3} x {size:4} B) {figures['bytecodes']:7.0f} bytecodes {figures['calls']:5.0f} "
              f"Python calls {figures['reads']:4.1f} reads {figures['cpu_us']:7.1f} CPU us per request", flush=True)
        for (filename, line, name), n in figures["per_function"].most_common(top):
            calls = figures["calls_per_function"][(filename, line, name)]
            where = filename.rsplit("/", 2)
            print(f"      {n / TRACED:7.1f} {calls / TRACED:5.1f}  {name}  ({'/'.join(where[-2:])}:{line})")
    return out


if __name__ == "__main__":
    main()
