"""The fuzz targets: the committed corpus and every past crash replay cleanly, and a short fixed-seed
atheris run of every target finds nothing (the long runs are ``make fuzz``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from fuzz.targets import TARGETS

FUZZ = Path(__file__).parents[2] / "fuzz"


def _inputs(target: str) -> list[Path]:
    folders = [FUZZ / "corpus" / d for d in TARGETS[target][1]] + [FUZZ / "regressions" / target]
    return sorted(p for folder in folders if folder.is_dir() for p in folder.iterdir() if p.is_file())


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_corpus_and_regressions_replay_cleanly(target):
    inputs = _inputs(target)
    assert inputs, f"no seeds for {target}"
    fn = TARGETS[target][0]
    for path in inputs:
        fn(path.read_bytes())  # raises on a finding


def test_every_served_request_version_has_a_seed():
    from fuzz.targets import SERVED

    names = {p.name for p in (FUZZ / "corpus" / "generated").iterdir()}
    from wire import REQUESTS

    for api_key, (lo, hi) in SERVED.items():
        for version in range(max(lo, REQUESTS[api_key].LOWEST_VERSION), hi + 1):
            assert any(n.startswith(f"{api_key}-v{version}-") for n in names), \
                f"no seed for API {api_key} v{version}: run python -m fuzz.seeds"


def test_captured_corpus_comes_from_every_client():
    clients = {p.name.split("-")[0] for p in (FUZZ / "corpus" / "requests").iterdir()}
    assert {"confluent", "kafka", "aiokafka", "java"} <= clients  # kafka = kafka-python


@pytest.mark.skipif(importlib.util.find_spec("atheris") is None, reason="atheris is not installed")
def test_short_fixed_seed_fuzz_run_finds_nothing():
    """Two targets at a time; dispatch (instrumenting every handler's imports: half of the CPU) first, the others
    beside it."""
    targets = ["dispatch", *(t for t in TARGETS if t != "dispatch")]
    done = subprocess.run([sys.executable, "-m", "fuzz", *targets, "--runs", "1000", "--seed", "1", "--jobs", "2"],
                          capture_output=True, text=True, timeout=240, cwd=FUZZ.parent)
    assert done.returncode == 0, done.stdout + done.stderr[-5000:]
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert [line.split()[0] for line in lines] == targets and all(line.endswith(" ok") for line in lines), done.stdout
