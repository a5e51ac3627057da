"""Tiered storage judged by Apache Kafka 4.4 running its own test-only LocalTieredStorage
(compat_tests/jvm/tiered: 4.4's broker with 4.3.1's kafka-storage test jar, the last one published): the same
records (one Produce request per batch, so both brokers roll their segments at the same offsets) go to a tiered
topic on both; once the first segments are only remote, the ListOffsets answers (-1, -2, -3, -4, -5, -6 and
timestamps in the remote and the local part), DescribeLogDirs' partition size (local bytes only), what a
consumer reads from offset 0, the topic's tiered configs as
DescribeConfigs shows them and the refusals of bad tiered configs must be the same.

Cluster mode (PYKBROKER_SLOW_DIFFERENTIAL=1, ``make differential-cluster``): 3 pykbroker brokers against a 3-node
Kafka 4.4, each cluster's brokers sharing one remote storage (LocalTieredStorage's directory) and
``__remote_log_metadata`` replicated to 3; the tiered topics are replicated to 3, so every replica's local log
must shrink to its active segment, broker 1 is the one described and dumped, and the leader-change scenario
stops the partition's leader: another replica leads on from the remote data the stopped one copied."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from compat_tests.conftest import CLUSTER_MODE, differential_client, started_kafka_cluster
from compat_tests.jvm.kafka_broker import KafkaBroker
from pykbroker.remote_storage import LOCAL_TIERED_STORAGE
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient
from replication.remote_log_metadata import metadata_partition
from tests.replication.test_tiered_storage import SLOW, max_list_offsets_version
from wire import build_simple_batch
from wire.messages import DescribeLogDirsRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

HERE = Path(__file__).resolve().parent
BATCHES, PER_BATCH = 60, 10
BASE_TS = int(time.time() * 1000) - 3_600_000
TOPIC_CONFIGS = {"remote.storage.enable": "true", "internal.segment.bytes": "20000", "local.retention.bytes": "1"}
TIERED_NAMES = ("local.retention.bytes", "local.retention.ms", "remote.copy.lag.bytes", "remote.copy.lag.ms",
                "remote.log.copy.disable", "remote.log.delete.on.disable", "remote.storage.enable")


@pytest.fixture(scope="module")
def tiered_jars() -> Path:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    try:
        out = subprocess.run(["bash", str(HERE / "jvm" / "tiered" / "fetch_jars.sh")], capture_output=True,
                             text=True, timeout=900, check=True)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"Kafka 4.4's jars with LocalTieredStorage could not be fetched: {exc}")
    return Path(out.stdout.strip().splitlines()[-1])


COMMON = {"remote.log.storage.system.enable": "true", "remote.log.manager.task.interval.ms": "200",
          "log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0",
          "log.segment.delete.delay.ms": "0"}


MODES = ["single", pytest.param("cluster", marks=CLUSTER_MODE)]


@dataclass
class Side:
    """One side of the differential in ``mode``: its node 1's address (``bootstrap``) and log dir, every node's
    log dir and process by node id, and the tiered topics' replication factor."""

    mode: str
    bootstrap: str
    log_dir: Path
    nodes: dict[int, Any]
    log_dirs: dict[int, Path] = field(default_factory=dict)

    @property
    def replication(self) -> int:
        return len(self.nodes)

    def client(self) -> RawClient:
        """A client sending each request where a Kafka client would (the leaders, on a cluster)."""
        return differential_client(self.mode, self.bootstrap)

    def settled(self, topic: str) -> bool:
        """Every live replica's local log is its active segment alone (the rest is remote only)."""
        return all(len(list((self.log_dirs[n] / f"{topic}-0").glob("*.log"))) == 1
                   for n, node in self.nodes.items() if _alive(node))

    def leader(self, topic: str) -> int:
        with self.client() as c:
            meta = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=topic)]), 12)
        return meta.topics[0].partitions[0].leader_id


def _alive(node: Any) -> bool:
    return node.alive if isinstance(node, BrokerProcess) else node.proc is not None and node.proc.poll() is None


