"""Stock-client steps shared by tests that only need to see a broker work end to end."""

from __future__ import annotations

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
