"""The Java AdminClient (kafka-clients 4.1) against pykbroker and Apache Kafka 4.1: it must observe the same.

``compat_tests/jvm/AdminDriver.java`` (run as a single-file Java program) creates, describes, alters and
deletes topics, configs and partitions, lists offsets, deletes records, drives a consumer group and a
transaction, and prints what it saw; every line must match Kafka's unless allowed in
``differential_allowlist``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from compat_tests.differential_allowlist import ALLOWED
from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.jvm.single_file import run_args
from pykbroker.testing import BrokerProcess

DRIVER = Path(__file__).resolve().parent / "jvm" / "AdminDriver.java"

if shutil.which("java") is None:
    pytest.skip("java is not installed: the Java client cannot run", allow_module_level=True)


def observe(bootstrap: str) -> dict[str, str]:
    jars = jars_dir()
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka's jars"
    done = subprocess.run(["java", *run_args(DRIVER, jars), bootstrap], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, f"AdminDriver against {bootstrap} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    lines = [line.removeprefix("OBSERVED ") for line in done.stdout.splitlines() if line.startswith("OBSERVED ")]
    return dict(line.split("=", 1) for line in lines)


def test_java_admin_client_observes_what_it_observes_on_kafka(tmp_path, kafka_judge):
    with BrokerProcess(tmp_path / "broker") as broker:
        got = observe(broker.bootstrap)
    expected = observe(kafka_judge.bootstrap)
    assert len(expected) > 40
    differences = {k: (expected.get(k), got.get(k)) for k in sorted(set(expected) | set(got))
                   if expected.get(k) != got.get(k) and ("java_admin", k) not in ALLOWED}
    assert not differences, "\n".join(f"{k}: kafka={e!r} pykbroker={g!r}" for k, (e, g) in differences.items())
