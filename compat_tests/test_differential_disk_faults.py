"""A full log dir, judged by Apache Kafka 4.1: the same scenario against a real Kafka and a pykbroker,
each with two log dirs, the second a small tmpfs mounted by the test (needs root; skipped otherwise).

Kafka takes the full dir offline and keeps serving the other: produce to the full dir's partition answers
KAFKA_STORAGE_ERROR from the first failed write on, DescribeLogDirs reports the dir with
KAFKA_STORAGE_ERROR and no topics. Its controller also moves the partition's leadership away (leader -1,
ISR empty, epoch + 1, the replica offline: Metadata answers LEADER_NOT_AVAILABLE), and so does pykbroker.
Then both restart with the dir read-only: it is offline from the start, the partition stays leaderless with
its replica offline and no longer an eligible leader (still the last known one), and is not created afresh in
the other dir. After a restart with the dir writable and roomy, the partition is led again (Kafka elects its
last eligible replica when the broker registers with the dir online).

Cluster mode (PYKBROKER_SLOW_DIFFERENTIAL=1, ``make differential-cluster``): 3 pykbroker brokers against a 3-node
Kafka 4.4, the small tmpfs broker 1's alone, which leads both partitions of ``t`` (replicated to 3): a producer
pinned to broker 1 fills the dir and is refused, the partition's leadership moves to another replica (broker 1
named offline), a client writes and reads there; broker 1 restarted with the dir read-only stays out of the ISR,
and restarted with room it catches up and rejoins it.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from compat_tests.conftest import (
    CLUSTER_MODE,
    KAFKA_44,
    assert_same_observations,
    differential_client,
    judge_jars,
    started_kafka_cluster,
)
from compat_tests.differential_allowlist import ALLOWED
from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreateTopicsRequest,
    DescribeLogDirsRequest,
    DescribeTopicPartitionsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.describe_topic_partitions_request import TopicRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

SCENARIO = "disk_full"


def _mounted_dirs(root: Path) -> tuple[Path, Path]:
    big, small = root / "big", root / "small"
    big.mkdir(parents=True)
    small.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(small)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    return big, small


def _make_room(small: Path) -> None:
    subprocess.run(["mount", "-o", "remount,rw,size=32m", "tmpfs", str(small)], check=True)


def _read_only(small: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", "tmpfs", str(small)], check=True)


def _produce(c: RawClient, partition: int, value: bytes) -> int:
    response = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name="t", partition_data=[PartitionProduceData(index=partition, records=build_simple_batch(
            [value], timestamp=int(time.time() * 1000)))])]), 9)
    return response.responses[0].partition_responses[0].error_code


def _fill(c: RawClient, small: Path) -> tuple[int, int, list[int], int]:
    """Write 12 MiB into the 8 MiB dir through ``c``: (how many partitions of ``t`` the dir holds, the one written,
    the codes of the 24 writes, the index of the first refused)."""
    in_small = [int(p.name.rsplit("-", 1)[1]) for p in small.iterdir() if p.name.startswith("t-")]
    codes = [_produce(c, in_small[0], b"x" * (512 << 10)) for _ in range(24)]
    return len(in_small), in_small[0], codes, next((i for i, code in enumerate(codes) if code), len(codes))


def observe(bootstrap: str, big: Path, small: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    with RawClient(bootstrap, timeout=30) as c:
        created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=2,
                                                                       replication_factor=1)], timeout_ms=5000), 5)
        out["create"] = created.topics[0].error_code
        c.wait_for_topics("t")
        in_small, on_small, codes, first_error = _fill(c, small)
        out["partitions in the small dir"] = in_small
        out["produce to the full dir: accepted before the first error"] = first_error > 0
        out["produce to the full dir: errors from the first on"] = sorted(set(codes[first_error:]))
        out["produce to the other dir"] = _produce(c, 1 - on_small, b"fine")
        time.sleep(1)  # Kafka's controller hears of the offline dir on the broker's next heartbeat
        out["produce to the full dir later"] = _produce(c, on_small, b"again")
        names = {str(big): "big", str(small): "small"}
        dirs = c.request(DescribeLogDirsRequest(topics=None), 4)
        out["describe log dirs"] = sorted((names[r.log_dir], r.error_code, [t.name for t in r.topics])
                                          for r in dirs.results)
        metadata = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
        parts = {p.partition_index: p for p in metadata.topics[0].partitions}
        out["metadata other partition"] = (parts[1 - on_small].error_code, parts[1 - on_small].leader_id)
        p = parts[on_small]
        out["metadata offline partition"] = (p.error_code, p.leader_id, p.leader_epoch, p.isr_nodes,
                                             p.offline_replicas)
        fetched = c.request(FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchTopic(
            topic="t", partitions=[FetchPartition(partition=on_small, fetch_offset=0, partition_max_bytes=1 << 20)])]),
            12)
        out["fetch from the offline partition"] = fetched.responses[0].partitions[0].error_code
        listed = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="t", partitions=[
            ListOffsetsPartition(partition_index=on_small, timestamp=-1)])]), 7)
        out["list offsets of the offline partition"] = listed.topics[0].partitions[0].error_code
        described = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequest(name="t")],
                                                             response_partition_limit=10), 0)
        d = {x.partition_index: x for x in described.topics[0].partitions}[on_small]
        out["describe topic partitions offline partition"] = (d.error_code, d.leader_id, d.leader_epoch, d.isr_nodes,
                                                              d.offline_replicas)
        out["describe topic partitions offline partition elr"] = (d.eligible_leader_replicas, d.last_known_elr)
    out["on_small"] = on_small
    return out


def observe_offline_at_start(bootstrap: str, on_small: int) -> dict[str, object]:
    """The broker restarted with the full dir read-only: the dir is offline from the start, and the partition
    in it stays offline (never created afresh in the other dir)."""
    out: dict[str, object] = {}
    with RawClient(bootstrap, timeout=30) as c:
        deadline = time.monotonic() + 30
        while True:
            metadata = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
            p = {x.partition_index: x for x in metadata.topics[0].partitions}[on_small]
            if p.offline_replicas or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["read-only at start: metadata partition"] = (p.error_code, p.leader_id, p.leader_epoch, p.isr_nodes,
                                                         p.offline_replicas)
        described = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequest(name="t")],
                                                             response_partition_limit=10), 0)
        d = {x.partition_index: x for x in described.topics[0].partitions}[on_small]
        out["read-only at start: describe topic partitions"] = (d.leader_id, d.leader_epoch, d.isr_nodes,
                                                                d.eligible_leader_replicas, d.last_known_elr)
        # Kafka 4.1 answers NOT_LEADER_OR_FOLLOWER here (it does not host the partition); in one run of five
        # it answered KAFKA_STORAGE_ERROR instead, so what is compared is that the write is refused with one.
        refusals = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR)
        out["read-only at start: produce refused"] = _produce(c, on_small, b"ro") in refusals
        out["read-only at start: produce to the other"] = _produce(c, 1 - on_small, b"fine")
        listed = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="t", partitions=[
            ListOffsetsPartition(partition_index=on_small, timestamp=-1)])]), 7)
        out["read-only at start: list offsets refused"] = listed.topics[0].partitions[0].error_code in refusals
        dirs = c.request(DescribeLogDirsRequest(topics=None), 4)
        out["read-only at start: log dirs"] = sorted((r.error_code, [t.name for t in r.topics]) for r in dirs.results)
    return out


def observe_after_restart(bootstrap: str, on_small: int) -> dict[str, object]:
    """The full dir got room and the broker restarted: is the partition led again, and how?"""
    out: dict[str, object] = {}
    with RawClient(bootstrap, timeout=30) as c:
        deadline = time.monotonic() + 30
        while True:  # Kafka's controller elects once the restarted broker is unfenced
            metadata = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
            p = {x.partition_index: x for x in metadata.topics[0].partitions}[on_small]
            if p.leader_id >= 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["restarted: metadata partition"] = (p.error_code, p.leader_id, p.leader_epoch, p.isr_nodes,
                                                p.offline_replicas)
        described = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequest(name="t")],
                                                             response_partition_limit=10), 0)
        d = {x.partition_index: x for x in described.topics[0].partitions}[on_small]
        out["restarted: describe topic partitions elr"] = (d.eligible_leader_replicas, d.last_known_elr)
        # Kafka's metadata can name the leader a moment before its replica manager leads: a client retries
        # NOT_LEADER_OR_FOLLOWER, and so does this, to compare where both settle.
        code = _produce(c, on_small, b"back")
        while code == ErrorCode.NOT_LEADER_OR_FOLLOWER and time.monotonic() < deadline + 10:
            time.sleep(0.2)
            code = _produce(c, on_small, b"back")
        out["restarted: produce"] = code
        dirs = c.request(DescribeLogDirsRequest(topics=None), 4)
        out["restarted: log dir errors"] = sorted(r.error_code for r in dirs.results)
    return out


def test_a_full_log_dir_as_kafka(tmp_path):
    if shutil.which("java") is None or jars_dir() is None:
        pytest.skip("java or Kafka's jars are missing")
    runs = {}
    for name in ("kafka", "pykbroker"):
        big, small = _mounted_dirs(tmp_path / name)
        try:
            overrides = {"log.dirs": f"{big},{small}", "log.segment.bytes": str(1 << 20)}
            if name == "kafka":
                with KafkaBroker(jars_dir(), tmp_path / name / "kafka", overrides=overrides) as k:
                    runs[name] = observe(k.bootstrap, big, small)
                    assert k.proc is not None and k.proc.poll() is None
                    k.stop()
                    _read_only(small)
                    k.start()
                    runs[name].update(observe_offline_at_start(k.bootstrap, runs[name]["on_small"]))
                    k.stop()
                    _make_room(small)
                    k.start()
                    runs[name].update(observe_after_restart(k.bootstrap, runs[name]["on_small"]))
            else:
                with BrokerProcess(tmp_path / name / "broker", overrides=overrides) as b:
                    runs[name] = observe(b.bootstrap, big, small)
                    assert b.alive
                    b.stop()
                    _read_only(small)
                    b.start()
                    runs[name].update(observe_offline_at_start(b.bootstrap, runs[name]["on_small"]))
                    b.stop()
                    _make_room(small)
                    b.start()
                    runs[name].update(observe_after_restart(b.bootstrap, runs[name]["on_small"]))
        finally:
            subprocess.run(["umount", "-l", str(small)], check=False)
    expected, got = runs["kafka"], runs["pykbroker"]
    for run in (expected, got):
        del run["on_small"]  # where the partition landed: the observations say what matters about it
    print(f"kafka: {expected}\npykbroker: {got}")
    differences = {k: (expected.get(k), got.get(k)) for k in sorted(set(expected) | set(got))
                   if expected.get(k) != got.get(k) and (SCENARIO, k) not in ALLOWED}
    assert not differences, "\n".join(f"{k}: kafka={e!r} pykbroker={g!r}" for k, (e, g) in differences.items())


# -- cluster mode ------------------------------------------------------------------------------------------
REFUSALS = (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER)


ASSIGNMENTS = ([1, 2, 3], [1, 3, 2])


def _partition_view(data: RawClient, partition: int) -> tuple:
    """(error, leader, ISR, offline replicas) of ``t``'s ``partition`` in Metadata, and its ELR and last known
    ELR in DescribeTopicPartitions (leader epochs left out: a KRaft broker's restart fences it, a new epoch). The
    leader is named by its place in the partition's assignment: which partition lands in the small dir is the
    broker's choice."""
    m = {x.partition_index: x for x in data.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
         .topics[0].partitions}[partition]
    d = {x.partition_index: x for x in data.request(DescribeTopicPartitionsRequest(
        topics=[TopicRequest(name="t")], response_partition_limit=10), 0).topics[0].partitions}[partition]
    leader = f"replica #{ASSIGNMENTS[partition].index(m.leader_id)}" if m.leader_id in ASSIGNMENTS[partition] \
        else m.leader_id
    return (m.error_code, leader, sorted(m.isr_nodes), m.offline_replicas, d.eligible_leader_replicas,
            d.last_known_elr)


def _until(data: RawClient, partition: int, done, timeout: float = 60.0) -> tuple:
    deadline = time.monotonic() + timeout
    while not done(view := _partition_view(data, partition)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return view


def _reads(data: RawClient, partition: int) -> tuple[int, int]:
    """(Fetch's error, ListOffsets' error) of ``t``'s ``partition`` at its leader."""
    fetched = data.request(FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[FetchTopic(
        topic="t", partitions=[FetchPartition(partition=partition, fetch_offset=0, partition_max_bytes=1 << 20)])]),
        12)
    listed = data.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="t", partitions=[
        ListOffsetsPartition(partition_index=partition, timestamp=-1)])]), 7)
    return fetched.responses[0].partitions[0].error_code, listed.topics[0].partitions[0].error_code


