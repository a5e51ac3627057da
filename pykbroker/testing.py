"""Run a real pykbroker process for tests (ours and users'): free port, temp data dir, clean teardown.

    with BrokerProcess(tmp_path) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap})

    with ZooKeeperProcess() as zk:            # a standalone ZooKeeper server, for cluster mode
        broker = BrokerProcess(overrides={"zookeeper.connect": zk.connect})
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pykbroker import java_properties

__all__ = ["BrokerProcess", "ClusterProcesses", "RawClient", "ZooKeeperProcess", "free_port", "kill_process",
           "reserve_port", "stop_process", "wait_for_api_versions", "zookeeper_jars"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 reserved for about a minute for a server that binds it with SO_REUSEADDR (every
    server of the tests does: asyncio's, the JVM's, Go's, Node's), for configs that must name a port up front.

    A port merely bound and closed could be handed to another process's bind(0) or connect() before the server
    binds it. Here the port ends in TIME_WAIT (its end of a loopback connection closes first), and Linux hands
    out no port in TIME_WAIT, to bind(0) nor to connect(), until it expires (60 s), while a bind that sets
    SO_REUSEADDR may take it at once. Port 0, where the server reports the port it bound, needs no reservation."""
    return reserve_port(0)


def reserve_port(port: int, *, again: bool = False) -> int:
    """Reserve ``port`` (0: any free one) on 127.0.0.1 as free_port() does and return it; OSError if it is taken.
    ``again``: the port is the caller's (a stopped server's, for its restart): reserve it afresh even while a
    reservation or a closed connection holds it, and fail only if a socket listens on it."""
    if port and not again:  # a port in TIME_WAIT (reserved already) is taken too: SO_REUSEADDR would get through
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", port))
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # the TIME_WAIT end inherits it
        listener.bind(("127.0.0.1", port))
        listener.listen(1)
        port = listener.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
            accepted, peer = listener.accept()
            while peer != client.getsockname():  # a client reconnecting to a killed server's port got in first
                accepted.close()
                accepted, peer = listener.accept()
            accepted.close()  # the port's end closes first: it is the one left in TIME_WAIT
            client.recv(1)  # the FIN: the port's end now waits for the client's, which closing sends
    return port


class _PortTaken(RuntimeError):
    """A start failed because another socket held the server's port."""


class _OnAFreePort:
    """A server process on 127.0.0.1 whose port free_port() picked unless the caller gave one. A server that binds
    that very port with SO_REUSEADDR may still take it first: the first start then moves to another free port (a
    given port, or one clients already know after a start, is kept and its loss reported). A stopped or killed
    server's port stays reserved (as free_port's) for its restart; whether the server that answers on the port is
    this process's own is checked at every start, since a foreign one would answer the readiness probe too."""

    port: int
    _may_move_port: bool

    def _pick_port(self, port: int | None) -> None:
        self.port = port or free_port()
        self._may_move_port = port is None

    def _start_on_a_free_port(self, start_once: Callable[[], None], what: str) -> None:
        """Run ``start_once`` (which raises _PortTaken, with the server stopped, when its log says the port was
        taken) until the server starts, moving a picked port up to four times."""
        for _ in range(5):
            try:
                start_once()
            except _PortTaken as taken:
                if not self._may_move_port:
                    raise RuntimeError(str(taken)) from None
                last = taken
                self.port = free_port()
                continue
            self._may_move_port = False
            return
        raise RuntimeError(f"{what} did not start: every free port tried was taken first; {last}")

    def _ports(self) -> set[int]:
        """The ports this server binds (kept for its restart)."""
        return {self.port}

    def _keep_port(self) -> None:
        """After the server exited: hold its ports in TIME_WAIT (see free_port) so that no bind(0) or connect() of
        another process gets them before a restart binds them again; nothing to do for one a socket listens on."""
        for port in self._ports() - {0}:
            try:
                reserve_port(port, again=True)
            except OSError:
                pass


