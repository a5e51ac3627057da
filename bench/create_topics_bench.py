"""CreateTopics on a cluster: a three-broker pykbroker cluster (ZooKeeper) against a three-node Apache Kafka 4.4
KRaft cluster, on this machine, in one run, with the same requests; or (``BENCH_NODES=1``) a single pykbroker node
(its embedded metadata store) against a single Kafka 4.4 node (KRaft, combined broker and controller), RF 1.

    python -m bench create-topics    # BENCH_TOPICS=10 topics x BENCH_PARTITIONS=12 partitions, RF 3, in one request;
                                     # BENCH_REPEAT=3 rounds (new topics each), interleaved between the clusters;
                                     # BENCH_BROKERS=pykbroker,kafka; BENCH_NODES=3 (or 1)

What applications do at start (Kafka Streams' internal topics, Connect's and MirrorMaker's): one CreateTopics
request naming every topic, sent to the controller as the admin clients send it. Figures (median of the rounds):
- "answer": from sending the request until its answer (every topic NONE);
- "visible": until the Metadata of every broker (asked directly, one connection each) shows every partition of
  every topic with a leader;
- the same for one DeleteTopics of them all (until no broker's Metadata names any) and for one CreatePartitions
  doubling each topic (until every broker shows the new partitions with leaders);
- on one node, "writable": until a produce (acks=1) of one record to every partition (the new ones, after
  CreatePartitions) has been acknowledged, partitions refused asked again every 50 ms: a broker that answers
  before it has created the logs shows here what that bought;
- "cpu": the CPU seconds the cluster's brokers spent on the round (all three operations), a figure the machine's
  other load disturbs less than the times.
The machine's load average (1 min) is printed with each round: the times mean little without it.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.broker_bench import jars_dir
from compat_tests.jvm.kafka_broker import KafkaBroker, KafkaCluster
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.delete_topics_request import DeleteTopicState
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

TIMEOUT_MS = 60_000


def controller(bootstrap: str) -> str:
    """The address of the broker a client sends admin requests to (Metadata's controller id)."""
    with RawClient(bootstrap.split(",")[0]) as c:
        md = c.request(MetadataRequest(topics=[]), 12)
    address = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
    return address.get(md.controller_id, bootstrap.split(",")[0])


def leaders_everywhere(bootstrap: str, topics: dict[str, int]) -> bool:
    """Whether every broker's Metadata shows each topic with (at least) its partitions, each with a leader."""
    for address in bootstrap.split(","):
        with RawClient(address) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=t) for t in topics],
                                           allow_auto_topic_creation=False), 12)
        for t in md.topics:
            if t.error_code != ErrorCode.NONE or len(t.partitions) < topics[t.name] \
                    or any(p.leader_id < 0 for p in t.partitions):
                return False
    return True


def gone_everywhere(bootstrap: str, topics: list[str]) -> bool:
    for address in bootstrap.split(","):
        with RawClient(address) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=t) for t in topics],
                                           allow_auto_topic_creation=False), 12)
        if any(t.error_code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for t in md.topics):
            return False
    return True


def produce_everywhere(address: str, partitions: dict[str, range], timeout: float = 120.0) -> None:
    """One record to each partition of ``partitions`` on the node ``address``, acknowledged (acks=1); partitions
    refused are asked again every 50 ms."""
    batch = build_simple_batch([b"x"], timestamp=int(time.time() * 1000))
    todo = {(name, p) for name, ps in partitions.items() for p in ps}
    deadline = time.monotonic() + timeout
    with RawClient(address, timeout=timeout) as c:
        while todo:
            by_topic: dict[str, list[int]] = {}
            for name, p in sorted(todo):
                by_topic.setdefault(name, []).append(p)
            r = c.request(ProduceRequest(acks=1, timeout_ms=int(timeout * 1000), topic_data=[
                TopicProduceData(name=name, partition_data=[PartitionProduceData(index=p, records=batch) for p in ps])
                for name, ps in by_topic.items()]), 11)
            todo = {(t.name, p.index) for t in r.responses for p in t.partition_responses
                    if p.error_code != ErrorCode.NONE}
            if todo:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{len(todo)} partitions still refuse a produce")
                time.sleep(0.05)


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


