"""Topics as Iceberg tables: produce to visible-in-the-table throughput, the broker CPU it costs, the table lag.

    python -m bench iceberg                    # BENCH_RECORDS=20000 (about a minute on 2 cores)

One broker; 1 KiB JSON records (confluent-kafka, acks=1, batched) to a topic of 3 partitions:

- throughput: records/s from the first produce until the table holds every record (its snapshot's offsets
  reach the log end), with ``iceberg.commit.interval.ms=1000``; the same produce to a topic without a table,
  for the broker CPU seconds per 100k records with and without one (the broker's CPU from /proc);
- with BENCH_SPARK_LOAD=1, the same topic loaded by ``pykbroker spark-load`` (wall time, Spark's start included);
- with BENCH_SPARK_KAFKA=1, the same topic read by Spark's Kafka source and appended to an Iceberg table of the
  broker's catalog (Spark 4.1 local[2] with Iceberg's runtime; the connector's jars fetched by mvn on first use
  from compat_tests/jvm/spark/kafka41/pom.xml): wall time, Spark's start included, and the job alone;
- lag: records produced at a steady rate (BENCH_RATE, default 2000/s) for BENCH_SECONDS (10); the table is
  polled every 50 ms and each record's lag is the time from its produce to the first poll that sees it;
  p50 and p99.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from bench.broker_bench import cpu_seconds
from pykbroker.iceberg.tables import table_offsets
from pykbroker.testing import BrokerProcess

RECORDS = int(os.environ.get("BENCH_RECORDS", "20000"))
RATE = int(os.environ.get("BENCH_RATE", "2000"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "10"))
PARTITIONS = 3


def _value(i: int) -> bytes:
    body = {"id": i, "name": f"record-{i}", "pad": ""}
    raw = json.dumps(body)
    body["pad"] = "x" * (1024 - len(raw))
    return json.dumps(body).encode()


def _create(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, config=configs)])[name].result(timeout=30)



def _produce(bootstrap: str, topic: str, count: int, rate: float | None = None) -> list[tuple[int, int, float]]:
    """(partition, offset, produce time) of each record, acks=1."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 5,
                         "queue.buffering.max.messages": 1_000_000})
    sent: list[tuple[int, int, float]] = []
    started = time.monotonic()
    for i in range(count):
        at = time.monotonic()

        def delivered(err, msg, at=at) -> None:
            if err is None:
                sent.append((msg.partition(), msg.offset(), at))
        while True:
            try:
                producer.produce(topic, _value(i), partition=i % PARTITIONS, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
        if rate is not None:
            ahead = started + (i + 1) / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
    producer.flush(120)
    return sent


def _wait_table(data_dir: Path, topic: str, ends: dict[int, int], timeout: float = 300) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        offsets = table_offsets(data_dir, topic)
        if all(offsets.get(p, 0) >= end for p, end in ends.items()):
            return time.monotonic()
        time.sleep(0.05)
    raise RuntimeError(f"the table of {topic} never reached {ends}")


def _wait_created(data_dir: Path, topic: str, timeout: float = 60) -> None:
    from pyiceberg.catalog.sql import SqlCatalog

    root = data_dir / "iceberg"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (root / "catalog.db").exists() and SqlCatalog(
                "pykbroker", uri=f"sqlite:///{root}/catalog.db",
                warehouse=f"file://{root}/warehouse").table_exists(("kafka", topic)):
            time.sleep(0.5)
            return
        time.sleep(0.05)
    raise RuntimeError(f"no table for {topic}")


def _ends(sent: list[tuple[int, int, float]]) -> dict[int, int]:
    ends: dict[int, int] = {}
    for p, o, _ in sent:
        ends[p] = max(ends.get(p, 0), o + 1)
    return ends


def _spark_load(bootstrap: str, output: Path) -> None:
    """The same records loaded by `pykbroker spark-load` (Spark 4.2 local[2], Parquet): its wall time."""
    import subprocess
    import sys

    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "pykbroker.cli", "spark-load", "--bootstrap", bootstrap,
                           "--topics", "table", "--output", str(output)], capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    print(f"  pykbroker spark-load of the same topic: {elapsed:.1f} s with Spark's start-up "
          f"({RECORDS / elapsed:,.0f} records/s), a batch job to run and schedule")


# Spark's Kafka connector jars for Spark 4.1, and what it needs that pyspark does not bring.
_KAFKA41_JARS = ("spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "kafka-clients-", "commons-pool2-")
_KAFKA41_JOB = """
import sys, time
from pykbroker.iceberg.spark import spark_session, iceberg_jars
bootstrap, uri, warehouse, jars = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
spark = spark_session(uri, warehouse, conf={"spark.driver.extraClassPath":
                      ":".join([*(str(j) for j in iceberg_jars()), jars])})
started = time.monotonic()
df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", "table")
      .option("startingOffsets", "earliest").load()
      .selectExpr("partition", "offset", "timestamp", "key", "value"))
df.writeTo("pykbroker.kafka.spark_kafka_copy").using("iceberg").createOrReplace()
rows = spark.table("pykbroker.kafka.spark_kafka_copy").count()
print(f"{rows} {time.monotonic() - started:.3f}")
spark.stop()
"""


def _kafka41_jars() -> list[Path]:
    import subprocess

    root = Path(__file__).resolve().parent.parent / "compat_tests" / "jvm" / "spark"
    folder = root / ".cache" / "kafka41-jars"
    if not any(folder.glob("spark-sql-kafka-0-10_*.jar")):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mvn", "-q", "-B", "-f", str(root / "kafka41" / "pom.xml"), "dependency:copy-dependencies",
                        f"-DoutputDirectory={folder}", "-DincludeScope=runtime"], check=True, timeout=600,
                       stdout=subprocess.DEVNULL)
    return [j for j in sorted(folder.glob("*.jar")) if j.name.startswith(_KAFKA41_JARS)]


