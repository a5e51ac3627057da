"""Spark against pykbroker: a small local SparkSession with Spark's ``kafka`` connector, and the offline load.

``spark_session(bootstrap)`` starts a local SparkSession whose classpath holds Spark's own Kafka connector
(``spark-sql-kafka-0-10`` and what it needs, fetched by ``compat_tests/jvm/spark/fetch_jars.sh`` and passed as
``spark.jars``), so ``spark.read.format("kafka")`` and ``df.write.format("kafka")`` work unmodified.

``load(spark, bootstrap, topics, output)`` is the offline load of Kafka's design (§4.5, "a Hadoop load job
... individual mappers write the offset of the last consumed message to HDFS"): a batch job copies topics to
Parquet, one Spark task per partition, and stores the offsets it consumed *with* the output, in the same
commit. The layout of ``output``::

    batch=00000001/part-....parquet     committed data (Spark's partition discovery sees a column ``batch``)
    batch=00000001/_offsets.json        {"topic": {"0": next_offset, ...}, ...}: where the next batch starts
    _staging/batch=00000002/            the batch being written; never read
    _load.lock                          held (flock) by the one load running on this output

A batch is written by Spark into ``_staging/batch=N`` (Spark's own job commit), then its ``_offsets.json``
is written there, then one ``rename`` of the directory to ``batch=N`` commits data and offsets together:
rename is atomic on a local file system and on HDFS (not on object stores). A run starts from the
``_offsets.json`` of the highest committed batch and first removes ``_staging``, so a run killed anywhere
leaves either a whole batch or nothing, and the rerun continues exactly where the last commit stopped:
no record is duplicated or dropped. ``spark.read.parquet(output)`` reads exactly the committed batches
(names starting with ``_`` are hidden from Spark).

CLI: ``pykbroker spark-load --bootstrap HOST:PORT --topics a,b --output DIR`` prints one line per batch.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from storage.file_records import atomic_write, fsync_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BatchResult", "committed_offsets", "connector_jars", "load", "main", "spark_session"]

#: Where ``compat_tests/jvm/spark/fetch_jars.sh`` puts the connector jars in a source checkout.
_CHECKOUT_JARS = Path(__file__).resolve().parent.parent / "compat_tests" / "jvm" / "spark" / ".cache" / "jars"
#: Set to a directory holding the connector jars to use them instead of the checkout's cache.
JARS_ENV = "PYKBROKER_SPARK_JARS"
#: The session config key under which ``spark_session`` records the broker address.
BOOTSTRAP_CONF = "spark.pykbroker.bootstrap"

_BATCH_DIR = re.compile(r"batch=(\d{8})")
OFFSETS_FILE = "_offsets.json"
STAGING_DIR = "_staging"
LOCK_FILE = "_load.lock"


def connector_jars(jar_dir: str | Path | None = None) -> list[Path]:
    """The jars of Spark's Kafka connector for the installed pyspark; raises FileNotFoundError if missing."""
    import pyspark

    folder = Path(jar_dir or os.environ.get(JARS_ENV) or _CHECKOUT_JARS)
    jars = sorted(folder.glob("*.jar"))
    want = f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar"
    if not any(j.name == want for j in jars):
        raise FileNotFoundError(
            f"{want} is not in {folder} (pyspark is {pyspark.__version__}); run "
            f"compat_tests/jvm/spark/fetch_jars.sh, or set {JARS_ENV} to a folder holding Spark's Kafka "
            "connector jars of that version")
    return jars