def _read_from(path: Path, offset: int) -> str:
    """What ``path`` holds past ``offset`` (a start's part of a log); "" if it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def stop_process(proc: subprocess.Popen, timeout: float) -> None:
    """SIGTERM, then SIGKILL if ``proc`` has not exited within ``timeout``; waits for it either way."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def kill_process(proc: subprocess.Popen) -> None:
    """SIGKILL (a crash) unless ``proc`` already exited; waits for it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def wait_for_api_versions(host: str, port: int, timeout: float, process: subprocess.Popen | None = None) -> None:
    """Block until the broker answers an ApiVersions v0 request, or raise TimeoutError (at once if ``process``,
    the broker's, exits meanwhile)."""
    request = struct.pack(">hhih", 18, 0, 0, -1)
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise TimeoutError(f"the broker exited with {process.returncode} before it answered ApiVersions")
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                s.sendall(struct.pack(">i", len(request)) + request)
                if len(s.recv(4)) == 4:
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.02)
    raise TimeoutError(f"no ApiVersions answer from {host}:{port} within {timeout}s ({last})")


_STARTED = re.compile(r"pykbroker started: ")
_LISTENING = re.compile(r"listening on (\w+)://\S*:(\d+) \(")
_CONSOLE_AT = re.compile(r"serving the console at (\S+/) ")
_REGISTRY_AT = re.compile(r"serving Confluent's Schema Registry API at (\S+)/ ")


