"""Running a Go package's compiled tests (a ``go test -c`` binary, as the franz-go and confluent-kafka-go suites build)
and reading each test's PASS/FAIL/SKIP from its ``-test.v`` output."""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)")
# The lines kept past the output bound: what marks a test's start and end, the package's verdict, a panic.
_MARKER = re.compile(r"^\s*(--- (PASS|FAIL|SKIP): |=== (RUN|PAUSE|CONT|NAME) |FAIL\b|ok\b|PASS$|panic: )")
MAX_OUTPUT_BYTES = 64 << 20  # a whole run's normal -test.v output is a few MB


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
                 output: Path | None = None, extra_args: tuple[str, ...] = (),
                 max_output_bytes: int = MAX_OUTPUT_BYTES) -> SuiteRun:
    """Run the tests of ``binary`` matching ``pattern`` in ``workdir`` with ``env``; the output is also written to
    ``output``. With -count, one failure of a test fails it.

    A test that fails may leave goroutines logging in a loop for the rest of the run (franz-go's ETL consumers
    report every failed transaction, gigabytes of it): past ``max_output_bytes`` only the lines that mark tests
    (``=== RUN``, ``--- PASS/FAIL/SKIP``, ``FAIL``/``ok``/``PASS``, panics) are kept, and the output says so."""
    started = time.monotonic()
    kept: list[str] = []
    size = 0
    dropped = 0
    # line-buffered: the file shows the run as it goes
    with (open(output, "w", buffering=1) if output is not None else tempfile.TemporaryFile("w", buffering=1)) as out:
        proc = subprocess.Popen([str(binary), "-test.run", pattern, "-test.v", "-test.timeout", f"{timeout_s}s",
                                 *extra_args], env=env, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace")
        killer = threading.Timer(timeout_s + 120, proc.kill)  # go test's own -test.timeout panics well before
        killer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if size >= max_output_bytes and not _MARKER.match(line):
                    dropped += 1
                    continue
                if dropped:
                    line = f"[{dropped} lines over the {max_output_bytes}-byte output bound dropped]\n{line}"
                    dropped = 0
                size += len(line)
                kept.append(line)
                out.write(line)
            returncode = proc.wait()
        finally:
            killer.cancel()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if dropped:
            note = f"[{dropped} lines over the {max_output_bytes}-byte output bound dropped]\n"
            kept.append(note)
            out.write(note)
    text = "".join(kept)
    results: dict[str, str] = {}
    for m in filter(None, map(_RESULT.match, text.splitlines())):
        if results.get(m[2]) != "FAIL":
            results[m[2]] = m[1]
    return SuiteRun(results, returncode, text, time.monotonic() - started)