def spark_session(bootstrap: str, app_name: str = "pykbroker", *, master: str = "local[2]",
                  driver_memory: str = "512m", jar_dir: str | Path | None = None,
                  conf: Mapping[str, str] | None = None) -> SparkSession:
    """A small local SparkSession with Spark's Kafka connector on its classpath; stop it when done.

    Two local cores, two shuffle partitions, no UI, only error logs. ``bootstrap`` is recorded under
    ``spark.pykbroker.bootstrap`` for code that has only the session. ``conf`` adds or overrides settings.
    PySpark starts one JVM per Python process, on the first session: the classpath, driver memory and
    log settings of that first session stay for the later ones.
    """
    from pyspark.sql import SparkSession

    jars = connector_jars(jar_dir)
    tmp = Path(tempfile.gettempdir())
    log4j2 = tmp / "pykbroker-spark-log4j2.properties"
    if not log4j2.exists() or log4j2.read_text() != _LOG4J2:
        atomic_write(log4j2, _LOG4J2.encode())
    # The driver binds to the loopback address, as the broker in tests does; Spark warns otherwise.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.jars", ",".join(str(j) for j in jars))
               .config("spark.driver.memory", driver_memory)
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.warehouse.dir", str(tmp / "pykbroker-spark-warehouse"))
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j2}")
               .config("spark.sql.session.timeZone", "UTC")
               .config(BOOTSTRAP_CONF, bootstrap))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


Offsets = dict[str, dict[int, int]]
"""``{topic: {partition: offset}}``, Spark's startingOffsets/endingOffsets JSON with int keys."""


@dataclass(frozen=True)
class BatchResult:
    """One committed batch of ``load``: where it went, what it read, where the next one starts."""

    batch: int
    path: Path
    tasks: int
    records: int
    start: Offsets
    end: Offsets
    seconds: float

    def describe(self) -> str:
        """The progress line of this batch."""
        offsets = sum(self.end[t][p] - self.start[t][p] for t in self.end for p in self.end[t])
        return (f"batch {self.batch}: {self.records} records ({offsets} offsets) from "
                f"{sum(len(p) for p in self.end.values())} partitions of {', '.join(sorted(self.end))} in "
                f"{self.tasks} tasks -> {self.path.name}, offsets committed ({self.seconds:.1f}s)")


def committed_offsets(output: str | Path) -> tuple[int, Offsets]:
    """(number of the last committed batch, the offsets the next batch starts at); (0, {}) for none."""
    batches = sorted(int(m.group(1)) for d in _listdir(Path(output)) if (m := _BATCH_DIR.fullmatch(d)))
    if not batches:
        return 0, {}
    doc = json.loads((Path(output) / _batch_name(batches[-1]) / OFFSETS_FILE).read_text())
    return batches[-1], {t: {int(p): o for p, o in parts.items()} for t, parts in doc["offsets"].items()}


def load(spark: SparkSession, topics: Iterable[str], output: str | Path, *, bootstrap: str | None = None,
         max_offsets_per_partition: int = 1_000_000, kafka_options: Mapping[str, str] | None = None,
         fail_on_data_loss: bool = True, include_headers: bool = False,
         on_batch: Callable[[BatchResult], None] | None = None) -> list[BatchResult]:
    """Copy ``topics`` to Parquet under ``output`` up to their ends as of now, in committed batches.

    Each batch reads at most ``max_offsets_per_partition`` offsets of every partition with one Spark task
    per partition, and commits its data and the next offsets in one rename (see the module docstring).
    A partition new to the output starts at its log start offset. ``kafka_options`` are Kafka consumer
    properties (``isolation.level``, security settings) for Spark's reads and for finding the offsets.
    ``fail_on_data_loss`` is Spark's failOnDataLoss: whether offsets removed by retention since the last
    run fail the load or are skipped. Returns the batches committed by this call.
    """
    if max_offsets_per_partition < 1:
        raise ValueError("max_offsets_per_partition must be at least 1")
    topics = sorted(set(topics))
    if not topics:
        raise ValueError("no topics to load")
    bootstrap = bootstrap or spark.conf.get(BOOTSTRAP_CONF, None)
    if not bootstrap:
        raise ValueError("no bootstrap address: pass bootstrap= or make the session with spark_session()")
    out = Path(output).resolve()
    out.mkdir(parents=True, exist_ok=True)
    consumer_options = dict(kafka_options or {})
    with open(out / LOCK_FILE, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"another load is running on {out}") from None
        # Whatever a killed run left uncommitted is thrown away; its records are read again below.
        shutil.rmtree(out / STAGING_DIR, ignore_errors=True)
        batch, committed = committed_offsets(out)
        log_start, log_end = _log_offsets(spark, bootstrap, topics, consumer_options)
        results: list[BatchResult] = []
        while True:
            start, end = _next_ranges(topics, committed, log_start, log_end, max_offsets_per_partition,
                                      fail_on_data_loss)
            if not end:
                return results
            batch += 1
            began = time.monotonic()
            staged = out / STAGING_DIR / _batch_name(batch)
            df = _read(spark, bootstrap, start, end, consumer_options, fail_on_data_loss, include_headers)
            tasks = df.rdd.getNumPartitions()
            try:
                df.write.parquet(str(staged))
                records = spark.read.parquet(str(staged)).count() if _has_parquet(staged) else 0
            except BaseException:
                shutil.rmtree(staged, ignore_errors=True)
                raise
            committed = {t: dict(committed.get(t, {})) for t in set(committed) | set(end)}
            for t, parts in end.items():
                committed[t].update(parts)
            _fsync_tree(staged)  # Spark does not sync what it writes; the commit below must not outlive it
            atomic_write(staged / OFFSETS_FILE, json.dumps(
                {"batch": batch, "offsets": committed, "start": start, "end": end, "records": records},
                indent=1, sort_keys=True).encode())
            os.rename(staged, out / _batch_name(batch))  # the commit
            fsync_dir(out)
            result = BatchResult(batch, out / _batch_name(batch), tasks, records, start, end,
                                 time.monotonic() - began)
            results.append(result)
            if on_batch is not None:
                on_batch(result)


