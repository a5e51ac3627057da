"""Tiered storage (KIP-405) on a real broker with stock clients: a topic whose first segments are only in
remote storage (a directory backend here; tests/storage/remote/test_s3.py runs the same on an S3 server)
is read from the start by confluent-kafka, ListOffsets answers -4/-5/-6 as Kafka's UnifiedLog, retention
and DeleteRecords delete remote segments, and Kafka's config refusals come back as INVALID_CONFIG."""

from __future__ import annotations

import os
import shutil
import time
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from pykbroker.remote_storage import LOCAL_TIERED_STORAGE
from pykbroker.testing import BrokerProcess, ClusterProcesses, RawClient, free_port
from tests.s3_server import S3Server, s3_server_available
from wire import ErrorCode
from wire.messages import ApiVersionsRequest, DescribeLogDirsRequest, FetchRequest, ListOffsetsRequest
from wire.messages.fetch_request import FetchPartition, FetchTopic
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic

EARLIEST, LATEST, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -2, -1, -4, -5, -6


def tiered_overrides(remote_dir: Path, **extra: str) -> dict[str, str]:
    return {"remote.log.storage.system.enable": "true", "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
            "rsm.config.dir": str(remote_dir), "remote.log.manager.task.interval.ms": "200",
            "log.retention.check.interval.ms": "200", "log.initial.task.delay.ms": "0",
            "log.segment.delete.delay.ms": "0", "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
            **extra}


TOPIC_CONFIGS = {"remote.storage.enable": "true", "internal.segment.bytes": "20000", "local.retention.bytes": "1"}


def list_offset(bootstrap: str, topic: str, timestamp: int, version: int = 9) -> tuple[int, int, int]:
    with RawClient(bootstrap) as c:
        request = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[ListOffsetsTopic(
            name=topic, partitions=[ListOffsetsPartition(partition_index=0, timestamp=timestamp)])])
        answer = c.request(request, version).topics[0].partitions[0]
        return answer.error_code, answer.offset, answer.leader_epoch


def max_list_offsets_version(bootstrap: str) -> int:
    with RawClient(bootstrap) as c:
        response = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        return next(k.max_version for k in response.api_keys if k.api_key == 2)


def wait_until(condition, timeout: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(f"no {what} after {timeout}s")


BASE_TS = int(time.time() * 1000) - 7_200_000  # record i has timestamp BASE_TS + 1000 * i (within retention)


def produce(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 4096})
    for i in range(start, start + n):
        producer.produce(topic, value=f"value-{i:06d}-".encode() + b"x" * 150, key=str(i).encode(), partition=0,
                         timestamp=BASE_TS + 1000 * i)
    assert producer.flush(30) == 0


def produce_acks_all(bootstrap: str, topic: str, n: int, start: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 4096})
    for i in range(start, start + n):
        producer.produce(topic, value=f"value-{i:06d}-".encode() + b"x" * 150, partition=0)
    assert producer.flush(60) == 0


def consume_all(bootstrap: str, topic: str, expected: int, offset: int = 0) -> list[tuple[int, bytes]]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{time.monotonic_ns()}",
                         "enable.auto.commit": False,
                         "max.partition.fetch.bytes": 16384})
    consumer.assign([TopicPartition(topic, 0, offset)])
    out: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 60
    while len(out) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            raise KafkaException(msg.error())
        out.append((msg.offset(), msg.value()))
    consumer.close()
    return out


def remote_log_objects(remote_dir: Path) -> list[Path]:
    return sorted(remote_dir.rglob("*.log"))


def local_segments(broker: BrokerProcess, topic: str) -> list[Path]:
    return sorted((broker.data_dir / "logs" / f"{topic}-0").glob("*.log"))


@pytest.mark.timeout(180)
def test_a_consumer_reads_a_topic_whose_first_segments_are_only_remote(tmp_path):
    remote = tmp_path / "remote"
    with BrokerProcess(tmp_path / "b", overrides=tiered_overrides(remote)) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("tiered", 1, 1, config=TOPIC_CONFIGS)])["tiered"].result(30)
        produce(broker.bootstrap, "tiered", 600)
        # Copied, then deleted locally (local.retention.bytes=1): only the active segment stays local.
        wait_until(lambda: len(local_segments(broker, "tiered")) == 1, what="local deletion")
        local_start = int(local_segments(broker, "tiered")[0].name[:20])
        assert local_start > 200
        assert list_offset(broker.bootstrap, "tiered", EARLIEST_LOCAL) == (ErrorCode.NONE, local_start, 0)
        assert list_offset(broker.bootstrap, "tiered", EARLIEST)[:2] == (ErrorCode.NONE, 0)
        assert list_offset(broker.bootstrap, "tiered", LATEST)[:2] == (ErrorCode.NONE, 600)
        assert list_offset(broker.bootstrap, "tiered", LATEST_TIERED) == (ErrorCode.NONE, local_start - 1, 0)
        # -6 (KIP-1023) needs ListOffsets v11: asked before, Kafka answers UNSUPPORTED_VERSION.
        assert list_offset(broker.bootstrap, "tiered", EARLIEST_PENDING_UPLOAD, 10)[0] == ErrorCode.UNSUPPORTED_VERSION
        assert list_offset(broker.bootstrap, "tiered", EARLIEST_PENDING_UPLOAD, version=11) == (ErrorCode.NONE, local_start, 0)
        assert remote_log_objects(remote)

        records = consume_all(broker.bootstrap, "tiered", 600)
        assert [o for o, _ in records] == list(range(600))
        assert all(v.startswith(f"value-{o:06d}-".encode()) for o, v in records)
        # From the middle of the remote part too.
        assert [o for o, _ in consume_all(broker.bootstrap, "tiered", 10, offset=57)] == list(range(57, 67))
        # Timestamps are searched in the remote segments first, then the local ones.
        for offset in (0, 57, local_start - 1, local_start, 599):
            assert list_offset(broker.bootstrap, "tiered", BASE_TS + 1000 * offset - 500) == (ErrorCode.NONE, offset, 0)
        assert list_offset(broker.bootstrap, "tiered", BASE_TS + 1000 * 600)[:2] == (ErrorCode.NONE, -1)

        # A restart keeps the remote part: the log still starts at 0.
        broker.stop()
        broker.start()
        wait_until(lambda: list_offset(broker.bootstrap, "tiered", EARLIEST)[:2] == (ErrorCode.NONE, 0),
                   what="log start 0 after the restart")
        assert [o for o, _ in consume_all(broker.bootstrap, "tiered", 600)] == list(range(600))

        # DeleteRecords into the remote part: the log starts there and remote segments below it go.
        before = len(remote_log_objects(remote))
        result = admin.delete_records([TopicPartition("tiered", 0, 150)])
        list(result.values())[0].result(30)
        assert list_offset(broker.bootstrap, "tiered", EARLIEST)[:2] == (ErrorCode.NONE, 150)
        wait_until(lambda: len(remote_log_objects(remote)) < before, what="remote segments below 150 deleted")
        assert [o for o, _ in consume_all(broker.bootstrap, "tiered", 450, offset=150)] == list(range(150, 600))


