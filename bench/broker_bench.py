"""Side-by-side broker benchmark: pykbroker and Apache Kafka on this machine, in one run, same clients.

    python -m bench broker        # BENCH_SCALE=1 (about 6 minutes on 2 cores); BENCH_SCALE=0.01 is a smoke run
    BENCH_BROKERS=pykbroker python -m bench broker     # one broker only
    BENCH_REPEAT=5 python -m bench broker              # runs per throughput figure (default 3; the median is shown)
    BENCH_ONLY="1024 B.*java" python -m bench broker   # only the workloads whose label this regex finds

Both brokers run with their default settings (only ports and directories set), started one after the
other (each start is timed alone), then driven by the same clients with the runs of every workload
interleaved between them (see ``run_interleaved``: alternating order, page cache written back before each
run), so that drifts of this machine fall on both. The clients are Kafka's own ProducerPerformance, ConsumerPerformance and EndToEndLatency (the
Java client, from the Maven jars of compat_tests/jvm) and the confluent-kafka (librdkafka) client. The
machine's own limits (sequential disk write, loopback TCP) are measured in the same run. One table is
printed with each figure for both brokers and the ratio pykbroker/Kafka, and the results are written as
JSON under bench/results/ (git-ignored).

On a 2-core machine a single run of a throughput workload varies by tens of percent (the client and the
broker share the cores, the kernel writes back dirty pages), so each throughput figure is the median of
BENCH_REPEAT runs, each on a fresh topic; the JSON keeps every run. Without the write-back before each
run, a run paid for the previous one's dirty pages: right after 3 GB of produce the librdkafka p99.9
latency was 42 ms on either broker, 4 ms after a sync. The broker's own CPU time over its runs (same work
for both brokers) is reported too: it does not depend on how fast the clients are; for the Java producer
it is also given per GB produced, which a loaded machine hardly moves (the client and the broker share
the cores: the broker's CPU per byte is what leaves the client room). While one broker is
measured the other idles beside it (Kafka's idle threads cost pykbroker's runs a little, not the reverse).
"""

from __future__ import annotations

import compileall
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from compat_tests.jvm.kafka_broker import KafkaBroker
from compat_tests.jvm.kafka_broker import jars_dir as kafka_jars
from pykbroker.testing import BrokerProcess

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
JAVA_HEAP = "-Xmx1g"
CPU_PER_GB = "broker CPU s/GB"  # a figure named so is lower-is-better, whatever its workload's others are
# The broker's packages (pyproject.toml), byte-compiled before pykbroker is started.
PACKAGES = ("pykbroker", "wire", "storage", "replication", "coordinator")


# -- brokers under test ----------------------------------------------------------------------------------
class Target:
    """A broker process the bench can start, address, measure and stop."""

    name = "?"
    bootstrap = ""

    def start(self) -> float:
        """Start the broker; returns seconds from process start to its first ApiVersions answer."""
        raise NotImplementedError

    def pid(self) -> int:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class PykbrokerTarget(Target):
    name = "pykbroker"

    def __init__(self, root: Path) -> None:
        self.process = BrokerProcess(root / "pykbroker")
        # An installed broker starts from byte-compiled modules (pip compiles them when installing); this
        # checkout may have none (PYTHONDONTWRITEBYTECODE), so compile them first, as an install would.
        for package in PACKAGES:
            compileall.compile_dir(HERE.parent / package, quiet=1)

    def start(self) -> float:
        started = time.perf_counter()
        self.process.start(timeout=60)
        self.bootstrap = self.process.bootstrap
        return time.perf_counter() - started

    def pid(self) -> int:
        assert self.process.proc is not None
        return self.process.proc.pid

    def stop(self) -> None:
        self.process.stop()


class KafkaTarget(Target):
    """Apache Kafka (the pom's: 4.4), single node in KRaft combined mode, started from the Maven jars."""

    name = "kafka"

    def __init__(self, root: Path, jars: Path) -> None:
        self.kafka = KafkaBroker(jars, root / "kafka", heap=JAVA_HEAP, quick_start=False)

    def start(self) -> float:
        took = self.kafka.start()
        self.bootstrap = self.kafka.bootstrap
        return took

    def pid(self) -> int:
        return self.kafka.pid()

    def stop(self) -> None:
        self.kafka.stop()


