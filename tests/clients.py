"""Stock-client steps shared by tests that only need to see a broker work end to end, and waits on what a
client read that do not start their clock before the client is ready."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Message, Producer


def round_trip(bootstrap: str, topic: str, value: bytes, partition: int = -1, timeout: float = 30.0) -> Message:
    """Produce ``value`` to ``topic`` with confluent-kafka (acknowledged), then consume it back in a group;
    the message read (the assertion on it is the caller's)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value, partition=partition)
    assert producer.flush(timeout) == 0, "the record was not acknowledged"
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "round-trip", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        for _ in range(int(timeout * 2)):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                return msg
    finally:
        consumer.close()
    raise AssertionError(f"nothing read back from {topic} within {timeout}s")


def read_kafka_python(consumer, count: int, timeout: float = 60.0, then_idle_ms: int = 500) -> list:
    """The records a kafka-python ``consumer`` reads: polled until ``count`` have come (``timeout`` s in all, an
    AssertionError then), and then for ``then_idle_ms`` more, whose records are added too so the caller sees
    any extra. Unlike iterating with consumer_timeout_ms, whose clock also runs while the consumer joins its
    group and finds its positions (a loaded machine's slow start ate it), only the idle tail is timed."""
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        assert time.monotonic() < deadline, f"{len(got)} of {count} records read within {timeout}s"
        for records in consumer.poll(timeout_ms=500).values():
            got += records
    for records in consumer.poll(timeout_ms=then_idle_ms).values():
        got += records
    return got