def fetch_at(bootstrap: str, topic: str, offset: int) -> tuple[int, bytes]:
    with RawClient(bootstrap) as c:
        response = c.request(FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, topics=[FetchTopic(
            topic=topic, partitions=[FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=16384)])]),
            11)
        p = response.responses[0].partitions[0]
        return p.error_code, bytes(p.records or b"")


@pytest.mark.timeout(120)
def test_describe_log_dirs_counts_local_bytes_and_the_remote_quotas_hold_copies_and_reads_back(tmp_path):
    remote = tmp_path / "remote"
    metrics_port = free_port()
    # Copies: 40 kB/s over 2 one-second windows, each ~20 kB segment recorded whole before it is copied.
    overrides = tiered_overrides(remote, **{"remote.log.manager.fetch.max.bytes.per.second": "1000",
                                            "remote.log.manager.copy.max.bytes.per.second": "40000",
                                            "remote.log.manager.copy.quota.window.num": "2",
                                            "metrics.port": str(metrics_port)})
    with BrokerProcess(tmp_path / "b", overrides=overrides) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("quota", 1, 1, config=TOPIC_CONFIGS)])["quota"].result(30)
        started = time.monotonic()
        produce(broker.bootstrap, "quota", 600)
        wait_until(lambda: len(local_segments(broker, "quota")) == 1, what="local deletion")
        # Five segments or more at 40 kB/s: the third one onwards waited for the windowed rate.
        copied = sum(p.stat().st_size for p in remote_log_objects(remote))
        assert copied > 80_000 and time.monotonic() - started >= (copied - 80_000) / 40_000
        assert metric(metrics_port, "kafka_server_remotelogmanager_remote_copy_throttle_time_max") > 0
        # DescribeLogDirs' size is the local log only, as Kafka's UnifiedLog.size (the remote part is not in it).
        with RawClient(broker.bootstrap) as c:
            results = c.request(DescribeLogDirsRequest(topics=None), 4).results
        sizes = [p.partition_size for r in results for t in r.topics if t.name == "quota" for p in t.partitions]
        assert sizes == [local_segments(broker, "quota")[0].stat().st_size]
        # 1000 bytes/s over 11 one-second windows: the first remote read goes through, the next one (at once)
        # is answered with no records and no error, as Kafka's ReplicaManager does over its remote fetch quota.
        code, first = fetch_at(broker.bootstrap, "quota", 0)
        assert code == ErrorCode.NONE and len(first) > 1000
        assert fetch_at(broker.bootstrap, "quota", 0) == (ErrorCode.NONE, b"")
        assert metric(metrics_port, "kafka_server_remotelogmanager_remote_fetch_throttle_time_max") > 0
        # The quota is a dynamic broker config, as in Kafka: raised, the reads go on.
        quota = ConfigResource("broker", "1", incremental_configs=[ConfigEntry(
            "remote.log.manager.fetch.max.bytes.per.second", str(1 << 40), incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([quota])[quota].result(30)
        wait_until(lambda: fetch_at(broker.bootstrap, "quota", 0)[1] == first, what="reads after raising the quota")


@pytest.mark.timeout(120)
def test_large_remote_reads_reach_a_consumer_whole(tmp_path):
    """Fetches of about 1 MiB from remote segments (records kept apart from the response buffer, written alone)."""
    with BrokerProcess(tmp_path / "b", overrides=tiered_overrides(tmp_path / "remote")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        configs = {**TOPIC_CONFIGS, "internal.segment.bytes": "400000"}
        admin.create_topics([NewTopic("big", 1, 1, config=configs)])["big"].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5, "batch.size": 65536})
        for i in range(2000):
            producer.produce("big", value=f"{i:06d}".encode() + os.urandom(1000), partition=0)
        assert producer.flush(30) == 0
        # Several 400 kB segments only remote.
        wait_until(lambda: list_offset(broker.bootstrap, "big", EARLIEST_LOCAL)[1] > 1000, what="local deletion")
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "big", "enable.auto.commit": False})
        consumer.assign([TopicPartition("big", 0, 0)])
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 60
        while len(got) < 2000 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append((msg.offset(), msg.value()[:6]))
        consumer.close()
        assert got == [(i, f"{i:06d}".encode()) for i in range(2000)]


