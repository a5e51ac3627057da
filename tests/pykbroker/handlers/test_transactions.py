"""The transactional APIs over a real socket: errors by version, listing, describing, producers' state."""

from __future__ import annotations

import time

from pykbroker.testing import RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    AddPartitionsToTxnRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    ProduceRequest,
)
from wire.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction
from wire.messages.describe_producers_request import TopicRequest
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

NOW = int(time.time() * 1000)


def init(c: RawClient, txn_id: str) -> tuple[int, int]:
    assert c.request(FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id]), 4).coordinators[0].error_code == 0
    r = c.request(InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), 4)
    assert r.error_code == ErrorCode.NONE
    return r.producer_id, r.producer_epoch


def add(c: RawClient, txn_id: str, pid: int, epoch: int, topic: str, version: int = 3) -> int:
    r = c.request(AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[AddPartitionsToTxnTopic(name=topic, partitions=[0])]), version)
    return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def produce(c: RawClient, txn_id: str, pid: int, epoch: int, topic: str, seq: int, version: int = 11) -> int:
    records = build_simple_batch([b"v"], timestamp=NOW, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                                 is_transactional=True)
    r = c.request(ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=topic, partition_data=[PartitionProduceData(index=0, records=records)])]), version)
    return r.responses[0].partition_responses[0].error_code


def end(c: RawClient, txn_id: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return c.request(EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit),
                     version).error_code


def wait_completed(c: RawClient, txn_id: str, timeout: float = 30.0) -> str:
    """Until DescribeTransactions shows the transaction completed (EndTxn answers before its markers, as Kafka's)."""
    deadline = time.monotonic() + timeout
    while True:
        state = c.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0]
        if state.transaction_state in ("CompleteCommit", "CompleteAbort"):
            return state.transaction_state
        assert time.monotonic() < deadline, f"{txn_id} still {state.transaction_state}"
        time.sleep(0.01)


