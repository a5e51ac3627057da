"""IBM/sarama's own functional tests (``functional_*_test.go``, build tag ``functional``, of the sarama pinned in
go.mod/go.sum) against a fresh 5-broker pykbroker, or against a 5-node Apache Kafka 4.4 (the judge) set up the same
way: the environment sarama's docker-compose.yml builds, without Docker.

- ``build.sh`` builds the test binary and the toxiproxy server (both from the Go module proxy, checked against
  go.sum) once into the gitignored ``.cache``.
- Each broker ``i`` (1..5, rack ``i``) has an INTERNAL listener (between brokers) and a LOCAL one that toxiproxy's
  proxy ``kafka<i>`` fronts on 127.0.0.1:2909<i>, the address LOCAL advertises, as in sarama's compose file; the
  suite runs against it as an existing environment (``TOXIPROXY_ADDR``, ``KAFKA_VERSION``), cutting connections
  with toxics.
- Its broker-failure tests run ``docker compose stop|start kafka-<i>``: a ``docker`` on the test's PATH
  forwards exactly those to this harness, which stops (SIGTERM) and starts that broker. Tests that ``docker compose
  exec`` Kafka's Java tools inside a container skip themselves against an existing environment.

    python -m compat_tests.sarama                                  # pykbroker, every test
    python -m compat_tests.sarama --kafka -run 'TestFuncTxn'       # the judge
"""

from __future__ import annotations

import concurrent.futures
import datetime
import json
import os
import re
import socketserver
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from compat_tests.go_test_run import SuiteRun, run_go_tests
from pykbroker.testing import free_port, stop_process

HERE = Path(__file__).parent
BROKERS = 5  # sarama's compose file: kafka-1..kafka-5, each with a toxiproxy proxy kafka<i> on port 29090 + i
PROXY_PORT_BASE = 29090
KAFKA_VERSION = "4.4.0"
# Every broker's settings: sarama's entrypoint.sh starts from the Kafka distribution's config/server.properties
# (internal topics' min.isr 1, the share coordinator's topic at RF 1) and applies docker-compose.yml's (x-kafka-base)
OVERRIDES = {
    "transaction.state.log.min.isr": "1", "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "default.replication.factor": "2", "offsets.topic.replication.factor": "2",
    "transaction.state.log.replication.factor": "2",
    "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
    "delete.topic.enable": "true", "auto.create.topics.enable": "false", "group.initial.rebalance.delay.ms": "0",
    "inter.broker.listener.name": "INTERNAL",
}
_DOCKER_SHIM = """#!/usr/bin/env bash
# sarama's functional tests stop and start brokers with `docker compose stop|start kafka-<i>` and read a broker's log
# with `docker compose logs --since <RFC 3339 time> kafka-<i>`; this forwards exactly those to compat_tests/sarama's
# harness, which stops or starts the broker, or names the file holding its log since then
if [ "$1" != compose ]; then set -- bad "$@"
elif [[ "$2" =~ ^(stop|start)$ ]] && [[ "$3" =~ ^kafka-[0-9]+$ ]] && [ $# -eq 3 ]; then set -- "$2" "${{3#kafka-}}"
elif [ "$2" = logs ] && [ "$3" = --since ] && [[ "$5" =~ ^kafka-[0-9]+$ ]] && [ $# -eq 5 ]; then set -- logs "${{5#kafka-}}" "$4"
else set -- bad "$@"; fi
if [ "$1" = bad ]; then
    shift
    echo "compat_tests/sarama's docker serves 'compose stop|start|logs --since T kafka-<i>' only, not: $*" >&2
    exit 1
fi
exec 3<>/dev/tcp/127.0.0.1/{port}
echo "$*" >&3
read -r reply <&3
case "$reply" in
    ok) ;;
    "file "*) cat "${{reply#file }}" ;;
    *) echo "docker compose $*: $reply" >&2; exit 1 ;;
esac
"""


