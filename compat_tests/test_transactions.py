"""Transactions and idempotence with confluent-kafka, kafka-python and aiokafka against pykbroker.

Committed data is visible to read_committed consumers, aborted data never; read_uncommitted sees both.
A read-process-write loop commits its input offsets inside its transactions and copies every input
exactly once across a crash of the copier and a ``kill -9`` of the broker. A new producer with the
same transactional id fences the old one; a transaction left open past its timeout is aborted by the
broker. Retried idempotent batches are stored once and a sequence gap is refused.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from tests.clients import read_kafka_python

ROOT = Path(__file__).resolve().parent.parent
# Expired transactions are looked for every half second here (Kafka's default: every 10 s).
OVERRIDES = {"num.partitions": "2", "transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
             "transaction.state.log.num.partitions": "4"}


@pytest.fixture(scope="module")
def tbroker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("txn-broker"), overrides=OVERRIDES) as b:
        yield b
        assert b.alive, f"the broker died during the tests; its log:\n{b.log()}"


def new_topic(broker: BrokerProcess, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    with RawClient(broker.bootstrap) as c:
        c.wait_for_topics(name, auto_create=True)
    return name


def consume_all(bootstrap: str, topic: str, isolation: str, expect: int | None = None,
                timeout: float = 15.0) -> list[str]:
    """Values of every record of ``topic`` (both partitions) a confluent consumer with ``isolation`` reads."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{uuid.uuid4().hex[:6]}",
                  "isolation.level": isolation, "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    values: list[str] = []
    at_eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    at_eof.add(m.partition())
                    if len(at_eof) == 2 and (expect is None or len(values) >= expect):
                        break
                continue
            at_eof.discard(m.partition())
            values.append(m.value().decode())
    finally:
        c.close()
    return sorted(values)


def test_confluent_commit_and_abort_visibility(tbroker):
    from confluent_kafka import Producer
    topic = new_topic(tbroker, "cf-txn")
    p = Producer({"bootstrap.servers": tbroker.bootstrap, "transactional.id": f"cf-{topic}"})
    p.init_transactions(30)
    for name, commit in (("c", True), ("a", False), ("d", True)):
        p.begin_transaction()
        for i in range(4):
            p.produce(topic, f"{name}{i}".encode(), partition=i % 2)
        p.flush(30)
        p.commit_transaction(30) if commit else p.abort_transaction(30)
    committed = [f"{n}{i}" for n in "cd" for i in range(4)]
    assert consume_all(tbroker.bootstrap, topic, "read_committed", expect=8) == sorted(committed)
    assert consume_all(tbroker.bootstrap, topic, "read_uncommitted", expect=12) == sorted(
        committed + [f"a{i}" for i in range(4)])


def test_kafka_python_transactions(tbroker):
    from kafka import KafkaConsumer, KafkaProducer
    topic = new_topic(tbroker, "kp-txn")
    p = KafkaProducer(bootstrap_servers=tbroker.bootstrap, transactional_id=f"kp-{topic}")
    p.init_transactions()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, f"c{i}".encode(), partition=i % 2)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(3):
        p.send(topic, f"a{i}".encode(), partition=i % 2)
    p.flush()
    p.abort_transaction()
    p.close()
    c = KafkaConsumer(topic, bootstrap_servers=tbroker.bootstrap, auto_offset_reset="earliest",
                      isolation_level="read_committed")
    assert sorted(m.value.decode() for m in read_kafka_python(c, 3)) == ["c0", "c1", "c2"]
    c.close()
    assert consume_all(tbroker.bootstrap, topic, "read_uncommitted", expect=6) == [
        "a0", "a1", "a2", "c0", "c1", "c2"]


