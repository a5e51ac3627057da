"""The iceberg.* topic configs: parsing and its messages, and the admin APIs of a real broker handling them."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from pykbroker.iceberg.config import (
    IcebergConfigError,
    IcebergTopicConfig,
    PartitionField,
    parse_partition_spec,
    parse_value_schema,
    split_topic_configs,
)

SCHEMA = '{"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": ["string", "null"]}}}'


def test_defaults_are_disabled_and_daily():
    config = IcebergTopicConfig.from_topic_configs({})
    assert not config.enabled and config.mode == "disabled"
    assert config.partition_spec == (PartitionField("day", "timestamp"),)
    assert config.commit_interval_ms == 60_000 and not config.delete_table_on_topic_delete


def test_every_config_parses():
    config = IcebergTopicConfig.from_topic_configs({
        "iceberg.mode": "value_schema", "iceberg.commit.interval.ms": "500",
        "iceberg.target.file.size.bytes": "1048576", "iceberg.partition.spec": "(hour(timestamp), identity(partition))",
        "iceberg.value.schema": SCHEMA, "iceberg.delete.table.on.topic.delete": "TRUE"})
    assert config.enabled and config.commit_interval_ms == 500 and config.target_file_size_bytes == 1 << 20
    assert config.partition_spec == (PartitionField("hour", "timestamp"), PartitionField("identity", "partition"))
    assert config.value_schema == (("id", "integer"), ("name", "string"))
    assert config.delete_table_on_topic_delete


@pytest.mark.parametrize("configs, words", [
    ({"iceberg.mode": "sideways"}, "iceberg.mode: String must be one of: disabled, key_value, value_schema"),
    ({"iceberg.commit.interval.ms": "0"}, "iceberg.commit.interval.ms: Value must be at least 1"),
    ({"iceberg.commit.interval.ms": "soon"}, "Not a number of type LONG"),
    ({"iceberg.partition.spec": "week(timestamp)"}, "'week(timestamp)' is not one of"),
    ({"iceberg.partition.spec": "day(key)"}, "'day(key)' is not one of"),
    ({"iceberg.partition.spec": "day(timestamp),hour(timestamp)"}, "timestamp is partitioned twice"),
    ({"iceberg.mode": "value_schema"}, "needs iceberg.value.schema"),
    ({"iceberg.value.schema": "{"}, "expected a JSON Schema object"),
    ({"iceberg.value.schema": '{"properties": {"a": {"type": "date"}}}'}, "property 'a' has type 'date'"),
    ({"iceberg.value.schema": '{"properties": {"offset": {"type": "integer"}}}'}, "clashes with a column"),
    ({"iceberg.delete.table.on.topic.delete": "yes"}, "either true or false"),
    ({"iceberg.colour": "blue"}, "Unknown topic config name: iceberg.colour"),
    ({"iceberg.mode": "key_value:subject=x"}, "only value_schema_latest takes options"),
    ({"iceberg.mode": "value_schema_latest:colour=blue"}, "'colour=blue' is not one of subject=<subject>"),
    ({"iceberg.mode": "value_schema_latest:subject=a,subject=b"}, "each at most once"),
    ({"iceberg.mode": "value_schema_latest:subject="}, "'subject=' is not one of"),
])
def test_bad_values_name_the_config(configs, words):
    with pytest.raises(IcebergConfigError, match=None) as err:
        IcebergTopicConfig.from_topic_configs(configs)
    assert words in str(err.value)


def test_value_schema_latest_takes_redpandas_options():
    """Redpanda's ``value_schema_latest[:subject=<s>][,protobuf_name=<m>]``; the subject defaults to <topic>-value."""
    bare = IcebergTopicConfig.from_topic_configs({"iceberg.mode": "value_schema_latest"})
    assert bare.mode == "value_schema_latest" and bare.decodes_with_registry and bare.subject("t") == "t-value"
    both = IcebergTopicConfig.from_topic_configs(
        {"iceberg.mode": "value_schema_latest:protobuf_name=example.Person, subject=people"})
    assert both.subject("t") == "people" and both.protobuf_name == "example.Person"
    assert not IcebergTopicConfig.from_topic_configs({"iceberg.mode": "key_value"}).decodes_with_registry


def test_empty_spec_is_unpartitioned_and_schema_keeps_order():
    assert parse_partition_spec("") == () and parse_partition_spec("()") == ()
    assert [n for n, _ in parse_value_schema('{"properties": {"b": {"type": "string"}, "a": {"type": "number"}}}')] \
        == ["b", "a"]


def test_split_keeps_iceberg_configs_from_the_log():
    log_configs, iceberg = split_topic_configs({"retention.ms": "1", "iceberg.mode": "key_value"})
    assert log_configs == {"retention.ms": "1"} and iceberg == {"iceberg.mode": "key_value"}


def _describe(admin: AdminClient, topic: str) -> dict:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([resource])[resource].result(timeout=10)


def test_admin_apis_create_validate_describe_and_alter(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("ice-cfg", 2, config={"iceberg.mode": "key_value", "retention.ms": "3600000",
                                                         "iceberg.partition.spec": "hour(timestamp)"})])["ice-cfg"] \
        .result(timeout=10)
    entries = _describe(admin, "ice-cfg")
    assert entries["iceberg.mode"].value == "key_value" and not entries["iceberg.mode"].is_default
    assert entries["iceberg.partition.spec"].value == "hour(timestamp)"
    assert entries["iceberg.commit.interval.ms"].value == "60000" and entries["iceberg.commit.interval.ms"].is_default
    assert entries["retention.ms"].value == "3600000"

    bad = admin.create_topics([NewTopic("ice-bad", 1, config={"iceberg.mode": "sideways"})])["ice-bad"]
    with pytest.raises(Exception) as err:
        bad.result(timeout=10)
    assert "INVALID_CONFIG" in str(err.value) and "iceberg.mode" in str(err.value)

    resource = ConfigResource(ConfigResource.Type.TOPIC, "ice-cfg",
                              set_config={"iceberg.mode": "disabled", "iceberg.commit.interval.ms": "1000"})
    admin.alter_configs([resource])[resource].result(timeout=10)
    entries = _describe(admin, "ice-cfg")
    assert entries["iceberg.mode"].value == "disabled" and entries["iceberg.commit.interval.ms"].value == "1000"
    assert entries["retention.ms"].value == "604800000"  # AlterConfigs replaces the whole set


def test_topics_without_iceberg_configs_describe_as_kafka(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("ice-plain", 1)])["ice-plain"].result(timeout=10)
    assert not [name for name in _describe(admin, "ice-plain") if name.startswith("iceberg.")]
