"""Stock clients and Kafka's tools against a real three-broker cluster (ZooKeeper and three pykbroker
processes): topics replicated three times, data through every client, consumer groups and transactions
spanning brokers, Kafka 4.1's tools reading leaders and ISRs, franz-go in a classic and a KIP-848 group."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.jvm.kafka_broker import jars_dir
from pykbroker.testing import ClusterProcesses, RawClient
from tests.clients import read_kafka_python
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteTopicsRequest,
    MetadataRequest,
    ProduceRequest,
)
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.delete_topics_request import DeleteTopicState
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with ClusterProcesses(tmp_path_factory.mktemp("cluster"), size=3) as c:
        yield c
        dead = [n for n, b in c.brokers.items() if not b.alive]
        assert not dead, f"brokers {dead} died during the tests; logs under {c.root}"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(cluster: ClusterProcesses, name: str, partitions: int = 3, replication: int = 3,
                 config: dict | None = None) -> dict[int, tuple[int, list[int], list[int]]]:
    """Create ``name`` and wait until every partition has a leader; {partition: (leader, replicas, isr)}."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, replication, config=config or {})])[name].result(30)
    deadline = time.monotonic() + 30
    while True:
        topic = admin.list_topics(name, timeout=10).topics[name]
        parts = {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in topic.partitions.values()}
        if len(parts) == partitions and all(leader >= 0 for leader, _, _ in parts.values()):
            return parts
        assert time.monotonic() < deadline, f"{name} has no leaders yet: {parts}"
        time.sleep(0.2)


def consume_all(cluster: ClusterProcesses, topic: str, count: int, **config) -> list:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique("g"),
                         "auto.offset.reset": "earliest", "enable.auto.commit": False, **config})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < count and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
    finally:
        consumer.close()
    return got


def test_a_topic_is_spread_over_the_brokers_with_three_in_sync_replicas(cluster):
    parts = create_topic(cluster, unique("spread"), partitions=6)
    assert sorted(leader for leader, _, _ in parts.values()) == [1, 1, 2, 2, 3, 3]  # leaders round-robin
    for leader, replicas, isr in parts.values():
        assert sorted(replicas) == [1, 2, 3] and sorted(isr) == [1, 2, 3] and replicas[0] == leader


def test_every_client_writes_with_acks_all_and_reads_back_from_every_leader(cluster):
    topic = unique("clients")
    create_topic(cluster, topic)
    acked = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(100):
        producer.produce(topic, f"ck-{i}".encode(), key=str(i).encode(),
                         on_delivery=lambda err, msg: acked.append(err))
    assert producer.flush(30) == 0 and acked == [None] * 100

    from kafka import KafkaProducer
    kp = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    for i in range(100):
        kp.send(topic, f"kp-{i}".encode(), key=str(i).encode()).get(30)
    kp.close()

    async def aiokafka_produce() -> None:
        from aiokafka import AIOKafkaProducer
        ap = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
        await ap.start()
        try:
            for i in range(100):
                await ap.send_and_wait(topic, f"ak-{i}".encode(), key=str(i).encode())
        finally:
            await ap.stop()
    asyncio.run(aiokafka_produce())

    values = sorted(m.value().decode() for m in consume_all(cluster, topic, 300))
    assert values == sorted([f"{p}-{i}" for p in ("ck", "kp", "ak") for i in range(100)])

    from kafka import KafkaConsumer
    kc = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                       group_id=unique("kc"))
    read = read_kafka_python(kc, 300)  # then 0.5 s in which nothing more may come
    kc.close()
    assert len(read) == 300, len(read)

    async def aiokafka_consume() -> int:
        from aiokafka import AIOKafkaConsumer
        ac = AIOKafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                              group_id=unique("ac"))
        await ac.start()
        seen = 0
        try:
            while seen < 300:
                batch = await ac.getmany(timeout_ms=10_000)
                if not batch:
                    break
                seen += sum(len(ms) for ms in batch.values())
        finally:
            await ac.stop()
        return seen
    assert asyncio.run(aiokafka_consume()) == 300