def _next_ranges(topics: list[str], committed: Offsets, log_start: Offsets, log_end: Offsets,
                 max_offsets: int, fail_on_data_loss: bool) -> tuple[Offsets, Offsets]:
    """(start, end) offsets of every partition that has records left before ``log_end``."""
    start: Offsets = {}
    end: Offsets = {}
    for topic in topics:
        for partition, last in sorted(log_end[topic].items()):
            first = committed.get(topic, {}).get(partition, log_start[topic][partition])
            if first > last:
                if fail_on_data_loss:
                    raise RuntimeError(
                        f"{topic}-{partition}: the output is at offset {first} but the log ends at {last} "
                        "(was the topic deleted and created again?); load with fail_on_data_loss=False to "
                        "start it again from its log start offset")
                first = log_start[topic][partition]
            if first < last:
                start.setdefault(topic, {})[partition] = first
                end.setdefault(topic, {})[partition] = min(last, first + max_offsets)
    return start, end


def _read(spark: SparkSession, bootstrap: str, start: Offsets, end: Offsets, consumer_options: Mapping[str, str],
          fail_on_data_loss: bool, include_headers: bool):
    """Spark's batch kafka source over exactly [start, end) of each partition: one task per partition."""
    reader = (spark.read.format("kafka")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("assign", json.dumps({t: sorted(p) for t, p in end.items()}))
              .option("startingOffsets", json.dumps(start))
              .option("endingOffsets", json.dumps(end))
              .option("failOnDataLoss", str(fail_on_data_loss).lower())
              .option("includeHeaders", str(include_headers).lower()))
    for key, value in consumer_options.items():
        reader = reader.option(f"kafka.{key}", value)
    columns = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value"]
    return reader.load().select(*columns, *(["headers"] if include_headers else []))


def _log_offsets(spark: SparkSession, bootstrap: str, topics: list[str],
                 consumer_options: Mapping[str, str]) -> tuple[Offsets, Offsets]:
    """(log start, log end) offsets of every partition of ``topics``, asked with Kafka's Java consumer.

    The consumer runs in the driver's JVM, the one Spark's own reads use, with the same options; with
    ``isolation.level=read_committed`` the end is the last stable offset, as for Spark.
    """
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a PySpark session has a JVM gateway"
    props = jvm.java.util.Properties()
    deserializer = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
    settings = {"bootstrap.servers": bootstrap, "key.deserializer": deserializer,
                "value.deserializer": deserializer, "allow.auto.create.topics": "false",
                "enable.auto.commit": "false", "client.id": "pykbroker-spark-load", **consumer_options}
    for key, value in settings.items():
        props.setProperty(key, str(value))
    consumer = jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
    try:
        partitions = jvm.java.util.ArrayList()
        for topic in topics:
            infos = consumer.partitionsFor(topic)
            if infos is None or infos.isEmpty():
                raise RuntimeError(f"topic {topic} does not exist at {bootstrap}")
            for info in infos:
                partitions.add(jvm.org.apache.kafka.common.TopicPartition(topic, info.partition()))
        found = consumer.beginningOffsets(partitions), consumer.endOffsets(partitions)
        log_start: Offsets = {t: {} for t in topics}
        log_end: Offsets = {t: {} for t in topics}
        for tp in partitions:
            log_start[tp.topic()][tp.partition()] = int(found[0].get(tp))
            log_end[tp.topic()][tp.partition()] = int(found[1].get(tp))
        return log_start, log_end
    finally:
        consumer.close()


