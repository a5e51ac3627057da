"""librdkafka's own integration test suite (tests/0nnn-*.c, its ``test-runner``) against a broker or cluster.

``build.sh`` builds the runner once from the librdkafka source in npm's @confluentinc/kafka-javascript tarball
(pinned), into the gitignored ``.cache``; ``run_suite`` runs chosen tests against a bootstrap through a
``test.conf`` and returns each test's state. ``python -m compat_tests.rdkafka_suite`` starts a target (Kafka 4.4
or pykbroker, one node or three) and runs tests on it: see ``__main__``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent
KAFKA_VERSION = "4.4.0"  # the broker version the runner assumes (TEST_KAFKA_VERSION): picks Kafka 4.x behaviour

# The suite's "default" scenario (tests/scenarios/default.json): auto-created topics of 4 partitions, replicated
# to 3 on a cluster; an authorizer for 0081's ACL calls, every (PLAINTEXT, ANONYMOUS) client a super user. The same
# broker settings on both sides of a comparison. group.initial.rebalance.delay.ms keeps Kafka's 3000 ms, as the
# suite assumes (its brokers, trivup's, keep it; 0113 says so): the tests starting two consumers at once (0089,
# 0102, 0113) expect both in a new group's first generation, which a delay of 0 leaves to a race. No time retention
# (log.retention.ms=-1): 0052 produces records stamped in 1970, which a broker's retention pass (30 s after start,
# then every 5 min: Kafka's and pykbroker's defaults) deletes, active segment and all, if it falls within the test.
SCENARIO = {"auto.create.topics.enable": "true", "num.partitions": "4", "log.retention.ms": "-1",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS"}
CLUSTER_SCENARIO = {**SCENARIO, "default.replication.factor": "3"}
# tests/scenarios/noautocreate.json: topics are not auto-created (the runner's -s noautocreate runs only its tests).
NOAUTOCREATE_SCENARIO = {**SCENARIO, "auto.create.topics.enable": "false"}
# The default scenario with ACLs in force, for the tests that deny a topic with kafka-acls.sh (0109, 0115, 0119: a
# super user is never denied): no super user, and what no ACL names is allowed (a deny ACL then denies).
ACL_SCENARIO = {**{k: v for k, v in SCENARIO.items() if k != "super.users"}, "allow.everyone.if.no.acl.found": "true"}
SCENARIOS = ("default", "noautocreate", "acl")


def broker_settings(scenario: str, cluster: bool) -> dict[str, str]:
    """The broker settings of ``scenario`` (one of SCENARIOS), one node or three."""
    settings = {"noautocreate": NOAUTOCREATE_SCENARIO, "acl": ACL_SCENARIO}.get(scenario, SCENARIO)
    return {**settings, "default.replication.factor": "3"} if cluster else settings


def runner_scenario(scenario: str) -> str:
    """The runner's scenario (-s) for ``scenario`` of SCENARIOS: acl is the runner's default."""
    return "noautocreate" if scenario == "noautocreate" else "default"

# The chosen sets: tests against a real broker that pass on Kafka 4.4, one node and three, in quick mode (-Q) and
# in full mode (more messages; 0082 runs in full mode only). The tests calling Kafka's scripts (0016, 0045, 0052,
# 0077, 0109, 0113's Java client, 0115, 0119) need a KAFKA_PATH (see kafka_path). Not run: local, mock-cluster and
# sockem tests (no broker needed: -L -E, and 0139, 0150, which run librdkafka's mock cluster); RapidJSON's (0053,
# 0098, 0101, 0110: the runner is built without it); known issues (0028); SASL's (0135); MsgVersion 1 is gone from
# Kafka 4 (0092); 0173, whose do_test_lock_timeout_redelivery fails on Kafka 4.4 as on pykbroker (its second poll
# implicitly accepts the records whose lock expired, so none comes back: "Expected redelivered records, got 0").
SINGLE = ("0001,0002,0003,0005,0007,0008,0011,0012,0013,0014,0015,0016,0017,0018,0019,0020,0021,0022,0026,0029,"
          "0030,0031,0033,0034,0035,0036,0038,0039,0040,0041,0042,0044,0045,0048,0050,0051,0052,0054,0055,0056,"
          "0057,0059,0060,0061,0063,0064,0065,0067,0069,0070,0073,0077,0081,0082,0083,0084,0085,0086,0089,0090,"
          "0091,0093,0099,0102,0112,0113,0114,0118,0122,0123,0125,0127,0129,0130,0132,0137,0140,0170,0171,0172,"
          "0174,0175,0176,0177,0178,0179,0180,0181,0184,0185")
FULL_ONLY = ("0082",)  # skipped whole in quick mode
# Quick mode only: 0113's full mode (its sub-tests c_ onwards) fails on Kafka 4.4 itself, twice in two runs, at its
# first sub-test (a_assign_tests: "Expecting a consumed message" within 5 s), so nothing judges the rest there (on
# pykbroker it got to v_commit_during_rebalance, whose commit in a revoke callback got REBALANCE_IN_PROGRESS, what
# Kafka answers a commit of the current generation while the group completes a rebalance).
QUICK_ONLY = ("0113",)
# 0103 creates topics of replication factor 3.
CLUSTER = SINGLE + ",0103"
# The consumer group tests of SINGLE that run with group.protocol=consumer too (KIP-848:
# TEST_CONSUMER_GROUP_PROTOCOL=consumer; 0132's assignor strategies are classic's only).
CONSUMER_PROTOCOL = ("0018,0019,0026,0029,0030,0033,0034,0040,0050,0051,0056,0060,0061,0069,0089,0091,0093,0099,"
                     "0102,0113,0118,0122,0130,0137,0140")
# The noautocreate scenario's tests (on brokers with its settings: NOAUTOCREATE_SCENARIO); 0107 and 0111 create
# topics of replication factor 3.
NOAUTOCREATE = "0045"
NOAUTOCREATE_CLUSTER = "0045,0107,0111"
# The tests denying a topic with kafka-acls.sh (on brokers with ACL_SCENARIO's settings), one node only: a Kafka 4.4
# KRaft cluster with an authorizer needs its controllers' principal to be a super user (their Vote requests are
# refused otherwise, and the cluster never starts), and every PLAINTEXT client is that same ANONYMOUS principal.
ACL = "0109,0115,0119"


def chosen(tests: str, quick: bool) -> str:
    """``tests`` without those quick mode skips whole when ``quick``, without QUICK_ONLY's when not."""
    return ",".join(t for t in tests.split(",") if t not in (FULL_ONLY if quick else QUICK_ONLY))


