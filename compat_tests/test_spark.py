"""Spark's built-in ``kafka`` source and sink (spark-sql-kafka-0-10, kafka-clients 3.9) against pykbroker:
batch reads by offsets and by timestamp, batch writes (every compression codec, headers), a Structured
Streaming query stopped and restarted from its checkpoint, read_committed over committed and aborted
transactions, minPartitions, failOnDataLoss
after DeleteRecords, and the offline load of ``pykbroker.spark`` (in process and through
``pykbroker spark-load``, killed mid-batch).

One SparkSession (local[2]) for the whole module: Spark takes seconds to start.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

if shutil.which("java") is None:
    pytest.skip("java is not installed: Spark cannot run", allow_module_level=True)

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.errors import StreamingQueryException

from pykbroker.spark import OFFSETS_FILE, STAGING_DIR, committed_offsets, load, spark_session

NOW_MS = int(time.time()) * 1000


@pytest.fixture(scope="module")
def spark(broker):
    session = spark_session(broker.bootstrap, "compat_tests.test_spark")
    yield session
    session.stop()


def new_topic(broker, partitions: int) -> str:
    """A topic of its own for one test, made with CreateTopics."""
    name = f"spark-{uuid.uuid4().hex[:10]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=15)
    return name


def produce(broker, topic: str, records: list[dict]) -> None:
    """Each record is produce()'s keyword arguments (partition, key, value, timestamp, headers)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for record in records:
        producer.produce(topic, **record)
    assert producer.flush(15) == 0


def fill(broker, topic: str, partitions: int, per_partition: int, start: int = 0) -> None:
    """``per_partition`` records in every partition: key ``p{p}``, value ``v{p}-{i}``, timestamp NOW+i s."""
    produce(broker, topic, [
        {"partition": p, "key": f"p{p}", "value": f"v{p}-{i}", "timestamp": NOW_MS + i * 1000}
        for i in range(start, start + per_partition) for p in range(partitions)])


