"""The embedded broker: a real server on a thread of the test process, used by real clients; fast to
start, and gone without a trace (threads, file descriptors, listening socket, data dir) once stopped."""

from __future__ import annotations

import gc
import os
import socket
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

import pykbroker
from pykbroker.config import ConfigError
from pykbroker.embedded_broker import EmbeddedBroker
from pykbroker.testing import RawClient
from tests.clients import read_kafka_python


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def fd_target(fd: str) -> str | None:
    """What descriptor ``fd`` of this process is open on; None once it is closed (another thread of the
    test process may close one at any moment)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except FileNotFoundError:
        return None


def other_tests_file(target: str, data_dir) -> bool:
    """A file outside this broker's data dir: another test's (a checkpoint an earlier test's server is
    still writing), not this broker's leak; sockets, pipes and this broker's files still count."""
    return target.startswith("/") and not target.startswith(str(data_dir))


def refused(bootstrap: str) -> bool:
    host, port = bootstrap.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


def test_ready_in_under_200_ms_and_leaves_nothing_behind():
    with pykbroker.embedded():  # the first start pays for imports; the one measured is a warm start
        pass
    gc.collect()
    threads, fds = set(threading.enumerate()), open_fds()
    started = time.monotonic()
    with pykbroker.embedded() as broker:
        ready = time.monotonic() - started
        bootstrap, data_dir = broker.bootstrap, broker.data_dir
        with RawClient(bootstrap) as c:
            c.wait_for_topics("leaks", auto_create=True)
        assert broker.server is not None and (data_dir / "logs" / "leaks-0").is_dir()
    assert ready < 0.2, f"ready after {ready:.3f}s"
    gc.collect()
    assert set(threading.enumerate()) == threads
    left = {fd: target for fd in open_fds() - fds
            if (target := fd_target(fd)) is not None and not other_tests_file(target, data_dir)}
    assert not left  # none left open (others of this process may have closed meanwhile)
    assert refused(bootstrap)
    assert not data_dir.exists()


def test_confluent_kafka_and_kafka_python_produce_and_consume_in_a_group():
    with pykbroker.embedded({"num.partitions": "1"}) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(3):
            producer.produce("orders", f"c{i}".encode())
        assert producer.flush(15) == 0
        kp = KafkaProducer(bootstrap_servers=broker.bootstrap)
        kp.send("orders", b"k3").get(15)
        kp.close()
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["orders"])
        got, deadline = [], time.monotonic() + 30
        while len(got) < 4 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        consumer.commit(asynchronous=False)
        consumer.close()
        assert got == [b"c0", b"c1", b"c2", b"k3"]
        kc = KafkaConsumer("orders", bootstrap_servers=broker.bootstrap, group_id="g", enable_auto_commit=False)
        deadline = time.monotonic() + 60
        while not kc.assignment():  # joined (a fixed consumer_timeout_ms could end before the join)
            assert not any(kc.poll(timeout_ms=500).values())
            assert time.monotonic() < deadline
        tp = TopicPartition("orders", 0)
        # the group's committed offsets are where confluent-kafka left them: kafka-python starts there
        assert kc.assignment() == {tp} and kc.committed(tp) == kc.position(tp) == 4
        assert read_kafka_python(kc, 0) == []
        kc.close()


def test_two_embedded_brokers_side_by_side_and_a_restart_keeps_the_data(tmp_path):
    with EmbeddedBroker(data_dir=tmp_path / "a") as a, EmbeddedBroker() as b:
        assert a.bootstrap != b.bootstrap
        for broker in (a, b):
            with RawClient(broker.bootstrap) as c:
                c.wait_for_topics("t", auto_create=True)
        producer = Producer({"bootstrap.servers": a.bootstrap})
        producer.produce("t", b"kept")
        assert producer.flush(15) == 0
    again = EmbeddedBroker(data_dir=tmp_path / "a").start()
    try:
        consumer = KafkaConsumer("t", bootstrap_servers=again.bootstrap, auto_offset_reset="earliest")
        assert [m.value for m in read_kafka_python(consumer, 1)] == [b"kept"]
        consumer.close()
    finally:
        again.close()
    assert (tmp_path / "a" / "logs").is_dir()  # a data dir of the caller's is the caller's to remove


def test_a_bad_property_is_raised_in_the_caller():
    threads = set(threading.enumerate())
    with pytest.raises(ConfigError):
        EmbeddedBroker({"num.partitions": "zero"}).start()
    assert set(threading.enumerate()) == threads


def test_a_port_in_use_is_raised_and_leaves_no_thread():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        threads = set(threading.enumerate())
        broker = EmbeddedBroker(port=taken.getsockname()[1])
        with pytest.raises(ConfigError, match="listener PLAINTEXT: .* is already in use"):
            broker.start()
        broker.close()
        assert set(threading.enumerate()) == threads