# -- the clients -----------------------------------------------------------------------------------------
def java_tool(jars: Path, main_class: str, args: list[str], timeout: float = 900) -> str:
    """Run one of Kafka's Java tools; its stdout (raises with stderr when it fails)."""
    result = subprocess.run(["java", JAVA_HEAP, "-cp", f"{jars}/*", main_class, *args],
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"{main_class} failed ({result.returncode}): {result.stderr[-2000:]}")
    return result.stdout


def producer_performance(jars: Path, bootstrap: str, topic: str, records: int, size: int, acks: str,
                         compression: str, transaction_ms: int = 0) -> dict[str, float]:
    """ProducerPerformance's figures; with ``transaction_ms`` it produces in transactions of that many ms (a
    transactional id of its own; Transactions V2 wherever the cluster finalizes transaction.version 2)."""
    transactional = ["--transactional-id", f"bench-{topic}", "--transaction-duration-ms", str(transaction_ms)] \
        if transaction_ms else []
    out = java_tool(jars, "org.apache.kafka.tools.ProducerPerformance", [
        "--topic", topic, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
        *transactional,
        "--producer-props", f"bootstrap.servers={bootstrap}", f"acks={acks}", f"compression.type={compression}",
        "linger.ms=5", "batch.size=65536"])
    last = [line for line in out.splitlines() if "records sent" in line][-1]
    m = re.search(r"records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency", last)
    if m is None:
        raise RuntimeError(f"cannot read ProducerPerformance output: {last}")
    return {"records_per_s": float(m[1]), "mb_per_s": float(m[2]), "avg_latency_ms": float(m[3])}


def consumer_performance(jars: Path, bootstrap: str, topic: str, records: int) -> dict[str, float]:
    out = java_tool(jars, "org.apache.kafka.tools.ConsumerPerformance", [
        "--bootstrap-server", bootstrap, "--topic", topic, "--messages", str(records), "--timeout", "60000"])
    lines = [line for line in out.splitlines() if line and line[0].isdigit()]
    fields = [f.strip() for f in lines[-1].split(",")]
    # start, end, MB, MB/s, msgs, msgs/s, rebalance ms, fetch ms, fetch MB/s, fetch msgs/s
    return {"mb_per_s": float(fields[3]), "fetch_mb_per_s": float(fields[8]), "records": float(fields[4]),
            "fetch_records_per_s": float(fields[9])}


def end_to_end_latency(jars: Path, bootstrap: str, topic: str, messages: int, size: int) -> dict[str, float]:
    out = java_tool(jars, "org.apache.kafka.tools.EndToEndLatency", [bootstrap, topic, str(messages), "1", str(size)])
    avg = re.search(r"Avg latency: ([\d.]+) ms", out)
    pct = re.search(r"50th = ([\d.]+), 99th = ([\d.]+), 99\.9th = ([\d.]+)", out)
    if avg is None or pct is None:
        raise RuntimeError(f"cannot read EndToEndLatency output: {out[-500:]}")
    return {"avg_ms": float(avg[1]), "p50_ms": float(pct[1]), "p99_ms": float(pct[2]), "p999_ms": float(pct[3])}


def confluent_produce(bootstrap: str, topic: str, records: int, size: int, acks: str, compression: str
                      ) -> dict[str, float]:
    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "compression.type": compression,
                         "linger.ms": 5, "batch.size": 1 << 20, "queue.buffering.max.messages": 1_000_000})
    value = os.urandom(size)
    failures = []

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
    return {"records_per_s": records / elapsed, "mb_per_s": records * size / elapsed / 1e6}


