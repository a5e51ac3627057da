"""One campaign: a cluster of ``brokers`` (3 or 5) on ZooKeeper, the workloads, the nemesis for ``duration``
seconds once every workload is under way, then heal, read everything back, check, print the verdict and write
``history.json`` and ``timeline.html``."""

from __future__ import annotations

import functools
import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from chaos.checker import CheckResult, check_all, unavailability
from chaos.client_process import ClientProcess
from chaos.cluster import ProxiedCluster
from chaos.history import CopierRun, Fault, History, Origin
from chaos.java_workload import JavaGroupMember, JavaProducerWorkload, JavaToolWorkload, java_jars
from chaos.kafka_target import KAFKA_KINDS, KafkaTarget
from chaos.log_origins import origins
from chaos.nemesis import KINDS, PARTITION_KINDS, Nemesis
from chaos.timeline import render
from chaos.workloads import CopierWorkload, GroupWorkload, Workload, read_back
from pykbroker.testing import ClusterProcesses

PARTITIONS = 3
LAG_MS = 3000
SESSION_MS = 8000
DISK_MB = 64  # each broker's log dir, a tmpfs, when the mix has disk-full
STOP_S = 45.0  # a consumer's last commit and close; past it the member is killed and named in the verdict
WARM_UP_S = 90.0  # at most this long for every workload's first acknowledgement or read before the first fault


@dataclass
class Outcome:
    seed: int
    history: History
    results: list[CheckResult]
    errors: list[str] = field(default_factory=list)
    out_dir: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and all(r.ok for r in self.results)


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    strict = {"min.insync.replicas": "2"}
    topics = [NewTopic("acks", PARTITIONS, 3, config=strict), NewTopic("txn", PARTITIONS, 3, config=strict),
              NewTopic("copy-in", PARTITIONS, 3, config=strict), NewTopic("copy-out", PARTITIONS, 3, config=strict),
              NewTopic("compacted", PARTITIONS, 3, config={**strict, "cleanup.policy": "compact", "segment.ms": "5000",
                                                           "min.cleanable.dirty.ratio": "0.01"})]
    for future in admin.create_topics(topics).values():
        future.result(60)
    deadline = time.monotonic() + 60
    while True:
        md = admin.list_topics(timeout=10).topics
        if all(t.topic in md and all(p.leader >= 0 for p in md[t.topic].partitions.values()) for t in topics):
            return
        if time.monotonic() > deadline:
            raise TimeoutError("workload topics have no leaders after 60s")
        time.sleep(0.2)


def duplicate_origins(history: History, root: Path) -> list[Origin]:
    """Who wrote each copy of a record read back more than once (read from the segment files under ``root``
    while the cluster still runs: a disk fault's tmpfs goes with it)."""
    copies: dict[tuple[str, int, str], list[int]] = defaultdict(list)
    for c in history.consumed:
        if c.reader == "final" and c.topic not in history.compacted_topics:
            copies[(c.topic, c.partition, c.value)].append(c.offset)
    wanted: dict[tuple[str, int], set[int]] = defaultdict(set)
    for (topic, partition, _), offsets in copies.items():
        if len(offsets) > 1:
            wanted[(topic, partition)].update(offsets)
    return [o for (topic, partition), offsets in wanted.items() for o in origins(root, topic, partition, offsets)]


def under_way(history: History, writers: list[str], readers: list[str]) -> list[str]:
    """The workloads of ``writers`` (producer names: a record acknowledged; ``txn``: a transaction committed) and
    ``readers`` (consumers' reader names: a record read) that have not done so yet."""
    acked = {p.producer.split(".")[0] for p in history.snapshot("produced") if p.ok and p.txn in ("", "committed")}
    read = {c.reader for c in history.snapshot("consumed")}
    return [w for w in writers if w not in acked] + [r for r in readers if r not in read]


def warm_up(history: History, writers: list[str], readers: list[str], log, clock) -> None:
    """Wait (at most ``WARM_UP_S``) until every workload is under way: on a loaded machine the JVM clients and the
    transactional producer take seconds to start, and a short campaign's faults would otherwise come and go before
    they wrote or read anything. A workload still idle after it is named; its own error says whether it ever ran."""
    deadline = time.monotonic() + WARM_UP_S
    while (idle := under_way(history, writers, readers)) and time.monotonic() < deadline:
        time.sleep(0.2)
    log(f"workloads under way ({clock():.1f}s)" + (f"; still idle: {', '.join(idle)}" if idle else ""))