def _spark_kafka_to_iceberg(bootstrap: str, data_dir: Path) -> None:
    """The same records read by Spark's Kafka source (a batch query) and appended to an Iceberg table of the
    broker's SQLite catalog: what an Iceberg topic saves a user from running."""
    import subprocess
    import sys

    from pykbroker.iceberg.spark import pyspark_dir

    jars = ":".join(str(j) for j in _kafka41_jars())
    root = (data_dir / "iceberg").resolve()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pyspark_dir()), os.environ.get("PYTHONPATH", "")])}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _KAFKA41_JOB, bootstrap, f"sqlite:///{root}/catalog.db",
                           f"file://{root}/warehouse", jars], capture_output=True, text=True, timeout=900, env=env)
    elapsed = time.monotonic() - started
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    rows, job = done.stdout.split()[-2:]
    print(f"  Spark's Kafka source writing an Iceberg table: {rows} records in {elapsed:.1f} s with Spark's "
          f"start-up ({RECORDS / elapsed:,.0f} records/s), the job alone {float(job):.1f} s "
          f"({RECORDS / float(job):,.0f} records/s); a job to run and schedule")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="iceberg-bench-") as tmp, BrokerProcess(Path(tmp)) as broker:
        data_dir = Path(tmp) / "logs"
        _create(broker.bootstrap, "plain", {})
        _create(broker.bootstrap, "table", {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "1000"})
        pid = broker.proc.pid if broker.proc is not None else 0
        _wait_created(data_dir, "table")  # pyiceberg imported, the table made: neither is in the figures

        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        _produce(broker.bootstrap, "plain", RECORDS)
        plain_s, plain_cpu = time.monotonic() - t0, cpu_seconds(pid) - cpu0

        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        sent = _produce(broker.bootstrap, "table", RECORDS)
        produced = time.monotonic() - t0
        visible = _wait_table(data_dir, "table", _ends(sent)) - t0
        table_cpu = cpu_seconds(pid) - cpu0
        print(f"{RECORDS} records of 1 KiB JSON, {PARTITIONS} partitions:")
        print(f"  without a table: produced in {plain_s:.1f} s ({RECORDS / plain_s:,.0f} records/s); broker CPU "
              f"{plain_cpu / RECORDS * 1e5:.2f} s per 100k records ({RECORDS / plain_cpu:,.0f} records/s per CPU-s)")
        print(f"  with a table:    produced in {produced:.1f} s, all visible in the table after {visible:.1f} s "
              f"({RECORDS / visible:,.0f} records/s produce -> visible); broker CPU {table_cpu / RECORDS * 1e5:.2f} s "
              f"per 100k records ({RECORDS / table_cpu:,.0f} records/s per CPU-s)")

        if os.environ.get("BENCH_SPARK_LOAD") == "1":
            _spark_load(broker.bootstrap, Path(tmp) / "spark-load")
        if os.environ.get("BENCH_SPARK_KAFKA") == "1":
            _spark_kafka_to_iceberg(broker.bootstrap, data_dir)

        _create(broker.bootstrap, "lag", {"iceberg.mode": "key_value", "iceberg.commit.interval.ms": "1000"})
        count = int(RATE * SECONDS)
        seen_at: dict[int, list[tuple[int, float]]] = {p: [] for p in range(PARTITIONS)}
        import threading

        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                now = time.monotonic()
                for p, o in table_offsets(data_dir, "lag").items():
                    if not seen_at[p] or seen_at[p][-1][0] < o:
                        seen_at[p].append((o, now))
                time.sleep(0.05)

        poller = threading.Thread(target=poll)
        poller.start()
        sent = _produce(broker.bootstrap, "lag", count, rate=RATE)
        _wait_table(data_dir, "lag", _ends(sent))
        time.sleep(0.2)
        stop.set()
        poller.join()
        lags = []
        for p, o, at in sent:
            visible_at = next(t for end, t in seen_at[p] if end > o)
            lags.append(visible_at - at)
        lags.sort()
        print(f"  table lag at {RATE} records/s for {SECONDS:.0f} s (commit interval 1 s): p50 "
              f"{lags[len(lags) // 2]:.2f} s, p99 {lags[int(len(lags) * 0.99)]:.2f} s, max {lags[-1]:.2f} s")


if __name__ == "__main__":
    main()
