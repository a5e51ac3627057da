"""Rolling-restart bench: produce unavailability while each broker of a three-broker cluster is in turn stopped
gracefully (SIGTERM: controlled shutdown) and started again, pykbroker (ZooKeeper) against Apache Kafka 4.1's
three-node KRaft cluster, in one run, with the same client.

    python -m bench rolling          # BENCH_ROLLING_RUNS=5 rolling restarts per cluster

An idempotent acks=all confluent-kafka producer (librdkafka, its defaults otherwise) sends one record every
5 ms to each of three partitions (three replicas, min.insync.replicas=2) while brokers 1, 2 and 3 are
restarted one after the other, each once every partition has its three in-sync replicas again. A run's
figure is its unavailability: the longest gap between two acknowledgements of one partition, over the three
partitions, from the first stop to the last full ISR. Reported: p50 and worst over the runs, and the number of
sends that failed (goal: none). Runs alternate between the clusters.
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
from pathlib import Path

from bench.broker_bench import RESULTS_DIR, Results, jars_dir, print_table
from bench.cluster_bench import (
    ClusterTarget,
    KafkaClusterTarget,
    PykbrokerCluster,
    partition_state,
    wait_until,
)

PARTITIONS = 3
SEND_INTERVAL_S = 0.005


class GracefulPykbroker(PykbrokerCluster):
    def stop_node(self, node_id: int) -> None:
        code = self.cluster.broker(node_id).stop(timeout=60)
        if code != 0:
            raise RuntimeError(f"pykbroker broker {node_id} exited with {code} after SIGTERM")


class GracefulKafka(KafkaClusterTarget):
    def stop_node(self, node_id: int) -> None:
        self.cluster.node(node_id).stop(timeout=120)


class AckGaps:
    """A producer writing to every partition in a thread; the time of every acknowledgement per partition."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 0, "message.timeout.ms": 300_000})
        self.acked: dict[int, list[float]] = {p: [] for p in range(PARTITIONS)}
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
            for p in range(PARTITIONS):
                try:
                    self.producer.produce(self.topic, b"x" * 100, partition=p, on_delivery=self._delivered)
                except BufferError:
                    pass
            next_send += SEND_INTERVAL_S
            self.producer.poll(max(0.0, next_send - time.monotonic()))
        self.producer.flush(300)

    def start(self) -> AckGaps:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(330)

    def longest_gap(self, since: float, until: float) -> tuple[float, int, float]:
        """The longest gap between acknowledgements of one partition within [since, until]: (its length, its
        partition, when it began)."""
        worst, where, began = 0.0, -1, since
        for p, times in self.acked.items():
            inside = [since] + [t for t in times if since <= t <= until] + [until]
            for a, b in zip(inside, inside[1:], strict=False):
                if b - a > worst:
                    worst, where, began = b - a, p, a
        return worst, where, began


def full_isrs(target: ClusterTarget, topic: str) -> bool:
    state = partition_state(target.bootstrap, topic, PARTITIONS)
    return state is not None and all(len(isr) == 3 for _, isr in state.values())


def rolling_restart(target, run: int) -> tuple[float, int, int, str]:
    """One rolling restart under load: (longest acknowledgement gap s, its partition, failed sends, the step of
    the restart it began in)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"rolling-{run}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(60)
    wait_until(lambda: full_isrs(target, topic), f"leaders and full ISRs of {topic}", 300)
    load = AckGaps(target.bootstrap, topic).start()
    try:
        wait_until(lambda: all(len(t) > 100 for t in load.acked.values()), "steady acknowledgements", 60)
        since = time.monotonic()
        steps: list[tuple[float, str]] = []
        for node_id in (1, 2, 3):
            steps.append((time.monotonic(), f"stopping broker {node_id}"))
            target.stop_node(node_id)
            steps.append((time.monotonic(), f"starting broker {node_id}"))
            target.restart(node_id)
            steps.append((time.monotonic(), f"waiting for full ISRs after broker {node_id}"))
            wait_until(lambda: full_isrs(target, topic), f"full ISRs after restarting broker {node_id}", 300)
        until = time.monotonic()
        time.sleep(1.0)  # acknowledgements of what was sent just before ``until``
    finally:
        load.stop()
    gap, partition, began = load.longest_gap(since, until)
    at, step = max((s for s in steps if s[0] <= began), default=(since, "?"))
    return gap, partition, len(load.failed), f"{step} (+{began - at:.2f} s)"


def main(targets: list[str] | None = None) -> tuple[Results, list[str]]:
    runs = max(1, int(os.environ.get("BENCH_ROLLING_RUNS", "5")))
    wanted = targets or os.environ.get("BENCH_BROKERS", "pykbroker,kafka").split(",")
    jars = jars_dir()
    results = Results()
    failures: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="rolling-bench-"))
    clusters: list = []
    try:
        print(f"machine: {os.cpu_count()} cores, {platform.platform()}; {runs} rolling restarts per cluster",
              flush=True)
        factories = {"pykbroker": lambda: GracefulPykbroker(root)}
        if jars is not None:
            factories["kafka"] = lambda: GracefulKafka(root, jars)
        for name in [b for b in wanted if b in factories]:
            target = factories[name]()
            clusters.append(target)
            target.start()
        gaps: dict[str, list[float]] = {t.name: [] for t in clusters}
        failed_sends: dict[str, int] = {t.name: 0 for t in clusters}
        for i in range(runs):
            for t in clusters if i % 2 == 0 else clusters[::-1]:
                try:
                    gap, partition, failed, step = rolling_restart(t, i)
                except Exception as exc:  # noqa: BLE001 - the other cluster's runs still come
                    failures.append(f"{t.name}: rolling restart {i + 1}: {exc}")
                    print(f"  {t.name}: rolling restart {i + 1} FAILED: {exc}", flush=True)
                    continue
                gaps[t.name].append(gap)
                failed_sends[t.name] += failed
                print(f"  {t.name:<10} rolling restart {i + 1}: longest acknowledgement gap {gap:.3f} s "
                      f"(partition {partition}, began while {step}), {failed} failed sends", flush=True)
        for name, runs_of in gaps.items():
            if not runs_of:
                continue
            results.samples.setdefault("rolling restart gap s", {})[name] = runs_of
            results.put("rolling restart unavailability p50 s", name, statistics.median(runs_of), False)
            results.put("rolling restart unavailability worst s", name, max(runs_of), False)
            results.put("rolling restart failed sends", name, failed_sends[name], False)
        print_table(results, [t.name for t in clusters])
        for failure in failures:
            print(f"FAILED {failure}")
        RESULTS_DIR.mkdir(parents=True, exist_ok=True)
        out = RESULTS_DIR / time.strftime("rolling-%Y%m%d-%H%M%S.json")
        out.write_text(json.dumps({"cores": os.cpu_count(), "platform": platform.platform(), "runs": runs,
                                   "results": results.values, "samples": results.samples, "failures": failures},
                                  indent=2))
        print(f"results written to {out}")
    finally:
        for t in clusters:
            t.stop()
        shutil.rmtree(root, ignore_errors=True)
    return results, failures