def _retried(call, timeout: float = 15.0):
    """``call()`` again while it answers NOT_LEADER_OR_FOLLOWER (among its codes): Kafka's metadata can name
    the new leader a moment before its replica manager leads, and a client retries, as this does."""
    deadline = time.monotonic() + timeout
    while True:
        got = call()
        if ErrorCode.NOT_LEADER_OR_FOLLOWER not in (got if isinstance(got, tuple) else (got,)) \
                or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def _cluster_dirs(pinned: RawClient, big: Path, small: Path) -> list:
    names = {str(big): "big", str(small): "small"}
    return sorted((names[r.log_dir], r.error_code, sorted({t.name for t in r.topics}))
                  for r in pinned.request(DescribeLogDirsRequest(topics=None), 4).results)


def observe_cluster(node1, big: Path, small: Path) -> dict[str, object]:
    """The whole cluster scenario through broker 1 (``node1``: its ``bootstrap``, ``stop()``, ``start()``)."""
    out: dict[str, object] = {}
    with RawClient(node1.bootstrap, timeout=30) as pinned, differential_client("cluster", node1.bootstrap) as data:
        created = pinned.request(CreateTopicsRequest(topics=[CreatableTopic(
            name="t", num_partitions=-1, replication_factor=-1, assignments=[
                CreatableReplicaAssignment(partition_index=i, broker_ids=ids)
                for i, ids in enumerate(ASSIGNMENTS)])], timeout_ms=5000), 5)
        out["create"] = created.topics[0].error_code
        data.wait_for_topics("t", timeout=30)
        in_small, on_small, codes, first_error = _fill(pinned, small)
        out["partitions in broker 1's small dir"] = in_small
        out["pinned to broker 1: accepted before the first error"] = first_error > 0
        out["pinned to broker 1: the first error"] = codes[first_error] if first_error < len(codes) else None
        out["pinned to broker 1: refused from then on"] = all(c in REFUSALS for c in codes[first_error:])
        out["moved away (error, leader, isr, offline, elr, last known elr)"] = _until(
            data, on_small, lambda v: v[1] not in (-1, "replica #0") and v[3])
        out["the other partition (error, leader, isr, offline, elr, last known elr)"] = _partition_view(
            data, 1 - on_small)
        out["produce at the new leader"] = _retried(lambda: _produce(data, on_small, b"moved"))
        out["produce to the other partition"] = _produce(data, 1 - on_small, b"fine")
        out["fetch and list offsets at the new leader"] = _retried(lambda: _reads(data, on_small))
        out["broker 1's log dirs"] = _cluster_dirs(pinned, big, small)
    node1.stop()
    _read_only(small)
    node1.start()
    with RawClient(node1.bootstrap, timeout=30) as pinned, differential_client("cluster", node1.bootstrap) as data:
        out["read-only at start: partition"] = _until(data, on_small, lambda v: v[3] == [1], 30)
        out["read-only at start: produce at its leader"] = _retried(lambda: _produce(data, on_small, b"ro"))
        out["read-only at start: broker 1's log dirs"] = _cluster_dirs(pinned, big, small)
    node1.stop()
    _make_room(small)
    node1.start()
    with RawClient(node1.bootstrap, timeout=30) as pinned, differential_client("cluster", node1.bootstrap) as data:
        out["room again: partition back in sync"] = _until(data, on_small, lambda v: v[2] == [1, 2, 3] and not v[3])
        out["room again: produce"] = _retried(lambda: _produce(data, on_small, b"back"))
        out["room again: broker 1's log dir errors"] = sorted(r.error_code for r in pinned.request(
            DescribeLogDirsRequest(topics=None), 4).results)
    return out