def read(spark, broker, topic: str, **options):
    """A batch read of ``topic``: [(partition, offset, value)] sorted."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
    reader = reader.option("subscribe", topic)
    for key, value in options.items():
        reader = reader.option(key, value)
    rows = reader.load().selectExpr("partition", "offset", "CAST(value AS STRING) AS value").collect()
    return sorted((r.partition, r.offset, r.value) for r in rows)


def expected(partitions: int, offsets: range | dict[int, range]) -> list[tuple[int, int, str]]:
    """What ``fill`` wrote at ``offsets`` (one range for every partition, or a range per partition)."""
    per = offsets if isinstance(offsets, dict) else {p: offsets for p in range(partitions)}
    return sorted((p, i, f"v{p}-{i}") for p, r in per.items() for i in r)


# --- batch reads and writes -------------------------------------------------------------------------------


def test_batch_read_earliest_latest_and_per_partition_offsets(spark, broker):
    topic = new_topic(broker, 3)
    fill(broker, topic, 3, 10)
    assert read(spark, broker, topic) == expected(3, range(10))
    assert read(spark, broker, topic, startingOffsets="earliest", endingOffsets="latest") == \
        expected(3, range(10))
    # -2 is earliest and -1 latest, as in Spark's JSON; ends are exclusive
    got = read(spark, broker, topic,
               startingOffsets=json.dumps({topic: {"0": 3, "1": -2, "2": 8}}),
               endingOffsets=json.dumps({topic: {"0": 5, "1": -1, "2": 9}}))
    assert got == expected(3, {0: range(3, 5), 1: range(10), 2: range(8, 9)})
    # assign reads only the partitions named
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("assign", json.dumps({topic: [1]})).load().selectExpr("partition").collect())
    assert [r.partition for r in rows] == [1] * 10


def test_batch_read_by_timestamp(spark, broker):
    topic = new_topic(broker, 2)
    fill(broker, topic, 2, 10)  # offset i has timestamp NOW + i s in both partitions
    # the first offset whose timestamp is >= the one given (ListOffsets by timestamp), end exclusive
    got = read(spark, broker, topic,
               startingOffsetsByTimestamp=json.dumps({topic: {"0": NOW_MS + 2500, "1": NOW_MS}}),
               endingOffsetsByTimestamp=json.dumps({topic: {"0": NOW_MS + 6000, "1": NOW_MS + 1000}}))
    assert got == expected(2, {0: range(3, 6), 1: range(0, 1)})
    # one timestamp for every partition
    assert read(spark, broker, topic, startingTimestamp=str(NOW_MS + 7000)) == expected(2, range(7, 10))
    # a timestamp past the last record: an error by default (asked once, not 3 times a second apart),
    # the end with strategy "latest"
    with pytest.raises(Exception, match="No offset matched"):
        read(spark, broker, topic, startingTimestamp=str(NOW_MS + 60_000), **{"fetchOffset.numRetries": "1"})
    assert read(spark, broker, topic, startingTimestamp=str(NOW_MS + 60_000),
                startingOffsetsByTimestampStrategy="latest") == []
    # the timestamps themselves come back as produced (CreateTime)
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic).load()
            .selectExpr("partition", "offset", "unix_millis(timestamp) AS ts", "timestampType").collect())
    assert sorted((r.partition, r.offset, r.ts, r.timestampType) for r in rows) == \
        sorted((p, i, NOW_MS + i * 1000, 0) for p in range(2) for i in range(10))


def test_batch_write_then_read_with_another_client(spark, broker):
    topic = new_topic(broker, 3)
    rows = [(f"k{i}", f"value {i}", i % 3, [("h", f"{i}".encode())]) for i in range(30)]
    df = spark.createDataFrame(rows, "key string, value string, partition int, "
                                     "headers array<struct<key: string, value: binary>>")
    # one task, so one producer: per partition the order is the DataFrame's (two tasks would interleave)
    (df.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
     .option("topic", topic).option("includeHeaders", "true").save())
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{topic}",
                         "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 30 and time.monotonic() < deadline:
            for m in consumer.consume(30, 0.5):
                assert m.error() is None, m.error()
                got.append((m.partition(), m.key().decode(), m.value().decode(), m.headers()))
    finally:
        consumer.close()
    assert sorted(got) == sorted((i % 3, f"k{i}", f"value {i}", [("h", f"{i}".encode())]) for i in range(30))
    for p in range(3):
        assert [k for q, k, _, _ in got if q == p] == [f"k{i}" for i in range(p, 30, 3)]


def test_batch_write_compressed_and_read_by_pattern_with_headers(spark, broker):
    """The Java producer's compressed batches (every codec) go through the broker and back."""
    topic = new_topic(broker, 1)
    codecs = ["none", "gzip", "snappy", "lz4", "zstd"]
    for codec in codecs:
        df = spark.createDataFrame([(f"{codec} {i} " + "x" * 200, [("codec", codec.encode())])
                                    for i in range(20)],
                                   "value string, headers array<struct<key: string, value: binary>>")
        (df.coalesce(1).write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
         .option("topic", topic).option("includeHeaders", "true")
         .option("kafka.compression.type", codec).option("kafka.linger.ms", "50").save())
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribePattern", f"{topic}|{topic}-none").option("includeHeaders", "true").load()
            .selectExpr("offset", "CAST(value AS STRING) AS value", "CAST(headers[0].value AS STRING) AS codec")
            .orderBy("offset").collect())
    assert [(r.offset, r.value, r.codec) for r in rows] == [
        (n * 20 + i, f"{codec} {i} " + "x" * 200, codec) for n, codec in enumerate(codecs) for i in range(20)]


def test_read_committed_without_transactions_returns_everything(spark, broker):
    topic = new_topic(broker, 2)
    produce(broker, topic, [{"partition": i % 2, "value": f"v{i % 2}-{i // 2}"} for i in range(20)])
    # and from an idempotent producer: batches with a producer id, still not transactional
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for i in range(10, 15):
        for p in range(2):
            producer.produce(topic, value=f"v{p}-{i}", partition=p)
    assert producer.flush(15) == 0
    assert read(spark, broker, topic, **{"kafka.isolation.level": "read_committed"}) == \
        expected(2, range(15))