def test_followers_hold_what_the_leader_acknowledged(cluster):
    """Every replica's log ends where the leader's does once acks=all answered: read each broker's copy."""
    topic = unique("copies")
    parts = create_topic(cluster, topic, partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(50):
        producer.produce(topic, str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    leader = parts[0][0]
    for node_id in (1, 2, 3):
        log_dir = cluster.broker(node_id).data_dir / "logs" / f"{topic}-0"
        segment = next(log_dir.glob("*.log"))
        assert segment.stat().st_size > 0, f"broker {node_id} (leader {leader}) has no data"
    # The same bytes on every replica: the follower appended the leader's batches as they were.
    contents = {n: next((cluster.broker(n).data_dir / "logs" / f"{topic}-0").glob("*.log")).read_bytes()
                for n in (1, 2, 3)}
    assert len(set(contents.values())) == 1


def test_a_consumer_group_and_a_transaction_span_brokers(cluster):
    source, sink = unique("txn-in"), unique("txn-out")
    create_topic(cluster, source)
    create_topic(cluster, sink)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(30):
        producer.produce(source, str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0

    group = unique("copier")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.subscribe([source])
    txn = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": unique("tx")})
    txn.init_transactions(30)
    copied = 0
    deadline = time.monotonic() + 60
    while copied < 30 and time.monotonic() < deadline:
        batch = consumer.consume(30, 1.0)
        batch = [m for m in batch if not m.error()]
        if not batch:
            continue
        txn.begin_transaction()
        for m in batch:
            txn.produce(sink, m.value(), partition=int(m.value()) % 3)
        txn.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                        consumer.consumer_group_metadata(), 30)
        txn.commit_transaction(30)
        copied += len(batch)
    # One aborted transaction across all three partitions: never visible to read_committed.
    txn.begin_transaction()
    for p in range(3):
        txn.produce(sink, b"aborted", partition=p)
    txn.flush(30)
    txn.abort_transaction(30)
    consumer.close()
    assert copied == 30

    values = sorted(int(m.value()) for m in consume_all(cluster, sink, 30, **{"isolation.level": "read_committed"}))
    assert values == list(range(30))
    check = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    committed = check.committed([TopicPartition(source, p) for p in range(3)], 30)
    check.close()
    assert sorted(tp.offset for tp in committed) == [10, 10, 10]
    # The first transactional producer and group created __transaction_state and __consumer_offsets: a coordinator
    # partition is loaded once its broker leads it, not while its log is still being created ("not hosted here")
    failed = [line for b in cluster.brokers.values() for line in b.log().splitlines()
              if re.search(r"loading __\w+-\d+ failed", line)]
    assert not failed, failed


def test_kafka_topics_describes_leaders_and_isr_of_the_cluster(cluster):
    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka's jars are missing")
    topic = unique("described")
    parts = create_topic(cluster, topic)

    def kafka_topics(*args: str) -> str:
        done = subprocess.run(["java", "-cp", f"{jars}/*", "org.apache.kafka.tools.TopicCommand",
                               "--bootstrap-server", cluster.bootstrap, *args], capture_output=True, text=True,
                              timeout=90, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    out = kafka_topics("--describe", "--topic", topic)
    lines = [line.split() for line in out.splitlines() if line.strip().startswith("Topic:") and "Partition:" in line]
    described = {int(f[f.index("Partition:") + 1]): (int(f[f.index("Leader:") + 1]),
                                                   [int(x) for x in f[f.index("Replicas:") + 1].split(",")],
                                                   [int(x) for x in f[f.index("Isr:") + 1].split(",")]) for f in lines}
    assert described == parts
    assert kafka_topics("--describe", "--under-replicated-partitions").strip() == ""


def test_a_topic_auto_created_by_a_producer_gets_a_leader_in_the_cluster(cluster):
    topic = unique("auto")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    delivered = []
    producer.produce(topic, b"first", on_delivery=lambda err, msg: delivered.append((err, msg.offset())))
    assert producer.flush(60) == 0 and delivered == [(None, 0)]
    md = AdminClient({"bootstrap.servers": cluster.bootstrap}).list_topics(topic, timeout=10).topics[topic]
    [(leader, replicas)] = [(p.leader, p.replicas) for p in md.partitions.values()]  # num.partitions=1, RF 1
    assert replicas == [leader] and leader in (1, 2, 3)


def test_the_java_client_produces_and_consumes_in_a_group_on_the_cluster(cluster, tmp_path):
    """Kafka's VerifiableProducer (acks=-1, idempotent) and VerifiableConsumer (a consumer group) from the
    4.1 jars: every record acknowledged once, every one consumed, offsets committed."""
    import json

    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka's jars are missing")
    topic, n = unique("java"), 300
    create_topic(cluster, topic)
    java = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{jars}/*"]

    def events(main_class: str, *args: str) -> list[dict]:
        done = subprocess.run([*java, main_class, "--bootstrap-server", cluster.bootstrap, *args],
                              capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    config = tmp_path / "producer.properties"
    config.write_text("enable.idempotence=true\nretries=2147483647\n")
    produced = events("org.apache.kafka.tools.VerifiableProducer", "--topic", topic, "--max-messages", str(n),
                      "--acks", "-1", "--producer.config", str(config))
    sent = [e for e in produced if e["name"] == "producer_send_success"]
    assert sorted(int(e["value"]) for e in sent) == list(range(n))
    assert not [e for e in produced if e["name"] == "producer_send_error"]
    group = unique("jg")
    consumed = events("org.apache.kafka.tools.VerifiableConsumer", "--topic", topic, "--group-id", group,
                      "--max-messages", str(n))
    count = sum(p["count"] for e in consumed if e["name"] == "records_consumed" for p in e["partitions"])
    assert count == n
    commits = [e for e in consumed if e["name"] == "offsets_committed"]
    assert commits and all(e["success"] for e in commits)

    def tool(main_class: str, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run([*java, main_class, "--bootstrap-server", cluster.bootstrap, *args], input=stdin,
                              capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    # kafka-consumer-groups --describe: the group's committed offsets are at the end of each partition (lag 0).
    described = tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--describe", "--group", group)
    rows = [line.split() for line in described.splitlines() if line.startswith(group)]
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...: one row per partition the group committed
    assert rows and all(r[5] == "0" for r in rows) and sum(int(r[3]) for r in rows) == n, described
    # kafka-console-producer / kafka-console-consumer on another topic
    other = unique("console")
    create_topic(cluster, other, partitions=1)
    tool("org.apache.kafka.tools.ConsoleProducer", "--topic", other, stdin="one\ntwo\nthree\n")
    out = tool("org.apache.kafka.tools.consumer.ConsoleConsumer", "--topic", other, "--from-beginning",
               "--max-messages", "3", "--timeout-ms", "30000")
    assert out.split() == ["one", "two", "three"]


@pytest.mark.parametrize("protocol", [
    pytest.param("classic", marks=pytest.mark.skipif(
        os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
        reason="3 s of group.initial.rebalance.delay.ms: make test-franz-slow (PYKBROKER_SLOW_CLUSTER=1)")),
    "consumer"])
def test_franz_go_produces_consumes_and_commits_on_the_cluster(cluster, protocol):
    """franz-go (compat_tests/franz) with KIP-848's protocol and (make test-franz-slow) the classic one, its group
    coordinated on one broker and its partitions led by all three."""
    from compat_tests.franz import run_franz
    from compat_tests.test_franz_go import group_types
    topic = unique(f"franz-{protocol}")
    create_topic(cluster, topic)
    report = run_franz(cluster.bootstrap, topic, topic, protocol, 1000)
    assert (report["produced"], report["consumed"], report["distinct"]) == (1000, 1000, 1000), report
    assert sorted(report["committed"]) == [0, 1, 2] and sum(report["committed"].values()) == 1000, report
    types: dict[str, str] = {}
    for broker in cluster.brokers.values():  # each broker lists the groups it coordinates
        types.update(group_types(broker.bootstrap))
    assert types[topic] == protocol


def test_a_client_metrics_subscription_reaches_every_broker(cluster):
    """A KIP-714 subscription set through broker 1 (kept in /config/client-metrics) is listed by every broker and
    given by each to the clients it matches."""
    from pykbroker.testing import RawClient
    from wire.messages import GetTelemetrySubscriptionsRequest, ListConfigResourcesRequest
    name = unique("subscription")
    with RawClient(cluster.broker(1).bootstrap) as c:
        c.set_client_metrics(name, metrics="org.apache.kafka.producer.", interval_ms="2000", match=f"client_id={name}")
    for broker in cluster.brokers.values():
        with RawClient(broker.bootstrap, client_id=name) as c:
            deadline = time.monotonic() + 30
            while name not in [r.resource_name for r in c.request(ListConfigResourcesRequest(), 0).config_resources]:
                assert time.monotonic() < deadline, f"broker {broker} never listed {name}"
                time.sleep(0.1)
            got = c.request(GetTelemetrySubscriptionsRequest(), 0)
            assert (got.requested_metrics, got.push_interval_ms) == (["org.apache.kafka.producer."], 2000)


def test_kafka_tools_report_a_cluster_with_a_broker_down(cluster):
    """Kafka 4.1's kafka-topics --describe filters (--under-replicated-partitions, --under-min-isr-partitions,
    --at-min-isr-partitions, --unavailable-partitions) pick what TopicCommand's rules pick from what the
    cluster reports with broker 3 stopped; kafka-cluster cluster-id names the cluster every broker reports; and
    kafka-broker-api-versions prints each broker's advertised versions. Broker 3 is started again after."""
    import concurrent.futures
    import re

    from pykbroker.testing import RawClient
    from wire.messages import ApiVersionsRequest, MetadataRequest

    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka's jars are missing")
    prefix = unique("tools")
    at_min, under_min, gone = f"{prefix}-at-min", f"{prefix}-under-min", f"{prefix}-gone"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics([
        NewTopic(at_min, num_partitions=1, replica_assignment=[[1, 2, 3]], config={"min.insync.replicas": "2"}),
        NewTopic(under_min, num_partitions=1, replica_assignment=[[2, 3, 1]], config={"min.insync.replicas": "3"}),
        NewTopic(gone, num_partitions=1, replica_assignment=[[3]], config={"min.insync.replicas": "1"})])
    for f in futures.values():
        f.result(30)
    deadline = time.monotonic() + 30
    while any(p.leader < 0 for t in (at_min, under_min, gone)
              for p in admin.list_topics(t, timeout=10).topics[t].partitions.values()):
        assert time.monotonic() < deadline, "leaders"
        time.sleep(0.2)
    java = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{jars}/*"]
    live = [b.bootstrap for n, b in cluster.brokers.items() if n != 3]

    def tool(main_class: str, *args: str) -> str:
        done = subprocess.run([*java, main_class, *args], capture_output=True, text=True, timeout=180,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    assert cluster.broker(3).stop() == 0
    try:
        # Broker 3 left every ISR (controlled shutdown) and the partition it alone holds has no leader.
        deadline = time.monotonic() + 30
        while True:
            state = {t: admin.list_topics(t, timeout=10).topics[t].partitions[0] for t in (at_min, under_min, gone)}
            if [state[t].isrs for t in (at_min, under_min)] == [[1, 2], [2, 1]] and state[gone].leader == -1:
                break
            assert time.monotonic() < deadline, state
            time.sleep(0.2)
        topics = "org.apache.kafka.tools.TopicCommand"
        describe = ("--bootstrap-server", ",".join(live), "--describe", "--topic", f"{prefix}-.*")
        filters = ("--under-replicated-partitions", "--under-min-isr-partitions", "--at-min-isr-partitions",
                   "--unavailable-partitions")
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            runs = {f: pool.submit(tool, topics, *describe, *([f] if f else [])) for f in ("", *filters)}
            cluster_id = pool.submit(tool, "org.apache.kafka.tools.ClusterTool", "cluster-id", "--bootstrap-server",
                                     live[0])
            api_versions = pool.submit(tool, "org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server",
                                       ",".join(live))
            out = {f: r.result() for f, r in runs.items()}
            cluster_id_out, api_versions_out = cluster_id.result(), api_versions.result()
        # Each partition line as the plain --describe prints it, by topic.
        lines = {line.split("\tPartition:")[0].split("Topic: ")[1]: line
                 for line in out[""].splitlines() if "\tPartition: " in line}
        assert "Leader: none" in lines[gone] and "\tIsr: 3" in lines[gone], lines[gone]

        def picked(flag: str) -> set[str]:
            got = [line for line in out[flag].splitlines() if line.strip()]
            assert all(line in lines.values() for line in got), (flag, got, lines)
            return {line.split("\tPartition:")[0].split("Topic: ")[1] for line in got}

        # TopicCommand: under-replicated = ISR smaller than the replicas; under min ISR = no leader or ISR below
        # min.insync.replicas; at min ISR = ISR size equal to it; unavailable = no live leader.
        assert picked("--under-replicated-partitions") == {at_min, under_min}
        assert picked("--under-min-isr-partitions") == {under_min, gone}
        assert picked("--at-min-isr-partitions") == {at_min, gone}
        assert picked("--unavailable-partitions") == {gone}

        with RawClient(live[0]) as c:
            expected_id = c.request(MetadataRequest(topics=[]), 9).cluster_id
        assert cluster_id_out.strip() == f"Cluster ID: {expected_id}"
        for node_id in (1, 2):
            with RawClient(cluster.broker(node_id).bootstrap) as c:
                advertised = {k.api_key: (k.min_version, k.max_version)
                              for k in c.request(ApiVersionsRequest(), 0).api_keys}
            host = cluster.broker(node_id).bootstrap
            block = api_versions_out.split(f"{host} (id: {node_id} rack: null isFenced: false) -> (\n")[1].split(
                "\n)\n")[0]
            printed = {int(key): ranges for key, ranges in re.findall(r"^\t\w+\((\d+)\): (.*?),?$", block, re.M)}
            assert {key for key, ranges in printed.items() if ranges != "UNSUPPORTED"} == set(advertised)
        assert "(id: 3 " not in api_versions_out  # a stopped broker is not in the cluster's metadata
    finally:
        cluster.broker(3).start()
        cluster.wait_for_brokers(3)


def test_a_deleted_topics_committed_offsets_go_on_the_coordinator_that_did_not_delete_it(cluster):
    """Kafka removes a deleted topic's committed offsets on whichever broker coordinates the group, not only on
    the broker that handled DeleteTopics; a topic created again under the same name is read from its start."""
    from confluent_kafka import ConsumerGroupTopicPartitions

    from coordinator.group.partitioner import partition_for

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topic = unique("deleted")
    create_topic(cluster, topic, partitions=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, f"old-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    # __consumer_offsets exists (created by a first commit), so the group's coordinator can be chosen: one that
    # is not the controller, to which the admin client sends DeleteTopics.
    first = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": unique("first"), "enable.auto.commit": False})
    first.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    first.close()
    controller = admin.describe_cluster().result(30).controller.id
    offsets_topic = admin.list_topics("__consumer_offsets", timeout=10).topics["__consumer_offsets"].partitions
    group = next(g for g in (unique("g") for _ in range(1000))
                 if offsets_topic[partition_for(g, len(offsets_topic))].leader not in (controller, -1))
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 3)], asynchronous=False)
    consumer.close()

    def committed() -> dict[int, int]:
        request = [ConsumerGroupTopicPartitions(group)]
        found = admin.list_consumer_group_offsets(request)[group].result(30).topic_partitions
        return {tp.partition: tp.offset for tp in found if tp.topic == topic}

    assert committed() == {0: 4, 1: 3}
    admin.delete_topics([topic])[topic].result(30)
    deadline = time.monotonic() + 30
    while committed():
        assert time.monotonic() < deadline, f"the coordinator still returns {topic}'s offsets: {committed()}"
        time.sleep(0.2)

    deadline = time.monotonic() + 30
    while True:  # the deletion completes (the controller removes the znodes) before the name can be reused
        try:
            create_topic(cluster, topic, partitions=2)
            break
        except Exception:
            assert time.monotonic() < deadline, f"{topic} could not be created again"
            time.sleep(0.5)
    for i in range(4):
        producer.produce(topic, f"new-{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    got = consume_all(cluster, topic, 4, **{"group.id": group})
    assert sorted(m.value() for m in got) == [b"new-0", b"new-1", b"new-2", b"new-3"]
    assert sorted((m.partition(), m.offset()) for m in got) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_many_topics_created_extended_and_deleted_in_one_request_each_reach_every_broker(cluster):
    """What Kafka Streams, Connect and MirrorMaker do at start (issue 32): one CreateTopics naming many topics (here 8
    of 16 partitions, RF 3), then one CreatePartitions and one DeleteTopics of them all, sent to the controller as
    admin clients send them. Each answer comes when the handling broker's Metadata shows the change (Kafka's
    controller answers once it is committed); every broker's Metadata shows it soon after, every partition led."""
    names = [unique(f"many{i}") for i in range(8)]

    def metadata(address: str) -> dict[str, tuple[int, list[int]]]:
        """{topic: (error code, leader of each partition)} as the broker at ``address`` answers."""
        with RawClient(address) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names],
                                           allow_auto_topic_creation=False), 12)
        return {t.name: (t.error_code, [p.leader_id for p in sorted(t.partitions, key=lambda p: p.partition_index)])
                for t in md.topics}

    def everywhere(check) -> None:
        deadline = time.monotonic() + 30
        for b in cluster.brokers.values():
            while not check(seen := metadata(b.bootstrap)):
                assert time.monotonic() < deadline, f"broker {b.bootstrap} shows {seen}"
                time.sleep(0.1)

    def led(count: int):
        return lambda seen: all(code == ErrorCode.NONE and len(leaders) == count and min(leaders) >= 1
                                for code, leaders in seen.values())

    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    controller_id = client.describe_cluster().result(30).controller.id
    handling = cluster.broker(controller_id).bootstrap
    with RawClient(handling, timeout=90) as admin:
        created = admin.request(CreateTopicsRequest(topics=[CreatableTopic(name=n, num_partitions=16, replication_factor=3)
                                                            for n in names], timeout_ms=60_000), 7)
        assert [(t.name, t.error_code, t.num_partitions) for t in created.topics] == [(n, 0, 16) for n in names]
        assert len({t.topic_id for t in created.topics}) == len(names)
        assert led(16)(metadata(handling))
        # At once, a record to each topic's partition 0 through its leader: the leader may not have applied the
        # change yet (its log is created a moment after its image), and then answers as a Kafka 4.4 broker that
        # has not: a retriable NOT_LEADER_OR_FOLLOWER or UNKNOWN_TOPIC_OR_PARTITION (or waits for the log); an
        # acknowledged record is the partition's first.
        with RawClient(handling) as c:
            md = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names],
                                           allow_auto_topic_creation=False), 12)
        address = {b.node_id: f"{b.host}:{b.port}" for b in md.brokers}
        answers = []
        for t in md.topics:
            leader = next(p.leader_id for p in t.partitions if p.partition_index == 0)
            with RawClient(address[leader]) as c:
                r = c.request(ProduceRequest(acks=-1, timeout_ms=30_000, topic_data=[TopicProduceData(
                    name=t.name, partition_data=[PartitionProduceData(
                        index=0, records=build_simple_batch([b"first"], timestamp=0))])]), 9)
            answers.append(r.responses[0].partition_responses[0])
        assert {a.error_code for a in answers} <= {ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}, answers
        assert all(a.base_offset == 0 for a in answers if a.error_code == ErrorCode.NONE), answers
        everywhere(led(16))

        added = admin.request(CreatePartitionsRequest(topics=[
            CreatePartitionsTopic(name=n, count=24, assignments=None) for n in names], timeout_ms=60_000), 3)
        assert [(t.name, t.error_code) for t in added.results] == [(n, 0) for n in names]
        assert led(24)(metadata(handling))
        everywhere(led(24))

        deleted = admin.request(DeleteTopicsRequest(topics=[DeleteTopicState(name=n) for n in names],
                                                    timeout_ms=60_000), 6)
        assert [(t.name, t.error_code) for t in deleted.responses] == [(n, 0) for n in names]
        gone = lambda seen: all(code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for code, _ in seen.values())  # noqa: E731
        assert gone(metadata(handling))
        everywhere(gone)
