"""Client telemetry (KIP-714) from real clients: what they push appears on pykbroker's Prometheus endpoint.

- librdkafka (confluent-kafka) produces and consumes with a subscription made by IncrementalAlterConfigs; the scrape
  shows its pushed producer and consumer metrics with its client labels (in ``make test``).
- Kafka 4.4's ``kafka-client-metrics.sh`` (ClientMetricsCommand) creates, describes and lists a subscription; a
  Java 4.4 producer (ProducerPerformance) and consumer (ConsoleConsumer), which push by default
  (``enable.metrics.push``), show up as ``org_apache_kafka_producer_*`` and ``org_apache_kafka_consumer_*``
  series with their client_id, instance id and software labels (JVMs: ``make test-telemetry-slow``,
  PYKBROKER_TELEMETRY_SLOW=1).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, Producer
from prometheus_client.parser import text_string_to_metric_families

from compat_tests.jvm.kafka_broker import jars_dir
from pykbroker.testing import BrokerProcess, RawClient, free_port

Samples = dict[str, list[tuple[dict[str, str], float]]]
T = TypeVar("T")
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
slow = pytest.mark.skipif(os.environ.get("PYKBROKER_TELEMETRY_SLOW") != "1",
                          reason="Java clients: make test-telemetry-slow (PYKBROKER_TELEMETRY_SLOW=1)")


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def pushed(port: int, prefix: str, client_id: str) -> Samples:
    """The scraped series named ``prefix``... of the client ``client_id``."""
    return {name: found for name, samples in scrape(port).items() if name.startswith(prefix)
            and (found := [(labels, v) for labels, v in samples if labels.get("client_id") == client_id])}


def wait_for(predicate: Callable[[], T], what: str, timeout: float = 60.0,
             alive: Callable[[], None] = lambda: None) -> T:
    """``predicate()`` once it is truthy (``alive`` checks the clients meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        alive()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} within {timeout} s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def telemetry_broker(tmp_path_factory):
    port = free_port()
    with BrokerProcess(tmp_path_factory.mktemp("client-telemetry"), overrides={
            "metrics.port": str(port), "metrics.client.telemetry.enable": "true",
            "group.initial.rebalance.delay.ms": "0"}) as broker:
        broker.start()
        yield broker, port
        assert broker.alive, broker.log()


def test_librdkafka_pushes_its_metrics(telemetry_broker):
    broker, port = telemetry_broker
    with RawClient(broker.bootstrap) as c:  # confluent-kafka's AdminClient has no CLIENT_METRICS resource type
        c.set_client_metrics("librdkafka", metrics="org.apache.kafka.", interval_ms="200",
                             match="client_software_name=confluent-kafka-python")
    topic = f"rdkafka-telemetry-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "client.id": "rd-producer", "linger.ms": 5})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "rd-consumer", "group.id": topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        def produce_and_look() -> Samples:
            producer.produce(topic, b"x" * 100)
            producer.poll(0.1)
            consumer.poll(0.1)
            return pushed(port, "org_apache_kafka_producer_", "rd-producer")

        got = wait_for(produce_and_look, "librdkafka's producer metrics on the scrape")
        labels = next(iter(got.values()))[0][0]
        assert labels["client_software_name"] == "confluent-kafka-python", labels
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", labels["client_instance_id"]), labels

        def consume_and_look() -> Samples:
            producer.produce(topic, b"y")
            producer.poll(0)
            consumer.poll(0.2)
            return pushed(port, "org_apache_kafka_consumer_", "rd-consumer")

        assert wait_for(consume_and_look, "librdkafka's consumer metrics on the scrape")
    finally:
        consumer.close()
        producer.flush(10)


@pytest.fixture(scope="module")
def jars() -> Path:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    found = jars_dir()
    if found is None:
        pytest.skip("Kafka's jars are missing and compat_tests/jvm/fetch_jars.sh could not fetch them (Maven?)")
    return found