def confluent_consume(bootstrap: str, topic: str, records: int, start: int = 0) -> dict[str, float]:
    """A cold consumer reads ``records`` from offset ``start`` (assign, no group), timed from the first record."""
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                         "fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760})
    consumer.assign([TopicPartition(topic, 0, start)])
    got = size = 0
    started = None
    deadline = time.monotonic() + 300
    try:
        while got < records and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, 1.0):
                if msg.error() is None:
                    started = started or time.perf_counter()
                    got += 1
                    size += len(msg.value())
        elapsed = time.perf_counter() - (started or time.perf_counter())
    finally:
        consumer.close()
    if got < records:
        raise RuntimeError(f"consumed {got} of {records} records")
    return {"records_per_s": got / elapsed, "mb_per_s": size / elapsed / 1e6}


def confluent_latency(bootstrap: str, topic: str, rate: int, seconds: float) -> dict[str, float]:
    """End-to-end latency at a fixed rate: the producer stamps each record, the consumer subtracts."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    producer.produce(topic, b"warm-up")
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency",
                         "fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
    consumer.assign([TopicPartition(topic, 0, -1)])  # from the end
    latencies: list[float] = []
    total = int(rate * seconds)
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set() and len(latencies) < total:
            msg = consumer.poll(0.1)  # consume(n, t) would hold records back until n arrive or t passes
            if msg is not None and msg.error() is None and msg.value() != b"warm-up":
                latencies.append(time.perf_counter() - float(msg.value()))

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    time.sleep(1.0)  # the consumer's first fetch is in flight before the first record
    interval = 1.0 / rate
    next_at = time.perf_counter()
    for _ in range(total):
        next_at += interval
        while (now := time.perf_counter()) < next_at:
            time.sleep(min(next_at - now, 0.001))
        producer.produce(topic, repr(time.perf_counter()).encode())
        producer.poll(0)
    producer.flush(30)
    reader.join(timeout=30)
    stop.set()
    reader.join()
    consumer.close()
    if len(latencies) < total:
        raise RuntimeError(f"only {len(latencies)} of {total} records came back")
    latencies.sort()
    return {f"p{name}_ms": latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
            for name, q in (("50", 0.50), ("99", 0.99), ("99.9", 0.999))}


# -- the machine -----------------------------------------------------------------------------------------
def disk_write_mb_per_s(root: Path, megabytes: int) -> float:
    path = root / "dd.bin"
    chunk = os.urandom(1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    started = time.perf_counter()
    for _ in range(megabytes):
        os.write(fd, chunk)
    os.fsync(fd)
    elapsed = time.perf_counter() - started
    os.close(fd)
    path.unlink()
    return megabytes * (1 << 20) / elapsed / 1e6


def loopback_tcp_mb_per_s(megabytes: int) -> float:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    total = megabytes << 20

    def sink() -> None:
        conn, _ = server.accept()
        received = 0
        while received < total:
            n = len(conn.recv(1 << 20))
            if n == 0:
                break
            received += n
        conn.close()

    reader = threading.Thread(target=sink)
    reader.start()
    chunk = b"\0" * (1 << 20)
    with socket.create_connection(("127.0.0.1", port)) as client:
        started = time.perf_counter()
        for _ in range(megabytes):
            client.sendall(chunk)
        reader.join()
        elapsed = time.perf_counter() - started
    server.close()
    return total / elapsed / 1e6


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (a JVM is one process)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


# -- the run ---------------------------------------------------------------------------------------------
@dataclass
class Results:
    """metric name -> broker name -> value, in the order the metrics were measured; the run's failures."""

    values: dict[str, dict[str, float]] = field(default_factory=dict)
    higher_is_better: dict[str, bool] = field(default_factory=dict)
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)

    def put(self, metric: str, broker: str, value: float, higher_is_better: bool = True) -> None:
        self.values.setdefault(metric, {})[broker] = value
        self.higher_is_better[metric] = higher_is_better
        print(f"  {broker:<10} {metric:<52} {value:12.2f}", flush=True)

    def put_median(self, metric: str, broker: str, runs: list[float], higher_is_better: bool = True) -> None:
        """The median of repeated runs as the figure; every run is kept for the JSON."""
        self.samples.setdefault(metric, {})[broker] = runs
        self.put(metric, broker, statistics.median(runs), higher_is_better)


