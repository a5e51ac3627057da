"""The only log dir turned read-only while the broker runs, judged by Apache Kafka 4.1: each broker's log dir
is the passthrough FUSE filesystem of chaos/flaky_fs.py, flipped to EROFS after a first acknowledged write
(Linux refuses to remount a real filesystem read-only with files open for writing).

Kafka's LogManager.handleLogDirFailure halts the process (exit code 1, "Shutdown broker because all log dirs
in ... have failed") once no log dir is left; pykbroker does the same. Kafka's KRaft metadata log is kept
in a dir of its own here, so the data dir alone fails."""

from __future__ import annotations

import functools
import shutil
import time

import pytest

from chaos.flaky_fs import FlakyMount, available
from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import CreateTopicsRequest, ProduceRequest
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = [pytest.mark.skipif(shutil.which("java") is None or jars_dir() is None, reason="java or Kafka's jars"),
              pytest.mark.skipif(available() is not None, reason=f"no flaky filesystem here: {available()}")]


def produce(c: RawClient, value: bytes) -> int:
    batch = build_simple_batch([value], timestamp=1_700_000_000_000)
    response = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name="t", partition_data=[PartitionProduceData(index=0, records=batch)])]), 9)
    return response.responses[0].partition_responses[0].error_code


def observe(bootstrap: str, mount: FlakyMount, proc, log_text) -> dict[str, object]:
    with RawClient(bootstrap, timeout=30) as c:
        created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=1, replication_factor=1)],
                                                timeout_ms=30000), 5)
        assert created.topics[0].error_code == ErrorCode.NONE
        c.wait_for_topics("t", timeout=30)
        deadline = time.monotonic() + 30
        while (first := produce(c, b"before")) != ErrorCode.NONE and time.monotonic() < deadline:
            time.sleep(0.2)
        mount.set("erofs")
        try:
            produce(c, b"after")
        except OSError:
            pass  # halted before answering
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    return {"first": first, "exit": proc.poll(),
            "said why": "Shutdown broker because all log dirs in" in log_text()}


def test_the_only_log_dir_turned_read_only_halts_the_broker_as_kafka(tmp_path):
    runs = {}
    for name in ("kafka", "pykbroker"):
        with FlakyMount(tmp_path / name / "backing", tmp_path / name / "flaky", tmp_path / name / "fs.log") as mount:
            if name == "kafka":
                kafka = KafkaBroker(jars_dir(), tmp_path / name / "kafka", heap="-Xmx384m",
                                    overrides={"log.dirs": str(mount.mountpoint),
                                               "metadata.log.dir": str(tmp_path / name / "metadata")},
                                    loggers={"kafka.log.LogManager": "INFO"})
                try:
                    kafka.start()
                    runs[name] = observe(kafka.bootstrap, mount, kafka.proc,
                                         functools.partial(kafka.log_path.read_text, errors="replace"))
                finally:
                    kafka.close()
            else:
                broker = BrokerProcess(tmp_path / name / "broker", {"log.dirs": str(mount.mountpoint)})
                try:
                    broker.start()
                    runs[name] = observe(broker.bootstrap, mount, broker.proc, broker.log)
                finally:
                    broker.close()
    assert runs["kafka"] == {"first": ErrorCode.NONE, "exit": 1, "said why": True}, runs
    assert runs["pykbroker"] == runs["kafka"]
