"""KafkaJS 2.2.4 (Node.js; compat_tests/kafkajs/scenario.js) judged by Kafka 4.4: its idempotent producer with every
codec it can register (none, gzip, snappy, lz4) and the broker's limits (record size, timestamps, LogAppendTime, a
topic's own compression), consumer groups of 1-3 members with the round-robin assignor (eachMessage, eachBatch,
manual and automatic commits, pause/resume, seek, a member expired while stuck in eachMessage), transactions
(sendOffsets, commit, abort, fencing, read_committed stopping at an open transaction), its admin calls (topics,
partitions, configs, offsets, groups, reassignments, ACLs on brokers with an authorizer, deleteTopicRecords, offsets by
timestamp) and their error cases, each step's observation compared between Kafka and pykbroker.

make test runs the quick round (producer, a group, transactions) on one pykbroker node against
kafkajs/expected_quick.json, Kafka 4.4's own observations (the slow run checks that Kafka still makes them); the
whole scenario on one node and on 3 brokers against a 3-node Kafka 4.4 cluster, and the ACL calls, are
``make test-kafkajs-slow`` (PYKBROKER_KAFKAJS_SLOW=1, ~10 min).
"""

from __future__ import annotations

import json
import os

import pytest

from compat_tests.conftest import KAFKA_44, assert_same_observations, judge_jars
from compat_tests.jvm.kafka_broker import KafkaBroker
from compat_tests.kafkajs import HERE, installed, run_scenario
from pykbroker.testing import BrokerProcess

EXPECTED_QUICK = HERE / "expected_quick.json"
# Kafka's KRaft authorizer on both sides; KafkaJS connects as ANONYMOUS on PLAINTEXT, a super user.
AUTHORIZER = {"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
              "super.users": "User:ANONYMOUS"}
SLOW = pytest.mark.skipif(os.environ.get("PYKBROKER_KAFKAJS_SLOW") != "1",
                          reason="the whole KafkaJS scenario judged by Kafka 4.4: make test-kafkajs-slow")


def test_kafkajs_quick_round_matches_kafka(tmp_path):
    installed()  # skips without node, before a broker is started
    with BrokerProcess(tmp_path / "broker", overrides={"group.initial.rebalance.delay.ms": "0"}) as broker:
        broker.start()
        got = run_scenario(broker.bootstrap, mode="quick")
        assert broker.alive, broker.log()
    assert_same_observations("single", "kafkajs-quick", json.loads(EXPECTED_QUICK.read_text()), got)


@SLOW
def test_kafkajs_quick_round_expectations_are_kafkas(kafka44_judge):
    """expected_quick.json is what Kafka 4.4 shows KafkaJS (rewrite it from this run when KafkaJS or Kafka moves)."""
    assert_same_observations("single", "kafkajs-quick", json.loads(EXPECTED_QUICK.read_text()),
                             run_scenario(kafka44_judge.bootstrap, mode="quick"))


@pytest.fixture(scope="module")
def kafkajs_broker(tmp_path_factory):
    installed()
    with BrokerProcess(tmp_path_factory.mktemp("kafkajs")) as broker:
        broker.start()
        yield broker
        assert broker.alive, broker.log()


@SLOW
@pytest.mark.timeout(900)  # two runs of the scenario, 2-4 minutes each on a loaded machine
def test_kafkajs_scenario_single_node(kafka44_judge, kafkajs_broker):
    installed()
    assert_same_observations("single", "kafkajs", run_scenario(kafka44_judge.bootstrap),
                             run_scenario(kafkajs_broker.bootstrap))


@SLOW
@pytest.mark.timeout(900)
def test_kafkajs_scenario_cluster(kafka44_cluster_judge, judged_cluster):
    installed()
    assert_same_observations("cluster", "kafkajs",
                             run_scenario(kafka44_cluster_judge.node(1).bootstrap, replication_factor=3),
                             run_scenario(judged_cluster.broker(1).bootstrap, replication_factor=3))


@SLOW
def test_kafkajs_acls_with_an_authorizer(tmp_path):
    installed()
    with KafkaBroker(judge_jars(KAFKA_44), tmp_path / "kafka", overrides=AUTHORIZER) as kafka:
        expected = run_scenario(kafka.bootstrap, mode="acls")
    with BrokerProcess(tmp_path / "broker", overrides=AUTHORIZER) as broker:
        broker.start()
        got = run_scenario(broker.bootstrap, mode="acls")
    assert_same_observations("single", "kafkajs-acls", expected, got)
