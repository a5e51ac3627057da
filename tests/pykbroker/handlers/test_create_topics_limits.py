"""Kafka's per-request partition limits on CreateTopics and CreatePartitions (found by the dispatch fuzz
target: a CreateTopics of 2,424,834 partitions held the event loop). Expected values judged against
Apache Kafka 4.1."""

from __future__ import annotations

import time

from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import CreatePartitionsRequest, CreateTopicsRequest
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig

TOO_MANY_PARTITIONS = (ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request.")
TOO_MANY_RECORDS = (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")


def _create(c: RawClient, *topics: CreatableTopic, validate_only: bool = True) -> list[tuple[int, str | None]]:
    r = c.request(CreateTopicsRequest(topics=list(topics), timeout_ms=30000, validate_only=validate_only), 7)
    return [(t.error_code, t.error_message) for t in r.topics]


def test_create_topics_refuses_more_than_10000_partitions_per_request(broker):
    with RawClient(broker.bootstrap, timeout=30) as c:
        started = time.monotonic()
        assert _create(c, CreatableTopic(name="huge", num_partitions=2_424_834, replication_factor=-1)) == [
            TOO_MANY_PARTITIONS]
        # refused before any partition is planned: planning them would take about 11 s on an idle machine
        # (9,998 take 0.05 s validate-only) and only longer on a loaded one, a refusal a few ms
        assert time.monotonic() - started < 5
        assert _create(c, CreatableTopic(name="a", num_partitions=6000, replication_factor=-1),
                       CreatableTopic(name="b", num_partitions=6000, replication_factor=-1)) == [TOO_MANY_PARTITIONS] * 2
        # checked before the name and the replication factor
        assert _create(c, CreatableTopic(name="bad!", num_partitions=10001, replication_factor=0)) == [
            TOO_MANY_PARTITIONS]


def test_create_topics_refuses_more_than_10000_records_per_request(broker):
    compact = [CreatableTopicConfig(name="cleanup.policy", value="compact")]
    with RawClient(broker.bootstrap, timeout=30) as c:
        assert _create(c, CreatableTopic(name="r", num_partitions=10000, replication_factor=-1)) == [TOO_MANY_RECORDS]
        assert _create(c, CreatableTopic(name="r", num_partitions=9999, replication_factor=-1,
                                         configs=compact)) == [TOO_MANY_RECORDS]
        assert _create(c, CreatableTopic(name="r", num_partitions=9998, replication_factor=-1,
                                         configs=compact)) == [(ErrorCode.NONE, None)]


def test_create_partitions_adding_more_than_10000_fails_like_kafka(broker):
    with RawClient(broker.bootstrap, timeout=30) as c:
        assert _create(c, CreatableTopic(name="grow", num_partitions=1, replication_factor=-1),
                       validate_only=False) == [(ErrorCode.NONE, None)]
        for count, expected in ((10002, ErrorCode.UNKNOWN_SERVER_ERROR), (10001, ErrorCode.NONE)):
            r = c.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="grow", count=count,
                                                                                assignments=None)],
                                                  timeout_ms=30000, validate_only=True), 3)
            assert (r.results[0].error_code, r.results[0].error_message) == (expected, None)
