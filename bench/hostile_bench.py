"""Hostile-client figures for pykbroker alone (issue 21): ``python -m bench hostile`` (about 1 minute).

- connections: N connections open at once (default 2,000), each sends a request and gets its answer;
  the broker's resident memory before and with them open.
- non-reading client: p50/p99 of a normal client's requests (ApiVersions and 1 KiB acks=1 produces),
  alone and beside a client that pipelines 16 MiB fetches and never reads its socket.
- frame flood: 8 clients each send the size prefix of a maximum-size (100 MiB) frame and part of its
  body; resident memory without a memory pool (Kafka's default, queued.max.request.bytes=-1) and with a
  200 MiB pool.
"""

from __future__ import annotations

import os
import resource
import socket
import struct
import tempfile
import threading
import time

from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import ApiVersionsRequest, FetchRequest, ProduceRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

CONNECTIONS = int(os.environ.get("BENCH_CONNECTIONS", "2000"))


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _produce(c: RawClient, topic: str, batch: bytes, acks: int = 1) -> None:
    r = c.request(ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])]), 9)
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def connections(tmp: str) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * CONNECTIONS + 256)), hard))
    with BrokerProcess(os.path.join(tmp, "conns")) as b:
        host, port = b.bootstrap.rsplit(":", 1)
        idle = rss_mb(b.proc.pid)
        started = time.monotonic()
        socks = [socket.create_connection((host, int(port)), timeout=60) for _ in range(CONNECTIONS)]
        clients = []
        for s in socks:
            c = RawClient.__new__(RawClient)
            c.sock, c.client_id, c._correlation_id = s, "storm", 0
            c.send(ApiVersionsRequest(), 0)
            clients.append(c)
        for c in clients:
            c.recv_frame()
        elapsed = time.monotonic() - started
        held = rss_mb(b.proc.pid)
        for s in socks:
            s.close()
        print(f"connections: {CONNECTIONS} open and answered in {elapsed:.1f} s; broker RSS {idle:.0f} MiB idle, "
              f"{held:.0f} MiB with them open ({(held - idle) * 1024 / CONNECTIONS:.1f} KiB per connection)")


def _latencies(b: BrokerProcess, topic: str, seconds: float) -> list[float]:
    out = []
    batch = build_simple_batch([b"v" * 1024], timestamp=1_700_000_000_000)
    with RawClient(b.bootstrap) as c:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t = time.perf_counter()
            assert c.request(ApiVersionsRequest(), 0).error_code == ErrorCode.NONE
            out.append(time.perf_counter() - t)
            t = time.perf_counter()
            _produce(c, topic, batch)
            out.append(time.perf_counter() - t)
            time.sleep(0.002)
    return out


def non_reading_client(tmp: str) -> None:
    with BrokerProcess(os.path.join(tmp, "hog")) as b:
        with RawClient(b.bootstrap) as c:
            c.wait_for_topics("big", "normal", auto_create=True)
            values = [bytes([i % 251]) * 4096 for i in range(4096)]
            for i in range(0, 4096, 128):
                _produce(c, "big", build_simple_batch(values[i:i + 128], timestamp=1_700_000_000_000), acks=-1)
        alone = _latencies(b, "normal", 8)
        base = rss_mb(b.proc.pid)
        hog = RawClient(b.bootstrap)
        hog.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        fetch = FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=32 << 20, topics=[FetchTopic(
            topic="big", partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=32 << 20)])])
        stop = threading.Event()

        def keep_sending() -> None:  # more fetches on new connections as the broker closes none (idle 10 min)
            for _ in range(40):
                if stop.is_set():
                    return
                try:
                    hog.send(fetch, 12)
                except OSError:
                    return
        t = threading.Thread(target=keep_sending)
        t.start()
        beside = _latencies(b, "normal", 8)
        held = rss_mb(b.proc.pid) - base
        stop.set()
        hog.close()
        t.join()

    def pct(xs: list[float], p: float) -> float:
        return sorted(xs)[int(len(xs) * p)] * 1000

    print(f"non-reading client: p50/p99 of a normal client {pct(alone, .5):.2f}/{pct(alone, .99):.2f} ms alone, "
          f"{pct(beside, .5):.2f}/{pct(beside, .99):.2f} ms beside a client holding 40 unread 16 MiB fetches "
          f"(p99 {100 * (pct(beside, .99) / pct(alone, .99) - 1):+.0f} %); broker RSS +{held:.0f} MiB for it")


def frame_flood(tmp: str) -> None:
    size = 104_857_600
    for name, overrides in (("no pool (Kafka's default)", {}),
                            ("200 MiB pool", {"queued.max.request.bytes": str(200 << 20)})):
        with BrokerProcess(os.path.join(tmp, f"flood-{len(overrides)}"), overrides=overrides) as b:
            base = rss_mb(b.proc.pid)
            flood = [RawClient(b.bootstrap) for _ in range(8)]
            for c in flood:
                c.send_bytes(struct.pack(">ihhi", size, 0, 9, 1) + b"\x00" * (1 << 20))
            peak = 0.0
            for _ in range(6):  # keep feeding bodies for 3 s, as far as the broker reads them
                for c in flood:
                    c.sock.setblocking(False)
                    try:
                        c.sock.send(b"\x00" * (4 << 20))
                    except (BlockingIOError, OSError):
                        pass
                time.sleep(0.5)
                peak = max(peak, rss_mb(b.proc.pid))
            for c in flood:
                c.close()
            print(f"frame flood, {name}: 8 clients x 100 MiB frames: broker RSS {base:.0f} MiB idle, "
                  f"peak {peak:.0f} MiB")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as tmp:
        connections(tmp)
        non_reading_client(tmp)
        frame_flood(tmp)


if __name__ == "__main__":
    main()
