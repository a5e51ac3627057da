"""A 3-broker pykbroker cluster shows clients what a new Kafka 4.4 cluster shows: the finalized features (seen
and changed with Kafka 4.4's own kafka-features), KIP-848 consumer groups, GROUP config resources and
per-broker and cluster-default dynamic broker configs (with Kafka 4.4's kafka-configs), the same through every
broker and after a restart.

``make test`` runs the short slice (the features described, a KIP-848 group); the rest, a minute and more of
Kafka tool runs and broker restarts, runs with PYKBROKER_SLOW_CLUSTER=1 (``make test-cluster-slow``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.conftest import KAFKA_44
from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.test_cluster_reassignment import tool, wait_for
from pykbroker.testing import ClusterProcesses, RawClient
from replication.metadata.features import BOOTSTRAP_FINALIZED
from wire.messages import (
    ApiVersionsRequest,
    DescribeQuorumRequest,
    DescribeTransactionsRequest,
    FindCoordinatorRequest,
    MetadataRequest,
)

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper and Kafka's tools need java")

slow = pytest.mark.skipif(os.environ.get("PYKBROKER_SLOW_CLUSTER") != "1",
                          reason="a minute of Kafka tool runs and restarts: make test-cluster-slow (PYKBROKER_SLOW_CLUSTER=1)")
FEATURES = "org.apache.kafka.tools.FeatureCommand"
CONFIGS = "org.apache.kafka.tools.ConfigCommand"


@pytest.fixture(scope="module")
def jars44() -> Path:
    found = jars_dir(KAFKA_44)
    if found is None:
        pytest.skip(f"Kafka {KAFKA_44}'s jars are missing")
    return found


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with ClusterProcesses(tmp_path_factory.mktemp("surface"), size=3) as c:
        yield c


def features(bootstrap: str) -> tuple[int, dict[str, int]]:
    """(epoch, finalized levels) as one broker's ApiVersions v4 answers them."""
    with RawClient(bootstrap) as c:
        r = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    return r.finalized_features_epoch, {f.name: f.max_version_level for f in r.finalized_features}


def every_broker_has(cluster: ClusterProcesses, levels: dict[str, int]) -> bool:
    seen = [features(b.bootstrap) for b in cluster.brokers.values()]
    return all(s == seen[0] and s[1] == levels for s in seen)


def test_kafka_features_describes_kafka_4_4_levels_on_every_broker(cluster, jars44):
    described = tool(jars44, FEATURES, "--bootstrap-server", cluster.bootstrap, "describe")
    lines = {line.split()[1]: line for line in described.splitlines() if line.startswith("Feature:")}
    assert "FinalizedVersionLevel: 4.4-IV2" in lines["metadata.version"]
    assert "SupportedMaxVersion: 4.4-IV2" in lines["metadata.version"]
    for name in ("group.version", "transaction.version", "eligible.leader.replicas.version", "share.version",
                 "streams.version"):
        assert f"FinalizedVersionLevel: {BOOTSTRAP_FINALIZED[name]}" in lines[name], lines[name]
    assert every_broker_has(cluster, BOOTSTRAP_FINALIZED)


def test_kafka_metadata_quorum_names_the_controller_through_every_broker(cluster, jars44):
    from wire.messages.describe_quorum_request import PartitionData, TopicData
    with RawClient(cluster.broker(1).bootstrap) as c:
        controller = c.request(MetadataRequest(topics=[]), 12).controller_id
    for node in (1, 2, 3):  # every broker answers the same
        with RawClient(cluster.broker(node).bootstrap) as c:
            r = c.request(DescribeQuorumRequest(topics=[TopicData(topic_name="__cluster_metadata",
                                                                  partitions=[PartitionData(partition_index=0)])]), 2)
        quorum = r.topics[0].partitions[0]
        # as 3 combined KRaft nodes: every broker a voter, the controller the leader, no observers
        assert (quorum.leader_id, [v.replica_id for v in quorum.current_voters], quorum.observers) == \
            (controller, [controller, *sorted({1, 2, 3} - {controller})], [])
        assert sorted(n.node_id for n in r.nodes) == [1, 2, 3]
    other = next(n for n in (1, 2, 3) if n != controller)
    out = tool(jars44, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server",
               cluster.broker(other).bootstrap, "describe", "--status")
    assert f"LeaderId:               {controller}" in out, out
    assert f"CurrentVoters:          [{{\"id\": {controller}" in out, out