@dataclass
class Workload:
    """One measurement: ``run(target, i)`` is one run against one broker (``i`` numbers the runs, for
    fresh topic names) returning metric -> value; ``prepare`` is untimed set-up, once per broker."""

    label: str
    run: Callable[[Target, int], dict[str, float]]
    repeated: bool = True  # ``repeat`` runs and their median (latency too: one run can meet a burst of host noise)
    higher_is_better: bool = True
    prepare: Callable[[Target], None] | None = None
    fresh_memory: bool = False  # the clean page cache is dropped before each run (see run_interleaved)


def drop_page_cache() -> bool:
    """Drop the kernel's clean page cache (written back first by the caller); False where this process may not."""
    try:
        Path("/proc/sys/vm/drop_caches").write_text("1")
        return True
    except OSError:
        return False


def workloads(jars: Path | None, scale: float) -> list[Workload]:
    """Every workload of the bench, in the order they run."""
    out: list[Workload] = []
    for size in (100, 1024):
        records = max(1000, int(scale * 200_000_000 / size))
        for acks in ("1", "all"):
            for compression in ("none", "lz4"):
                label = f"produce {size} B acks={acks} {compression}"
                topic = f"produce-{size}-{acks}-{compression}"
                if jars is not None:
                    def java(t: Target, i: int, label=label, topic=topic, records=records, size=size, acks=acks,
                             compression=compression) -> dict[str, float]:
                        cpu = cpu_seconds(t.pid())
                        r = producer_performance(jars, t.bootstrap, f"{topic}-{i}", records, size, acks, compression)
                        cpu = cpu_seconds(t.pid()) - cpu
                        return {f"{label} (java) MB/s": r["mb_per_s"], f"{label} (java) records/s": r["records_per_s"],
                                f"{label} (java) {CPU_PER_GB}": cpu / (records * size / 1e9)}
                    out.append(Workload(f"{label} (java)", java, fresh_memory=True))
                if compression == "none":
                    def rdkafka(t: Target, i: int, label=label, topic=topic, records=records, size=size,
                                acks=acks) -> dict[str, float]:
                        r = confluent_produce(t.bootstrap, f"{topic}-rdkafka-{i}", records, size, acks, "none")
                        return {f"{label} (librdkafka) MB/s": r["mb_per_s"]}
                    out.append(Workload(f"{label} (librdkafka)", rdkafka, fresh_memory=True))

    consume_records = max(1000, int(scale * 1024 * 1024))  # ~1 GiB of 1 KiB records at scale 1

    def fill(t: Target) -> None:
        if jars is not None:
            producer_performance(jars, t.bootstrap, "consume-1k", consume_records, 1024, "1", "none")
        else:
            confluent_produce(t.bootstrap, "consume-1k", consume_records, 1024, "1", "none")

    def consume(t: Target, _i: int) -> dict[str, float]:
        r: dict[str, float] = {}
        if jars is not None:
            r["consume 1 KiB cold (java) fetch MB/s"] = consumer_performance(
                jars, t.bootstrap, "consume-1k", consume_records)["fetch_mb_per_s"]
        r["consume 1 KiB cold (librdkafka) MB/s"] = confluent_consume(t.bootstrap, "consume-1k", consume_records)["mb_per_s"]
        return r

    out.append(Workload("consume", consume, prepare=fill))
    if jars is not None:
        def java_latency(t: Target, _i: int) -> dict[str, float]:
            r = end_to_end_latency(jars, t.bootstrap, "e2e-java", max(200, int(scale * 10_000)), 100)
            return {f"end-to-end latency (java, sequential) {p} ms": r[f"{p}_ms"] for p in ("p50", "p99", "p999")}
        out.append(Workload("end-to-end latency (java)", java_latency, higher_is_better=False))

    def rdkafka_latency(t: Target, _i: int) -> dict[str, float]:
        r = confluent_latency(t.bootstrap, "e2e-rdkafka", rate=500, seconds=max(2.0, 20 * scale))
        return {f"end-to-end latency (librdkafka, 500/s) {p} ms": r[f"{p}_ms"] for p in ("p50", "p99", "p99.9")}
    out.append(Workload("end-to-end latency (librdkafka)", rdkafka_latency, higher_is_better=False))
    return out


