"""Share groups (KIP-932): share-consumer throughput on pykbroker and Apache Kafka 4.2, in one run.

    python -m bench share                 # BENCH_SCALE=1: 200,000 records per run (about 6 minutes on 2 cores)
    BENCH_SCALE=0.1 python -m bench share  # a smoke run
    BENCH_SHARE_CLIENTS=java python -m bench share   # one client kind only (confluent, java)

For 1, 2 and 4 consumers on a 4-partition topic (records of 100 bytes, produced before the consumers start,
group share.auto.offset.reset=earliest), each broker in turn (the order alternates) is measured with:

- confluent-kafka's ShareConsumer in explicit mode, every record acknowledged on its own (ACCEPT, sent
  with the next poll): the consumers join and settle first, then the records are produced; records per
  second from the first record received to the last;
- Kafka 4.2's Java KafkaShareConsumer (``bench/ShareConsumerBench.java``, one JVM process per consumer),
  explicit mode, every record acknowledged on its own: the JVMs start and the group settles before the records
  are produced; records per second from the first record any consumer received to the last.

Then the memory a share-partition holds per in-flight (acquired, unacknowledged) record is measured in this
process with tracemalloc. Results are printed and written as JSON under bench/results/ (git-ignored).
"""

from __future__ import annotations

import json
import os
import threading
import time
import tracemalloc
import uuid
from pathlib import Path

from confluent_kafka import Producer, ShareConsumer

from compat_tests.jvm.kafka_broker import SHARE_GROUPS_JUDGE, KafkaBroker
from compat_tests.jvm.kafka_broker import jars_dir as kafka_jars
from compat_tests.test_share_groups import enable_share_groups, prepared
from pykbroker.testing import BrokerProcess

HERE = Path(__file__).resolve().parent
RESULTS_DIR = HERE / "results"
JAVA = ["java", "-Xmx1g"]
CONSUMER_COUNTS = (1, 2, 4)
PARTITIONS = 4
SETTLE_S = 12


