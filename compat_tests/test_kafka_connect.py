"""Kafka Connect 4.4 in distributed mode on pykbroker, judged by Apache Kafka 4.4 running the same workers.

Two workers (org.apache.kafka.connect.cli.ConnectDistributed) in one group create their internal config, offset
and status topics, run the FileStream source (a file into a topic) and sink (the topic into a file) connectors,
and move them through a worker killed with -9 (its tasks reassigned after scheduled.rebalance.max.delay.ms) and
its return (an incremental cooperative rebalance with the ``sessioned`` protocol, version 2: signed requests).
With at_least_once every input line reaches the output file; with exactly-once source support (KIP-618:
transactions, zombie fencing, read_committed offset reads) the topic read with read_committed holds every
line exactly once, in order, across a worker killed with -9 mid-run.

Every scenario runs on pykbroker and on Kafka 4.4 and their observations (internal topics' configs, the REST
status, the group protocol, the output) must be equal. All of it is minutes of JVM work: it runs with
PYKBROKER_CONNECT_SLOW=1 (``make test-connect-slow``), on one node and on a 3-broker cluster.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from compat_tests.conftest import KAFKA_44, judge_jars, kafka_cluster, pykbroker_cluster
from compat_tests.connect_workers import ConnectWorker, connect_classpath
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.testing import BrokerProcess

SLOW = os.environ.get("PYKBROKER_CONNECT_SLOW") == "1"
pytestmark = pytest.mark.skipif(not SLOW, reason="set PYKBROKER_CONNECT_SLOW=1 (make test-connect-slow)")
LINES = 300  # per round; three rounds: before, during and after the kill -9
SOURCE = "LineSource"
SINK = "LineSink"
_JOINED = re.compile(r"Joined group at generation \d+ with protocol version (\d+)")


@pytest.fixture(scope="module")
def jars() -> str:
    found = connect_classpath()
    if found is None:
        pytest.skip("java, javac or Maven is missing: Kafka Connect cannot run")
    return found


@pytest.fixture(scope="module")
def kafka_single(tmp_path_factory):
    kafka = KafkaBroker(judge_jars(KAFKA_44), tmp_path_factory.mktemp("kafka-single"))
    kafka.start()
    try:
        yield kafka.bootstrap
    finally:
        kafka.kill()
        kafka.close()


@pytest.fixture(scope="module")
def pykbroker_single(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("pykbroker-single") / "broker") as broker:
        yield broker.bootstrap


@pytest.fixture(scope="module")
def kafka_three(tmp_path_factory):
    for cluster in kafka_cluster(judge_jars(KAFKA_44), tmp_path_factory.mktemp("kafka-three")):
        yield cluster.bootstrap


@pytest.fixture(scope="module")
def pykbroker_three(tmp_path_factory):
    for cluster in pykbroker_cluster(tmp_path_factory.mktemp("pykbroker-three")):
        yield cluster.bootstrap


TARGETS = {"single": ("kafka_single", "pykbroker_single", 1), "cluster": ("kafka_three", "pykbroker_three", 3)}


def worker_props(bootstrap: str, group: str, replication: int, **more: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "group.id": group, "rest.advertised.host.name": "127.0.0.1",
            "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            "config.storage.replication.factor": str(replication),
            "offset.storage.replication.factor": str(replication),
            "status.storage.replication.factor": str(replication),
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "offset.flush.interval.ms": "500", "scheduled.rebalance.max.delay.ms": "4000",
            "plugin.discovery": "only_scan", **more}


def internal_topics(bootstrap: str, group: str) -> dict[str, dict]:
    """Each internal topic's partitions, replication factor and cleanup.policy (as the workers created them)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = [f"{group}-{kind}" for kind in ("configs", "offsets", "status")]
    meta = admin.list_topics(timeout=30).topics
    configs = {}
    for resource, future in admin.describe_configs([ConfigResource("topic", n) for n in names]).items():
        configs[resource.name] = future.result(30)
    return {n.rsplit("-", 1)[1]: {"partitions": len(meta[n].partitions),
                                  "replication": len(meta[n].partitions[0].replicas),
                                  "cleanup.policy": configs[n]["cleanup.policy"].value}
            for n in names}