@slow
def test_a_stopped_broker_stays_a_voter_with_a_lag_as_in_a_kraft_quorum(cluster, jars44):
    with RawClient(cluster.broker(1).bootstrap) as c:
        controller = c.request(MetadataRequest(topics=[]), 12).controller_id
    down, asked = [n for n in (1, 2, 3) if n != controller][:2]

    def brokers_seen() -> int:
        with RawClient(cluster.broker(asked).bootstrap) as c:
            return len(c.request(MetadataRequest(topics=[]), 12).brokers)

    cluster.broker(down).stop()
    try:
        wait_for(lambda: brokers_seen() == 2, f"broker {down} gone from Metadata")
        bootstrap = cluster.broker(asked).bootstrap
        status = tool(jars44, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", bootstrap,
                      "describe", "--status")
        voters = json.loads(dict(line.split(":", 1) for line in status.splitlines() if ":" in line)["CurrentVoters"])
        assert sorted(v["id"] for v in voters) == [1, 2, 3], status
        table = tool(jars44, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", bootstrap,
                     "describe", "--replication")
        rows = {int(row[0]): row for row in (line.split() for line in table.strip().splitlines()[1:])}
        assert sorted(rows) == [1, 2, 3], table
        assert rows[down][-1] == "Follower" and int(rows[down][3]) > 0, table  # listed, with a lag
    finally:
        cluster.broker(down).start()
        cluster.wait_for_brokers(3)


@slow
def test_kafka_features_changes_reach_every_broker_and_survive_a_restart(cluster, jars44):
    one = cluster.broker(1).bootstrap
    out = tool(jars44, FEATURES, "--bootstrap-server", one, "downgrade", "--feature", "transaction.version=1")
    assert "transaction.version was downgraded to 1." in out
    wait_for(lambda: every_broker_has(cluster, {**BOOTSTRAP_FINALIZED, "transaction.version": 1}), "the downgrade")
    refused = tool(jars44, FEATURES, "--bootstrap-server", cluster.broker(3).bootstrap, "upgrade",
                   "--feature", "group.version=2", ok=False)
    with RawClient(one) as c:
        controller = c.request(MetadataRequest(topics=[]), 12).controller_id
    assert (f"Invalid update version 2 for feature group.version. Local controller {controller} only supports "
            "versions 0-1") in refused
    out = tool(jars44, FEATURES, "--bootstrap-server", cluster.broker(2).bootstrap, "upgrade",
               "--feature", "transaction.version=2")
    assert "transaction.version was upgraded to 2." in out
    wait_for(lambda: every_broker_has(cluster, BOOTSTRAP_FINALIZED), "the upgrade")
    # The levels are cluster metadata: a restarted broker reads them back from ZooKeeper.
    epoch = features(one)[0]
    cluster.broker(1).restart(hard=True)
    assert features(cluster.broker(1).bootstrap) == (epoch, BOOTSTRAP_FINALIZED)


@slow
def test_a_kip_848_consumer_group_consumes_everything(cluster):
    topic, group = f"k848-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 6, 3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(300):
        producer.produce(topic, b"v%d" % i, key=b"k%d" % i)
    assert producer.flush(60) == 0
    consumers = [Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                           "auto.offset.reset": "earliest"}) for _ in range(2)]
    seen: set[tuple[int, int]] = set()
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(seen) < 300 and time.monotonic() < deadline:
            for c in consumers:
                m = c.poll(0.2)
                if m is not None:
                    assert m.error() is None, m.error()
                    seen.add((m.partition(), m.offset()))
        assert len(seen) == 300
        assignments = [c.assignment() for c in consumers]
        assert sorted(p.partition for a in assignments for p in a) == list(range(6))
    finally:
        for c in consumers:
            c.close()
    described = admin.describe_consumer_groups([group])[group].result(30)
    assert described.type.name == "CONSUMER"


@slow
def test_group_configs_are_stored_in_the_cluster_and_described_by_every_broker(cluster, jars44):
    group = f"cfg-{uuid.uuid4().hex[:6]}"
    out = tool(jars44, CONFIGS, "--bootstrap-server", cluster.broker(1).bootstrap, "--entity-type", "groups",
               "--entity-name", group, "--alter", "--add-config", "consumer.session.timeout.ms=50000")
    assert f"Completed updating config for group {group}." in out
    # (Kafka 4.4 adds the broker default as a second synonym, DEFAULT_CONFIG:group.consumer.session.timeout.ms:
    # the single node's GROUP describe, which this shares, lists only the group's own, as Kafka 4.1 did.)
    expected = ("consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:"
                "consumer.session.timeout.ms=50000")

    def described(node: int) -> str:
        return tool(jars44, CONFIGS, "--bootstrap-server", cluster.broker(node).bootstrap, "--entity-type",
                    "groups", "--entity-name", group, "--describe")

    for node in (1, 2, 3):
        wait_for(lambda node=node: expected in described(node), f"broker {node} to describe the group's config")
    cluster.broker(3).restart(hard=True)
    assert expected in described(3)


