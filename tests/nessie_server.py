"""A real Iceberg REST catalog for tests: Project Nessie's server (tools/nessie/fetch_jar.sh, run by `make deps`)
in memory on a free port, its warehouse a bucket of an S3 server (tests/s3_server.py). Nessie needs Java 21 or
newer: found through $PYKBROKER_NESSIE_JAVA, $JAVA_HOME, `java` on the PATH or /usr/lib/jvm. Its settings,
the S3 credentials among them, are in a config file of its working directory (mode 0600), never on a command
line."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

from pykbroker.testing import free_port

__all__ = ["NESSIE_JAR", "NessieServer", "nessie_java"]

ROOT = Path(__file__).resolve().parents[1]
NESSIE_VERSION = "0.99.0"
NESSIE_JAR = Path(os.environ.get("PYKBROKER_NESSIE_JAR",
                                 ROOT / "tools" / "nessie" / ".cache" / f"nessie-quarkus-{NESSIE_VERSION}-runner.jar"))


def _major(java_home: Path) -> int:
    release = java_home / "release"
    if not release.is_file():
        return 0
    m = re.search(r'JAVA_VERSION="(\d+)', release.read_text())
    return int(m.group(1)) if m else 0


def nessie_java() -> str | None:
    """A ``java`` of version 21 or newer, or None."""
    candidates = [os.environ.get("PYKBROKER_NESSIE_JAVA", "")]
    if os.environ.get("JAVA_HOME"):
        candidates.append(os.path.join(os.environ["JAVA_HOME"], "bin", "java"))
    candidates.append(shutil.which("java") or "")
    candidates += sorted((str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java")), reverse=True)
    for java in filter(None, candidates):
        path = Path(java).resolve()
        if path.is_file() and _major(path.parents[1]) >= 21:
            return str(path)
    return None


class NessieServer:
    """Nessie over an S3 bucket; ``iceberg_uri`` is its Iceberg REST endpoint."""

    def __init__(self, work_dir: str | Path, *, s3_endpoint: str, bucket: str, access_key: str, secret_key: str,
                 warehouse_path: str = "warehouse") -> None:
        self.work_dir = Path(work_dir)
        self.port = free_port()
        self.management_port = free_port()
        self.warehouse = f"s3://{bucket}/{warehouse_path}"
        self._settings = {
            "quarkus.http.host": "127.0.0.1", "quarkus.http.port": str(self.port),
            "quarkus.management.host": "127.0.0.1", "quarkus.management.port": str(self.management_port),
            "quarkus.otel.sdk.disabled": "true",
            "nessie.version.store.type": "IN_MEMORY",
            "nessie.server.authentication.enabled": "false",
            "nessie.catalog.default-warehouse": "lake",
            "nessie.catalog.warehouses.lake.location": self.warehouse,
            "nessie.catalog.service.s3.default-options.endpoint": s3_endpoint + "/",
            "nessie.catalog.service.s3.default-options.path-style-access": "true",
            "nessie.catalog.service.s3.default-options.region": "us-east-1",
            # Clients (the broker, pyiceberg, Spark) bring their own S3 credentials; pyarrow cannot sign remotely.
            "nessie.catalog.service.s3.default-options.request-signing-enabled": "false",
            "nessie.catalog.service.s3.default-options.access-key": "urn:nessie-secret:quarkus:s3creds",
            "s3creds.name": access_key, "s3creds.secret": secret_key}
        self.proc: subprocess.Popen | None = None

    @property
    def iceberg_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/iceberg"

    def start(self, timeout: float = 120.0) -> NessieServer:
        java = nessie_java()
        if java is None or not NESSIE_JAR.is_file():
            raise RuntimeError(f"Nessie needs {NESSIE_JAR} (tools/nessie/fetch_jar.sh) and a Java 21+")
        config = self.work_dir / "config"
        config.mkdir(parents=True, exist_ok=True)
        props = config / "application.properties"
        props.touch(mode=0o600)
        props.write_text("".join(f"{k}={v}\n" for k, v in self._settings.items()))
        with open(self.work_dir / "nessie.log", "ab") as out:
            self.proc = subprocess.Popen([java, "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar",
                                          str(NESSIE_JAR)], cwd=self.work_dir, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Nessie exited: {(self.work_dir / 'nessie.log').read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.iceberg_uri}/v1/config", timeout=2) as resp:
                    json.load(resp)
                return self
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError("Nessie did not start serving its Iceberg REST endpoint")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> NessieServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
