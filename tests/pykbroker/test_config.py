"""Config: Kafka property names, defaults, validation, properties-file parsing."""

from __future__ import annotations

import pytest

from pykbroker.config import Config, ConfigError, Listener, parse_properties


def test_defaults_give_a_single_node_on_localhost_9092():
    c = Config()
    assert c.node_id == 1
    assert c.listeners == (Listener("PLAINTEXT", "localhost", 9092),)
    assert c.advertised_listeners == c.listeners
    assert c.num_partitions == 1
    assert c.auto_create_topics_enable is True
    assert c.message_max_bytes == 1048588
    assert c.socket_request_max_bytes == 104857600
    assert c.log_retention_ms == 168 * 3_600_000


def test_unknown_property_is_named():
    with pytest.raises(ConfigError, match="unknown property 'num.partitons'"):
        Config({"num.partitons": "3"})


@pytest.mark.parametrize(
    ("prop", "value", "message"),
    [
        ("num.partitions", "zero", "num.partitions: expected an integer"),
        ("num.partitions", "0", "num.partitions: 0 is below the minimum 1"),
        ("auto.create.topics.enable", "yes", "auto.create.topics.enable: expected true or false"),
        ("listeners", "localhost:9092", "listeners: 'localhost:9092' is not of the form"),
        ("log.message.timestamp.type", "Now", "log.message.timestamp.type: 'Now' is not one of"),
    ],
)
def test_invalid_values_are_named(prop, value, message):
    with pytest.raises(ConfigError, match=message):
        Config({prop: value})


def test_retention_precedence_ms_over_minutes_over_hours():
    assert Config({"log.retention.hours": "1"}).log_retention_ms == 3_600_000
    assert Config({"log.retention.minutes": "2", "log.retention.hours": "1"}).log_retention_ms == 120_000
    assert Config({"log.retention.ms": "5", "log.retention.minutes": "2"}).log_retention_ms == 5


def test_properties_file_and_overrides(tmp_path):
    path = tmp_path / "server.properties"
    path.write_text(
        "# a comment\n! another\nnode.id=3\nlisteners = PLAINTEXT://127.0.0.1:9093,\\\n"
        "  INTERNAL://127.0.0.1:9094\nlog.dirs: /tmp/a,/tmp/b\nnum.network.threads=3\n"
    )
    c = Config.load(path, ["num.partitions=4", "node.id=5"])
    assert c.node_id == 5
    assert [lst.name for lst in c.listeners] == ["PLAINTEXT", "INTERNAL"]
    assert c.log_dirs == ("/tmp/a", "/tmp/b")
    assert c.num_partitions == 4
    assert c.inert == ["num.network.threads"]


def test_parse_properties_separators():
    assert parse_properties("a=1\nb: 2\nc 3\n") == {"a": "1", "b": "2", "c": "3"}


def test_topic_defaults_use_topic_config_names():
    d = Config({"log.segment.bytes": "2000000", "log.cleanup.policy": "compact"}).topic_defaults()
    assert d["segment.bytes"] == "2000000"
    assert d["cleanup.policy"] == "compact"
    assert d["max.message.bytes"] == "1048588"


def test_legacy_broker_id():
    assert Config({"broker.id": "7"}).node_id == 7
    assert Config({"broker.id": "7", "node.id": "2"}).node_id == 2


def test_connection_limits_per_address():
    config = Config({"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "127.0.0.1:2, localhost:5"})
    assert config["max.connections.per.ip"] == 0
    assert config.max_connections_per_ip_overrides == {"127.0.0.1": 5}  # localhost is 127.0.0.1: the last wins
    assert Config().max_connections_per_ip_overrides == {}
    with pytest.raises(ConfigError, match="can be set to zero only if max.connections.per.ip.overrides"):
        Config({"max.connections.per.ip": "0"})
    for bad in ("127.0.0.1", "127.0.0.1:x", ":3", "127.0.0.1:-1"):
        with pytest.raises(ConfigError, match="not of the form host:count"):
            Config({"max.connections.per.ip.overrides": bad})


def test_zookeeper_properties_default_as_in_kafka():
    c = Config()
    assert c.zookeeper_connect is None
    assert c.zookeeper_session_timeout_ms == 9000  # Kafka 4.4's broker.session.timeout.ms
    assert c.zookeeper_connection_timeout_ms == 9000  # unset: the session timeout
    c = Config({"zookeeper.connect": "h:2181/kafka", "zookeeper.session.timeout.ms": "6000",
                "zookeeper.connection.timeout.ms": "2000"})
    assert (c.zookeeper_connect, c.zookeeper_session_timeout_ms, c.zookeeper_connection_timeout_ms) == \
        ("h:2181/kafka", 6000, 2000)