@CLUSTER_MODE
def test_a_full_log_dir_on_one_broker_of_a_cluster_as_kafka(tmp_path):
    runs = {}
    for name in ("kafka", "pykbroker"):
        big, small = _mounted_dirs(tmp_path / name / "n1")
        overrides = {1: {"log.dirs": f"{big},{small}"}}
        for node in (2, 3):
            dirs = [tmp_path / name / f"n{node}" / d for d in ("big", "small")]
            for d in dirs:
                d.mkdir(parents=True)
            overrides[node] = {"log.dirs": ",".join(map(str, dirs))}
        common = {"log.segment.bytes": str(1 << 20)}
        try:
            if name == "kafka":
                with started_kafka_cluster(judge_jars(KAFKA_44), tmp_path / name / "kafka", common,
                                           node_overrides=overrides) as cluster:
                    runs[name] = observe_cluster(cluster.node(1), big, small)
            else:
                with ClusterProcesses(tmp_path / name / "brokers", overrides=common,
                                      broker_overrides=overrides) as ours:
                    runs[name] = observe_cluster(ours.broker(1), big, small)
        finally:
            subprocess.run(["umount", "-l", str(small)], check=False)
    expected, got = runs["kafka"], runs["pykbroker"]
    print(f"kafka: {expected}\npykbroker: {got}")
    assert_same_observations("cluster", SCENARIO, expected, got)
