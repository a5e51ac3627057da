"""@confluentinc/kafka-javascript's own broker tests (its KafkaJS-compatible API's test/promisified under jest, its
node-rdkafka API's e2e under mocha; librdkafka underneath) against pykbroker, on one node and on a 3-broker cluster,
test/promisified once more with KIP-848's consumer group protocol (TEST_CONSUMER_GROUP_PROTOCOL=consumer, as the
project's CI runs it): every test must pass except the ones that fail on Apache Kafka 4.4 too (EXPECTED_FAILURES). Slow (minutes):
``make test-confluent-js-suite-slow`` (PYKBROKER_CONFLUENT_JS_SLOW=1). Skipped when the suite cannot be built here
(no node/npm/C++ compiler, or neither CKJS_SOURCE nor GitHub gives its source: compat_tests/confluent_js/install.sh).
A run against Kafka 4.4 itself: ``python -m compat_tests.confluent_js --target kafka`` (or kafka-cluster; with
``--only promisified --protocol consumer``, the KIP-848 round).
"""

from __future__ import annotations

import contextlib
import os
import shutil

import pytest

from compat_tests.confluent_js import (
    CLUSTER_SCENARIO,
    E2E_CLUSTER_SCENARIO,
    E2E_SCENARIO,
    SCENARIO,
    run_e2e,
    run_promisified,
    suite_dir,
)
from pykbroker.testing import BrokerProcess, ClusterProcesses

pytestmark = [pytest.mark.skipif(os.environ.get("PYKBROKER_CONFLUENT_JS_SLOW") != "1",
                                 reason="minutes: make test-confluent-js-suite-slow (PYKBROKER_CONFLUENT_JS_SLOW=1)"),
              # a build (minutes, once) and a run of the suite (~10 min a round; pyproject's 300 s ended the first
              # round in its e2e half)
              pytest.mark.timeout(5400)]

# e2e tests that fail on Kafka 4.4 as well (one node, 2026-11-29, the same 6 on both): an empty key or value comes
# back to the consumer as null; the partition.eof ones want an EOF before a record produced 4 s after subscribing,
# inside the group's 3 s initial rebalance delay; groups.spec's times out at 120 s.
_FAIL_ON_KAFKA = frozenset({
    "e2e/both.spec.js::Consumer/Producer should be able to produce and consume messages: empty buffer key and empty "
    "value",
    "e2e/both.spec.js::Consumer/Producer should be able to produce and consume messages: empty key and empty value",
    "e2e/both.spec.js::Consumer/Producer should emit 'partition.eof' events in consumeLoop",
    "e2e/both.spec.js::Consumer/Producer should emit partition.eof when already at end of partition",
    "e2e/groups.spec.js::Consumer group/Producer should be able to commit, read committed and restart from the "
    "committed offset",
    "e2e/producer.spec.js::Producer with_dr_msg_cb should produce a message with an empty payload and empty key "
    "(https://github.com/confluentinc/confluent-kafka-javascript/issues/117)",
})
# test/promisified tests that race on a 3-node Kafka 4.4 cluster: the KafkaJS API's commitOffsets resolves once
# librdkafka has queued the commit (commitAsync), and the tests read the offsets back (admin.fetchOffsets, or the next
# consumer's start) at their next 50 ms poll, before the commit's replication to 3 replicas ends. 2026-11-29, the two
# files 5 rounds each, interleaved, a fresh cluster a round, load 12-14 on 2 cores: fetch_offsets failed in 5 of 5
# rounds on Kafka 4.4 (7 tests: "[]", one topic of two, offset -1001) and 0 of 5 on pykbroker; commit in 3 of 5 on
# Kafka 4.4 (31 records where 30, offset 8 where 10) and 0 of 5 on pykbroker. pykbroker failed them in 2 of 4 earlier
# rounds (load ~25) the same way: its OffsetFetch answered while the commit was still replicating.
_FETCH_OFFSETS = "test/promisified/admin/fetch_offsets.spec.js::fetchOffset function "
_COMMIT = "test/promisified/consumer/commit.spec.js::Consumer commit "
_RACE_ON_KAFKA_CLUSTER = frozenset({
    _FETCH_OFFSETS + "should return correct offset after consuming messages",
    _FETCH_OFFSETS + "should return correct offset after consuming messages with specific partitions",
    _FETCH_OFFSETS + "should handle unset or null topics",
    _FETCH_OFFSETS + "should handle multiple topics each with more than 1 partition",
    _COMMIT + "should commit offsets",
    _COMMIT + "should commit offsets with metadata",
})
EXPECTED_FAILURES: dict[str, frozenset[str]] = {"single": _FAIL_ON_KAFKA,
                                                "cluster": _FAIL_ON_KAFKA | _RACE_ON_KAFKA_CLUSTER}
