"""Topic and config administration with the stock admin clients: confluent-kafka, kafka-python (Kafka's CLI,
kafka-topics and kafka-configs: test_java_tools)."""

from __future__ import annotations

import pytest


def test_confluent_admin_round_trip(broker):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic("adm-c", 2, 1, config={"cleanup.policy": "compact"})]).values():
        f.result(10)
    with pytest.raises(KafkaException, match="already exists"):
        admin.create_topics([NewTopic("adm-c", 2, 1)])["adm-c"].result(10)
    with pytest.raises(KafkaException, match="Unknown topic config name"):
        admin.create_topics([NewTopic("adm-c2", 1, 1, config={"nope": "1"})])["adm-c2"].result(10)
    admin.create_partitions([NewPartitions("adm-c", 4)])["adm-c"].result(10)
    assert len(admin.list_topics(timeout=10).topics["adm-c"].partitions) == 4
    resource = ConfigResource("topic", "adm-c", incremental_configs=[
        ConfigEntry("retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(10)
    described = admin.describe_configs([ConfigResource("topic", "adm-c")])
    configs = next(iter(described.values())).result(10)
    assert configs["retention.ms"].value == "86400000"
    assert configs["cleanup.policy"].value == "compact"
    assert configs["segment.bytes"].is_default
    admin.delete_topics(["adm-c"])["adm-c"].result(10)
    assert "adm-c" not in admin.list_topics(timeout=10).topics


def test_kafka_python_admin_round_trip(broker):
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
    from kafka.errors import InvalidPartitionsError, TopicAlreadyExistsError
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic("adm-k", 1, 1, topic_configs={"retention.ms": "3600000"})])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([NewTopic("adm-k", 1, 1)])
        admin.create_partitions({"adm-k": NewPartitions(3)})
        with pytest.raises(InvalidPartitionsError):
            admin.create_partitions({"adm-k": NewPartitions(2)})
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "adm-k", configs={"retention.ms": "7200000"})])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "adm-k")])
        assert "7200000" in str(described)
        assert "adm-k" in admin.list_topics()
        admin.delete_topics(["adm-k"])
        assert "adm-k" not in admin.list_topics()
    finally:
        admin.close()


def test_confluent_delete_records_describe_topics_and_log_dirs(broker):
    from confluent_kafka import Producer, TopicCollection, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("adm-dr", 2, 1)])["adm-dr"].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("adm-dr", b"v%d" % i, partition=0)
    assert producer.flush(10) == 0
    deleted = admin.delete_records([TopicPartition("adm-dr", 0, 6)])
    assert next(iter(deleted.values())).result(10).low_watermark == 6
    low, high = _watermarks(broker.bootstrap, "adm-dr")
    assert (low, high) == (6, 10)
    description = admin.describe_topics(TopicCollection(["adm-dr"]))["adm-dr"].result(10)
    assert [p.id for p in description.partitions] == [0, 1]
    assert description.partitions[0].leader.id == 1


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "adm-wm"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        consumer.close()