def test_writes_outside_the_transaction_get_the_error_each_version_knows(broker):
    with RawClient(broker.bootstrap) as c:
        c.wait_for_topics("tx-v", auto_create=True)
        pid, epoch = init(c, "tx-versions")
        assert produce(c, "tx-versions", pid, epoch, "tx-v", 0, version=10) == ErrorCode.INVALID_TXN_STATE
        assert produce(c, "tx-versions", pid, epoch, "tx-v", 0, version=11) == ErrorCode.TRANSACTION_ABORTABLE
        assert add(c, "tx-versions", pid, epoch - 1, "tx-v", version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert add(c, "tx-versions", pid, epoch - 1, "tx-v", version=2) == ErrorCode.PRODUCER_FENCED
        assert add(c, "tx-versions", pid, epoch, "tx-v") == ErrorCode.NONE
        assert produce(c, "tx-versions", pid, epoch, "tx-v", 0) == ErrorCode.NONE
        assert end(c, "tx-versions", pid, epoch - 1, True, version=1) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert end(c, "tx-versions", pid, epoch - 1, True, version=2) == ErrorCode.PRODUCER_FENCED
        assert end(c, "tx-versions", pid, epoch, True) == ErrorCode.NONE
        assert end(c, "tx-versions", pid, epoch, False) == ErrorCode.INVALID_TXN_STATE
        assert wait_completed(c, "tx-versions") == "CompleteCommit"
        assert produce(c, "tx-versions", pid, epoch, "tx-v", 1) == ErrorCode.TRANSACTION_ABORTABLE  # after its end


def test_verify_only_add_partitions_reports_membership(broker):
    with RawClient(broker.bootstrap) as c:
        c.wait_for_topics("tx-verify", auto_create=True)
        pid, epoch = init(c, "tx-verify")
        assert add(c, "tx-verify", pid, epoch, "tx-verify") == ErrorCode.NONE

        def verify(topic: str, partition: int, producer_epoch: int = epoch) -> int:
            r = c.request(AddPartitionsToTxnRequest(transactions=[AddPartitionsToTxnTransaction(
                transactional_id="tx-verify", producer_id=pid, producer_epoch=producer_epoch, verify_only=True,
                topics=[AddPartitionsToTxnTopic(name=topic, partitions=[partition])])]), 4)
            assert r.error_code == ErrorCode.NONE
            return r.results_by_transaction[0].topic_results[0].results_by_partition[0].partition_error_code

        assert verify("tx-verify", 0) == ErrorCode.NONE
        assert verify("tx-verify", 0, epoch + 1) == ErrorCode.PRODUCER_FENCED
        assert verify("tx-verify", 9) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        end(c, "tx-verify", pid, epoch, False)
        assert wait_completed(c, "tx-verify") == "CompleteAbort"
        assert verify("tx-verify", 0) == ErrorCode.TRANSACTION_ABORTABLE


def test_describe_and_list_transactions_and_producers(broker):
    with RawClient(broker.bootstrap) as c:
        c.wait_for_topics("tx-list", auto_create=True)
        pid, epoch = init(c, "tx-list")
        add(c, "tx-list", pid, epoch, "tx-list")
        assert produce(c, "tx-list", pid, epoch, "tx-list", 0) == ErrorCode.NONE

        described = c.request(DescribeTransactionsRequest(transactional_ids=["tx-list", "nobody"]), 0)
        ongoing, unknown = described.transaction_states
        assert (ongoing.error_code, ongoing.transaction_state, ongoing.producer_id, ongoing.producer_epoch) == (
            ErrorCode.NONE, "Ongoing", pid, epoch)
        assert [(t.topic, list(t.partitions)) for t in ongoing.topics] == [("tx-list", [0])]
        assert ongoing.transaction_timeout_ms == 60_000 and ongoing.transaction_start_time_ms > 0
        assert unknown.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

        def listed(**filters) -> list[str]:
            r = c.request(ListTransactionsRequest(**{"state_filters": [], "producer_id_filters": [], **filters}), 2)
            return sorted(t.transactional_id for t in r.transaction_states)

        assert "tx-list" in listed()
        assert listed(state_filters=["Ongoing"], producer_id_filters=[pid]) == ["tx-list"]
        assert listed(state_filters=["CompleteCommit"], producer_id_filters=[pid]) == []
        assert listed(transactional_id_pattern="tx-l.*", producer_id_filters=[pid]) == ["tx-list"]
        assert listed(transactional_id_pattern="tx-l", producer_id_filters=[pid]) == []  # the whole id must match

        producers = c.request(DescribeProducersRequest(topics=[TopicRequest(name="tx-list", partition_indexes=[0])]), 0)
        (state,) = producers.topics[0].partitions[0].active_producers
        assert (state.producer_id, state.producer_epoch, state.last_sequence, state.current_txn_start_offset) == (
            pid, epoch, 0, 0)
        assert end(c, "tx-list", pid, epoch, True) == ErrorCode.NONE
        assert wait_completed(c, "tx-list") == "CompleteCommit"
        producers = c.request(DescribeProducersRequest(topics=[TopicRequest(name="tx-list", partition_indexes=[0])]), 0)
        (state,) = producers.topics[0].partitions[0].active_producers
        assert state.current_txn_start_offset == -1  # the transaction is over


def test_a_retried_batch_is_still_a_duplicate_after_kill_9(fresh_broker):
    def send(c: RawClient, pid: int, seq: int) -> tuple[int, int]:
        records = build_simple_batch([b"a", b"b"], timestamp=NOW, producer_id=pid, producer_epoch=0, base_sequence=seq)
        r = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="idem-restart", partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
        p = r.responses[0].partition_responses[0]
        return p.error_code, p.base_offset

    with RawClient(fresh_broker.bootstrap) as c:
        c.wait_for_topics("idem-restart", auto_create=True)
        pid = c.request(InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4).producer_id
        assert send(c, pid, 0) == (ErrorCode.NONE, 0)
        assert send(c, pid, 2) == (ErrorCode.NONE, 2)
    fresh_broker.restart(hard=True)  # the producer state is rebuilt from the log (and snapshots)
    with RawClient(fresh_broker.bootstrap) as c:
        c.wait_for_topics("idem-restart")
        assert send(c, pid, 2) == (ErrorCode.NONE, 2)  # the retry gets its original offset, stored once
        assert send(c, pid, 6)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert send(c, pid, 4) == (ErrorCode.NONE, 4)


def test_write_txn_markers_ends_a_hanging_transaction_on_its_partition(broker):
    """What ``kafka-transactions.sh abort`` sends to a partition leader."""
    from wire.messages import ListOffsetsRequest, WriteTxnMarkersRequest
    from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
    from wire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic

    def stable_end(c: RawClient) -> int:
        r = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=1, topics=[ListOffsetsTopic(
            name="tx-hang", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
        return r.topics[0].partitions[0].offset

    with RawClient(broker.bootstrap) as c:
        c.wait_for_topics("tx-hang", auto_create=True)
        pid, epoch = init(c, "tx-hang")
        add(c, "tx-hang", pid, epoch, "tx-hang")
        assert produce(c, "tx-hang", pid, epoch, "tx-hang", 0) == ErrorCode.NONE
        assert stable_end(c) == 0
        r = c.request(WriteTxnMarkersRequest(markers=[WritableTxnMarker(
            producer_id=pid, producer_epoch=epoch, transaction_result=False, coordinator_epoch=0,
            topics=[WritableTxnMarkerTopic(name="tx-hang", partition_indexes=[0, 7])])]), 1)
        codes = {p.partition_index: p.error_code for p in r.markers[0].topics[0].partitions}
        assert codes == {0: ErrorCode.NONE, 7: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
        assert stable_end(c) == 2  # the data and the marker, now decided


def _transaction_state_end_offsets(c: RawClient) -> int:
    """The sum of __transaction_state's log end offsets: how many transaction-state records were written."""
    from wire.messages import ListOffsetsRequest
    from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

    partitions = len(c.wait_for_topics("__transaction_state")["__transaction_state"].partitions)
    r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="__transaction_state", partitions=[
        ListOffsetsPartition(partition_index=p, timestamp=-1) for p in range(partitions)])]), 7)
    return sum(p.offset for t in r.topics for p in t.partitions)


