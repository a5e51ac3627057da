"""segmentio/kafka-go's own tests (the packages of the pinned kafka-go that talk to a broker: kafka, compress, sasl,
topics) against a broker set up as kafka-go's CI sets up its Kafka (its docker-compose for Kafka 4.0, the newest it
describes): a PLAINTEXT listener on localhost:9092, a SASL_PLAINTEXT one on localhost:9093 taking PLAIN and both
SCRAMs, the StandardAuthorizer with allow.everyone.if.no.acl.found, topics created on first use.

kafka-go's tests name localhost:9092 and localhost:9093 in their source, so each run gets a network namespace of its
own (``unshare --net``, root): its broker binds those ports without meeting anything else on the machine, and the
tests run unmodified (a PID namespace too, so that nothing the run started outlives it). The test binaries are built once per kafka-go version by ``build_suite.sh``.
``KAFKA_VERSION`` is 4.0.0, the newest Kafka in kafka-go's CI config, so its version-gated tests run (and
the ones of APIs Kafka 4 removed skip); ``KAFKA_SKIP_NETTEST`` is set as its CI sets it.
"""

from __future__ import annotations

import fcntl
import os
import re
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
KAFKA_VERSION = "4.0.0"
PLAIN_PORT, SASL_PORT = 9092, 9093  # where kafka-go's tests look for their broker
PACKAGES = {"kafka-go": ".", "compress": "compress", "sasl": "sasl", "topics": "topics"}  # test binary -> its dir
SCRAM_USERS = {"adminscram256": ("SCRAM-SHA-256", "admin-secret-256"),
               "adminscram512": ("SCRAM-SHA-512", "admin-secret-512")}
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_adminplain="admin-secret";'
SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
# kafka-go's docker-compose-400.yml, less what only concerns a container.
SCENARIO = {
    "auto.create.topics.enable": "true", "delete.topic.enable": "true", "message.max.bytes": "200000000",
    "group.initial.rebalance.delay.ms": "0",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", "inter.broker.listener.name": "PLAINTEXT",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
    "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "super.users": "User:adminscram256;User:adminscram512;User:adminplain",
}
# A Kafka cluster's controllers and brokers talk to each other over PLAINTEXT as User:ANONYMOUS, which the
# StandardAuthorizer refuses until it has loaded the metadata (AuthorizerNotReadyException on Vote requests) unless
# it is a super user; both clusters get the same settings.
CLUSTER_SCENARIO = {**SCENARIO, "super.users": SCENARIO["super.users"] + ";User:ANONYMOUS"}
TARGETS = ("kafka", "kafka-cluster", "pykbroker", "pykbroker-cluster")
_RESULT = re.compile(r"^\s*--- (PASS|FAIL|SKIP): (\S+)")
_RUN = re.compile(r"^=== RUN\s+(\S+)")


def suite_binaries() -> tuple[Path, Path] | None:
    """(directory of the test binaries, kafka-go source they run in), built now if missing; None without Go."""
    try:
        out = subprocess.run(["bash", str(HERE / "build_suite.sh")], capture_output=True, text=True,
                             timeout=1800, check=True).stdout.split()
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"compat_tests/kafkago/build_suite.sh failed:\n{exc.stderr[-3000:]}") from None
    return (Path(out[0]), Path(out[1])) if out else None


