"""The test admin client against a real broker: topics made, listed and deleted; Kafka's error codes raised."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from pykbroker.admin import KafkaAdmin, KafkaAdminError
from wire import ErrorCode


def test_create_waits_for_leaders_list_and_delete(broker):
    admin = KafkaAdmin(broker.bootstrap)
    admin.create_topic("adm-a", partitions=3, config={"cleanup.policy": "compact"})
    assert "adm-a" in admin.list_topics() and admin.partitions("adm-a") == 3
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "adm"})
    configs = consumer.list_topics("adm-a", timeout=10).topics["adm-a"]
    consumer.close()
    assert configs.error is None and len(configs.partitions) == 3
    admin.delete_topic("adm-a")
    assert "adm-a" not in admin.list_topics()


def test_errors_are_kafkas(broker):
    admin = KafkaAdmin(broker.bootstrap)
    admin.create_topic("adm-b")
    with pytest.raises(KafkaAdminError) as exists:
        admin.create_topic("adm-b")
    assert exists.value.error == ErrorCode.TOPIC_ALREADY_EXISTS
    with pytest.raises(KafkaAdminError) as bad:
        admin.create_topic("adm-c", config={"cleanup.policy": "sideways"})
    assert bad.value.error == ErrorCode.INVALID_CONFIG
    with pytest.raises(KafkaAdminError) as missing:
        admin.delete_topic("adm-missing")
    assert missing.value.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    admin.delete_topic("adm-missing", missing_ok=True)


def test_internal_topics_are_listed_only_when_asked(broker):
    from confluent_kafka import TopicPartition

    admin = KafkaAdmin(broker.bootstrap)
    admin.create_topic("adm-d")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "adm-internal"})
    consumer.commit(offsets=[TopicPartition("adm-d", 0, 0)], asynchronous=False)  # makes __consumer_offsets
    consumer.close()
    assert "__consumer_offsets" in admin.list_topics(internal=True)
    assert "__consumer_offsets" not in admin.list_topics() and "adm-d" in admin.list_topics()


def test_no_broker_is_a_connection_error():
    from pykbroker.testing import free_port

    with pytest.raises(ConnectionError):
        KafkaAdmin(f"127.0.0.1:{free_port()}", timeout=2).list_topics()
