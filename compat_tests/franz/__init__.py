"""franz-go (github.com/twmb/franz-go) as a client of the compat tests: ``main.go`` is a small application (its
module pinned in go.mod/go.sum), built once by ``build.sh`` (which ``make deps`` runs) into the gitignored
``.cache``; ``run_franz`` runs it and returns its report."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def franz_binary() -> Path:
    """The built program (built now if its sources changed); the test is skipped on a machine without Go."""
    try:
        out = subprocess.run(["bash", str(HERE / "build.sh")], capture_output=True, text=True, timeout=600,
                             check=True).stdout.strip()
    except subprocess.CalledProcessError as exc:
        raise AssertionError(f"compat_tests/franz/build.sh failed:\n{exc.stderr[-3000:]}") from None
    if not out:
        pytest.skip("go is not installed: the franz-go tests need it (https://go.dev/dl)")
    return Path(out)


def run_franz(bootstrap: str, topic: str, group: str, protocol: str, records: int = 1000) -> dict:
    """Produce ``records`` to ``topic`` and consume them in ``group`` with ``protocol`` (classic or consumer);
    the program's report (produced, consumed, distinct keys, committed offsets by partition)."""
    done = subprocess.run([str(franz_binary()), "-brokers", bootstrap, "-topic", topic, "-group", group,
                           "-protocol", protocol, "-records", str(records), "-timeout", "60s"],
                          capture_output=True, text=True, timeout=120)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, f"franz-compat exited {done.returncode}:\n{done.stdout}\n{done.stderr[-3000:]}"
    report = json.loads(lines[-1])
    report["committed"] = {int(p): o for p, o in report["committed"].items()}
    return report
