"""Several log dirs on one broker, judged by Apache Kafka 4.1: the same scenario against a real Kafka and a
pykbroker, each a single node with two log dirs ``a`` and ``b``.

AlterReplicaLogDirs answers (a dir not in log.dirs, an unknown partition, a partition already in its dir,
v1 and v2), replicas placed by it (also one named before its topic exists), DescribeLogDirs of every replica
and of named partitions (Kafka lists every topic with a log in a dir, with only the named partitions),
and a move under a producer, throttled with replica.alter.log.dirs.io.max.bytes.per.second so that the
future replica (isFuture, its lag) is seen in the destination meanwhile; afterwards every acknowledged
record is read back from the moved replica.

Cluster mode (also PYKBROKER_SLOW_DIFFERENTIAL=1, ``make differential-cluster``): 3 pykbroker brokers against a
3-node Kafka 4.4, each node with its own dirs; the topics are replicated to 3 with the same assignments on both,
and the dirs moved and described are broker 1's (asked directly, as kafka-log-dirs does), where ``t-0`` is a
follower (moved under a producer writing to its leader) and ``t-1`` led. With an offline dir, the dir is broker
1's alone, which led every partition: the partition in it is led by another replica, broker 1 named offline.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire import ErrorCode, build_simple_batch, iter_batch_headers
from wire.messages import (
    AlterReplicaLogDirsRequest,
    CreateTopicsRequest,
    DescribeLogDirsRequest,
    FetchRequest,
    IncrementalAlterConfigsRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.alter_replica_log_dirs_request import AlterReplicaLogDir, AlterReplicaLogDirTopic
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.describe_log_dirs_request import DescribableLogDirTopic
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_LOG_DIRS_TESTS") != "1",
                                reason="half a minute or more: `make log-dirs` runs it (PYKBROKER_LOG_DIRS_TESTS=1)")

SCENARIO = "log_dirs"
THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
MODES = ["single", pytest.param("cluster", marks=CLUSTER_MODE)]


@contextmanager
def node_one(name: str, mode: str, root: Path, overrides: Callable[[int], dict[str, str]]) -> Iterator:
    """Kafka (``name`` "kafka") or pykbroker started in ``mode``: one node, or 3 with ``overrides(node id)`` each;
    yields node 1 (its ``bootstrap``, ``stop()`` and ``start()``). Everything is stopped after."""
    if mode == "single":
        server = KafkaBroker(judge_jars(KAFKA_44), root / "kafka", overrides=overrides(1)) if name == "kafka" \
            else BrokerProcess(root / "broker", overrides=overrides(1))
        with server:
            yield server
    elif name == "kafka":
        with started_kafka_cluster(judge_jars(KAFKA_44), root / "kafka",
                                   node_overrides={n: overrides(n) for n in (1, 2, 3)}) as cluster:
            yield cluster.node(1)
    else:
        with ClusterProcesses(root / "broker", broker_overrides={n: overrides(n) for n in (1, 2, 3)}) as ours:
            yield ours.broker(1)


def _topic(name: str, partitions: int, mode: str, assignments: list[list[int]]) -> CreatableTopic:
    """One replica per partition on one node; on a cluster, ``assignments`` (the same on both clusters)."""
    if mode == "single":
        return CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
    return CreatableTopic(name=name, num_partitions=-1, replication_factor=-1, assignments=[
        CreatableReplicaAssignment(partition_index=i, broker_ids=ids) for i, ids in enumerate(assignments)])


def _produce(c: RawClient, topic: str, partition: int, count: int, size: int = 1000) -> int:
    """``count`` batches of 10 records; returns how many records were acknowledged."""
    acked = 0
    for i in range(count):
        batch = build_simple_batch([b"%d-" % i + b"x" * size] * 10, timestamp=int(time.time() * 1000))
        response = c.request(ProduceRequest(acks=-1, timeout_ms=10000, topic_data=[TopicProduceData(
            name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)])]), 9)
        if response.responses[0].partition_responses[0].error_code == ErrorCode.NONE:
            acked += 10
    return acked


def _count_records(c: RawClient, topic: str, partition: int) -> int:
    offset, count = 0, 0
    while True:
        fetched = c.request(FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=8 << 20, topics=[FetchTopic(
            topic=topic, partitions=[FetchPartition(partition=partition, fetch_offset=offset,
                                                    partition_max_bytes=8 << 20)])]), 12)
        p = fetched.responses[0].partitions[0]
        data = bytes(p.records or b"")
        if p.error_code or not data:
            return count
        for _, header in iter_batch_headers(data):
            count += header.records_count
            offset = header.base_offset + header.last_offset_delta + 1


def _alter(c: RawClient, moves: list[tuple[str, str, list[int]]], version: int = 2) -> list:
    by_dir: dict[str, list[AlterReplicaLogDirTopic]] = {}
    for path, topic, partitions in moves:
        by_dir.setdefault(path, []).append(AlterReplicaLogDirTopic(name=topic, partitions=partitions))
    response = c.request(AlterReplicaLogDirsRequest(dirs=[AlterReplicaLogDir(path=p, topics=ts)
                                                          for p, ts in by_dir.items()]), version)
    return sorted((t.topic_name, p.partition_index, p.error_code) for t in response.results for p in t.partitions)


def _describe(c: RawClient, names: dict[str, str], topics: dict[str, list[int]] | None = None) -> dict:
    wanted = None if topics is None else [DescribableLogDirTopic(topic=t, partitions=ps) for t, ps in topics.items()]
    response = c.request(DescribeLogDirsRequest(topics=wanted), 4)
    return {names.get(r.log_dir, r.log_dir): r for r in response.results}


def _replicas(result) -> list[tuple[str, int, int, int, bool]]:
    return sorted((t.name, p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                  for t in result.topics for p in t.partitions)


def _placement(c: RawClient, names: dict[str, str]) -> dict[tuple[str, int, bool], str]:
    return {(t.name, p.partition_index, p.is_future_key): name for name, r in _describe(c, names).items()
            for t in r.topics for p in t.partitions}


def _wait(condition, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def observe(mode: str, bootstrap: str, a: Path, b: Path) -> dict[str, object]:
    """The scenario through node 1 (``bootstrap``): its dirs ``a`` and ``b`` asked and moved directly, records
    produced and read where a client sends them (the leaders)."""
    out: dict[str, object] = {}
    names = {str(a): "a", str(b): "b"}
    with RawClient(bootstrap, timeout=30) as c, differential_client(mode, bootstrap) as data:
        created = c.request(CreateTopicsRequest(topics=[
            _topic("t", 2, mode, [[2, 1, 3], [1, 3, 2]]), _topic("u", 1, mode, [[3, 1, 2]])], timeout_ms=10000), 5)
        out["create"] = sorted(t.error_code for t in created.topics)
        data.wait_for_topics("t", "u", timeout=30)
        acked = _produce(data, "t", 0, 150) + 0
        out["produce"] = (acked, _produce(data, "t", 1, 3), _produce(data, "u", 0, 1))

        out["alter: errors"] = _alter(c, [("/no/such/log/dir", "t", [0]), (str(a), "nosuch", [0]),
                                          (str(a), "t", [7])])
        out["alter: errors v1"] = _alter(c, [("/no/such/log/dir", "t", [0]), (str(a), "nosuch", [0])], version=1)
        out["alter: place t-0 and u-0 in a, t-1 in b"] = _alter(c, [(str(a), "t", [0]), (str(a), "u", [0]),
                                                                   (str(b), "t", [1])])
        wanted = {("t", 0, False): "a", ("u", 0, False): "a", ("t", 1, False): "b"}
        out["placed"] = _wait(lambda: _placement(c, names) == wanted)
        out["alter: to where it is"] = _alter(c, [(str(a), "t", [0])])
        described = _describe(c, names)
        out["describe all"] = {n: (r.error_code, _replicas(r), r.total_bytes > 0, r.usable_bytes > 0)
                               for n, r in sorted(described.items())}
        named = _describe(c, names, {"t": [1], "nosuch": [0]})
        out["describe named"] = {n: (r.error_code, sorted((t.name, [p.partition_index for p in t.partitions])
                                                          for t in r.topics)) for n, r in sorted(named.items())}

        # A dir chosen before the replica exists: the partition is created there (not in the emptier dir).
        out["alter: before the topic exists"] = _alter(c, [(str(b), "later", [0])])
        c.request(CreateTopicsRequest(topics=[_topic("later", 1, mode, [[2, 1, 3]])], timeout_ms=10000), 5)
        data.wait_for_topics("later", timeout=30)
        out["created where chosen"] = _wait(lambda: _placement(c, names).get(("later", 0, False)) == "b", 10)

        # A move under a producer, throttled so the future replica is seen meanwhile.
        node = 1 if mode == "cluster" else c.request(MetadataRequest(topics=[]), 12).brokers[0].node_id
        throttled = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name=str(node), configs=[AlterableConfig(
                name=THROTTLE, config_operation=0, value=str(400_000))])]), 1)
        out["throttle set"] = throttled.responses[0].error_code
        out["alter: move t-0 to b"] = _alter(c, [(str(b), "t", [0])])
        seen: list[tuple] = []

        def future_seen() -> bool:
            nonlocal acked
            acked += _produce(data, "t", 0, 2)
            r = _describe(c, names, {"t": [0]})
            if any(p.is_future_key for t in r["b"].topics for p in t.partitions):
                seen.append((_replicas(r["a"]), _replicas(r["b"])))
                return True
            return False

        out["future replica seen in b"] = _wait(future_seen, 30)
        if seen:
            (current,), (future,) = seen[0]
            out["mid-move: current in a (topic, partition, lag, future)"] = (current[0], current[1], current[3],
                                                                             current[4])
            out["mid-move: future in b (topic, partition, lag > 0, future)"] = (future[0], future[1],
                                                                                future[3] > 0, future[4])
            out["mid-move: future smaller than current"] = future[2] < current[2]

        def moved() -> bool:
            nonlocal acked
            acked += _produce(data, "t", 0, 2)
            placement = _placement(c, names)
            return placement.get(("t", 0, False)) == "b" and ("t", 0, True) not in placement

        out["moved under a producer"] = _wait(moved, 120)
        c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=4, resource_name=str(node), configs=[AlterableConfig(
                name=THROTTLE, config_operation=1, value=None)])]), 1)
        acked += _produce(data, "t", 0, 5)
        out["every acknowledged record read back"] = _count_records(data, "t", 0) == acked
        out["describe after the move"] = {n: [(t, p, f) for t, p, _, _, f in _replicas(r)]
                                          for n, r in sorted(_describe(c, names).items())}
    return out


@pytest.mark.parametrize("mode", MODES)
def test_log_dirs_as_kafka(tmp_path, mode):
    if shutil.which("java") is None or jars_dir() is None:
        pytest.skip("java or Kafka's jars are missing")
    runs = {}
    for name in ("kafka", "pykbroker"):
        def overrides(node: int, name: str = name) -> dict[str, str]:
            a, b = tmp_path / name / f"n{node}" / "a", tmp_path / name / f"n{node}" / "b"
            a.mkdir(parents=True, exist_ok=True)
            b.mkdir(exist_ok=True)
            return {"log.dirs": f"{a},{b}", "log.segment.bytes": str(1 << 20)}
        with node_one(name, mode, tmp_path / name, overrides) as node:
            runs[name] = observe(mode, node.bootstrap, tmp_path / name / "n1" / "a", tmp_path / name / "n1" / "b")
    expected, got = runs["kafka"], runs["pykbroker"]
    print(f"kafka: {expected}\npykbroker: {got}")
    assert_same_observations(mode, SCENARIO, expected, got)


def _codes(c: RawClient, moves: list[tuple[str, str, list[int]]]) -> list[int]:
    """AlterReplicaLogDirs' codes alone (which partition sits in which dir differs from Kafka's placement)."""
    return [code for _, _, code in _alter(c, moves)]


def observe_offline(mode: str, bootstrap: str, dirs: dict[str, Path]) -> dict[str, object]:
    """Three dirs, ``c`` offline since the start (read-only): what AlterReplicaLogDirs and DescribeLogDirs say;
    on a cluster also who leads the partition of ``c`` (broker 1 led it) and whether a producer can write to it."""
    out: dict[str, object] = {}
    names = {str(p): n for n, p in dirs.items()}
    in_dir = {n: int(next(q for q in p.iterdir() if q.name.startswith("t-")).name.rsplit("-", 1)[1])
              for n, p in dirs.items()}
    with RawClient(bootstrap, timeout=30) as c:
        out["alter: the partition of the offline dir"] = _codes(c, [(str(dirs["a"]), "t", [in_dir["c"]])])
        out["alter: to the offline dir"] = _codes(c, [(str(dirs["c"]), "t", [in_dir["a"]])])
        out["alter: between online dirs while one is offline"] = _codes(c, [(str(dirs["b"]), "t", [in_dir["a"]])])
        out["alter: to where it is while one is offline"] = _codes(c, [(str(dirs["a"]), "t", [in_dir["a"]])])
        time.sleep(1)
        out["describe"] = {n: (r.error_code, [(t, p == in_dir[n], f) for t, p, _, _, f in _replicas(r)],
                               r.total_bytes > 0)
                           for n, r in sorted(_describe(c, names).items())}
    if mode == "cluster":
        with differential_client(mode, bootstrap) as data:
            deadline = time.monotonic() + 30
            while True:  # until the controller has moved the leadership away from the offline replica
                meta = data.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")]), 12)
                p = {x.partition_index: x for x in meta.topics[0].partitions}[in_dir["c"]]
                if (p.leader_id not in (-1, 1) and p.offline_replicas) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            out["metadata of the offline dir's partition (error, leader, isr, offline)"] = (
                p.error_code, p.leader_id, sorted(p.isr_nodes), p.offline_replicas)
            out["metadata of the others (leader, offline)"] = sorted(
                (x.leader_id, x.offline_replicas) for x in meta.topics[0].partitions if x.partition_index != in_dir["c"])
            out["produce to the offline dir's partition (its new leader)"] = _produce(data, "t", in_dir["c"], 1)
    return out


@pytest.mark.parametrize("mode", MODES)
def test_log_dirs_with_an_offline_dir_as_kafka(tmp_path, mode):
    if shutil.which("java") is None or jars_dir() is None:
        pytest.skip("java or Kafka's jars are missing")
    runs = {}
    for name in ("kafka", "pykbroker"):
        dirs = {n: tmp_path / name / "n1" / n for n in ("a", "b", "c")}
        for d in dirs.values():
            d.mkdir(parents=True)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(dirs["c"])],
                                 capture_output=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")

        def overrides(node: int, name: str = name) -> dict[str, str]:  # node 1: a, b and the tmpfs c
            paths = [tmp_path / name / f"n{node}" / n for n in ("a", "b", "c")]
            for d in paths:
                d.mkdir(parents=True, exist_ok=True)
            return {"log.dirs": ",".join(str(d) for d in paths)}
        try:
            with node_one(name, mode, tmp_path / name, overrides) as server:
                with RawClient(server.bootstrap, timeout=30) as c, differential_client(mode, server.bootstrap) as data:
                    c.request(CreateTopicsRequest(topics=[_topic("t", 3, mode, [[1, 2, 3], [1, 3, 2], [1, 2, 3]])],
                                                  timeout_ms=10000), 5)
                    data.wait_for_topics("t", timeout=30)
                    for p in range(3):
                        _produce(data, "t", p, 3)
                placed = [any(q.name.startswith("t-") for q in d.iterdir()) for d in dirs.values()]
                assert placed == [True] * 3, "one partition per dir"
                server.stop()
                subprocess.run(["mount", "-o", "remount,ro", "tmpfs", str(dirs["c"])], check=True)
                server.start()
                runs[name] = observe_offline(mode, server.bootstrap, dirs)
        finally:
            subprocess.run(["umount", "-l", str(dirs["c"])], check=False)
    expected, got = runs["kafka"], runs["pykbroker"]
    print(f"kafka: {expected}\npykbroker: {got}")
    assert_same_observations(mode, SCENARIO, expected, got)