@pytest.fixture(scope="module", params=MODES)
def processes(request, tiered_jars, tmp_path_factory):
    """{"kafka": Side, "pykbroker": Side}: one node each, or on a cluster 3 nodes sharing each side's remote
    storage directory."""
    mode = request.param
    root = tmp_path_factory.mktemp(f"tiered-differential-{mode}")
    kafka_overrides = {
        **COMMON, "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
        "rsm.config.dir": str(root / "kafka-remote"), "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
        **({"rlmm.config.remote.log.metadata.topic.replication.factor": "1"} if mode == "single" else {})}
    ours = {**COMMON, "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
            "rsm.config.dir": str(root / "pykbroker-remote"),
            "rlmm.config.remote.log.metadata.topic.num.partitions": "3"}
    if mode == "single":
        kafka = KafkaBroker(tiered_jars, root / "kafka", overrides=kafka_overrides)
        broker = BrokerProcess(root / "pykbroker", overrides=ours)
        with kafka, broker:  # each starts on entering
            yield {"kafka": Side(mode, kafka.bootstrap, kafka.root / "logs", {1: kafka}, {1: kafka.root / "logs"}),
                   "pykbroker": Side(mode, broker.bootstrap, broker.data_dir / "logs", {1: broker},
                                     {1: broker.data_dir / "logs"})}
        return
    with started_kafka_cluster(tiered_jars, root / "kafka", kafka_overrides) as cluster, \
            ClusterProcesses(root / "pykbroker", overrides=ours) as brokers:
        yield {"kafka": Side(mode, cluster.node(1).bootstrap, cluster.node(1).root / "logs",
                             {n.node_id: n for n in cluster.nodes}, {n.node_id: n.root / "logs" for n in cluster.nodes}),
               "pykbroker": Side(mode, brokers.broker(1).bootstrap, brokers.broker(1).data_dir / "logs",
                                 dict(brokers.brokers), {i: b.data_dir / "logs" for i, b in brokers.brokers.items()})}


@pytest.fixture(scope="module")
def brokers(processes):
    return processes


RETRIABLE = (3, 5, 6)  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER


def produce_batches(side: Side, topic: str) -> None:
    with side.client() as c:
        for b in range(BATCHES):
            values = [f"value-{b * PER_BATCH + i:06d}-".encode() + b"x" * 150 for i in range(PER_BATCH)]
            batch = build_simple_batch(values, timestamp=BASE_TS + 1000 * b)
            request = ProduceRequest(acks=-1, timeout_ms=10_000, topic_data=[TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=batch)])])
            deadline = time.monotonic() + 60
            while True:  # a new topic's leader may not be known to the broker's request path yet
                answer = c.request(request, 9).responses[0].partition_responses[0]
                if answer.error_code not in RETRIABLE or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert answer.error_code == 0, answer


def list_offset(side: Side, topic: str, timestamp: int, version: int) -> tuple[int, int, int, int]:
    with side.client() as c:
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
        a = c.request(request, version).topics[0].partitions[0]
        return a.error_code, a.timestamp, a.offset, a.leader_epoch


def wait_until(condition, timeout: float = 90.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise TimeoutError(f"no {what} after {timeout}s")


def read_offsets(side: Side, topic: str, expected: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": side.bootstrap, "group.id": f"g-{time.monotonic_ns()}",
                         "enable.auto.commit": False, "max.partition.fetch.bytes": 16384})
    consumer.assign([TopicPartition(topic, 0, 0)])
    out: list[int] = []
    deadline = time.monotonic() + 60
    while len(out) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            out.append(msg.offset())
    consumer.close()
    return out


@pytest.mark.timeout(300)
def test_list_offsets_reads_and_configs_of_a_tiered_topic_are_kafkas(brokers):
    answers = {}
    for name, side in brokers.items():
        admin = AdminClient({"bootstrap.servers": side.bootstrap})
        admin.create_topics([NewTopic("tiered", 1, side.replication, config=TOPIC_CONFIGS)])["tiered"].result(120)
        produce_batches(side, "tiered")
        # Settled: every closed segment copied and deleted locally, only the active segment is left.
        wait_until(partial(side.settled, "tiered"), what=f"remote-only data on {name}")
        time.sleep(1.0)  # a few more rounds of both copy tasks: nothing may change any more
        got = {ts: list_offset(side, "tiered", ts, 9) for ts in (-1, -2, -3, -4, -5)}
        got["-6 v10"] = list_offset(side, "tiered", -6, 10)  # KIP-1023's timestamp before its version
        got["-5 v8"] = list_offset(side, "tiered", -5, 8)
        got["-4 v7"] = list_offset(side, "tiered", -4, 7)
        if all(max_list_offsets_version(s.bootstrap) >= 11 for s in brokers.values()):
            got["-6 v11"] = list_offset(side, "tiered", -6, 11)
        for b in (0, 7, 30, 59):  # timestamps of batches in the remote and the local part
            got[f"ts of batch {b}"] = list_offset(side, "tiered", BASE_TS + 1000 * b, 9)
        got["ts after the last"] = list_offset(side, "tiered", BASE_TS + 1000 * BATCHES, 9)
        # DescribeLogDirs' size is the local log only (UnifiedLog.size): the active segment's bytes (broker 1's).
        with RawClient(side.bootstrap) as c:
            results = c.request(DescribeLogDirsRequest(topics=None), 4).results
        sizes = [p.partition_size for r in results for t in r.topics if t.name == "tiered" for p in t.partitions]
        local = sum(f.stat().st_size for f in (side.log_dir / "tiered-0").glob("*.log"))
        got["describe log dirs"] = (sizes, sizes == [local])
        got["read from 0"] = read_offsets(side, "tiered", BATCHES * PER_BATCH) == list(range(BATCHES * PER_BATCH))
        described = admin.describe_configs([ConfigResource("topic", "tiered")])
        entries = list(described.values())[0].result(120)
        got["configs"] = {n: (entries[n].value, entries[n].source) for n in TIERED_NAMES if n in entries}
        answers[name] = got
    assert answers["pykbroker"] == answers["kafka"]


