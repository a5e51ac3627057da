"""Ending a transaction on a three-broker cluster when a partition of it has no leader, and the coordinator
is killed with -9 between PrepareCommit and CompleteCommit.

As Kafka's coordinator, pykbroker answers EndTxn once PrepareCommit is in __transaction_state (acks=all, so on
min.insync.replicas brokers) and sends the markers afterwards. A partition whose only replica is down holds
the transaction in PrepareCommit, which makes that window observable: DescribeTransactions shows it, and
requests on the transactional id get CONCURRENT_TRANSACTIONS. Killing the coordinator then leaves the commit
to the broker that takes over __transaction_state: it finds PrepareCommit when it loads the partition and
keeps sending the markers until the partition's broker is back. read_committed consumers then see every
committed record exactly once and the last stable offset reaches the end of each partition.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from coordinator.group.partitioner import partition_for
from pykbroker.testing import ClusterProcesses, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    AddPartitionsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    ListOffsetsRequest,
    ProduceRequest,
)
from wire.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java"),
    pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                       reason="a minute of broker kills: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)"),
]

TXN_ID = "marker-window"
TOPIC = "marker-window"
STATE_PARTITIONS = 3
VALUES = [[b"p0-a", b"p0-b", b"p0-c"], [b"p1-a", b"p1-b"]]


def wait_for(predicate, what: str, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def coordinator_of(cluster: ClusterProcesses, via: int) -> int:
    """The node FindCoordinator names for TXN_ID (0 while there is none)."""
    try:
        with RawClient(cluster.broker(via).bootstrap) as c:
            found = c.request(FindCoordinatorRequest(key_type=1, coordinator_keys=[TXN_ID]), 4).coordinators[0]
    except OSError:
        return 0
    return found.node_id if found.error_code == ErrorCode.NONE else 0


def describe(cluster: ClusterProcesses, node: int) -> tuple[int, str]:
    with RawClient(cluster.broker(node).bootstrap) as c:
        state = c.request(DescribeTransactionsRequest(transactional_ids=[TXN_ID]), 0).transaction_states[0]
    return state.error_code, state.transaction_state


def partition_state(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int]]]:
    md = admin.list_topics(topic, timeout=10).topics[topic]
    return {p.id: (p.leader, sorted(p.isrs)) for p in md.partitions.values()}


def stable_and_end_offsets(bootstrap: str, partition: int) -> tuple[int, int]:
    with RawClient(bootstrap) as c:
        out = []
        for isolation in (1, 0):
            r = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsTopic(
                name=TOPIC, partitions=[ListOffsetsPartition(partition_index=partition, timestamp=-1)])]), 7)
            p = r.topics[0].partitions[0]
            assert p.error_code == ErrorCode.NONE, p
            out.append(p.offset)
    return out[0], out[1]


def read_committed(bootstrap: str, partition: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{partition}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    consumer.assign([TopicPartition(TOPIC, partition, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                return got
            got.append(m.value())
    finally:
        consumer.close()
    raise AssertionError(f"no end of {TOPIC}-{partition} in sight; read {got}")


def test_a_commit_survives_kill_9_of_its_coordinator_between_prepare_and_complete(tmp_path):
    overrides = {"transaction.state.log.num.partitions": str(STATE_PARTITIONS), "replica.lag.time.max.ms": "4000"}
    with ClusterProcesses(tmp_path, size=3, overrides=overrides) as cluster:
        coordinator = wait_for(lambda: coordinator_of(cluster, 1), "a transaction coordinator")
        down, survivor = (n for n in (1, 2, 3) if n != coordinator)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(TOPIC, num_partitions=2, replica_assignment=[[down], [survivor]])])[TOPIC].result(30)
        wait_for(lambda: partition_state(admin, TOPIC) == {0: (down, [down]), 1: (survivor, [survivor])}, "leaders")
        state_partition = partition_for(TXN_ID, STATE_PARTITIONS)
        leaders = {0: cluster.broker(down).bootstrap, 1: cluster.broker(survivor).bootstrap}

        with RawClient(cluster.broker(coordinator).bootstrap) as c:
            r = c.request(InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=300_000), 4)
            assert r.error_code == ErrorCode.NONE
            pid, epoch = r.producer_id, r.producer_epoch
            added = c.request(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                v3_and_below_topics=[AddPartitionsToTxnTopic(name=TOPIC, partitions=[0, 1])]), 3)
            assert {p.partition_error_code for t in added.results_by_topic_v3_and_below
                    for p in t.results_by_partition} == {ErrorCode.NONE}
        for partition, values in enumerate(VALUES):
            records = build_simple_batch(values, timestamp=int(time.time() * 1000), producer_id=pid,
                                         producer_epoch=epoch, base_sequence=0, is_transactional=True)
            with RawClient(leaders[partition]) as c:
                r = c.request(ProduceRequest(transactional_id=TXN_ID, acks=-1, timeout_ms=10_000, topic_data=[
                    TopicProduceData(name=TOPIC, partition_data=[PartitionProduceData(index=partition,
                                                                                      records=records)])]), 9)
                assert r.responses[0].partition_responses[0].error_code == ErrorCode.NONE

        # The only replica of partition 0 dies: its marker cannot be written until it is back.
        cluster.broker(down).kill()
        wait_for(lambda: partition_state(admin, "__transaction_state")[state_partition][1] == sorted(
            (coordinator, survivor)) and partition_state(admin, TOPIC)[0][0] == -1, "the dead broker out of the ISRs")
        with RawClient(cluster.broker(coordinator).bootstrap) as c:
            def end() -> int:
                return c.request(EndTxnRequest(transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch,
                                               committed=True), 3).error_code

            assert end() == ErrorCode.NONE  # PrepareCommit is on two brokers: the decision stands
            assert describe(cluster, coordinator) == (ErrorCode.NONE, "PrepareCommit")
            assert end() == ErrorCode.CONCURRENT_TRANSACTIONS  # a retry while the markers are pending
            more = c.request(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=TXN_ID, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                v3_and_below_topics=[AddPartitionsToTxnTopic(name=TOPIC, partitions=[1])]), 3)
            assert more.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == \
                ErrorCode.CONCURRENT_TRANSACTIONS
            assert c.request(InitProducerIdRequest(transactional_id=TXN_ID, transaction_timeout_ms=300_000),
                             4).error_code == ErrorCode.CONCURRENT_TRANSACTIONS
        # The reachable partition has its marker already; the other's records stay below no stable offset.
        wait_for(lambda: stable_and_end_offsets(leaders[1], 1)[0] == len(VALUES[1]) + 1, "partition 1's marker")

        # kill -9 of the coordinator in the window between PrepareCommit and CompleteCommit.
        cluster.broker(coordinator).kill()
        wait_for(lambda: coordinator_of(cluster, survivor) == survivor, "the survivor taking over the coordinator")
        assert wait_for(lambda: describe(cluster, survivor)[0] == ErrorCode.NONE and describe(cluster, survivor),
                        "the survivor loading the transaction") == (ErrorCode.NONE, "PrepareCommit")

        cluster.broker(down).start()
        wait_for(lambda: describe(cluster, survivor) == (ErrorCode.NONE, "CompleteCommit"), "the commit to complete")
        cluster.broker(coordinator).start()
        for partition, values in enumerate(VALUES):
            assert read_committed(cluster.bootstrap, partition) == values
            stable, end_offset = stable_and_end_offsets(cluster.broker(partition and survivor or down).bootstrap,
                                                        partition)
            assert stable == end_offset, (partition, stable, end_offset)
        with RawClient(cluster.broker(survivor).bootstrap) as c:  # a retried EndTxn now hears it succeeded
            assert c.request(EndTxnRequest(transactional_id=TXN_ID, producer_id=pid, producer_epoch=epoch,
                                           committed=True), 3).error_code == ErrorCode.NONE


def test_a_marker_whose_partition_waits_on_a_stalled_follower_holds_back_no_other(tmp_path):
    """WriteTxnMarkers writes every partition of every marker at once, as Kafka's handler appends them: a marker on
    a partition whose follower is stopped (still in the ISR, so its acks=all append waits) does not keep the
    request's other partitions from their markers. Written one after the other, the healthy partition's marker
    waited out the stalled one's request.timeout.ms."""
    import signal
    import threading

    from wire.messages import WriteTxnMarkersRequest
    from wire.messages.write_txn_markers_request import WritableTxnMarker, WritableTxnMarkerTopic

    # The stopped follower stays in the ISR and registered for a minute; an append to its partition waits as long.
    overrides = {"replica.lag.time.max.ms": "60000", "request.timeout.ms": "60000"}
    with ClusterProcesses(tmp_path, size=3, overrides=overrides, zookeeper_session_timeout_ms=60_000) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        stalled, healthy = "marker-stalled", "marker-healthy"
        for topic, replicas in ((stalled, [1, 3]), (healthy, [1, 2])):
            admin.create_topics([NewTopic(topic, num_partitions=1, replica_assignment=[replicas])])[topic].result(30)
            wait_for(lambda t=topic, r=replicas: partition_state(admin, t) == {0: (1, r)}, f"{topic}'s ISR")

        def high_watermark(topic: str) -> int:
            with RawClient(cluster.broker(1).bootstrap) as c:
                r = c.request(ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
                    name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 7)
            return r.topics[0].partitions[0].offset

        answer: list = []
        request = WriteTxnMarkersRequest(markers=[WritableTxnMarker(
            producer_id=4242, producer_epoch=0, transaction_result=False, coordinator_epoch=0,
            topics=[WritableTxnMarkerTopic(name=stalled, partition_indexes=[0]),
                    WritableTxnMarkerTopic(name=healthy, partition_indexes=[0])])])

        def send() -> None:
            with RawClient(cluster.broker(1).bootstrap, timeout=120) as c:
                answer.append(c.request(request, 1))

        follower = cluster.broker(3).proc
        assert follower is not None
        os.kill(follower.pid, signal.SIGSTOP)
        sender = threading.Thread(target=send, daemon=True)
        try:
            sender.start()
            started = time.monotonic()
            wait_for(lambda: high_watermark(healthy) == 1, "the healthy partition's marker", timeout=20)
            assert time.monotonic() - started < 20 and not answer  # the stalled one still waits
        finally:
            os.kill(follower.pid, signal.SIGCONT)
        sender.join(90)
        assert answer, "no answer to WriteTxnMarkers once the follower was back"
        codes = {t.name: [p.error_code for p in t.partitions] for t in answer[0].markers[0].topics}
        assert codes == {stalled: [ErrorCode.NONE], healthy: [ErrorCode.NONE]}
        assert high_watermark(stalled) == 1