def test_read_committed_skips_aborted_transactions(spark, broker):
    topic = new_topic(broker, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"spark-{topic}"})
    producer.init_transactions(30)
    for name, commit in (("committed", True), ("aborted", False), ("later", True)):
        producer.begin_transaction()
        for i in range(6):
            producer.produce(topic, value=f"{name}-{i}", partition=i % 2)
        producer.flush(15)
        producer.commit_transaction(30) if commit else producer.abort_transaction(30)

    def values(isolation: str) -> list[str]:
        return sorted(v for _, _, v in read(spark, broker, topic, **{"kafka.isolation.level": isolation}))

    wanted = sorted(f"{name}-{i}" for name in ("committed", "later") for i in range(6))
    assert values("read_committed") == wanted
    assert values("read_uncommitted") == sorted(wanted + [f"aborted-{i}" for i in range(6)])


def test_min_partitions_splits_offset_ranges(spark, broker):
    topic = new_topic(broker, 2)
    fill(broker, topic, 2, 50)
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
          .option("subscribe", topic).option("minPartitions", "6").load())
    assert df.rdd.getNumPartitions() == 6
    rows = df.selectExpr("partition", "offset", "CAST(value AS STRING) AS value").collect()
    assert sorted((r.partition, r.offset, r.value) for r in rows) == expected(2, range(50))
    # without it: one Spark partition per Kafka partition
    assert (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic).load().rdd.getNumPartitions()) == 2


# --- Structured Streaming ---------------------------------------------------------------------------------


def start_upper_case_query(spark, broker, source: str, sink: str, checkpoint: Path):
    """readStream source -> upper-case the value -> writeStream to sink, a few records per micro-batch."""
    stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
              .option("subscribe", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", "7").load())
    return (stream.selectExpr("key", "upper(CAST(value AS STRING)) AS value")
            .writeStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", sink).option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="200 milliseconds").start())


def wait_for(predicate, timeout: float, what: str, interval: float = 0.3) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)


def test_streaming_read_transform_write_stopped_and_restarted(spark, broker, tmp_path):
    source, sink = new_topic(broker, 2), new_topic(broker, 2)
    checkpoint = tmp_path / "checkpoint"
    fill(broker, source, 2, 15)

    def sink_values() -> list[str]:
        return sorted(v for _, _, v in read(spark, broker, sink))

    def idle(query) -> bool:
        return query.lastProgress is not None and not query.status["isDataAvailable"] \
            and not query.status["isTriggerActive"]

    query = start_upper_case_query(spark, broker, source, sink, checkpoint)
    try:
        wait_for(lambda: len(sink_values()) >= 30 and idle(query), 60, "the first 30 records")
    finally:
        query.stop()
    assert query.exception() is None
    assert sink_values() == sorted(f"V{p}-{i}" for p in range(2) for i in range(15))

    # while it is stopped: more input; the restarted query goes on from its checkpoint, not from earliest
    fill(broker, source, 2, 10, start=15)
    query = start_upper_case_query(spark, broker, source, sink, checkpoint)
    try:
        wait_for(lambda: len(sink_values()) >= 50 and idle(query), 60, "the next 20 records")
        time.sleep(1)  # a few more triggers: nothing more may come
    finally:
        query.stop()
    assert query.exception() is None
    assert sink_values() == sorted(f"V{p}-{i}" for p in range(2) for i in range(25))
    # the keys went through, and per partition the order is the source's
    rows = read_rows(spark, broker, sink)
    for p in range(2):
        assert [v for k, v in rows if k == f"p{p}"] == [f"V{p}-{i}" for i in range(25)]


def read_rows(spark, broker, topic: str) -> list[tuple[str, str]]:
    """(key, value) of every record of ``topic`` in (partition, offset) order."""
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic).load()
            .selectExpr("partition", "offset", "CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
            .orderBy("partition", "offset").collect())
    return [(r.key, r.value) for r in rows]