class BrokerProcess(_OnAFreePort):
    """A pykbroker subprocess on 127.0.0.1; ``bootstrap`` is its address. Restartable, killable.

    A console on ``console.listener`` 127.0.0.1:0 (any free port, so no other socket can take it first) is at
    ``console_url`` once started.

    Listeners given port 0 in ``listeners`` are bound by the broker on any free port, which no other socket can
    take first: ``address(name)`` reads them back once started, and a restart binds the same ports again (clients
    know them). ``port=0`` does so for the first listener too, whose address is then ``bootstrap`` once started."""

    def __init__(self, data_dir: str | Path | None = None, overrides: dict[str, str] | None = None,
                 port: int | None = None, log_path: str | Path | None = None) -> None:
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pykbroker-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        if port == 0:  # bound by the broker, read back from its log
            self.port, self._may_move_port = 0, False
        else:
            self._pick_port(port)
        self.overrides = dict(overrides or {})
        self.listener_ports: dict[str, int] = {}  # listener name -> the port this broker bound (after a start)
        self.log_path = Path(log_path) if log_path else \
            self.data_dir.parent / f"broker-{self.port or self.data_dir.name}.log"
        self.env: dict[str, str] = {}  # added to this process' environment (the chaos clock shift's LD_PRELOAD)
        self.proc: subprocess.Popen | None = None
        self._log_start = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def properties_path(self) -> Path:
        """The broker's server.properties, written at each start; readable by its owner only, since
        overrides may hold passwords and keys (a command line is readable by every user of the machine)."""
        return self.data_dir / "server.properties"

    def properties(self) -> dict[str, str]:
        return {"listeners": f"PLAINTEXT://127.0.0.1:{self.port}", "log.dirs": str(self.data_dir / "logs"),
                **self.overrides}

    def command(self) -> list[str]:
        return [sys.executable, "-m", "pykbroker.cli", str(self.properties_path)]

    def _ports(self) -> set[int]:
        return {self.port, *self.listener_ports.values()}

    def address(self, listener: str) -> str:
        """``127.0.0.1:port`` of ``listener`` as this broker bound it (its port 0: any free one)."""
        return f"127.0.0.1:{self.listener_ports[listener]}"

    def _write_properties(self) -> None:
        properties = self.properties()
        if self.listener_ports:  # a restart binds the ports clients know, port 0 listeners' included
            properties["listeners"] = re.sub(
                r"(\w+)(://[^,]*):0(?=,|$)",
                lambda m: f"{m[1]}{m[2]}:{self.listener_ports.get(m[1], 0)}", properties["listeners"])
        path = self.properties_path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(java_properties.dumps(properties))

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        """Start the broker and wait for its first ApiVersions answer (and, with a console or schema registry,
        for the end of its start: they bind after the Kafka listeners); a running broker is left as it is
        (so ``with broker:`` after ``broker.start()`` does not start a second process)."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._start_on_a_free_port(lambda: self._start_once(timeout), "broker")
        return self

    def _start_once(self, timeout: float) -> None:
        self._write_properties()
        log = open(self.log_path, "ab")
        self._log_start = log.tell()
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, env={**os.environ, **self.env} if self.env else None)
        log.close()
        deadline = time.monotonic() + timeout
        try:
            if self.port == 0:  # the first listener's port, as the broker bound it
                self.port = int(self._wait_for_log(_LISTENING, deadline)[2])
            wait_for_api_versions("127.0.0.1", self.port, timeout, self.proc)
            # the answer may have come from another server that took the port (a restart's port is kept but not
            # held while the broker is down): only this broker's own log says it bound the port
            self._wait_for_log(re.compile(rf"listening on \w+://\S*:{self.port} \("), deadline)
            self.listener_ports = {name: int(port) for name, port in
                                   _LISTENING.findall(_read_from(self.log_path, self._log_start))}
            if self.overrides.get("console.listener") or self.overrides.get("schema.registry.listeners"):
                self._wait_for_log(_STARTED, deadline)
        except TimeoutError:
            self.kill()
            if self._lost_port():
                raise _PortTaken(f"127.0.0.1:{self.port} is already in use; its log:\n{self.log()}") from None
            raise RuntimeError(f"broker did not start; its log:\n{self.log()}") from None

    def _wait_for_log(self, pattern: re.Pattern[str], deadline: float) -> re.Match[str]:
        """The first match of ``pattern`` in this start's log, once written; TimeoutError past ``deadline`` or
        when the broker exits first."""
        while True:
            if found := pattern.search(_read_from(self.log_path, self._log_start)):
                return found
            if self.proc is None or self.proc.poll() is not None or time.monotonic() > deadline:
                raise TimeoutError(f"no {pattern.pattern!r} in the broker's log")
            time.sleep(0.02)

    def _lost_port(self) -> bool:
        """Whether this start's log says another socket holds its port."""
        return f"127.0.0.1:{self.port} is already in use" in _read_from(self.log_path, self._log_start)

    @property
    def console_url(self) -> str:
        """The console's address as this start bound it (``console.listener`` 127.0.0.1:0 picks any free port)."""
        return self._wait_for_log(_CONSOLE_AT, time.monotonic() + 30)[1]

    @property
    def schema_registry_url(self) -> str:
        """The schema registry's address (no trailing slash) as this start bound its first of
        ``schema.registry.listeners`` (port 0 picks any free port)."""
        return self._wait_for_log(_REGISTRY_AT, time.monotonic() + 30)[1]

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> int | None:
        """Graceful stop (SIGTERM); returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        self._keep_port()
        return code

    def kill(self) -> None:
        """``kill -9``: no chance to flush or checkpoint."""
        if self.proc is not None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None
            self._keep_port()

    def restart(self, *, hard: bool = False) -> BrokerProcess:
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def close(self) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> BrokerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class RawClient:
    """A minimal blocking client speaking our wire codec over a plain socket (for protocol tests)."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str | None = "raw-test",
                 ssl_context=None) -> None:
        """``ssl_context`` (an ``ssl.SSLContext``): talk TLS, for SSL and SASL_SSL listeners."""
        host, port = bootstrap.rsplit(":", 1)
        self.bootstrap, self.timeout, self.ssl_context = bootstrap, timeout, ssl_context
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        if ssl_context is not None:
            self.sock = ssl_context.wrap_socket(self.sock, server_hostname=host)
        self.client_id = client_id
        self._correlation_id = 0

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, request, version: int, correlation_id: int | None = None) -> int:
        """Frame and send a generated request message; returns its correlation id."""
        if correlation_id is None:
            self._correlation_id += 1
            correlation_id = self._correlation_id
        self.sock.sendall(self.frame(request, version, correlation_id))
        return correlation_id

    def frame(self, request, version: int, correlation_id: int) -> bytes:
        """The frame ``send`` would send (to pipeline several in one write)."""
        from wire import RequestHeader, Writer, encode_request_header, request_header_version

        w = Writer()
        encode_request_header(w, RequestHeader(request.API_KEY, version, correlation_id, self.client_id,
                                               request_header_version(request.API_KEY, version)))
        request.encode_into(w, version)
        body = w.getvalue()
        return struct.pack(">i", len(body)) + body

    def recv_frame(self) -> bytes:
        """One response frame body; raises ConnectionError when the broker closed the connection."""
        size = struct.unpack(">i", self._recv_exactly(4))[0]
        return self._recv_exactly(size)

    def recv(self, response_class, version: int):
        """(correlation_id, decoded response) of the next frame."""
        from wire import Reader, decode_response_header, response_header_version

        r = Reader(self.recv_frame())
        correlation_id = decode_response_header(r, response_header_version(response_class.API_KEY, version))
        return correlation_id, response_class.decode(r.buf[r.pos:], version)

    def request(self, request, version: int):
        """Send and receive one request; checks the correlation id."""
        cid = self.send(request, version)
        got, response = self.recv(_response_class(request), version)
        if got != cid:
            raise AssertionError(f"correlation id {got} != {cid}")
        return response

    def set_client_metrics(self, name: str, **configs: str) -> None:
        """Set a client-metrics subscription's configs (KIP-714; ``interval_ms`` for interval.ms) as
        ``kafka-client-metrics.sh --alter`` does; raises AssertionError with the broker's message if refused."""
        from wire.messages import IncrementalAlterConfigsRequest
        from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
        r = self.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=16, resource_name=name, configs=[  # 16: CLIENT_METRICS; 0: SET
                AlterableConfig(name=k.replace("_", "."), config_operation=0, value=v) for k, v in configs.items()])]), 1)
        if r.responses[0].error_code:
            raise AssertionError(f"client metrics {name}: error {r.responses[0].error_code}: {r.responses[0].error_message}")

    def wait_for_topics(self, *names: str, auto_create: bool = False, timeout: float = 10.0) -> dict:
        """Metadata of ``names`` (by name) once each partition's leader serves it, asking as clients do.

        With ``auto_create`` the requests may create missing topics. Kafka answers the request that
        creates one with UNKNOWN_TOPIC_OR_PARTITION, and after CreateTopics its Metadata may show a leader
        a moment before that broker acts as leader (NOT_LEADER_OR_FOLLOWER); pykbroker answers Metadata
        the same way. So this asks again until Metadata shows every leader and ListOffsets (which only
        a leader answers) succeeds on every partition, asking each partition's leader (on a cluster, another
        broker than this connection's may lead).
        """
        from wire import ErrorCode
        from wire.messages import ListOffsetsRequest, MetadataRequest
        from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
        from wire.messages.metadata_request import MetadataRequestTopic

        deadline = time.monotonic() + timeout
        while True:
            response = self.request(MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names],
                                                    allow_auto_topic_creation=auto_create), 12)
            ready = all(t.error_code == ErrorCode.NONE and t.partitions
                        and all(p.error_code == ErrorCode.NONE and p.leader_id >= 0 for p in t.partitions)
                        for t in response.topics)
            if ready:
                addresses = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
                by_leader: dict[int, list] = {}
                for t in response.topics:
                    for p in t.partitions:
                        by_leader.setdefault(p.leader_id, []).append((t.name, p.partition_index))
                served = True
                for leader, partitions in by_leader.items():
                    address = addresses.get(leader, self.bootstrap)
                    request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(
                        name=name, partitions=[ListOffsetsPartition(partition_index=i, timestamp=-1)
                                               for n, i in partitions if n == name])
                        for name in dict.fromkeys(n for n, _ in partitions)])
                    if address == self.bootstrap:
                        offsets = self.request(request, 8)
                    else:
                        with RawClient(address, self.timeout, self.client_id, self.ssl_context) as leader_client:
                            offsets = leader_client.request(request, 8)
                    served = served and all(p.error_code == ErrorCode.NONE for t in offsets.topics
                                            for p in t.partitions)
                if served:
                    return {t.name: t for t in response.topics}
            if time.monotonic() > deadline:
                raise TimeoutError(f"topics not ready after {timeout}s: {response.topics}")
            time.sleep(0.05)

    def is_closed_by_peer(self, timeout: float = 30.0) -> bool:
        """True when the broker closes the connection within ``timeout`` (a long default: a close that must come
        costs only its own time; pass a short one to check that it does not come)."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def _recv_exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _response_class(request):
    from wire import RESPONSES

    return RESPONSES[request.API_KEY]


_REPO = Path(__file__).resolve().parent.parent
ZOOKEEPER_FETCH_JARS = _REPO / "tools" / "zookeeper" / "fetch_jars.sh"


def zookeeper_jars() -> Path:
    """The directory of ZooKeeper's server jars: ``$PYKBROKER_ZOOKEEPER_JARS``, else the cache that
    ``tools/zookeeper/fetch_jars.sh`` fills from Maven Central (run by ``make deps``; run here if missing)."""
    env = os.environ.get("PYKBROKER_ZOOKEEPER_JARS")
    if env:
        return Path(env)
    cached = ZOOKEEPER_FETCH_JARS.parent / ".cache" / "jars"
    if cached.is_dir() and any(cached.glob("zookeeper-*.jar")):
        return cached
    if not ZOOKEEPER_FETCH_JARS.exists():
        raise RuntimeError("ZooKeeper's jars are missing: set PYKBROKER_ZOOKEEPER_JARS to a directory holding them")
    out = subprocess.run(["bash", str(ZOOKEEPER_FETCH_JARS)], capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"tools/zookeeper/fetch_jars.sh failed: {out.stderr.strip()}")
    return Path(out.stdout.strip().splitlines()[-1])


def compiled_java(source: Path, classpath: str, cache: Path) -> Path | None:
    """The folder of ``source``'s classes compiled against ``classpath`` (once, into a folder of ``cache`` per source
    and classpath); None without ``javac``."""
    if shutil.which("javac") is None:
        return None
    digest = hashlib.sha256(source.read_bytes() + classpath.encode()).hexdigest()[:16]
    classes = cache / f"{source.stem}-{digest}"
    if not (classes / f"{source.stem}.class").is_file():
        building = classes.with_name(f"{classes.name}.building-{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        subprocess.run(["javac", "-nowarn", "-d", str(building), "-cp", classpath, str(source)], check=True,
                       timeout=300, stdin=subprocess.DEVNULL, capture_output=True)
        try:
            building.rename(classes)  # whole or not at all; another process may have been first
        except OSError:
            shutil.rmtree(building, ignore_errors=True)
    return classes


ZOOKEEPER_CNXN_FACTORY = ZOOKEEPER_FETCH_JARS.parent / "DatabaseFirstCnxnFactory.java"


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send one of ZooKeeper's four-letter-word commands (``ruok``, ``srvr``, ``mntr``) and return the answer."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode("ascii"))
        chunks = []
        while chunk := s.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


_LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{ISO8601}} %-5level [%thread] %logger{{0}} - %msg%n</pattern></encoder>
  </appender>
  <logger name="org.apache.zookeeper.server.NIOServerCnxn" level="WARN"/>
  <logger name="org.apache.zookeeper.server.command.FourLetterCommands" level="WARN"/>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


class ZooKeeperProcess(_OnAFreePort):
    """A standalone Apache ZooKeeper server (a JVM subprocess) on 127.0.0.1; ``connect`` is its address.

    Free port and temp data dir unless given; ready when the ``srvr`` four-letter word reports a serving
    server. ``stop()`` (SIGTERM), ``kill()`` (SIGKILL) and ``start()`` again on the same port and data dir,
    so sessions and znodes survive a restart as with a real ensemble member.

    ``tick_time_ms`` is ZooKeeper's tickTime; sessions may ask for ``min_session_timeout_ms`` up to
    ``max_session_timeout_ms`` (ZooKeeper's own defaults would be 2 and 20 ticks, which caps Kafka's
    18 s default at 40 s with tickTime 2000 but refuses a test's 1 s session).
    """

    def __init__(self, data_dir: str | Path | None = None, port: int | None = None, *,
                 tick_time_ms: int = 250, min_session_timeout_ms: int = 500,
                 max_session_timeout_ms: int = 60_000, heap: str = "-Xmx256m") -> None:
        self._tmp = None
        if data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pykbroker-zk-")
            data_dir = self._tmp.name
        self.data_dir = Path(data_dir)
        self._pick_port(port)
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.heap = heap
        self.proc: subprocess.Popen | None = None
        self._log_start = 0

    @property
    def connect(self) -> str:
        """The ``zookeeper.connect`` string (no chroot)."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "zookeeper.log"

    def _write_config(self) -> Path:
        (self.data_dir / "data").mkdir(parents=True, exist_ok=True)
        props = {
            "tickTime": self.tick_time_ms, "dataDir": self.data_dir / "data", "clientPort": self.port,
            "clientPortAddress": "127.0.0.1", "maxClientCnxns": 0,
            "minSessionTimeout": self.min_session_timeout_ms, "maxSessionTimeout": self.max_session_timeout_ms,
            "admin.enableServer": "false", "4lw.commands.whitelist": "ruok,srvr,stat,mntr,cons,conf",
            # a test server: no fsync per write (ZooKeeper's own tests do the same)
            "forceSync": "no",
        }
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.data_dir / "logback.xml").write_text(_LOGBACK.format(log=self.log_path))
        return cfg

    def command(self) -> list[str]:
        if shutil.which("java") is None:
            raise RuntimeError("java is required to run ZooKeeper (Java 17: apt-get install openjdk-17-jre-headless)")
        classpath = f"{zookeeper_jars()}/*"
        # a client reconnecting while a restarted ZooKeeper loads its data would hang (see the factory's source)
        try:
            factory = compiled_java(ZOOKEEPER_CNXN_FACTORY, classpath, ZOOKEEPER_FETCH_JARS.parent / ".cache" /
                                    "classes") if ZOOKEEPER_CNXN_FACTORY.is_file() else None
        except (subprocess.SubprocessError, OSError):
            factory = None  # ZooKeeper's own factory, with its startup window
        if factory is not None:
            classpath += f"{os.pathsep}{factory}"
        return ["java", self.heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                f"-Dlogback.configurationFile={self.data_dir / 'logback.xml'}",
                "-Dzookeeper.jmx.log4j.disable=true",
                *([f"-Dzookeeper.serverCnxnFactory={ZOOKEEPER_CNXN_FACTORY.stem}"] if factory is not None else []),
                "-cp", classpath, "org.apache.zookeeper.server.ZooKeeperServerMain", str(self._write_config())]

    def start(self, timeout: float = 30.0) -> ZooKeeperProcess:
        """Start the server and wait until it serves; returns self. Kills it and raises on failure."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._start_on_a_free_port(lambda: self._start_once(timeout), "ZooKeeper")
        return self

    def _start_once(self, timeout: float) -> None:
        cmd = self.command()
        self._log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        out = open(self.data_dir / "zookeeper.out", "ab")
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        out.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                if "java.net.BindException: Address already in use" in _read_from(self.log_path, self._log_start):
                    raise _PortTaken(f"127.0.0.1:{self.port} is already in use; ZooKeeper's log:\n{self.log()}")
                raise RuntimeError(f"ZooKeeper exited with {code}; its log:\n{self.log()}")
            try:
                # a restart's port is kept but not held while ZooKeeper is down: the server that answers may be
                # another one that took it (whose sessions are not this one's), so its data dir must be this one's
                if ("Mode: standalone" in four_letter_word("127.0.0.1", self.port, "srvr", timeout=1.0)
                        and self._serves_our_data()):
                    return
            except OSError:
                pass
            # ZooKeeper's main thread can die (a missing class, a corrupt snapshot) while its network threads
            # keep the JVM alive and answering four-letter words with "not serving"
            if time.monotonic() > deadline or "Thread[main," in _read_from(self.log_path, self._log_start):
                self.kill()
                raise RuntimeError(f"ZooKeeper did not serve within {timeout}s; its log:\n{self.log()}")
            time.sleep(0.05)

    def _serves_our_data(self) -> bool:
        """Whether the server on this port is this one (ZooKeeper's ``conf`` names its data dir); a foreign one is
        the port lost (this start's JVM will fail to bind it and exit: the start waits for that)."""
        return f"dataDir={self.data_dir / 'data' / 'version-2'}\n" in four_letter_word(
            "127.0.0.1", self.port, "conf", timeout=1.0)

    def log(self, last: int = 40) -> str:
        """The last ``last`` lines of the server's console output and of its log."""
        parts = []
        for path in (self.data_dir / "zookeeper.out", self.log_path):
            try:
                parts.extend(path.read_text(errors="replace").splitlines()[-last:])
            except OSError:
                pass
        return "\n".join(parts)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 20.0) -> None:
        """Graceful stop (SIGTERM), SIGKILL if it does not exit within ``timeout``."""
        if self.proc is not None:
            stop_process(self.proc, timeout)
            self.proc = None
            self._keep_port()

    def kill(self) -> None:
        """``kill -9`` of the server: clients see their connection drop."""
        if self.proc is not None:
            kill_process(self.proc)
            self.proc = None
            self._keep_port()

    def restart(self, *, hard: bool = False) -> ZooKeeperProcess:
        if hard:
            self.kill()
        else:
            self.stop()
        return self.start()

    def close(self) -> None:
        self.kill()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ZooKeeperProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class ClusterProcesses:
    """A real cluster for tests: one ZooKeeper and ``size`` pykbroker processes (node ids 1..size) on free
    ports under ``root``, each broker restartable and killable on its own.

        with ClusterProcesses(tmp_path, size=3) as cluster:
            producer = Producer({"bootstrap.servers": cluster.bootstrap})
    """

    def __init__(self, root: str | Path | None = None, size: int = 3, overrides: dict[str, str] | None = None,
                 *, zookeeper_session_timeout_ms: int = 6000,
                 broker_overrides: dict[int, dict[str, str]] | None = None) -> None:
        """``overrides``: every broker's settings; ``broker_overrides``: node id -> that broker's own (a metrics
        port, its log dirs)."""
        self._tmp = None
        if root is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="pykbroker-cluster-")
            root = self._tmp.name
        self.root = Path(root)
        self.size = size
        self.overrides = dict(overrides or {})
        self.broker_overrides = {k: dict(v) for k, v in (broker_overrides or {}).items()}
        self.zookeeper_session_timeout_ms = zookeeper_session_timeout_ms
        self.zookeeper = ZooKeeperProcess(self.root / "zookeeper")
        self.brokers: dict[int, BrokerProcess] = {}

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def broker(self, node_id: int) -> BrokerProcess:
        return self.brokers[node_id]

    def add_broker(self, node_id: int, overrides: dict[str, str] | None = None,
                   port: int | None = None) -> BrokerProcess:
        """Start broker ``node_id`` in this cluster (a new member, or the given id's first start); ``port``: its
        PLAINTEXT listener's (for ``overrides`` naming more ``listeners``)."""
        broker = BrokerProcess(self.root / f"broker-{node_id}", {
            "node.id": str(node_id), "zookeeper.connect": self.zookeeper.connect,
            "zookeeper.session.timeout.ms": str(self.zookeeper_session_timeout_ms),
            **self.overrides, **self.broker_overrides.get(node_id, {}), **(overrides or {})},
            port=port, log_path=self.root / f"broker-{node_id}.log")
        self.brokers[node_id] = broker
        broker.start()
        return broker

    def start(self) -> ClusterProcesses:
        self.zookeeper.start()
        try:
            for node_id in range(1, self.size + 1):
                self.add_broker(node_id)
            self.wait_for_brokers(self.size)
        except BaseException:
            self.close()
            raise
        return self

    def wait_for_brokers(self, count: int, timeout: float = 30.0) -> None:
        """Until every live broker's Metadata lists ``count`` brokers."""
        from wire.messages import MetadataRequest

        deadline = time.monotonic() + timeout
        while True:
            seen = []
            for b in self.brokers.values():
                if not b.alive:
                    continue
                try:
                    with RawClient(b.bootstrap) as c:
                        seen.append(len(c.request(MetadataRequest(topics=[]), 9).brokers))
                except OSError:
                    seen.append(-1)
            if (seen or count == 0) and all(n == count for n in seen):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"brokers see {seen} registered brokers, not {count}; logs under {self.root}")
            time.sleep(0.1)

    def close(self) -> None:
        for b in self.brokers.values():
            b.close()
        self.zookeeper.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> ClusterProcesses:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
