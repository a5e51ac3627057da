"""Kafka Streams: how long a Streams application of 4 instances takes to reach a stable assignment, with the classic
protocol and with group.protocol=streams (KIP-1071), on pykbroker and on Apache Kafka 4.4 in one run, on a single
node and on three brokers (pykbroker with ZooKeeper, Kafka 4.4 KRaft), every broker setting its default.

    python -m bench streams-assignment                              # BENCH_REPEAT=1 application per figure
    BENCH_STREAMS_SETUPS=single python -m bench streams-assignment  # one node only (single, cluster)

The application is compat_tests/jvm/streams/StreamsCountApp.java (input -> selectKey -> repartition -> count ->
output, two sub-topologies of 4 partitions: 8 tasks) with exactly_once_v2; its 4 instances (JVMs) are started at
once, on a broker whose __consumer_offsets and __transaction_state exist already. The figure is the time from the first instance's start until every instance is RUNNING and the group is
Stable with every task assigned (classic: DescribeGroups' member assignments hold the 8 source partitions; streams:
StreamsGroupDescribe's members hold the 8 active tasks). "after the last start" is the same end measured from the
moment the last instance entered REBALANCING (its JVM up and KafkaStreams.start() called): the part the broker
decides. Results are printed with the ratios (pykbroker / Kafka, lower is better) and the load average.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from bench.broker_bench import RESULTS_DIR
from compat_tests.conftest import KAFKA_44
from compat_tests.jvm.kafka_broker import KafkaBroker, KafkaCluster
from compat_tests.jvm.kafka_broker import jars_dir as kafka_jars_dir
from compat_tests.streams_app import StreamsApp, streams_jars
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from wire.messages import FindCoordinatorRequest, StreamsGroupDescribeRequest

PARTITIONS = 4
TASKS = 2 * PARTITIONS  # the input's and the repartition topic's sub-topologies
PROTOCOLS = ("classic", "streams")
SETUPS = ("single", "cluster")
TIMEOUT_S = 240.0


@dataclass
class Assignment:
    """One application's way to a stable assignment (seconds)."""

    from_first_start: float
    from_last_start: float  # from the last instance's REBALANCING


@dataclass
class Figures:
    """setup -> protocol -> broker -> the runs."""

    runs: dict[tuple[str, str, str], list[Assignment]] = field(default_factory=dict)

    def add(self, setup: str, protocol: str, broker: str, run: Assignment) -> None:
        self.runs.setdefault((setup, protocol, broker), []).append(run)


