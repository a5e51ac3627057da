"""IBM/sarama's own functional tests (the sarama pinned in compat_tests/sarama/go.mod, run by compat_tests/sarama)
against 5 pykbroker brokers behind toxiproxy, set up as sarama's docker-compose.yml sets up Kafka. Every test that
passes on Apache Kafka 4.4 set up the same way (``python -m compat_tests.sarama --kafka``) passes; the tests that fail
there too are left out (``FAILS_ON_KAFKA``), a test racy on Kafka too (``RACY``) gets retries. Slow (see the Makefile):
``make test-sarama-suite-slow`` (PYKBROKER_SARAMA_SUITE_SLOW=1, about 6 minutes on a 2-core machine); skipped without Go.
"""

from __future__ import annotations

import os

import pytest

from compat_tests.sarama import pykbroker_environment, run_suite, sarama_test_binary

pytestmark = [pytest.mark.skipif(os.environ.get("PYKBROKER_SARAMA_SUITE_SLOW") != "1",
                                 reason="sarama's functional suite: make test-sarama-suite-slow "
                                        "(PYKBROKER_SARAMA_SUITE_SLOW=1)"),
              pytest.mark.timeout(5400)]  # a build (minutes, once) and a run of up to an hour (run_suite's bound)

# Tests that fail against Apache Kafka 4.4 too, set up the same way, and why: not run.
FAILS_ON_KAFKA: dict[str, str] = {}

# Tests that fail now and then against Apache Kafka 4.4 too: one that fails is run again (up to RACY_RETRIES times),
# and one pass is a pass.
RACY = {
    # Its records carry timestamps of November 2023, far past the 7 days of log.retention.hours=168 (the distribution's
    # server.properties), so the retention check (every 5 minutes) may delete them between the produce and the
    # ListOffsets it then checks: earliest offset 10 where it wants 0, 1 run in 3 on 5 Kafka 4.4 nodes.
    "TestFuncAdminListOffsets",
}
RACY_RETRIES = 3

# Tests that must run, not skip: the broker-side features the suite would otherwise silently not cover (the broker
# failures go through the harness's docker shim, the connection cuts through toxiproxy).
MUST_RUN = ("TestFuncTxnProduceWithBrokerFailure", "TestConsumerFetchFollowerFailover",
            "TestFuncAdminListConsumerGroupOffsets", "TestFuncConnectionFailure", "TestFuncConsumerGroupCooperative",
            "TestFuncConsumerGroupStaticMembership_Fenced", "TestFuncTxnProduceEpochBump")


def _test_lines(output: str, name: str) -> list[str]:
    """The output lines of test ``name`` (from its ``=== RUN`` to its result)."""
    lines = output.splitlines()
    start = lines.index(f"=== RUN   {name}")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("--- ") and f" {name} " in lines[i])
    return lines[start:end + 1]


def _failure_lines(output: str) -> str:
    """The lines of the go test output that say why tests failed (their t.Errorf lines and FAIL markers)."""
    lines = [line for line in output.splitlines() if "--- FAIL" in line or "_test.go:" in line or "Error" in line]
    return "\n".join(lines[-80:])


def test_the_functional_suite_passes(tmp_path):
    built = sarama_test_binary()
    if built is None:
        pytest.skip("go is not installed: sarama's functional suite needs it (https://go.dev/dl)")
    binary, workdir, server = built
    skip = "|".join(f"^{name}$" for name in FAILS_ON_KAFKA)
    with pykbroker_environment(tmp_path, server) as env:
        run = run_suite(binary, workdir, env, output=tmp_path / "sarama.log",
                        extra_args=("-test.skip", skip) if skip else ())
        failed = set(run.failed)
        for name in sorted(failed & RACY):
            again = run_suite(binary, workdir, env, pattern=f"^{name}$",
                              extra_args=("-test.count", str(RACY_RETRIES)))
            if f"--- PASS: {name} " in again.output:
                failed.discard(name)
    assert run.results, f"go test ran nothing (exit {run.returncode}):\n{run.output[-3000:]}"
    assert not failed, f"failed: {sorted(failed)} (whole output: {tmp_path / 'sarama.log'})\n{_failure_lines(run.output)}"
    assert {name: run.results.get(name, "missing") for name in MUST_RUN if run.results.get(name) in (None, "SKIP")} == {}
    # TestFuncIdempotentBufferedSequence looks for OutOfOrderSequenceException in the leader's log, a Java class name
    # pykbroker's log never holds: the producer error that the broker's refusal gives the client is looked for instead
    assert [line for line in _test_lines(run.output, "TestFuncIdempotentBufferedSequence")
            if "producer error:" in line] == []
    assert run.returncode == 0 or run.failed, f"go test exited {run.returncode}:\n{run.output[-3000:]}"
