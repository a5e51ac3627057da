"""Cluster benchmark: a three-broker pykbroker cluster (ZooKeeper) against a three-node Apache Kafka 4.4
KRaft cluster (combined broker+controller nodes), on this machine, in one run, with the same clients.

    python -m bench cluster          # BENCH_SCALE=1; BENCH_REPEAT=3 runs per throughput and group-join figure;
                                     # BENCH_FAILOVERS=5 kills of a follower and of a leader; BENCH_ROLLING=1

Figures (ratio = pykbroker / Kafka):
- RF=3 acks=all produce throughput to a topic of three partitions (one led by each broker), with Kafka's
  ProducerPerformance (Java client) and with confluent-kafka (librdkafka); median of BENCH_REPEAT runs,
  runs interleaved between the clusters (A B, B A, ...);
- RF=3 transactional produce throughput (ProducerPerformance committing every 100 ms; both clusters finalize
  transaction.version 2, so the Java producer uses Transactions V2, KIP-890), same topic layout and runs;
- KIP-848 group join: 8 confluent-kafka consumers (group.protocol=consumer) subscribe to a topic of 24
  partitions (three replicas); the figure is the time from the first subscribe until every partition is
  owned by exactly one member and every member owns its share (3), as the members' assignment callbacks
  report it; median of BENCH_REPEAT groups, a new topic and group each;
- acks=all stall after a kill -9 of a follower and of a leader: an idempotent acks=all producer sends a
  record every 5 ms to a partition with three replicas; a follower (in the ISR) or the leader is killed
  with SIGKILL; the figure is the time from the kill to the first acknowledgement of a record sent after it
  (the ISR shrank, or a new leader took over, and the ISR acknowledged). p50 and worst of BENCH_FAILOVERS
  kills each; the killed broker is restarted and the ISR is whole again before the next. Both clusters
  detect the death by a session timeout with their defaults: Kafka's broker.session.timeout.ms and
  pykbroker's zookeeper.session.timeout.ms, both 9 s;
- rolling restart under a KIP-848 group: an acks=all producer sends a record every 5 ms to each of three
  partitions (three replicas, min.insync.replicas=2) and a group of two KIP-848 consumers reads them while
  brokers 1, 2, 3 are in turn stopped gracefully (SIGTERM: controlled shutdown), started again, and every
  ISR is full again; the figure is the longest gap between two records of one partition reaching a
  consumer, from the first stop to the last full ISR (worst of BENCH_ROLLING restarts);
- resident memory per broker after the run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import tempfile
import threading
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

SESSION_TIMEOUT_MS = 9000  # Kafka 4.4's broker.session.timeout.ms default, pykbroker's ZooKeeper session's too
TRANSACTION_MS = 100  # ProducerPerformance's --transaction-duration-ms: a commit every 100 ms
TRANSACTIONAL = "RF=3 transactional produce 1 KiB (Transactions V2), Java MB/s"
JOIN = "KIP-848 group of 8 joining 24 partitions s"
ROLLING = "rolling restart under a KIP-848 group, longest consumption gap s"


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

    def stop_node(self, node_id: int) -> None:
        """Stop one broker gracefully (SIGTERM: controlled shutdown)."""
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

    def stop_node(self, node_id: int) -> None:
        code = self.cluster.broker(node_id).stop(timeout=60)
        if code != 0:
            raise RuntimeError(f"pykbroker broker {node_id} exited with {code} after SIGTERM")

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

    def stop_node(self, node_id: int) -> None:
        self.cluster.node(node_id).stop(timeout=120)

    def pids(self) -> list[int]:
        return [n.proc.pid for n in self.cluster.nodes if n.proc is not None]

    def stop(self) -> None:
        self.cluster.close()


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3, config=config or {})])[name].result(60)
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


def full_isrs(target: ClusterTarget, topic: str, partitions: int) -> bool:
    state = partition_state(target.bootstrap, topic, partitions)
    return state is not None and all(len(isr) == 3 for _, isr in state.values())


def longest_gap(times: dict[int, list[float]], since: float, until: float) -> tuple[float, int, float]:
    """The longest gap between two events of one partition within [since, until]: (its length, its partition,
    when it began)."""
    worst, where, began = 0.0, -1, since
    for p, at in times.items():
        inside = [since] + [t for t in at if since <= t <= until] + [until]
        for a, b in zip(inside, inside[1:], strict=False):
            if b - a > worst:
                worst, where, began = b - a, p, a
    return worst, where, began


def restart_every_broker(target: ClusterTarget, ready: Callable[[], bool]) -> list[tuple[float, str]]:
    """Stop brokers 1, 2, 3 gracefully in turn, start each again and wait for ``ready`` before the next: the
    steps with when each began."""
    steps: list[tuple[float, str]] = []
    for node_id in (1, 2, 3):
        steps.append((time.monotonic(), f"stopping broker {node_id}"))
        target.stop_node(node_id)
        steps.append((time.monotonic(), f"starting broker {node_id}"))
        target.restart(node_id)
        steps.append((time.monotonic(), f"waiting for full ISRs after broker {node_id}"))
        wait_until(ready, f"full ISRs after restarting broker {node_id}", 300)
    return steps


class AckGaps:
    """A producer writing a record to every partition every ``interval`` s in a thread; the time of every
    acknowledgement per partition."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, interval: float = 0.005) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.interval = interval
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 0, "message.timeout.ms": 300_000})
        self.acked: dict[int, list[float]] = {p: [] for p in range(partitions)}
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked[msg.partition()].append(time.monotonic())

    def _run(self) -> None:
        next_send = time.monotonic()
        while not self._stop.is_set():
            for p in range(self.partitions):
                try:
                    self.producer.produce(self.topic, b"x" * 100, partition=p, on_delivery=self._delivered)
                except BufferError:
                    pass
            next_send += self.interval
            self.producer.poll(max(0.0, next_send - time.monotonic()))
        self.producer.flush(300)

    def start(self) -> AckGaps:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(330)


