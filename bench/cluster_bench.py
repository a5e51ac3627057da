"""Cluster benchmark: a three-broker pykbroker cluster (ZooKeeper) against a three-node Apache Kafka 4.1
KRaft cluster (combined broker+controller nodes), on this machine, in one run, with the same clients.

    python -m bench cluster          # BENCH_SCALE=1; BENCH_REPEAT=3 runs per throughput figure; BENCH_FAILOVERS=10

Figures (ratio = pykbroker / Kafka):
- RF=3 acks=all produce throughput to a topic of three partitions (one led by each broker), with Kafka's
  ProducerPerformance (Java client) and with confluent-kafka (librdkafka); median of BENCH_REPEAT runs,
  runs interleaved between the clusters (A B, B A, ...);
- RF=3 transactional produce throughput (ProducerPerformance committing every 100 ms; both clusters finalize
  transaction.version 2, so the Java producer uses Transactions V2, KIP-890), same topic layout and runs;
- leader failover: an idempotent acks=all producer sends a record every 5 ms to a partition with three
  replicas; its leader is killed with SIGKILL; the figure is the time from the kill to the first
  acknowledgement of a record sent after it (the new leader took over and the ISR acknowledged). p50 and
  worst of BENCH_FAILOVERS kills; the killed broker is restarted and the ISR is whole again before the next.
  Both clusters detect the death by a session timeout: Kafka's broker.session.timeout.ms (9 s by default)
  and pykbroker's zookeeper.session.timeout.ms, set to the same 9 s here (Kafka 3.9's ZooKeeper-mode
  default is 18 s; Kafka 4.1 has no ZooKeeper);
- resident memory per broker after the run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.broker_bench import (
    RESULTS_DIR,
    Results,
    confluent_produce,
    jars_dir,
    print_table,
    producer_performance,
    rss_mb,
)
from compat_tests.jvm.kafka_broker import KafkaCluster
from pykbroker.testing import ClusterProcesses

SESSION_TIMEOUT_MS = 9000  # Kafka 4.1's broker.session.timeout.ms default, for both clusters
TRANSACTION_MS = 100  # ProducerPerformance's --transaction-duration-ms: a commit every 100 ms
TRANSACTIONAL = "RF=3 transactional produce 1 KiB (Transactions V2), Java MB/s"


class ClusterTarget:
    """A three-broker cluster the bench can address, kill a broker of, restart it and measure."""

    name = "?"

    @property
    def bootstrap(self) -> str:
        raise NotImplementedError

    def start(self) -> float:
        raise NotImplementedError

    def kill(self, node_id: int) -> None:
        raise NotImplementedError

    def restart(self, node_id: int) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class PykbrokerCluster(ClusterTarget):
    name = "pykbroker"

    def __init__(self, root: Path) -> None:
        self.cluster = ClusterProcesses(root / "pykbroker", size=3,
                                        zookeeper_session_timeout_ms=SESSION_TIMEOUT_MS)

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def start(self) -> float:
        started = time.perf_counter()
        self.cluster.start()
        return time.perf_counter() - started

    def kill(self, node_id: int) -> None:
        self.cluster.broker(node_id).kill()

    def restart(self, node_id: int) -> None:
        self.cluster.broker(node_id).start()

    def pids(self) -> list[int]:
        return [b.proc.pid for b in self.cluster.brokers.values() if b.proc is not None]

    def stop(self) -> None:
        self.cluster.close()


class KafkaClusterTarget(ClusterTarget):
    name = "kafka"

    def __init__(self, root: Path, jars: Path) -> None:
        self.cluster = KafkaCluster(jars, root / "kafka", heap="-Xmx1g", quick_start=False)

    @property
    def bootstrap(self) -> str:
        return self.cluster.bootstrap

    def start(self) -> float:
        return self.cluster.start()

    def kill(self, node_id: int) -> None:
        self.cluster.node(node_id).kill()

    def restart(self, node_id: int) -> None:
        self.cluster.node(node_id).start()

    def pids(self) -> list[int]:
        return [n.proc.pid for n in self.cluster.nodes if n.proc is not None]

    def stop(self) -> None:
        self.cluster.close()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(60)
    wait_until(lambda: partition_state(bootstrap, name, partitions) is not None, f"leaders of {name}", 60)


def partition_state(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, list[int]]] | None:
    """{partition: (leader, isr)} once every partition has a leader, else None."""
    from confluent_kafka.admin import AdminClient

    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    except Exception:  # noqa: BLE001 - metadata not there yet
        return None
    state = {p.id: (p.leader, sorted(p.isrs)) for p in md.partitions.values()}
    if len(state) < partitions or any(leader < 0 for leader, _ in state.values()):
        return None
    return state


def wait_until(predicate: Callable[[], object], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def failover_seconds(target: ClusterTarget, topic: str) -> float:
    """Kill the partition's leader under a steady acks=all producer; seconds until a record sent after the
    kill is acknowledged. The killed broker is restarted and the ISR is whole again before returning."""
    from confluent_kafka import Producer

    state = partition_state(target.bootstrap, topic, 1)
    assert state is not None
    leader = state[0][0]
    producer = Producer({"bootstrap.servers": target.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 0, "message.timeout.ms": 120_000, "retry.backoff.ms": 20,
                         "topic.metadata.refresh.interval.ms": 1000})
    acked_after_kill: list[float] = []
    killed_at = 0.0

    def delivered(err, _msg, sent: float) -> None:
        if err is None and killed_at and sent >= killed_at:
            acked_after_kill.append(time.monotonic())

    started = time.monotonic()
    deadline = started + 120
    while not acked_after_kill and time.monotonic() < deadline:
        now = time.monotonic()
        if not killed_at and now - started > 1.0:
            target.kill(leader)
            killed_at = time.monotonic()
        producer.produce(topic, b"x" * 100, partition=0,
                         on_delivery=lambda err, msg, sent=now: delivered(err, msg, sent))
        producer.poll(0.005)
    producer.flush(30)
    if not acked_after_kill:
        raise TimeoutError("no acknowledgement within 120 s of the kill")
    seconds = acked_after_kill[0] - killed_at
    target.restart(leader)
    wait_until(lambda: (s := partition_state(target.bootstrap, topic, 1)) is not None and len(s[0][1]) == 3,
               "the ISR whole again", 120)
    return seconds


def main(targets: list[str] | None = None, scale: float | None = None) -> tuple[Results, list[str]]:
    scale = float(os.environ.get("BENCH_SCALE", "1")) if scale is None else scale
    repeat = max(1, int(os.environ.get("BENCH_REPEAT", "3")))
    failovers = max(1, int(os.environ.get("BENCH_FAILOVERS", "10")))
    wanted = targets or os.environ.get("BENCH_BROKERS", "pykbroker,kafka").split(",")
    jars = jars_dir()
    results = Results()
    failures: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    clusters: list[ClusterTarget] = []
    try:
        print(f"machine: {os.cpu_count()} cores, {platform.platform()}; scale {scale}, {repeat} runs per "
              f"throughput figure, {failovers} failovers", flush=True)
        factories: dict[str, Callable[[], ClusterTarget]] = {"pykbroker": lambda: PykbrokerCluster(root)}
        if jars is not None:
            factories["kafka"] = lambda: KafkaClusterTarget(root, jars)
        for name in [b for b in wanted if b in factories]:
            target = factories[name]()
            clusters.append(target)
            results.put("cluster start-up s", name, target.start(), False)
        records = max(1000, int(200_000 * scale))
        throughput: dict[str, dict[str, list[float]]] = {t.name: {} for t in clusters}
        for i in range(repeat):
            for t in clusters if i % 2 == 0 else clusters[::-1]:
                try:
                    topic = f"rf3-java-{i}"
                    create_topic(t.bootstrap, topic, 3)
                    if jars is not None:
                        figures = producer_performance(jars, t.bootstrap, topic, records, 1024, "all", "none")
                        throughput[t.name].setdefault("RF=3 acks=all produce 1 KiB, Java MB/s", []).append(
                            figures["mb_per_s"])
                        topic = f"rf3-txn-{i}"
                        create_topic(t.bootstrap, topic, 3)
                        figures = producer_performance(jars, t.bootstrap, topic, records, 1024, "all", "none",
                                                       transaction_ms=TRANSACTION_MS)
                        throughput[t.name].setdefault(TRANSACTIONAL, []).append(figures["mb_per_s"])
                    topic = f"rf3-librdkafka-{i}"
                    create_topic(t.bootstrap, topic, 3)
                    figures = confluent_produce(t.bootstrap, topic, records, 1024, "all", "none")
                    throughput[t.name].setdefault("RF=3 acks=all produce 1 KiB, librdkafka MB/s", []).append(
                        figures["mb_per_s"])
                except Exception as exc:  # noqa: BLE001 - the other figures still come
                    failures.append(f"{t.name}: throughput: {exc}")
                    print(f"  {t.name}: throughput FAILED: {exc}", flush=True)
        for name, by_metric in throughput.items():
            for metric, runs in by_metric.items():
                results.put_median(metric, name, runs)
        for t in clusters:
            try:
                create_topic(t.bootstrap, "failover", 1)
                runs = []
                for _ in range(failovers):
                    runs.append(failover_seconds(t, "failover"))
                    print(f"  {t.name:<10} failover {len(runs)}: {runs[-1]:.2f} s", flush=True)
                results.samples.setdefault("failover s", {})[t.name] = runs
                results.put("leader failover p50 s", t.name, statistics.median(runs), False)
                results.put("leader failover worst s", t.name, max(runs), False)
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{t.name}: failover: {exc}")
                print(f"  {t.name}: failover FAILED: {exc}", flush=True)
            rss = [rss_mb(pid) for pid in t.pids()]
            results.put("resident memory per broker MB", t.name, statistics.mean(rss), False)
        print_table(results, [t.name for t in clusters])
        for failure in failures:
            print(f"FAILED {failure}")
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / time.strftime("cluster-%Y%m%d-%H%M%S.json")
        out.write_text(json.dumps({"cores": os.cpu_count(), "platform": platform.platform(), "scale": scale,
                                   "repeat": repeat, "results": results.values, "runs": results.samples,
                                   "failures": failures}, indent=2))
        print(f"results written to {out}")
    finally:
        for t in clusters:
            t.stop()
        shutil.rmtree(root, ignore_errors=True)
    return results, failures
