"""pytest plugin: a real Kafka broker (pykbroker) for any project's tests, no Docker, no JVM.

Installed with pykbroker (the ``pytest11`` entry point ``pykbroker``; ``-p no:pykbroker`` turns it off).

Fixtures:
- ``kafka_broker`` (session): a broker process on a free port with a temporary data dir. It is a
  ``KafkaBrokerFixture``: ``.bootstrap`` ("127.0.0.1:PORT") and the admin helper's ``create_topic``,
  ``delete_topic``, ``list_topics``. Under pytest-xdist each worker gets a broker of its own.
- ``kafka_topic`` (function): the name of a fresh topic, created before the test and deleted after it;
  ``@pytest.mark.kafka_topic(partitions=3, config={...})`` shapes it.
- ``kafka_cluster`` (session): ZooKeeper plus ``--kafka-cluster-size`` brokers (needs java; skipped
  without it). A ``KafkaClusterFixture``: ``.bootstrap``, ``.processes`` (restart or kill brokers), admin.

Options (command line, or the ini setting in brackets):
  --kafka-partitions N          [kafka_partitions]          partitions of kafka_topic and auto-created topics
  --kafka-auto-create BOOL      [kafka_auto_create_topics]  auto.create.topics.enable (default true, as Kafka)
  --kafka-broker-property K=V   [kafka_broker_properties]   any broker property; repeatable (ini: one a line)
  --kafka-cluster-size N        [kafka_cluster_size]        brokers of kafka_cluster (default 3)
"""

from __future__ import annotations

import re
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# Nothing of the broker (wire codec, admin client) is imported until a fixture is used: the plugin loads
# in every pytest run of every project that installs pykbroker.

