"""The pytest plugin, as a user's project sees it: pytester runs a small sample project (confluent-kafka
and kafka-python against ``kafka_broker`` / ``kafka_topic``) in a fresh pytest process, with the plugin's
options and ini settings, under pytest-xdist, and against ``kafka_cluster``."""

from __future__ import annotations

import importlib.metadata
import shutil
import tomllib
from pathlib import Path

import pytest

from pykbroker.pytest_plugin import topic_name_for

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

SAMPLE = '''
import json, os, time, uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import MessageSizeTooLargeError

SEEN = []


def test_confluent_produce_and_group_consume(kafka_broker, kafka_topic):
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    for i in range(5):
        producer.produce(kafka_topic, f"c{i}".encode())
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": kafka_broker.bootstrap, "group.id": "g-" + kafka_topic,
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([kafka_topic])
    got, deadline = [], time.monotonic() + 30
    while len(got) < 5 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert sorted(got) == [f"c{i}".encode() for i in range(5)]
    SEEN.append(kafka_topic)


def test_kafka_python_produce_and_group_consume(kafka_broker, kafka_topic):
    producer = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap)
    for i in range(5):
        producer.send(kafka_topic, f"k{i}".encode()).get(10)
    producer.close()
    consumer = KafkaConsumer(kafka_topic, bootstrap_servers=kafka_broker.bootstrap, group_id="g-" + kafka_topic,
                             auto_offset_reset="earliest")
    got, deadline = [], time.monotonic() + 60  # not consumer_timeout_ms: its clock runs while the group forms
    while len(got) < 5 and time.monotonic() < deadline:
        got += [m.value for records in consumer.poll(timeout_ms=500).values() for m in records]
    consumer.close()
    assert sorted(got) == [f"k{i}".encode() for i in range(5)]


def test_each_test_gets_a_fresh_topic_and_the_last_one_is_gone(kafka_broker, kafka_topic):
    assert SEEN and SEEN[0] != kafka_topic
    topics = kafka_broker.list_topics()
    assert kafka_topic in topics and SEEN[0] not in topics


@pytest.mark.kafka_topic(partitions=3, config={"cleanup.policy": "compact"})
def test_the_marker_shapes_the_topic(kafka_broker, kafka_topic):
    assert kafka_broker.admin.partitions(kafka_topic) == 3


def test_admin_helper(kafka_broker):
    name = "admin-" + uuid.uuid4().hex[:6]
    kafka_broker.create_topic(name, partitions=2)
    assert name in kafka_broker.list_topics()
    assert kafka_broker.admin.partitions(name) == 2
    kafka_broker.delete_topic(name)
    assert name not in kafka_broker.list_topics()


def test_options_reach_the_broker(kafka_broker):
    # --kafka-partitions 2 and auto-create: a produce to a new topic creates it with 2 partitions
    name = "auto-" + uuid.uuid4().hex[:6]
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    producer.produce(name, b"x")
    assert producer.flush(15) == 0
    assert kafka_broker.admin.partitions(name) == 2
    # the ini setting kafka_broker_properties: message.max.bytes=2000 on the broker
    big = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, retries=0)
    with pytest.raises(MessageSizeTooLargeError):
        big.send(name, b"x" * 5000).get(10)
    big.close()

'''


@pytest.fixture(autouse=True)
def this_tree(monkeypatch) -> None:
    """The pytest processes pytester starts (and their brokers) import this tree's pykbroker."""
    import os

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))

CONFTEST = '''
import json, os

import pytest


@pytest.fixture(scope="session", autouse=True)
def report_worker(kafka_broker):
    """Which broker this process (an xdist worker, or the main one) used."""
    with open(os.environ["BROKERS_SEEN"], "a") as f:
        f.write(json.dumps([os.environ.get("PYTEST_XDIST_WORKER", "main"), kafka_broker.bootstrap]) + "\\n")
'''


