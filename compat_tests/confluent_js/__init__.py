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


def run_promisified(suite: Path, bootstrap: str, workdir: Path, protocol: str | None = None,
                    select: str | None = None, timeout: float = 3600) -> tuple[dict[str, Outcome], Path]:
    """Jest over test/promisified against ``bootstrap`` (``protocol``: TEST_CONSUMER_GROUP_PROTOCOL, classic or
    consumer); each test's outcome by ``file::full name`` and jest's output file."""
    report, log = workdir / f"jest-{protocol or 'classic'}.json", workdir / f"jest-{protocol or 'classic'}.log"
    args = ["node", "node_modules/.bin/jest", "--ci", "--runInBand", "--no-colors", "--coverage=false", "--json",
            f"--outputFile={report}", "--testPathIgnorePatterns", *PROMISIFIED_IGNORE, "--",
            select or "test/promisified/"]
    with log.open("w") as out:
        subprocess.run(args, cwd=suite, env=_env(bootstrap, protocol), stdout=out, stderr=subprocess.STDOUT,
                       timeout=timeout, check=False)
    found: dict[str, Outcome] = {}
    if report.exists():
        for result in json.loads(report.read_text())["testResults"]:
            file = Path(result["name"]).relative_to(suite.resolve()).as_posix()
            if not result["assertionResults"] and result.get("message"):
                found[f"{file}::(suite)"] = Outcome(f"{file}::(suite)", "failed", 0, result["message"][:300])
            for case in result["assertionResults"]:
                name = f"{file}::{case['fullName']}"
                state = {"pending": "skipped", "todo": "skipped", "disabled": "skipped"}.get(case["status"],
                                                                                         case["status"])
                reason = (case.get("failureMessages") or [""])[0].splitlines()[0][:300] if state == "failed" else ""
                found[name] = Outcome(name, state, (case.get("duration") or 0) / 1000, reason)
    return found, log


def run_e2e(suite: Path, bootstrap: str, workdir: Path, grep: str | None = None,
            timeout: float = 3600) -> tuple[dict[str, Outcome], Path]:
    """Mocha over e2e/*.spec.js (as the project's ``make e2e``) against ``bootstrap``; outcomes as run_promisified."""
    report, log = workdir / "mocha.json", workdir / "mocha.log"
    args = ["node", "node_modules/.bin/mocha", "--exit", "--timeout", "120000", "--ui", "exports",
            "--reporter", "json", "--reporter-option", f"output={report}",
            *(f"e2e/{name}.spec.js" for name in E2E_FILES)]
    if grep:
        args += ["--grep", grep]
    with log.open("w") as out:
        subprocess.run(args, cwd=suite, env=_env(bootstrap, None), stdout=out,
                       stderr=subprocess.STDOUT, timeout=timeout, check=False)
    found: dict[str, Outcome] = {}
    if report.exists():
        data = json.loads(report.read_text())
        for state, key in (("passed", "passes"), ("failed", "failures"), ("skipped", "pending")):
            for case in data.get(key, []):
                name = f"{Path(case.get('file') or '').name}::{case['fullTitle']}"
                reason = (case.get("err") or {}).get("message", "")[:300]
                found[name] = Outcome(name, state, (case.get("duration") or 0) / 1000, reason)
    return found, log


def tally(found: dict[str, Outcome]) -> dict[str, int]:
    """How many tests ended in each state."""
    counts: dict[str, int] = {}
    for outcome in found.values():
        counts[outcome.state] = counts.get(outcome.state, 0) + 1
    return counts
