"""Disk faults on real filesystems mounted by the test, under a real broker process: a full dir (a 2 MiB
tmpfs), a disk that fails under the broker (an ext4 loop device shut down with EXT4_IOC_SHUTDOWN, after
which every I/O fails with EIO) and a read-only dir at start. As Kafka: the dir goes offline, its
partitions answer KAFKA_STORAGE_ERROR, the other dir keeps serving, DescribeLogDirs reports it.

A dir cannot be made read-only while the broker runs: Linux refuses to remount a filesystem read-only
while files on it are open for writing (EBUSY), so the failing disk stands in for it. Needs root
(mount); skipped otherwise."""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreateTopicsRequest,
    DescribeLogDirsRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData


@pytest.fixture
def small_fs(tmp_path):
    """A 2 MiB tmpfs at tmp_path/small, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture
def ext4_fs(tmp_path):
    """An 8 MiB ext4 filesystem on a loop device at tmp_path/disk, unmounted afterwards."""
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    mount.mkdir()
    with open(image, "wb") as f:
        f.truncate(8 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    done = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a loop device here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


# EXT4_IOC_SHUTDOWN (_IOR('X', 125, __u32)) with EXT4_GOING_FLAGS_NOLOGFLUSH: the filesystem fails every I/O.
_EXT4_IOC_SHUTDOWN = 0x8004587D
_EXT4_GOING_FLAGS_NOLOGFLUSH = 2


def _fail_disk(mount: Path) -> None:
    fd = os.open(mount, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, _EXT4_IOC_SHUTDOWN, struct.pack("I", _EXT4_GOING_FLAGS_NOLOGFLUSH))
    finally:
        os.close(fd)


def _produce(c: RawClient, topic: str, partition: int, value: bytes) -> int:
    batch = build_simple_batch([value], timestamp=1_700_000_000_000)
    response = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])]), 9)
    return response.responses[0].partition_responses[0].error_code


def _start(tmp_path: Path, small: Path) -> tuple[BrokerProcess, Path]:
    big = tmp_path / "big"
    broker = BrokerProcess(tmp_path / "broker", overrides={"log.dirs": f"{big},{small}",
                                                           "log.segment.bytes": str(1 << 20)})
    return broker.start(), big


def _topic_in_both_dirs(c: RawClient, small: Path) -> tuple[int, int]:
    """Create t with 2 partitions; (partition in small, partition in big)."""
    created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=2, replication_factor=1)],
                                            timeout_ms=5000), 5)
    assert created.topics[0].error_code == ErrorCode.NONE
    c.wait_for_topics("t")
    in_small = [int(p.name.rsplit("-", 1)[1]) for p in small.iterdir() if p.name.startswith("t-")]
    assert len(in_small) == 1, list(small.iterdir())
    return in_small[0], 1 - in_small[0]


def _log_dir_errors(c: RawClient) -> dict[str, int]:
    response = c.request(DescribeLogDirsRequest(topics=None), 4)
    return {r.log_dir: r.error_code for r in response.results}


def test_a_full_log_dir_goes_offline_and_the_other_keeps_serving(tmp_path, small_fs):
    broker, big = _start(tmp_path, small_fs)
    with broker, RawClient(broker.bootstrap) as c:
        on_small, on_big = _topic_in_both_dirs(c, small_fs)
        codes = [_produce(c, "t", on_small, b"x" * (256 << 10)) for _ in range(12)]  # 3 MiB into 2 MiB
        assert ErrorCode.NONE in codes and codes[-1] == ErrorCode.KAFKA_STORAGE_ERROR, codes
        first_error = codes.index(ErrorCode.KAFKA_STORAGE_ERROR)
        assert all(code == ErrorCode.KAFKA_STORAGE_ERROR for code in codes[first_error:]), codes
        assert _produce(c, "t", on_big, b"fine") == ErrorCode.NONE
        assert _log_dir_errors(c) == {str(big): ErrorCode.NONE, str(small_fs): ErrorCode.KAFKA_STORAGE_ERROR}
        # As Kafka's controller (compat_tests/test_differential_disk_faults.py): the full dir's partition has no
        # leader, a new leader epoch, an empty ISR (eligible leader replicas are on) and its replica offline.
        partitions = _metadata(c)
        assert partitions[on_big].error_code == ErrorCode.NONE and partitions[on_big].leader_id == 1
        p = partitions[on_small]
        assert (p.error_code, p.leader_id, p.leader_epoch, p.isr_nodes, p.offline_replicas) == (
            ErrorCode.LEADER_NOT_AVAILABLE, -1, 1, [], [1])
        assert _elr(c, on_small) == ([1], [1])  # the replica that left the ISR may lead again (KIP-966)
        assert broker.alive
    log = broker.log()
    assert f"Stopped serving 1 partitions in offline log dir {small_fs}" in log or "offline log dir" in log


def _elr(c: RawClient, partition: int) -> tuple[list[int], list[int]]:
    """(eligible leader replicas, last known ones) of t's ``partition``, from DescribeTopicPartitions."""
    from wire.messages import DescribeTopicPartitionsRequest
    from wire.messages.describe_topic_partitions_request import TopicRequest

    r = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequest(name="t")], response_partition_limit=10), 0)
    p = {x.partition_index: x for x in r.topics[0].partitions}[partition]
    return p.eligible_leader_replicas, p.last_known_elr