def _batch_name(batch: int) -> str:
    return f"batch={batch:08d}"


def _listdir(path: Path) -> list[str]:
    try:
        return os.listdir(path)
    except FileNotFoundError:
        return []


def _has_parquet(path: Path) -> bool:
    return any(name.endswith(".parquet") for name in _listdir(path))


def _fsync_tree(path: Path) -> None:
    """fsync every file and directory under ``path``."""
    for folder, _, files in os.walk(path, topdown=False):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(folder))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pykbroker spark-load",
        description="Copy Kafka topics to Parquet with Spark, the consumed offsets committed with the data: "
                    "a rerun continues where the last one stopped, a killed run never duplicates records.")
    ap.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="the Kafka (pykbroker) address")
    ap.add_argument("--topics", required=True, help="comma-separated topic names")
    ap.add_argument("--output", required=True, metavar="DIR", help="the output directory")
    ap.add_argument("--max-offsets-per-partition", type=int, default=1_000_000, metavar="N",
                    help="offsets of one partition read by one batch (default: %(default)s)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="a Kafka consumer property, e.g. isolation.level=read_committed (repeatable)")
    ap.add_argument("--no-fail-on-data-loss", dest="fail_on_data_loss", action="store_false",
                    help="skip offsets removed by retention since the last run instead of failing")
    ap.add_argument("--include-headers", action="store_true", help="also copy the record headers")
    ap.add_argument("--master", default="local[2]", help="Spark master (default: %(default)s)")
    ap.add_argument("--driver-memory", default="512m", help="Spark driver memory (default: %(default)s)")
    return ap


def main(argv: list[str] | None = None) -> int:
    """``pykbroker spark-load``: one line per committed batch, then a summary line."""
    args = build_parser().parse_args(argv)
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"pykbroker spark-load: --option {item!r} is not KEY=VALUE", file=sys.stderr)
            return 2
        options[key.removeprefix("kafka.")] = value
    topics = [t.strip() for t in args.topics.split(",") if t.strip()]
    began = time.monotonic()
    spark = spark_session(args.bootstrap, "pykbroker spark-load", master=args.master,
                          driver_memory=args.driver_memory)
    try:
        done, _ = committed_offsets(args.output)
        print(f"spark-load: {', '.join(topics)} from {args.bootstrap} into {args.output} "
              f"(last committed batch: {done or 'none'})", flush=True)
        results = load(spark, topics, args.output, bootstrap=args.bootstrap,
                       max_offsets_per_partition=args.max_offsets_per_partition, kafka_options=options,
                       fail_on_data_loss=args.fail_on_data_loss, include_headers=args.include_headers,
                       on_batch=lambda r: print(r.describe(), flush=True))
    except Exception as exc:  # a CLI reports any failure in one line
        print(f"pykbroker spark-load: failed: {exc}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    records = sum(r.records for r in results)
    print(f"spark-load: {len(results)} batches, {records} records committed "
          f"({time.monotonic() - began:.1f}s); up to date", flush=True)
    return 0


_LOG4J2 = """\
# pykbroker.spark: Spark and the Kafka client log errors only
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
# a pyspark driver takes its level from its own logger's config; equal to the root's, Spark prints no banner
logger.spark.name = org.apache.spark
logger.spark.level = error
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""