_FAILED = re.compile(r'^### Test "(\d{4}_\w+)[^"]*" failed at [^\n]*###\n(.*)$', re.MULTILINE)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class Outcome:
    """One test's end as the runner's report gives it."""
    name: str
    state: str
    seconds: float
    reason: str


def runner_path() -> Path | None:
    """The built test-runner (built now, minutes the first time), or None on a machine without a C compiler."""
    try:
        out = subprocess.run(["bash", str(HERE / "build.sh")], capture_output=True, text=True, timeout=3600,
                             check=True).stdout.strip()
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"compat_tests/rdkafka_suite/build.sh failed:\n{exc.stderr[-4000:]}") from None
    return Path(out) if out else None


def parse_report(report: str, output: str) -> dict[str, Outcome]:
    """Each test's outcome from the runner's JSON report (TEST_REPORT; its last word on every test it started),
    with the reason a failed one gives in the runner's output."""
    try:
        tests = json.loads(report)["tests"]
    except (ValueError, KeyError):
        tests = {}
    reasons = {name: reason.strip() for name, reason in _FAILED.findall(_ANSI.sub("", output))}
    return {name: Outcome(name, t["state"], float(t["duration"]), reasons.get(name, t.get("extra", "")))
            for name, t in tests.items() if name != "<MAIN>"}


def verdict(outcomes: dict[str, Outcome], tests: str) -> tuple[dict[str, str], list[str]]:
    """The failed tests (name: reason) and the numbers of ``tests`` none of whose tests passed."""
    wanted = [t for t in tests.split(",") if t]
    failed = {o.name: o.reason for o in outcomes.values() if o.state not in ("PASSED", "SKIPPED")
              and o.name[:4] in wanted}
    not_passed = [t for t in wanted if not any(o.name[:4] == t and o.state == "PASSED" for o in outcomes.values())]
    return failed, not_passed


def run_suite(runner: Path, bootstrap: str, tests: str, workdir: Path, *, timeout: float = 3600,
              parallel: int = 1, conf: dict[str, str] | None = None, env: dict[str, str] | None = None,
              quick: bool = True, scenario: str = "default",
              kafka_path: Path | None = None) -> tuple[dict[str, Outcome], Path]:
    """Run ``tests`` (comma-separated numbers) against ``bootstrap``; the outcomes and the runner's full log.
    ``conf``: more librdkafka properties for test.conf; ``env``: more runner variables (TEST_DEBUG, ...);
    ``quick``: the runner's quick mode (-Q: fewer messages, some sub-tests skipped); ``scenario``: the runner's
    (-s: only tests of that scenario run; the broker must have its settings, see NOAUTOCREATE_SCENARIO);
    ``kafka_path``: a Kafka distribution's shape for the tests calling its scripts (see ``kafka_path``)."""
    workdir.mkdir(parents=True, exist_ok=True)
    test_conf = workdir / "test.conf"
    props = {"bootstrap.servers": bootstrap, "test.timeout.multiplier": "3", "test.topic.random": "true",
             **(conf or {})}
    test_conf.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    log = workdir / "test-runner.log"
    report = workdir / "report.json"
    report.unlink(missing_ok=True)
    tests_dir = runner.parent
    lib_path = f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}"
    run_env = {**os.environ, "TESTS": tests, "TEST_KAFKA_VERSION": KAFKA_VERSION, "RDKAFKA_TEST_CONF": str(test_conf),
               "TEST_MODE": "bare", "TEST_REPORT": str(report), "LD_LIBRARY_PATH": lib_path, **(env or {})}
    if kafka_path is not None:
        run_env.update(KAFKA_PATH=str(kafka_path), BROKERS=bootstrap)
    run_env.pop("CI", None)
    with open(log, "w") as out:
        try:
            subprocess.run([str(runner), "-L", "-E", *(["-Q"] if quick else []), "-s", scenario,
                            f"-p{parallel}"], cwd=tests_dir, env=run_env, stdout=out,
                           stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=timeout)
        except subprocess.TimeoutExpired:
            out.write(f"\n### test-runner killed after {timeout:.0f} s\n")
    text = report.read_text(errors="replace") if report.exists() else ""
    return parse_report(text, log.read_text(errors="replace")), log