def sarama_test_binary() -> tuple[Path, Path, Path] | None:
    """(test binary, sarama source directory it runs in, toxiproxy server), built now if missing; None without Go."""
    try:
        out = subprocess.run(["bash", str(HERE / "build.sh")], capture_output=True, text=True, timeout=1800,
                             check=True).stdout.split()
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"compat_tests/sarama/build.sh failed:\n{exc.stderr[-3000:]}") from None
    return (Path(out[0]), Path(out[1]), Path(out[2])) if out else None


@dataclass
class Environment:
    """What the suite runs against: toxiproxy's API address and the directory holding the ``docker`` shim."""

    toxiproxy: str
    shim_dir: Path


def run_suite(binary: Path, workdir: Path, env: Environment, *, pattern: str | None = None, timeout_s: int = 3600,
              output: Path | None = None, extra_args: tuple[str, ...] = ()) -> SuiteRun:
    """Run the functional tests matching ``pattern`` (default: every one) against ``env``; the output is also
    written to ``output`` as it runs."""
    if pattern is None:
        pattern = "^(" + "|".join(functional_tests(workdir)) + ")$"
    run_env = {**os.environ, "TOXIPROXY_ADDR": env.toxiproxy, "KAFKA_VERSION": KAFKA_VERSION,
               "PATH": f"{env.shim_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    return run_go_tests(binary, workdir, run_env, pattern=pattern, timeout_s=timeout_s, output=output,
                        extra_args=extra_args)


def functional_tests(workdir: Path) -> list[str]:
    """The test functions of sarama's functional_*_test.go files (the test binary also holds its unit tests)."""
    return sorted({m[1] for path in workdir.glob("functional_*_test.go")
                   for m in re.finditer(r"^func (Test\w+)\(t \*testing\.T\)", path.read_text(), re.M)})


def _api(base: str, method: str, path: str, body: dict | None = None) -> None:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        resp.read()


@contextmanager
def toxiproxy(server: Path, root: Path, upstreams: dict[int, int]) -> Iterator[str]:
    """A toxiproxy server with proxy ``kafka<i>`` on 127.0.0.1:29090+i to 127.0.0.1:``upstreams[i]``; its API address."""
    port = free_port()
    with open(root / "toxiproxy.log", "wb") as log:
        proc = subprocess.Popen([str(server), "-host", "127.0.0.1", "-port", str(port)], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                _api(base, "GET", "/version")
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"toxiproxy did not start; see {root / 'toxiproxy.log'}") from None
                time.sleep(0.1)
        for i, upstream in upstreams.items():
            try:
                _api(base, "POST", "/proxies", {"name": f"kafka{i}", "listen": f"127.0.0.1:{PROXY_PORT_BASE + i}",
                                                "upstream": f"127.0.0.1:{upstream}", "enabled": True})
            except urllib.error.HTTPError as exc:
                raise RuntimeError(f"toxiproxy cannot open proxy kafka{i} on 127.0.0.1:{PROXY_PORT_BASE + i}, the port "
                                   f"sarama's tests use ({exc.read().decode(errors='replace').strip()}): is another "
                                   "sarama suite run going on this machine?") from None
        yield base
    finally:
        stop_process(proc, 10)


