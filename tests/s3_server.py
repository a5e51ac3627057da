"""A real S3-compatible server for tests: versitygw (tools/s3/install.sh, run by `make deps`) serving a
temporary directory on a free port, credentials passed in its environment (never on its command line).
Also for the Iceberg topics' tests: ``S3Server(...).object_store(bucket)`` is a ready ``S3ObjectStore``."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path

from pykbroker.testing import free_port

__all__ = ["S3Server", "VERSITYGW", "s3_server_available"]

ROOT = Path(__file__).resolve().parents[1]
VERSITYGW = Path(os.environ.get("PYKBROKER_VERSITYGW", ROOT / "tools" / "s3" / ".cache" / "bin" / "versitygw"))


def s3_server_available() -> bool:
    return VERSITYGW.is_file() and os.access(VERSITYGW, os.X_OK)


class S3Server:
    """versitygw over ``data_dir``; ``endpoint``, ``access_key`` and ``secret_key`` are what clients use."""

    def __init__(self, data_dir: str | Path, port: int | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.access_key = "test-" + secrets.token_hex(4)
        self.secret_key = secrets.token_hex(16)
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> S3Server:
        (self.data_dir / "objects").mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "ROOT_ACCESS_KEY": self.access_key, "ROOT_SECRET_KEY": self.secret_key}
        with open(self.data_dir / "versitygw.log", "ab") as out:
            self.proc = subprocess.Popen([str(VERSITYGW), "--port", f"127.0.0.1:{self.port}", "posix",
                                          str(self.data_dir / "objects")], stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"versitygw exited: {(self.data_dir / 'versitygw.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError("versitygw did not start listening")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def pause(self) -> None:
        """SIGSTOP: the server hangs (connections are accepted by the kernel, nothing is answered)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None

    def object_store(self, bucket: str):
        from storage.remote.s3 import S3ObjectStore

        return S3ObjectStore(endpoint=self.endpoint, bucket=bucket, access_key=self.access_key,
                             secret_key=self.secret_key, connect_timeout_s=2, read_timeout_s=10)

    def broker_overrides(self, bucket: str) -> dict[str, str]:
        """What a broker needs to tier to this server (pykbroker.remote_storage)."""
        return {"remote.log.storage.manager.class.name": "pykbroker.remote.S3RemoteStorageManager",
                "rsm.config.s3.endpoint": self.endpoint, "rsm.config.s3.bucket": bucket,
                "rsm.config.s3.access.key": self.access_key, "rsm.config.s3.secret.key": self.secret_key}

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
