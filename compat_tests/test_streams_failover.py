"""Issue 33's scenario as a measurement: an exactly_once_v2 Kafka Streams 4.4 application on 3 brokers (RF=3,
min.insync.replicas=2, every other setting the broker's default) through a kill -9 of one broker mid-run, on
pykbroker and on a 3-node Kafka 4.4 KRaft cluster.

Two instances count 1,000 keys (selectKey -> repartition -> count -> output); half the input is written, then the
broker coordinating the application's transactions, or the one leading the most partitions, is killed and the
rest is written. The output read with read_committed must be exact. Each run prints one ``STREAMS FAILOVER`` line:
the seconds from the kill to the first output committed after it, the longest time without committed output after
the kill, and the whole run's time. Behind ``PYKBROKER_STREAMS_SLOW=1`` (``make test-streams-slow``).
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.conftest import KAFKA_44
from compat_tests.jvm.kafka_broker import KafkaCluster, jars_dir
from compat_tests.streams_app import CommittedCounts, StreamsApp, produce_keys, streams_jars
from pykbroker.config import Config
from pykbroker.testing import ClusterProcesses, RawClient
from wire.messages import ListTransactionsRequest

KEYS = 1000
PARTITIONS = 4
ROUNDS = 40
CLUSTER = {"default.replication.factor": "3", "min.insync.replicas": "2"}
# Generous: Kafka 4.4 stops committing for about 15 s here (its 9 s broker session plus Streams' retries); issue 33
# measured 134-184 s on pykbroker.
RECOVERY_BOUND_S = 60.0
VICTIMS = ["transaction-coordinator", "most-leaders"]
SLOW = os.environ.get("PYKBROKER_STREAMS_SLOW") == "1"
pytestmark = pytest.mark.skipif(not SLOW, reason="set PYKBROKER_STREAMS_SLOW=1 (make test-streams-slow)")


@pytest.fixture(scope="module")
def jars() -> Path:
    found = streams_jars()
    if found is None:
        pytest.skip("java or Maven is missing: Kafka Streams cannot run")
    return found


@dataclass
class Failover:
    """What one run measured (seconds)."""

    victim: int
    first_output: float  # from the kill to the first output committed after it
    stall: float  # the longest time without committed output after the kill
    total: float  # from the first input record to the complete output


def addresses(bootstrap: str) -> dict[int, str]:
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    return {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}


def transaction_coordinator(bootstrap: str, app_id: str) -> int:
    """The broker coordinating most of the application's transactional ids (ListTransactions asks each broker
    for the transactions it coordinates)."""
    deadline = time.monotonic() + 60
    while True:
        owned: Counter[int] = Counter()
        for node, address in addresses(bootstrap).items():
            with RawClient(address, timeout=30) as client:
                listed = client.request(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 0)
            owned[node] += sum(t.transactional_id.startswith(app_id) for t in listed.transaction_states)
        if owned and owned.most_common(1)[0][1] > 0:
            return owned.most_common(1)[0][0]
        if time.monotonic() > deadline:
            raise AssertionError(f"no broker coordinates a transaction of {app_id}")
        time.sleep(0.5)


def most_leaders(bootstrap: str, app_id: str) -> int:
    """The broker leading the most partitions of the application's topics (input, output and internal)."""
    metadata = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30)
    led = Counter(p.leader for name, t in metadata.topics.items() if name.startswith(app_id)
                  for p in t.partitions.values())
    return led.most_common(1)[0][0]


