"""The routing client's split of partition requests by leader (compat_tests/leader_split.py), on a real
3-broker pykbroker cluster: each partition's part reaches its leader, and the merged answer lists every
partition in the request's order with what its leader answered. With PYKBROKER_SLOW_DIFFERENTIAL=1 only
(``make differential-cluster``): it starts a cluster.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.routing_client import RoutingClient
from compat_tests.test_differential import batch
from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeProducersRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
)
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.describe_producers_request import TopicRequest as DescribeProducersTopic
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.offset_for_leader_epoch_request import OffsetForLeaderPartition, OffsetForLeaderTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                                reason="starts a cluster: make differential-cluster (PYKBROKER_SLOW_DIFFERENTIAL=1)")

# topic -> the broker leading each partition: every broker leads some, and no request's order is the brokers'.
LEADERS = {"split-a": [3, 1, 2], "split-b": [2, 3]}
# The order the requests name the partitions in.
ORDER = [("split-b", 1), ("split-a", 2), ("split-a", 0), ("split-b", 0), ("split-a", 1)]
RECORDS = {("split-b", 1): 2, ("split-a", 2): 3, ("split-a", 0): 4, ("split-b", 0): 5, ("split-a", 1): 6}


def grouped(make_partition) -> list[tuple[str, list]]:
    """``ORDER`` as the request's topic entries: consecutive partitions of one topic in one entry."""
    out: list[tuple[str, list]] = []
    for name, index in ORDER:
        if not out or out[-1][0] != name:
            out.append((name, []))
        out[-1][1].append(make_partition(name, index))
    return out


def answered(entries, name_field: str, partitions_field: str, index_field: str) -> list[tuple[str, int]]:
    return [(getattr(t, name_field), getattr(p, index_field)) for t in entries for p in getattr(t, partitions_field)]


@pytest.fixture(scope="module")
def cluster(judged_cluster):
    """``judged_cluster`` with the ``LEADERS`` topics (RF 1: each partition has exactly its one leader)."""
    with RawClient(judged_cluster.broker(1).bootstrap, timeout=30) as c:
        r = c.request(CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1, assignments=[
                CreatableReplicaAssignment(partition_index=i, broker_ids=[b]) for i, b in enumerate(brokers)])
            for name, brokers in LEADERS.items()]), 7)
        assert {t.error_code for t in r.topics} == {ErrorCode.NONE}, r
    for b in judged_cluster.brokers.values():
        with RawClient(b.bootstrap, timeout=30) as c:
            c.wait_for_topics(*LEADERS, timeout=30)
    return judged_cluster


@pytest.fixture(scope="module")
def produced(cluster) -> list[tuple[str, int, int, int]]:
    """One Produce naming every partition, through broker 1: (topic, partition, error, base offset) as merged."""
    with RoutingClient(cluster.broker(1).bootstrap, timeout=30) as c:
        r = c.request(ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[
            TopicProduceData(name=name, partition_data=parts) for name, parts in grouped(
                lambda n, i: PartitionProduceData(index=i, records=batch(RECORDS[(n, i)])))]), 11)
    return [(t.name, p.index, p.error_code, p.base_offset) for t in r.responses for p in t.partition_responses]


def list_offsets(c: RawClient, timestamp: int) -> ListOffsetsRequest:
    return c.request(ListOffsetsRequest(replica_id=-1, topics=[
        ListOffsetsTopic(name=name, partitions=parts) for name, parts in grouped(
            lambda n, i: ListOffsetsPartition(partition_index=i, timestamp=timestamp))]), 7)


def test_one_broker_alone_does_not_lead_them_all(cluster):
    """The unsplit request to broker 1 is refused for the partitions others lead: what the split is for."""
    with RawClient(cluster.broker(1).bootstrap, timeout=30) as c:
        r = list_offsets(c, -1)
    errors = {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions}
    assert errors == {(n, i): ErrorCode.NONE if LEADERS[n][i] == 1 else ErrorCode.NOT_LEADER_OR_FOLLOWER
                      for n, i in ORDER}