def run_interleaved(targets: list[Target], work: list[Workload], repeat: int, results: Results) -> list[str]:
    """Every workload against every (running) broker, runs interleaved; returns the failures.

    Run i of a workload goes to the brokers in turn, the order reversed every other run (A B, B A, A B):
    whatever slows this machine for a while (the kernel writing back dirty pages, another process) falls
    on both brokers rather than on whichever ran then. Before each run (and each set-up) the page cache is
    written back (sync), so no run pays for the previous one's writes; before a produce run it is also
    dropped where the bench may (as root): by the 1 KiB rows the two brokers had written ~11 GB, more than the
    memory free at the start, and the kernel reclaimed pages in the middle of runs (direct reclaim), charged
    to whichever broker was writing then. A failed workload is skipped for that broker, and the others'
    figures still come.
    """
    failures: list[str] = []
    cpu = {t.name: 0.0 for t in targets}

    def timed(t: Target, what: Callable[..., object], *args: object, fresh_memory: bool = False) -> object:
        os.sync()
        if fresh_memory:
            drop_page_cache()
        before = cpu_seconds(t.pid())
        try:
            return what(*args)
        finally:
            cpu[t.name] += cpu_seconds(t.pid()) - before

    only = re.compile(os.environ.get("BENCH_ONLY", ""))
    for w in (w for w in work if only.search(w.label)):
        broken: set[str] = set()
        samples: dict[str, dict[str, list[float]]] = {t.name: {} for t in targets}
        if w.prepare is not None:
            for t in targets:
                try:
                    timed(t, w.prepare, t)
                except Exception as exc:
                    broken.add(t.name)
                    failures.append(f"{t.name}: {w.label}: set-up: {exc}")
                    print(f"  {t.name:<10} {w.label}: set-up FAILED: {str(exc)[:300]}", flush=True)
        for i in range(repeat if w.repeated else 1):
            for t in (targets if i % 2 == 0 else targets[::-1]):
                if t.name in broken:
                    continue
                try:
                    figures = timed(t, w.run, t, i, fresh_memory=w.fresh_memory)
                except Exception as exc:  # one broken workload must not hide the others' figures
                    broken.add(t.name)
                    failures.append(f"{t.name}: {w.label}: {exc}")
                    print(f"  {t.name:<10} {w.label}: FAILED: {str(exc)[:300]}", flush=True)
                    continue
                for metric, value in figures.items():  # type: ignore[union-attr]
                    samples[t.name].setdefault(metric, []).append(value)
        for t in targets:
            for metric, values in samples[t.name].items():
                better = w.higher_is_better and not metric.endswith(CPU_PER_GB)
                if w.repeated:
                    results.put_median(metric, t.name, values, better)
                else:
                    results.put(metric, t.name, values[0], better)
    for t in targets:
        results.put("broker CPU over the workloads s", t.name, cpu[t.name], False)
    return failures


def print_table(results: Results, brokers: list[str]) -> None:
    for metric, by_broker in results.values.items():
        if "machine" in by_broker:
            print(f"{metric:<56}{by_broker['machine']:12.2f}")
    header = f"{'metric':<56}" + "".join(f"{b:>12}" for b in brokers)
    if len(brokers) == 2:
        header += f"{'ratio':>9}"
    print("\n" + header)
    print("-" * len(header))
    for metric, by_broker in results.values.items():
        if "machine" in by_broker:
            continue
        row = f"{metric:<56}" + "".join(f"{by_broker.get(b, float('nan')):12.2f}" for b in brokers)
        if len(brokers) == 2 and by_broker.get(brokers[1]):
            row += f"{by_broker.get(brokers[0], float('nan')) / by_broker[brokers[1]]:9.2f}"
        print(row)
    print("ratio = pykbroker / kafka (higher is better for throughput, lower for latency, start-up, memory)")