@pytest.mark.timeout(120)
def test_total_retention_and_topic_deletion_delete_remote_segments(tmp_path):
    remote = tmp_path / "remote"
    with BrokerProcess(tmp_path / "b", overrides=tiered_overrides(remote)) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        configs = {**TOPIC_CONFIGS, "retention.bytes": "60000"}
        admin.create_topics([NewTopic("bounded", 1, 1, config=configs)])["bounded"].result(30)
        produce(broker.bootstrap, "bounded", 1500)
        wait_until(lambda: list_offset(broker.bootstrap, "bounded", EARLIEST)[1] > 0, what="remote retention")
        # Once everything closed is copied, the whole log (remote plus local) is within retention.bytes.
        wait_until(lambda: len(local_segments(broker, "bounded")) == 1, what="every closed segment copied")
        wait_until(lambda: sum(p.stat().st_size for p in remote_log_objects(remote)) <= 60000,
                   what="remote segments within retention.bytes")
        start = list_offset(broker.bootstrap, "bounded", EARLIEST)[1]
        assert start > 0
        records = consume_all(broker.bootstrap, "bounded", 1500 - start, offset=start)
        assert [o for o, _ in records] == list(range(start, 1500))
        # Deleting the topic deletes its remote data too.
        admin.delete_topics(["bounded"])["bounded"].result(30)
        wait_until(lambda: not remote_log_objects(remote), what="the deleted topic's remote segments gone")


def test_tiered_configs_are_refused_as_kafka_refuses_them(tmp_path):
    with BrokerProcess(tmp_path / "off") as broker:  # remote.log.storage.system.enable=false
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        future = admin.create_topics([NewTopic("t", 1, 1, config={"remote.storage.enable": "true"})])["t"]
        with pytest.raises(KafkaException, match="Tiered Storage functionality is disabled in the broker"):
            future.result(30)
    with BrokerProcess(tmp_path / "on", overrides=tiered_overrides(tmp_path / "remote")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        future = admin.create_topics([NewTopic("c", 1, 1, config={"remote.storage.enable": "true",
                                                                   "cleanup.policy": "compact"})])["c"]
        with pytest.raises(KafkaException, match="only supports topics with cleanup.policy=delete"):
            future.result(30)
        admin.create_topics([NewTopic("t", 1, 1, config={"remote.storage.enable": "true"})])["t"].result(30)
        resource = ConfigResource("topic", "t", incremental_configs=[
            ConfigEntry("remote.storage.enable", "false", incremental_operation=AlterConfigOpType.SET)])
        with pytest.raises(KafkaException, match="It is invalid to disable remote storage without deleting"):
            admin.incremental_alter_configs([resource])[resource].result(30)
        described = admin.describe_configs([ConfigResource("topic", "t")])
        entries = list(described.values())[0].result(30)
        assert entries["remote.storage.enable"].value == "true"
        assert entries["remote.copy.lag.ms"].value == "0"


BROKER_TOPIC_METRICS = "kafka_server_brokertopicmetrics"


def metric_when_up(port: int, name: str) -> float | None:
    """``metric``, None while the endpoint is not listening yet (a broker starting)."""
    try:
        return metric(port, name)
    except OSError:
        return None


def metric(port: int, name: str, labels: str = "") -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line.startswith(name + (labels or " ")) or (not labels and line.startswith(name + "{}")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.timeout(180)
def test_an_unreachable_store_makes_copying_wait_and_loses_nothing(tmp_path):
    remote = tmp_path / "remote"
    metrics_port = free_port()
    overrides = tiered_overrides(remote, **{"metrics.port": str(metrics_port)})
    with BrokerProcess(tmp_path / "b", overrides=overrides) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("outage", 1, 1, config=TOPIC_CONFIGS)])["outage"].result(30)
        produce(broker.bootstrap, "outage", 300)
        wait_until(lambda: len(local_segments(broker, "outage")) == 1, what="every closed segment copied")
        remote.rename(tmp_path / "unmounted")  # the store goes away
        tiered_before = list_offset(broker.bootstrap, "outage", LATEST_TIERED)[1]
        produce(broker.bootstrap, "outage", 300, start=300)
        wait_until(lambda: "remote storage unavailable" in broker.log(), what="the outage's log line")
        wait_until(lambda: metric(metrics_port, "kafka_server_brokertopicmetrics_remotecopyerrorspersec") > 0,
                   what="the copy error meter")
        assert metric(metrics_port, "kafka_server_brokertopicmetrics_remotecopylagbytes", '{topic="outage"}') > 0
        # Nothing uncopied was deleted locally: the local log starts right after what is remote, and the tail
        # is served.
        assert list_offset(broker.bootstrap, "outage", LATEST_TIERED)[1] == tiered_before
        assert list_offset(broker.bootstrap, "outage", EARLIEST_LOCAL)[1] <= tiered_before + 1
        tail = consume_all(broker.bootstrap, "outage", 600 - tiered_before - 1, offset=tiered_before + 1)
        assert [o for o, _ in tail] == list(range(tiered_before + 1, 600))
        (tmp_path / "unmounted").rename(remote)  # back
        wait_until(lambda: list_offset(broker.bootstrap, "outage", LATEST_TIERED)[1] > 300, what="copying again")
        wait_until(lambda: "remote storage is reachable again" in broker.log(), what="the recovery's log line")
        assert [o for o, _ in consume_all(broker.bootstrap, "outage", 600)] == list(range(600))


