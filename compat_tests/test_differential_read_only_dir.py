"""The only log dir turned read-only while the broker runs, judged by Apache Kafka 4.1: each broker's log dir
is the passthrough FUSE filesystem of chaos/flaky_fs.py, flipped to EROFS after a first acknowledged write
(Linux refuses to remount a real filesystem read-only with files open for writing).

Kafka's LogManager.handleLogDirFailure halts the process (exit code 1, "Shutdown broker because all log dirs
in ... have failed") once no log dir is left; pykbroker does the same. Kafka's KRaft metadata log is kept
in a dir of its own here, so the data dir alone fails.

Cluster mode (PYKBROKER_SLOW_DIFFERENTIAL=1, ``make differential-cluster``): broker 1 of 3 pykbroker brokers and
node 1 of a 3-node Kafka 4.4 have their only data dir on the flaky filesystem and lead ``t`` (replicated to 3);
it halts the same way, and the other two see it gone: Metadata lists two brokers, the partition is led by the
next replica with broker 1 out of the ISR and offline, and a client writes there and reads every record."""

from __future__ import annotations

import functools
import shutil
import time

import pytest

from chaos.flaky_fs import FlakyMount, available
from compat_tests.conftest import (
    CLUSTER_MODE,
    KAFKA_44,
    assert_same_observations,
    differential_client,
    judge_jars,
    started_kafka_cluster,
)
from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import CreateTopicsRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = [pytest.mark.skipif(shutil.which("java") is None or jars_dir() is None, reason="java or Kafka's jars"),
              pytest.mark.skipif(available() is not None, reason=f"no flaky filesystem here: {available()}")]


def produce(c: RawClient, value: bytes) -> int:
    batch = build_simple_batch([value], timestamp=1_700_000_000_000)
    response = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name="t", partition_data=[PartitionProduceData(index=0, records=batch)])]), 9)
    return response.responses[0].partition_responses[0].error_code


def turn_read_only(c: RawClient, topic: CreatableTopic, mount: FlakyMount, proc, log_text) -> dict[str, object]:
    """Create ``topic`` through ``c`` (its broker: ``proc``), write once, flip the dir to EROFS, write again: the
    first write's code, the process's exit code and whether its log said why."""
    created = c.request(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 5)
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
    return {"first": first, "exit": proc.poll(), "said why": "Shutdown broker because all log dirs in" in log_text()}


def observe(bootstrap: str, mount: FlakyMount, proc, log_text) -> dict[str, object]:
    with RawClient(bootstrap, timeout=30) as c:
        return turn_read_only(c, CreatableTopic(name="t", num_partitions=1, replication_factor=1), mount, proc,
                              log_text)


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


def observe_cluster(node1, survivor: str, mount: FlakyMount, log_text) -> dict[str, object]:
    """Broker 1 (``node1``, its ``proc``) leads ``t``; its dir turns read-only; what ``survivor`` (broker 2's
    address) shows then."""
    with RawClient(node1.bootstrap, timeout=30) as c:
        out = turn_read_only(c, CreatableTopic(name="t", num_partitions=-1, replication_factor=-1, assignments=[
            CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2, 3])]), mount, node1.proc, log_text)
    with differential_client("cluster", survivor) as data:
        deadline = time.monotonic() + 60
        while True:  # until broker 1's session (ZooKeeper's, or its KRaft heartbeats) has timed out
            meta = data.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
            p = meta.topics[0].partitions[0]
            if (p.leader_id not in (-1, 1) and 1 not in p.isr_nodes) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        out["brokers"] = sorted(b.node_id for b in meta.brokers)
        out["partition (error, leader, isr, offline)"] = (p.error_code, p.leader_id, sorted(p.isr_nodes),
                                                          p.offline_replicas)
        deadline = time.monotonic() + 15
        while (code := produce(data, b"moved")) == ErrorCode.NOT_LEADER_OR_FOLLOWER and time.monotonic() < deadline:
            time.sleep(0.2)  # the new leader's replica manager may lead a moment after its metadata says so
        out["produce at the new leader"] = code
        listed = data.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="t", partitions=[
            ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
        out["end offset (the record before and the one after)"] = listed.topics[0].partitions[0].offset
    return out


@CLUSTER_MODE
def test_broker_1s_only_log_dir_turned_read_only_halts_it_and_the_cluster_leads_on_as_kafka(tmp_path):
    runs = {}
    for name in ("kafka", "pykbroker"):
        with FlakyMount(tmp_path / name / "backing", tmp_path / name / "flaky", tmp_path / name / "fs.log") as mount:
            data_dirs = {1: mount.mountpoint, 2: tmp_path / name / "data-2", 3: tmp_path / name / "data-3"}
            if name == "kafka":
                with started_kafka_cluster(judge_jars(KAFKA_44), tmp_path / name / "kafka", heap="-Xmx384m",
                                           loggers={"kafka.log.LogManager": "INFO"}, node_overrides={
                                               n: {"log.dirs": str(d), "metadata.log.dir": str(
                                                   tmp_path / name / f"metadata-{n}")} for n, d in data_dirs.items()}
                                           ) as cluster:
                    runs[name] = observe_cluster(cluster.node(1), cluster.node(2).bootstrap, mount, functools.partial(
                        cluster.node(1).log_path.read_text, errors="replace"))
            else:
                with ClusterProcesses(tmp_path / name / "brokers", broker_overrides={
                        n: {"log.dirs": str(d)} for n, d in data_dirs.items()}) as ours:
                    broker = ours.broker(1)
                    runs[name] = observe_cluster(broker, ours.broker(2).bootstrap, mount, broker.log)
    expected, got = runs["kafka"], runs["pykbroker"]
    print(f"kafka: {expected}\npykbroker: {got}")
    assert expected["exit"] == 1 and expected["said why"], expected
    assert_same_observations("cluster", "read_only_dir", expected, got)
