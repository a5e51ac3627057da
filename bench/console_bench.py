"""The console's costs, against one real broker (confluent-kafka producing, the console's HTTP API as the
page calls it):

1. the time to show the newest 100 messages of a big topic (CONSOLE_BENCH_GIB GiB of 10 KiB values, one
   partition; median of 5 loads);
2. the time to filter CONSOLE_BENCH_RECORDS small JSON records with the broker-side filter (a needle that
   matches none, so every record is scanned);
3. the broker's produce throughput while a page tails the topic, against the same run without it
   (CONSOLE_BENCH_ROUNDS alternating rounds of CONSOLE_BENCH_ROUND_S seconds each, the median of the
   rounds' ratios; goal ≥ 0.95×), and the broker's CPU at a fixed produce rate with and without the tail.
A size of 0 skips that part.

    python -m bench console      # CONSOLE_BENCH_GIB=10 for the issue's 10-GiB topic (disk: ~2× that)
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import tempfile
import time
import urllib.parse
import urllib.request
from typing import Any

from confluent_kafka import Producer

from pykbroker.testing import BrokerProcess, free_port


def _call(url: str, path: str, body: object = None) -> object:
    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="GET" if body is None else "POST")
    with urllib.request.urlopen(request, timeout=120) as r:
        return json.loads(r.read())


def _produce(bootstrap: str, topic: str, count: int, value: bytes | None = None) -> float:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.kbytes": 512 * 1024})
    started = time.monotonic()
    for i in range(count):
        v = value if value is not None else json.dumps({"id": i, "customer": f"c{i % 997}", "amount": i % 1000}).encode()
        while True:
            try:
                producer.produce(topic, v)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(600) == 0
    return time.monotonic() - started


def _throughput(bootstrap: str, topic: str, seconds: float) -> float:
    """Records per second acknowledged (acks=all) while producing 200-byte values flat out."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    acked = 0

    def done(err: object, _msg: object) -> None:
        nonlocal acked
        if err is None:
            acked += 1

    value = b"x" * 200
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            producer.produce(topic, value, on_delivery=done)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.flush(60)
    return acked / seconds


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _paced(bootstrap: str, topic: str, rate: int, seconds: float) -> None:
    """Produce ``rate`` 200-byte records a second for ``seconds``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    started = time.monotonic()
    sent = 0
    while (now := time.monotonic()) < started + seconds:
        due = int((now - started) * rate)
        while sent < due:
            producer.produce(topic, b"y" * 200)
            sent += 1
        producer.poll(0.005)
    producer.flush(60)


def _tail_like_the_page(url: str, topic: str, stop: Any) -> None:
    """Poll /api/tail as console.js does, until ``stop`` (a process of its own: the producer loop here is
    Python, and a thread would take the GIL from it, measuring the bench rather than the broker)."""
    positions = None
    while not stop.is_set():
        q = f"api/tail?topic={topic}" + (f"&positions={urllib.parse.quote(json.dumps(positions))}" if positions else "")
        d = _call(url, q)
        assert isinstance(d, dict)
        positions = d["positions"]
        if d["records"]:
            stop.wait(1.0)  # as console.js: at most one poll a second while records flow


def _load() -> str:
    """The machine's 1/5/15-minute load averages (the bench shares the machine)."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    gib = float(os.environ.get("CONSOLE_BENCH_GIB", "1"))
    records = int(os.environ.get("CONSOLE_BENCH_RECORDS", "1000000"))
    round_s = float(os.environ.get("CONSOLE_BENCH_ROUND_S", "8"))
    rounds = int(os.environ.get("CONSOLE_BENCH_ROUNDS", "2"))
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="console-bench-") as tmp, BrokerProcess(tmp, overrides={
            "console.listener": f"127.0.0.1:{port}", "console.write.actions.enable": "true"}) as broker:
        broker.start()
        url = f"http://127.0.0.1:{port}/"

        big = int(gib * 1024 * 1024 * 1024 / 10240)
        if big:
            took = _produce(broker.bootstrap, "big", big, b"v" * 10240)
            print(f"big topic: {big:,} records of 10 KiB ({gib:g} GiB) produced in {took:.1f} s", flush=True)
            loads = []
            for _ in range(5):
                started = time.monotonic()
                d = _call(url, "api/messages?topic=big&limit=100")
                loads.append(time.monotonic() - started)
                assert isinstance(d, dict) and len(d["records"]) == 100
            print(f"newest 100 messages of the {gib:g}-GiB topic: median {statistics.median(loads) * 1000:.0f} ms "
                  f"(min {min(loads) * 1000:.0f}, max {max(loads) * 1000:.0f})", flush=True)

        if records:
            took = _produce(broker.bootstrap, "small", records)
            print(f"small topic: {records:,} JSON records produced in {took:.1f} s", flush=True)
            # A needle in no record (batches counted without decoding), then one in every batch that matches
            # one record in a thousand (every batch decoded; the search stops at its 500th match).
            for needle in ("no such text", '"amount": 7}'):
                started = time.monotonic()
                _call(url, "api/search", {"topic": "small", "filter": needle, "max_scan": records})
                while True:
                    p = _call(url, "api/search")
                    assert isinstance(p, dict)
                    if p["done"]:
                        break
                    time.sleep(0.5)
                print(f"filter {needle!r} over {p['scanned']:,} records ({len(p['matches'])} matches): "
                      f"{time.monotonic() - started:.1f} s ({p['scanned'] / max(p['elapsed_s'], 1e-9):,.0f} records/s "
                      "in the broker)", flush=True)

        if not rounds:
            return
        started_load = _load()
        _throughput(broker.bootstrap, "load", 2)  # warm up: topic created, connections open
        without, with_tail = [], []
        for _ in range(rounds):
            without.append(_throughput(broker.bootstrap, "load", round_s))
            stop = multiprocessing.Event()
            tailer = multiprocessing.Process(target=_tail_like_the_page, args=(url, "load", stop), daemon=True)
            tailer.start()
            with_tail.append(_throughput(broker.bootstrap, "load", round_s))
            stop.set()
            tailer.join(30)
        # The broker's own CPU at a fixed produce rate, with and without a page tailing: what the tail costs
        # the broker, whatever else runs on the machine.
        rate = int(os.environ.get("CONSOLE_BENCH_RATE", "20000"))
        assert broker.proc is not None
        pid = broker.proc.pid
        cpu: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(rounds):
            for tailing in (False, True):
                stop = multiprocessing.Event()
                tailer = multiprocessing.Process(target=_tail_like_the_page, args=(url, "paced", stop), daemon=True)
                if tailing:
                    tailer.start()
                before = _cpu_seconds(pid)
                _paced(broker.bootstrap, "paced", rate, round_s)
                cpu[tailing].append((_cpu_seconds(pid) - before) / round_s)
                stop.set()
                if tailing:
                    tailer.join(30)
        c0, c1 = statistics.mean(cpu[False]), statistics.mean(cpu[True])
        print(f"broker CPU producing {rate:,} records/s: {c0:.3f} s/s without the tail, {c1:.3f} s/s with a page "
              f"tailing (+{(c1 - c0) * 1000:.0f} ms/s; {[round(x, 3) for x in cpu[False]]} vs "
              f"{[round(x, 3) for x in cpu[True]]})", flush=True)
        a, b = statistics.mean(without), statistics.mean(with_tail)
        # Each round's ratio against the round without just before it: the machine's other load drifts less
        # within a round pair than over the whole run.
        ratios = [w / o for o, w in zip(without, with_tail, strict=True)]
        print(f"produce throughput without the console tail: {a:,.0f} records/s {[round(x) for x in without]}; "
              f"with a page tailing: {b:,.0f} records/s {[round(x) for x in with_tail]}; ratio of means {b / a:.3f}, "
              f"median of round ratios {statistics.median(ratios):.3f} {[round(r, 3) for r in ratios]}; "
              f"load average {started_load} at the start, {_load()} at the end", flush=True)


if __name__ == "__main__":
    main()