@pytest.mark.skipif(not s3_server_available(), reason="no S3 server installed (make deps builds versitygw)")
@pytest.mark.timeout(180)
def test_kill_9_during_an_upload_leaves_no_counted_orphan_and_no_gap(tmp_path):
    metrics_port = free_port()
    with S3Server(tmp_path / "s3") as s3:
        overrides = {**tiered_overrides(tmp_path / "unused"), **s3.broker_overrides("killed-bucket"),
                     "metrics.port": str(metrics_port)}
        del overrides["rsm.config.dir"]
        store = s3.object_store("killed-bucket")

        def objects(suffix: str) -> list[str]:
            return [k for k in store.list() if k.endswith(suffix)]

        broker = BrokerProcess(tmp_path / "b", overrides=overrides)
        with broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("killed", 1, 1, config=TOPIC_CONFIGS)])["killed"].result(30)
            produce(broker.bootstrap, "killed", 200)
            wait_until(lambda: objects(".log"), what="a first copy")
            # The store hangs: the next copy records COPY_SEGMENT_STARTED and then waits on its upload.
            s3.pause()
            try:
                produce(broker.bootstrap, "killed", 200, start=200)
                wait_until(lambda: broker.log().count("copying segment") > broker.log().count("copied segment"),
                           what="an upload under way")
                broker.kill()  # SIGKILL: the segment's COPY_SEGMENT_STARTED record is in, its copy is not finished
            finally:
                s3.resume()
            broker.start()
            wait_until(lambda: "left in COPY_SEGMENT_STARTED" in broker.log(), what="the half copy cleaned up")
            wait_until(lambda: list_offset(broker.bootstrap, "killed", LATEST_TIERED)[1] > 200, what="copying on")
            # Every object left belongs to a finished copy: as many indexes as data objects, all of them counted.
            wait_until(lambda: len(objects(".index")) == len(objects(".log")), what="no orphaned objects")
            counted = metric(metrics_port, "kafka_server_brokertopicmetrics_remotelogsizebytes", '{topic="killed"}')
            assert counted == sum(store.size(k) for k in objects(".log"))
            assert [o for o, _ in consume_all(broker.bootstrap, "killed", 400)] == list(range(400))


@pytest.mark.timeout(180)
def test_tiering_is_turned_on_then_read_only_then_off_on_a_live_topic(tmp_path):
    remote = tmp_path / "remote"
    with BrokerProcess(tmp_path / "b", overrides=tiered_overrides(remote)) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("live", 1, 1, config={"internal.segment.bytes": "20000"})])["live"].result(30)
        produce(broker.bootstrap, "live", 300)
        assert list_offset(broker.bootstrap, "live", LATEST_TIERED)[:2] == (ErrorCode.NONE, -1)

        def alter(**configs: str) -> None:
            resource = ConfigResource("topic", "live", incremental_configs=[
                ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.SET)
                for k, v in configs.items()])
            admin.incremental_alter_configs([resource])[resource].result(30)

        alter(remote_storage_enable="true", local_retention_bytes="1")
        wait_until(lambda: list_offset(broker.bootstrap, "live", EARLIEST_LOCAL)[1] > 100, what="tiering on")
        assert [o for o, _ in consume_all(broker.bootstrap, "live", 300)] == list(range(300))

        alter(remote_log_copy_disable="true", local_retention_bytes="-2")  # read only: copying stops
        time.sleep(1.0)  # a few rounds of the 200 ms task
        tiered = list_offset(broker.bootstrap, "live", LATEST_TIERED)[1]
        produce(broker.bootstrap, "live", 300, start=300)
        time.sleep(1.0)
        assert list_offset(broker.bootstrap, "live", LATEST_TIERED)[1] == tiered
        assert [o for o, _ in consume_all(broker.bootstrap, "live", 600)] == list(range(600))

        alter(remote_storage_enable="false", remote_log_delete_on_disable="true")  # off, remote data deleted
        local_start = list_offset(broker.bootstrap, "live", EARLIEST_LOCAL)[1]
        wait_until(lambda: list_offset(broker.bootstrap, "live", EARLIEST)[1] == local_start, what="remote deleted")
        wait_until(lambda: not remote_log_objects(remote), what="no remote objects")
        assert list_offset(broker.bootstrap, "live", LATEST_TIERED)[:2] == (ErrorCode.NONE, -1)
        records = consume_all(broker.bootstrap, "live", 600 - local_start, offset=local_start)
        assert [o for o, _ in records] == list(range(local_start, 600))


SLOW = pytest.mark.skipif(os.environ.get("PYKBROKER_TIERED_SLOW") != "1",
                          reason="slow tiered storage suite: make test-tiered-slow (PYKBROKER_TIERED_SLOW=1)")