class LogTail:
    """Each broker's log since a moment: the log files' sizes, sampled every ``interval`` seconds, mark where each
    moment starts (at most ``interval`` early)."""

    def __init__(self, logs: dict[int, Path], root: Path, interval: float = 0.5) -> None:
        self.logs, self.root, self.interval = logs, root, interval
        self.samples: list[tuple[float, dict[int, int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while True:
            sizes = {i: path.stat().st_size if path.exists() else 0 for i, path in self.logs.items()}
            self.samples.append((time.time(), sizes))
            if self._stop.wait(self.interval):
                return

    def since(self, node: int, rfc3339: str) -> Path:
        """A file holding broker ``node``'s log from ``rfc3339`` (a UTC time, as sarama's tests give it) on."""
        moment = datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp()
        offset = max([sizes.get(node, 0) for at, sizes in self.samples if at <= moment] or [0])
        out = self.root / f"kafka-{node}.since.log"
        with open(self.logs[node], "rb") as f:
            f.seek(offset)
            out.write_bytes(f.read())
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def broker_control(stop: Callable[[int], object], start: Callable[[int], object], logs: dict[int, Path],
                   root: Path) -> Iterator[Path]:
    """A directory holding the ``docker`` shim, which asks this process to ``stop`` or ``start`` broker i, or for its
    log (``logs``: broker -> its log file) since a moment."""
    tail = LogTail(logs, root)

    class Handler(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            action, node, *since = self.rfile.readline().decode().split()
            try:
                if action == "logs":
                    reply = f"file {tail.since(int(node), since[0])}"
                else:
                    (stop if action == "stop" else start)(int(node))
                    reply = "ok"
            except Exception as exc:  # noqa: BLE001 - the test that asked sees why
                reply = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:2000]
            self.wfile.write(reply.encode() + b"\n")

    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    shim_dir = root / "bin"
    shim_dir.mkdir(exist_ok=True)
    shim = shim_dir / "docker"
    shim.write_text(_DOCKER_SHIM.format(port=server.server_address[1]))
    shim.chmod(0o755)
    try:
        yield shim_dir
    finally:
        server.shutdown()
        server.server_close()
        tail.close()


def _listeners(i: int, internal: int, local: int) -> dict[str, str]:
    return {"listeners": f"INTERNAL://127.0.0.1:{internal},LOCAL://127.0.0.1:{local}",
            "advertised.listeners": f"INTERNAL://127.0.0.1:{internal},LOCAL://127.0.0.1:{PROXY_PORT_BASE + i}",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,LOCAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "broker.rack": str(i)}


@contextmanager
def pykbroker_environment(root: Path, server: Path) -> Iterator[Environment]:
    """Five pykbroker brokers (a ZooKeeper cluster) behind toxiproxy, as sarama's compose file sets Kafka up."""
    from pykbroker.testing import ClusterProcesses

    local = {i: free_port() for i in range(1, BROKERS + 1)}
    with toxiproxy(server, root, local) as api, ClusterProcesses(root / "cluster", size=0, overrides=OVERRIDES) as c:
        for i in range(1, BROKERS + 1):
            internal = free_port()
            c.add_broker(i, _listeners(i, internal, local[i]), port=internal)
        c.wait_for_brokers(BROKERS)

        logs = {i: c.broker(i).log_path for i in range(1, BROKERS + 1)}
        with broker_control(lambda i: c.broker(i).stop(), lambda i: c.broker(i).start(), logs, root) as shim_dir:
            yield Environment(api, shim_dir)


@contextmanager
def kafka_environment(root: Path, server: Path) -> Iterator[Environment]:
    """Five Apache Kafka 4.4 KRaft nodes (broker and controller each, the compose file's KRaft set-up) behind
    toxiproxy: the judge."""
    from compat_tests.jvm.kafka_broker import KafkaCluster, jars_dir

    jars = jars_dir()
    if jars is None:
        raise RuntimeError("java or Maven is missing: Kafka 4.4 cannot run here")
    cluster = KafkaCluster(jars, root / "kafka", size=BROKERS, heap="-Xmx384m", overrides=OVERRIDES)
    local = {i: free_port() for i in range(1, BROKERS + 1)}
    for i, node in enumerate(cluster.nodes, start=1):
        node.overrides.update(_listeners(i, node.port, local[i]))
        node.overrides["listeners"] += f",CONTROLLER://127.0.0.1:{node.controller_port}"
    with toxiproxy(server, root, local) as api:
        cluster.start()
        try:
            def start(i: int) -> None:  # as `docker compose start`, a running node is left as it is
                node = cluster.node(i)
                if node.proc is None or node.proc.poll() is not None:
                    node.start()

            logs = {i: cluster.node(i).log_path for i in range(1, BROKERS + 1)}
            with broker_control(lambda i: cluster.node(i).stop(), start, logs, root) as shim:
                yield Environment(api, shim)
        finally:  # all at once: one by one, the last nodes wait out their shutdown timeout without a quorum
            with concurrent.futures.ThreadPoolExecutor(BROKERS) as pool:
                list(pool.map(lambda node: node.stop(), cluster.nodes))
            cluster.close()