class KIP848Group:
    """``members`` confluent-kafka consumers with group.protocol=consumer, each polling in a thread: what each
    member owns (from its assignment callbacks) and when each record of each partition reached one."""

    def __init__(self, bootstrap: str, topic: str, group: str, members: int) -> None:
        from confluent_kafka import Consumer

        self.topic = topic
        self.owned: list[set[int]] = [set() for _ in range(members)]
        self.consumed: dict[int, list[float]] = {}
        self.errors: list[str] = []
        self.changed_at: list[float] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                    "group.protocol": "consumer", "auto.offset.reset": "latest",
                                    "enable.auto.commit": True}) for _ in range(members)]
        self._threads = [threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(members)]

    def _run(self, i: int) -> None:
        consumer = self.consumers[i]

        def assigned(_c, partitions) -> None:
            with self._lock:
                self.owned[i] |= {p.partition for p in partitions}
                self.changed_at.append(time.monotonic())

        def revoked(_c, partitions) -> None:
            with self._lock:
                self.owned[i] -= {p.partition for p in partitions}
                self.changed_at.append(time.monotonic())

        consumer.subscribe([self.topic], on_assign=assigned, on_revoke=revoked, on_lost=revoked)
        while not self._stop.is_set():
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            error = msg.error()
            if error is not None:
                if error.fatal():
                    self.errors.append(str(error))
                    return
                continue
            self.consumed.setdefault(msg.partition() or 0, []).append(time.monotonic())
        consumer.close()

    def start(self) -> KIP848Group:
        for t in self._threads:
            t.start()
        return self

    def balanced(self, partitions: int) -> float | None:
        """When the members' ownership last changed, if every partition is owned by exactly one member and every
        member owns its share; else None."""
        share = partitions // len(self.owned)
        with self._lock:
            owned = [sorted(o) for o in self.owned]
            changed = self.changed_at[-1] if self.changed_at else None
        every = sorted(p for o in owned for p in o)
        if every == list(range(partitions)) and all(len(o) >= share for o in owned):
            return changed
        return None

    def stop(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(60)


def group_join_seconds(target: ClusterTarget, run: int, members: int = 8, partitions: int = 24) -> float:
    """Seconds from the first member's subscribe until the group of ``members`` KIP-848 consumers owns every
    partition of a new topic of ``partitions``, each member its share."""
    topic = f"join-{run}"
    create_topic(target.bootstrap, topic, partitions)
    group = KIP848Group(target.bootstrap, topic, f"join-group-{run}", members)
    started = time.monotonic()
    group.start()
    try:
        done: list[float] = []

        def balanced() -> bool:
            if group.errors:
                raise RuntimeError(f"a member failed: {group.errors[0]}")
            at = group.balanced(partitions)
            if at is not None:
                done.append(at)
            return at is not None

        wait_until(balanced, f"{members} members owning the {partitions} partitions of {topic}", 120)
    finally:
        group.stop()
    return done[0] - started


def rolling_consume_gap(target: ClusterTarget, run: int, partitions: int = 3) -> tuple[float, int, str, float]:
    """One rolling restart under a steady produce read by a KIP-848 group of two: (the longest gap between two
    records of one partition reaching a consumer, its partition, the step of the restart it began in, and the
    producer's longest gap between acknowledgements: the part of the gap that was the produce side's)."""
    topic = f"rolling-consume-{run}"
    create_topic(target.bootstrap, topic, partitions, {"min.insync.replicas": "2"})
    wait_until(lambda: full_isrs(target, topic, partitions), f"full ISRs of {topic}", 300)
    group = KIP848Group(target.bootstrap, topic, f"rolling-group-{run}", 2).start()
    load: AckGaps | None = None
    try:
        wait_until(lambda: group.balanced(partitions) is not None or bool(group.errors), "the group's assignment",
                   120)
        load = AckGaps(target.bootstrap, topic, partitions).start()
        wait_until(lambda: all(len(group.consumed.get(p, [])) > 100 for p in range(partitions))
                   or bool(group.errors), "steady consumption", 60)
        if group.errors:
            raise RuntimeError(f"a member failed: {group.errors[0]}")
        since = time.monotonic()
        steps = restart_every_broker(target, lambda: full_isrs(target, topic, partitions))
        until = time.monotonic()
        time.sleep(1.0)  # records sent just before ``until`` reach the consumers
    finally:
        if load is not None:
            load.stop()
        group.stop()
    if group.errors:
        raise RuntimeError(f"a member failed: {group.errors[0]}")
    gap, partition, began = longest_gap(group.consumed, since, until)
    at, step = max((s for s in steps if s[0] <= began), default=(since, "?"))
    assert load is not None
    return gap, partition, f"{step} (+{began - at:.2f} s)", longest_gap(load.acked, since, until)[0]


def failover_seconds(target: ClusterTarget, topic: str, victim: str = "leader") -> float:
    """Kill the partition's leader (or a follower in its ISR) under a steady acks=all producer; seconds until a
    record sent after the kill is acknowledged. The killed broker is restarted and the ISR is whole again
    before returning."""
    from confluent_kafka import Producer

    state = partition_state(target.bootstrap, topic, 1)
    assert state is not None
    leader, isr = state[0]
    killed = leader if victim == "leader" else next(n for n in isr if n != leader)
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
            target.kill(killed)
            killed_at = time.monotonic()
        producer.produce(topic, b"x" * 100, partition=0,
                         on_delivery=lambda err, msg, sent=now: delivered(err, msg, sent))
        producer.poll(0.005)
    producer.flush(30)
    if not acked_after_kill:
        raise TimeoutError("no acknowledgement within 120 s of the kill")
    seconds = acked_after_kill[0] - killed_at
    target.restart(killed)
    wait_until(lambda: full_isrs(target, topic, 1), "the ISR whole again", 120)
    return seconds


def main(targets: list[str] | None = None, scale: float | None = None, *, java: bool = True,
         repeat: int | None = None, failovers: int | None = None, rolling: int | None = None,
         results_dir: Path = RESULTS_DIR) -> tuple[Results, list[str]]:
    scale = float(os.environ.get("BENCH_SCALE", "1")) if scale is None else scale
    repeat = max(1, int(os.environ.get("BENCH_REPEAT", "3")) if repeat is None else repeat)
    failovers = max(1, int(os.environ.get("BENCH_FAILOVERS", "5")) if failovers is None else failovers)
    rolling = max(1, int(os.environ.get("BENCH_ROLLING", "1")) if rolling is None else rolling)
    wanted = targets or os.environ.get("BENCH_BROKERS", "pykbroker,kafka").split(",")
    kafka_jars = jars_dir() if java or "kafka" in wanted else None
    jars = kafka_jars if java else None  # for the Java clients' figures
    results = Results()
    failures: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="cluster-bench-"))
    clusters: list[ClusterTarget] = []
    try:
        print(f"machine: {os.cpu_count()} cores, {platform.platform()}; scale {scale}, {repeat} runs per "
              f"throughput and group-join figure, {failovers} kills of a follower and of a leader, {rolling} rolling "
              f"restarts", flush=True)
        factories: dict[str, Callable[[], ClusterTarget]] = {"pykbroker": lambda: PykbrokerCluster(root)}
        if kafka_jars is not None:
            factories["kafka"] = lambda: KafkaClusterTarget(root, kafka_jars)
        for name in [b for b in wanted if b in factories]:
            target = factories[name]()
            clusters.append(target)
            results.put("cluster start-up s", name, target.start(), False)
        joins: dict[str, list[float]] = {t.name: [] for t in clusters}
        for i in range(repeat):
            for t in clusters if i % 2 == 0 else clusters[::-1]:
                try:
                    joins[t.name].append(group_join_seconds(t, i))
                    print(f"  {t.name:<10} KIP-848 group of 8 joining 24 partitions {i + 1}: "
                          f"{joins[t.name][-1]:.2f} s", flush=True)
                except Exception as exc:  # noqa: BLE001 - the other figures still come
                    failures.append(f"{t.name}: group join: {exc}")
                    print(f"  {t.name}: group join FAILED: {exc}", flush=True)
        for name, runs in joins.items():
            if runs:
                results.put_median(JOIN, name, runs, False)
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
                wait_until(lambda t=t: full_isrs(t, "failover", 1), "full ISR of failover", 120)
                stalls: dict[str, list[float]] = {"follower": [], "leader": []}
                for i in range(failovers):
                    for victim, runs in stalls.items():
                        runs.append(failover_seconds(t, "failover", victim))
                        print(f"  {t.name:<10} kill -9 of the {victim} {i + 1}: acks=all stall {runs[-1]:.2f} s",
                              flush=True)
                for victim, runs in stalls.items():
                    results.samples.setdefault(f"{victim} kill stall s", {})[t.name] = runs
                    results.put(f"acks=all stall after a {victim}'s kill -9 p50 s", t.name,
                                statistics.median(runs), False)
                    results.put(f"acks=all stall after a {victim}'s kill -9 worst s", t.name, max(runs), False)
            except Exception as exc:  # noqa: BLE001
                failures.append(f"{t.name}: failover: {exc}")
                print(f"  {t.name}: failover FAILED: {exc}", flush=True)
        for i in range(rolling):
            for t in clusters if i % 2 == 0 else clusters[::-1]:
                try:
                    gap, partition, step, ack_gap = rolling_consume_gap(t, i)
                    results.samples.setdefault("rolling restart consumption gap s", {}).setdefault(
                        t.name, []).append(gap)
                    print(f"  {t.name:<10} rolling restart {i + 1} under a KIP-848 group: longest consumption gap "
                          f"{gap:.3f} s (partition {partition}, began while {step}); the producer's longest "
                          f"acknowledgement gap {ack_gap:.3f} s", flush=True)
                except Exception as exc:  # noqa: BLE001
                    failures.append(f"{t.name}: rolling restart: {exc}")
                    print(f"  {t.name}: rolling restart {i + 1} FAILED: {exc}", flush=True)
        for name, gaps in results.samples.get("rolling restart consumption gap s", {}).items():
            results.put(ROLLING, name, max(gaps), False)
        for t in clusters:
            rss = [rss_mb(pid) for pid in t.pids()]
            results.put("resident memory per broker MB", t.name, statistics.mean(rss), False)
        print_table(results, [t.name for t in clusters])
        for failure in failures:
            print(f"FAILED {failure}")
        results_dir.mkdir(parents=True, exist_ok=True)
        out = results_dir / time.strftime("cluster-%Y%m%d-%H%M%S.json")
        out.write_text(json.dumps({"cores": os.cpu_count(), "platform": platform.platform(), "scale": scale,
                                   "repeat": repeat, "results": results.values, "runs": results.samples,
                                   "failures": failures}, indent=2))
        print(f"results written to {out}")
    finally:
        for t in clusters:
            t.stop()
        shutil.rmtree(root, ignore_errors=True)
    return results, failures