BAD_CONFIGS = [
    {"remote.storage.enable": "true", "cleanup.policy": "compact"},
    {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"},
    {"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "-1"},
    {"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "2000"},
    {"remote.storage.enable": "true", "remote.log.copy.disable": "true", "retention.ms": "1000",
     "local.retention.ms": "500"},
    {"remote.storage.enable": "true", "retention.ms": "1000", "remote.copy.lag.ms": "1001"},
    {"remote.copy.lag.bytes": "-2"},
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("configs", BAD_CONFIGS, ids=lambda c: ",".join(f"{k}={v}" for k, v in c.items()))
def test_bad_tiered_configs_are_refused_as_kafka_refuses_them(brokers, configs):
    answers = {}
    for name, side in brokers.items():
        admin = AdminClient({"bootstrap.servers": side.bootstrap})
        future = admin.create_topics([NewTopic("bad", 1, 1, config=configs)], validate_only=True)["bad"]
        try:
            future.result(120)
            answers[name] = None
        except KafkaException as exc:
            error = exc.args[0]
            answers[name] = (error.name(), error.str())
    assert answers["pykbroker"] == answers["kafka"]


DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"
_KEPT = ("state", "startOffset", "endOffset", "segmentSizeInBytes", "segmentLeaderEpochs", "txnIdxEmpty")


def topic_id(log_dir: Path, topic: str) -> uuid.UUID:
    """The topic id a broker wrote to ``<topic>-0/partition.metadata`` (Kafka's base64 form)."""
    text = (log_dir / f"{topic}-0" / "partition.metadata").read_text()
    encoded = re.search(r"topic_id: (\S+)", text).group(1)
    return uuid.UUID(bytes=base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))


def decoded_metadata(jars: Path, log_dir: Path, topic: str) -> dict[int, list[str]]:
    """Kafka's kafka-dump-log --remote-log-metadata-decoder over each __remote_log_metadata partition: the records
    of ``topic`` by metadata partition, each as its class and the fields both brokers must agree on."""
    out: dict[int, list[str]] = {}
    for directory in sorted(log_dir.glob("__remote_log_metadata-*")):
        files = sorted(str(f) for f in directory.glob("*.log"))
        dumped = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{jars}/*", DUMP_LOG,
                                 "--remote-log-metadata-decoder", "--files", ",".join(files)],
                                capture_output=True, text=True, timeout=120, check=True)
        records = []
        for line in dumped.stdout.splitlines():
            found = re.search(r"payload: (\w+)\{(.*)\}\s*$", line)
            if found is None or f"topic={topic}" not in line and f":{topic}-0" not in line:
                continue
            fields = dict(re.findall(r"(\w+)=(\{[^}]*\}|[^,}]+)", found.group(2)))
            records.append(found.group(1) + " " + " ".join(f"{k}={fields[k]}" for k in _KEPT if k in fields))
        if records:
            out[int(directory.name.rsplit("-", 1)[1])] = records
    return out


@pytest.mark.timeout(300)
def test_remote_log_metadata_records_are_kafkas_and_kafkas_tool_decodes_them(brokers, tiered_jars):
    """pykbroker's __remote_log_metadata is Kafka's: kafka-dump-log's remote log metadata decoder reads the same
    records (types, states, offsets, sizes, leader epochs) from both brokers' segments, and each broker put them
    in the partition Kafka's RemoteLogMetadataTopicPartitioner picks for the topic's id."""
    answers = {}
    for name, side in brokers.items():
        admin = AdminClient({"bootstrap.servers": side.bootstrap})
        admin.create_topics([NewTopic("dumped", 1, side.replication, config=TOPIC_CONFIGS)])["dumped"].result(120)
        produce_batches(side, "dumped")
        wait_until(partial(side.settled, "dumped"), what=f"remote-only data on {name}")
        decoded = decoded_metadata(tiered_jars, side.log_dir, "dumped")
        expected = metadata_partition(topic_id(side.log_dir, "dumped"), 0, 3)
        answers[name] = (list(decoded) == [expected], decoded.get(expected))
    assert answers["pykbroker"] == answers["kafka"]
    assert answers["kafka"][0] and answers["kafka"][1]


def batch_epoch(side: Side, topic: str, offset: int) -> int:
    """The partition leader epoch of the batch holding ``offset``, as a consumer reads it."""
    consumer = Consumer({"bootstrap.servers": side.bootstrap, "group.id": f"g-{time.monotonic_ns()}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, offset)])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                return msg.leader_epoch()
        raise TimeoutError(f"offset {offset} of {topic} not read")
    finally:
        consumer.close()


@SLOW
@pytest.mark.timeout(420)
def test_slow_latest_tiered_answers_the_epoch_of_the_copied_offset_across_a_leader_change(brokers):
    """ListOffsets LATEST_TIERED (-5), EARLIEST_LOCAL (-4) and EARLIEST_PENDING_UPLOAD (-6) after a leader change
    while the highest copied offset is of the epoch before it, then once the data produced after it is copied too.
    On one node the change is a restart; on a cluster the leader stops and another replica leads on. Each
    answer's epoch is compared by whether it is the epoch of the batch holding its offset: Kafka's restart starts
    a new leader epoch (fenced, then elected again), pykbroker's single node keeps its epoch, so the numbers differ.
    Last in this module: it restarts or stops a broker of each side."""
    answers = {}
    for name, side in brokers.items():
        admin = AdminClient({"bootstrap.servers": side.bootstrap})
        admin.create_topics([NewTopic("relead", 1, side.replication, config=TOPIC_CONFIGS)])["relead"].result(120)
        produce_batches(side, "relead")
        settled = partial(side.settled, "relead")
        wait_until(settled, what=f"remote-only data on {name}")
        time.sleep(1.0)

        def answer(ts: int, side: Side = side) -> tuple[int, int, int, object]:
            error, timestamp, offset, epoch = list_offset(side, "relead", ts, 9)
            _, _, end, current = list_offset(side, "relead", -1, 9)
            if offset < 0:
                return error, timestamp, offset, epoch
            if offset >= end:
                return error, timestamp, offset, "the leader's" if epoch == current else epoch
            return error, timestamp, offset, "its batch's" if epoch == batch_epoch(side, "relead", offset) \
                else epoch

        got: dict[str, object] = {"-5 before": answer(-5)}
        first_epoch = list_offset(side, "relead", -1, 9)[3]
        leader = side.leader("relead")
        if side.mode == "single":
            side.nodes[leader].stop()
            side.nodes[leader].start()
        else:
            side.nodes[leader].stop()  # another replica leads on
            if leader == 1:  # node 1 is the one asked: ask another
                side.bootstrap = next(n.bootstrap for i, n in side.nodes.items() if i != 1)
        wait_until(partial(lambda s, copied: list_offset(s, "relead", -1, 9)[0] == 0
                           and list_offset(s, "relead", -5, 9)[2] == copied, side, got["-5 before"][2]),
                   timeout=120, what=f"the copied offset known again on {name}")
        if name == "kafka" or side.mode == "cluster":  # the case where the copied offset's epoch is not the leader's
            assert list_offset(side, "relead", -1, 9)[3] > first_epoch
        got |= {"-5 after the change": answer(-5), "-4 after the change": answer(-4),
                "-6 after the change": answer(-6)}
        produce_batches(side, "relead")
        wait_until(settled, what=f"the new epoch's data remote on {name}")
        time.sleep(1.0)
        got |= {"-5 once that is copied": answer(-5), "-4 then": answer(-4), "-6 then": answer(-6)}
        # Both epochs' records, from the remote storage the stopped leader and its successor copied to.
        got["read from 0"] = read_offsets(side, "relead", 2 * BATCHES * PER_BATCH) == list(
            range(2 * BATCHES * PER_BATCH))
        answers[name] = got
    assert answers["pykbroker"] == answers["kafka"]