def append_lines(path: Path, first: int, count: int) -> list[str]:
    lines = [f"line-{i:05d}" for i in range(first, first + count)]
    with open(path, "a") as f:
        f.write("".join(line + "\n" for line in lines))
    return lines


def read_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_until(condition, timeout: float, what: str, workers: list[ConnectWorker]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            logs = "\n".join(f"--- {w.log_path.name}\n{w.log(30)}" for w in workers)
            raise TimeoutError(f"no {what} after {timeout} s\n{logs}")
        time.sleep(0.3)


def task_workers(status: dict) -> set[str]:
    return {t["worker_id"] for t in status["tasks"]}


def shape(status: dict) -> dict:
    """A connector status without worker ids (which name each side's ports)."""
    return {"connector": status["connector"]["state"], "tasks": [(t["id"], t["state"]) for t in status["tasks"]],
            "type": status.get("type")}


def file_pipeline(jars: str, bootstrap: str, root: Path, replication: int) -> dict:
    """The at_least_once scenario: line source and sink through a kill -9 and a rejoin; its observations."""
    group = f"connect-{uuid.uuid4().hex[:8]}"
    topic = f"{group}-lines"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, replication)])[topic].result(30)
    source_file, sink_file = root / f"{group}-in.txt", root / f"{group}-out.txt"
    source_file.touch()
    props = worker_props(bootstrap, group, replication)
    workers = [ConnectWorker(jars, root, f"{group}-w{i}", props) for i in range(2)]
    observed: dict = {}
    try:
        for w in workers:
            w.start()
        a, b = workers
        observed["internal_topics"] = internal_topics(bootstrap, group)
        a.request("PUT", "/connectors/source/config", {"connector.class": SOURCE, "tasks.max": "1",
                                                       "file": str(source_file), "topic": topic})
        a.request("PUT", "/connectors/sink/config", {"connector.class": SINK, "tasks.max": "1",
                                                     "file": str(sink_file), "topics": topic})
        ids = {w.url.removeprefix("http://") for w in workers}
        observed["source_status"] = shape(a.wait_running("source", 1))
        observed["sink_status"] = shape(a.wait_running("sink", 1))
        written = append_lines(source_file, 0, LINES)
        wait_until(lambda: set(written) <= set(read_lines(sink_file)), 120, "first round in the sink file", workers)
        # Both workers hold work: kill -9 the one that runs the source task
        on = task_workers(a.status("source") or {})
        victim = next(w for w in workers if w.url.removeprefix("http://") in on)
        survivor = next(w for w in workers if w is not victim)
        victim.kill()
        written += append_lines(source_file, LINES, LINES)
        alive = {survivor.url.removeprefix("http://")}
        observed["source_after_kill"] = shape(survivor.wait_running("source", 1, 120, workers=alive))
        observed["sink_after_kill"] = shape(survivor.wait_running("sink", 1, 120, workers=alive))
        wait_until(lambda: set(written) <= set(read_lines(sink_file)), 120, "second round in the sink file",
                   [survivor])
        victim.start()
        victim.wait_for(lambda: sorted(victim.request("GET", "/connectors")) == ["sink", "source"], 120,
                        "the restarted worker to see both connectors")
        written += append_lines(source_file, 2 * LINES, LINES)
        wait_until(lambda: set(written) <= set(read_lines(sink_file)), 120, "third round in the sink file", workers)
        observed["source_final"] = shape(survivor.wait_running("source", 1, 60))
        observed["sink_final"] = shape(survivor.wait_running("sink", 1, 60))
        assert ids >= task_workers(survivor.status("source") or {})
        got = read_lines(sink_file)
        observed["lost"] = sorted(set(written) - set(got))
        observed["unexpected"] = sorted(set(got) - set(written))[:5]
        observed["protocols"] = sorted({m.group(1) for w in workers for m in _JOINED.finditer(w.log_path.read_text())})
        for name in ("source", "sink"):
            a.request("DELETE", f"/connectors/{name}")
    finally:
        for w in workers:
            w.kill()
    return observed


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_file_connectors_through_a_kill_and_a_rebalance(request, jars, tmp_path, mode):
    kafka_fixture, pykbroker_fixture, replication = TARGETS[mode]
    (tmp_path / "kafka").mkdir()
    (tmp_path / "pykbroker").mkdir()
    expected = file_pipeline(jars, request.getfixturevalue(kafka_fixture), tmp_path / "kafka", replication)
    got = file_pipeline(jars, request.getfixturevalue(pykbroker_fixture), tmp_path / "pykbroker", replication)
    assert expected["lost"] == [] and expected["protocols"] == ["2"], expected
    assert got == expected


