"""The server's start-up: a default single node answers its first ApiVersions without importing what only other
configurations use (each import is start-up time: prometheus_client alone was ~40 ms of ~250)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pykbroker import java_properties
from pykbroker.testing import free_port, wait_for_api_versions

# Runs ``python -m pykbroker.cli <properties>`` as the benchmark and the fixtures do; a line on stdin asks it for
# the modules it has imported by then (printed as JSON), then it stops as on SIGTERM.
RUN_AND_REPORT = """
import json, os, runpy, signal, sys, threading

def report():
    sys.stdin.readline()
    print(json.dumps(sorted(sys.modules)), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=report, daemon=True).start()
sys.argv = ["pykbroker", sys.argv[1]]
runpy.run_module("pykbroker.cli", run_name="__main__", alter_sys=True)
"""

# What a single node with default properties never needs before serving, by what turns it on.
NOT_AT_START = {
    "prometheus_client": "metrics.port / console.listener",
    "pykbroker.metrics.collector": "metrics.port / console.listener",
    "http.server": "metrics.port (prometheus_client's exposition)",
    "pykbroker.console": "console.listener",
    "crc32c": "the first CRC (it reads its distribution metadata when imported)",
    "importlib.metadata": "crc32c's import",
    "lz4": "the first lz4 batch",
    "snappy": "the first snappy batch",
    "zstandard": "the first zstd batch",
    "kazoo": "zookeeper.connect",
    "replication.metadata.zk": "zookeeper.connect",
    "replication.controller.zk_controller": "zookeeper.connect",
    "replication.replica_fetcher": "a partition followed from another broker (zookeeper.connect)",
    "replication.remote_log_manager": "remote.log.storage.system.enable",
    "storage.remote": "remote.log.storage.system.enable",
    "pyiceberg": "a topic's iceberg.mode",
    "pyarrow": "a topic's iceberg.mode",
    "sqlalchemy": "a topic's iceberg.mode (the SQL catalog)",
    "pykbroker.iceberg.tables": "a topic's iceberg.mode",
    "pykbroker.schema_registry": "schema.registry.listeners / schema-decoding Iceberg topics",
    "fastavro": "the schema registry",
    "google.protobuf": "the schema registry / the first telemetry push",
    "opentelemetry": "the first telemetry push",
    "pykbroker.security.authorizer": "authorizer.class.name",
    "cryptography": "TLS key stores",
    "pykbroker.security.certs": "TLS key stores",
    "pykbroker.security.scram": "a SASL listener",
    "pykbroker.security.sasl_authenticator": "a SASL listener",
    "coordinator.group": "the first group request",
    "coordinator.share": "the first share-group request",
    "coordinator.transaction.coordinator": "the first transactional request",
    "pykbroker.local_cluster": "pykbroker local-cluster",
    "pykbroker.spark": "pykbroker spark-load",
}


def modules_at_first_api_versions(tmp_path: Path, properties: dict[str, str]) -> list[str]:
    """The modules a ``python -m pykbroker.cli`` process has imported once it has answered an ApiVersions."""
    port = free_port()
    props = tmp_path / "server.properties"
    props.write_text(java_properties.dumps({"listeners": f"PLAINTEXT://127.0.0.1:{port}",
                                            "log.dirs": str(tmp_path / "logs"), **properties}))
    log_path = tmp_path / "broker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-c", RUN_AND_REPORT, str(props)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        wait_for_api_versions("127.0.0.1", port, 60)
        out, _ = proc.communicate("report\n", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, log_path.read_text()
    return json.loads(out)


def imported(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_a_default_single_node_serves_without_the_modules_of_other_configurations(tmp_path):
    modules = modules_at_first_api_versions(tmp_path, {})
    assert "pykbroker.broker" in modules and "pykbroker.handlers.api_versions" in modules  # it did serve
    assert {name: why for name, why in NOT_AT_START.items() if imported(modules, name)} == {}
    # Handler modules load on their API's first request (pykbroker.registry): only ApiVersions' here.
    assert [m for m in modules if m.startswith("pykbroker.handlers.")] == ["pykbroker.handlers.api_versions"]
