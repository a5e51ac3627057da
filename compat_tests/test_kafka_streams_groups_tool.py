"""Kafka 4.4's ``kafka-streams-groups.sh`` (org.apache.kafka.tools.streams.StreamsGroupCommand) against pykbroker
and Kafka 4.4 with the same Kafka Streams application (group.protocol=streams, two instances): the same output.

The counting application of compat_tests/streams_app.py counts its whole input; then ``--list`` (with
``--state``), ``--describe`` (offsets, ``--members``, ``--state``, each ``--verbose`` too); the instances are
stopped and the group's offsets reset (``--reset-offsets --to-earliest --all-input-topics``, dry run then
``--execute``, which deletes the internal topics too), described again, deleted (``--delete``) and listed.
What differs by nature is normalized: the application id, the members' and processes' UUIDs, client hosts and
column widths. Slow (JVMs): ``make test-streams-slow``.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.jvm.kafka_broker import jars_dir
from compat_tests.streams_app import CommittedCounts, StreamsApp, produce_keys, streams_jars
from compat_tests.test_kafka_streams import EOS, KEYS, PARTITIONS, create_topics
from compat_tests.test_kafka_streams_groups import describe, wait_for
from pykbroker.testing import BrokerProcess

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="set PYKBROKER_STREAMS_SLOW=1 (make test-streams-slow)")
TOOL = "org.apache.kafka.tools.streams.StreamsGroupCommand"
ROUNDS = 2
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MEMBER_ID = re.compile(r"(?<![\w-])[A-Za-z0-9_-]{22}(?![\w-])")  # a streams member id: a Uuid in base64


@pytest.fixture(scope="module")
def jars() -> Path:
    found = streams_jars()
    if found is None:
        pytest.skip("java or Maven is missing: Kafka Streams cannot run")
    return found


def tool(bootstrap: str, *args: str) -> str:
    kafka_jars = jars_dir("4.4.0")
    assert kafka_jars is not None
    out = subprocess.run(["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{kafka_jars}/*", TOOL,
                          "--bootstrap-server", bootstrap, *args], capture_output=True, text=True, timeout=120)
    return "\n".join(line for line in (out.stdout + out.stderr).splitlines() if not line.startswith("SLF4J"))


def normalized(text: str, app_id: str) -> list[str]:
    """The tool's lines with the run's own names replaced, columns collapsed, and its rows sorted (the tool prints
    them in a hash map's order of names that differ from run to run). How many records went to each repartition
    partition is the input's random keys' doing: an offset equal to its log end offset is shown as such."""
    text = MEMBER_ID.sub("MEMBER", text)  # before the (shorter) application id replaces parts of longer names
    text = text.replace(app_id, "APP")
    text = UUID.sub("UUID", text)
    text = re.sub(r"127\.0\.0\.1:\d+", "HOST:PORT", text)
    lines = [re.sub(r"\s+", " ", line).strip() for line in text.splitlines() if line.strip()]
    if lines and lines[0].startswith("GROUP TOPIC PARTITION CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET"):
        lines = [lines[0]] + [re.sub(r"^(\S+ \S+ \d+) (\d+) (\S+) (\d+) ", lambda m: f"{m[1]} {m[3]} " + (
            "AT-END " if m[2] == m[4] else f"{m[2]}/{m[4]} "), line) for line in lines[1:]]
    # How many epochs a group went through depends on when its two instances and its internal topics arrived
    # (on Kafka as here): an epoch equal to the target's is shown as such.
    lines = [re.sub(r"(sticky \S+) (\d+) (\d+) ", lambda m: f"{m[1]} " + (
        "EPOCH=TARGET " if m[2] == m[3] else f"{m[2]}/{m[3]} "), line) for line in lines]
    lines = [re.sub(r"^APP (\d+) (\d+) MEMBER (\S+) (\d+) ", lambda m: f"APP {m[2]} MEMBER {m[3]} " + (
        "EPOCH=TARGET " if m[1] == m[4] else f"{m[4]}/{m[1]} "), line) for line in lines]
    return lines[:1] + sorted(lines[1:])


def tool_session(jars: Path, bootstrap: str, root: Path) -> dict[str, list[str]]:
    app_id = f"tool-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [f"{app_id}-in", f"{app_id}-out"], 1)
    apps = [StreamsApp(jars, bootstrap, app_id, f"{app_id}-in", f"{app_id}-out", root, f"tool-{i}",
                       {**EOS, "group.protocol": "streams"}) for i in range(2)]
    counts = CommittedCounts(bootstrap, f"{app_id}-out", PARTITIONS)
    out: dict[str, list[str]] = {}

    def run(name: str, *args: str) -> None:
        out[name] = normalized(tool(bootstrap, *args), app_id)
    try:
        for app in apps:
            app.start()
        for app in apps:
            app.wait_for_state("RUNNING", 180)
        produce_keys(bootstrap, f"{app_id}-in", KEYS, ROUNDS)
        counts.wait_for_totals(KEYS, ROUNDS, 180)
        wait_for(bootstrap, app_id, lambda g: g.group_state == "Stable", "a stable group")
        time.sleep(2.0)  # the last commits of both instances
        run("list", "--list")
        run("list with state", "--list", "--state")
        run("describe", "--describe", "--group", app_id)
        run("describe offsets verbose", "--describe", "--offsets", "--verbose", "--group", app_id)
        run("describe state", "--describe", "--state", "--group", app_id)
        run("describe state verbose", "--describe", "--state", "--verbose", "--group", app_id)
        run("describe members", "--describe", "--members", "--group", app_id)
        run("describe members verbose", "--describe", "--members", "--verbose", "--group", app_id)
        for app in apps:
            app.stop()
        wait_for(bootstrap, app_id, lambda g: g.group_state == "Empty", "an empty group after the instances stopped")
        run("reset dry run", "--reset-offsets", "--group", app_id, "--all-input-topics", "--to-earliest", "--dry-run")
        run("reset", "--reset-offsets", "--group", app_id, "--all-input-topics", "--to-earliest", "--execute")
        run("describe after reset", "--describe", "--group", app_id)
        run("delete", "--delete", "--group", app_id)
        run("list after delete", "--list")
        out["describe after delete"] = [str(describe(bootstrap, app_id).error_code)]
    finally:
        counts.close()
        for app in apps:
            app.stop()
    return out


def test_kafka_streams_groups_tool_shows_what_it_shows_on_kafka(tmp_path, jars, request):
    kafka = tool_session(jars, request.getfixturevalue("kafka44_judge").bootstrap, tmp_path / "kafka")
    with BrokerProcess(tmp_path / "broker") as broker:
        ours = tool_session(jars, broker.bootstrap, tmp_path / "pykbroker")
    differences = {k: (kafka.get(k), ours.get(k)) for k in kafka if kafka.get(k) != ours.get(k)}
    assert not differences, "\n".join(f"{k}:\n  kafka:     {e}\n  pykbroker: {g}" for k, (e, g) in differences.items())
