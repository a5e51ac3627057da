"""Apache Kafka 3.9.1 in ZooKeeper mode, from the Maven jars of compat_tests/jvm/kafka39/fetch_jars.sh: the
reference for the znode layout of pykbroker's cluster mode (dump_zk_layout.py, compat_tests/test_zk_layout.py).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from pykbroker.testing import free_port, wait_for_api_versions

HERE = Path(__file__).resolve().parent


def jars_dir() -> Path | None:
    """Kafka 3.9.1's jars (fetched with Maven on first use), or None when java or Maven is missing."""
    if shutil.which("java") is None:
        return None
    try:
        out = subprocess.run(["bash", str(HERE / "fetch_jars.sh")], capture_output=True, text=True, timeout=900,
                             check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return Path(out.stdout.strip().splitlines()[-1])


def java(jar_dir: Path, *args: str, heap: str = "-Xmx256m") -> list[str]:
    """A quick-starting JVM command line with Kafka 3.9.1 on the class path."""
    return ["java", heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f"{jar_dir}/*", *args]


class Kafka39:
    """One Kafka 3.9.1 broker in ZooKeeper mode on 127.0.0.1 (free port), logging to ``root/server.log``."""

    def __init__(self, jar_dir: Path, root: Path, broker_id: int, zk_connect: str, rack: str | None = None,
                 overrides: dict[str, object] | None = None) -> None:
        self.jar_dir, self.root, self.broker_id = jar_dir, root / f"broker-{broker_id}", broker_id
        self.port = free_port()
        self.props: dict[str, object] = {
            "broker.id": broker_id, "zookeeper.connect": zk_connect,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "log.dirs": self.root / "logs",
            "zookeeper.session.timeout.ms": 6000, "group.initial.rebalance.delay.ms": 0,
            **({"broker.rack": rack} if rack else {}), **(overrides or {}),
        }
        self.proc: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Launch (returns at once; ``wait()`` for it to serve)."""
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        (self.root / "log4j.properties").write_text(
            "log4j.rootLogger=INFO, F\nlog4j.appender.F=org.apache.log4j.FileAppender\n"
            f"log4j.appender.F.File={self.root / 'server.log'}\nlog4j.appender.F.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n\n")
        out = open(self.root / "stdout.log", "ab")
        self.proc = subprocess.Popen(
            java(self.jar_dir, f"-Dlog4j.configuration=file:{self.root / 'log4j.properties'}", "kafka.Kafka",
                 str(config), heap="-Xmx384m"), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()

    def wait(self, timeout: float = 120) -> None:
        try:
            wait_for_api_versions("127.0.0.1", self.port, timeout)
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"Kafka 3.9.1 broker {self.broker_id} did not start:\n{self.log()}") from None

    def log(self, last: int = 40) -> str:
        try:
            return "\n".join((self.root / "server.log").read_text(errors="replace").splitlines()[-last:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
