"""Moving partitions in a real cluster (ZooKeeper and pykbroker processes) with Kafka 4.1's
kafka-reassign-partitions (ReassignPartitionsCommand) as operators type it: --generate proposes a plan,
--execute starts it, --verify reports it and finishes it; a move under an idempotent acks=all producer
loses nothing; a broker added later gets partitions only when they are moved to it, and a broker retired
by moving everything off it leaves no under-replicated partition."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.test_cluster_faults import PARTITIONS, Load, read_partition
from pykbroker.testing import ClusterProcesses, RawClient
from wire.messages import ListPartitionReassignmentsRequest

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka's tools need java")
slow = pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                          reason="half a minute of moves and a controller kill: make test-cluster-slow "
                                 "(PYKBROKER_SLOW_CLUSTER=1)")

JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TOPICS = "org.apache.kafka.tools.TopicCommand"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def jars() -> Path:
    found = jars_dir()
    if found is None:
        pytest.skip("Kafka's jars are missing")
    return found


def tool(jars: Path, main_class: str, *args: str, ok: bool = True) -> str:
    done = subprocess.run([*JAVA, "-cp", f"{jars}/*", main_class, *args], capture_output=True, text=True,
                          timeout=120)
    if ok:
        assert done.returncode == 0, f"{main_class} {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def wait_for(predicate, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.3)


def partitions(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    md = admin.list_topics(topic, timeout=10).topics[topic]
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in md.partitions.values()}


def ongoing(cluster: ClusterProcesses) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments: {partition: (replicas, adding, removing)} of every move in progress."""
    broker = next(b for b in cluster.brokers.values() if b.alive)
    with RawClient(broker.bootstrap) as c:
        response = c.request(ListPartitionReassignmentsRequest(timeout_ms=10_000, topics=None), 0)
    assert response.error_code == 0, response
    return {(t.name, p.partition_index): (list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions}


def log_dirs_holding(cluster: ClusterProcesses, topic: str, partition: int) -> set[int]:
    """The brokers with a live log directory for ``topic-partition`` on disk."""
    return {n for n, b in cluster.brokers.items() if (Path(b.data_dir) / "logs" / f"{topic}-{partition}").is_dir()}


def plan_file(tmp_path: Path, moves: dict[tuple[str, int], list[int]]) -> Path:
    path = tmp_path / f"plan-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)} for (t, p), r in moves.items()]}))
    return path


def produce(bootstrap: str, topic: str, count: int, size: int = 100) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
    for i in range(count):
        producer.produce(topic, os.urandom(size), key=str(i).encode())
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One cluster for the module: each test uses topics of its own and leaves every broker running (broker 4,
    once added, stays); the cancelled-move test, which kills the controller, comes last."""
    with ClusterProcesses(tmp_path_factory.mktemp("cluster"), size=3,
                          overrides={"replica.lag.time.max.ms": "5000"}) as c:
        yield c


def test_the_reassign_tool_generates_executes_and_verifies_a_move(cluster, jars, tmp_path):
    topic = unique("moved")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=2, replica_assignment=[[1, 2], [2, 1]])])[topic].result(30)
    wait_for(lambda: all(leader >= 0 for leader, _, _ in partitions(admin, topic).values()), "leaders")
    produce(cluster.bootstrap, topic, 2000)
    before = {p: read_partition(cluster.bootstrap, topic, p) for p in (0, 1)}

    topics_json = tmp_path / "topics.json"
    topics_json.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    generated = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--generate",
                     "--topics-to-move-json-file", str(topics_json), "--broker-list", "2,3")
    assert "Current partition replica assignment" in generated and "Proposed partition reassignment" in generated
    proposed = json.loads(generated.split("Proposed partition reassignment configuration")[1].strip().splitlines()[0])
    assert {p["partition"]: sorted(p["replicas"]) for p in proposed["partitions"]} == {0: [2, 3], 1: [2, 3]}

    plan = plan_file(tmp_path, {(topic, 0): [3, 2], (topic, 1): [2, 3]})
    executed = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute",
                    "--reassignment-json-file", str(plan))
    assert f"Successfully started partition reassignments for {topic}-0,{topic}-1" in executed

    def verified() -> str | None:
        out = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--verify",
                   "--reassignment-json-file", str(plan))
        return out if "is still in progress" not in out else None
    out = wait_for(verified, "the reassignment to complete")
    assert f"Reassignment of partition {topic}-0 is completed." in out
    assert f"Reassignment of partition {topic}-1 is completed." in out

    wait_for(lambda: partitions(admin, topic) == {0: (3, [3, 2], [2, 3]), 1: (2, [2, 3], [2, 3])},
             "the new replicas to lead and be in sync")
    wait_for(lambda: log_dirs_holding(cluster, topic, 0) == {2, 3} and log_dirs_holding(cluster, topic, 1) == {2, 3},
             "broker 1's logs to be deleted")
    assert {p: read_partition(cluster.bootstrap, topic, p) for p in (0, 1)} == before
    # Nothing left to list once it is done.
    out = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--list")
    assert "No partition reassignments found." in out


def check_acknowledged(cluster: ClusterProcesses, load: Load) -> int:
    """Every acknowledged record is stored once, at the offset its acknowledgement named, in produce order."""
    assert load.failed == [], load.failed[:5]
    total = 0
    for p in range(PARTITIONS):
        stored = read_partition(cluster.bootstrap, load.topic, p)
        offsets = {v: o for o, v in stored}
        assert len(offsets) == len(stored), f"a record is stored twice in partition {p}"
        assert all(offsets.get(v) == o for o, v in load.acked[p]), f"an acknowledged record of {p} is missing"
        numbers = [int(v.split(b":")[1]) for _, v in stored]
        assert numbers == sorted(numbers), f"partition {p} is out of produce order"
        total += len(load.acked[p])
    return total


def test_a_broker_added_gets_partitions_only_when_moved_and_a_retired_one_leaves_nothing_behind(cluster, jars,
                                                                                               tmp_path):
    """Under idempotent acks=all writes: broker 4 joins and holds nothing until partitions move to it; then
    broker 1 is retired by moving every replica it has off it and stopping it. Nothing acknowledged is lost and
    no partition of the topic is under-replicated at the end."""
    topic = unique("grow")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replica_assignment=[[1, 2], [2, 3], [3, 1]],
                                  config={"min.insync.replicas": "2"})])[topic].result(30)
    wait_for(lambda: all(leader >= 0 for leader, _, _ in partitions(admin, topic).values()), "leaders")
    load = Load(cluster.bootstrap, topic).start()
    try:
        cluster.add_broker(4)
        cluster.wait_for_brokers(4)
        wait_for(lambda: sum(len(a) for a in load.acked.values()) > 300, "writes")
        assert not any(4 in log_dirs_holding(cluster, topic, p) for p in range(PARTITIONS))
        assert all(4 not in replicas for _, replicas, _ in partitions(admin, topic).values())

        plan = plan_file(tmp_path, {(topic, 0): [4, 2], (topic, 2): [3, 4]})
        executed = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute",
                        "--reassignment-json-file", str(plan))
        assert "Successfully started partition reassignments" in executed
        wait_for(lambda: not ongoing(cluster), "the moves to complete")
        wait_for(lambda: partitions(admin, topic) == {0: (4, [4, 2], [2, 4]), 1: (2, [2, 3], [2, 3]),
                                                     2: (3, [3, 4], [3, 4])}, "broker 4 to lead partition 0")
        wait_for(lambda: all(1 not in log_dirs_holding(cluster, topic, p) for p in range(PARTITIONS)),
                 "broker 1's logs of the topic to be deleted")
        cluster.broker(1).stop()
        before = sum(len(a) for a in load.acked.values())
        wait_for(lambda: sum(len(a) for a in load.acked.values()) > before + 100, "writes after retiring broker 1")
    finally:
        load.stop()
    assert check_acknowledged(cluster, load) > 300
    described = tool(jars, TOPICS, "--bootstrap-server", cluster.broker(2).bootstrap, "--describe", "--topic", topic,
                     "--under-replicated-partitions")
    assert described.strip() == ""
    cluster.broker(1).start()
    cluster.wait_for_brokers(4)


def test_a_throttled_move_copies_at_the_throttle_and_verify_removes_it(cluster, jars, tmp_path):
    """--throttle sets the rates on the brokers and the throttled replicas on the topic; the copy then goes at
    about that rate (Kafka's quota windows let the first ten seconds' worth through at once), and --verify,
    once the move is done, removes every throttle."""
    topic = unique("throttled")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1]])])[topic].result(30)
    wait_for(lambda: partitions(admin, topic)[0][0] == 1, "a leader")
    rate, size = 500_000, 9_000_000
    produce(cluster.bootstrap, topic, size // 10_000, size=10_000)
    plan = plan_file(tmp_path, {(topic, 0): [1, 2]})
    # The move starts throttled to 1 B/s (a fetch or so, then nothing), so that it is still in progress whenever
    # kafka-topics describes it: a JVM start takes 1.5 s here when idle, 16-23 s with six busy processes, while the
    # move at the rate measured takes ~8 s. The rate measured is set after, and the time counts from there.
    executed = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute",
                    "--reassignment-json-file", str(plan), "--throttle", "1")
    assert "The inter-broker throttle limit was set to 1 B/s" in executed
    configs = admin.describe_configs([ConfigResource("TOPIC", topic)])
    values = {k: v.value for k, v in next(iter(configs.values())).result(30).items()}
    assert values["leader.replication.throttled.replicas"] == "0:1"
    assert values["follower.replication.throttled.replicas"] == "0:2"
    # The rates it set on the moving replicas' brokers are described there, as Kafka 4.4 describes them.
    assert broker_throttles(admin, 1) == broker_throttles(admin, 2) == {
        "leader.replication.throttled.rate": "1", "follower.replication.throttled.rate": "1"}
    # kafka-topics shows the move in progress.
    described = tool(jars, TOPICS, "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", topic)
    assert "Replicas: 1,2" in described and "Adding Replicas: 2" in described, described
    assert ongoing(cluster), "the move at 1 B/s ended"
    started = time.monotonic()
    for broker in (1, 2):
        resource = ConfigResource("BROKER", str(broker), incremental_configs=[
            ConfigEntry(name, str(rate), incremental_operation=AlterConfigOpType.SET)
            for name in ("leader.replication.throttled.rate", "follower.replication.throttled.rate")])
        admin.incremental_alter_configs([resource])[resource].result(30)
    wait_for(lambda: not ongoing(cluster), "the throttled move to complete", timeout=120)
    took = time.monotonic() - started
    # Kafka's rate counts over at least 10 of its 11 one-second windows: about 10 s x rate passes at once,
    # the rest at the rate.
    expected = (size - 10 * rate) / rate
    print(f"the throttled move took {took:.1f} s ({expected:.1f} s expected)")
    assert took >= 0.8 * expected - 3, f"{size} bytes moved in {took:.1f} s under a {rate} B/s throttle"
    # Slower only by the machine (the test shares it): well within twice the throttle's time.
    assert took <= 2 * expected + 5, f"{size} bytes took {took:.1f} s under a {rate} B/s throttle"
    out = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--verify", "--reassignment-json-file",
               str(plan))
    assert "Clearing broker-level throttles on brokers" in out and f"Clearing topic-level throttles on topic {topic}" in out
    values = {k: v.value for k, v in next(iter(admin.describe_configs(
        [ConfigResource("TOPIC", topic)]).values())).result(30).items()}
    assert not values.get("leader.replication.throttled.replicas") and not values.get(
        "follower.replication.throttled.replicas")
    assert broker_throttles(admin, 1) == broker_throttles(admin, 2) == {}


def broker_throttles(admin: AdminClient, broker: int) -> dict[str, str]:
    """The replication throttle rates DescribeConfigs of ``broker`` shows (asked of that broker, as Kafka's tools do)."""
    described = next(iter(admin.describe_configs([ConfigResource("BROKER", str(broker))]).values())).result(30)
    return {k: v.value for k, v in described.items() if k.endswith("replication.throttled.rate")}


def controller_id(cluster: ClusterProcesses) -> int:
    from wire.messages import MetadataRequest

    broker = next(b for b in cluster.brokers.values() if b.alive)
    with RawClient(broker.bootstrap) as c:
        return c.request(MetadataRequest(topics=[]), 9).controller_id


@slow
def test_a_cancelled_move_goes_back_and_a_move_survives_its_controller(cluster, jars, tmp_path):
    """--cancel during a throttled move puts the original replicas back and deletes the new one's copy; a move
    whose controller is killed meanwhile is finished by the next controller."""
    controller = controller_id(cluster)
    others = sorted(set(cluster.brokers) - {controller})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    cancelled, resumed = unique("cancelled"), unique("resumed")
    for topic in (cancelled, resumed):
        admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[others[0]]])])[topic].result(30)
        wait_for(lambda t=topic: partitions(admin, t)[0][0] == others[0], "a leader")
        produce(cluster.bootstrap, topic, 1500, size=10_000)  # 15 MB: a 1 MB/s throttle holds the copy back
    before = read_partition(cluster.bootstrap, resumed, 0)

    plan = plan_file(tmp_path, {(cancelled, 0): [others[0], others[1]]})
    tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", str(plan),
         "--throttle", "1000000")
    assert ongoing(cluster) == {(cancelled, 0): ([others[0], others[1]], [others[1]], [])}
    out = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--cancel", "--reassignment-json-file",
               str(plan))
    assert f"Successfully cancelled reassignment of {cancelled}-0" in out or "Successfully cancelled" in out, out
    assert ongoing(cluster) == {}
    wait_for(lambda: partitions(admin, cancelled)[0] == (others[0], [others[0]], [others[0]]), "the old replicas")
    wait_for(lambda: log_dirs_holding(cluster, cancelled, 0) == {others[0]}, "the cancelled copy to be deleted")

    plan = plan_file(tmp_path, {(resumed, 0): [others[1]]})
    tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", str(plan),
         "--throttle", "1000000")
    cluster.broker(controller).kill()
    wait_for(lambda: controller_id(cluster) not in (-1, controller), "another controller")
    wait_for(lambda: partitions(admin, resumed)[0] == (others[1], [others[1]], [others[1]]), "the move to finish",
             timeout=90)
    assert read_partition(cluster.bootstrap, resumed, 0) == before
    cluster.broker(controller).start()
    cluster.wait_for_brokers(len(cluster.brokers))
