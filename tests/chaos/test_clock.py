"""Clock jumps of one broker's wall clock (chaos/clock_shift.c preloaded, no hook in the broker): the broker
stamps LogAppendTime with the jumped clock both ways and keeps serving, and a forward jump past a topic's
retention.ms expires its data, as Kafka's retention does (it reads the same wall clock)."""

from __future__ import annotations

import shutil
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from chaos.clock import ClockShifts
from pykbroker.testing import BrokerProcess

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="the clock shift is built with cc")

HOUR_MS = 3_600_000


@pytest.fixture(scope="module")
def shifted(tmp_path_factory):
    """A broker whose wall clock the tests move (node id 1 in ``clocks``), shared by this module's tests (each
    sets the shift back to 0)."""
    tmp_path = tmp_path_factory.mktemp("clock")
    clocks = ClockShifts(tmp_path / "clocks")
    broker = BrokerProcess(tmp_path / "broker", {"log.retention.check.interval.ms": "300", "log.initial.task.delay.ms": "0",
                                                 "offsets.topic.num.partitions": "1",
                                                 "log.segment.delete.delay.ms": "0"})
    clocks.attach(1, broker)
    with broker:
        yield broker, clocks


def produce(bootstrap: str, topic: str, values: list[str]) -> list[tuple[int, int]]:
    """(offset, timestamp) of each acknowledged record."""
    acks: list[tuple[int, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for v in values:
        producer.produce(topic, v.encode(), partition=0,
                         on_delivery=lambda err, m: acks.append((m.offset(), m.timestamp()[1])) if err is None else None)
    assert producer.flush(30) == 0
    assert len(acks) == len(values)
    return acks


def wait_for_shift(bootstrap: str, topic: str, expected_ms: int) -> int:
    """Produce until the broker's LogAppendTime is real time + ``expected_ms`` (the shift is read within
    50 ms); the timestamp it stamped."""
    deadline = time.monotonic() + 10
    while True:
        before = time.time() * 1000
        (_, ts), = produce(bootstrap, topic, ["probe"])
        if abs(ts - before - expected_ms) < 5_000:
            return ts
        assert time.monotonic() < deadline, f"LogAppendTime {ts} is not real time {before:.0f} + {expected_ms}"
        time.sleep(0.1)


def test_log_append_time_follows_the_jumped_wall_clock_both_ways(shifted):
    broker, clocks = shifted
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("t", 1, 1, config={"message.timestamp.type": "LogAppendTime"})])["t"].result(30)
    wait_for_shift(broker.bootstrap, "t", 0)
    clocks.shift(1, HOUR_MS)
    ahead = wait_for_shift(broker.bootstrap, "t", HOUR_MS)
    clocks.shift(1, -HOUR_MS)
    behind = wait_for_shift(broker.bootstrap, "t", -HOUR_MS)
    assert ahead - behind > 2 * HOUR_MS - 10_000
    clocks.shift(1, 0)
    # the offsets stayed dense through both jumps, and a timestamp lookup finds the jumped-back records
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("t", 0), timeout=10)
        found = consumer.offsets_for_times([TopicPartition("t", 0, behind)], timeout=10)[0].offset
        assert low == 0 and 0 <= found < high
    finally:
        consumer.close()


def test_a_forward_jump_past_retention_ms_expires_the_data_as_kafka_does(shifted):
    broker, clocks = shifted
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("r", 1, 1, config={"retention.ms": "600000"})])["r"].result(30)
    acks = produce(broker.bootstrap, "r", [f"v{i}" for i in range(10)])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "x"})
    try:
        time.sleep(1.0)  # a few retention checks at the real time: nothing is old enough
        assert consumer.get_watermark_offsets(TopicPartition("r", 0), timeout=10, cached=False) == (0, 10)
        clocks.shift(1, HOUR_MS)
        deadline = time.monotonic() + 20
        while consumer.get_watermark_offsets(TopicPartition("r", 0), timeout=10, cached=False) != (10, 10):
            assert time.monotonic() < deadline, "the records older than retention.ms by the new clock were kept"
            time.sleep(0.2)
        clocks.shift(1, 0)
        more = produce(broker.bootstrap, "r", ["after"])
        assert more == [(10, more[0][1])] and acks[-1][0] == 9  # offsets go on from the log end offset
    finally:
        consumer.close()