def committed_values(bootstrap: str, topic: str, want: set[str], timeout: float) -> list[str]:
    """The topic's values as a read_committed consumer reads them, once every value of ``want`` is there."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assigned-manually",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[str] = []
    deadline = time.monotonic() + timeout
    try:
        while not want <= set(values) and time.monotonic() < deadline:
            for message in consumer.consume(500, 0.5):
                if message.error() is None:
                    values.append(message.value().decode())
    finally:
        consumer.close()
    return values


def exactly_once_pipeline(jars: str, bootstrap: str, root: Path, replication: int) -> dict:
    """KIP-618: the source connector with exactly.once.support=required through a worker killed with -9 while
    lines arrive; the topic read with read_committed holds every line once, in order."""
    group = f"eos-{uuid.uuid4().hex[:8]}"
    topic = f"{group}-lines"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, replication)])[topic].result(30)
    source_file = root / f"{group}-in.txt"
    source_file.touch()
    props = worker_props(bootstrap, group, replication, **{"exactly.once.source.support": "enabled"})
    workers = [ConnectWorker(jars, root, f"{group}-w{i}", props) for i in range(2)]
    observed: dict = {}
    try:
        for w in workers:
            w.start()
        a = workers[0]
        observed["internal_topics"] = internal_topics(bootstrap, group)
        a.request("PUT", "/connectors/source/config", {
            "connector.class": SOURCE, "tasks.max": "1", "file": str(source_file), "topic": topic,
            "exactly.once.support": "required", "transaction.boundary": "poll"})
        observed["source_status"] = shape(a.wait_running("source", 1))
        written = append_lines(source_file, 0, LINES)
        got = committed_values(bootstrap, topic, set(written), 120)
        observed["first_round_exact"] = got == written
        victim = next(w for w in workers if w.url.removeprefix("http://") in task_workers(a.status("source") or {}))
        survivor = next(w for w in workers if w is not victim)
        more: list[str] = []

        def trickle() -> None:  # lines keep arriving while the worker dies
            for first in range(LINES, 2 * LINES, 10):
                more.extend(append_lines(source_file, first, 10))
                time.sleep(0.02)

        writer = threading.Thread(target=trickle)
        writer.start()
        time.sleep(1.0)
        victim.kill()
        writer.join()
        written += more
        alive = {survivor.url.removeprefix("http://")}
        observed["source_after_kill"] = shape(survivor.wait_running("source", 1, 120, workers=alive))
        written += append_lines(source_file, 2 * LINES, LINES)
        got = committed_values(bootstrap, topic, set(written), 180)
        observed["lost"] = sorted(set(written) - set(got))
        observed["duplicates"] = sorted({v for v in got if got.count(v) > 1})[:10]
        observed["in_order"] = got == written
        observed["protocols"] = sorted({m.group(1) for w in workers for m in _JOINED.finditer(w.log_path.read_text())})
        survivor.request("DELETE", "/connectors/source")
    finally:
        for w in workers:
            w.kill()
    return observed


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("mode", ["single", "cluster"])
def test_exactly_once_source_through_a_kill(request, jars, tmp_path, mode):
    kafka_fixture, pykbroker_fixture, replication = TARGETS[mode]
    (tmp_path / "kafka").mkdir()
    (tmp_path / "pykbroker").mkdir()
    expected = exactly_once_pipeline(jars, request.getfixturevalue(kafka_fixture), tmp_path / "kafka", replication)
    got = exactly_once_pipeline(jars, request.getfixturevalue(pykbroker_fixture), tmp_path / "pykbroker",
                                replication)
    assert expected["lost"] == [] and expected["duplicates"] == [] and expected["in_order"], expected
    assert got == expected