def run_failover(jars: Path, bootstrap: str, root: Path, victim: str, kill: Callable[[int], None]) -> Failover:
    app_id = f"failover-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(f"{app_id}-{s}", PARTITIONS, 3, config={"min.insync.replicas": "2"})
                                       for s in ("in", "out")]).values():
        future.result(30)
    apps = [StreamsApp(jars, bootstrap, app_id, f"{app_id}-in", f"{app_id}-out", root, f"instance-{i}",
                       {"processing.guarantee": "exactly_once_v2"}) for i in range(2)]
    for app in apps:
        app.start()
    counts = CommittedCounts(bootstrap, f"{app_id}-out", PARTITIONS)
    try:
        for app in apps:
            app.wait_for_state("RUNNING", 180)
        started = time.monotonic()
        produce_keys(bootstrap, f"{app_id}-in", KEYS, ROUNDS // 2)
        # kill while the application is mid-way through the first half, with its transactions open
        while len(counts.counts) < KEYS // 2:
            assert time.monotonic() < started + 120, "the application committed nothing in 120 s"
            time.sleep(0.05)
        node = (transaction_coordinator if victim == "transaction-coordinator" else most_leaders)(bootstrap, app_id)
        print(f"killing broker {node} ({victim})")
        killed_at = time.monotonic()
        kill(node)
        produce_keys(bootstrap, f"{app_id}-in", KEYS, ROUNDS - ROUNDS // 2, first_round=ROUNDS // 2)
        try:
            counts.wait_for_totals(KEYS, ROUNDS, 300)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}; instance logs:\n" + "\n".join(a.log() for a in apps)) from None
        total = (counts.last_at or time.monotonic()) - started
        time.sleep(2.0)  # anything committed after the totals would be a duplicate
        assert counts.complete(KEYS, ROUNDS), "counts moved past the number of input records"
        assert not counts.anomalies(), counts.anomalies()[:10]
        first = min((t for t in counts.arrivals if t > killed_at), default=killed_at) - killed_at
        return Failover(node, first, counts.stall_after(killed_at), total)
    finally:
        counts.close()
        for app in apps:
            app.stop()


def report(broker: str, victim: str, run: Failover) -> None:
    print(f"STREAMS FAILOVER {broker}, {victim} (broker {run.victim}) killed: first committed output "
          f"{run.first_output:.1f} s after the kill, longest stall {run.stall:.1f} s, {KEYS * ROUNDS} records "
          f"exact in {run.total:.1f} s; load average {os.getloadavg()[0]:.1f}")


@pytest.mark.parametrize("victim", VICTIMS)
def test_streams_through_a_killed_pykbroker(tmp_path, jars, victim):
    session_ms = Config().zookeeper_session_timeout_ms  # the default, not the kit's 6 s
    with ClusterProcesses(tmp_path / "cluster", 3, CLUSTER, zookeeper_session_timeout_ms=session_ms) as cluster:
        run = run_failover(jars, cluster.bootstrap, tmp_path, victim, lambda n: cluster.broker(n).kill())
    report("pykbroker", victim, run)
    assert run.stall < RECOVERY_BOUND_S, f"the output stopped for {run.stall:.1f} s after the kill"


def test_streams_through_a_killed_pykbroker_noticed_after_18_s(tmp_path, jars):
    """Issue 33's slow runs had the old 18 s session: the coordinator timed the application's transactions out
    (Streams' 10 s transaction.timeout.ms) while their state writes waited for the dead broker to leave the ISR,
    and fenced both instances. As on Kafka given an 18 s broker session, none is fenced now: a transaction whose
    write is pending is not timed out."""
    with ClusterProcesses(tmp_path / "cluster", 3, CLUSTER, zookeeper_session_timeout_ms=18_000) as cluster:
        run = run_failover(jars, cluster.bootstrap, tmp_path, "transaction-coordinator",
                           lambda n: cluster.broker(n).kill())
        fenced = [line for node in cluster.brokers.values()
                  for line in node.log_path.read_text(errors="replace").splitlines() if "timed out after" in line]
    report("pykbroker (18 s session)", "transaction-coordinator", run)
    assert not fenced, fenced[:3]
    assert run.stall < RECOVERY_BOUND_S, f"the output stopped for {run.stall:.1f} s after the kill"


@pytest.mark.parametrize("victim", VICTIMS)
def test_streams_through_a_killed_kafka_broker(tmp_path, jars, victim):
    kafka_jars = jars_dir(KAFKA_44)
    assert kafka_jars is not None
    with KafkaCluster(kafka_jars, tmp_path / "kafka", 3, overrides=CLUSTER) as cluster:
        run = run_failover(jars, cluster.bootstrap, tmp_path, victim, lambda n: cluster.node(n).kill())
    report("Kafka 4.4", victim, run)