# Kafka's legal topic name characters and length (Topic.validate).
_TOPIC_ILLEGAL = re.compile(r"[^a-zA-Z0-9._-]+")
_TOPIC_MAX_LENGTH = 249


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pykbroker", "Kafka broker fixtures (pykbroker)")
    group.addoption("--kafka-partitions", type=int, default=None,
                    help="partitions of kafka_topic and of auto-created topics (ini: kafka_partitions; default 1)")
    group.addoption("--kafka-auto-create", choices=["true", "false"], default=None,
                    help="auto.create.topics.enable of the brokers (ini: kafka_auto_create_topics; default true)")
    group.addoption("--kafka-broker-property", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker property (repeatable; after the ini setting kafka_broker_properties)")
    group.addoption("--kafka-cluster-size", type=int, default=None,
                    help="brokers of the kafka_cluster fixture (ini: kafka_cluster_size; default 3)")
    parser.addini("kafka_partitions", "partitions of kafka_topic and of auto-created topics", default="1")
    parser.addini("kafka_auto_create_topics", "auto.create.topics.enable of the brokers", type="bool", default=True)
    parser.addini("kafka_broker_properties", "broker properties, KEY=VALUE one a line", type="linelist", default=[])
    parser.addini("kafka_cluster_size", "brokers of the kafka_cluster fixture", default="3")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kafka_topic(partitions=None, config=None): shape the kafka_topic fixture's topic")


class KafkaSettings:
    """The plugin's options resolved: command line over ini over defaults."""

    def __init__(self, config: pytest.Config) -> None:
        opt = config.getoption
        self.partitions = int(opt("--kafka-partitions") or config.getini("kafka_partitions"))
        auto = opt("--kafka-auto-create")
        self.auto_create = auto == "true" if auto is not None else bool(config.getini("kafka_auto_create_topics"))
        self.cluster_size = int(opt("--kafka-cluster-size") or config.getini("kafka_cluster_size"))
        self.properties: dict[str, str] = {
            # a consumer group's first join answers at once, as testcontainers' Kafka sets it
            "group.initial.rebalance.delay.ms": "0",
            "num.partitions": str(self.partitions),
            "auto.create.topics.enable": str(self.auto_create).lower(),
        }
        for item in [*config.getini("kafka_broker_properties"), *opt("--kafka-broker-property")]:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise pytest.UsageError(f"a Kafka broker property must be KEY=VALUE, not {item!r}")
            self.properties[key.strip()] = value.strip()


class KafkaBrokerFixture:
    """What ``kafka_broker`` yields: the address of a running broker and topic administration."""

    def __init__(self, process) -> None:
        from pykbroker.admin import KafkaAdmin

        self.process = process  # a pykbroker.testing.BrokerProcess
        self.admin = KafkaAdmin(process.bootstrap)

    @property
    def bootstrap(self) -> str:
        """"127.0.0.1:PORT": ``bootstrap.servers`` for any client."""
        return self.process.bootstrap

    bootstrap_servers = bootstrap

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def data_dir(self) -> Path:
        return self.process.data_dir

    def log(self) -> str:
        """The broker's log so far."""
        return self.process.log()

    def create_topic(self, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> str:
        self.admin.create_topic(name, partitions, config=config)
        return name

    def delete_topic(self, name: str) -> None:
        self.admin.delete_topic(name, missing_ok=True)

    def list_topics(self, *, internal: bool = False) -> list[str]:
        return self.admin.list_topics(internal=internal)


class KafkaClusterFixture(KafkaBrokerFixture):
    """What ``kafka_cluster`` yields: ``processes`` is the ``pykbroker.testing.ClusterProcesses``."""

    def __init__(self, processes) -> None:
        from pykbroker.admin import KafkaAdmin

        self.processes = processes
        self.admin = KafkaAdmin(processes.bootstrap)

    @property
    def bootstrap(self) -> str:
        return self.processes.bootstrap

    bootstrap_servers = bootstrap

    @property
    def port(self) -> int:
        return next(iter(self.processes.brokers.values())).port

    @property
    def data_dir(self) -> Path:
        return self.processes.root

    def log(self) -> str:
        return "\n".join(f"--- broker {i} ---\n{b.log()}" for i, b in self.processes.brokers.items())


@pytest.fixture(scope="session")
def kafka_settings(pytestconfig: pytest.Config) -> KafkaSettings:
    return KafkaSettings(pytestconfig)


@pytest.fixture(scope="session")
def kafka_broker(kafka_settings: KafkaSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBrokerFixture]:
    """A pykbroker process for the session (for each xdist worker), stopped at its end."""
    from pykbroker.testing import BrokerProcess

    process = BrokerProcess(tmp_path_factory.mktemp("kafka_broker"), dict(kafka_settings.properties))
    with process:
        yield KafkaBrokerFixture(process)
        if not process.alive:
            pytest.fail(f"the Kafka broker died during the tests; its log:\n{process.log()[-4000:]}")


@pytest.fixture(scope="session")
def kafka_cluster(kafka_settings: KafkaSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaClusterFixture]:
    """ZooKeeper and ``kafka_cluster_size`` brokers (node ids 1..N) for the session."""
    if shutil.which("java") is None:
        pytest.skip("kafka_cluster needs java on PATH: its ZooKeeper runs on the JVM")
    from pykbroker.testing import ClusterProcesses

    size = kafka_settings.cluster_size
    properties = {"default.replication.factor": str(min(3, size)),
                  "offsets.topic.replication.factor": str(min(3, size)),
                  "share.coordinator.state.topic.replication.factor": str(min(3, size)), **kafka_settings.properties}
    with ClusterProcesses(tmp_path_factory.mktemp("kafka_cluster"), size=size, overrides=properties) as processes:
        yield KafkaClusterFixture(processes)


def topic_name_for(nodeid: str) -> str:
    """A legal, unique Kafka topic name derived from a test's node id."""
    stem = _TOPIC_ILLEGAL.sub("-", nodeid.rsplit("::", 1)[-1]).strip("-.") or "topic"
    suffix = uuid.uuid4().hex[:8]
    return f"{stem[:_TOPIC_MAX_LENGTH - len(suffix) - 1]}-{suffix}"


@pytest.fixture
def kafka_topic(request: pytest.FixtureRequest, kafka_broker: KafkaBrokerFixture,
                kafka_settings: KafkaSettings) -> Iterator[str]:
    """The name of a topic made for this test (on ``kafka_broker``), deleted after it."""
    marker = request.node.get_closest_marker("kafka_topic")
    kwargs = dict(marker.kwargs) if marker else {}
    partitions = kwargs.get("partitions") or kafka_settings.partitions
    name = topic_name_for(request.node.nodeid)
    kafka_broker.create_topic(name, partitions, config=kwargs.get("config"))
    yield name
    if kafka_broker.process.alive:
        kafka_broker.delete_topic(name)