# --- failOnDataLoss after DeleteRecords -------------------------------------------------------------------


def delete_records_before(broker, topic: str, partition: int, offset: int) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(topic, partition, offset)])
    result = next(iter(futures.values())).result(timeout=15)
    assert result.low_watermark == offset


def test_fail_on_data_loss_after_delete_records(spark, broker, tmp_path):
    topic = new_topic(broker, 1)
    fill(broker, topic, 1, 5)
    # a streaming query that read offsets 0-4 and stopped; its checkpoint says: next is 5
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_once(fail_on_data_loss: bool):
        stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
                  .option("subscribe", topic).option("startingOffsets", "earliest")
                  .option("failOnDataLoss", str(fail_on_data_loss).lower()).load())
        query = (stream.selectExpr("offset", "CAST(value AS STRING) AS value").writeStream
                 .format("parquet").option("path", str(out)).option("checkpointLocation", str(checkpoint))
                 .trigger(availableNow=True).start())
        assert query.awaitTermination(60), "the query did not finish"
        return query

    run_once(True)
    fill(broker, topic, 1, 15, start=5)
    delete_records_before(broker, topic, 0, 10)  # offsets 5-9 go before the query reads them

    # batch reads: earliest is the new log start offset; explicit offsets before it fail or are skipped
    assert read(spark, broker, topic) == expected(1, range(10, 20))
    from_zero = {"startingOffsets": json.dumps({topic: {"0": 0}})}
    with pytest.raises(Exception, match="(?i)lost|out of range|cannot fetch"):
        read(spark, broker, topic, **from_zero)
    assert read(spark, broker, topic, failOnDataLoss="false", **from_zero) == expected(1, range(10, 20))

    # the streaming query: fails on restart by default, skips to offset 10 with failOnDataLoss=false
    with pytest.raises(StreamingQueryException, match=r"Some data may have been lost"):
        run_once(True)
    run_once(False)
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.offset, r.value) for r in rows) == [(i, f"v0-{i}") for i in [*range(5), *range(10, 20)]]


# --- the offline load (pykbroker.spark) -------------------------------------------------------------------


def loaded(spark, output: Path) -> list[tuple[str, int, int, str]]:
    """(topic, partition, offset, value) of every committed record under ``output``, sorted."""
    rows = spark.read.parquet(str(output)).selectExpr(
        "topic", "partition", "offset", "CAST(value AS STRING) AS value").collect()
    return sorted((r.topic, r.partition, r.offset, r.value) for r in rows)


def as_loaded(topic: str, partitions: int, offsets: range) -> list[tuple[str, int, int, str]]:
    return [(topic, p, i, v) for p, i, v in expected(partitions, offsets)]


def test_load_one_task_per_partition_and_reruns_continue(spark, broker, tmp_path):
    a, b = new_topic(broker, 3), new_topic(broker, 1)
    fill(broker, a, 3, 12)
    fill(broker, b, 1, 5)
    output = tmp_path / "load"
    lines = []
    results = load(spark, [a, b], output, max_offsets_per_partition=5,
                   on_batch=lambda r: lines.append(r.describe()))
    # 12 offsets in steps of 5: three batches; topic b (5 offsets) is done after the first
    assert [r.batch for r in results] == [1, 2, 3]
    assert [r.tasks for r in results] == [4, 3, 3]
    assert [r.records for r in results] == [20, 15, 6]
    assert results[0].start == {a: {0: 0, 1: 0, 2: 0}, b: {0: 0}}
    assert results[2].end == {a: {0: 12, 1: 12, 2: 12}}
    assert len(lines) == 3 and lines[0].startswith("batch 1: 20 records (20 offsets) from 4 partitions")
    for r in results:  # a Parquet file per task, the offsets beside them
        assert len(list(r.path.glob("part-*.parquet"))) == r.tasks
        assert (r.path / OFFSETS_FILE).exists()
    assert committed_offsets(output) == (3, {a: {0: 12, 1: 12, 2: 12}, b: {0: 5}})
    assert loaded(spark, output) == sorted(as_loaded(a, 3, range(12)) + as_loaded(b, 1, range(5)))

    # nothing new: nothing committed
    assert load(spark, [a, b], output) == []
    # more records: the rerun reads exactly them
    fill(broker, a, 3, 4, start=12)
    results = load(spark, [a, b], output)
    assert [(r.batch, r.records, r.start) for r in results] == [(4, 12, {a: {0: 12, 1: 12, 2: 12}})]
    assert loaded(spark, output) == sorted(as_loaded(a, 3, range(16)) + as_loaded(b, 1, range(5)))