@SLOW
@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
@pytest.mark.timeout(240)
def test_slow_a_new_leader_continues_copying_after_the_old_one_is_killed(tmp_path):
    remote = tmp_path / "remote"  # one store shared by the brokers, as a bucket is
    overrides = tiered_overrides(remote, **{"replica.lag.time.max.ms": "10000"})
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=overrides) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("moved", 1, replica_assignment=[[1, 2, 3]], config=TOPIC_CONFIGS)])["moved"] \
            .result(30)
        wait_until(lambda: len(isr_and_leader(admin, "moved")[0]) == 3,
                   what="a full ISR")
        produce_acks_all(cluster.bootstrap, "moved", 300)
        leader = cluster.broker(1).bootstrap
        wait_until(lambda: list_offset(leader, "moved", LATEST_TIERED)[1] > 50, what="copies by broker 1")
        _, tiered_by_first, first_epoch = list_offset(leader, "moved", LATEST_TIERED)
        cluster.broker(1).kill()
        wait_until(lambda: isr_and_leader(admin, "moved")[1] in (2, 3),
                   what="a new leader")
        new_leader = cluster.broker(isr_and_leader(admin, "moved")[1])
        # LATEST_TIERED answers the epoch its offset was written in (Kafka's UnifiedLog: the leader epoch cache's
        # epoch for the highest copied offset), not the new leader's.
        tiered = wait_until(lambda: (a := list_offset(new_leader.bootstrap, "moved", LATEST_TIERED))[1]
                            >= tiered_by_first and a, what="the predecessor's copies known to the new leader")
        latest = wait_until(lambda: (a := list_offset(new_leader.bootstrap, "moved", LATEST))[0] == 0 and a,
                            what="the new leader's high watermark")  # OFFSET_NOT_AVAILABLE until then, as Kafka
        assert tiered[2] == first_epoch < latest[2], (tiered, first_epoch, latest)
        produce_acks_all(cluster.bootstrap, "moved", 300, start=300)
        # The new leader knows what its predecessor copied and goes on from there.
        wait_until(lambda: list_offset(new_leader.bootstrap, "moved", LATEST_TIERED)[1] > 400,
                   what="copies by the new leader")
        assert list_offset(new_leader.bootstrap, "moved", EARLIEST)[:2] == (ErrorCode.NONE, 0)
        assert tiered_by_first < list_offset(new_leader.bootstrap, "moved", LATEST_TIERED)[1]
        wait_until(lambda: list_offset(new_leader.bootstrap, "moved", EARLIEST_LOCAL)[1] > tiered_by_first,
                   what="local deletion on the new leader")
        assert [o for o, _ in consume_all(cluster.bootstrap, "moved", 600)] == list(range(600))
        # It replayed the metadata up to its leader's high watermark before copying: nothing its predecessor
        # finished was copied again (one object per segment start offset).
        assert "may copy" in new_leader.log()
        starts = [p.name[:20] for p in remote_log_objects(remote)]
        assert len(starts) == len(set(starts)), sorted(starts)
        # The old leader comes back far behind the new leader's local log: told the rest is remote, it starts at
        # the local log start offset with the leader epochs and producer state of the remote segment below it
        # (KIP-1023's BuildRemoteLogAuxStateRequestsPerSec counts it on the Prometheus endpoint).
        metrics_port = free_port()
        cluster.broker(1).overrides["metrics.port"] = str(metrics_port)
        cluster.broker(1).start()
        wait_until(lambda: len(isr_and_leader(admin, "moved")[0]) == 3,
                   what="broker 1 back in the ISR")
        assert "restored from remote segment" in cluster.broker(1).log()
        assert metric(metrics_port, f"{BROKER_TOPIC_METRICS}_buildremotelogauxstaterequestspersec") == 1
        assert metric(metrics_port, f"{BROKER_TOPIC_METRICS}_buildremotelogauxstateerrorspersec") == 0
        # Again, with the remote leader-epoch checkpoints unreadable: the build fails, is counted
        # (BuildRemoteLogAuxStateErrorsPerSec), and the replica goes on without them.
        cluster.broker(1).kill()
        produce_acks_all(cluster.bootstrap, "moved", 300, start=600)
        wait_until(lambda: list_offset(new_leader.bootstrap, "moved", EARLIEST_LOCAL)[1] > 600,
                   what="the new leader's local log past broker 1's")
        hidden = [p.rename(p.with_name(p.name + ".hidden")) for p in remote.rglob("*.leader_epoch_checkpoint")]
        try:
            cluster.broker(1).start()
            wait_until(lambda: metric_when_up(metrics_port, f"{BROKER_TOPIC_METRICS}_buildremotelogauxstateerrorspersec")
                       == 1, what="the failed build counted")
        finally:
            for p in hidden:
                p.rename(p.with_name(p.name.removesuffix(".hidden")))
        assert metric(metrics_port, f"{BROKER_TOPIC_METRICS}_buildremotelogauxstaterequestspersec") == 1
        assert "leader epochs and producer state of the remote data not restored" in cluster.broker(1).log()
        wait_until(lambda: len(isr_and_leader(admin, "moved")[0]) == 3,
                   what="broker 1 back in the ISR without its aux state")


@pytest.mark.skipif(not s3_server_available(), reason="no S3 server installed (make deps builds versitygw)")
@pytest.mark.timeout(180)
def test_tiered_storage_on_an_s3_server_that_goes_down_for_a_while(tmp_path):
    metrics_port = free_port()
    with S3Server(tmp_path / "s3") as s3:
        overrides = {**tiered_overrides(tmp_path / "unused"), **s3.broker_overrides("tiered-bucket"),
                     "metrics.port": str(metrics_port)}
        del overrides["rsm.config.dir"]
        with BrokerProcess(tmp_path / "b", overrides=overrides) as broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("s3t", 1, 1, config=TOPIC_CONFIGS)])["s3t"].result(30)
            produce(broker.bootstrap, "s3t", 300)
            wait_until(lambda: len(local_segments(broker, "s3t")) == 1, what="every closed segment copied to S3")
            store = s3.object_store("tiered-bucket")
            assert any(key.endswith(".log") for key in store.list())
            assert [o for o, _ in consume_all(broker.bootstrap, "s3t", 300)] == list(range(300))

            s3.stop()  # the object store goes down
            tiered = list_offset(broker.bootstrap, "s3t", LATEST_TIERED)[1]
            produce(broker.bootstrap, "s3t", 300, start=300)
            wait_until(lambda: "remote storage unavailable" in broker.log(), what="the outage's log line")
            wait_until(lambda: metric(metrics_port, "kafka_server_brokertopicmetrics_remotecopyerrorspersec") > 0,
                       what="the copy error meter")
            assert list_offset(broker.bootstrap, "s3t", EARLIEST_LOCAL)[1] <= tiered + 1
            tail = consume_all(broker.bootstrap, "s3t", 600 - tiered - 1, offset=tiered + 1)
            assert [o for o, _ in tail] == list(range(tiered + 1, 600))

            s3.start()  # back, same port and data
            wait_until(lambda: list_offset(broker.bootstrap, "s3t", LATEST_TIERED)[1] > 300, what="copying again",
                       timeout=90)
            assert [o for o, _ in consume_all(broker.bootstrap, "s3t", 600)] == list(range(600))
            # The credentials are the backend's alone: not in the log, not among the described broker configs.
            assert s3.secret_key not in broker.log()
            described = admin.describe_configs([ConfigResource("broker", "1")])
            entries = list(described.values())[0].result(30)
            assert not any(name.startswith("rsm.config") for name in entries)
            assert all(s3.secret_key not in str(entry.value) for entry in entries.values())