def test_produce_reaches_every_leader_and_answers_in_request_order(produced, cluster):
    assert produced == [(n, i, ErrorCode.NONE, 0) for n, i in ORDER]
    for (name, index), count in RECORDS.items():  # each leader has exactly its partition's records
        with RawClient(cluster.broker(LEADERS[name][index]).bootstrap, timeout=30) as c:
            r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=name, partitions=[
                ListOffsetsPartition(partition_index=index, timestamp=-1)])]), 7)
        assert r.topics[0].partitions[0].offset == count, (name, index)


def test_list_offsets_offset_for_leader_epoch_and_describe_producers_merge(produced, cluster):
    with RoutingClient(cluster.broker(1).bootstrap, timeout=30) as c:
        latest = list_offsets(c, -1)
        epochs = c.request(OffsetForLeaderEpochRequest(replica_id=-1, topics=[
            OffsetForLeaderTopic(topic=name, partitions=parts) for name, parts in grouped(
                lambda n, i: OffsetForLeaderPartition(partition=i, current_leader_epoch=-1, leader_epoch=0))]), 4)
        producers = c.request(DescribeProducersRequest(topics=[
            DescribeProducersTopic(name=name, partition_indexes=parts) for name, parts in grouped(
                lambda n, i: i)]), 0)
    assert answered(latest.topics, "name", "partitions", "partition_index") == ORDER
    assert [(p.error_code, p.offset) for t in latest.topics for p in t.partitions] == \
        [(ErrorCode.NONE, RECORDS[k]) for k in ORDER]
    assert answered(epochs.topics, "topic", "partitions", "partition") == ORDER
    assert [(p.error_code, p.end_offset) for t in epochs.topics for p in t.partitions] == \
        [(ErrorCode.NONE, RECORDS[k]) for k in ORDER]
    assert answered(producers.topics, "name", "partitions", "partition_index") == ORDER
    assert [(p.error_code, len(p.active_producers)) for t in producers.topics for p in t.partitions] == \
        [(ErrorCode.NONE, 0)] * len(ORDER)  # idempotence off: no producer state


def test_sessionless_fetch_merges_every_leaders_records(produced, cluster):
    with RoutingClient(cluster.broker(1).bootstrap, timeout=30) as c:
        ids = {t.name: t.topic_id for t in c.request(MetadataRequest(topics=None), 12).topics}
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, session_id=0,
                               session_epoch=-1, topics=[FetchTopic(topic=name, topic_id=ids[name], partitions=parts)
                                                         for name, parts in grouped(lambda n, i: FetchPartition(
                                                             partition=i, fetch_offset=0, partition_max_bytes=1 << 20))])
        by_name = c.request(request, 12)
        by_id = c.request(request, 13)  # v13 names topics by id only
    assert answered(by_name.responses, "topic", "partitions", "partition_index") == ORDER
    assert [(t.topic_id, p.partition_index) for t in by_id.responses for p in t.partitions] == \
        [(ids[n], i) for n, i in ORDER]
    for response in (by_name, by_id):
        assert response.error_code == ErrorCode.NONE and response.session_id == 0
        assert [(p.error_code, p.high_watermark, bool(p.records)) for t in response.responses for p in t.partitions] \
            == [(ErrorCode.NONE, RECORDS[k], True) for k in ORDER]


def test_delete_records_reaches_every_leader(produced, cluster):
    with RoutingClient(cluster.broker(1).bootstrap, timeout=30) as c:
        r = c.request(DeleteRecordsRequest(timeout_ms=10_000, topics=[
            DeleteRecordsTopic(name=name, partitions=parts) for name, parts in grouped(
                lambda n, i: DeleteRecordsPartition(partition_index=i, offset=1))]), 2)
        earliest = list_offsets(c, -2)
    assert answered(r.topics, "name", "partitions", "partition_index") == ORDER
    assert [(p.error_code, p.low_watermark) for t in r.topics for p in t.partitions] == [(ErrorCode.NONE, 1)] * 5
    assert [p.offset for t in earliest.topics for p in t.partitions] == [1] * 5
