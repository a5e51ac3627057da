"""Metadata and DescribeCluster answers for edge cases, over a real socket."""

from __future__ import annotations

import uuid

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import DescribeClusterRequest, MetadataRequest
from wire.messages.metadata_request import MetadataRequestTopic


def test_unknown_topic_without_auto_create(broker):
    with RawClient(broker.bootstrap) as c:
        response = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="no-such-topic")],
                                             allow_auto_topic_creation=False), 12)
    [topic] = response.topics
    assert topic.name == "no-such-topic"
    assert topic.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_auto_create_answers_unknown_then_shows_the_topic(broker):
    """As Kafka: the request that creates the topic answers UNKNOWN_TOPIC_OR_PARTITION, the next shows it."""
    with RawClient(broker.bootstrap) as c:
        first = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="md-auto")],
                                          allow_auto_topic_creation=True), 12).topics[0]
        assert (first.error_code, first.partitions) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
        second = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="md-auto")],
                                           allow_auto_topic_creation=False), 12).topics[0]
        assert second.error_code == ErrorCode.NONE and second.partitions
        assert list(c.wait_for_topics("md-auto-2", auto_create=True)) == ["md-auto-2"]


def test_invalid_topic_name(broker):
    with RawClient(broker.bootstrap) as c:
        response = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="bad/name")]), 9)
    assert response.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_unknown_topic_id(broker):
    with RawClient(broker.bootstrap) as c:
        wanted = uuid.uuid4()
        response = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=None, topic_id=wanted)]), 12)
    assert response.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert response.topics[0].topic_id == wanted


def test_cluster_authorized_operations_only_when_asked(broker):
    with RawClient(broker.bootstrap) as c:
        plain = c.request(MetadataRequest(topics=[]), 10)
        asked = c.request(MetadataRequest(topics=[], include_cluster_authorized_operations=True), 10)
    assert plain.cluster_authorized_operations == -2147483648
    assert asked.cluster_authorized_operations > 0


def test_describe_cluster(broker):
    with RawClient(broker.bootstrap) as c:
        for version in (0, 1, 2):
            response = c.request(DescribeClusterRequest(), version)
            assert response.error_code == ErrorCode.NONE
            assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [(1, "127.0.0.1", broker.port)]
            assert response.controller_id == 1
        wrong = c.request(DescribeClusterRequest(endpoint_type=2), 1)
    assert wrong.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE


def test_describe_quorum_shows_this_node_as_the_only_voter_and_leader(fresh_broker):
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    admin = KafkaAdminClient(bootstrap_servers=fresh_broker.bootstrap)
    try:
        before = admin.describe_metadata_quorum()
        admin.create_topics([NewTopic("dq-a", 1, 1)])
        after = admin.describe_metadata_quorum()
    finally:
        admin.close()
    (partition,) = after["topics"][0]["partitions"]
    assert after["topics"][0]["topic_name"] == "__cluster_metadata"
    assert partition["leader_id"] == 1 and [v["replica_id"] for v in partition["current_voters"]] == [1]
    assert partition["high_watermark"] > before["topics"][0]["partitions"][0]["high_watermark"]
    assert after["nodes"][0]["node_id"] == 1


def test_partition_entries_are_reused_only_while_the_image_parts_are_the_same():
    """The entries of a topic are built once per topic state and broker registrations (images are immutable);
    a new leader, a broker gone or a replica lost to an offline log dir shows at once."""
    from dataclasses import replace

    from pykbroker.handlers.metadata import topic_metadata
    from replication.metadata.image import BrokerImage, Endpoint, MetadataImage, PartitionState, TopicState

    topic = TopicState("cached", uuid.uuid4(), tuple(PartitionState(i, 1, 0, (1, 2), (1, 2)) for i in range(3)))
    brokers = {n: BrokerImage(n, (Endpoint("PLAINTEXT", "127.0.0.1", 9090 + n),)) for n in (1, 2)}
    image = MetadataImage("c", topics={"cached": topic}, brokers=brokers)
    first = topic_metadata(topic, False, image, "PLAINTEXT").partitions
    assert topic_metadata(topic, False, image, "PLAINTEXT").partitions is first
    assert [(p.leader_id, p.error_code) for p in first] == [(1, ErrorCode.NONE)] * 3

    moved = replace(topic, partitions=(PartitionState(0, 2, 1, (1, 2), (2,)), *topic.partitions[1:]))
    image = replace(image, topics={"cached": moved})
    assert [(p.leader_id, p.leader_epoch, p.isr_nodes) for p in topic_metadata(moved, False, image, "PLAINTEXT")
            .partitions][0] == (2, 1, [2])

    image = replace(image, brokers={2: brokers[2]})  # broker 1 gone: its replicas are offline
    assert [p.offline_replicas for p in topic_metadata(moved, False, image, "PLAINTEXT").partitions] == [[1]] * 3

    lost = topic_metadata(moved, False, image, "PLAINTEXT", lambda t, p: (2,) if p == 1 else ()).partitions
    assert [p.offline_replicas for p in lost] == [[1], [1, 2], [1]]
    assert [p.offline_replicas for p in topic_metadata(moved, False, image, "PLAINTEXT").partitions] == [[1]] * 3