@pytest.mark.timeout(120)
def test_read_committed_skips_aborted_transactions_in_remote_segments(tmp_path):
    with BrokerProcess(tmp_path / "b", overrides=tiered_overrides(tmp_path / "remote")) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("txns", 1, 1, config=TOPIC_CONFIGS)])["txns"].result(30)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tiered-txn"})
        producer.init_transactions(30)
        committed = []
        for t in range(16):
            producer.begin_transaction()
            for i in range(25):
                value = f"t{t:02d}-{i:02d}-".encode() + b"x" * 150
                producer.produce("txns", value=value, partition=0)
                if t % 2 == 0:
                    committed.append(value)
            assert producer.flush(30) == 0  # sent: an abort then leaves aborted records in the log
            if t % 2 == 0:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        wait_until(lambda: list_offset(broker.bootstrap, "txns", EARLIEST_LOCAL)[1] > 200, what="remote-only data")
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "rc", "enable.auto.commit": False,
                             "isolation.level": "read_committed", "max.partition.fetch.bytes": 16384})
        consumer.assign([TopicPartition("txns", 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < len(committed) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
        extra = consumer.poll(2.0)
        consumer.close()
        assert got == committed
        assert extra is None or extra.error()


@SLOW
@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka's reassign tool need java")
@pytest.mark.timeout(300)
def test_slow_a_tiered_partition_is_reassigned_to_another_broker(tmp_path):
    from compat_tests.jvm.kafka_broker import jars_dir
    from compat_tests.test_cluster_reassignment import REASSIGN, plan_file, tool

    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka's jars are missing")
    remote = tmp_path / "remote"
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=tiered_overrides(remote)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("reassigned", 1, replica_assignment=[[1]], config=TOPIC_CONFIGS)])[
            "reassigned"].result(60)
        produce_acks_all(cluster.bootstrap, "reassigned", 300)
        old_dir = cluster.broker(1).data_dir / "logs" / "reassigned-0"
        wait_until(lambda: len(list(old_dir.glob("*.log"))) == 1, what="broker 1 holding only its active segment")
        local_start = list_offset(cluster.broker(1).bootstrap, "reassigned", EARLIEST_LOCAL)[1]
        plan = plan_file(tmp_path, {("reassigned", 0): [2]})
        tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file", str(plan))
        wait_until(lambda: admin.list_topics("reassigned", timeout=5).topics["reassigned"].partitions[0].replicas
                   == [2] and admin.list_topics("reassigned", timeout=5).topics["reassigned"].partitions[0].leader == 2,
                   what="the move to broker 2")
        # The new replica copied only the local part; what is below is read from remote storage.
        assert f"offsets below {local_start} are in remote storage" in cluster.broker(2).log()
        assert list_offset(cluster.broker(2).bootstrap, "reassigned", EARLIEST)[:2] == (ErrorCode.NONE, 0)
        assert [o for o, _ in consume_all(cluster.bootstrap, "reassigned", 300)] == list(range(300))


def produce_values(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 4096})
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(60) == 0


def partition_state(admin: AdminClient, topic: str):
    return admin.list_topics(topic, timeout=5).topics[topic].partitions[0]


def isr_and_leader(admin: AdminClient, topic: str) -> tuple[list[int], int]:
    """The partition's ISR and leader; ([], -1) while the client's metadata request times out (a broker of the
    bootstrap list just killed, on a loaded machine)."""
    try:
        state = partition_state(admin, topic)
    except KafkaException:
        return [], -1
    return state.isrs, state.leader


@SLOW
@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
@pytest.mark.timeout(300)
def test_slow_remote_segments_of_a_diverged_lineage_are_neither_read_nor_counted_and_retention_deletes_them(tmp_path):
    """An unclean election: broker 1 led alone and copied segments broker 2 never had; broker 2 then leads
    (broker 1 dead) and writes other records at those offsets. Broker 1's copies past the divergence are not
    read, not counted as tiered, and deleted once the log start offset passes them (Kafka's
    isRemoteSegmentWithinLeaderEpochs and its leader-epoch-cache truncation cleanup)."""
    remote = tmp_path / "remote"
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=tiered_overrides(remote)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        configs = {**TOPIC_CONFIGS, "unclean.leader.election.enable": "true"}
        admin.create_topics([NewTopic("unclean", 1, replica_assignment=[[1, 2]], config=configs)])["unclean"] \
            .result(30)
        wait_until(lambda: len(partition_state(admin, "unclean").isrs) == 2, what="a full ISR")
        produce_values(cluster.bootstrap, "unclean", [f"shared-{i:05d}-".encode() + b"x" * 150 for i in range(200)])
        b1, b2 = cluster.broker(1), cluster.broker(2)
        wait_until(lambda: list_offset(b1.bootstrap, "unclean", LATEST_TIERED)[1] > 50, what="copies by broker 1")
        b2.stop()
        wait_until(lambda: partition_state(admin, "unclean").isrs == [1], what="broker 2 out of the ISR")
        produce_values(cluster.bootstrap, "unclean", [f"lost-{i:05d}-".encode() + b"x" * 150 for i in range(300)])
        wait_until(lambda: list_offset(b1.bootstrap, "unclean", LATEST_TIERED)[1] > 350, what="broker 1 copying alone")
        old_objects = {p.name for p in remote_log_objects(remote)}
        b1.kill()
        b2.start()
        wait_until(lambda: partition_state(admin, "unclean").leader == 2, what="the unclean election of broker 2",
                   timeout=90)
        diverged_at = list_offset(b2.bootstrap, "unclean", LATEST)[1]
        assert 200 <= diverged_at < 500
        assert "unclean leader election" in "".join(cluster.broker(n).log() for n in (2, 3))
        new = [f"new-{i:05d}-".encode() + b"x" * 150 for i in range(400)]
        produce_values(cluster.bootstrap, "unclean", new)
        # Broker 1's copies past the divergence count for nothing: the tiered offset is the new lineage's.
        wait_until(lambda: list_offset(b2.bootstrap, "unclean", LATEST_TIERED)[1] > diverged_at,
                   what="copies by broker 2", timeout=90)
        tiered = list_offset(b2.bootstrap, "unclean", LATEST_TIERED)[1]
        assert tiered < diverged_at + 400
        # A consumer from the start reads the new lineage only: never a record of broker 1 past the divergence.
        records = consume_all(cluster.bootstrap, "unclean", diverged_at + 400)
        assert [o for o, _ in records] == list(range(diverged_at + 400))
        assert all(v.startswith(b"shared-") for o, v in records[:200])
        assert [v for _, v in records[diverged_at:]] == new
        assert not any(v.startswith(b"lost-") and o >= diverged_at for o, v in records)
        # The log start offset just past the divergence: broker 1's copies below it go as usual, and those
        # reaching past it (epoch 0 only, now before the lineage's earliest epoch) are deleted as unreferenced.
        result = admin.delete_records([TopicPartition("unclean", 0, diverged_at + 10)])
        list(result.values())[0].result(30)
        wait_until(lambda: not old_objects & {p.name for p in remote_log_objects(remote)},
                   what="broker 1's copies deleted", timeout=90)
        assert "leader-epoch lineage" in b2.log()
        tail = consume_all(cluster.bootstrap, "unclean", 390, offset=diverged_at + 10)
        assert [v for _, v in tail] == new[10:]


