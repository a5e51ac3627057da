"""Running a Go package's compiled tests (a ``go test -c`` binary, as the franz-go and confluent-kafka-go suites build)
and reading each test's PASS/FAIL/SKIP from its ``-test.v`` output."""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)")


@dataclass
class SuiteRun:
    """A run's outcome: each test's PASS/FAIL/SKIP (subtests by their full name), the go test exit code and the whole
    output."""

    results: dict[str, str]
    returncode: int
    output: str
    seconds: float
    failed: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.failed = sorted(name for name, status in self.results.items() if status == "FAIL")

    def counts(self) -> tuple[int, int, int]:
        """(passed, failed, skipped) of the top-level tests."""
        top = [s for name, s in self.results.items() if "/" not in name]
        return top.count("PASS"), top.count("FAIL"), top.count("SKIP")


def run_go_tests(binary: Path, workdir: Path, env: dict[str, str], *, pattern: str, timeout_s: int,
                 output: Path | None = None, extra_args: tuple[str, ...] = ()) -> SuiteRun:
    """Run the tests of ``binary`` matching ``pattern`` in ``workdir`` with ``env``; the output is also written to
    ``output``. With -count, one failure of a test fails it."""
    started = time.monotonic()
    with (open(output, "w+") if output is not None else tempfile.TemporaryFile("w+")) as out:  # written as it runs
        done = subprocess.run([str(binary), "-test.run", pattern, "-test.v", "-test.timeout", f"{timeout_s}s",
                               *extra_args], env=env, cwd=workdir, stdout=out, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout_s + 120)
        out.seek(0)
        text = out.read()
    results: dict[str, str] = {}
    for m in filter(None, map(_RESULT.match, text.splitlines())):
        if results.get(m[2]) != "FAIL":
            results[m[2]] = m[1]
    return SuiteRun(results, done.returncode, text, time.monotonic() - started)