@slow
def test_broker_configs_and_cluster_defaults_are_described_by_every_broker_and_survive_restarts(cluster, jars44):
    def configs(*args: str, via: int = 1) -> str:
        return tool(jars44, CONFIGS, "--bootstrap-server", cluster.broker(via).bootstrap, "--entity-type", "brokers",
                    *args)

    out = configs("--entity-name", "2", "--alter", "--add-config", "leader.replication.throttled.rate=200000")
    assert "Completed updating config for broker 2." in out
    out = configs("--entity-default", "--alter", "--add-config", "follower.replication.throttled.rate=300000", via=3)
    assert "Completed updating default config for brokers in the cluster." in out
    per_broker = ("leader.replication.throttled.rate=200000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
                  "leader.replication.throttled.rate=200000}")
    default = ("follower.replication.throttled.rate=300000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
               "follower.replication.throttled.rate=300000}")
    for via in (1, 3):
        wait_for(lambda via=via: per_broker in configs("--entity-name", "2", "--describe", via=via), "broker 2's")
        wait_for(lambda via=via: default in configs("--entity-default", "--describe", via=via), "the default")
    assert "leader.replication.throttled.rate" not in configs("--entity-name", "1", "--describe")
    cluster.broker(2).restart(hard=True)
    assert per_broker in configs("--entity-name", "2", "--describe", via=2)
    configs("--entity-name", "2", "--alter", "--delete-config", "leader.replication.throttled.rate")
    configs("--entity-default", "--alter", "--delete-config", "follower.replication.throttled.rate")
    wait_for(lambda: "throttled" not in configs("--entity-name", "2", "--describe", via=2), "the deletion")


@slow
def test_a_kip_848_group_keeps_its_assignment_and_offsets_when_its_coordinator_is_killed(cluster):
    topic, group = f"k848-fo-{uuid.uuid4().hex[:6]}", f"g-fo-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 6, 3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})

    def produce(start: int, end: int) -> None:
        for i in range(start, end):
            producer.produce(topic, b"%d" % i, key=b"%d" % i)
        assert producer.flush(60) == 0

    produce(0, 300)
    consumers = [Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                           "auto.offset.reset": "earliest", "enable.auto.commit": False}) for _ in range(2)]
    seen: list[tuple[int, int]] = []

    def consume_until(count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(set(seen)) < count and time.monotonic() < deadline:
            for c in consumers:
                m = c.poll(0.1)
                if m is not None:
                    assert m.error() is None, m.error()
                    seen.append((m.partition(), m.offset()))
        assert len(set(seen)) == count

    try:
        for c in consumers:
            c.subscribe([topic])
        consume_until(300)
        for c in consumers:
            c.commit(asynchronous=False)
        before = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
        committed = {(tp.partition, tp.offset) for tp in consumers[0].committed(
            [TopicPartition(topic, p) for p in range(6)], timeout=30)}
        assert sorted(p for a in before for p in a) == list(range(6))
        with RawClient(cluster.broker(1).bootstrap) as rc:
            coordinator = rc.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]),
                                     4).coordinators[0].node_id
        cluster.broker(coordinator).kill()
        produce(300, 600)
        consume_until(600)
        # As on Kafka: the new coordinator replays the group from __consumer_offsets; the members keep their
        # partitions (no full rebalance), nothing committed is lost, and no record comes twice.
        assert [sorted(tp.partition for tp in c.assignment()) for c in consumers] == before
        assert len(seen) == len(set(seen)) == 600
        after = {(tp.partition, tp.offset) for tp in consumers[0].committed(
            [TopicPartition(topic, p) for p in range(6)], timeout=30)}
        assert after == committed
    finally:
        for c in consumers:
            c.close()
        cluster.broker(coordinator).start()
        cluster.wait_for_brokers(3)


@slow
def test_the_java_producer_commits_transactions_with_transactions_v2(cluster, jars44):
    """With transaction.version 2 finalized, Kafka 4.4's producer adds partitions implicitly and the coordinator
    bumps the producer epoch at every commit (KIP-890 part 2): the epoch counts the transactions."""
    topic, txn_id = f"tv2-{uuid.uuid4().hex[:6]}", f"tx-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    out = tool(jars44, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", "3000",
               "--record-size", "100", "--throughput", "-1", "--command-property",
               f"bootstrap.servers={cluster.bootstrap}", "acks=all",
               "--transactional-id", txn_id, "--transaction-duration-ms", "50")
    assert "3000 records sent" in out
    with RawClient(cluster.broker(1).bootstrap) as c:
        coordinator = c.request(FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id]), 4).coordinators[0]
    with RawClient(f"{coordinator.host}:{coordinator.port}") as c:
        [state] = c.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states
    assert state.error_code == 0 and state.transaction_state == "CompleteCommit"
    assert state.producer_epoch >= 2, f"epoch {state.producer_epoch}: the producer did not use Transactions V2"


@slow
def test_the_java_consumer_joins_a_kip_848_group_on_a_cluster(cluster, jars44):
    topic, group = f"java848-{uuid.uuid4().hex[:6]}", f"gj-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(90):
        producer.produce(topic, b"r%d" % i, partition=i % 3)
    assert producer.flush(60) == 0
    out = tool(jars44, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", cluster.bootstrap,
               "--topic", topic, "--group", group, "--from-beginning", "--max-messages", "90", "--timeout-ms", "60000",
               "--consumer-property", "group.protocol=consumer")
    assert sorted(line for line in out.splitlines() if line.startswith("r")) == sorted(f"r{i}" for i in range(90))
    described = admin.describe_consumer_groups([group])[group].result(30)
    assert described.type.name == "CONSUMER"
