"""Apache Kafka 4.4 itself, started from the Maven jars (compat_tests/jvm/fetch_jars.sh): the judge.

Some share-group tests (KIP-932) drive the Java share consumer of Kafka 4.2 (``SHARE_GROUPS_JUDGE``), where share
groups were released. ``jars_dir("4.2.0")`` fetches that version beside 4.4's jars.

A single node in KRaft combined mode (broker and controller), on free ports in its own directory,
formatted with Kafka's storage tool; only ports, directories and the replication factors a single node
needs are set, everything else is Kafka's default. Used by the differential tests and by ``make bench``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pykbroker.testing import free_port, reserve_port, wait_for_api_versions

HERE = Path(__file__).resolve().parent
FETCH_JARS = HERE / "fetch_jars.sh"
CLUSTER_ID = "pykbroker-judge-000000A"
SHARE_GROUPS_JUDGE = "4.2.0"


def jars_dir(version: str | None = None) -> Path | None:
    """Kafka's jars (fetched with Maven on first use; ``version``: another than the pom's 4.4), or None when
    java or Maven is missing."""
    if shutil.which("java") is None:
        return None
    try:
        out = subprocess.run(["bash", str(FETCH_JARS), *([version] if version else [])], capture_output=True,
                             text=True, timeout=900, check=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return Path(out.stdout.strip().splitlines()[-1])


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a listening TCP socket on ``port`` (Linux's /proc; True where there is none):
    an answer on a port may come from another server that bound it first."""
    try:
        tables = [Path(f"/proc/net/{t}").read_text().splitlines()[1:] for t in ("tcp", "tcp6")]
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return True
    inodes = {f"socket:[{fields[9]}]" for table in tables for fields in map(str.split, table)
              if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port}  # 0A: LISTEN
    for fd in fds:
        with contextlib.suppress(OSError):
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
    return False


