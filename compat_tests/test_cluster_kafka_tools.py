"""Kafka 4.4's own command-line tools against a 3-broker pykbroker cluster and a 3-node Kafka 4.4 KRaft cluster,
as a user sweeping a new cluster runs them: kafka-metadata-quorum, kafka-cluster, kafka-broker-api-versions,
kafka-log-dirs, kafka-leader-election, kafka-features, kafka-configs (every config of a broker) and
kafka-get-offsets. What each prints is compared, less what differs from run to run (ports, paths, times,
offsets of the metadata log); the differences left must be in ``differential_allowlist`` under
``cluster:kafka_tools``: KRaft's own configuration of the judge, and what other issues build.

With PYKBROKER_SLOW_DIFFERENTIAL=1 only (``make differential-cluster``): it shares that target's clusters.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from compat_tests.conftest import KAFKA_44, assert_same_observations, differential_targets, judge_jars
from pykbroker.testing import RawClient

pytestmark = pytest.mark.skipif(__import__("os").environ.get("PYKBROKER_SLOW_DIFFERENTIAL") != "1",
                                reason="slow: make differential-cluster (PYKBROKER_SLOW_DIFFERENTIAL=1)")

JAVA = ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]
TOOLS = "org.apache.kafka.tools."
TOPIC = "tools-sweep"
ADDRESS = re.compile(r"(localhost|127\.0\.0\.1):\d+")


def run(jars: Path, bootstrap: str, main_class: str, *args: str) -> tuple[int, str]:
    """(exit code, stdout) of one tool, as its kafka-*.sh script runs it."""
    done = subprocess.run([*JAVA, "-cp", f"{jars}/*", TOOLS + main_class, "--bootstrap-server", bootstrap, *args],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    return done.returncode, ADDRESS.sub("HOST:PORT", done.stdout)


def prepare(bootstrap: str) -> None:
    """The sweep's topic, 3 partitions on all 3 brokers, 10 records in each."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(30)
    with RawClient(bootstrap, timeout=30) as c:
        c.wait_for_topics(TOPIC, timeout=30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    start = int(time.time() * 1000) - 60_000
    for i in range(30):  # timestamps rising record by record: the max-timestamp offset is each partition's last
        producer.produce(TOPIC, b"v%d" % i, partition=i % 3, timestamp=start + i)
    assert producer.flush(30) == 0


def quorum(jars: Path, bootstrap: str) -> dict[str, object]:
    """kafka-metadata-quorum describe --status and --replication: the roles of the nodes, not their offsets."""
    code, status = run(jars, bootstrap, "MetadataQuorumCommand", "describe", "--status")
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    voters = json.loads(fields["CurrentVoters"])
    out: dict[str, object] = {"status exit": code, "status fields": sorted(fields),
                              "voters": sorted(v["id"] for v in voters),
                              "voter listeners": sorted({e.split("://")[0] for v in voters for e in v["endpoints"]}),
                              "observers": json.loads(fields["CurrentObservers"]),
                              "leader is a voter": int(fields["LeaderId"]) in [v["id"] for v in voters],
                              "max follower lag": fields["MaxFollowerLag"].strip()}
    for flag in ((), ("--human-readable",)):
        code, table = run(jars, bootstrap, "MetadataQuorumCommand", "describe", "--replication", *flag)
        rows = [line.split() for line in table.strip().splitlines()]
        key = " ".join(("replication", *flag))
        out[f"{key} exit"] = code
        out[f"{key} header"] = rows[0]
        out[f"{key} roles"] = sorted(row[-1] for row in rows[1:])
        out[f"{key} lag"] = sorted({row[3] for row in rows[1:]})
        out[f"{key} directories"] = sorted({row[1] for row in rows[1:]})
    return out


def cluster_id(jars: Path, bootstrap: str) -> dict[str, object]:
    code, out = run(jars, bootstrap, "ClusterTool", "cluster-id")
    return {"cluster-id exit": code, "cluster-id": re.sub(r"Cluster ID: \S+", "Cluster ID: <id>", out)}


def api_versions(jars: Path, bootstrap: str) -> dict[str, object]:
    """kafka-broker-api-versions: each broker's block (the tool lists them in the Metadata answer's order)."""
    code, out = run(jars, bootstrap, "BrokerApiVersionsCommand")
    blocks = re.findall(r"^HOST:PORT \(id: (\d+) (.*?)\) -> \((.*?)^\)", out, re.M | re.S)
    observed: dict[str, object] = {"broker-api-versions exit": code, "broker-api-versions brokers":
                                   sorted((int(node), rest) for node, rest, _ in blocks)}
    for node, _, apis in blocks:
        for line in apis.strip().splitlines():
            name, versions = line.strip().rstrip(",").split(": ", 1)
            observed[f"broker-api-versions {node} {name}"] = versions
    return observed


def log_dirs(jars: Path, bootstrap: str) -> dict[str, object]:
    code, out = run(jars, bootstrap, "LogDirsCommand", "--describe", "--topic-list", TOPIC)
    lines = out.strip().splitlines()
    described = json.loads(lines[-1])
    for broker in described["brokers"]:
        for d in broker["logDirs"]:
            d["logDir"] = "<dir>"
            d["partitions"].sort(key=lambda p: p["partition"])
    return {"log-dirs exit": code, "log-dirs header": lines[:-1], "log-dirs": described}


def leader_election(jars: Path, bootstrap: str) -> dict[str, object]:
    return {f"leader-election {kind}": run(jars, bootstrap, "LeaderElectionCommand", "--election-type", kind,
                                           "--topic", TOPIC, "--partition", "0")
            for kind in ("preferred", "unclean")}


def features(jars: Path, bootstrap: str) -> dict[str, object]:
    """kafka-features describe (less the epoch: a KRaft node's is its metadata log offset) and the dry runs of
    upgrade and downgrade, which change nothing on the shared clusters."""
    code, described = run(jars, bootstrap, "FeatureCommand", "describe")
    out: dict[str, object] = {"features describe exit": code}
    for line in described.strip().splitlines():
        name = line.split()[1]
        out[f"features describe {name}"] = re.sub(r"\s+Epoch: \d+", "", line)
    for args in (("upgrade", "--feature", "group.version=1", "--dry-run"),
                 ("upgrade", "--feature", "transaction.version=2", "--dry-run"),
                 ("upgrade", "--release-version", "4.4", "--dry-run"),
                 ("downgrade", "--feature", "transaction.version=1", "--dry-run"),
                 ("downgrade", "--feature", "group.version=0", "--dry-run"),
                 ("downgrade", "--feature", "metadata.version=20", "--dry-run"),
                 ("disable", "--feature", "group.version", "--dry-run"),
                 ("version-mapping",), ("feature-dependencies", "--feature", "transaction.version=2")):
        out["features " + " ".join(args)] = run(jars, bootstrap, "FeatureCommand", *args)
    return out


def broker_configs(jars: Path, bootstrap: str) -> dict[str, object]:
    """kafka-configs --describe --all of broker 2 (asked through broker 1), one observation per config, and the
    dynamic configs of every broker and the cluster's defaults."""
    code, out = run(jars, bootstrap, "ConfigCommand", "--describe", "--all", "--entity-type", "brokers",
                    "--entity-name", "2")
    observed: dict[str, object] = {"configs --all exit": code, "configs --all header": out.splitlines()[0]}
    for line in out.splitlines()[1:]:
        name = line.strip().split("=", 1)[0]
        observed[f"configs --all {name}"] = re.sub(r"/\S+?/(kafka|broker)-2/", "<root>/", line.strip())
    observed["configs --describe brokers"] = run(jars, bootstrap, "ConfigCommand", "--describe", "--entity-type",
                                                 "brokers")
    observed["configs --describe brokers default"] = run(jars, bootstrap, "ConfigCommand", "--describe",
                                                         "--entity-type", "brokers", "--entity-default")
    return observed


def get_offsets(jars: Path, bootstrap: str) -> dict[str, object]:
    future = str(int(time.time() * 1000) + 3_600_000)
    return {f"get-offsets {label}": run(jars, bootstrap, "GetOffsetShell", "--topic", TOPIC, *args)
            for label, args in (("", ()), ("latest", ("--time", "-1")), ("earliest", ("--time", "-2")),
                                ("max-timestamp", ("--time", "-3")), ("earliest-local", ("--time", "-4")),
                                ("remote", ("--time", "-5")), ("an hour ahead", ("--time", future)),
                                ("partitions 1,2", ("--partitions", "1,2")))}


SWEEP = (quorum, cluster_id, api_versions, log_dirs, leader_election, features, broker_configs, get_offsets)


def sweep(jars: Path, bootstrap: str) -> dict[str, object]:
    prepare(bootstrap)
    out: dict[str, object] = {}
    for step in SWEEP:
        out.update(step(jars, bootstrap))
    return out


@pytest.mark.parametrize("mode", [pytest.param("cluster", id="cluster-kafka_tools")])
def test_kafka_tools_see_a_kafka_4_4_cluster(mode, request):
    jars = judge_jars(KAFKA_44)
    kafka, pykbroker = differential_targets(request, mode, "kafka44_judge", "judged_cluster")
    expected, got = sweep(jars, kafka), sweep(jars, pykbroker)
    assert expected["voters"] == [1, 2, 3] and expected["features describe exit"] == 0, expected
    assert_same_observations(mode, "kafka_tools", expected, got)
