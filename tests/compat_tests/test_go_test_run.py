"""compat_tests/go_test_run: a test binary's results are read from its -test.v output, and a binary that keeps
logging (a failed test's goroutines still running) has its output bounded without losing a result."""

from __future__ import annotations

import stat

from compat_tests.go_test_run import run_go_tests

# Stands in for a `go test -c` binary: a passing test, then a failing one whose leftover goroutine floods the
# output while the next test runs and passes.
FAKE_BINARY = """#!/bin/sh
echo "=== RUN   TestA"
echo "--- PASS: TestA (0.01s)"
echo "=== RUN   TestB"
echo "    b_test.go:10: it broke"
echo "--- FAIL: TestB (0.02s)"
echo "=== RUN   TestC"
i=0
while [ $i -lt 5000 ]; do echo "    testConsumer sendErr group=g: flush unexpected err: PRODUCER_FENCED"; i=$((i+1)); done
echo "--- PASS: TestC (0.03s)"
echo "FAIL"
exit 1
"""


def test_the_output_is_bounded_and_every_result_kept(tmp_path):
    binary = tmp_path / "fake.test"
    binary.write_text(FAKE_BINARY)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    run = run_go_tests(binary, tmp_path, {}, pattern=".", timeout_s=60, output=tmp_path / "out.log",
                       max_output_bytes=10_000)
    assert run.results == {"TestA": "PASS", "TestB": "FAIL", "TestC": "PASS"}
    assert run.failed == ["TestB"] and run.returncode == 1
    assert "b_test.go:10: it broke" in run.output
    assert 10_000 <= len(run.output) < 11_000
    assert "lines over the 10000-byte output bound dropped]\n--- PASS: TestC" in run.output
    assert (tmp_path / "out.log").read_text() == run.output


def test_a_short_run_is_kept_whole(tmp_path):
    binary = tmp_path / "fake.test"
    binary.write_text(FAKE_BINARY)
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    run = run_go_tests(binary, tmp_path, {}, pattern=".", timeout_s=60)
    assert run.output.count("sendErr") == 5000 and "dropped" not in run.output