class KafkaBroker:
    """One Apache Kafka process; ``start()`` returns seconds from launch to the first ApiVersions answer."""

    def __init__(self, jars: Path, root: Path | None = None, heap: str = "-Xmx512m",
                 overrides: dict[str, str] | None = None, quick_start: bool = True, *, node_id: int = 1,
                 controller_port: int | None = None, voters: str | None = None,
                 loggers: dict[str, str] | None = None, jvm_args: list[str] | None = None,
                 classpath: tuple[Path, ...] = ()) -> None:
        """``quick_start`` trades peak speed for start-up (client JIT only): right for tests, wrong for bench.
        ``voters`` (``id@host:port,...``) makes this node one of a cluster's (see ``KafkaCluster``).
        ``loggers``: log4j logger name -> level, for loggers a test reads (the rest log at WARN).
        ``jvm_args``: more JVM options for the broker process only (not the storage tool), e.g. remote JMX.
        ``classpath``: more class directories or jars (plugins named in ``overrides``)."""
        self.jars = jars
        self.node_id = node_id
        self.controller_port = controller_port or free_port()
        self.voters = voters
        self.quick_start = quick_start
        self._tmp = None if root is not None else tempfile.mkdtemp(prefix="kafka-judge-")  # removed on close
        self.root = Path(root) if root is not None else Path(self._tmp or "")
        self.heap = heap
        self.overrides = dict(overrides or {})
        self.loggers = dict(loggers or {})
        self.jvm_args = list(jvm_args or [])
        self.classpath = tuple(classpath)
        self.proc: subprocess.Popen | None = None
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.root / "server.log"

    def _java(self) -> list[str]:
        quick = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"] if self.quick_start else []
        return ["java", self.heap, *quick, "-cp", os.pathsep.join([f"{self.jars}/*", *map(str, self.classpath)])]

    def _write_config(self) -> Path:
        controller_port = self.controller_port
        single_node = {
            # A single node cannot meet the defaults' replication factor of 3 for internal topics.
            "offsets.topic.replication.factor": "1", "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
        } if self.voters is None else {}
        props = {
            "process.roles": "broker,controller", "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters or f"{self.node_id}@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.root / "logs"),
            **single_node,
            **self.overrides,
        }
        path = self.root / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.root / "log4j2.properties").write_text(
            "rootLogger.level=WARN\nrootLogger.appenderRef.stdout.ref=STDOUT\nappender.stdout.type=Console\n"
            "appender.stdout.name=STDOUT\nappender.stdout.layout.type=PatternLayout\n"
            "appender.stdout.layout.pattern=%m%n\n"
            + "".join(f"logger.l{i}.name={name}\nlogger.l{i}.level={level}\n"
                      for i, (name, level) in enumerate(self.loggers.items())))
        return path

    def start(self, timeout: float = 120.0) -> float:
        self.root.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        fmt = subprocess.run(self._java() + ["kafka.tools.StorageTool", "format", "-t", CLUSTER_ID, "-c", str(config),
                                             "--ignore-formatted"], capture_output=True, text=True, timeout=timeout)
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed: {fmt.stderr or fmt.stdout}")
        log = open(self.log_path, "wb")
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            self._java() + self.jvm_args + [f"-Dlog4j2.configurationFile={self.root / 'log4j2.properties'}", "kafka.Kafka", str(config)],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        try:
            wait_for_api_versions("127.0.0.1", self.port, timeout, self.proc)
            if not listens(self.proc.pid, self.port):  # another server answered: it took the port first
                raise TimeoutError(f"127.0.0.1:{self.port} is already in use by another process")
        except TimeoutError as exc:
            self.stop()
            raise RuntimeError(f"Kafka did not start ({exc}); its log:\n{self.log_path.read_text(errors='replace')}") from None
        return time.perf_counter() - started

    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, timeout: float = 60.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._keep_ports()

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._keep_ports()

    def _keep_ports(self) -> None:
        """After the process exited: its ports stay reserved (see free_port) for a restart, which binds them again."""
        if self.proc is not None:
            for port in (self.port, self.controller_port):
                with contextlib.suppress(OSError):  # a socket listens there (another node's controller port)
                    reserve_port(port, again=True)
        self.proc = None

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> KafkaBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class KafkaCluster:
    """Apache Kafka 4.4 as a cluster of ``size`` combined broker+controller nodes (a three-voter KRaft quorum),
    Kafka's defaults otherwise: the judge of cluster behaviour and the cluster bench's reference."""

    def __init__(self, jars: Path, root: Path, size: int = 3, heap: str = "-Xmx512m",
                 overrides: dict[str, str] | None = None, quick_start: bool = True, *,
                 node_overrides: dict[int, dict[str, str]] | None = None,
                 jvm_args: dict[int, list[str]] | None = None, classpath: tuple[Path, ...] = (),
                 loggers: dict[str, str] | None = None) -> None:
        """``node_overrides`` and ``jvm_args``: node id -> that node's own settings and JVM options (its log dirs,
        a remote JMX port); ``classpath``: plugins every node loads; ``loggers``: every node's (see KafkaBroker)."""
        ports = [free_port() for _ in range(size)]
        voters = ",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(ports))
        self.nodes = [KafkaBroker(jars, root / f"kafka-{i + 1}", heap,
                                  {**(overrides or {}), **(node_overrides or {}).get(i + 1, {})}, quick_start,
                                  node_id=i + 1, controller_port=ports[i], voters=voters,
                                  loggers=loggers, jvm_args=(jvm_args or {}).get(i + 1), classpath=classpath)
                      for i in range(size)]

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def node(self, node_id: int) -> KafkaBroker:
        return self.nodes[node_id - 1]

    def start(self, timeout: float = 180.0) -> float:
        """Start every node (they wait for each other's quorum); seconds until all answer ApiVersions."""
        import concurrent.futures

        started = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            for f in [pool.submit(n.start, timeout) for n in self.nodes]:
                f.result()
        return time.perf_counter() - started

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()

    def close(self) -> None:
        for n in self.nodes:
            n.close()

    def __enter__(self) -> KafkaCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def started_kafka_44(root: Path, cluster: bool, overrides: dict[str, str], **broker_args: Any) -> Iterator[str]:
    """Kafka 4.4 under ``root`` for a client suite's run: one node (``broker_args`` to its KafkaBroker) or a
    3-node cluster, killed after; yields its bootstrap. Exits with a message when the jars cannot be had."""
    jars = jars_dir("4.4.0")
    if jars is None:
        raise SystemExit("Kafka 4.4's jars are not available (java and Maven are needed)")
    if not cluster:
        with KafkaBroker(jars, root / "kafka", overrides=overrides, **broker_args) as kafka:
            yield kafka.bootstrap
        return
    nodes = KafkaCluster(jars, root / "kafka-cluster", overrides=overrides)
    try:
        nodes.start()
        yield nodes.bootstrap
    finally:
        for node in nodes.nodes:
            node.kill()
        nodes.close()
