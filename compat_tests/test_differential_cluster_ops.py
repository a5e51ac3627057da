"""Operating a cluster, judged by Apache Kafka 3.9.1 in ZooKeeper mode: the same script runs against ZooKeeper
plus three Kafka 3.9.1 brokers and against ZooKeeper plus three pykbroker brokers, started the same way, and
what a client or an operator can observe must be the same:

- preferred leader elections (ElectLeaders, sent to the controller): ELECTION_NOT_NEEDED when the preferred
  replicas lead, PREFERRED_LEADER_NOT_AVAILABLE while the preferred replica's broker is down, success after
  it is back;
- controlled shutdown (SIGTERM of broker 1): the leaders and ISRs it leaves in Metadata and in the partition
  state znodes;
- reassignments: one to a broker that is down (refused), one after it is back (ListPartitionReassignments
  until it is done, then the replicas in Metadata and the topic znode).

Starting three Kafka JVMs takes a minute or more on two cores, so this runs only with PYKBROKER_SLOW_DIFFERENTIAL=1
(``make differential-cluster-ops``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from compat_tests.jvm.kafka39.broker import Kafka39, jars_dir
from pykbroker.testing import BrokerProcess, RawClient, ZooKeeperProcess
from wire.messages import (
    AlterPartitionReassignmentsRequest,
    CreateTopicsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
    MetadataRequest,
)
from wire.messages.alter_partition_reassignments_request import ReassignablePartition, ReassignableTopic
from wire.messages.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
)
from wire.messages.elect_leaders_request import TopicPartitions
from wire.messages.metadata_request import MetadataRequestTopic

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka need java"),
    pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                       reason="starts three Kafka 3.9.1 JVMs: PYKBROKER_SLOW_DIFFERENTIAL=1 (make differential-cluster-ops)"),
]

PREFERRED = 0
SESSION_TIMEOUT_MS = 30_000  # a shared, busy machine must not expire a starting broker's session


class Cluster:
    """ZooKeeper and brokers 1..3 under the chroot /kafka, each stoppable (SIGTERM) and startable."""

    def __init__(self, root: Path, start_broker: Callable[[int, str], object]) -> None:
        self.zookeeper = ZooKeeperProcess(root / "zookeeper")
        self._start_broker = start_broker
        self.brokers: dict[int, object] = {}

    def start(self) -> Cluster:
        self.zookeeper.start()
        for n in (1, 2, 3):
            self.brokers[n] = self._start_broker(n, f"{self.zookeeper.connect}/kafka")
        for b in self.brokers.values():
            wait = getattr(b, "wait", None)
            if wait is not None:
                wait()
        self.wait_for_brokers({1, 2, 3})
        return self

    def bootstrap(self, n: int) -> str:
        return self.brokers[n].bootstrap  # type: ignore[attr-defined]

    def live(self) -> list[int]:
        return [n for n, b in self.brokers.items() if getattr(b, "proc", None) is not None]

    def metadata(self, topics: list[str] | None = None):
        with RawClient(self.bootstrap(self.live()[0]), timeout=30) as c:
            return c.request(MetadataRequest(topics=None if topics is None else [
                MetadataRequestTopic(name=t) for t in topics]), 9)

    def wait_for_brokers(self, ids: set[int], timeout: float = 180) -> None:
        eventually(lambda: {b.node_id for b in self.metadata([]).brokers} == ids, f"brokers {ids}", timeout)

    def controller(self) -> int:
        return self.metadata([]).controller_id

    def request(self, request, version: int, node: int | None = None):
        with RawClient(self.bootstrap(self.controller() if node is None else node), timeout=90) as c:
            return c.request(request, version)

    def znode(self, path: str) -> dict | None:
        zk = KazooClient(hosts=f"{self.zookeeper.connect}/kafka")
        zk.start(30)
        try:
            found = zk.get(path) if zk.exists(path) else None
        finally:
            zk.stop()
            zk.close()
        return None if found is None else json.loads(found[0])

    def close(self) -> None:
        for b in self.brokers.values():
            b.stop()  # type: ignore[attr-defined]
        self.zookeeper.close()


def eventually(predicate: Callable[[], object], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return
        except (OSError, KeyError, ValueError):  # not reachable, or the topic not in its Metadata yet
            pass
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def kafka39(root: Path, jars: Path) -> Cluster:
    def start(n: int, zk: str) -> Kafka39:
        broker = Kafka39(jars, root, n, zk, overrides={"auto.leader.rebalance.enable": "false",
                                                       "zookeeper.session.timeout.ms": SESSION_TIMEOUT_MS})
        broker.start()
        return broker
    return Cluster(root, start)


def pykbroker(root: Path) -> Cluster:
    def start(n: int, zk: str) -> BrokerProcess:
        broker = BrokerProcess(root / f"broker-{n}", {"node.id": str(n), "zookeeper.connect": zk,
                                                      "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                                                      "auto.leader.rebalance.enable": "false"},
                               log_path=root / f"broker-{n}.log")
        broker.start()
        return broker
    return Cluster(root, start)


def restart(cluster: Cluster, n: int) -> None:
    broker = cluster.brokers[n]
    broker.start()  # type: ignore[attr-defined]
    wait = getattr(broker, "wait", None)
    if wait is not None:
        wait()


def partitions(cluster: Cluster, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    [t] = cluster.metadata([topic]).topics
    return {p.partition_index: (p.leader_id, list(p.replica_nodes), sorted(p.isr_nodes)) for p in t.partitions}


def elect(cluster: Cluster, topic: str, *indexes: int) -> dict[int, int]:
    response = cluster.request(ElectLeadersRequest(election_type=PREFERRED, topic_partitions=[
        TopicPartitions(topic=topic, partitions=list(indexes))], timeout_ms=30_000), 1)
    assert response.error_code == 0, response
    return {p.partition_id: p.error_code for t in response.replica_election_results for p in t.partition_result}


def reassign(cluster: Cluster, topic: str, partition: int, replicas: list[int]) -> tuple:
    altered = cluster.request(AlterPartitionReassignmentsRequest(timeout_ms=30_000, topics=[
        ReassignableTopic(name=topic, partitions=[ReassignablePartition(partition_index=partition, replicas=replicas)])]),
        0)
    return altered.error_code, [(p.partition_index, p.error_code) for t in altered.responses for p in t.partitions]


def ongoing(cluster: Cluster) -> dict:
    response = cluster.request(ListPartitionReassignmentsRequest(timeout_ms=30_000, topics=None), 0)
    assert response.error_code == 0, response
    return {f"{t.name}-{p.partition_index}": (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


def state_znode(cluster: Cluster, topic: str, partition: int) -> dict:
    state = cluster.znode(f"/brokers/topics/{topic}/partitions/{partition}/state")
    assert state is not None
    return {k: state[k] for k in ("leader", "isr", "leader_epoch")}


def topic_znode(cluster: Cluster, topic: str) -> dict:
    data = cluster.znode(f"/brokers/topics/{topic}")
    assert data is not None
    return {k: v for k, v in data.items() if k != "topic_id"}


def scenario(cluster: Cluster) -> dict[str, object]:
    """The script; what it saw, step by step."""
    seen: dict[str, object] = {}
    created = cluster.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
        CreatableTopic(name="ops", num_partitions=-1, replication_factor=-1, assignments=[
            CreatableReplicaAssignment(partition_index=i, broker_ids=r)
            for i, r in enumerate([[1, 2, 3], [2, 3, 1], [3, 1, 2]])],
            configs=[CreatableTopicConfig(name="min.insync.replicas", value="2")])]), 5)
    seen["create ops"] = [t.error_code for t in created.topics]
    eventually(lambda: all(len(isr) == 3 and leader == r[0] for leader, r, isr in partitions(cluster, "ops").values()),
               "ops with full ISRs")
    seen["elect with the preferred leaders leading"] = elect(cluster, "ops", 0, 1, 2)

    assert cluster.brokers[1].stop() in (None, 0)  # type: ignore[attr-defined]
    eventually(lambda: all(1 not in isr and leader != 1 for leader, _, isr in partitions(cluster, "ops").values()),
               "broker 1 out of every ISR")
    seen["metadata after broker 1's controlled shutdown"] = partitions(cluster, "ops")
    seen["state znodes after broker 1's controlled shutdown"] = {p: state_znode(cluster, "ops", p) for p in range(3)}
    seen["elect while broker 1 is down"] = elect(cluster, "ops", 0, 1, 2)

    created = cluster.request(CreateTopicsRequest(timeout_ms=30_000, topics=[
        CreatableTopic(name="moving", num_partitions=-1, replication_factor=-1, assignments=[
            CreatableReplicaAssignment(partition_index=0, broker_ids=[2, 3])])]), 5)
    seen["create moving"] = [t.error_code for t in created.topics]
    eventually(lambda: partitions(cluster, "moving")[0][2] == [2, 3], "moving with a full ISR")
    seen["reassign moving-0 to [1, 2] while broker 1 is down"] = reassign(cluster, "moving", 0, [1, 2])
    seen["listed after that"] = ongoing(cluster)
    seen["topic znode after that"] = topic_znode(cluster, "moving")

    restart(cluster, 1)
    cluster.wait_for_brokers({1, 2, 3})
    seen["reassign moving-0 to [1, 2] with broker 1 back"] = reassign(cluster, "moving", 0, [1, 2])
    eventually(lambda: not ongoing(cluster), "the reassignment to complete")
    eventually(lambda: partitions(cluster, "moving")[0][1] == [1, 2] and partitions(cluster, "moving")[0][2] == [1, 2],
               "moving-0 on [1, 2] in sync")
    seen["metadata of moving once moved"] = partitions(cluster, "moving")
    seen["topic znode once moved"] = topic_znode(cluster, "moving")
    eventually(lambda: all(len(isr) == 3 for _, _, isr in partitions(cluster, "ops").values()), "ops ISRs whole")
    seen["leaders with broker 1 back, before an election"] = {p: s[0] for p, s in partitions(cluster, "ops").items()}
    seen["elect with broker 1 back"] = elect(cluster, "ops", 0, 1, 2)
    eventually(lambda: {p: s[0] for p, s in partitions(cluster, "ops").items()} == {0: 1, 1: 2, 2: 3},
               "preferred leaders")
    seen["state znode of ops-0 after the election"] = {k: v for k, v in state_znode(cluster, "ops", 0).items()
                                                      if k != "leader_epoch"}
    return seen


def test_operating_a_cluster_is_observed_as_on_kafka_3_9_1(tmp_path):
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/kafka39/fetch_jars.sh could not fetch Kafka 3.9.1 (Maven needed)"
    results = {}
    for name, make in (("kafka", lambda: kafka39(tmp_path / "kafka", jars)),
                       ("pykbroker", lambda: pykbroker(tmp_path / "pykbroker"))):
        cluster = make()
        try:
            cluster.start()
            results[name] = scenario(cluster)
        finally:
            cluster.close()
    for step, judged in results["kafka"].items():
        print(f"{step}: {judged}")  # what Kafka answered, for -s
        assert results["pykbroker"][step] == judged, f"{step}: pykbroker {results['pykbroker'][step]}, Kafka {judged}"
