"""Stock clients read a tiered topic whose first segments are only in remote storage: Kafka's own Java
console consumer and kafka-python get every record from offset 0, as from a Kafka broker with tiered storage."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KPTopicPartition

from compat_tests.test_security import jars, java_tool  # noqa: F401 - jars is a fixture
from pykbroker.testing import BrokerProcess
from tests.replication.test_tiered_storage import (
    EARLIEST_LOCAL,
    TOPIC_CONFIGS,
    list_offset,
    produce,
    tiered_overrides,
    wait_until,
)

N = 500


@pytest.fixture(scope="module")
def tiered_topic(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiered-clients")
    with BrokerProcess(root / "b", overrides=tiered_overrides(root / "remote")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("tiered", 1, 1, config=TOPIC_CONFIGS)])["tiered"].result(30)
        produce(broker.bootstrap, "tiered", N)
        wait_until(lambda: list_offset(broker.bootstrap, "tiered", EARLIEST_LOCAL)[1] > 200, what="remote-only data")
        yield broker


@pytest.mark.timeout(180)
def test_java_console_consumer_reads_from_the_start(jars, tiered_topic):  # noqa: F811
    done = java_tool(jars, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                     tiered_topic.bootstrap, "--topic", "tiered", "--from-beginning", "--max-messages", str(N),
                     "--property", "print.offset=true", "--timeout-ms", "60000")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == N
    assert [int(line.split("Offset:")[1].split()[0]) for line in lines] == list(range(N))
    assert all(f"value-{i:06d}-" in line for i, line in enumerate(lines))


@pytest.mark.timeout(120)
def test_kafka_python_reads_from_the_start(tiered_topic):
    consumer = KafkaConsumer(bootstrap_servers=tiered_topic.bootstrap, enable_auto_commit=False,
                             max_partition_fetch_bytes=16384)
    tp = KPTopicPartition("tiered", 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[int] = []
    while len(got) < N:
        batch = consumer.poll(timeout_ms=5000)
        assert batch, f"stalled at {len(got)}"
        got += [r.offset for records in batch.values() for r in records]
    consumer.close()
    assert got == list(range(N))
