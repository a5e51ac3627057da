"""Every broker property Kafka 4.4 accepts is accepted here; the list is Kafka's own, read from its jars."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pykbroker.config import CONFIG_DEFS, Config
from pykbroker.kafka_broker_configs import KAFKA_BROKER_CONFIGS
from pykbroker.testing import BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
# Ours alone: the embedded store's cluster id and the ZooKeeper-mode connection (Kafka 3.9's names).
# Ours and not KafkaConfig's: ZooKeeper mode's (Kafka 3.9's, including its controlled-shutdown retries and
# leader-imbalance threshold), the cluster id, and the StandardAuthorizer's own
# configs (Kafka reads them from the broker's properties, outside its ConfigDef), and group.share.enable
# (Kafka 4.1-4.3's internal switch for share groups, gone in 4.4; kept so their configs still start).
OURS_ONLY = {"group.share.enable", "cluster.id", "zookeeper.connect", "zookeeper.connection.timeout.ms",
             "zookeeper.session.timeout.ms", "allow.everyone.if.no.acl.found", "super.users", "controlled.shutdown.max.retries",
             "controlled.shutdown.retry.backoff.ms", "leader.imbalance.per.broker.percentage",
             "metrics.port", "metrics.client.telemetry.enable", "console.listener", "console.write.actions.enable",
             "group.streams.topology.description.store.enable"}
# pykbroker's own Iceberg topics (pykbroker.iceberg).
OURS_ONLY |= {d.name for d in CONFIG_DEFS if d.name.startswith("iceberg.")}
# The schema registry served by the broker (pykbroker.schema_registry).
OURS_ONLY |= {"schema.registry.listeners", "schema.registry.topic", "schema.registry.authentication.method",
              "schema.registry.authorization.enable"}
# The registry the console decodes values with.
OURS_ONLY |= {"console.schema.registry.url"}


def test_the_two_lists_of_property_names_agree():
    ours = {d.name for d in CONFIG_DEFS}
    assert sorted(set(KAFKA_BROKER_CONFIGS) - ours) == []
    assert sorted(ours - set(KAFKA_BROKER_CONFIGS)) == sorted(OURS_ONLY)


@pytest.mark.parametrize("name", sorted(KAFKA_BROKER_CONFIGS))
def test_every_kafka_property_is_accepted_with_kafkas_default(name):
    key = KAFKA_BROKER_CONFIGS[name]
    value = key.default
    if value is None:  # no default: a value of the right type
        value = {"BOOLEAN": "true", "INT": "1", "SHORT": "1", "LONG": "1", "DOUBLE": "0.5"}.get(key.type, "x")
    if name in ("listeners", "advertised.listeners", "early.start.listeners"):
        value = "PLAINTEXT://127.0.0.1:9092"
    if name == "max.connections.per.ip" and value == "0":
        return
    Config({name: value})


def test_a_wrong_type_still_stops_the_start():
    from pykbroker.config import ConfigError
    with pytest.raises(ConfigError, match="remote.log.manager.thread.pool.size"):
        Config({"remote.log.manager.thread.pool.size": "many"})
    with pytest.raises(ConfigError, match="unknown property 'no.such.property'"):
        Config({"no.such.property": "1"})


def test_inert_properties_are_reported_once_at_start(tmp_path):
    overrides = {"log.initial.task.delay.ms": "0", "num.network.threads": "5", "sasl.kerberos.service.name": "kafka",
                 "remote.log.reader.max.pending.tasks": "100", "share.coordinator.load.buffer.size": "1048576"}
    with BrokerProcess(tmp_path / "b", overrides=overrides) as b:
        lines = [line for line in b.log().splitlines() if "accepted, no effect" in line]
    assert len(lines) == 1, lines
    for name in ("num.network.threads", "sasl.kerberos.service.name", "remote.log.reader.max.pending.tasks",
                 "share.coordinator.load.buffer.size"):
        assert name in lines[0]
    assert "log.initial.task.delay.ms" not in lines[0]  # applied: it sets when retention first runs


@pytest.mark.skipif(shutil.which("java") is None, reason="needs java and Kafka's jars")
def test_the_committed_list_is_what_kafkas_jars_define():
    check = subprocess.run([sys.executable, str(ROOT / "tools" / "generate_kafka_broker_configs.py"), "--check"],
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stderr
