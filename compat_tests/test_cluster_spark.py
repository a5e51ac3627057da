"""Spark Structured Streaming reading from a three-broker cluster keeps going through a broker's SIGKILL:
with failOnDataLoss=true it neither fails nor misses a record (Spark's kafka source, kafka-clients 3.9)."""

from __future__ import annotations

import os
import shutil
import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from pykbroker.testing import ClusterProcesses

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Spark need java")

PARTITIONS = 2


def wait_for(predicate, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


@pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                    reason="a minute or more: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)")
def test_a_streaming_query_survives_a_killed_leader(tmp_path):
    from pykbroker.spark import spark_session

    with ClusterProcesses(tmp_path / "cluster", size=3) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topic = f"spark-{uuid.uuid4().hex[:8]}"
        admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})

        def produce(start: int, count: int) -> None:
            for i in range(start, start + count):
                producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
            assert producer.flush(60) == 0

        spark = spark_session(cluster.bootstrap, "compat_tests.test_cluster_spark")
        try:
            stream = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", cluster.bootstrap)
                      .option("subscribe", topic).option("startingOffsets", "earliest")
                      .option("failOnDataLoss", "true").option("maxOffsetsPerTrigger", "50").load())
            query = (stream.selectExpr("CAST(value AS STRING) AS value").writeStream.format("memory")
                     .queryName("survivor").option("checkpointLocation", str(tmp_path / "checkpoint"))
                     .trigger(processingTime="200 milliseconds").start())

            def seen() -> list[int]:
                return sorted(int(r.value) for r in spark.table("survivor").collect())
            try:
                produce(0, 200)
                wait_for(lambda: len(seen()) >= 200, "the first 200 records")
                leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
                cluster.broker(leader).kill()
                produce(200, 200)  # acknowledged by the new leader and the other in-sync replica
                wait_for(lambda: len(seen()) >= 400, "the records written after the kill")
                cluster.broker(leader).start()
                produce(400, 100)
                wait_for(lambda: len(seen()) >= 500, "the records written after the restart")
                assert query.exception() is None
            finally:
                query.stop()
            assert seen() == list(range(500))
        finally:
            spark.stop()
