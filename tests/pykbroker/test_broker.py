"""The broker: its copies of the coordinators' topic names (kept so that start-up needs no coordinator), the
hosting of large topics whose logs are created in the background, and stray logs at start on a single node."""

import json
import time

from confluent_kafka import KafkaError

from coordinator.group import GROUP_METADATA_TOPIC_NAME
from coordinator.transaction.metadata import TRANSACTION_STATE_TOPIC_NAME
from pykbroker import broker
from pykbroker.testing import BrokerProcess, RawClient
from storage.checkpoints import PartitionMetadataFile
from wire import build_simple_batch
from wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeTopicPartitionsRequest,
    FetchRequest,
    ListOffsetsRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.delete_topics_request import DeleteTopicState
from wire.messages.describe_topic_partitions_request import TopicRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData


def test_coordinator_topic_names_match_the_coordinators():
    assert broker.GROUP_METADATA_TOPIC_NAME == GROUP_METADATA_TOPIC_NAME
    assert broker.TRANSACTION_STATE_TOPIC_NAME == TRANSACTION_STATE_TOPIC_NAME


# -- topics larger than SINGLE_NODE_SYNC_NEW_LOGS: led at once, logs created in the background ---------------------------
def _create(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def _produce_to_every_partition(bootstrap: str, topic: str, partitions: int, value: bytes) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "log_level": 3})
    failed: list[object] = []
    for p in range(partitions):
        producer.produce(topic, value, partition=p, on_delivery=lambda err, _m: err is not None and failed.append(err))
    assert producer.flush(120) == 0 and not failed, failed[:1]


def _values(bootstrap: str, topic: str, partitions: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "check", "enable.partition.eof": True,
                         "log_level": 3})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values, ended, deadline = [], 0, time.monotonic() + 120
    while ended < partitions and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 0.2):
            if msg.error() is None:
                values.append(msg.value())
            elif msg.error().code() == KafkaError._PARTITION_EOF:
                ended += 1
    consumer.close()
    return values


def test_a_large_topic_serves_at_once_and_survives_kill_9_right_after_creation(tmp_path):
    """CreateTopics answers before most logs exist (as Kafka's, once the metadata is committed): a produce sent right
    after the answer waits for its logs and every partition acknowledges it, a fetch or DeleteRecords meanwhile is at
    worst NOT_LEADER_OR_FOLLOWER (retriable); kill -9 then loses nothing acknowledged, and a topic killed before any of
    its logs existed is created at the restart."""
    partitions = broker.SINGLE_NODE_SYNC_NEW_LOGS + 92

    def create(c: RawClient, name: str) -> None:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=partitions,
                                                                 replication_factor=1)], timeout_ms=60_000), 7)
        assert r.topics[0].error_code == 0

    with BrokerProcess(tmp_path / "b") as b:
        with RawClient(b.bootstrap, timeout=60) as c:
            create(c, "big")
            r = c.request(ProduceRequest(acks=-1, timeout_ms=60_000, topic_data=[TopicProduceData(
                name="big", partition_data=[PartitionProduceData(index=p, records=build_simple_batch(
                    [b"acked"], timestamp=int(time.time() * 1000))) for p in range(partitions)])]), 9)
            assert [p.error_code for p in r.responses[0].partition_responses] == [0] * partitions
            create(c, "bigger")  # answered before its logs exist
            f = c.request(FetchRequest(max_wait_ms=0, min_bytes=1, topics=[FetchTopic(topic="bigger", partitions=[
                FetchPartition(partition=partitions - 1, fetch_offset=0, partition_max_bytes=1024)])]), 12)
            assert f.responses[0].partitions[0].error_code in (0, 6)  # NONE, NOT_LEADER_OR_FOLLOWER
            d = c.request(DeleteRecordsRequest(timeout_ms=60_000, topics=[DeleteRecordsTopic(name="bigger", partitions=[
                DeleteRecordsPartition(partition_index=partitions - 1, offset=0)])]), 2)
            assert d.topics[0].partitions[0].error_code in (0, 6)  # as Kafka's: never UNKNOWN_TOPIC_OR_PARTITION
        b.kill()
        b.start(timeout=120)
        assert _values(b.bootstrap, "big", partitions) == [b"acked"] * partitions
        _produce_to_every_partition(b.bootstrap, "bigger", partitions, b"later")
        assert _values(b.bootstrap, "bigger", partitions) == [b"later"] * partitions