@SLOW
@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka's reassign tool need java")
@pytest.mark.timeout(300)
def test_slow_a_replica_added_to_a_tiered_partition_starts_after_the_last_tiered_offset(tmp_path):
    """KIP-1023 (follower.fetch.last.tiered.offset.enable): a replica added by a reassignment starts at the
    leader's earliest offset pending upload, not at its local log start: the copied segments the leader still
    keeps locally are not fetched again; the leader epochs and producer state below come from the remote
    segment's checkpoint and snapshot, so the new replica can lead and serve the remote part."""
    from compat_tests.jvm.kafka_broker import jars_dir
    from compat_tests.test_cluster_reassignment import REASSIGN, plan_file, tool

    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka's jars are missing")
    remote = tmp_path / "remote"
    overrides = tiered_overrides(remote, **{"follower.fetch.last.tiered.offset.enable": "true"})
    configs = {**TOPIC_CONFIGS, "local.retention.bytes": "60000"}  # a few copied segments stay local
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=overrides) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("added", 1, replica_assignment=[[1]], config=configs)])["added"].result(60)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "enable.idempotence": True, "linger.ms": 5,
                             "batch.size": 4096})
        for i in range(600):
            producer.produce("added", value=f"value-{i:06d}-".encode() + b"x" * 150, partition=0)
        assert producer.flush(60) == 0
        b1 = cluster.broker(1).bootstrap
        wait_until(lambda: list_offset(b1, "added", EARLIEST_LOCAL)[1] > 0, what="local deletion on broker 1")
        wait_until(lambda: list_offset(b1, "added", LATEST_TIERED)[1] > list_offset(b1, "added", EARLIEST_LOCAL)[1],
                   what="copied segments still local on broker 1")
        # Copying settled: every closed segment is copied, the earliest offset pending upload is the active segment's.
        old_dir = cluster.broker(1).data_dir / "logs" / "added-0"
        wait_until(lambda: list_offset(b1, "added", EARLIEST_PENDING_UPLOAD, version=11)[1]
                   == max(int(p.name[:20]) for p in old_dir.glob("*.log")), what="every closed segment copied")
        local_start = list_offset(b1, "added", EARLIEST_LOCAL)[1]
        pending = list_offset(b1, "added", EARLIEST_PENDING_UPLOAD, version=11)[1]
        assert pending > local_start
        tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file",
             str(plan_file(tmp_path, {("added", 0): [1, 2]})))
        wait_until(lambda: sorted(partition_state(admin, "added").isrs) == [1, 2], what="broker 2 in the ISR")
        log2 = cluster.broker(2).log()
        assert f"offsets below {pending} are in remote storage" in log2
        assert "restored from remote segment" in log2
        new_dir = cluster.broker(2).data_dir / "logs" / "added-0"
        assert min(int(p.name[:20]) for p in new_dir.glob("*.log")) == pending
        # Broker 2 leads next: its leader epochs reach below its local data, so it serves the remote part, and
        # the idempotent producer goes on with the producer state it took from the remote snapshot.
        tool(jars, REASSIGN, "--bootstrap-server", cluster.bootstrap, "--execute", "--reassignment-json-file",
             str(plan_file(tmp_path, {("added", 0): [2]})))
        wait_until(lambda: partition_state(admin, "added").replicas == [2]
                   and partition_state(admin, "added").leader == 2, what="the move to broker 2")
        for i in range(600, 650):
            producer.produce("added", value=f"value-{i:06d}-".encode() + b"x" * 150, partition=0)
        assert producer.flush(60) == 0
        records = consume_all(cluster.bootstrap, "added", 650)
        assert [o for o, _ in records] == list(range(650))
        assert all(v.startswith(f"value-{o:06d}-".encode()) for o, v in records)


def remote_log_metadata_records(bootstrap: str, partitions: int = 3) -> list[tuple[int, int, dict]]:
    """Every record of __remote_log_metadata, decoded: (partition, offset, record)."""
    from storage.remote.metadata import decode_record

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rlmm-{time.monotonic_ns()}",
                         "enable.auto.commit": False})
    ends = {p: consumer.get_watermark_offsets(TopicPartition("__remote_log_metadata", p), timeout=10)[1]
            for p in range(partitions)}
    consumer.assign([TopicPartition("__remote_log_metadata", p, 0) for p in range(partitions)])
    out: list[tuple[int, int, dict]] = []
    deadline = time.monotonic() + 30
    while len(out) < sum(ends.values()) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            out.append((msg.partition(), msg.offset(), decode_record(msg.value())))
    consumer.close()
    return out


