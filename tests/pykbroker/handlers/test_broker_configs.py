"""Dynamic broker configs over a real socket: stored durably, described with their sources, applied at once."""

from __future__ import annotations

import time

from pykbroker.testing import BrokerProcess, RawClient
from pykbroker.topic_config import ConfigSource
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    AlterConfigsRequest,
    CreateTopicsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from wire.messages.alter_configs_request import AlterConfigsResource
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig as IncrementalConfig
from wire.messages.incremental_alter_configs_request import AlterConfigsResource as IncrementalResource
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1


def incremental(c, name: str, *ops: tuple[str, int, str | None], validate_only: bool = False):
    r = c.request(IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[IncrementalResource(
        resource_type=BROKER, resource_name=name,
        configs=[IncrementalConfig(name=n, config_operation=op, value=v) for n, op, v in ops])]), 1).responses[0]
    return r.error_code, r.error_message


def describe(c, resource_type: int, name: str, *keys: str) -> dict:
    r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=list(keys) or None)],
        include_synonyms=True), 4).results[0]
    assert r.error_code == ErrorCode.NONE, r.error_message
    return {e.name: e for e in r.configs}


def create(c, name: str) -> None:
    r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
                                      timeout_ms=5000), 7)
    assert r.topics[0].error_code == ErrorCode.NONE
    c.wait_for_topics(name)


def produce(c, topic: str, value_size: int, timestamp: int | None = None) -> int:
    records = build_simple_batch([b"v" * value_size], timestamp=timestamp or int(time.time() * 1000))
    r = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
    return r.responses[0].partition_responses[0].error_code


def log_start_offset(c, topic: str) -> int:
    r = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
        name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-2)])]), 7)
    return r.topics[0].partitions[0].offset


def test_a_new_cluster_holds_the_elr_min_insync_replicas_default(tmp_path):
    with BrokerProcess(tmp_path) as b, RawClient(b.bootstrap) as c:
        entries = describe(c, BROKER, "")
        assert list(entries) == ["min.insync.replicas"]
        e = entries["min.insync.replicas"]
        assert (e.value, e.config_source, e.read_only) == ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, False)
        assert incremental(c, "", ("min.insync.replicas", DELETE, None)) == (
            ErrorCode.INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.")
        assert incremental(c, "1", ("min.insync.replicas", SET, "2")) == (
            ErrorCode.INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR is enabled.")


def test_configs_survive_a_kill_and_per_broker_wins_over_the_default(tmp_path):
    with BrokerProcess(tmp_path) as b:
        with RawClient(b.bootstrap) as c:
            assert incremental(c, "", ("log.retention.ms", SET, "7200000"), ("my.custom", SET, "x")) == (0, None)
            assert incremental(c, "1", ("log.retention.ms", SET, "3600000")) == (0, None)
            assert incremental(c, "", ("log.retention.bytes", SET, "1"), validate_only=True) == (0, None)
            assert incremental(c, "", ("num.partitions", SET, "3")) == (
                ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: [num.partitions]")
            assert incremental(c, "7", ("log.retention.ms", SET, "1")) == (
                ErrorCode.INVALID_REQUEST, "Unexpected broker id, expected 1, but received 7")
        b.restart(hard=True)  # kill -9
        with RawClient(b.bootstrap) as c:
            default = describe(c, BROKER, "")
            assert sorted(default) == ["log.retention.ms", "min.insync.replicas", "my.custom"]
            assert "log.retention.bytes" not in default  # validate_only stored nothing
            mine = describe(c, BROKER, "1", "log.retention.ms", "log.retention.hours")["log.retention.ms"]
            assert (mine.value, mine.config_source, mine.read_only) == (
                "3600000", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
            assert [(s.name, s.value, s.source) for s in mine.synonyms] == [
                ("log.retention.ms", "3600000", ConfigSource.DYNAMIC_BROKER_CONFIG),
                ("log.retention.ms", "7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                ("log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)]
            # the legacy AlterConfigs replaces the whole set
            r = c.request(AlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=BROKER, resource_name="1", configs=[])], validate_only=False), 2).responses[0]
            assert r.error_code == ErrorCode.NONE
            create(c, "bc-topic")
            retention = describe(c, TOPIC, "bc-topic", "retention.ms")["retention.ms"]
            assert (retention.value, retention.config_source) == (
                "7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)


def test_a_lowered_message_max_bytes_refuses_large_batches_at_once(tmp_path):
    with BrokerProcess(tmp_path) as b, RawClient(b.bootstrap) as c:
        create(c, "bc-size")
        assert produce(c, "bc-size", 2000) == ErrorCode.NONE
        assert incremental(c, "", ("message.max.bytes", SET, "500")) == (0, None)
        assert produce(c, "bc-size", 2000) == ErrorCode.MESSAGE_TOO_LARGE
        assert produce(c, "bc-size", 10) == ErrorCode.NONE
        assert incremental(c, "", ("message.max.bytes", DELETE, None)) == (0, None)
        assert produce(c, "bc-size", 2000) == ErrorCode.NONE


def test_a_cluster_wide_retention_deletes_old_segments_of_running_topics(tmp_path):
    with BrokerProcess(tmp_path, overrides={"log.retention.check.interval.ms": "100", "log.initial.task.delay.ms": "0"}) as b, \
            RawClient(b.bootstrap) as c:
        create(c, "bc-retention")
        old = int(time.time() * 1000) - 3_600_000
        assert produce(c, "bc-retention", 10, timestamp=old) == ErrorCode.NONE
        assert log_start_offset(c, "bc-retention") == 0
        # segments roll after 1 ms and records older than a minute go: the old record's segment is deleted
        assert incremental(c, "", ("log.roll.ms", SET, "1"), ("log.retention.ms", SET, "60000")) == (0, None)
        assert produce(c, "bc-retention", 10) == ErrorCode.NONE
        deadline = time.monotonic() + 20
        while log_start_offset(c, "bc-retention") == 0:
            assert time.monotonic() < deadline, "retention did not delete the old segment"
            time.sleep(0.1)
        assert log_start_offset(c, "bc-retention") == 1