def test_every_topic_of_one_create_topics_survives_kill_9_right_after_the_answer(tmp_path):
    """A request's topics are committed together (one metadata write): each one answered created is there after
    kill -9 at once, with its id and partitions; so are the changes of a CreatePartitions and a DeleteTopics."""

    def topics(bootstrap: str) -> dict[str, tuple[object, int]]:
        """Each topic's id and partition count (every partition led by the node)."""
        with RawClient(bootstrap, timeout=60) as c:
            md = c.request(MetadataRequest(topics=None), 12)
        return {t.name: (t.topic_id, len([p for p in t.partitions if p.leader_id == md.brokers[0].node_id]))
                for t in md.topics if not t.name.startswith("__")}

    def create(c: RawClient, names: list[str]) -> dict[str, object]:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=4, replication_factor=1)
                                                  for n in names], timeout_ms=60_000), 7)
        assert [t.error_code for t in r.topics] == [0] * len(names)
        return {t.name: t.topic_id for t in r.topics}

    with BrokerProcess(tmp_path / "b") as b:
        with RawClient(b.bootstrap, timeout=60) as c:
            first = create(c, [f"a{i}" for i in range(6)])
            added = c.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(name=f"a{i}", count=6,
                                                                                    assignments=None)
                                                              for i in range(3)], timeout_ms=60_000), 3)
            assert [t.error_code for t in added.results] == [0] * 3
            deleted = c.request(DeleteTopicsRequest(topics=[DeleteTopicState(name=f"a{i}") for i in range(3, 6)],
                                                    timeout_ms=60_000), 6)
            assert [t.error_code for t in deleted.responses] == [0] * 3
            second = create(c, [f"b{i}" for i in range(6)])
        b.kill()  # right after the answer
        b.start(timeout=120)
        assert topics(b.bootstrap) == {**{f"a{i}": (first[f"a{i}"], 6) for i in range(3)},
                                       **{name: (topic_id, 4) for name, topic_id in second.items()}}


def test_a_topic_deleted_right_before_kill_9_stays_deleted_and_its_logs_are_deleted_at_start(tmp_path):
    """DeleteTopics answers once the deletion is committed and the logs are renamed ``-delete`` after the answer (as
    Kafka's brokers rename them once they apply the change). A node killed before the renames finds the logs at its
    next start with the metadata naming the deleted topic: they are deleted (not kept stray: one whose topic id was
    not written yet too, by name), the topic stays deleted and the other topics keep their records."""
    with BrokerProcess(tmp_path / "b") as b:
        _create(b.bootstrap, "gone", 2)
        _create(b.bootstrap, "kept", 1)
        with RawClient(b.bootstrap, timeout=60) as c:
            kept_id = c.wait_for_topics("kept")["kept"].topic_id
        _produce_to_every_partition(b.bootstrap, "gone", 2, b"old")
        _produce_to_every_partition(b.bootstrap, "kept", 1, b"kept")
        logs = b.data_dir / "logs"
        deadline = time.monotonic() + 30  # the topic id is written 300 ms after the log is created
        while not all((logs / f"gone-{p}" / "partition.metadata").exists() for p in range(2)):
            assert time.monotonic() < deadline, "partition.metadata never written"
            time.sleep(0.05)
        with RawClient(b.bootstrap, timeout=60) as c:
            r = c.request(DeleteTopicsRequest(topics=[DeleteTopicState(name="gone")], timeout_ms=60_000), 6)
            assert [t.error_code for t in r.responses] == [0]
        b.kill()  # right after the answer
        # The kill may have come after the renames: the dirs as they were before them (the renames change nothing
        # else), and gone-1 as if killed before its topic id was written.
        for d in logs.iterdir():
            if d.name.startswith("gone-") and d.name.endswith("-delete"):
                d.rename(logs / d.name.split(".")[0])
        (logs / "gone-1" / "partition.metadata").unlink()
        doc = json.loads((logs / "__cluster_metadata.json").read_text())
        assert [t["name"] for t in doc["topics"]] == ["kept"]
        assert [t["name"] for t in doc["deleted_topics"]] == ["gone"]
        b.overrides["log.segment.delete.delay.ms"] = "0"  # the renamed dirs are removed at once
        b.start()
        deadline = time.monotonic() + 30
        while any(d.name.startswith("gone-") for d in logs.iterdir()):
            assert not any(d.name.endswith("-stray") for d in logs.iterdir())
            assert time.monotonic() < deadline, sorted(d.name for d in logs.iterdir())
            time.sleep(0.05)
        with RawClient(b.bootstrap, timeout=60) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="gone")],
                                           allow_auto_topic_creation=False), 12)
            assert [(t.name, t.error_code) for t in md.topics] == [("gone", 3)]  # UNKNOWN_TOPIC_OR_PARTITION
            assert c.wait_for_topics("kept")["kept"].topic_id == kept_id
            ends = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
                name="kept", partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])]), 8)
            assert ends.topics[0].partitions[0].offset == 1


