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
import time
from pathlib import Path

from bench.broker_bench import RESULTS_DIR, Results, jars_dir, print_table
from bench.cluster_bench import (
    AckGaps,
    KafkaClusterTarget,
    PykbrokerCluster,
    full_isrs,
    longest_gap,
    restart_every_broker,
    wait_until,
)

PARTITIONS = 3


def rolling_restart(target, run: int) -> tuple[float, int, int, str]:
    """One rolling restart under load: (longest acknowledgement gap s, its partition, failed sends, the step of
    the restart it began in)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"rolling-{run}"
    admin = AdminClient({"bootstrap.servers": target.bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})])[topic].result(60)
    wait_until(lambda: full_isrs(target, topic, PARTITIONS), f"leaders and full ISRs of {topic}", 300)
    load = AckGaps(target.bootstrap, topic, PARTITIONS).start()
    try:
        wait_until(lambda: all(len(t) > 100 for t in load.acked.values()), "steady acknowledgements", 60)
        since = time.monotonic()
        steps = restart_every_broker(target, lambda: full_isrs(target, topic, PARTITIONS))
        until = time.monotonic()
        time.sleep(1.0)  # acknowledgements of what was sent just before ``until``
    finally:
        load.stop()
    gap, partition, began = longest_gap(load.acked, since, until)
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
        factories = {"pykbroker": lambda: PykbrokerCluster(root)}
        if jars is not None:
            factories["kafka"] = lambda: KafkaClusterTarget(root, jars)
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