def produce(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    """``records`` values of 100 bytes, spread over the partitions."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    value = b"x" * 100
    for i in range(records):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0


def confluent_share_consume(bootstrap: str, consumers: int, records: int) -> float:
    """Records per second of ``consumers`` ShareConsumers acknowledging every record on its own.

    The consumers join first and poll until the group has settled (a few heartbeat intervals), then the
    records are produced; the rate is taken from the first record received to the last, so neither the
    join nor the assignment's settling is counted.
    """
    topic, group = prepared(bootstrap, PARTITIONS)
    # earliest (from prepared()): the topic is empty until the group has settled, and a share-partition first
    # fetched after the records were produced must still start at 0 (with latest it would skip them)
    seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    done = threading.Event()
    polled = threading.Barrier(consumers + 1)
    first: list[float] = []
    last = [0.0]

    def run() -> None:
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit"})
        c.subscribe([topic])
        deadline = time.monotonic() + 600
        joined = False
        try:
            while not done.is_set() and time.monotonic() < deadline:
                batch = c.poll(0.5)
                if not joined:
                    joined = True
                    polled.wait()
                for m in batch:
                    if m.error() is None:
                        c.acknowledge(m)
                now = time.monotonic()
                with lock:
                    fresh = [(m.partition(), m.offset()) for m in batch if m.error() is None]
                    if fresh and not first:
                        first.append(now)
                    seen.update(fresh)
                    if fresh:
                        last[0] = now
                    if len(seen) >= records:
                        done.set()
            c.commit_sync()
        finally:
            c.close()

    threads = [threading.Thread(target=run) for _ in range(consumers)]
    for t in threads:
        t.start()
    polled.wait()
    time.sleep(SETTLE_S)  # every member joined and fetching; assignments settle (heartbeat interval 5 s)
    produce(bootstrap, topic, records, PARTITIONS)
    for t in threads:
        t.join()
    if len(seen) < records:
        raise RuntimeError(f"only {len(seen)} of {records} records consumed")
    return records / max(last[0] - first[0], 1e-6)


def _stable_members(bootstrap: str, group: str, members: int, timeout: float = 120) -> None:
    """Wait until the group has ``members`` members, each holding its assignment at the group's epoch."""
    from pykbroker.testing import RawClient
    from wire.messages import ShareGroupDescribeRequest

    deadline = time.monotonic() + timeout
    while True:
        with RawClient(bootstrap, timeout=30) as c:
            g = c.request(ShareGroupDescribeRequest(group_ids=[group]), 1).groups[0]
        if g.error_code == 0 and len(g.members) == members and all(
                m.member_epoch == g.assignment_epoch and m.assignment.topic_partitions for m in g.members):
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the share group did not settle: {g}")
        time.sleep(0.5)


def java_share_consume(jars: Path, bootstrap: str, consumers: int, records: int) -> float:
    """Records per second of ``consumers`` Java KafkaShareConsumers (one JVM process each,
    ``bench/ShareConsumerBench.java``) acknowledging every record on its own. The JVMs start, join and settle
    first (every member holds its assignment), then the records are produced; the rate runs from the first
    record any of them received to the last."""
    import subprocess

    topic, group = prepared(bootstrap, PARTITIONS)
    # earliest (from prepared()): the topic is empty until the group has settled, and a share-partition first
    # fetched after the records were produced must still start at 0 (with latest it would skip them)
    procs = [subprocess.Popen([*JAVA, "-XX:+UseSerialGC", "-cp", f"{jars}/*", str(HERE / "ShareConsumerBench.java"),
                               bootstrap, group, topic, "3000"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, stdin=subprocess.DEVNULL) for _ in range(consumers)]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line.strip() != "READY":
                raise RuntimeError(f"the share consumer did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
        _stable_members(bootstrap, group, consumers)
        produce(bootstrap, topic, records, PARTITIONS)
        results = []
        for proc in procs:
            out, err = proc.communicate(timeout=900)
            line = next((x for x in out.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise RuntimeError(f"no result: {out[-1000:]} {err[-2000:]}")
            results.append(tuple(int(x) for x in line.split()[1:]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    got = sum(r[0] for r in results)
    if got < records:
        raise RuntimeError(f"only {got} of {records} records consumed")
    first = min(r[1] for r in results if r[0])
    last = max(r[2] for r in results if r[0])
    return records / max((last - first) / 1000, 1e-3)


def bytes_per_in_flight_record(count: int = 200_000) -> float:
    """tracemalloc's view of what a SharePartition holds per acquired record (batches of 500 records)."""
    import asyncio

    from coordinator.runtime.clock import SystemClock
    from coordinator.share.share_partition import SharePartition, SharePartitionConfig

    async def measure() -> float:
        sp = SharePartition("g", "t", uuid.uuid4(), 0, SharePartitionConfig(600_000, 5, count + 1), SystemClock())
        sp.load(0, [])
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for first in range(0, count, 500):
            sp.acquire("member", [(first, first + 499)], 500)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        sp.close()
        return held / count

    return asyncio.run(measure())


def main() -> None:
    scale = float(os.environ.get("BENCH_SCALE", "1"))
    records = max(1000, int(200_000 * scale))
    jars = kafka_jars(SHARE_GROUPS_JUDGE)
    results: dict[str, dict[str, float]] = {}
    root = Path(os.environ.get("BENCH_DIR", "/tmp")) / f"share-bench-{uuid.uuid4().hex[:6]}"
    py = BrokerProcess(root / "pykbroker")
    kafka = KafkaBroker(jars, root / "kafka", heap="-Xmx1g", quick_start=False) if jars else None
    try:
        py.start()
        enable_share_groups(py.bootstrap)
        brokers = {"pykbroker": py.bootstrap}
        if kafka is not None:
            kafka.start()
            brokers["kafka"] = kafka.bootstrap
        order = list(brokers)
        clients = os.environ.get("BENCH_SHARE_CLIENTS", "confluent,java").split(",")
        for n in CONSUMER_COUNTS:
            for name in order if "confluent" in clients else []:
                metric = f"confluent share consume, {n} consumer(s), per-record ack (rec/s)"
                results.setdefault(metric, {})[name] = confluent_share_consume(brokers[name], n, records)
                print(f"{metric} {name}: {results[metric][name]:,.0f}", flush=True)
            if jars is not None and "java" in clients:
                for name in order:
                    metric = f"java KafkaShareConsumer, {n} consumer(s), per-record ack (rec/s)"
                    results.setdefault(metric, {})[name] = java_share_consume(jars, brokers[name], n, records)
                    print(f"{metric} {name}: {results[metric][name]:,.0f}", flush=True)
            order.reverse()
    finally:
        py.close()
        if kafka is not None:
            kafka.close()
    per_record = bytes_per_in_flight_record()
    print(f"\n{'metric':70s} {'pykbroker':>12s} {'kafka 4.2':>12s} {'ratio':>7s}")
    for metric, by in results.items():
        ratio = by["pykbroker"] / by["kafka"] if by.get("kafka") else float("nan")
        print(f"{metric:70s} {by['pykbroker']:12,.0f} {by.get('kafka', float('nan')):12,.0f} {ratio:7.2f}")
    print(f"memory per in-flight record (SharePartition, tracemalloc): {per_record:.1f} bytes")
    RESULTS_DIR.mkdir(exist_ok=True)
    out = RESULTS_DIR / f"share-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"records": records, "results": results,
                               "bytes_per_in_flight_record": per_record}, indent=1))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