def test_aiokafka_transactions(tbroker):
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    topic = new_topic(tbroker, "aio-txn")

    async def main() -> list[str]:
        p = AIOKafkaProducer(bootstrap_servers=tbroker.bootstrap, transactional_id=f"aio-{topic}")
        await p.start()
        try:
            async with p.transaction():
                for i in range(3):
                    await p.send_and_wait(topic, f"c{i}".encode(), partition=i % 2)
            await p.begin_transaction()
            await p.send_and_wait(topic, b"a0", partition=0)
            await p.abort_transaction()
        finally:
            await p.stop()
        c = AIOKafkaConsumer(topic, bootstrap_servers=tbroker.bootstrap, auto_offset_reset="earliest",
                             isolation_level="read_committed")
        await c.start()
        try:
            got = await c.getmany(timeout_ms=3000)
            return sorted(m.value.decode() for records in got.values() for m in records)
        finally:
            await c.stop()

    assert asyncio.run(main()) == ["c0", "c1", "c2"]


def test_a_second_producer_with_the_same_id_fences_the_first(tbroker):
    from confluent_kafka import KafkaException, Producer
    topic = new_topic(tbroker, "fence")
    config = {"bootstrap.servers": tbroker.bootstrap, "transactional.id": f"fence-{topic}"}
    old = Producer(config)
    old.init_transactions(30)
    old.begin_transaction()
    old.produce(topic, b"zombie", partition=0)
    old.flush(30)
    new = Producer(config)
    new.init_transactions(30)  # aborts the old producer's open transaction
    new.begin_transaction()
    new.produce(topic, b"live", partition=1)
    new.commit_transaction(30)
    with pytest.raises(KafkaException) as exc:
        old.produce(topic, b"late", partition=0)
        old.commit_transaction(10)
    assert exc.value.args[0].fatal() and exc.value.args[0].name() == "_FENCED"
    assert consume_all(tbroker.bootstrap, topic, "read_committed", expect=1) == ["live"]


def test_an_expired_transaction_is_aborted_by_the_broker(tbroker):
    from confluent_kafka import KafkaException, Producer
    topic = new_topic(tbroker, "expire")
    p = Producer({"bootstrap.servers": tbroker.bootstrap, "transactional.id": f"exp-{topic}",
                  "transaction.timeout.ms": 2000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce(topic, b"abandoned", partition=0)
    p.flush(30)
    # Nothing ends the transaction: the broker aborts it once it is older than 2 s, which frees the last
    # stable offset so a read_committed consumer sees the data written after it.
    other = Producer({"bootstrap.servers": tbroker.bootstrap})
    other.produce(topic, b"after", partition=0)
    other.flush(30)
    assert consume_all(tbroker.bootstrap, topic, "read_committed", expect=1, timeout=20) == ["after"]
    assert consume_all(tbroker.bootstrap, topic, "read_uncommitted", expect=2) == ["abandoned", "after"]
    with pytest.raises(KafkaException):
        p.commit_transaction(10)  # fenced: the broker bumped its epoch when it aborted


def copier(broker: BrokerProcess, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "compat_tests.eos_copier", "--bootstrap", broker.bootstrap, *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)


def test_read_process_write_is_exactly_once_across_a_crash_and_a_broker_kill_9(tmp_path):
    from confluent_kafka import Producer
    with BrokerProcess(tmp_path / "eos-broker", overrides=OVERRIDES) as broker:
        source, sink = new_topic(broker, "eos-in"), new_topic(broker, "eos-out")
        inputs = [f"v{i:03d}" for i in range(200)]
        p = Producer({"bootstrap.servers": broker.bootstrap})
        for i, v in enumerate(inputs):
            p.produce(source, v.encode(), partition=i % 2)
        p.flush(30)
        args = ["--input", source, "--output", sink, "--group", "eos-g", "--txn-id", "eos-copier"]

        crashed = copier(broker, *args, "--crash-after", "3")
        assert crashed.returncode == 3, crashed.stderr
        assert "crashing inside transaction 4" in crashed.stdout
        uncommitted = consume_all(broker.bootstrap, sink, "read_uncommitted")
        committed = consume_all(broker.bootstrap, sink, "read_committed")
        assert len(uncommitted) > len(committed) > 0  # the dead copier's open transaction is in the log

        broker.restart(hard=True)  # kill -9, then start on the same data
        finished = copier(broker, *args)
        assert finished.returncode == 0, finished.stderr
        output = consume_all(broker.bootstrap, sink, "read_committed", expect=len(inputs), timeout=30)
        assert output == [v.upper() for v in inputs]  # every input once: nothing lost, nothing twice