def test_a_topic_deleted_and_created_again_right_before_kill_9_serves_only_its_own_records(tmp_path):
    """A topic deleted and created again under its name, then kill -9 before the broker renamed the old logs and
    made the new ones that follow the answer (the last two; the window widened by the test hook
    PYKBROKER_TEST_LOG_WORK_DELAY_MS, which only delays that file work: ~300 ms in production, where the old logs'
    partition.metadata was not written yet either). As Kafka's, logs are told apart by topic id: the old topic's
    records, whose log wrote its id before them, never appear in the new topic (their logs deleted, the store
    naming that id deleted); the new topic's acknowledged records survive; its log killed before any record or
    topic id (t-7) is stray, kept ``-stray``, and the partition gets a new log; the topic id stays the one
    CreateTopics answered, also in partition.metadata."""
    partitions = broker.SINGLE_NODE_SYNC_NEW_LOGS + 2

    def create(c: RawClient, count: int) -> object:
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="t", num_partitions=count, replication_factor=1)],
                                          timeout_ms=60_000), 7)
        assert r.topics[0].error_code == 0
        return r.topics[0].topic_id

    def produce(c: RawClient, value: bytes, to: range) -> None:
        r = c.request(ProduceRequest(acks=-1, timeout_ms=60_000, topic_data=[TopicProduceData(
            name="t", partition_data=[PartitionProduceData(index=p, records=build_simple_batch(
                [value], timestamp=int(time.time() * 1000))) for p in to])]), 9)
        assert [p.error_code for p in r.responses[0].partition_responses] == [0] * len(to)

    b = BrokerProcess(tmp_path / "b")
    b.env["PYKBROKER_TEST_LOG_WORK_DELAY_MS"] = "120000"
    logs = b.data_dir / "logs"
    with b:
        with RawClient(b.bootstrap, timeout=60) as c:
            create(c, 2)
            grown = c.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(
                name="t", count=partitions, assignments=None)], timeout_ms=60_000), 3)  # 8 logs: made at once
            assert [t.error_code for t in grown.results] == [0]
            produce(c, b"old", range(partitions))
            r = c.request(DeleteTopicsRequest(topics=[DeleteTopicState(name="t")], timeout_ms=60_000), 6)
            assert [t.error_code for t in r.responses] == [0]
            topic_id = create(c, partitions)
            produce(c, b"new", range(broker.SINGLE_NODE_SYNC_NEW_LOGS - 1))
        b.kill()
        assert sorted(d.name for d in logs.iterdir() if d.name.startswith("t-") and "." not in d.name) == sorted(
            f"t-{p}" for p in range(partitions))  # t-8, t-9 the old topic's
        b.env.clear()
        b.start()
        _produce_to_every_partition(b.bootstrap, "t", partitions, b"later")
        assert sorted(_values(b.bootstrap, "t", partitions)) == \
            [b"later"] * partitions + [b"new"] * (broker.SINGLE_NODE_SYNC_NEW_LOGS - 1)
        stray = [d.name.split(".")[0] for d in logs.iterdir() if d.name.endswith("-stray")]
        assert stray == [f"t-{broker.SINGLE_NODE_SYNC_NEW_LOGS - 1}"]
        with RawClient(b.bootstrap, timeout=60) as c:
            assert c.wait_for_topics("t")["t"].topic_id == topic_id
            described = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequest(name="t")],
                                                                 response_partition_limit=100), 0)
            assert [(t.name, t.topic_id) for t in described.topics] == [("t", topic_id)]
        for p in range(partitions):
            assert PartitionMetadataFile(str(logs / f"t-{p}" / "partition.metadata")).read() == topic_id


# -- stray logs at start: the same road as a cluster's (LeadershipHandOver.delete_stray_logs) ---------------------
def test_a_log_whose_topic_the_metadata_lost_is_renamed_stray_at_start_and_the_topic_can_be_created_again(tmp_path):
    """A single node killed between a DeleteTopics' metadata commit and the rename of the topic's log finds at its
    next start a log the metadata does not have: renamed ``-stray`` and kept (as Kafka keeps it), not served, and
    the topic created again under the same name serves only its new records (no InconsistentTopicIdError)."""
    with BrokerProcess(tmp_path / "b") as b:
        _create(b.bootstrap, "t", 1)
        _produce_to_every_partition(b.bootstrap, "t", 1, b"old")
        logs = b.data_dir / "logs"
        deadline = time.monotonic() + 30  # the topic id is written 300 ms after the log is created
        while not (logs / "t-0" / "partition.metadata").exists():
            assert time.monotonic() < deadline, "partition.metadata never written"
            time.sleep(0.05)
        b.kill()
        # The metadata file as the DeleteTopics' commit left it: the topic gone, its log still in place.
        meta = logs / "__cluster_metadata.json"
        doc = json.loads(meta.read_text())
        assert [t["name"] for t in doc["topics"]] == ["t"]
        doc["topics"] = []
        meta.write_text(json.dumps(doc))
        b.start()
        stray = [d for d in logs.iterdir() if d.name.endswith("-stray")]
        assert [d.name.split(".")[0] for d in stray] == ["t-0"] and not (logs / "t-0").exists()
        assert sum(f.stat().st_size for f in stray[0].glob("*.log")) > 0  # kept, with its records
        with RawClient(b.bootstrap, timeout=60) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name="t")],
                                           allow_auto_topic_creation=False), 12)
            assert [(t.name, t.error_code) for t in md.topics] == [("t", 3)]  # UNKNOWN_TOPIC_OR_PARTITION
        _create(b.bootstrap, "t", 1)
        _produce_to_every_partition(b.bootstrap, "t", 1, b"new")
        assert _values(b.bootstrap, "t", 1) == [b"new"]
