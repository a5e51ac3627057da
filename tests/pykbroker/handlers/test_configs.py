"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs over a real socket."""

from __future__ import annotations

from pykbroker.testing import BrokerProcess, RawClient
from pykbroker.topic_config import ConfigSource
from wire import ErrorCode
from wire.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)
from wire.messages.alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig as IncrementalConfig
from wire.messages.incremental_alter_configs_request import AlterConfigsResource as IncrementalResource

TOPIC, BROKER = 2, 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def create(c, name: str, **configs: str) -> None:
    request = CreateTopicsRequest(topics=[CreatableTopic(
        name=name, num_partitions=1, replication_factor=1,
        configs=[CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()])],
        timeout_ms=5000)
    assert c.request(request, 7).topics[0].error_code == ErrorCode.NONE


def describe(c, resource_type: int, name: str, *keys: str, synonyms: bool = True):
    request = DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=list(keys) or None)],
        include_synonyms=synonyms, include_documentation=True)
    return c.request(request, 4).results[0]


def incremental(c, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False):
    request = IncrementalAlterConfigsRequest(resources=[IncrementalResource(
        resource_type=TOPIC, resource_name=name,
        configs=[IncrementalConfig(name=n, config_operation=op, value=v) for n, op, v in ops])],
        validate_only=validate_only)
    return c.request(request, 1).responses[0]


def test_describe_reports_sources_synonyms_and_documentation(tmp_path):
    with BrokerProcess(tmp_path, overrides={"log.retention.hours": "100"}) as b, RawClient(b.bootstrap) as c:
        create(c, "dc-a", cleanup_policy="compact")
        result = describe(c, TOPIC, "dc-a")
        assert result.error_code == ErrorCode.NONE
        entries = {e.name: e for e in result.configs}
        assert entries["cleanup.policy"].value == "compact"
        assert entries["cleanup.policy"].config_source == ConfigSource.TOPIC_CONFIG
        assert [(s.name, s.value, s.source) for s in entries["cleanup.policy"].synonyms] == [
            ("cleanup.policy", "compact", ConfigSource.TOPIC_CONFIG),
            ("log.cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)]
        assert entries["retention.ms"].value == str(100 * 3_600_000)
        # Kafka lists only synonyms from log.retention.ms on: log.retention.hours set or not, none, so DEFAULT
        assert entries["retention.ms"].config_source == ConfigSource.DEFAULT_CONFIG
        assert entries["retention.ms"].synonyms == []
        assert [(s.name, s.value, s.source) for s in entries["preallocate"].synonyms] == [
            ("log.preallocate", "false", ConfigSource.DEFAULT_CONFIG)]
        assert entries["segment.bytes"].config_source == ConfigSource.DEFAULT_CONFIG
        assert entries["segment.bytes"].documentation
        only = describe(c, TOPIC, "dc-a", "segment.ms", synonyms=False)
        assert [e.name for e in only.configs] == ["segment.ms"] and only.configs[0].synonyms == []
        missing = describe(c, TOPIC, "dc-missing")
        # as Kafka 4.1 answers: the code and an empty (not null) message
        assert (missing.error_code, missing.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        assert describe(c, TOPIC, "bad name").error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        node = describe(c, BROKER, "1", "log.retention.hours").configs[0]
        assert (node.value, node.config_source, node.read_only) == ("100", ConfigSource.STATIC_BROKER_CONFIG, True)
        assert describe(c, BROKER, "7").error_code == ErrorCode.INVALID_REQUEST


def test_incremental_and_full_alters_persist_across_restart(tmp_path):
    with BrokerProcess(tmp_path) as b:
        with RawClient(b.bootstrap) as c:
            create(c, "ac-a", retention_ms="60000")
            assert incremental(c, "ac-a", ("cleanup.policy", APPEND, "compact")).error_code == ErrorCode.NONE
            assert incremental(c, "ac-a", ("retention.ms", DELETE, None), ("segment.ms", SET, "3600000")
                               ).error_code == ErrorCode.NONE
            assert incremental(c, "ac-a", ("segment.ms", SET, "1"), validate_only=True).error_code == ErrorCode.NONE
            appended = incremental(c, "ac-a", ("retention.ms", APPEND, "1"))
            assert (appended.error_code, appended.error_message) == (
                ErrorCode.INVALID_CONFIG, "Can't APPEND to key retention.ms because its type is not LIST.")
            not_a_number = incremental(c, "ac-a", ("retention.ms", SET, "x"))
            assert (not_a_number.error_code, not_a_number.error_message) == (
                ErrorCode.INVALID_CONFIG, "Invalid value x for configuration retention.ms: Not a number of type LONG")
            assert incremental(c, "ac-a", ("no.such", SET, "1")).error_code == ErrorCode.INVALID_CONFIG
            assert incremental(c, "ac-missing", ("segment.ms", SET, "1")).error_code == \
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        b.restart()
        with RawClient(b.bootstrap) as c:
            entries = {e.name: e for e in describe(c, TOPIC, "ac-a").configs}
            assert entries["cleanup.policy"].value == "delete,compact"
            assert entries["segment.ms"].value == "3600000"
            assert entries["retention.ms"].config_source == ConfigSource.DEFAULT_CONFIG
            full = AlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=TOPIC, resource_name="ac-a", configs=[AlterableConfig(name="retention.ms", value="5")])])
            assert c.request(full, 2).responses[0].error_code == ErrorCode.NONE
            entries = {e.name: e for e in describe(c, TOPIC, "ac-a").configs}
            assert entries["retention.ms"].value == "5" and entries["segment.ms"].config_source == \
                ConfigSource.DEFAULT_CONFIG  # AlterConfigs replaces the whole set
            static = AlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=BROKER, resource_name="1", configs=[AlterableConfig(name="log.dirs", value="/x")])])
            assert c.request(static, 2).responses[0].error_code == ErrorCode.INVALID_REQUEST