def run_tool(jars: Path, main_class: str, *args: str) -> str:
    done = subprocess.run([*JAVA, "-cp", f"{jars}/*", main_class, *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"{main_class} {args}: {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@slow
def test_java_clients_push_their_metrics(telemetry_broker, jars, tmp_path):
    broker, port = telemetry_broker
    tool = "org.apache.kafka.tools.ClientMetricsCommand"
    out = run_tool(jars, tool, "--bootstrap-server", broker.bootstrap, "--alter", "--name", "java-clients",
                   "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.", "--interval", "500",
                   "--match", "client_software_name=apache-kafka-java")
    assert "Altered client metrics config for java-clients." in out, out
    described = run_tool(jars, tool, "--bootstrap-server", broker.bootstrap, "--describe", "--name", "java-clients")
    assert "interval.ms=500" in described and "client_software_name=apache-kafka-java" in described, described
    assert "java-clients" in run_tool(jars, tool, "--bootstrap-server", broker.bootstrap, "--list")
    topic = f"java-telemetry-{uuid.uuid4().hex[:6]}"
    procs = []
    try:
        with open(tmp_path / "producer.log", "wb") as sink:
            procs.append(subprocess.Popen([
                *JAVA, "-cp", f"{jars}/*", "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                "--num-records", "100000000", "--throughput", "200", "--record-size", "100", "--producer-props",
                f"bootstrap.servers={broker.bootstrap}", "client.id=java-producer"],
                stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        with open(tmp_path / "consumer.log", "wb") as sink:
            procs.append(subprocess.Popen([
                *JAVA, "-cp", f"{jars}/*", "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
                broker.bootstrap, "--topic", topic, "--group", topic, "--consumer-property", "client.id=java-consumer",
                "--from-beginning"], stdout=subprocess.DEVNULL, stderr=sink, stdin=subprocess.DEVNULL))

        def alive() -> None:
            for p, log in zip(procs, ("producer.log", "consumer.log"), strict=True):
                assert p.poll() is None, (tmp_path / log).read_text()[-3000:]

        def sent() -> Samples:  # the delta sums add up: records were sent once this is above 0
            got = pushed(port, "org_apache_kafka_producer_", "java-producer")
            total = got.get("org_apache_kafka_producer_record_send_total", [])
            return got if total and total[0][1] > 0 else {}

        got = wait_for(sent, "the Java producer's record-send-total on the scrape", alive=alive)
        labels = next(iter(got.values()))[0][0]
        assert labels["client_software_name"] == "apache-kafka-java", labels
        assert labels["client_software_version"] == "4.4.0", labels
        assert {"org_apache_kafka_producer_request_latency_avg", "org_apache_kafka_producer_record_queue_time_max",
                "org_apache_kafka_producer_topic_byte_total"} <= set(got), sorted(got)
        consumer = wait_for(lambda: pushed(port, "org_apache_kafka_consumer_", "java-consumer"),
                            "the Java consumer's metrics on the scrape", alive=alive)
        # client-side lag and latency, per partition, without touching the application
        assert {"org_apache_kafka_consumer_fetch_manager_records_lag_max",
                "org_apache_kafka_consumer_fetch_manager_fetch_latency_avg"} <= set(consumer), sorted(consumer)
        lag = wait_for(lambda: pushed(port, "org_apache_kafka_consumer_fetch_manager_records_lag", "java-consumer")
                       .get("org_apache_kafka_consumer_fetch_manager_records_lag", []), "per-partition lag")
        assert {labels.get("topic") for labels, _ in lag} == {topic}, lag
        out = run_tool(jars, tool, "--bootstrap-server", broker.bootstrap, "--delete", "--name", "java-clients")
        assert "Deleted client metrics config for java-clients." in out, out
        assert "java-clients" not in run_tool(jars, tool, "--bootstrap-server", broker.bootstrap, "--list")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