def classic_assigned(bootstrap: str, group: str, members: int) -> bool:
    """The classic group is Stable with ``members`` members whose assignments hold every source partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(30)
    if described.state.name != "STABLE" or len(described.members) != members:
        return False
    owned = [(tp.topic, tp.partition) for m in described.members for tp in m.assignment.topic_partitions]
    return len(owned) == TASKS and len(set(owned)) == TASKS


def streams_assigned(bootstrap: str, group: str, members: int) -> bool:
    """The streams group is Stable with ``members`` members holding every task as active (asked of the group's
    coordinator)."""
    with RawClient(bootstrap.split(",")[0], timeout=30) as c:
        [found] = c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4).coordinators
    if found.error_code != 0:
        return False
    with RawClient(f"{found.host}:{found.port}", timeout=30) as c:
        [g] = c.request(StreamsGroupDescribeRequest(group_ids=[group]), 1).groups
    if g.error_code != 0 or g.group_state != "Stable" or len(g.members) != members:
        return False
    return sum(len(t.partitions) for m in g.members for t in m.assignment.active_tasks) == TASKS


def warm_up(bootstrap: str, timeout: float = 120.0) -> None:
    """Have the broker create __consumer_offsets and __transaction_state (FindCoordinator for a group and a
    transactional id creates them, on pykbroker and on Kafka) before any application is timed: otherwise the first
    application measured on a broker waits for them (tens of partitions, three replicas on 3 brokers) and the
    others do not."""
    deadline = time.monotonic() + timeout
    with RawClient(bootstrap.split(",")[0], timeout=30) as c:
        for key_type, key in ((0, "warm-up-group"), (1, "warm-up-transaction")):
            while c.request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]),
                            4).coordinators[0].error_code != 0:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no coordinator for {key} after {timeout} s")
                time.sleep(0.2)


def time_to_stable(jars: Path, bootstrap: str, root: Path, protocol: str, instances: int,
                   replication: int) -> Assignment:
    """Start ``instances`` instances of a new application at once; the time until the assignment is stable."""
    app_id = f"assign-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(f"{app_id}-{s}", PARTITIONS, replication)
                                       for s in ("in", "out")]).values():
        future.result(30)
    props = {"processing.guarantee": "exactly_once_v2", "group.protocol": protocol}
    apps = [StreamsApp(jars, bootstrap, app_id, f"{app_id}-in", f"{app_id}-out", root, f"{app_id}-{i}", props)
            for i in range(instances)]
    assigned = streams_assigned if protocol == "streams" else classic_assigned
    started = time.monotonic()
    try:
        for app in apps:
            app.start()
        deadline = started + TIMEOUT_S
        while True:
            if all(a.state == "RUNNING" for a in apps) and assigned(bootstrap, app_id, instances):
                done = time.monotonic()
                break
            for app in apps:
                if app.proc is None or app.proc.poll() is not None or app.errors:
                    raise RuntimeError(f"instance {app.name} failed: {app.errors}\n{app.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no stable assignment in {TIMEOUT_S} s: "
                                   f"{[a.state for a in apps]}\n{apps[0].log()}")
            time.sleep(0.1)
        last_start = max(next(t for t, s in a.states if s == "REBALANCING") for a in apps)
        return Assignment(done - started, done - last_start)
    finally:
        for app in apps:
            app.kill()


@contextmanager
def pykbroker(setup: str, root: Path) -> Iterator[tuple[str, int]]:
    if setup == "single":
        with BrokerProcess(root / "broker") as broker:
            yield broker.bootstrap, 1
    else:
        with ClusterProcesses(root / "cluster", 3) as cluster:
            yield cluster.bootstrap, 3


@contextmanager
def kafka(setup: str, root: Path, jars: Path) -> Iterator[tuple[str, int]]:
    if setup == "single":
        with KafkaBroker(jars, root / "kafka") as broker:
            yield broker.bootstrap, 1
    else:
        with KafkaCluster(jars, root / "kafka", 3) as cluster:
            yield cluster.bootstrap, 3


def print_figures(figures: Figures, setups: list[str], protocols: list[str], instances: int) -> None:
    load = os.getloadavg()
    print(f"\nStreams application of {instances} instances to a stable assignment (median s; ratio = pykbroker /"
          f" Kafka 4.4, lower is better); load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    header = f"{'setup':<10}{'protocol':<10}{'measured from':<22}{'pykbroker':>11}{'Kafka 4.4':>11}{'ratio':>8}"
    print(header + "\n" + "-" * len(header))
    for setup in setups:
        for protocol in protocols:
            for label, pick in (("the first start", lambda a: a.from_first_start),
                                ("the last start", lambda a: a.from_last_start)):
                values = {b: statistics.median(pick(a) for a in figures.runs[(setup, protocol, b)])
                          for b in ("pykbroker", "kafka") if (setup, protocol, b) in figures.runs}
                ours, theirs = values.get("pykbroker", float("nan")), values.get("kafka", float("nan"))
                ratio = ours / theirs if theirs == theirs and theirs else float("nan")
                print(f"{setup:<10}{protocol:<10}{label:<22}{ours:11.1f}{theirs:11.1f}{ratio:8.2f}")


def main(brokers: list[str] | None = None, setups: list[str] | None = None, protocols: list[str] | None = None,
         *, instances: int = 4, repeat: int | None = None, results_dir: Path = RESULTS_DIR) -> Figures:
    brokers = brokers or os.environ.get("BENCH_BROKERS", "pykbroker,kafka").split(",")
    setups = setups or os.environ.get("BENCH_STREAMS_SETUPS", ",".join(SETUPS)).split(",")
    protocols = protocols or list(PROTOCOLS)
    repeat = max(1, int(os.environ.get("BENCH_REPEAT", "1")) if repeat is None else repeat)
    jars = streams_jars()
    if jars is None:
        raise SystemExit("java or Maven is missing: Kafka Streams cannot run")
    kafka_jars = kafka_jars_dir(KAFKA_44) if "kafka" in brokers else None
    targets: dict[str, Callable[[str, Path], AbstractContextManager[tuple[str, int]]]] = {"pykbroker": pykbroker}
    if kafka_jars is not None:
        targets["kafka"] = lambda setup, where: kafka(setup, where, kafka_jars)
    figures = Figures()
    root = Path(tempfile.mkdtemp(prefix="streams-assignment-bench-"))
    try:
        print(f"machine: {os.cpu_count()} cores, {platform.platform()}; {instances} instances, {repeat} runs per"
              f" figure", flush=True)
        for setup in setups:
            for i, broker in enumerate(b for b in brokers if b in targets):
                with targets[broker](setup, root / f"{setup}-{broker}") as (bootstrap, replication):
                    warm_up(bootstrap)
                    for r in range(repeat):
                        for protocol in protocols if (i + r) % 2 == 0 else protocols[::-1]:
                            run = time_to_stable(jars, bootstrap, root / "apps", protocol, instances, replication)
                            figures.add(setup, protocol, broker, run)
                            print(f"  {setup:<8} {broker:<10} {protocol:<8} stable {run.from_first_start:6.1f} s after"
                                  f" the first start, {run.from_last_start:6.1f} s after the last; load average"
                                  f" {os.getloadavg()[0]:.1f}", flush=True)
        print_figures(figures, setups, protocols, instances)
        results_dir.mkdir(parents=True, exist_ok=True)
        out = results_dir / time.strftime("streams-assignment-%Y%m%d-%H%M%S.json")
        out.write_text(json.dumps({"cores": os.cpu_count(), "platform": platform.platform(),
                                   "load": os.getloadavg(), "instances": instances,
                                   "runs": [{"setup": s, "protocol": p, "broker": b, "from_first_start": a.from_first_start,
                                             "from_last_start": a.from_last_start}
                                            for (s, p, b), runs in figures.runs.items() for a in runs]}, indent=2))
        print(f"results: {out}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return figures
