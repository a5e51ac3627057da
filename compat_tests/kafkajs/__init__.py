"""KafkaJS 2.2.4 (npm ``kafkajs``, pinned with its codecs in package.json/package-lock.json) as a client of the
compat tests: ``scenario.js`` drives a target through KafkaJS's producer, consumer groups, transactions and admin
calls and prints each step's observation; ``run_scenario`` runs it and returns them, ``install.sh`` (run by
``make deps``) puts the packages into the gitignored node_modules."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def installed() -> Path:
    """The scenario program, its packages installed now if missing; the test is skipped on a machine without node."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed: the KafkaJS tests need them")
    try:
        subprocess.run(["bash", str(HERE / "install.sh")], capture_output=True, text=True, timeout=600, check=True)
    except subprocess.CalledProcessError as exc:
        raise AssertionError(f"compat_tests/kafkajs/install.sh failed:\n{exc.stderr[-3000:]}") from None
    return HERE / "scenario.js"


def run_scenario(bootstrap: str, replication_factor: int = 1, mode: str = "", timeout: float = 300) -> dict:
    """Every step of the scenario on ``bootstrap`` (its topics and groups under a fresh prefix): step -> result.
    ``mode``: "" (all), "quick" (producer, a group, transactions) or "acls" (on a broker with an authorizer)."""
    prefix = f"kjs{uuid.uuid4().hex[:8]}"
    done = subprocess.run(["node", str(installed()), bootstrap, prefix, str(replication_factor),
                           *([mode] if mode else [])], capture_output=True, text=True, timeout=timeout)
    steps: dict = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            steps[entry["step"]] = entry["result"]
    assert done.returncode == 0, f"scenario.js exited {done.returncode}:\n{done.stdout[-5000:]}\n{done.stderr[-3000:]}"
    return steps