def test_a_produce_to_many_partitions_adds_them_to_the_transaction_in_one_write(broker):
    """Transaction version 2 (Produce v12+): the partitions of one request join the transaction in one
    transaction-state write, as Kafka's AddPartitionsToTxnManager batches them, not one write per partition (on a
    cluster each is an acks=all append, and a request to 30 partitions then outlives the client's timeout)."""
    from wire.messages import CreateTopicsRequest
    from wire.messages.create_topics_request import CreatableTopic

    partitions = 8
    with RawClient(broker.bootstrap) as c:
        created = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="tx-many", num_partitions=partitions,
                                                                       replication_factor=1)], timeout_ms=10_000), 5)
        assert created.topics[0].error_code == ErrorCode.NONE
        c.wait_for_topics("tx-many")
        pid, epoch = init(c, "tx-many")
        written = _transaction_state_end_offsets(c)
        r = c.request(ProduceRequest(transactional_id="tx-many", acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="tx-many", partition_data=[PartitionProduceData(index=p, records=build_simple_batch(
                [b"v"], timestamp=NOW, producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True))
                for p in range(partitions)])]), 12)
        assert [p.error_code for p in r.responses[0].partition_responses] == [ErrorCode.NONE] * partitions
        assert _transaction_state_end_offsets(c) == written + 1  # one Ongoing record with all eight partitions
        assert end(c, "tx-many", pid, epoch, True, version=5) == ErrorCode.NONE