def run(duration: float, seed: int, faults: list[str], out_dir: Path, rate: float = 100.0,
        log=print, java: bool = True, brokers: int = 3, target: str = "pykbroker",
        hold: tuple[float, float] | None = None, gap: tuple[float, float] = (1.0, 3.0)) -> Outcome:
    """Run one campaign; everything it writes (cluster data and logs too) goes under ``out_dir``.
    ``hold``: every fault held that many seconds (min, max) instead of its kind's hold; ``gap``: seconds
    between a healthy cluster and the next fault.
    ``target="kafka"``: Apache Kafka 4.1 (KRaft) instead of pykbroker, under the faults that apply to it."""
    rng = random.Random(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    clock = lambda: round(time.monotonic() - t0, 3)  # noqa: E731
    history = History(compacted_topics=["compacted"], meta={"seed": seed, "duration": duration, "faults": faults,
                                                            "rate": rate, "java": java,
                                                            "brokers": brokers, "target": target,
                                                            "hold": hold, "gap": gap})
    errors: list[str] = []
    overrides = {"replica.lag.time.max.ms": str(LAG_MS), "offsets.topic.num.partitions": "3",
                 "transaction.state.log.num.partitions": "3", "log.cleaner.backoff.ms": "1000"}
    cluster_factory: Callable[..., Any]  # ClusterProcesses, ProxiedCluster or KafkaTarget: the same interface
    if target == "kafka":
        jars = java_jars()
        if jars is None:
            raise RuntimeError("the Kafka target needs java and Kafka's jars (make deps)")
        faults = [f for f in faults if f in KAFKA_KINDS]
        history.meta["faults"] = faults
        cluster_factory = functools.partial(KafkaTarget, jars, proxied=bool(set(faults) & set(PARTITION_KINDS)))
    else:
        if set(faults) & {"disk-full", "disk-readonly", "clock-jump", *PARTITION_KINDS}:
            cluster_factory = functools.partial(ProxiedCluster, disk_mb=DISK_MB if "disk-full" in faults else 0,
                                                clock_shift="clock-jump" in faults,
                                                flaky_dirs="disk-readonly" in faults)
        else:
            cluster_factory = ClusterProcesses
    with cluster_factory(out_dir / "cluster", size=brokers, overrides=overrides,
                         zookeeper_session_timeout_ms=SESSION_MS) as cluster:
        bootstrap = cluster.bootstrap
        create_topics(bootstrap)
        log(f"cluster up at {bootstrap} ({clock():.1f}s); workloads start")

        def producer(name: str, topic: str, rate: float, keys: int = 0) -> ClientProcess:
            return ClientProcess(name, history, clock, "producer", {"bootstrap": bootstrap, "topic": topic,
                                 "partitions": PARTITIONS, "rate": rate, "keys": keys}, out_dir / f"{name}.log")
        producers: list[Workload] = [producer(f"producer-{i}", "acks", rate) for i in range(2)]
        producers.append(producer("keyed", "compacted", rate / 4, keys=20))
        producers.append(producer("copy-feed", "copy-in", rate / 4))
        jars = java_jars() if java else None
        if jars is not None:
            producers.append(JavaProducerWorkload("java-producer", history, clock, bootstrap, "acks", rate, jars,
                                                  out_dir / "java-producer.properties"))
        elif java:
            errors.append("the Java workload needs java and Kafka's jars (make deps); it did not run")
        java_group = [JavaGroupMember(f"java-member-{i}", history, clock, bootstrap, "acks", "chaos-java-group", jars,
                                      out_dir / f"java-member-{i}.log") for i in range(2)] if jars is not None else []
        group = GroupWorkload("group", history, clock, bootstrap, "acks", "chaos-group", out_dir / "group.log")
        txn = ClientProcess("txn", history, clock, "transactions", {"bootstrap": bootstrap, "topic": "txn",
                            "partitions": PARTITIONS, "seed": seed}, out_dir / "txn.log")
        copier = CopierWorkload("copier", history, clock, bootstrap, "copy-in", "copy-out", out_dir / "copier.log")
        sampler = ClientProcess("watermarks", history, clock, "watermarks", {"bootstrap": bootstrap,
                                "topics": {"acks": PARTITIONS, "copy-in": PARTITIONS}}, out_dir / "watermarks.log")
        workloads = [*producers, group, *java_group, txn, copier, sampler]
        for w in workloads:
            w.start()
        try:
            nemesis = Nemesis(cluster, history, clock, rng, topic="acks", group="chaos-group", lag_ms=LAG_MS,
                              session_ms=SESSION_MS, hold=hold)
            try:
                warm_up(history, [w.name for w in (*producers, txn)],
                        [f"group:{group.group}:m{i}" for i in range(group.count)]
                        + [f"group:{m.group}:{m.name}" for m in java_group], log, clock)
                faults_from = clock()
                while clock() - faults_from < duration:
                    time.sleep(rng.uniform(*gap))
                    kind = rng.choice(faults)
                    try:
                        fault = nemesis.run(kind)
                    except Exception as exc:  # noqa: BLE001 - a fault that cannot be healed fails the run, reported
                        errors.append(f"{kind} at {clock():.1f}s could not be healed: {exc!r}")
                        break
                    log(f"{fault.start:7.1f}s {fault.kind:<18} {fault.target:<10} healed at {fault.end:.1f}s {fault.note}")
            finally:
                nemesis.heal_all()
            errors += nemesis.slow_heals
            errors += [f"a restarted broker neither registered nor exited: {s}" for s in nemesis.stuck_starts]
            log(f"nemesis done ({clock():.1f}s); stopping workloads")
            for w in [*producers, txn]:  # the copier's last run drains copy-in once its feed has stopped
                w.request_stop()
            for w in [*producers, txn]:
                w.stop()
            for w in (copier, group, *java_group, sampler):
                w.request_stop()
            copier.stop(240)
            for w in (group, *java_group):
                w.stop(STOP_S)
            sampler.stop(STOP_S)
            errors += [e for w in workloads for e in w.errors]
            nemesis.wait_healthy(history.faults[-1] if history.faults else Fault("none", "", 0.0))
            for topic in ("acks", "compacted", "copy-in"):
                for p in range(PARTITIONS):
                    read_back(bootstrap, topic, p, history, clock)
            for topic in ("txn", "copy-out"):
                for p in range(PARTITIONS):
                    read_back(bootstrap, topic, p, history, clock, committed=True)
            for origin in duplicate_origins(history, out_dir / "cluster"):
                history.add(origin)
            history.add(CopierRun("copy-in", "copy-out",
                                  inputs=[c.value for c in history.consumed if c.reader == "final" and c.topic == "copy-in"],
                                  outputs=[c.value for c in history.consumed
                                           if c.reader == "final-committed" and c.topic == "copy-out"]))
            history.meta.update(copier_runs=copier.runs, copier_failed_runs=copier.failed_runs,
                                copier_stuck_runs=copier.stuck_runs, txn_outcomes=txn.stats.get("outcomes"),
                                client_crashes={w.name: w.crashed_runs for w in (*producers, txn, sampler)
                                                if isinstance(w, ClientProcess) and w.crashed_runs},
                                group_member_runs=group.runs, group_stuck_runs=group.stuck_runs,
                                abandoned_members=[f"{group.name}:{m}" for m in group.abandoned]
                                + [w.name for w in java_group if w.abandoned])
        finally:
            copier.kill()  # torn down early (an error, Ctrl-C): no process outlives the run
            group.kill()
            for w in [*producers, *java_group, txn, sampler]:
                if isinstance(w, JavaToolWorkload | ClientProcess):
                    w.kill()
    results = check_all(history)
    outcome = Outcome(seed, history, results, errors, out_dir)
    (out_dir / "history.json").write_text(history.to_json())
    (out_dir / "timeline.html").write_text(render(history, f"pykbroker chaos seed {seed}"))
    verdict = format_verdict(outcome)
    (out_dir / "verdict.txt").write_text(verdict)
    log(verdict)
    return outcome


def format_verdict(o: Outcome) -> str:
    h = o.history
    lines = [f"seed {o.seed}: {'PASS' if o.ok else 'FAIL'}  ({len(h.faults)} faults, "
             f"{sum(1 for p in h.produced if p.ok)} acknowledged writes, {len(h.consumed)} reads, "
             f"{len(h.commits)} commits, {len(h.watermarks)} watermarks, "
             f"{sum(1 for p in h.produced if p.ok and not p.txn and p.offset < 0)} acknowledged without an offset)", "",
             f"{'check':<72} {'checked':>8} {'violations':>10} {'explained':>9}"]
    for r in o.results:
        lines.append(f"{r.name:<72} {r.checked:>8} {len(r.violations):>10} {len(r.explained):>9}")
    lines += ["", f"{'fault':<20} {'count':>5} {'no-ack p50 s':>13} {'no-ack max s':>13}"]
    for kind, gaps in sorted(unavailability(h).items()):
        lines.append(f"{kind:<20} {len(gaps):>5} {statistics.median(gaps):>13.2f} {max(gaps):>13.2f}")
    lines.append("")
    lines.append(f"meta: {json.dumps(h.meta)}")
    for r in o.results:
        for v in r.violations[:20]:
            lines.append(f"VIOLATION {v}")
    for r in o.results:
        for v in r.explained[:20]:
            lines.append(f"EXPLAINED {v}")
    for e in o.errors:
        lines.append(f"ERROR {e}")
    if h.meta.get("abandoned_members"):
        lines.append(f"NOTE consumers killed at the end, stuck in their client after SIGTERM (their reads and "
                     f"commits until then are checked): {', '.join(h.meta['abandoned_members'])}")
    if o.out_dir:
        lines.append(f"history: {o.out_dir / 'history.json'}  timeline: {o.out_dir / 'timeline.html'}")
    return "\n".join(lines)


__all__ = ["KINDS", "Outcome", "format_verdict", "run"]