def jars_dir() -> Path | None:
    """The Kafka jars; None (with a message) without java or Maven: Kafka and the Java tools are left out."""
    jars = kafka_jars()
    if jars is None:
        print("no Kafka jars (java or Maven missing); Apache Kafka and the Java tools are left out")
    return jars


def client_versions(jars: Path | None) -> str:
    """The clients' versions: the Java client of the jars (also the judge Kafka's), confluent-kafka and librdkafka."""
    import confluent_kafka
    java = next((p.name.removeprefix("kafka-clients-").removesuffix(".jar")
                 for p in (jars.glob("kafka-clients-*.jar") if jars is not None else [])), "none")
    return (f"Java kafka-clients {java}, confluent-kafka {confluent_kafka.__version__} "
            f"(librdkafka {confluent_kafka.libversion()[0]})")


def main(targets: list[str] | None = None, scale: float | None = None, *, java: bool = True,
         repeat: int | None = None, results_dir: Path = RESULTS_DIR) -> tuple[Results, list[str]]:
    """Run the bench; returns the results and the failed workloads. ``java=False`` leaves out the JVM."""
    scale = float(os.environ.get("BENCH_SCALE", "1")) if scale is None else scale
    repeat = max(1, int(os.environ.get("BENCH_REPEAT", "3"))) if repeat is None else repeat
    wanted = targets or os.environ.get("BENCH_BROKERS", "pykbroker,kafka").split(",")
    jars = jars_dir() if java else None
    results = Results()
    failures: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="broker-bench-"))
    try:
        print(f"machine: {os.cpu_count()} cores, {platform.platform()}; scale {scale}, {repeat} runs per "
              f"throughput figure; load average {os.getloadavg()[0]:.1f}; page cache dropped before produce runs: "
              f"{'yes' if os.access('/proc/sys/vm/drop_caches', os.W_OK) else 'no (not root)'}", flush=True)
        print(f"clients: {client_versions(jars)}", flush=True)
        volume = max(16, int(512 * scale))
        factories: dict[str, Callable[[], Target]] = {"pykbroker": lambda: PykbrokerTarget(root)}
        if jars is not None:
            factories["kafka"] = lambda: KafkaTarget(root, jars)
        brokers = [b for b in wanted if b in factories]
        targets: list[Target] = []
        try:
            for broker in brokers:  # one after the other: each starts alone (the others idle)
                target = factories[broker]()
                targets.append(target)
                results.put("start-up to first ApiVersions s", broker, target.start(), False)
            # The machine's limits after the start-ups (the brokers idle): the disk test's fsync and unlink of
            # 512 MB right before a start delayed the first broker's own fsyncs and not the second's.
            results.put("machine: sequential disk write MB/s", "machine", disk_write_mb_per_s(root, volume))
            results.put("machine: loopback TCP MB/s", "machine", loopback_tcp_mb_per_s(volume * 2))
            print(f"== workloads, runs interleaved across {', '.join(brokers)} ==", flush=True)
            failures += run_interleaved(targets, workloads(jars, scale), repeat, results)
            for target in targets:
                results.put("resident memory after the run MB", target.name, rss_mb(target.pid()), False)
        finally:
            for target in targets:
                target.stop()
        print_table(results, brokers)
        for failure in failures:
            print(f"FAILED {failure}")
        results_dir.mkdir(parents=True, exist_ok=True)
        out = results_dir / time.strftime("broker-%Y%m%d-%H%M%S.json")
        out.write_text(json.dumps({"cores": os.cpu_count(), "platform": platform.platform(), "scale": scale,
                                   "clients": client_versions(jars), "load_average": os.getloadavg()[0],
                                   "repeat": repeat, "interleaved": True, "results": results.values, "runs": results.samples,
                                   "failures": failures}, indent=2))
        print(f"results written to {out}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return results, failures