@pytest.mark.skipif(not s3_server_available(), reason="no S3 server installed (make deps builds versitygw)")
@pytest.mark.timeout(180)
def test_a_deleted_topic_s_remote_segments_go_in_kafka_s_order_even_across_a_kill_9(tmp_path):
    """Deleting a tiered topic: DELETE_SEGMENT_STARTED for each remote segment, then the objects, then
    DELETE_SEGMENT_FINISHED for each (Kafka 4.4's RemoteLogManager.deleteRemoteLogPartition; it writes no
    partition delete record). A broker killed halfway finishes after its restart, and the bucket keeps nothing."""
    with S3Server(tmp_path / "s3") as s3:
        overrides = {**tiered_overrides(tmp_path / "unused"), **s3.broker_overrides("deleted-bucket")}
        del overrides["rsm.config.dir"]
        store = s3.object_store("deleted-bucket")
        broker = BrokerProcess(tmp_path / "b", overrides=overrides)
        with broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap})
            admin.create_topics([NewTopic("gone", 1, 1, config=TOPIC_CONFIGS)])["gone"].result(30)
            produce(broker.bootstrap, "gone", 400)
            wait_until(lambda: len(local_segments(broker, "gone")) == 1, what="every closed segment copied")
            segments = len([k for k in store.list("gone-0-") if k.endswith(".log")])
            assert segments >= 3
            s3.pause()  # the objects' deletion hangs: the broker is killed with every segment DELETE_SEGMENT_STARTED
            try:
                admin.delete_topics(["gone"])["gone"].result(30)
                wait_until(lambda: f"deleting the {segments} remote segments of" in broker.log(),
                           what="the deletion under way")
                broker.kill()
            finally:
                s3.resume()
            broker.start()
            wait_until(lambda: f"deleted the {segments} remote segments of" in broker.log(),
                       what="the deletion finished after the restart")
            assert store.list("gone-0-") == []
            records = remote_log_metadata_records(broker.bootstrap)
        ids = {r["segment_id"] for _, _, r in records if r["type"] == "segment" and r["topic"] == "gone"}
        assert len(ids) == segments
        assert not any(r["type"] == "partition_delete" for _, _, r in records)
        updates = [(part, offset, r) for part, offset, r in records if r["type"] == "update" and r["segment_id"] in ids]
        for sid in ids:
            assert [r["state"] for _, _, r in updates if r["segment_id"] == sid] == [1, 2, 3]
        started = [offset for _, offset, r in updates if r["state"] == 2]
        finished = [offset for _, offset, r in updates if r["state"] == 3]
        assert len({part for part, _, _ in updates}) == 1 and max(started) < min(finished)


@SLOW
@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
@pytest.mark.timeout(300)
def test_slow_a_log_that_lost_its_early_epochs_gets_them_back_and_retention_reaches_its_early_segments(tmp_path):
    """A tiered log written before the epochs below its local segments were kept across restarts: its
    leader-epoch checkpoint starts at its local log start (as the old recovery truncated it). At load the epochs
    below come back from the remote log metadata, so its remote data still starts at 0 (the old epochs' segments
    are on the lineage) and retention deletes them by time like the others."""
    from storage.checkpoints import LeaderEpochCheckpointFile
    from storage.leader_epoch import LeaderEpochFileCache

    remote = tmp_path / "remote"
    # Broker 3 only keeps __remote_log_metadata's min.insync.replicas (2) while brokers 1 and 2 are down in turn.
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=tiered_overrides(remote)) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("early", 1, replica_assignment=[[1, 2]], config=TOPIC_CONFIGS)])["early"] \
            .result(30)
        wait_until(lambda: len(isr_and_leader(admin, "early")[0]) == 2, what="a full ISR")
        produce_acks_all(cluster.bootstrap, "early", 200)  # epoch 0, led by broker 1
        cluster.broker(1).stop()
        wait_until(lambda: isr_and_leader(admin, "early")[1] == 2, what="broker 2 leading")
        b2 = cluster.broker(2)
        produce_acks_all(b2.bootstrap, "early", 200, start=200)  # the next epoch, led by broker 2
        wait_until(lambda: list_offset(b2.bootstrap, "early", EARLIEST_LOCAL)[1] > 250, what="copies and local deletion")
        b2.stop()
        log_dir = b2.data_dir / "logs" / "early-0"
        local_start = min(int(p.name[:20]) for p in log_dir.glob("*.log"))
        epochs = LeaderEpochFileCache(LeaderEpochCheckpointFile(str(log_dir / "leader-epoch-checkpoint")))
        assert epochs.entries()[0] == (0, 0)
        epochs.truncate_from_start(local_start)  # what recovery did to tiered logs before
        assert epochs.entries()[0][1] == local_start
        b2.start()
        wait_until(lambda: list_offset(b2.bootstrap, "early", EARLIEST)[0] == ErrorCode.NONE, what="broker 2 back")
        # The remote data still starts at 0 (from the old cache, at the first segment holding its earliest epoch).
        wait_until(lambda: list_offset(b2.bootstrap, "early", EARLIEST)[1] == 0, what="the log start offset at 0")
        assert "leader epochs [(0, 0), (1, 200)] below its earliest restored from the remote log metadata" in b2.log()
        assert [o for o, _ in consume_all(b2.bootstrap, "early", 400)] == list(range(400))
        starts = {int(p.name[:20]) for p in remote_log_objects(remote)}
        assert 0 in starts
        resource = ConfigResource("topic", "early", incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([resource])[resource].result(30)
        wait_until(lambda: list_offset(b2.bootstrap, "early", EARLIEST)[1] >= local_start,
                   what="remote segments expired by time")
        assert not any(int(p.name[:20]) < local_start for p in remote_log_objects(remote))
