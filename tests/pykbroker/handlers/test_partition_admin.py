"""DeleteRecords, DescribeLogDirs, DescribeTopicPartitions and ElectLeaders over a real socket."""

from __future__ import annotations

from pykbroker.testing import RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DescribeLogDirsRequest,
    DescribeTopicPartitionsRequest,
    ElectLeadersRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.describe_log_dirs_request import DescribableLogDirTopic
from wire.messages.describe_topic_partitions_request import Cursor, TopicRequest
from wire.messages.elect_leaders_request import TopicPartitions
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData


def create(c, name: str, partitions: int = 1, **configs: str) -> None:
    topic = CreatableTopic(name=name, num_partitions=partitions, replication_factor=1,
                           configs=[CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()])
    assert c.request(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 7).topics[0].error_code == ErrorCode.NONE


def produce(c, name: str, count: int) -> None:
    batch = build_simple_batch([b"v%d" % i for i in range(count)], keys=[b"k%d" % i for i in range(count)],
                               timestamp=1_700_000_000_000)
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[
        TopicProduceData(name=name, partition_data=[PartitionProduceData(index=0, records=batch)])])
    assert c.request(request, 9).responses[0].partition_responses[0].error_code == ErrorCode.NONE


def delete_records(c, name: str, *offsets: tuple[int, int]):
    request = DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=name, partitions=[
        DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets])], timeout_ms=5000)
    return c.request(request, 2).topics[0].partitions


def earliest(c, name: str) -> int:
    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=name, partitions=[
        ListOffsetsPartition(partition_index=0, timestamp=-2)])])
    return c.request(request, 7).topics[0].partitions[0].offset


def test_delete_records(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "dr-a")
        produce(c, "dr-a", 10)
        (r,) = delete_records(c, "dr-a", (0, 4))
        assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 4)
        assert earliest(c, "dr-a") == 4
        assert delete_records(c, "dr-a", (0, 11))[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert delete_records(c, "dr-a", (0, -7))[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert delete_records(c, "dr-a", (3, 1))[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        (r,) = delete_records(c, "dr-a", (0, -1))  # -1: up to the high watermark
        assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 10)
        create(c, "dr-compacted", cleanup_policy="compact")
        assert delete_records(c, "dr-compacted", (0, 0))[0].error_code == ErrorCode.POLICY_VIOLATION


def test_describe_log_dirs(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "ld-a", 2)
        produce(c, "ld-a", 5)
        everything = c.request(DescribeLogDirsRequest(topics=None), 4)
        (result,) = everything.results
        assert result.error_code == ErrorCode.NONE and result.total_bytes > result.usable_bytes > 0
        sizes = {(t.name, p.partition_index): p.partition_size for t in result.topics for p in t.partitions}
        assert sizes[("ld-a", 0)] > 0 and sizes[("ld-a", 1)] == 0
        some = c.request(DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic="ld-a", partitions=[1])]), 1)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in some.results[0].topics] == [("ld-a", [1])]


def test_describe_topic_partitions_pages_with_a_cursor(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "dtp-a", 3)
        create(c, "dtp-b", 2)
        names = [TopicRequest(name=n) for n in ("dtp-b", "dtp-a", "dtp-missing")]
        first = c.request(DescribeTopicPartitionsRequest(topics=names, response_partition_limit=2), 0)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [("dtp-a", [0, 1])]
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("dtp-a", 2)
        second = c.request(DescribeTopicPartitionsRequest(topics=names, response_partition_limit=2,
                                                          cursor=Cursor(topic_name="dtp-a", partition_index=2)), 0)
        got = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in second.topics]
        assert got == [("dtp-a", 0, [2]), ("dtp-b", 0, [0])]
        third = c.request(DescribeTopicPartitionsRequest(topics=names, response_partition_limit=2,
                                                         cursor=second.next_cursor), 0)
        got = [(t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in third.topics]
        assert got == [("dtp-b", 0, [1]), ("dtp-missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])]
        assert third.next_cursor is None
        p = first.topics[0].partitions[0]
        assert (p.leader_id, p.replica_nodes, p.isr_nodes) == (1, [1], [1])


def test_elect_leaders_is_never_needed_on_one_node(broker):
    with RawClient(broker.bootstrap) as c:
        create(c, "el-a", 2)
        response = c.request(ElectLeadersRequest(election_type=0, topic_partitions=[
            TopicPartitions(topic="el-a", partitions=[0, 5]), TopicPartitions(topic="el-missing", partitions=[0])],
            timeout_ms=5000), 2)
        got = {(r.topic, p.partition_id): p.error_code for r in response.replica_election_results
               for p in r.partition_result}
        assert got == {("el-a", 0): ErrorCode.ELECTION_NOT_NEEDED, ("el-a", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                       ("el-missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        everything = c.request(ElectLeadersRequest(election_type=0, topic_partitions=None, timeout_ms=5000), 2)
        assert all(r.partition_result == [] for r in everything.replica_election_results)


def test_elect_leaders_with_no_time_left_times_out(broker):
    """As Kafka 4.4 answers an ElectLeaders whose timeout_ms is 0 (kafka-go's default): its controller's deadline
    has passed, so REQUEST_TIMED_OUT at the top (v1+, v0 has no top-level error) and for every partition named, with
    no message, even where no election was needed."""
    with RawClient(broker.bootstrap) as c:
        create(c, "elect-now", 2)
        for version in (0, 1, 2):
            response = c.request(ElectLeadersRequest(election_type=0, topic_partitions=[
                TopicPartitions(topic="elect-now", partitions=[0, 1]),
                TopicPartitions(topic="elect-missing", partitions=[0])], timeout_ms=0), version)
            assert response.error_code == (ErrorCode.REQUEST_TIMED_OUT if version else ErrorCode.NONE)
            assert [(t.topic, [(p.partition_id, p.error_code, p.error_message) for p in t.partition_result])
                    for t in response.replica_election_results] == [
                ("elect-now", [(0, ErrorCode.REQUEST_TIMED_OUT, None), (1, ErrorCode.REQUEST_TIMED_OUT, None)]),
                ("elect-missing", [(0, ErrorCode.REQUEST_TIMED_OUT, None)])]
        answer = c.request(ElectLeadersRequest(election_type=0, topic_partitions=[
            TopicPartitions(topic="elect-now", partitions=[0])], timeout_ms=1), 2)
        assert answer.error_code == ErrorCode.NONE
        assert answer.replica_election_results[0].partition_result[0].error_code == ErrorCode.ELECTION_NOT_NEEDED


def test_reassignments_on_one_node(broker):
    from wire.messages import AlterPartitionReassignmentsRequest, ListPartitionReassignmentsRequest
    from wire.messages.alter_partition_reassignments_request import ReassignablePartition, ReassignableTopic
    with RawClient(broker.bootstrap) as c:
        create(c, "ra-a", 1)
        request = AlterPartitionReassignmentsRequest(timeout_ms=5000, topics=[ReassignableTopic(name="ra-a", partitions=[
            ReassignablePartition(partition_index=0, replicas=[1]),
            ReassignablePartition(partition_index=0, replicas=[2]),
            ReassignablePartition(partition_index=0, replicas=None),
            ReassignablePartition(partition_index=9, replicas=[1])])])
        got = [p.error_code for p in c.request(request, 0).responses[0].partitions]
        assert got == [ErrorCode.NONE, ErrorCode.INVALID_REPLICA_ASSIGNMENT, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
                       ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        listed = c.request(ListPartitionReassignmentsRequest(timeout_ms=5000, topics=None), 0)
        assert (listed.error_code, listed.topics) == (ErrorCode.NONE, [])
