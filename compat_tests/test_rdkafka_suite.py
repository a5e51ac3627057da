"""librdkafka's own integration test suite (the chosen sets of compat_tests/rdkafka_suite, every one of which passes
on Apache Kafka 4.4) against pykbroker, on one node and on a 3-broker cluster: every test must pass. Slow (the
runner is built once, minutes; each run takes minutes; the consumer group tests run once more with KIP-848's
protocol, on one node and on 3 brokers; the tests needing Kafka's scripts get a KAFKA_PATH made of Kafka 4.4's
jars, and the noautocreate and ACL scenarios run on brokers of their own): ``make test-rdkafka-suite-slow`` (PYKBROKER_RDKAFKA_SUITE_SLOW=1), in
the runner's quick mode; its full mode (more messages, the sub-tests quick mode skips) with
PYKBROKER_RDKAFKA_SUITE_FULL=1 (``make test-rdkafka-suite-full-slow``). Skipped on a machine without a C compiler.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.rdkafka_suite import (
    ACL,
    CLUSTER,
    CONSUMER_PROTOCOL,
    NOAUTOCREATE,
    NOAUTOCREATE_CLUSTER,
    SINGLE,
    broker_settings,
    chosen,
    run_suite,
    runner_path,
    runner_scenario,
    verdict,
)
from compat_tests.rdkafka_suite.kafka_path import kafka_path
from pykbroker.testing import BrokerProcess, ClusterProcesses

pytestmark = [pytest.mark.skipif(os.environ.get("PYKBROKER_RDKAFKA_SUITE_SLOW") != "1",
                                 reason="minutes: make test-rdkafka-suite-slow (PYKBROKER_RDKAFKA_SUITE_SLOW=1)"),
              pytest.mark.timeout(5400)]  # a build (minutes, once) and a run of up to an hour (run_suite's bound)

QUICK = os.environ.get("PYKBROKER_RDKAFKA_SUITE_FULL") != "1"


@pytest.fixture(scope="module")
def runner():
    found = runner_path()
    if found is None:
        pytest.skip("no C compiler: librdkafka's test suite cannot be built (tools/install_system_deps.sh)")
    return found


@pytest.fixture(scope="module")
def kafka_home() -> Path:
    """A KAFKA_PATH of Kafka 4.4's jars, for the tests running kafka-topics.sh, kafka-acls.sh, Java clients."""
    jars = jars_dir()
    if jars is None:
        pytest.skip("Kafka 4.4's jars are needed for the suite's Kafka scripts (java, Maven: make deps)")
    return kafka_path(jars)


def assert_all_passed(outcomes, tests: str, log) -> None:
    failed, not_passed = verdict(outcomes, tests)
    assert not failed and not not_passed, f"failed: {failed}; without a pass: {not_passed}; the runner's log: {log}"


@pytest.mark.parametrize("scenario,tests", [("default", SINGLE), ("noautocreate", NOAUTOCREATE), ("acl", ACL)])
def test_rdkafka_suite_single_node(runner, kafka_home, tmp_path, scenario, tests):
    tests = chosen(tests, QUICK)
    with BrokerProcess(tmp_path / "broker", overrides=broker_settings(scenario, cluster=False),
                       log_path=tmp_path / "broker.log") as broker:
        outcomes, log = run_suite(runner, broker.bootstrap, tests, tmp_path / "run", quick=QUICK,
                                  scenario=runner_scenario(scenario), kafka_path=kafka_home)
        assert broker.alive, broker.log()[-5000:]
    assert_all_passed(outcomes, tests, log)


@pytest.mark.parametrize("topology", ["single", "cluster"])
def test_rdkafka_suite_consumer_group_protocol(runner, kafka_home, tmp_path, topology):
    """The consumer group tests with KIP-848's protocol (group.protocol=consumer) on one node and on 3 brokers."""
    if topology == "cluster" and shutil.which("java") is None:
        pytest.skip("ZooKeeper needs java")
    tests = chosen(CONSUMER_PROTOCOL, QUICK)
    on_cluster = topology == "cluster"
    with contextlib.ExitStack() as stack:
        if on_cluster:
            cluster = stack.enter_context(ClusterProcesses(tmp_path / "cluster", size=3,
                                                           overrides=broker_settings("default", cluster=True)))
            brokers, bootstrap = list(cluster.brokers.values()), cluster.bootstrap
        else:
            broker = stack.enter_context(BrokerProcess(tmp_path / "broker", log_path=tmp_path / "broker.log",
                                                       overrides=broker_settings("default", cluster=False)))
            brokers, bootstrap = [broker], broker.bootstrap
        outcomes, log = run_suite(runner, bootstrap, tests, tmp_path / "run", quick=QUICK,
                                  env={"TEST_CONSUMER_GROUP_PROTOCOL": "consumer"}, kafka_path=kafka_home)
        assert all(b.alive for b in brokers)
    assert_all_passed(outcomes, tests, log)


@pytest.mark.skipif(shutil.which("java") is None, reason="ZooKeeper needs java")
@pytest.mark.parametrize("scenario,tests", [("default", CLUSTER), ("noautocreate", NOAUTOCREATE_CLUSTER)])
def test_rdkafka_suite_cluster(runner, kafka_home, tmp_path, scenario, tests):
    tests = chosen(tests, QUICK)
    with ClusterProcesses(tmp_path / "cluster", size=3, overrides=broker_settings(scenario, cluster=True)) as cluster:
        outcomes, log = run_suite(runner, cluster.bootstrap, tests, tmp_path / "run", quick=QUICK,
                                  scenario=runner_scenario(scenario), kafka_path=kafka_home)
        assert all(b.alive for b in cluster.brokers.values())
    assert_all_passed(outcomes, tests, log)
