"""Kafka's checks and messages for dynamic broker config changes, and the effective config they make."""

from __future__ import annotations

import pytest

from pykbroker.config import Config
from pykbroker.dynamic_config import (
    APPEND,
    DELETE,
    SET,
    SUBTRACT,
    DynamicBrokerConfig,
    DynamicConfigError,
    apply_incremental,
    controller_check,
    java_properties_order,
    validate,
)


def refusal(props: dict[str, str], per_broker: bool = False) -> tuple[int, str | None]:
    with pytest.raises(DynamicConfigError) as info:
        validate(props, per_broker)
    return info.value.code, info.value.message


@pytest.mark.parametrize("props, per_broker, expected", [
    ({"num.partitions": "3"}, False, "Cannot update these configs dynamically: [num.partitions]"),
    # the order of Kafka's message: a java.util.Properties' iteration order
    ({"log.dirs": "/x", "num.partitions": "3"}, True,
     "Cannot update these configs dynamically: [num.partitions, log.dirs]"),
    ({"log.retention.ms": "soon"}, False,
     "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"),
    ({"log.segment.bytes": "10"}, False,
     "Invalid value 10 for configuration log.segment.bytes: Value must be at least 1048576"),
    ({"log.cleaner.min.cleanable.ratio": "2.5"}, False,
     "Invalid value 2.5 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"),
    ({"compression.type": "brotli"}, False, "Invalid value brotli for configuration compression.type: String must "
     "be one of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"unclean.leader.election.enable": "maybe"}, False, "Invalid value maybe for configuration "
     "unclean.leader.election.enable: Expected value to be either true or false"),
    ({"ssl.keystore.type": "PKCS12"}, True, "These security configs can be dynamically updated only per-listener "
     "using the listener prefix: [ssl.keystore.type]"),
    ({"listener.name.plaintext.ssl.keystore.type": "PKCS12"}, False, "Cannot update these configs at default "
     "cluster level, broker id must be specified: [listener.name.plaintext.ssl.keystore.type]"),
    # a KRaft broker cannot add or remove listeners at runtime
    ({"listeners": "PLAINTEXT://127.0.0.1:9093"}, True, "Invalid dynamic configuration"),
])
def test_refusals_carry_kafkas_messages(props, per_broker, expected):
    assert refusal(props, per_broker) == (42, expected)


def test_per_broker_listener_and_sasl_configs_pass():
    validate({"listener.name.plaintext.ssl.keystore.type": "PKCS12", "sasl.kerberos.min.time.before.relogin": "58000",
              "listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN", "ssl.client.auth": "required"},
             per_broker=True)


def test_a_listener_reconfiguration_is_refused_while_the_listeners_own_configs_changed():
    """DynamicListenerConfig compares a listener's prefixed configs with those the broker started with."""
    from pykbroker.config import Config
    from pykbroker.dynamic_config import DynamicBrokerConfig
    static = Config({"listeners": "PLAINTEXT://127.0.0.1:9092"})
    dynamic = DynamicBrokerConfig(static, {}, {"listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN"})
    dynamic.check_applicable({}, {"listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN",
                                  "message.max.bytes": "2000"})  # not a listener-reconfigurable name
    with pytest.raises(DynamicConfigError, match=r"existing listener ListenerName\(PLAINTEXT\)"):
        dynamic.check_applicable({}, {"listener.name.plaintext.sasl.enabled.mechanisms": "PLAIN",
                                      "sasl.kerberos.min.time.before.relogin": "1000"})
    DynamicBrokerConfig(static, {}, {}).check_applicable({}, {"sasl.kerberos.min.time.before.relogin": "1000"})


def test_dynamic_and_custom_configs_pass():
    validate({"log.retention.ms": "1000", "message.max.bytes": "100", "my.custom.config": "x",
              "leader.replication.throttled.rate": "10"}, per_broker=False)


def test_incremental_operations_start_from_kafkas_list_default():
    assert apply_incremental({}, [("log.cleanup.policy", APPEND, "compact")]) == {"log.cleanup.policy": "delete,compact"}
    assert apply_incremental({}, [("log.cleanup.policy", SUBTRACT, "delete")]) == {"log.cleanup.policy": ""}
    assert apply_incremental({"a": "1"}, [("a", DELETE, None), ("b", SET, "2")]) == {"b": "2"}
    with pytest.raises(DynamicConfigError) as info:
        apply_incremental({}, [("log.retention.ms", APPEND, "5")])
    assert (info.value.code, info.value.message) == (
        40, "Config value append is not allowed for config key: log.retention.ms")
    with pytest.raises(DynamicConfigError) as info:
        apply_incremental({}, [("log.retention.ms", SET, "5"), ("x", 7, "1")])
    assert (info.value.code, info.value.message) == (42, "Unknown operations type 7")
    with pytest.raises(DynamicConfigError) as info:
        apply_incremental({}, [("no.such.config", APPEND, "5")])
    assert (info.value.code, info.value.message) == (40, "Unknown config name: no.such.config")  # Kafka 4.4


def test_elr_keeps_min_insync_replicas_cluster_wide():
    with pytest.raises(DynamicConfigError, match="Broker-level min.insync.replicas cannot be altered"):
        controller_check("1", {}, {"min.insync.replicas": "2"}, ["min.insync.replicas"], elr_enabled=True)
    with pytest.raises(DynamicConfigError, match="Cluster-level min.insync.replicas cannot be removed"):
        controller_check("", {"min.insync.replicas": "1"}, {}, [], elr_enabled=True)
    controller_check("", {"min.insync.replicas": "1"}, {"min.insync.replicas": "2"}, ["min.insync.replicas"], True)
    controller_check("1", {}, {"min.insync.replicas": "2"}, ["min.insync.replicas"], elr_enabled=False)


def test_layers_per_broker_over_default_over_static_and_synonyms_hidden():
    static = Config({"log.retention.hours": "100", "message.max.bytes": "5000"})
    dynamic = DynamicBrokerConfig(static, {"log.retention.ms": "7200000", "message.max.bytes": "4000",
                                           "num.partitions": "9", "custom": "x"},
                                  {"log.retention.ms": "3600000"})
    assert dynamic.current.log_retention_ms == 3_600_000
    assert dynamic.current.message_max_bytes == 4000
    assert dynamic.current.num_partitions == 1  # a static config stored by mistake is ignored, as Kafka does
    assert dynamic.default == {"log.retention.ms": "7200000", "message.max.bytes": "4000", "custom": "x"}
    dynamic.update({}, {})
    assert dynamic.current.log_retention_ms == 100 * 3_600_000


def test_java_properties_order():
    assert java_properties_order(["log.dirs", "num.partitions"]) == ["num.partitions", "log.dirs"]
