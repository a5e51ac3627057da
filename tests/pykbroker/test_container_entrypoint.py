"""pykbroker.container_entrypoint: the image's entry point, run here as a real process (no Docker needed)."""

from __future__ import annotations

import subprocess
import sys

from pykbroker.container_entrypoint import IMAGE_DEFAULTS, overrides
from pykbroker.testing import free_port, wait_for_api_versions
from tests.clients import round_trip


def test_kafka_variables_override_the_image_defaults_and_others_are_ignored():
    got = overrides({"KAFKA_LOG_RETENTION_MS": "60000", "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://h:1",
                     "KAFKA_HEAP_OPTS": "-Xmx1g", "PATH": "/bin"})
    assert got == [f"{k}={v}" for k, v in {**IMAGE_DEFAULTS, "advertised.listeners": "PLAINTEXT://h:1",
                                           "log.retention.ms": "60000"}.items()]


def test_the_entry_point_serves_with_properties_from_the_environment(tmp_path):
    port = free_port()
    env = {"KAFKA_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}", "KAFKA_ADVERTISED_LISTENERS":
           f"PLAINTEXT://127.0.0.1:{port}", "KAFKA_LOG_DIRS": str(tmp_path / "data"), "KAFKA_NUM_PARTITIONS": "3"}
    proc = subprocess.Popen([sys.executable, "-m", "pykbroker.container_entrypoint"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_api_versions("127.0.0.1", port, timeout=30)
        msg = round_trip(f"127.0.0.1:{port}", "from-env", b"v", partition=2)  # num.partitions=3 from the env
        assert (msg.partition(), msg.value()) == (2, b"v")
        assert (tmp_path / "data" / "from-env-2").is_dir()
    finally:
        proc.terminate()
        proc.wait(30)