def test_load_after_delete_records_fails_or_skips(spark, broker, tmp_path):
    topic = new_topic(broker, 1)
    fill(broker, topic, 1, 5)
    output = tmp_path / "load"
    load(spark, [topic], output)
    fill(broker, topic, 1, 10, start=5)
    delete_records_before(broker, topic, 0, 8)
    with pytest.raises(Exception, match="(?i)lost|out of range|cannot fetch"):
        load(spark, [topic], output)
    assert committed_offsets(output) == (1, {topic: {0: 5}})  # the failed batch committed nothing
    assert not any((output / STAGING_DIR).iterdir())
    [result] = load(spark, [topic], output, fail_on_data_loss=False)
    assert (result.start, result.end, result.records) == ({topic: {0: 5}}, {topic: {0: 15}}, 7)
    assert loaded(spark, output) == as_loaded(topic, 1, range(5)) + as_loaded(topic, 1, range(8, 15))


def spark_load(broker, topics: list[str], output: Path, *extra: str) -> subprocess.Popen:
    """``pykbroker spark-load`` in a process group of its own (its JVM included), output piped."""
    cmd = [sys.executable, "-m", "pykbroker.cli", "spark-load", "--bootstrap", broker.bootstrap,
           "--topics", ",".join(topics), "--output", str(output), *extra]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.mark.skipif(os.environ.get("PYKBROKER_SPARK_SLOW") != "1",
                    reason="40 s of Spark through kill -9s: make test-spark-slow (PYKBROKER_SPARK_SLOW=1)")
@pytest.mark.timeout(600)
def test_spark_load_killed_mid_batch_neither_duplicates_nor_drops(spark, broker, tmp_path):
    topic = new_topic(broker, 3)
    fill(broker, topic, 3, 40)
    output = tmp_path / "load"
    proc = spark_load(broker, [topic], output, "--max-offsets-per-partition", "5")
    try:
        # kill -9 (the CLI and its JVM) while Spark's tasks write batch 3: two batches are committed by then
        staged = output / STAGING_DIR / "batch=00000003"
        wait_for(lambda: any(staged.glob("_temporary/*/_temporary/attempt_*")) or proc.poll() is not None,
                 300, "the tasks of batch 3", interval=0.02)  # Spark's start alone takes a minute under load
        assert proc.poll() is None, proc.communicate()
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
    assert re.search(r"^batch 2: 15 records .* offsets committed", out, re.M), (out, err)
    assert "batch 3:" not in out
    assert staged.exists()  # what the killed run left; never read
    assert committed_offsets(output) == (2, {topic: {0: 10, 1: 10, 2: 10}})
    assert loaded(spark, output) == as_loaded(topic, 3, range(10))

    proc = spark_load(broker, [topic], output, "--max-offsets-per-partition", "15",
                      "--option", "isolation.level=read_committed")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (out, err)
    assert "last committed batch: 2" in out
    assert re.findall(r"^batch (\d+): (\d+) records", out, re.M) == [("3", "45"), ("4", "45")]
    assert out.rstrip().endswith("up to date")
    assert not (output / STAGING_DIR / "batch=00000003").exists()
    assert loaded(spark, output) == as_loaded(topic, 3, range(40))
