"""librdkafka's own integration test suite (the chosen set of compat_tests/rdkafka_suite, every one of which passes
on Apache Kafka 4.4) against pykbroker, on one node and on a 3-broker cluster: every test must pass. Slow (the
runner is built once, minutes; each run takes minutes; the consumer group tests run once more with KIP-848's
protocol): ``make test-rdkafka-suite-slow``
(PYKBROKER_RDKAFKA_SUITE_SLOW=1). Skipped on a machine without a C compiler.
"""

from __future__ import annotations

import os
import shutil

import pytest

from compat_tests.rdkafka_suite import (
    CLUSTER,
    CLUSTER_SCENARIO,
    CONSUMER_PROTOCOL,
    SCENARIO,
    SINGLE,
    run_suite,
    runner_path,
    verdict,
)
from pykbroker.testing import BrokerProcess, ClusterProcesses

pytestmark = [pytest.mark.skipif(os.environ.get("PYKBROKER_RDKAFKA_SUITE_SLOW") != "1",
                                 reason="minutes: make test-rdkafka-suite-slow (PYKBROKER_RDKAFKA_SUITE_SLOW=1)"),
              pytest.mark.timeout(5400)]  # a build (minutes, once) and a run of up to an hour (run_suite's bound)


@pytest.fixture(scope="module")
def runner():
    found = runner_path()
    if found is None:
        pytest.skip("no C compiler: librdkafka's test suite cannot be built (tools/install_system_deps.sh)")
    return found


def assert_all_passed(outcomes, tests: str, log) -> None:
    failed, not_passed = verdict(outcomes, tests)
    assert not failed and not not_passed, f"failed: {failed}; without a pass: {not_passed}; the runner's log: {log}"


def test_rdkafka_suite_single_node(runner, tmp_path):
    with BrokerProcess(tmp_path / "broker", overrides=SCENARIO, log_path=tmp_path / "broker.log") as broker:
        outcomes, log = run_suite(runner, broker.bootstrap, SINGLE, tmp_path / "run")
        assert broker.alive, broker.log()[-5000:]
    assert_all_passed(outcomes, SINGLE, log)


def test_rdkafka_suite_consumer_group_protocol(runner, tmp_path):
    """The consumer group tests with KIP-848's protocol (group.protocol=consumer) on one node."""
    with BrokerProcess(tmp_path / "broker", overrides=SCENARIO, log_path=tmp_path / "broker.log") as broker:
        outcomes, log = run_suite(runner, broker.bootstrap, CONSUMER_PROTOCOL, tmp_path / "run",
                                  env={"TEST_CONSUMER_GROUP_PROTOCOL": "consumer"})
        assert broker.alive, broker.log()[-5000:]
    assert_all_passed(outcomes, CONSUMER_PROTOCOL, log)


@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
def test_rdkafka_suite_cluster(runner, tmp_path):
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=CLUSTER_SCENARIO) as cluster:
        outcomes, log = run_suite(runner, cluster.bootstrap, CLUSTER, tmp_path / "run")
        assert all(b.alive for b in cluster.brokers.values())
    assert_all_passed(outcomes, CLUSTER, log)