def cpu_seconds(pids: list[int]) -> float:
    """User and system CPU seconds the processes ``pids`` have used so far (Linux /proc)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


Brokers = ClusterProcesses | KafkaCluster | BrokerProcess | KafkaBroker


def broker_pids(cluster: Brokers) -> list[int]:
    if isinstance(cluster, BrokerProcess | KafkaBroker):
        processes: list = [cluster]
    else:
        processes = list(cluster.nodes if isinstance(cluster, KafkaCluster) else cluster.brokers.values())
    return [p.proc.pid for p in processes if p.proc is not None]


def start_brokers(name: str, root: Path, nodes: int) -> Brokers | None:
    """pykbroker or Kafka 4.4 (None when its jars cannot be had): a cluster of three, or one node."""
    if name == "pykbroker":
        return BrokerProcess(root / "pykbroker") if nodes == 1 else ClusterProcesses(root / "pykbroker", size=3)
    jars = jars_dir()
    if jars is None:
        return None
    if nodes == 1:
        return KafkaBroker(jars, root / "kafka", heap="-Xmx1g", quick_start=False)
    return KafkaCluster(jars, root / "kafka", heap="-Xmx1g", quick_start=False)


def create_round(bootstrap: str, prefix: str, topics: int, partitions: int, replication: int = 3
                 ) -> dict[str, float]:
    """One round: create, add partitions, delete; seconds to each answer and to each change on every broker (on
    one node also until every new partition takes a produce)."""
    single = "," not in bootstrap
    names = [f"{prefix}-{i}" for i in range(topics)]
    figures: dict[str, float] = {}
    with RawClient(controller(bootstrap), timeout=TIMEOUT_MS / 1000 + 10) as admin:
        started = time.perf_counter()
        r = admin.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=partitions,
                                                                     replication_factor=replication)
                                                      for n in names],
                                              timeout_ms=TIMEOUT_MS), 7)
        figures["create answer"] = time.perf_counter() - started
        failed = [(t.name, t.error_code, t.error_message) for t in r.topics if t.error_code != ErrorCode.NONE]
        if failed:
            raise RuntimeError(f"CreateTopics failed: {failed}")
        wait_until(lambda: leaders_everywhere(bootstrap, dict.fromkeys(names, partitions)), "leaders")
        figures["create visible"] = time.perf_counter() - started
        if single:
            produce_everywhere(bootstrap, dict.fromkeys(names, range(partitions)))
            figures["create writable"] = time.perf_counter() - started

        started = time.perf_counter()
        r = admin.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(name=n, count=2 * partitions,
                                                                                assignments=None)
                                                          for n in names], timeout_ms=TIMEOUT_MS), 3)
        figures["add partitions answer"] = time.perf_counter() - started
        failed = [(t.name, t.error_code, t.error_message) for t in r.results if t.error_code != ErrorCode.NONE]
        if failed:
            raise RuntimeError(f"CreatePartitions failed: {failed}")
        wait_until(lambda: leaders_everywhere(bootstrap, dict.fromkeys(names, 2 * partitions)), "new leaders")
        figures["add partitions visible"] = time.perf_counter() - started
        if single:
            produce_everywhere(bootstrap, dict.fromkeys(names, range(partitions, 2 * partitions)))
            figures["add partitions writable"] = time.perf_counter() - started

        started = time.perf_counter()
        r = admin.request(DeleteTopicsRequest(topics=[DeleteTopicState(name=n) for n in names],
                                              timeout_ms=TIMEOUT_MS), 6)
        figures["delete answer"] = time.perf_counter() - started
        failed = [(t.name, t.error_code) for t in r.responses if t.error_code != ErrorCode.NONE]
        if failed:
            raise RuntimeError(f"DeleteTopics failed: {failed}")
        wait_until(lambda: gone_everywhere(bootstrap, names), "deletion")
        figures["delete visible"] = time.perf_counter() - started
    return figures


def main() -> None:
    topics = int(os.environ.get("BENCH_TOPICS", "10"))
    partitions = int(os.environ.get("BENCH_PARTITIONS", "12"))
    repeat = max(1, int(os.environ.get("BENCH_REPEAT", "3")))
    wanted = os.environ.get("BENCH_BROKERS", "pykbroker,kafka").split(",")
    nodes = 1 if os.environ.get("BENCH_NODES", "3") == "1" else 3
    replication = 1 if nodes == 1 else 3
    root = Path(tempfile.mkdtemp(prefix="create-topics-bench-"))
    clusters: dict[str, Brokers] = {}
    try:
        for name in ("pykbroker", "kafka"):
            brokers = start_brokers(name, root, nodes) if name in wanted else None
            if brokers is not None:
                clusters[name] = brokers
        for cluster in clusters.values():
            cluster.start()
        print(f"{topics} topics x {partitions} partitions, RF {replication}, {nodes} node(s), one request; "
              f"{repeat} rounds", flush=True)
        runs: dict[str, dict[str, list[float]]] = {name: {} for name in clusters}
        order = list(clusters)
        for i in range(repeat):
            for name in order if i % 2 == 0 else order[::-1]:
                pids = broker_pids(clusters[name])
                cpu = cpu_seconds(pids)
                figures = create_round(clusters[name].bootstrap, f"bench-{i}", topics, partitions, replication)
                figures["cpu"] = cpu_seconds(pids) - cpu
                print(f"  {name:<10} round {i + 1}: " + ", ".join(f"{k} {v:.3f} s" for k, v in figures.items())
                      + f" (load {os.getloadavg()[0]:.1f})", flush=True)
                for k, v in figures.items():
                    runs[name].setdefault(k, []).append(v)
        metrics = list(next(iter(runs.values())))
        print(f"{'median s':<26}" + "".join(f"{n:>12}" for n in clusters) + ("       ratio" if len(clusters) == 2 else ""))
        for metric in metrics:
            values = [statistics.median(runs[n][metric]) for n in clusters]
            ratio = f"{values[0] / values[1]:>12.2f}" if len(values) == 2 and values[1] else ""
            print(f"{metric:<26}" + "".join(f"{v:>12.3f}" for v in values) + ratio)
    finally:
        for cluster in clusters.values():
            cluster.close()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
