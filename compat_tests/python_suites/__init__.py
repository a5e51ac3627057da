"""Third-party Python clients' own integration suites against a broker: kafka-python's ``test/integration``.

``fetch_sdist`` downloads the pinned sdist from PyPI once (sha256-checked) into the gitignored ``.cache``;
``prepare`` unpacks a copy and adds what its sdist leaves out (``test/__init__.py`` and ``test/service.py``, which
``fixtures.py`` imports; only its external-broker half is needed); ``run_suite`` runs the suite's pytest, with its
own conftest, in a subprocess against a running broker (KAFKA_URI) and returns each test's outcome from the JUnit
report. aiokafka is not here: its sdist (0.14.0) ships no tests, and its repository's tests start brokers in Docker.
``python -m compat_tests.python_suites`` starts a target (Kafka 4.4 or pykbroker, one node or three) and runs it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import urllib.request
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from pykbroker.testing import ClusterProcesses, free_port

HERE = Path(__file__).parent
CACHE = HERE / ".cache"
# exactly the kafka-python pyproject.toml's test extra pins
SDIST_URL = ("https://files.pythonhosted.org/packages/bb/a9/e8b96f7f71aacd94faf1db0feb9750bf557b17bd22b0595023c88c1f0eb2/"
             "kafka_python-3.0.12.tar.gz")
SDIST_SHA256 = "4ccda3616b9aa5c353d74a97f2770d6cd1b950890d77ab0e8890e09a48eeed65"
KAFKA_VERSION = "4.4.0"  # the suite's KAFKA_VERSION: which broker features it expects
# The suite's broker settings (as its fixtures.py writes them for Kafka 4): auto-created topics, no initial
# rebalance delay, an authorizer allowing what no ACL covers (the ACL tests), sessions as short as test_group's 3 s.
SCENARIO = {"auto.create.topics.enable": "true", "num.partitions": "4", "group.initial.rebalance.delay.ms": "0",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true", "group.min.session.timeout.ms": "1000"}
NODE_ID = 0  # a single node's id, the suite's own broker's (test_create_partitions assigns replicas to node 0)
# Kafka's controllers vote as User:ANONYMOUS, which the StandardAuthorizer refuses until its first ACL load unless a
# super user.
CLUSTER_SCENARIO = {**SCENARIO, "offsets.topic.replication.factor": "3", "super.users": "User:ANONYMOUS"}
# Not run: test_sasl_integration skips itself against an external broker (KAFKA_URI) and test_ssl_integration
# always spawns its own Kafka from KAFKA_ROOT; the rest targets KAFKA_URI.
FILES = ("test/integration/test_admin_integration.py", "test/integration/test_consumer_integration.py",
         "test/integration/test_producer_integration.py")

# test/service.py as the suite's fixtures use it against an external broker (the sdist does not ship it).
_SERVICE = '''"""The external-broker half of kafka-python's test/service.py (absent from its sdist)."""


class ExternalService:
    def __init__(self, host, port):
        self.host, self.port = host, port

    def start(self):
        pass

    def stop(self):
        pass

    def dump_logs(self):
        pass

    def wait_for(self, pattern, timeout=30):
        return True


class SpawnedService:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("this copy of the suite runs against KAFKA_URI only: it does not spawn brokers")
'''


@dataclass
class Outcome:
    """One test's end as pytest's JUnit report gives it."""
    name: str
    state: str  # passed, failed, error, skipped
    seconds: float
    reason: str


def fetch_sdist() -> Path | None:
    """The pinned sdist in the cache (downloaded now the first time), or None when PyPI cannot be reached."""
    target = CACHE / SDIST_URL.rsplit("/", 1)[1]
    if not target.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        try:
            with urllib.request.urlopen(SDIST_URL, timeout=60) as response:
                data = response.read()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != SDIST_SHA256:
            raise RuntimeError(f"{SDIST_URL}: sha256 differs from the pinned {SDIST_SHA256}")
        target.with_suffix(".part").write_bytes(data)
        target.with_suffix(".part").rename(target)
    return target


def prepare(sdist: Path, workdir: Path) -> Path:
    """A runnable copy of the suite under ``workdir``; returns its root (the sdist's top directory)."""
    workdir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(workdir, filter="data")
    root = workdir / sdist.name.removesuffix(".tar.gz")
    (root / "test" / "__init__.py").touch()
    (root / "test" / "service.py").write_text(_SERVICE)
    (root / "servers" / KAFKA_VERSION / "kafka-bin").mkdir(parents=True)  # Fixture() insists on a KAFKA_ROOT
    return root


def run_suite(root: Path, bootstrap: str, workdir: Path, select: str | None = None,
              timeout: float = 1800) -> tuple[dict[str, Outcome], Path]:
    """Run the suite at ``root`` against ``bootstrap`` (a cluster's: its first address, KAFKA_URI takes one);
    returns each test's outcome and pytest's output file."""
    report, log = workdir / "junit.xml", workdir / "pytest.log"
    env = {**os.environ, "KAFKA_VERSION": KAFKA_VERSION, "KAFKA_URI": f"kafka://{bootstrap.split(',')[0]}",
           "PYTHONPATH": str(root)}
    env.pop("ZOOKEEPER_URI", None)
    args = [sys.executable, "-m", "pytest", *FILES, "-p", "no:cacheprovider", "-p", "no:pykbroker", "-q",
            "--timeout=120", f"--junitxml={report}", "-o", "log_level=WARNING"]
    if select:
        args += ["-k", select]
    with log.open("w") as out:
        subprocess.run(args, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False)
    return outcomes(report), log


def outcomes(report: Path) -> dict[str, Outcome]:
    """Each test case of a JUnit report by ``file::name``."""
    found: dict[str, Outcome] = {}
    if not report.exists():
        return found
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        state, reason = "passed", ""
        for tag in ("failure", "error", "skipped"):
            node = case.find(tag)
            if node is not None:
                state = {"failure": "failed"}.get(tag, tag)
                reason = (node.get("message") or "").splitlines()[0][:200] if node.get("message") else ""
                break
        found[name] = Outcome(name, state, float(case.get("time") or 0), reason)
    return found


def tally(found: dict[str, Outcome]) -> dict[str, int]:
    """How many tests ended in each state."""
    counts: dict[str, int] = {}
    for outcome in found.values():
        counts[outcome.state] = counts.get(outcome.state, 0) + 1
    return counts


def pykbroker_settings(port: int) -> dict[str, str]:
    """A single pykbroker node's settings: SCENARIO, node id NODE_ID and advertised.listeners set in the file, as
    compat_tests.jvm's Kafka has it (the suite checks that DescribeConfigs calls it a STATIC_BROKER_CONFIG)."""
    return {**SCENARIO, "node.id": str(NODE_ID), "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}"}


def pykbroker_cluster(root: Path) -> ClusterProcesses:
    """A started 3-broker pykbroker cluster with CLUSTER_SCENARIO, each broker's advertised.listeners in its file
    (as pykbroker_settings has it); close it after."""
    cluster = ClusterProcesses(root, size=3, overrides=CLUSTER_SCENARIO)
    cluster.zookeeper.start()
    try:
        for node_id in range(1, 4):
            port = free_port()
            cluster.add_broker(node_id, {"advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}"}, port=port)
        cluster.wait_for_brokers(3)
    except BaseException:
        cluster.close()
        raise
    return cluster