def _metadata(c: RawClient) -> dict:
    """Partition index -> Metadata v12 partition of topic t (waits out the moment the new state takes)."""
    deadline = time.monotonic() + 10
    while True:
        metadata = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
        partitions = {p.partition_index: p for p in metadata.topics[0].partitions}
        if all(p.leader_id >= 0 or p.offline_replicas for p in partitions.values()) or time.monotonic() > deadline:
            return partitions
        time.sleep(0.05)


def test_a_partition_left_leaderless_by_a_full_dir_is_led_again_after_a_restart_with_room(tmp_path, small_fs):
    """Kafka elects the last eligible replica again when its broker registers with the dir online: after the
    dir gets room and the broker restarts, the partition has its leader back (one more epoch), keeps every
    acknowledged record, and takes produces again."""
    broker, big = _start(tmp_path, small_fs)
    with broker, RawClient(broker.bootstrap) as c:
        on_small, _ = _topic_in_both_dirs(c, small_fs)
        codes = [_produce(c, "t", on_small, b"x" * (256 << 10)) for _ in range(12)]
        acked = codes.index(ErrorCode.KAFKA_STORAGE_ERROR)
        assert acked > 0 and _metadata(c)[on_small].leader_id == -1
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_fs)], check=True)
    with broker.start(), RawClient(broker.bootstrap) as c:
        p = _metadata(c)[on_small]
        assert (p.error_code, p.leader_id, p.leader_epoch, p.isr_nodes, p.offline_replicas) == (
            ErrorCode.NONE, 1, 2, [1], [])
        assert _log_dir_errors(c) == {str(big): ErrorCode.NONE, str(small_fs): ErrorCode.NONE}
        assert _elr(c, on_small) == ([], [])
        listed = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="t", partitions=[
            ListOffsetsPartition(partition_index=on_small, timestamp=-1)])]), 7)
        assert listed.topics[0].partitions[0].offset == acked  # every acknowledged record, nothing more
        assert _produce(c, "t", on_small, b"back") == ErrorCode.NONE
    assert "led by broker 1 again in epoch 2" in broker.log()


def test_a_disk_that_fails_under_the_broker_takes_only_its_dir_offline(tmp_path, ext4_fs):
    broker, big = _start(tmp_path, ext4_fs)
    with RawClient(broker.bootstrap) as c:
        on_bad, on_big = _topic_in_both_dirs(c, ext4_fs)
        assert _produce(c, "t", on_bad, b"before") == ErrorCode.NONE
        _fail_disk(ext4_fs)
        assert _produce(c, "t", on_bad, b"after") == ErrorCode.KAFKA_STORAGE_ERROR
        assert _produce(c, "t", on_bad, b"again") == ErrorCode.KAFKA_STORAGE_ERROR
        assert _produce(c, "t", on_big, b"fine") == ErrorCode.NONE
        assert _log_dir_errors(c) == {str(big): ErrorCode.NONE, str(ext4_fs): ErrorCode.KAFKA_STORAGE_ERROR}
        assert broker.alive
    assert broker.stop() == 0  # and it still shuts down cleanly


def test_a_read_only_log_dir_at_start_is_offline_and_the_broker_starts(tmp_path, small_fs):
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    broker, big = _start(tmp_path, small_fs)
    with broker, RawClient(broker.bootstrap) as c:
        assert _log_dir_errors(c) == {str(big): ErrorCode.NONE, str(small_fs): ErrorCode.KAFKA_STORAGE_ERROR}
        created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="u", num_partitions=3,
                                                                       replication_factor=1)], timeout_ms=5000), 5)
        assert created.topics[0].error_code == ErrorCode.NONE
        c.wait_for_topics("u")
        assert all(_produce(c, "u", p, b"v") == ErrorCode.NONE for p in range(3))  # all placed in the good dir
        assert not any(os.scandir(small_fs))


def test_a_partition_whose_dir_is_offline_at_start_is_not_created_afresh_elsewhere(tmp_path, small_fs):
    """Its log is in the dir that failed: creating an empty one in the other dir would serve offsets from 0 again
    beside the old data. As Kafka (compat_tests/test_differential_disk_faults.py) it stays unhosted and
    leaderless, its replica offline, and refuses writes."""
    broker, big = _start(tmp_path, small_fs)
    with broker, RawClient(broker.bootstrap) as c:
        on_small, on_big = _topic_in_both_dirs(c, small_fs)
        assert _produce(c, "t", on_small, b"kept") == ErrorCode.NONE
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    with broker.start(), RawClient(broker.bootstrap) as c:
        p = _metadata(c)[on_small]
        assert (p.error_code, p.leader_id, p.isr_nodes, p.offline_replicas) == (
            ErrorCode.LEADER_NOT_AVAILABLE, -1, [], [1])
        assert _produce(c, "t", on_small, b"lost?") == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert _produce(c, "t", on_big, b"fine") == ErrorCode.NONE
        assert not (big / f"t-{on_small}").exists()
    assert "its log dir is offline; the partition is offline on broker 1" in broker.log()