def plugin_args() -> list[str]:
    """``-p pykbroker.pytest_plugin`` unless the entry point already loads it (pykbroker installed from
    this tree's pyproject), so the installed plugin is what runs when it exists."""
    installed = {ep.value for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "pykbroker.pytest_plugin" in installed else ["-p", "pykbroker.pytest_plugin"]


@pytest.fixture
def sample(pytester: pytest.Pytester, tmp_path, monkeypatch) -> pytest.Pytester:
    pytester.makepyfile(test_sample=SAMPLE)
    pytester.makeconftest(CONFTEST)
    pytester.makeini("[pytest]\nkafka_partitions = 2\nkafka_broker_properties =\n    message.max.bytes=2000\n")
    monkeypatch.setenv("BROKERS_SEEN", str(tmp_path / "brokers-seen.jsonl"))
    return pytester


def brokers_seen(tmp_path) -> dict[str, str]:
    import json

    return dict(json.loads(line) for line in (tmp_path / "brokers-seen.jsonl").read_text().splitlines())


def test_pytest_finds_the_plugin_through_the_declared_entry_point(pytester, tmp_path, monkeypatch):
    """An installed distribution carrying pyproject's ``pytest11`` entry points (as the wheel's
    entry_points.txt does) is enough: no ``-p``, no conftest."""
    import os

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert declared == {"pykbroker": "pykbroker.pytest_plugin"}
    dist = tmp_path / "site" / "pykbroker_entry_point_probe-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pykbroker-entry-point-probe\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), os.environ["PYTHONPATH"]]))
    pytester.makepyfile(test_found="def test_found(kafka_settings):\n    assert kafka_settings.partitions == 5\n")
    result = pytester.runpytest_subprocess("--kafka-partitions", "5")
    result.assert_outcomes(passed=1)
    assert "--kafka-broker-property" in pytester.runpytest_subprocess("--help").stdout.str()


def test_a_sample_project_runs_against_the_fixtures(sample, tmp_path):
    result = sample.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=6)
    assert list(brokers_seen(tmp_path)) == ["main"]


def test_command_line_options_override_the_ini(sample):
    sample.makepyfile(test_override='''
def test_override(kafka_broker, kafka_settings):
    assert kafka_settings.partitions == 4 and not kafka_settings.auto_create
    assert kafka_settings.properties["message.max.bytes"] == "3000"
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": kafka_broker.bootstrap}).list_topics("never-created", timeout=10)
    assert md.topics["never-created"].error is not None  # auto-create is off on the broker
''')
    result = sample.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", "test_override.py",
                                         "--kafka-partitions", "4", "--kafka-auto-create", "false",
                                         "--kafka-broker-property", "message.max.bytes=3000")
    result.assert_outcomes(passed=1)


def test_a_bad_property_is_a_usage_error(sample):
    result = sample.runpytest_subprocess(*plugin_args(), "--kafka-broker-property", "no-equals-sign")
    assert result.ret == pytest.ExitCode.USAGE_ERROR or "KEY=VALUE" in result.stderr.str() + result.stdout.str()


def test_under_xdist_each_worker_has_its_own_broker(sample, tmp_path):
    result = sample.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", "-n", "2",
                                         "-k", "confluent or admin or kafka_python or marker")
    result.assert_outcomes(passed=4)
    seen = brokers_seen(tmp_path)
    assert set(seen) == {"gw0", "gw1"}
    assert len(set(seen.values())) == 2  # a broker of its own for each worker


def test_kafka_cluster_without_java_is_skipped_with_a_reason(pytester, monkeypatch):
    pytester.makepyfile(test_c="def test_c(kafka_cluster):\n    pass\n")
    monkeypatch.setenv("PATH", "/nonexistent")
    result = pytester.runpytest_subprocess(*plugin_args(), "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*kafka_cluster needs java*"])


@pytest.mark.skipif(shutil.which("java") is None, reason="kafka_cluster needs java (ZooKeeper)")
def test_kafka_cluster_replicates_across_brokers(pytester):
    pytester.makepyfile(test_cluster='''
from confluent_kafka import Consumer, Producer, TopicPartition

def test_cluster(kafka_cluster):
    assert len(kafka_cluster.processes.brokers) == 2
    kafka_cluster.create_topic("replicated", partitions=2)
    producer = Producer({"bootstrap.servers": kafka_cluster.bootstrap, "acks": "all"})
    for i in range(4):
        producer.produce("replicated", str(i).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": kafka_cluster.bootstrap, "group.id": "x"})
    lows_highs = [consumer.get_watermark_offsets(TopicPartition("replicated", p), timeout=10) for p in (0, 1)]
    consumer.close()
    assert lows_highs == [(0, 2), (0, 2)]
''')
    result = pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", "--kafka-cluster-size", "2")
    result.assert_outcomes(passed=1)


def test_topic_names_are_legal_and_unique():
    a = topic_name_for("tests/test_x.py::test_y[param/with spaces:1]")
    b = topic_name_for("tests/test_x.py::test_y[param/with spaces:1]")
    assert a != b
    assert all(c.isalnum() or c in "._-" for c in a) and a.startswith("test_y-param-with-spaces-1")
    assert len(topic_name_for("t::" + "x" * 400)) == 249
