"""Several log dirs per broker in a real cluster (ZooKeeper and pykbroker processes), driven by Kafka 4.1's
own tools as operators type them: ``kafka-log-dirs --describe`` reports every replica in every dir, and
``kafka-reassign-partitions --execute`` with ``log_dirs`` in its JSON moves replicas between dirs of one
broker and places a new replica in a chosen dir (the tool asks before the replica exists and again until it
is there), then ``--verify`` reports the moves done; all under idempotent acks=all producers, every
acknowledged record read back. A failed dir takes only its own replicas offline: their leadership moves to
other brokers, while the broker keeps leading the partitions in its other dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.test_cluster_faults import PARTITIONS, Load, partition_state, read_partition, unique
from pykbroker.testing import ClusterProcesses, RawClient
from wire.messages import AlterReplicaLogDirsRequest
from wire.messages.alter_replica_log_dirs_request import AlterReplicaLogDir, AlterReplicaLogDirTopic

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka's tools need java"),
    pytest.mark.skipif(os.environ.get("PYKBROKER_LOG_DIRS_TESTS") != "1",
                       reason="minutes long: `make log-dirs` runs it (PYKBROKER_LOG_DIRS_TESTS=1)"),
]

JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand"
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


@pytest.fixture(scope="module")
def jars() -> Path:
    found = jars_dir()
    if found is None:
        pytest.skip("Kafka's jars are missing")
    return found


def tool(jars: Path, main_class: str, *args: str) -> str:
    done = subprocess.run([*JAVA, "-cp", f"{jars}/*", main_class, *args], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, f"{main_class} {args} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def wait_for(predicate, what: str, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def describe_log_dirs(jars: Path, bootstrap: str, brokers: str, topic: str) -> dict[int, dict[str, list[dict]]]:
    """kafka-log-dirs --describe: {broker: {log dir: [partition entries]}} (and every dir answered without error)."""
    out = tool(jars, LOG_DIRS, "--bootstrap-server", bootstrap, "--describe", "--broker-list", brokers,
               "--topic-list", topic)
    assert "Querying brokers for log directories information" in out, out
    report = json.loads(next(line for line in out.splitlines() if line.startswith("{")))
    assert report["version"] == 1
    result = {}
    for broker in report["brokers"]:
        for d in broker["logDirs"]:
            assert d["error"] is None, d
        result[broker["broker"]] = {d["logDir"]: d["partitions"] for d in broker["logDirs"]}
    return result


def where(report: dict[int, dict[str, list[dict]]], partition: str) -> dict[int, list[tuple[str, bool]]]:
    """{broker: [(log dir, isFuture)]} of ``partition`` ("topic-N") in a kafka-log-dirs report."""
    return {b: sorted((d, e["isFuture"]) for d, entries in dirs.items() for e in entries if e["partition"] == partition)
            for b, dirs in report.items()}


def two_dir_cluster(root: Path, size: int, **overrides: str) -> ClusterProcesses:
    cluster = ClusterProcesses(root, size=0, overrides={"replica.lag.time.max.ms": "5000", **overrides})
    cluster.start()
    for node in range(1, size + 1):
        base = root / f"broker-{node}"
        cluster.add_broker(node, {"log.dirs": f"{base}/a,{base}/b"})
    cluster.wait_for_brokers(size)
    return cluster


def test_kafka_log_dirs_and_reassign_with_log_dirs_under_load(jars, tmp_path):
    cluster = two_dir_cluster(tmp_path / "cluster", 3)
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topic = unique("dirs")
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS,
                                      replica_assignment=[[1, 2]] * PARTITIONS)])[topic].result(30)
        wait_for(lambda: all(leader == 1 for leader, _ in partition_state(admin, topic).values()), "leaders")
        load = Load(cluster.bootstrap, topic).start()
        wait_for(lambda: all(len(a) > 200 for a in load.acked.values()), "records acknowledged")

        report = describe_log_dirs(jars, cluster.bootstrap, "1,2,3", topic)
        dirs = {n: [str(tmp_path / "cluster" / f"broker-{n}" / d) for d in ("a", "b")] for n in (1, 2, 3)}
        assert {b: sorted(ds) for b, ds in report.items()} == dirs  # every dir of every broker
        for p in range(PARTITIONS):
            placed = where(report, f"{topic}-{p}")
            assert [len(placed[b]) for b in (1, 2, 3)] == [1, 1, 0] and not any(f for _, f in placed[1] + placed[2])
        entries = [e for dirs_ in report[1].values() for e in dirs_]
        assert all(e["size"] > 0 and e["offsetLag"] == 0 for e in entries), entries

        # Partition 0: broker 1's replica to its other dir, a new replica on broker 3 in its dir "b";
        # partition 1: broker 2's replica to its other dir. The rest stays.
        home = {(b, p): where(report, f"{topic}-{p}")[b][0][0] for b in (1, 2) for p in range(PARTITIONS)}
        other = {key: next(d for d in dirs[key[0]] if d != path) for key, path in home.items()}
        plan = {"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1, 3], "log_dirs": [other[(1, 0)], dirs[3][1]]},
            {"topic": topic, "partition": 1, "replicas": [1, 2], "log_dirs": ["any", other[(2, 1)]]}]}
        plan_path = tmp_path / "plan.json"
        plan_path.write_text(json.dumps(plan))
        executed = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute",
                        "--reassignment-json-file", str(plan_path), "--timeout", "60000")
        assert "Successfully started partition reassignment" in executed, executed

        def verified() -> str | None:
            out = tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--verify",
                       "--reassignment-json-file", str(plan_path))
            return None if "still in progress" in out or "not yet" in out.lower() else out

        out = wait_for(verified, "the reassignment and the moves to finish", 120)
        assert f"Reassignment of replica {topic}-0-3 completed successfully." in out, out
        assert f"Reassignment of replica {topic}-0-1 completed successfully." in out, out
        assert f"Reassignment of replica {topic}-1-2 completed successfully." in out, out

        report = describe_log_dirs(jars, cluster.bootstrap, "1,2,3", topic)
        assert where(report, f"{topic}-0") == {1: [(other[(1, 0)], False)], 2: [], 3: [(dirs[3][1], False)]}
        assert where(report, f"{topic}-1")[2] == [(other[(2, 1)], False)]
        assert where(report, f"{topic}-1")[1] == [(home[(1, 1)], False)]
        acked_before = {p: len(a) for p, a in load.acked.items()}
        wait_for(lambda: all(len(load.acked[p]) > acked_before[p] + 50 for p in range(PARTITIONS)), "more records")
        load.stop()
        assert load.failed == [], load.failed[:3]
        for p in range(PARTITIONS):
            stored = read_partition(cluster.bootstrap, topic, p)
            assert {v: o for o, v in stored if v in {a for _, a in load.acked[p]}} == {v: o for o, v in load.acked[p]}
            assert len(stored) == len({v for _, v in stored})  # no duplicates (idempotent producer)
    finally:
        cluster.close()


def test_a_failed_dir_takes_only_its_replicas_offline(tmp_path):
    """Broker 1 has two dirs; the small one (a tmpfs) fills up: the partition in it is led by another broker
    from then on, the one in the other dir stays led by broker 1 and keeps taking writes."""
    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    big = tmp_path / "big"
    cluster = ClusterProcesses(tmp_path / "cluster", size=0)
    try:
        cluster.start()
        cluster.add_broker(1, {"log.dirs": f"{big},{small}", "log.segment.bytes": "1048576"})
        cluster.add_broker(2)
        cluster.add_broker(3)
        cluster.wait_for_brokers(3)
        full, stay = unique("full"), unique("stay")
        with RawClient(cluster.broker(1).bootstrap) as c:  # where broker 1 is to create them (Kafka's answer:
            c.request(AlterReplicaLogDirsRequest(dirs=[  # UNKNOWN_TOPIC_OR_PARTITION, the dir remembered)
                AlterReplicaLogDir(path=str(small), topics=[AlterReplicaLogDirTopic(name=full, partitions=[0])]),
                AlterReplicaLogDir(path=str(big), topics=[AlterReplicaLogDirTopic(name=stay, partitions=[0])])]), 2)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for topic in (full, stay):
            admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[[1, 2, 3]])])[topic].result(30)
            wait_for(lambda t=topic: partition_state(admin, t).get(0, (-1, []))[0] == 1, f"broker 1 leading {topic}")
        assert (small / f"{full}-0").is_dir() and (big / f"{stay}-0").is_dir()
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                             "message.timeout.ms": 120_000, "linger.ms": 5})
        acked: dict[str, list[tuple[int, bytes]]] = {full: [], stay: []}
        failed: list[str] = []

        def delivered(err, msg) -> None:
            (failed.append(str(err)) if err else acked[msg.topic()].append((msg.offset(), msg.value())))

        value = b"x" * 20_000
        for i in range(400):  # 8 MB into the full dir: more than its 3 MiB
            producer.produce(full, value + str(i).encode(), partition=0, on_delivery=delivered)
            producer.produce(stay, b"s%d" % i, partition=0, on_delivery=delivered)
            producer.poll(0)
        assert producer.flush(120) == 0
        assert failed == [], failed[:3]
        assert partition_state(admin, full)[0][0] in (2, 3)  # its leadership left the failed dir
        assert partition_state(admin, stay)[0][0] == 1  # the other dir's partition is still led by broker 1
        for i in range(50):  # and broker 1 still takes its writes
            producer.produce(stay, b"after%d" % i, partition=0, on_delivery=delivered)
        assert producer.flush(60) == 0 and failed == []
        assert partition_state(admin, stay)[0][0] == 1
        for topic, count in ((full, 400), (stay, 450)):
            stored = read_partition(cluster.bootstrap, topic, 0)
            assert {v: o for o, v in stored} == {v: o for o, v in acked[topic]} and len(acked[topic]) == count
    finally:
        cluster.close()
        subprocess.run(["umount", "-l", str(small)], check=False)
