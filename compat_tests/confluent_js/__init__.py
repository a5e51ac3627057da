"""@confluentinc/kafka-javascript's own broker tests (librdkafka under node; its KafkaJS-compatible API's
``test/promisified`` run by jest, its node-rdkafka API's ``e2e`` run by mocha) against a broker set up as the
project's CI sets up its Kafka 4 (test/docker/kraft/server.properties, less what only concerns its SASL listeners).

``suite_dir`` builds the suite once (install.sh); ``run_promisified`` and ``run_e2e`` run it against a running
broker (KAFKA_HOST) and return each test's outcome from jest's and mocha's JSON reports.
``python -m compat_tests.confluent_js`` starts a target (Kafka 4.4 or pykbroker, one node or three) and runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
# The project's test/docker/kraft/server.properties (its Kafka 4 CI broker), less listeners, SASL and the controller.
SCENARIO = {"num.partitions": "4", "auto.create.topics.enable": "true", "delete.topic.enable": "true",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "true", "super.users": "User:ANONYMOUS",
            "broker.rack": "RACK1", "replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector",
            "log.retention.bytes": "1000000000", "group.consumer.min.session.timeout.ms": "6000",
            "group.consumer.session.timeout.ms": "10000"}
CLUSTER_SCENARIO = {**SCENARIO, "offsets.topic.replication.factor": "3"}
# e2e's tests want topics of one partition when they create them on first use (producer-transaction's A, B, C read
# back in order), as its docker-compose.yml's Kafka makes them (cp-kafka's num.partitions=1): a broker of their own.
E2E_SCENARIO = {**SCENARIO, "num.partitions": "1"}
E2E_CLUSTER_SCENARIO = {**CLUSTER_SCENARIO, "num.partitions": "1"}
TARGETS = ("kafka", "kafka-cluster", "pykbroker", "pykbroker-cluster")
# Jest runs test/promisified without its unit tests (no broker) and without the OAUTHBEARER one (every test skipped).
PROMISIFIED_IGNORE = ("test/promisified/unit/", "test/promisified/oauthbearer_cb.spec.js")
# e2e's OAUTHBEARER tests want a SASL listener on the broker; the rest runs against PLAINTEXT.
E2E_FILES = ("admin-dependent", "admin", "both", "consumer", "groups", "producer-transaction", "producer")


@dataclass
class Outcome:
    """One test's end: passed, failed, skipped (jest's pending/todo, mocha's pending)."""
    name: str
    state: str
    seconds: float
    reason: str


def suite_dir() -> Path | None:
    """The built suite (install.sh builds it the first time), or None when it cannot be built here."""
    out = subprocess.run(["bash", str(HERE / "install.sh")], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"compat_tests/confluent_js/install.sh failed:\n{out.stderr[-4000:]}")
    path = out.stdout.strip()
    return Path(path) if path else None


def _env(bootstrap: str, protocol: str | None) -> dict[str, str]:
    env = {**os.environ, "KAFKA_HOST": bootstrap, "NODE_OPTIONS": "--max-old-space-size=1536"}
    env.pop("TEST_CONSUMER_GROUP_PROTOCOL", None)
    if protocol:
        env["TEST_CONSUMER_GROUP_PROTOCOL"] = protocol
    return env


def promisified_files(suite: Path) -> list[str]:
    """test/promisified's spec files that need a broker, as jest would find them."""
    return sorted(p.relative_to(suite).as_posix() for p in (suite / "test" / "promisified").rglob("*.spec.js")
                  if not any(p.relative_to(suite).as_posix().startswith(i) for i in PROMISIFIED_IGNORE))


def _run(args: list[str], suite: Path, env: dict[str, str], log: Path, timeout: float) -> int:
    with log.open("a") as out:
        out.write(f"$ {' '.join(args)}\n")
        out.flush()
        try:
            return subprocess.run(args, cwd=suite, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                  check=False).returncode
        except subprocess.TimeoutExpired:
            return -1


