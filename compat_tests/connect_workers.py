"""Kafka Connect 4.4 workers as real JVM processes (jars: compat_tests/jvm/connect/fetch_jars.sh).

``ConnectWorker`` runs one distributed worker (org.apache.kafka.connect.cli.ConnectDistributed) with its REST
API on a port of its own choosing (``listeners=http://127.0.0.1:0``; the port is read from its log) and the
tests' connectors (compat_tests/jvm/connect/Line*.java, compiled on first use) on its class path; it writes
its log to a file and is killable with -9.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pykbroker.testing import kill_process, stop_process

HERE = Path(__file__).resolve().parent / "jvm" / "connect"
FETCH_JARS = HERE / "fetch_jars.sh"
LOG4J = HERE / "log4j2.properties"
JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", f"-Dlog4j2.configurationFile={LOG4J}"]
_LISTENING = re.compile(r"REST server listening at (http://[^/\s]+)/")


def connect_classpath() -> str | None:
    """Kafka Connect 4.4's jars (fetched with Maven on first use) and the tests' connectors (compiled into
    .cache/classes) as a class path, or None without java, javac or Maven."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        return None
    try:
        out = subprocess.run(["bash", str(FETCH_JARS)], capture_output=True, text=True, timeout=900, check=True)
        jars = Path(out.stdout.strip().splitlines()[-1])
        classes = HERE / ".cache" / "classes"
        sources = sorted(HERE.glob("Line*.java"))
        built = [classes / f"{s.stem}.class" for s in sources]
        if not all(c.exists() and c.stat().st_mtime >= s.stat().st_mtime for s, c in zip(sources, built, strict=True)):
            classes.mkdir(parents=True, exist_ok=True)
            subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(classes), *map(str, sources)], check=True,
                           timeout=300, capture_output=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return f"{jars}/*:{classes}"


def write_properties(path: Path, props: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


class JvmProcess:
    """A JVM whose stdout and stderr go to ``log_path``."""

    def __init__(self, log_path: Path) -> None:
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def _start(self, command: list[str]) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def log(self, last: int = 80) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-last:])
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_for_log(self, pattern: re.Pattern[str], timeout: float, since: int = 0) -> re.Match[str]:
        """The first match of ``pattern`` in the log after its first ``since`` characters."""
        deadline = time.monotonic() + timeout
        while True:
            found = pattern.search(self.log_path.read_text(errors="replace"), since) if self.log_path.exists() \
                else None
            if found:
                return found
            if not self.alive:
                raise RuntimeError(f"{self.log_path.name} exited; its log:\n{self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {pattern.pattern!r} in {self.log_path.name} after {timeout} s:\n{self.log()}")
            time.sleep(0.2)

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM (the worker leaves its group), kill -9 if it does not exit in ``timeout``."""
        if self.proc is not None:
            stop_process(self.proc, timeout)
        self.proc = None

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc is not None:
            kill_process(self.proc)
            self.proc = None


class ConnectWorker(JvmProcess):
    """One Connect worker in distributed mode; ``url`` is its REST API once started."""

    def __init__(self, classpath: str, root: Path, name: str, props: dict[str, str]) -> None:
        super().__init__(root / f"{name}.log")
        self.classpath = classpath
        self.config_path = root / f"{name}.properties"
        self.props = props
        self.url = ""

    def start(self, timeout: float = 180.0) -> ConnectWorker:
        write_properties(self.config_path, {"listeners": "http://127.0.0.1:0", **self.props})
        since = len(self.log_path.read_text(errors="replace")) if self.log_path.exists() else 0
        self._start([*JAVA, "-cp", self.classpath, "org.apache.kafka.connect.cli.ConnectDistributed",
                     str(self.config_path)])
        self.url = self.wait_for_log(_LISTENING, timeout, since).group(1)
        self.wait_for(lambda: isinstance(self.request("GET", "/connectors"), list), timeout, "its REST API to answer")
        return self

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """The REST API's JSON answer (raises urllib.error.HTTPError on an error status)."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            text = resp.read()
        return json.loads(text) if text else None

    def status(self, connector: str) -> dict | None:
        try:
            return self.request("GET", f"/connectors/{connector}/status")
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def wait_for(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if condition():
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            if not self.alive:
                raise RuntimeError(f"worker {self.log_path.name} exited waiting for {what}; its log:\n{self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no {what} after {timeout} s; {self.log_path.name}:\n{self.log()}")
            time.sleep(0.3)

    def wait_running(self, connector: str, tasks: int, timeout: float = 120.0,
                     workers: set[str] | None = None) -> dict:
        """Until the connector and ``tasks`` tasks are RUNNING (on ``workers`` only, when given); the status."""
        seen: dict = {}

        def running() -> bool:
            status = self.status(connector)
            if status is None:
                return False
            seen.update(status)
            states = [t["state"] for t in status.get("tasks", [])]
            on = {t["worker_id"] for t in status.get("tasks", [])}
            return (status["connector"]["state"] == "RUNNING" and states == ["RUNNING"] * tasks
                    and (workers is None or on <= workers))

        self.wait_for(running, timeout, f"{connector} RUNNING with {tasks} tasks (last status {seen})")
        return seen


MIRROR = Path(__file__).resolve().parent / "jvm" / "mirror"


def mirror_jars() -> Path | None:
    """MirrorMaker 2's jars (compat_tests/jvm/mirror/fetch_jars.sh, on first use), or None without java or Maven."""
    if shutil.which("java") is None:
        return None
    try:
        out = subprocess.run(["bash", str(MIRROR / "fetch_jars.sh")], capture_output=True, text=True, timeout=900,
                             check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return Path(out.stdout.strip().splitlines()[-1])


class MirrorMaker(JvmProcess):
    """A dedicated MirrorMaker 2 (org.apache.kafka.connect.mirror.MirrorMaker) running an mm2.properties."""

    def __init__(self, jars: Path, root: Path, name: str, props: dict[str, str]) -> None:
        super().__init__(root / f"{name}.log")
        self.jars = jars
        self.config_path = root / f"{name}.properties"
        self.props = props

    def start(self) -> MirrorMaker:
        write_properties(self.config_path, self.props)
        self._start([*JAVA, "-cp", f"{self.jars}/*", "org.apache.kafka.connect.mirror.MirrorMaker",
                     str(self.config_path)])
        return self
