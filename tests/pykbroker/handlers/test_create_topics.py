"""CreateTopics, DeleteTopics and CreatePartitions over a real socket: every error Kafka's controller gives."""

from __future__ import annotations

import uuid

import pytest

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest
from wire.messages.create_partitions_request import CreatePartitionsAssignment, CreatePartitionsTopic
from wire.messages.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
)
from wire.messages.delete_topics_request import DeleteTopicState


def create(client, *topics: CreatableTopic, version: int = 7, validate_only: bool = False):
    response = client.request(CreateTopicsRequest(topics=list(topics), timeout_ms=5000,
                                                  validate_only=validate_only), version)
    return {t.name: t for t in response.topics}


def topic(name: str, partitions: int = 1, rf: int = 1, **kwargs) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf, **kwargs)


@pytest.mark.parametrize("version", [2, 4, 5, 7])
def test_create_answers_in_every_version(broker, version):
    with RawClient(broker.bootstrap) as c:
        got = create(c, topic(f"ct-v{version}", 3), version=version)[f"ct-v{version}"]
    assert got.error_code == ErrorCode.NONE
    if version >= 5:
        assert (got.num_partitions, got.replication_factor) == (3, 1)
        assert {e.name for e in got.configs} >= {"retention.ms", "cleanup.policy", "segment.bytes"}
    if version >= 7:
        assert got.topic_id != uuid.UUID(int=0)


def test_errors(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, topic("ct-exists"))
        got = create(c, topic("ct-exists"), topic("bad/name"), topic("ct-rf", rf=3), topic("ct-zero", partitions=0),
                     topic("ct-rf0", rf=0), topic("ct-conf", configs=[CreatableTopicConfig(name="nope", value="1")]),
                     topic("ct-val", configs=[CreatableTopicConfig(name="retention.ms", value="x")]),
                     topic("ct-both", 2, assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1])]),
                     topic("ct-broker", -1, -1, assignments=[CreatableReplicaAssignment(partition_index=0,
                                                                                        broker_ids=[7])]),
                     topic("ct-dup"), topic("ct-dup"))
    expected = {
        "ct-exists": ErrorCode.TOPIC_ALREADY_EXISTS, "bad/name": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "ct-rf": ErrorCode.INVALID_REPLICATION_FACTOR, "ct-zero": ErrorCode.INVALID_PARTITIONS,
        "ct-rf0": ErrorCode.INVALID_REPLICATION_FACTOR, "ct-conf": ErrorCode.INVALID_CONFIG,
        "ct-val": ErrorCode.INVALID_CONFIG, "ct-both": ErrorCode.INVALID_REQUEST,
        "ct-broker": ErrorCode.INVALID_REPLICA_ASSIGNMENT, "ct-dup": ErrorCode.INVALID_REQUEST,
    }
    assert {name: t.error_code for name, t in got.items()} == expected
    assert got["ct-exists"].error_message == "Topic 'ct-exists' already exists."
    assert got["ct-conf"].error_message == "Unknown topic config name: nope"
    assert got["ct-dup"].error_message == "Duplicate topic name."


def test_defaults_assignments_collisions_and_validate_only(broker):
    with RawClient(broker.bootstrap) as c:
        got = create(c, topic("ct.dots", -1, -1),
                     topic("ct-manual", -1, -1, assignments=[CreatableReplicaAssignment(partition_index=i, broker_ids=[1])
                                                             for i in range(3)]))
        assert got["ct.dots"].error_code == ErrorCode.NONE and got["ct.dots"].num_partitions == 1
        assert got["ct-manual"].num_partitions == 3
        assert create(c, topic("ct_dots"))["ct_dots"].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        dry = create(c, topic("ct-dry", 2), validate_only=True)["ct-dry"]
        assert dry.error_code == ErrorCode.NONE and dry.num_partitions == 2
        assert create(c, topic("ct-dry", 2))["ct-dry"].error_code == ErrorCode.NONE  # the dry run created nothing


def test_delete_by_name_and_id(broker):
    with RawClient(broker.bootstrap) as c:
        created = create(c, topic("dt-a"), topic("dt-b"))
        by_name = c.request(DeleteTopicsRequest(topic_names=["dt-a", "dt-missing"], timeout_ms=5000), 5)
        codes = {r.name: r.error_code for r in by_name.responses}
        assert codes == {"dt-a": ErrorCode.NONE, "dt-missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        by_id = c.request(DeleteTopicsRequest(topics=[DeleteTopicState(name=None, topic_id=created["dt-b"].topic_id),
                                                      DeleteTopicState(name=None, topic_id=uuid.uuid4())],
                                              timeout_ms=5000), 6)
        codes = sorted(r.error_code for r in by_id.responses)
        assert codes == [ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_ID]
        assert create(c, topic("dt-a"))["dt-a"].error_code == ErrorCode.NONE  # the name is free again


def test_create_partitions(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, topic("cp-a", 2))

        def grow(count, assignments=None, validate_only=False):
            r = c.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="cp-a", count=count,
                                                                                assignments=assignments)],
                                                  timeout_ms=5000, validate_only=validate_only), 3)
            return r.results[0]

        assert grow(2).error_code == ErrorCode.INVALID_PARTITIONS
        assert grow(1).error_code == ErrorCode.INVALID_PARTITIONS
        assert grow(4, [CreatePartitionsAssignment(broker_ids=[1])]).error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert grow(5, validate_only=True).error_code == ErrorCode.NONE
        assert grow(3).error_code == ErrorCode.NONE
        assert grow(3).error_message == "Topic already has 3 partition(s)."