def _crashed(found: dict[str, Outcome], file: str, code: int, log: Path) -> None:
    """A test process that died (librdkafka's double free on close, seen on Kafka 4.4 too) is one failed entry."""
    name = f"{file}::(crashed)"
    found[name] = Outcome(name, "failed", 0, f"the test process ended with {code} before its report; see {log}")


def run_promisified(suite: Path, bootstrap: str, workdir: Path, protocol: str | None = None,
                    select: str | None = None, name: str | None = None,
                    timeout: float = 1200) -> tuple[dict[str, Outcome], Path]:
    """Jest over test/promisified against ``bootstrap``, one process a file (as ``--runInBand``; a crash loses one
    file's results, not the run's); ``protocol``: TEST_CONSUMER_GROUP_PROTOCOL, classic or consumer; ``select``: a
    substring of the files to run; ``name``: a regular expression of the tests' full names (jest's
    ``--testNamePattern``, the others skipped). Each test's outcome by ``file::full name`` and jest's output file."""
    tag = protocol or "classic"
    log = workdir / f"jest-{tag}.log"
    found: dict[str, Outcome] = {}
    named = [f"--testNamePattern={name}"] if name else []
    for file in promisified_files(suite):
        if select and select not in file:
            continue
        report = workdir / f"jest-{tag}-{file.replace('/', '_')}.json"
        report.unlink(missing_ok=True)
        code = _run(["node", "node_modules/.bin/jest", "--ci", "--runInBand", "--forceExit", "--no-colors", "--coverage=false",
                     "--json", f"--outputFile={report}", *named, "--", f"^{suite.resolve()}/{file}$"], suite,
                    _env(bootstrap, protocol), log, timeout)
        if not report.exists():
            _crashed(found, file, code, log)
            continue
        for result in json.loads(report.read_text())["testResults"]:
            if not result["assertionResults"] and result.get("message"):
                found[f"{file}::(suite)"] = Outcome(f"{file}::(suite)", "failed", 0, result["message"][:300])
            for case in result["assertionResults"]:
                key = f"{file}::{case['fullName']}"
                state = {"pending": "skipped", "todo": "skipped", "disabled": "skipped"}.get(case["status"],
                                                                                         case["status"])
                reason = (case.get("failureMessages") or [""])[0].splitlines()[0][:300] if state == "failed" else ""
                found[key] = Outcome(key, state, (case.get("duration") or 0) / 1000, reason)
    return found, log


def run_e2e(suite: Path, bootstrap: str, workdir: Path, grep: str | None = None,
            timeout: float = 1200) -> tuple[dict[str, Outcome], Path]:
    """Mocha over e2e/*.spec.js (as the project's ``make e2e``) against ``bootstrap``, one process a file, its
    json-stream reporter's lines read from the log; outcomes as run_promisified."""
    log = workdir / "mocha.log"
    found: dict[str, Outcome] = {}
    for name in E2E_FILES:
        file = f"e2e/{name}.spec.js"
        stream = workdir / f"mocha-{name}.jsonl"
        code = _run(["node", "node_modules/.bin/mocha", "--exit", "--timeout", "120000", "--reporter", "json-stream",
                     *(["--grep", grep] if grep else []), file], suite, _env(bootstrap, None), stream, timeout)
        ended = False
        for line in stream.read_text(errors="replace").splitlines():
            if not line.startswith('["'):
                with log.open("a") as out:
                    out.write(line + "\n")
                continue
            event, data = json.loads(line)
            ended |= event == "end"
            if event in ("pass", "fail"):
                key = f"{file}::{data['fullTitle']}"
                found[key] = Outcome(key, "passed" if event == "pass" else "failed",
                                     (data.get("duration") or 0) / 1000, (data.get("err") or "")[:300])
        if not ended:
            _crashed(found, file, code, stream)
    return found, log


def tally(found: dict[str, Outcome]) -> dict[str, int]:
    """How many tests ended in each state."""
    counts: dict[str, int] = {}
    for outcome in found.values():
        counts[outcome.state] = counts.get(outcome.state, 0) + 1
    return counts
