"""The broker for other projects' tests: time to a usable broker (launch to the first successful produce)
and the wall time of a small sample suite (a producer test and a consumer group test, each with
confluent-kafka and kafka-python; start and stop included), for every way of getting one:

- fixture: what the pytest plugin's ``kafka_broker`` runs (a ``BrokerProcess`` with its settings)
- embedded: ``pykbroker.embedded()`` in this process (the first start pays for imports: reported apart)
- testcontainers-style: ``pykbroker.testcontainers.KafkaContainer``
- Apache Kafka 4.1 from its jars (``compat_tests/jvm/kafka_broker.KafkaBroker``, format included), when
  java and the jars are there

    python -m bench startup              # or: python -m bench.startup_bench [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

ROUNDS = 3


def first_produce(bootstrap: str, timeout: float = 60.0) -> None:
    """Until a produce to a new (auto-created) topic is acknowledged."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(f"first-{uuid.uuid4().hex[:6]}", b"x")
    if producer.flush(timeout) != 0:
        raise RuntimeError(f"no acknowledged produce within {timeout}s")


def sample_suite(bootstrap: str) -> None:
    """The sample project's tests: produce, then consume in a group, with each client library."""
    from confluent_kafka import Consumer, Producer
    from kafka import KafkaConsumer, KafkaProducer

    topic = f"suite-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce(topic, f"c{i}".encode())
    assert producer.flush(30) == 0
    kp = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(10):
        kp.send(topic, f"k{i}".encode())
    kp.flush(30)
    kp.close()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g1", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 60
    while got < 20 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        got += msg is not None and msg.error() is None
    consumer.close()
    assert got == 20, got
    kc = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id="g2", auto_offset_reset="earliest",
                       consumer_timeout_ms=30000)
    n = 0
    for _ in kc:
        n += 1
        if n == 20:
            break
    kc.close()
    assert n == 20, n


@contextmanager
def fixture_broker():
    from pykbroker.testing import BrokerProcess

    with tempfile.TemporaryDirectory() as tmp, BrokerProcess(tmp, {
            "group.initial.rebalance.delay.ms": "0", "num.partitions": "1",
            "auto.create.topics.enable": "true"}) as broker:
        yield broker.bootstrap


@contextmanager
def embedded_broker():
    import pykbroker

    with pykbroker.embedded() as broker:
        yield broker.bootstrap


@contextmanager
def testcontainers_style():
    from pykbroker.testcontainers import KafkaContainer

    with KafkaContainer() as kafka:
        yield kafka.get_bootstrap_server()


def apache_kafka() -> Callable[[], AbstractContextManager[str]] | None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir

    jars = jars_dir()
    if jars is None:
        return None

    @contextmanager
    def run():
        with KafkaBroker(jars, overrides={"group.initial.rebalance.delay.ms": "0"}) as broker:
            yield broker.bootstrap

    return run


def measure(start: Callable[[], AbstractContextManager[str]], rounds: int) -> tuple[list[float], list[float]]:
    """(seconds to the first produce, seconds for start + suite + stop) per round."""
    ready, suite = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        with start() as bootstrap:
            first_produce(bootstrap)
            ready.append(time.perf_counter() - t0)
            sample_suite(bootstrap)
        suite.append(time.perf_counter() - t0)
    return ready, suite


def main(rounds: int = ROUNDS) -> None:
    t0 = time.perf_counter()
    with embedded_broker() as bootstrap:  # imports of the whole broker into this process, once
        first_produce(bootstrap)
    print(f"embedded, first start in a fresh process (imports included): {time.perf_counter() - t0:.2f} s")
    candidates: list[tuple[str, Callable | None]] = [
        ("fixture (kafka_broker)", fixture_broker), ("embedded", embedded_broker),
        ("testcontainers-style", testcontainers_style), ("Apache Kafka 4.1 (jars)", apache_kafka())]
    print(f"{'broker':28} {'first produce (median, min) s':>30} {'start+suite+stop (median) s':>30}")
    for name, start in candidates:
        if start is None:
            print(f"{name:28} skipped: java or Kafka's jars missing")
            continue
        ready, suite = measure(start, rounds)
        print(f"{name:28} {statistics.median(ready):>20.3f} {min(ready):>9.3f} {statistics.median(suite):>30.2f}",
              flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