def netns_available() -> str | None:
    """None when ``unshare --net --pid`` works here, else why not."""
    try:
        done = subprocess.run(["unshare", "--net", "--pid", "--fork", "--kill-child", "true"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare: {exc}"
    return None if done.returncode == 0 else f"unshare --net --pid: {done.stderr.strip()} (needs root)"


def loopback_up() -> None:
    """Bring ``lo`` up in this (new) network namespace, as ``ip link set lo up``."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sh", fcntl.ioctl(s, 0x8913, struct.pack("16sh", b"lo", 0)))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sh", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP


@dataclass
class SuiteRun:
    """A run's outcome: each test's PASS/FAIL/SKIP as ``package:Test/subtest``, and the whole output."""

    results: dict[str, str]
    output: str
    seconds: float
    failed: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.failed = sorted(name for name, status in self.results.items() if status == "FAIL")


def parse(package: str, text: str, results: dict[str, str]) -> None:
    """Add the outcomes in one binary's ``-test.v`` output to ``results``; a test that started and never reported
    (the binary panicked or timed out) failed."""
    started = [m[1] for m in filter(None, map(_RUN.match, text.splitlines()))]
    for m in filter(None, map(_RESULT.match, text.splitlines())):
        if results.get(f"{package}:{m[2]}") != "FAIL":  # with -count, one failure of a test fails it
            results[f"{package}:{m[2]}"] = m[1]
    for name in started:
        results.setdefault(f"{package}:{name}", "FAIL")


def run_suite(bin_dir: Path, src: Path, *, skip: dict[str, str] | None = None, run: dict[str, str] | None = None,
              timeout_s: int = 1800, count: int = 1, log: Path | None = None) -> SuiteRun:
    """Run each package's test binary against the broker on localhost:9092/9093; ``skip``/``run``: package ->
    ``-test.skip``/``-test.run`` pattern (a package missing from ``run``, when given, is not run); ``log``: where
    the output goes as it comes."""
    env = {**os.environ, "KAFKA_VERSION": KAFKA_VERSION, "KAFKA_SKIP_NETTEST": "1"}
    goroot = subprocess.run(["bash", "-c", f"source {HERE.parent / 'franz' / 'find_go.sh'}; $GO env GOROOT"],
                            capture_output=True, text=True, env={**env, "SKIPPED": "kafka-go"}).stdout.strip()
    if goroot:
        env["GOROOT"] = goroot  # compress's tests read a file of Go's own test data
    results: dict[str, str] = {}
    started = time.monotonic()
    log = log or Path(tempfile.mkdtemp(prefix="kafkago-")) / "suite.log"
    log.write_text("")
    for package, sub in PACKAGES.items():
        if run is not None and package not in run:
            continue
        args = [str(bin_dir / f"{package}.test"), "-test.v", "-test.timeout", f"{timeout_s}s", "-test.count",
                str(count)]
        if run is not None:
            args += ["-test.run", run[package]]
        if skip and skip.get(package):
            args += ["-test.skip", skip[package]]
        with log.open("a") as out:
            out.write(f"##### {package}\n")
            out.flush()
            start = out.tell()
            done = subprocess.run(args, env=env, cwd=src / sub, stdout=out, stderr=subprocess.STDOUT, text=True,
                                  timeout=timeout_s + 120)
        with log.open() as out:
            out.seek(start)
            text = out.read()
        with log.open("a") as out:
            out.write(f"##### {package}: exit {done.returncode}\n")
        parse(package, text, results)
    return SuiteRun(results, log.read_text(), time.monotonic() - started)


def _add_scram_users(bootstrap: str) -> None:
    from pykbroker.security.client import salted_password
    from pykbroker.testing import RawClient
    from wire import ErrorCode
    from wire.messages import AlterUserScramCredentialsRequest
    from wire.messages.alter_user_scram_credentials_request import ScramCredentialUpsertion

    upserts = []
    for user, (mechanism, password) in SCRAM_USERS.items():
        salt, iterations = f"{user}-salt".encode(), 4096
        upserts.append(ScramCredentialUpsertion(name=user, mechanism=1 if mechanism == "SCRAM-SHA-256" else 2,
                                                iterations=iterations, salt=salt,
                                                salted_password=salted_password(mechanism, password, salt,
                                                                                iterations)))
    deadline = time.monotonic() + 60
    while True:
        with RawClient(bootstrap) as c:
            results = c.request(AlterUserScramCredentialsRequest(deletions=[], upsertions=upserts), 0).results
        errors = [(r.error_code, r.error_message) for r in results if r.error_code != ErrorCode.NONE]
        if not errors:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"AlterUserScramCredentials failed: {errors}")
        time.sleep(0.5)


def _listeners(plain: int, sasl: int) -> dict[str, str]:
    return {"listeners": f"PLAINTEXT://:{plain},SASL_PLAINTEXT://:{sasl}",
            "advertised.listeners": f"PLAINTEXT://localhost:{plain},SASL_PLAINTEXT://localhost:{sasl}"}


@contextmanager
def pykbroker_brokers(root: Path, size: int) -> Iterator[str]:
    """A fresh pykbroker set up as kafka-go's CI Kafka, node 1 on localhost:9092/9093 (size 1: one node; else a
    ZooKeeper cluster of ``size`` brokers); yields its bootstrap."""
    from pykbroker.testing import BrokerProcess, ClusterProcesses, free_port

    if size == 1:
        with BrokerProcess(root / "broker", {**SCENARIO, **_listeners(PLAIN_PORT, SASL_PORT)}, port=PLAIN_PORT,
                           log_path=root / "broker.log") as b:
            b.start()
            _add_scram_users(b.bootstrap)
            yield b.bootstrap
        return
    with ClusterProcesses(root, size=0, overrides=CLUSTER_SCENARIO) as cluster:
        for node_id in range(1, size + 1):
            plain, sasl = (PLAIN_PORT, SASL_PORT) if node_id == 1 else (free_port(), free_port())
            cluster.add_broker(node_id, _listeners(plain, sasl), port=plain)
        cluster.wait_for_brokers(size)
        _add_scram_users(cluster.broker(1).bootstrap)
        yield cluster.bootstrap


@contextmanager
def kafka_brokers(root: Path, size: int) -> Iterator[str]:
    """Apache Kafka 4.4 (the judge) of ``size`` KRaft nodes set up as ``pykbroker_brokers``; yields its bootstrap."""
    from compat_tests.jvm.kafka_broker import KafkaBroker, KafkaCluster, jars_dir
    from pykbroker.testing import free_port

    jars = jars_dir()
    if jars is None:
        raise RuntimeError("java or Maven is missing: Kafka 4.4 cannot run here")
    kafka = KafkaBroker(jars, root=root, overrides=SCENARIO, heap="-Xmx1g") if size == 1 \
        else KafkaCluster(jars, root, size=size, overrides=CLUSTER_SCENARIO)
    nodes = [kafka] if isinstance(kafka, KafkaBroker) else kafka.nodes
    for node in nodes:
        plain, sasl = (PLAIN_PORT, SASL_PORT) if node.node_id == 1 else (node.port, free_port())
        node.port = plain
        node.bootstrap = f"127.0.0.1:{plain}"
        node.overrides.update({
            "listeners": f"PLAINTEXT://:{plain},SASL_PLAINTEXT://:{sasl},CONTROLLER://127.0.0.1:{node.controller_port}",
            "advertised.listeners": f"PLAINTEXT://localhost:{plain},SASL_PLAINTEXT://localhost:{sasl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        })
    kafka.start()
    try:
        _add_scram_users(nodes[0].bootstrap)
        yield ",".join(n.bootstrap for n in nodes)
    finally:
        kafka.close()


def brokers(target: str, root: Path) -> AbstractContextManager[str]:
    """The context manager that starts ``target`` (one of TARGETS) under ``root``."""
    size = 3 if target.endswith("-cluster") else 1
    return (kafka_brokers if target.startswith("kafka") else pykbroker_brokers)(root, size)


def run_isolated(target: str, workdir: Path, *, skip: dict[str, str] | None = None,
                 run: dict[str, str] | None = None, count: int = 1, timeout_s: int = 3600) -> SuiteRun:
    """Build the tests if needed, then run them against a fresh ``target`` in a network namespace of its own (this
    process re-run under ``unshare --net --pid``); the outcomes come back as JSON, the output in ``workdir/suite.log``."""
    import json
    import sys

    if target.startswith("kafka"):
        from compat_tests.jvm.kafka_broker import jars_dir
        jars_dir()  # fetched here: the namespace has no network
    workdir.mkdir(parents=True, exist_ok=True)
    spec = {"target": target, "workdir": str(workdir), "skip": skip, "run": run, "count": count,
            "timeout_s": timeout_s}
    (workdir / "spec.json").write_text(json.dumps(spec))
    # A PID namespace too: whatever the run leaves (its brokers, ZooKeeper, a JVM) dies with it, even when killed.
    done = subprocess.run(["unshare", "--net", "--pid", "--fork", "--kill-child", sys.executable, "-m",
                           "compat_tests.kafkago", "--in-netns",
                           str(workdir / "spec.json")], cwd=HERE.parent.parent, capture_output=True, text=True,
                          timeout=timeout_s * 2 + 600)
    result = workdir / "results.json"
    if done.returncode != 0 or not result.exists():
        raise RuntimeError(f"the run in its network namespace failed (exit {done.returncode}):\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    data = json.loads(result.read_text())
    return SuiteRun(data["results"], (workdir / "suite.log").read_text(), data["seconds"])


def run_in_netns(spec_path: Path) -> None:
    """The part of ``run_isolated`` inside the namespace: loopback up, the target started, the tests run."""
    import json

    spec = json.loads(spec_path.read_text())
    workdir = Path(spec["workdir"])
    loopback_up()
    built = suite_binaries()
    assert built is not None, "go disappeared between the build and the run"
    with brokers(spec["target"], workdir / "brokers"):
        run = run_suite(*built, skip=spec["skip"], run=spec["run"], count=spec["count"], timeout_s=spec["timeout_s"],
                        log=workdir / "suite.log")
    (workdir / "results.json").write_text(json.dumps({"results": run.results, "seconds": run.seconds}))
