"""A log dir turned read-only (EROFS) or failing (EIO) while the broker runs, on the passthrough FUSE
filesystem of chaos/flaky_fs.py (Linux refuses to remount a real one read-only with files open). As Kafka:
the dir goes offline and the other dir keeps serving; with no dir left the broker halts (exit code 1), and
after the disk is back a restart serves everything acknowledged before. Needs /dev/fuse and root or
fusermount3; skipped otherwise."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from chaos.flaky_fs import FlakyMount, available
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import CreateTopicsRequest, DescribeLogDirsRequest, FetchRequest, ProduceRequest
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = pytest.mark.skipif(available() is not None, reason=f"no flaky filesystem here: {available()}")


@pytest.fixture
def flaky(tmp_path):
    with FlakyMount(tmp_path / "backing", tmp_path / "flaky", tmp_path / "flaky-fs.log") as mount:
        yield mount


def produce(c: RawClient, topic: str, partition: int, value: bytes) -> int:
    batch = build_simple_batch([value], timestamp=1_700_000_000_000)
    response = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])]), 9)
    return response.responses[0].partition_responses[0].error_code


def create(c: RawClient, topic: str, partitions: int) -> None:
    created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=topic, num_partitions=partitions,
                                                                   replication_factor=1)], timeout_ms=5000), 5)
    assert created.topics[0].error_code == ErrorCode.NONE
    c.wait_for_topics(topic)


def fetch_count(c: RawClient, topic: str, partition: int) -> int:
    response = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, topics=[FetchTopic(
        topic=topic, partitions=[FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])]), 11)
    p = response.responses[0].partitions[0]
    assert p.error_code == ErrorCode.NONE
    return p.high_watermark


def test_a_dir_turned_read_only_goes_offline_and_the_other_keeps_serving(tmp_path, flaky):
    good = tmp_path / "good"
    with BrokerProcess(tmp_path / "broker", {"log.dirs": f"{good},{flaky.mountpoint}"}) as broker, \
            RawClient(broker.bootstrap) as c:
        create(c, "t", 2)
        on_flaky = next(int(p.name.rsplit("-", 1)[1]) for p in flaky.mountpoint.iterdir() if p.name.startswith("t-"))
        on_good = 1 - on_flaky
        assert produce(c, "t", on_flaky, b"before") == ErrorCode.NONE
        flaky.set("erofs")
        assert produce(c, "t", on_flaky, b"after") == ErrorCode.KAFKA_STORAGE_ERROR
        assert produce(c, "t", on_good, b"fine") == ErrorCode.NONE
        dirs = {r.log_dir: r.error_code for r in c.request(DescribeLogDirsRequest(topics=None), 4).results}
        assert dirs == {str(good): ErrorCode.NONE, str(flaky.mountpoint): ErrorCode.KAFKA_STORAGE_ERROR}
        assert broker.alive
        assert "is now offline" in broker.log() and "Read-only file system" in broker.log()


@pytest.mark.parametrize("mode", ["erofs", "eio"])
def test_the_only_dir_failing_halts_the_broker_and_a_restart_serves_what_was_acknowledged(tmp_path, flaky, mode):
    broker = BrokerProcess(tmp_path / "broker", {"log.dirs": str(flaky.mountpoint)})
    with broker:
        with RawClient(broker.bootstrap) as c:
            create(c, "t", 1)
            assert produce(c, "t", 0, b"kept") == ErrorCode.NONE
            flaky.set(mode)
            try:
                assert produce(c, "t", 0, b"refused") != ErrorCode.NONE
            except OSError:
                pass  # the broker halted before it answered
        assert broker.proc is not None
        assert broker.proc.wait(30) == 1
        assert "Shutdown broker because all log dirs in" in broker.log()
        flaky.set("ok")
        broker.start(timeout=60)
        with RawClient(broker.bootstrap) as c:
            deadline = time.monotonic() + 30
            while (code := produce(c, "t", 0, b"again")) != ErrorCode.NONE:
                assert time.monotonic() < deadline, code
                time.sleep(0.2)
            assert fetch_count(c, "t", 0) == 2  # "kept" and "again": nothing acknowledged was lost
    assert not any(Path(flaky.backing).glob("t-0/*.deleted")) and os.path.isdir(flaky.backing / "t-0")
