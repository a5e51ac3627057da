"""The cost of metrics: produce throughput and broker CPU with ``metrics.port`` on vs off (goal: ≤ 3 % apart).

    python -m bench metrics                 # BENCH_SCALE=1 (about 2 minutes on 2 cores)
    BENCH_REPEAT=7 python -m bench metrics  # runs per figure (default 5; the median is shown)

Two pykbroker brokers, identical but for ``metrics.port``, run side by side; each workload's runs go to
them in turn, the order reversed every other run, with the page cache written back before each run (as
bench/broker_bench.py does), so drifts of this shared machine fall on both. A Prometheus scrape is taken
every second from the broker with metrics during its runs, as a Prometheus server would (more often than
the usual 15 s, so its cost shows if it has one). Two produce workloads with confluent-kafka: 1 KiB records
batched (large requests, bytes dominate) and 100-byte records one per request (batch.num.messages=1: the
most requests per record, where per-request costs such as request timing weigh most). Per workload:
records/s of each broker (median) and the broker's CPU seconds per 100k records (median), and their
ratios; the broker's CPU is the steadier figure on a shared machine (the clients' share of the cores
varies run to run). The hooks' own cost per request is also timed in-process, the dispatch of one-record
Produce requests in-process with metrics off and on (no client, no sockets: the steadiest figure), and
what one scrape costs the broker.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from bench.broker_bench import cpu_seconds
from pykbroker.testing import BrokerProcess, free_port


def _produce(bootstrap: str, topic: str, records: int, size: int, linger_ms: int, per_batch: int) -> float:
    """Produce ``records`` of ``size`` bytes (acks=1), at most ``per_batch`` in a batch; returns records/s."""
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": linger_ms,
                         "batch.size": 1 << 20, "batch.num.messages": per_batch,
                         "queue.buffering.max.messages": 1_000_000, "max.in.flight.requests.per.connection": 5})
    value = os.urandom(size)
    failures: list[object] = []

    def delivered(err, _msg) -> None:
        if err is not None:
            failures.append(err)

    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    producer.flush(120)
    elapsed = time.perf_counter() - started
    if failures:
        raise RuntimeError(f"{len(failures)} deliveries failed, first: {failures[0]}")
    return records / elapsed


class _Scraper:
    """Scrapes ``url`` every ``interval`` seconds while running (a Prometheus server's load)."""

    def __init__(self, url: str, interval: float = 1.0) -> None:
        self.url = url
        self.interval = interval
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            with urllib.request.urlopen(self.url, timeout=10) as r:
                r.read()
            self.scrapes += 1

    def __enter__(self) -> _Scraper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class _EncodingWriter:
    """Stands for a connection's ResponseWriter: encodes each response as the real one does, sends nothing."""

    async def send(self, response, correlation_id: int, version: int, header_version: int) -> None:
        from wire import Writer, encode_response_header
        w = Writer()
        encode_response_header(w, correlation_id, header_version)
        response.encode_into(w, version)
        w.parts()


def dispatch_cost(requests: int = 20_000, rounds: int = 7) -> dict[str, float]:
    """The request path in-process, without sockets or clients: one broker, its Dispatcher fed Produce
    frames of one 100-byte record (acks=1), alternately with metrics off and on (the Recorder installed or
    not), ``rounds`` rounds of ``requests`` each; CPU µs per request (median) and their ratio. Free of the
    client's share of the cores, this is the steadiest measure of what the hooks cost a request."""
    import asyncio

    from pykbroker.broker import Broker
    from pykbroker.config import Config, Listener
    from pykbroker.dispatch import Dispatcher
    from pykbroker.metrics import BrokerMetrics
    from wire import RequestHeader, Writer, build_simple_batch, encode_request_header, request_header_version
    from wire.messages import ProduceRequest
    from wire.messages.produce_request import PartitionProduceData, TopicProduceData

    async def run(data_dir: str) -> dict[str, float]:
        config = Config({"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": data_dir, "metrics.port": "0"})
        broker = Broker(config)
        await broker.start()
        await broker.admin.create_topic("bench", [[broker.node_id]], {})
        metrics = BrokerMetrics.install(broker)
        recorder = broker.metrics
        dispatcher = Dispatcher(broker, Listener("PLAINTEXT", "127.0.0.1", 0), "127.0.0.1:1",
                                _EncodingWriter())  # type: ignore[arg-type]
        batch = build_simple_batch([b"x" * 100], timestamp=1_700_000_000_000)
        version = 11
        frames = []
        for cid in range(requests):
            w = Writer()
            encode_request_header(w, RequestHeader(0, version, cid, "bench", request_header_version(0, version)))
            ProduceRequest(acks=1, timeout_ms=30_000, topic_data=[TopicProduceData(name="bench", partition_data=[
                PartitionProduceData(index=0, records=batch)])]).encode_into(w, version)
            frames.append(w.getvalue())
        per_request: dict[str, list[float]] = {"off": [], "on": []}
        for i in range(rounds):
            for name in (("off", "on") if i % 2 == 0 else ("on", "off")):
                broker.metrics = recorder if name == "on" else None
                broker.replica_manager.metrics = recorder if name == "on" else None
                started = time.thread_time()  # CPU time of this (the event loop's) thread: steadier under load
                for frame in frames:
                    await dispatcher.dispatch(frame, "User:ANONYMOUS", False, time.perf_counter())
                per_request[name].append((time.thread_time() - started) / requests * 1e6)
        if metrics is not None:
            await metrics.close()
        await broker.shutdown()
        off, on = statistics.median(per_request["off"]), statistics.median(per_request["on"])
        return {"us_per_request_off": off, "us_per_request_on": on, "on_off": on / off}

    with tempfile.TemporaryDirectory(prefix="metrics-dispatch-") as root:
        return asyncio.run(run(root))


def _recorder_cost_us(n: int = 200_000) -> float:
    """What the metrics hooks add to one produce request, measured in-process: the request's times
    recorded and one partition's append counted (the perf_counter calls the dispatcher adds included)."""
    from pykbroker.metrics.recorder import Recorder

    rec = Recorder()
    clock = time.perf_counter
    started = clock()
    for _ in range(n):
        t0 = clock()
        t1 = clock()
        t2 = clock()
        rec.appended("topic", 1024, 10)
        rec.request(0, 11, 1100, t0, t0, 0.0001, t1, t2, clock(), 0)
    return (clock() - started) / n * 1e6


def main(scale: float | None = None, repeat: int | None = None) -> dict[str, dict[str, float]]:
    scale = float(os.environ.get("BENCH_SCALE", "1")) if scale is None else scale
    repeat = int(os.environ.get("BENCH_REPEAT", "5")) if repeat is None else repeat
    # (label, record size, linger.ms, records per batch at most, records)
    workloads = [("1 KiB records, batched", 1024, 5, 10_000, max(int(300_000 * scale), 1000)),
                 ("100 B records, 1 per request", 100, 0, 1, max(int(30_000 * scale), 500))]
    print(f"  recorder cost per produce request (in-process, one partition): {_recorder_cost_us():.2f} µs",
          flush=True)
    cost = dispatch_cost(max(int(20_000 * scale), 500))
    print(f"  dispatch of a one-record Produce (in-process): off {cost['us_per_request_off']:.1f} µs  "
          f"on {cost['us_per_request_on']:.1f} µs  on/off {cost['on_off']:.3f}", flush=True)
    report: dict[str, dict[str, float]] = {"dispatch in-process": cost}
    with tempfile.TemporaryDirectory(prefix="metrics-bench-") as root:
        metrics_port = free_port()
        brokers = {"off": BrokerProcess(Path(root) / "off"),
                   "on": BrokerProcess(Path(root) / "on", overrides={"metrics.port": str(metrics_port)})}
        url = f"http://127.0.0.1:{metrics_port}/metrics"
        try:
            for b in brokers.values():
                b.start(timeout=60)
            for label, size, linger, per_batch, records in workloads:
                rates: dict[str, list[float]] = {"off": [], "on": []}
                cpu: dict[str, list[float]] = {"off": [], "on": []}
                for i in range(repeat):
                    for name in (("off", "on") if i % 2 == 0 else ("on", "off")):
                        b = brokers[name]
                        assert b.proc is not None
                        os.sync()
                        before = cpu_seconds(b.proc.pid)
                        topic = f"bench-{size}-{linger}-{i}"
                        if name == "on":
                            with _Scraper(url):
                                rates[name].append(_produce(b.bootstrap, topic, records, size, linger, per_batch))
                        else:
                            rates[name].append(_produce(b.bootstrap, topic, records, size, linger, per_batch))
                        cpu[name].append((cpu_seconds(b.proc.pid) - before) / records * 100_000)
                on, off = statistics.median(rates["on"]), statistics.median(rates["off"])
                cpu_on, cpu_off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
                report[label] = {"records_per_s_off": off, "records_per_s_on": on, "throughput_on_off": on / off,
                                 "cpu_s_per_100k_off": cpu_off, "cpu_s_per_100k_on": cpu_on,
                                 "cpu_on_off": cpu_on / cpu_off if cpu_off else float("nan")}
                print(f"  {label:<28} records/s off {off:10.0f}  on {on:10.0f}  on/off {on / off:6.3f}   "
                      f"CPU s/100k off {cpu_off:6.3f}  on {cpu_on:6.3f}  on/off {report[label]['cpu_on_off']:6.3f}",
                      flush=True)
                print(f"    runs off {[round(r) for r in rates['off']]} on {[round(r) for r in rates['on']]}",
                      flush=True)
            # What one scrape costs the broker (every topic of the runs above is in it).
            scraped = brokers["on"]
            assert scraped.proc is not None
            before, started, size = cpu_seconds(scraped.proc.pid), time.perf_counter(), 0
            for _ in range(20):
                with urllib.request.urlopen(url, timeout=10) as r:
                    size = len(r.read())
            scrape = {"cpu_ms": (cpu_seconds(scraped.proc.pid) - before) / 20 * 1000,
                      "wall_ms": (time.perf_counter() - started) / 20 * 1000, "bytes": size}
            report["scrape"] = scrape
            print(f"  one scrape: {scrape['cpu_ms']:.1f} ms of broker CPU, {scrape['wall_ms']:.1f} ms, "
                  f"{size} bytes", flush=True)
        finally:
            for b in brokers.values():
                b.stop()
    return report


if __name__ == "__main__":
    main()
