"""confluent-kafka-go's own integration tests (its ``kafka`` package at the version pinned in
compat_tests/confluent_suites/build_go_suite.sh, run by compat_tests/confluent_suites/go_suite.py) against pykbroker:
on one node and on a 3-broker cluster, with the classic and with the consumer (KIP-848) group protocol. Every test
that passes on Apache Kafka 4.4 set up the same way (``python -m compat_tests.confluent_suites.go_suite cluster
--kafka``) passes. Slow (minutes a run on a 2-core machine): ``make test-confluent-suites-slow``
(PYKBROKER_CONFLUENT_SUITES_SLOW=1); skipped without Go.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.confluent_suites.go_suite import PROTOCOLS, go_test_binary, pykbroker_brokers, run_suite

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_CONFLUENT_SUITES_SLOW") != "1",
                                reason="confluent-kafka-go's suite: make test-confluent-suites-slow "
                                       "(PYKBROKER_CONFLUENT_SUITES_SLOW=1)")

# Tests that fail on Apache Kafka 4.4 too, set up the same way, by (size, protocol).
KAFKA_FAILS: dict[tuple[int, str], frozenset[str]] = {}

# Tests that must run, not skip: the broker-side features the suite would otherwise silently not cover.
MUST_RUN = ("TestIntegration/TestAdminACLs", "TestIntegration/TestConsumerPollRebalanceIncremental",
            "TestTransactionalSendOffsets", "TestIntegration/TestAdminClient_DescribeConsumerGroupsAuthorizedOperations")


def _failure_lines(output: str) -> str:
    """The lines of the go test output that say why tests failed (their t.Errorf lines and FAIL markers)."""
    lines = [line for line in output.splitlines() if "--- FAIL" in line or "_test.go:" in line or "Error" in line]
    return "\n".join(lines[-80:])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("size", [1, 3], ids=["single", "cluster"])
def test_the_confluent_go_suite_passes(tmp_path, size, protocol):
    binary = go_test_binary()
    if binary is None:
        pytest.skip("go is not installed: confluent-kafka-go's suite needs it (https://go.dev/dl)")
    with pykbroker_brokers(tmp_path / "brokers", size) as (seeds, sasl_seeds):
        run = run_suite(binary, tmp_path / "run", seeds, sasl_seeds, protocol=protocol, output=tmp_path / "go.log")
    failed = set(run.failed) - KAFKA_FAILS.get((size, protocol), frozenset()) - {"TestIntegration"}
    assert run.results, f"go test ran nothing (exit {run.returncode}):\n{run.output[-3000:]}"
    assert not failed, f"failed: {sorted(failed)} (whole output: {tmp_path / 'go.log'})\n{_failure_lines(run.output)}"
    assert {name: run.results.get(name, "missing") for name in MUST_RUN if run.results.get(name) in (None, "SKIP")} == {}
