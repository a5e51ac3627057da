"""The testcontainers drop-in: code written for ``testcontainers.kafka.KafkaContainer`` runs against a
local pykbroker with only its import changed; ``with_env`` reaches the broker as the images map it."""

from __future__ import annotations

import shutil
import subprocess
import textwrap

import pytest
from kafka import KafkaProducer
from kafka.errors import MessageSizeTooLargeError

from pykbroker.testcontainers import KafkaContainer, env_to_property
from pykbroker.testing import free_port

# A test module as a testcontainers user writes it (Docker and testcontainers[kafka] installed).
WRITTEN_FOR_TESTCONTAINERS = textwrap.dedent('''
    from confluent_kafka import Consumer, Producer
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from testcontainers.kafka import KafkaContainer


    def round_trip(kafka):
        bootstrap = kafka.get_bootstrap_server()
        producer = KafkaProducer(bootstrap_servers=[bootstrap])
        producer.send("events", b"one")
        producer.flush()
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=[bootstrap])
        tp = TopicPartition("events", 0)
        consumer.assign([tp])
        end = consumer.end_offsets([tp])[tp]
        consumer.close()
        p = Producer({"bootstrap.servers": bootstrap})
        p.produce("events", b"two")
        p.flush(10)
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        c.subscribe(["events"])
        seen = []
        while len(seen) < 2:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                seen.append(m.value())
        c.close()
        return end, seen


    def test_with_statement():
        with KafkaContainer() as kafka:
            assert round_trip(kafka) == (1, [b"one", b"two"])


    def test_start_stop_and_builders():
        kafka = KafkaContainer("confluentinc/cp-kafka:7.6.0", port=9888).with_kraft()
        kafka.with_env("KAFKA_LOG_RETENTION_HOURS", "1")
        kafka.start()
        try:
            assert kafka.port == 9888 and kafka.kraft_enabled
            assert round_trip(kafka) == (1, [b"one", b"two"])
        finally:
            kafka.stop()
''')


def test_code_written_for_testcontainers_runs_with_only_the_import_changed():
    source = WRITTEN_FOR_TESTCONTAINERS.replace("from testcontainers.kafka import KafkaContainer",
                                                "from pykbroker.testcontainers import KafkaContainer")
    assert source.count("\n") == WRITTEN_FOR_TESTCONTAINERS.count("\n") and source != WRITTEN_FOR_TESTCONTAINERS
    namespace: dict = {}
    exec(compile(source, "written_for_testcontainers.py", "exec"), namespace)
    namespace["test_with_statement"]()
    namespace["test_start_stop_and_builders"]()


@pytest.mark.parametrize("env, prop", [
    ("KAFKA_LOG_RETENTION_MS", "log.retention.ms"),
    ("KAFKA_AUTO_CREATE_TOPICS_ENABLE", "auto.create.topics.enable"),
    ("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY__PASSWORD", "listener.name.internal.ssl.key_password"),
    ("KAFKA_CONFLUENT___METRICS", "confluent-metrics"),
    ("KAFKA_HEAP_OPTS", None), ("KAFKA_JMX_PORT", None), ("CLUSTER_ID", None),
])
def test_env_names_map_as_the_images_map_them(env, prop):
    assert env_to_property(env) == prop


def test_with_env_reaches_the_broker_and_container_networking_is_left_out():
    container = (KafkaContainer()
                 .with_env("KAFKA_MESSAGE_MAX_BYTES", "2000")
                 .with_env("KAFKA_LISTENERS", "PLAINTEXT://0.0.0.0:9093,BROKER://0.0.0.0:9092")
                 .with_env("KAFKA_BROKER_ID", "1")
                 .with_env("KAFKA_CONFLUENT_SUPPORT_METRICS_ENABLE", "false")
                 .with_env("KAFKA_HEAP_OPTS", "-Xmx1G"))
    assert container.broker_properties() == {
        "message.max.bytes": "2000", "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
    with container:
        producer = KafkaProducer(bootstrap_servers=container.get_bootstrap_server(), retries=0)
        producer.send("small", b"fits").get(15)
        with pytest.raises(MessageSizeTooLargeError):
            producer.send("small", b"x" * 5000).get(15)
        producer.close()
        stdout, _ = container.get_logs()
        assert b"pykbroker started" in stdout


def test_bind_ports_fixes_the_host_port_and_stop_removes_everything():
    port = free_port()
    container = KafkaContainer().with_bind_ports(9093, port)
    container.start()
    assert container.get_bootstrap_server() == f"127.0.0.1:{port}" and container.get_exposed_port(9093) == port
    data_dir = container._broker.data_dir
    with pytest.raises(ValueError):
        container.get_exposed_port(2181)
    container.stop()
    assert not data_dir.exists()
    with pytest.raises(RuntimeError):
        container.get_bootstrap_server()


def docker_daemon() -> str | None:
    """Why the real testcontainers path cannot run here, or None when it can."""
    if shutil.which("docker") is None:
        return "no docker command"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode != 0:
        return "docker is installed but no Docker daemon answers"
    return None


NO_DOCKER = docker_daemon()


@pytest.mark.skipif(NO_DOCKER is not None, reason=f"Docker is absent: {NO_DOCKER}")
def test_the_real_testcontainers_kafka_module_runs_the_same_code():  # pragma: no cover - needs Docker
    pytest.importorskip("testcontainers.kafka")
    namespace: dict = {}
    exec(compile(WRITTEN_FOR_TESTCONTAINERS, "written_for_testcontainers.py", "exec"), namespace)
    namespace["test_with_statement"]()
