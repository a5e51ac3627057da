"""A topic deleted on three pykbroker brokers, asked about by every broker while the deletion lands: Kafka 4.4
removes a topic from the metadata image in one record, so a client sees the topic with its leaders, then the
deleted-topic codes (UNKNOWN_TOPIC_OR_PARTITION by name, UNKNOWN_TOPIC_ID by id), never a leader-less
state in between (NOT_LEADER_OR_FOLLOWER, LEADER_NOT_AVAILABLE). librdkafka's test 0181 (a share consumer's
commit after the topic's deletion) saw NOT_LEADER_OR_FOLLOWER where it expects a deleted-topic code.

Metadata, Produce, Fetch (by name and by id), ListOffsets and ShareAcknowledge (of records a share consumer
holds) are sent to every broker, OffsetCommit (by name and by id) to a group's coordinator, in a loop from before the DeleteTopics until two seconds after its answer;
each answer's codes are recorded. About 15 s of ZooKeeper and three brokers: with PYKBROKER_SLOW_CLUSTER=1
(``make test-cluster-slow``); tests/replication/metadata/zk/test_metadata_store.py has the short slice. The same
scenario on a 3-node Kafka 4.4 KRaft cluster, the judge, with PYKBROKER_SLOW_DIFFERENTIAL=1
(``make differential-cluster``).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid

import pytest

from compat_tests.jvm.kafka_broker import KafkaCluster, jars_dir
from pykbroker.testing import ClusterProcesses, RawClient
from tests.pykbroker.handlers.test_share_groups import ACCEPT, enable, fetch, join
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreateTopicsRequest,
    DeleteTopicsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    ListOffsetsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    ProduceRequest,
    ShareAcknowledgeRequest,
)
from wire.messages.create_topics_request import CreatableReplicaAssignment, CreatableTopic
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData
from wire.messages.share_acknowledge_request import (
    AcknowledgementBatch,
    AcknowledgePartition,
    AcknowledgeTopic,
)

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka need java")

TOPIC, GROUP, PARTITIONS = "doomed", "g-doomed", 3
COMMITS = "g-doomed-commits"  # a classic group committing offsets of every partition (simple mode: no members)
LEADERLESS = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE}
# What each API answers for a deleted topic in Kafka 4.4 (by name: UNKNOWN_TOPIC_OR_PARTITION; by id: UNKNOWN_TOPIC_ID)
DELETED = {"metadata": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "produce": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
           "fetch_by_name": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "fetch_by_id": ErrorCode.UNKNOWN_TOPIC_ID,
           "list_offsets": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "share_acknowledge": ErrorCode.UNKNOWN_TOPIC_ID,
           "offset_commit_by_name": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "offset_commit_by_id": ErrorCode.UNKNOWN_TOPIC_ID}


def _ask(c: RawClient, topic_id: uuid.UUID, held: dict[int, tuple[int, int]], session: list,
         coordinator: bool) -> dict[str, list[int]]:
    """One round of every API on this broker's connection about the partitions it led (``held``: the record of
    each the share consumer holds), as clients ask leaders, and OffsetCommit of every partition if it is the
    coordinator of ``COMMITS``: the codes each answered (per partition)."""
    parts = sorted(held)
    md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=TOPIC)], allow_auto_topic_creation=False), 12)
    codes = {"metadata": [md.topics[0].error_code] + [p.error_code for p in md.topics[0].partitions]}
    batch = build_simple_batch([b"x"], timestamp=int(time.time() * 1000))
    r = c.request(ProduceRequest(acks=1, timeout_ms=5000, topic_data=[TopicProduceData(name=TOPIC, partition_data=[
        PartitionProduceData(index=p, records=batch) for p in parts])]), 9)
    codes["produce"] = [p.error_code for t in r.responses for p in t.partition_responses]
    for key, version, topic in (("fetch_by_name", 12, FetchTopic(topic=TOPIC)), ("fetch_by_id", 16, FetchTopic(topic_id=topic_id))):
        topic.partitions = [FetchPartition(partition=p, partition_max_bytes=1024) for p in parts]
        r = c.request(FetchRequest(max_wait_ms=0, min_bytes=0, topics=[topic]), version)
        codes[key] = [r.error_code] + [p.error_code for t in r.responses for p in t.partitions]
    r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name=TOPIC, partitions=[
        ListOffsetsPartition(partition_index=p, timestamp=-1) for p in parts])]), 7)
    codes["list_offsets"] = [p.error_code for t in r.topics for p in t.partitions]
    if parts:
        session[0] += 1
        r = c.request(ShareAcknowledgeRequest(group_id=GROUP, member_id=session[1], share_session_epoch=session[0],
                                              topics=[AcknowledgeTopic(topic_id=topic_id, partitions=[
                                                  AcknowledgePartition(partition_index=p, acknowledgement_batches=[
                                                      AcknowledgementBatch(first_offset=first, last_offset=last,
                                                                           acknowledge_types=[ACCEPT])])
                                                  for p, (first, last) in held.items()])]), 1)
        codes["share_acknowledge"] = [r.error_code] + [p.error_code for t in r.responses for p in t.partitions]
    if coordinator:
        for key, version, topic in (("offset_commit_by_name", 9, OffsetCommitRequestTopic(name=TOPIC)),
                                    ("offset_commit_by_id", 10, OffsetCommitRequestTopic(topic_id=topic_id))):
            topic.partitions = [OffsetCommitRequestPartition(partition_index=p, committed_offset=0)
                                for p in range(PARTITIONS)]
            r = c.request(OffsetCommitRequest(group_id=COMMITS, topics=[topic]), version)
            codes[key] = [p.error_code for t in r.topics for p in t.partitions]
    return codes


@pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                    reason="ZooKeeper and three brokers, 15 s: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)")
@pytest.mark.timeout(180)
def test_every_broker_answers_a_deleted_topic_as_kafka_never_leader_less(tmp_path):
    with ClusterProcesses(tmp_path, size=3) as cluster:
        _deleted_while_asked({n: cluster.broker(n).bootstrap for n in (1, 2, 3)})


@pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                    reason="three Kafka 4.4 JVMs: make differential-cluster (PYKBROKER_SLOW_DIFFERENTIAL=1)")
@pytest.mark.timeout(400)
def test_kafka_4_4_answers_a_deleted_topic_the_same(tmp_path):
    """The judge: the same scenario on a 3-node Kafka 4.4 KRaft cluster."""
    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka 4.4's jars are needed (java, Maven: make deps)")
    with KafkaCluster(jars, tmp_path, 3) as cluster:
        _deleted_while_asked({n: cluster.node(n).bootstrap for n in (1, 2, 3)})


def _deleted_while_asked(bootstraps: dict[int, str]) -> None:
    """Create the topic (broker n leads partition n - 1), have a share consumer hold a record of each partition,
    delete the topic while every broker is asked about it, and judge what they answered."""
    with RawClient(bootstraps[1], timeout=30) as admin:
        enable(admin)
        admin.request(CreateTopicsRequest(timeout_ms=30_000, topics=[CreatableTopic(
            name=TOPIC, num_partitions=-1, replication_factor=-1, assignments=[
                CreatableReplicaAssignment(partition_index=p, broker_ids=[p + 1, (p + 1) % 3 + 1, (p + 2) % 3 + 1])
                for p in range(PARTITIONS)])]), 7)
        described = admin.wait_for_topics(TOPIC, timeout=60)[TOPIC]
        topic_id = described.topic_id
        leaders = {p.partition_index: p.leader_id for p in described.partitions}
        deadline = time.monotonic() + 60
        while True:  # COORDINATOR_NOT_AVAILABLE while __consumer_offsets is being created (Kafka creates it now)
            coordinator, committer = admin.request(FindCoordinatorRequest(
                key_type=0, coordinator_keys=[GROUP, COMMITS]), 4).coordinators
            if coordinator.node_id >= 0 and committer.node_id >= 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    # a share consumer holds one record of each partition (from each leader, in that leader's share session)
    clients = {n: RawClient(bootstraps[n], timeout=30) for n in (1, 2, 3)}
    try:
        for p, leader in leaders.items():
            r = clients[leader].request(ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=p, records=build_simple_batch(
                    [b"v"], timestamp=int(time.time() * 1000)))])]), 9)
            assert r.responses[0].partition_responses[0].error_code == ErrorCode.NONE, r
        member, _ = join(clients[coordinator.node_id], GROUP, TOPIC)
        held: dict[int, dict[int, tuple[int, int]]] = {n: {} for n in clients}
        for n in clients:
            mine = [p for p, leader in leaders.items() if leader == n]
            deadline = time.monotonic() + 30
            while mine and len(held[n]) < len(mine):
                assert time.monotonic() < deadline, f"broker {n} gave no records of {mine}"
                r = fetch(clients[n], GROUP, member, 0, topic_id, partitions=mine, wait_ms=500)
                for p in r.responses[0].partitions if r.responses else []:
                    for a in p.acquired_records:
                        held[n][p.partition_index] = (a.first_offset, a.last_offset)
                if len(held[n]) < len(mine):  # a new session for the next try
                    fetch(clients[n], GROUP, member, -1, topic_id, partitions=[])
        seen: dict[tuple[int, str], list[int]] = {}
        errors: list[BaseException] = []
        stop = threading.Event()

        sessions = {n: [0, member] for n in clients}  # the fetch opened epoch 0; each acknowledgement the next

        def hammer(n: int) -> None:
            try:
                while not stop.is_set():
                    for api, codes in _ask(clients[n], topic_id, held[n], sessions[n], n == committer.node_id).items():
                        seen.setdefault((n, api), []).extend(codes)
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                errors.append(exc)

        threads = [threading.Thread(target=hammer, args=(n,), daemon=True) for n in clients]
        for t in threads:
            t.start()
        with RawClient(bootstraps[1], timeout=60) as admin:
            r = admin.request(DeleteTopicsRequest(topic_names=[TOPIC], timeout_ms=30_000), 5)
            assert r.responses[0].error_code == ErrorCode.NONE, r
        time.sleep(2.0)  # the loops go on asking every broker
        stop.set()
        for t in threads:
            t.join(30)
        assert not errors, errors
        last: dict[tuple[int, str], list[int]] = {}
        for n in clients:  # after the loops: every broker answers the deleted-topic codes
            for api, codes in _ask(clients[n], topic_id, held[n], sessions[n], n == committer.node_id).items():
                last[(n, api)] = codes
    finally:
        for c in clients.values():
            c.close()
    for (n, api), codes in sorted(seen.items()):
        print(f"broker {n} {api} answered {sorted(set(codes))}, then {last.get((n, api))}")
    leader_less = {k: sorted(set(v) & LEADERLESS) for k, v in seen.items() if set(v) & LEADERLESS}
    assert not leader_less, f"leader-less answers while the topic was deleted: {leader_less}"
    for (n, api), codes in last.items():
        expected = DELETED[api]
        assert set(codes) - {ErrorCode.NONE} == {expected}, (n, api, codes, seen.get((n, api)))