# test/promisified with the consumer group protocol: the tests failing on Kafka 4.4 as well. consumerCacheTests'
# "does not hold up polling for non-message events" (a FIXME in the suite: "can be flaky when using KIP-848
# protocol") consumed one record twice around the second consumer's join on Kafka 4.4 one node (1 of its 4 variants,
# 2026-11-29) and on pykbroker (all 4, under a load of ~10 on 2 cores).
_CACHE_TEST = ("test/promisified/consumer/consumerCacheTests.spec.js::Consumer message cache - isAutoCommit = {} - "
               "partitionsConsumedConcurrently = {} - does not hold up polling for non-message events")
_FLAKY_ON_KAFKA_848 = frozenset(_CACHE_TEST.format(auto, n) for auto in ("true", "false") for n in (1, 3))
# The read-back races above, with the consumer group protocol too: 3 rounds each on 3 brokers, Kafka 4.4 failed one
# of the two files' tests in 3 of 3, pykbroker in 0 of 3 (1 of 1 earlier: commit's "with metadata", offset 8 where 10).
EXPECTED_CONSUMER_PROTOCOL_FAILURES: dict[str, frozenset[str]] = {
    "single": _FLAKY_ON_KAFKA_848, "cluster": _FLAKY_ON_KAFKA_848 | _RACE_ON_KAFKA_CLUSTER}


@pytest.fixture(scope="module")
def suite():
    found = suite_dir()
    if found is None:
        pytest.skip("confluent-kafka-javascript's suite cannot be built here (compat_tests/confluent_js/install.sh)")
    return found


def assert_passed(found, workdir, expected: frozenset[str]) -> None:
    assert found, f"the suite reported no test; its output is under {workdir}"
    bad = sorted(f"{name}: {o.reason}" for name, o in found.items() if o.state == "failed" and name not in expected)
    assert not bad, f"failed: {bad}; the output is under {workdir}"


def test_confluent_js_suite_single_node(suite, tmp_path):
    with BrokerProcess(tmp_path / "broker", overrides=SCENARIO, log_path=tmp_path / "broker.log") as broker:
        found, _ = run_promisified(suite, broker.bootstrap, tmp_path)
        assert broker.alive, broker.log()[-5000:]
    with BrokerProcess(tmp_path / "e2e", overrides=E2E_SCENARIO, log_path=tmp_path / "e2e.log") as broker:
        found.update(run_e2e(suite, broker.bootstrap, tmp_path)[0])
        assert broker.alive, broker.log()[-5000:]
    assert_passed(found, tmp_path, EXPECTED_FAILURES["single"])


@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
def test_confluent_js_suite_cluster(suite, tmp_path):
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=CLUSTER_SCENARIO) as cluster:
        found, _ = run_promisified(suite, cluster.bootstrap, tmp_path)
        assert all(b.alive for b in cluster.brokers.values())
    with ClusterProcesses(tmp_path / "e2e", size=3, overrides=E2E_CLUSTER_SCENARIO) as cluster:
        found.update(run_e2e(suite, cluster.bootstrap, tmp_path)[0])
        assert all(b.alive for b in cluster.brokers.values())
    assert_passed(found, tmp_path, EXPECTED_FAILURES["cluster"])


@pytest.mark.parametrize("topology", ["single", "cluster"])
def test_confluent_js_suite_consumer_group_protocol(suite, tmp_path, topology):
    """test/promisified with group.protocol=consumer (KIP-848) on one node and on 3 brokers."""
    if topology == "cluster" and shutil.which("java") is None:
        pytest.skip("ZooKeeper needs java")
    with contextlib.ExitStack() as stack:
        if topology == "single":
            broker = stack.enter_context(BrokerProcess(tmp_path / "broker", overrides=SCENARIO,
                                                       log_path=tmp_path / "broker.log"))
            brokers, bootstrap = [broker], broker.bootstrap
        else:
            cluster = stack.enter_context(ClusterProcesses(tmp_path / "cluster", size=3, overrides=CLUSTER_SCENARIO))
            brokers, bootstrap = list(cluster.brokers.values()), cluster.bootstrap
        found, _ = run_promisified(suite, bootstrap, tmp_path, protocol="consumer")
        assert all(b.alive for b in brokers)
    assert_passed(found, tmp_path, EXPECTED_CONSUMER_PROTOCOL_FAILURES[topology])
