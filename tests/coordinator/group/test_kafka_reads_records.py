"""Apache Kafka's own kafka-dump-log --offsets-decoder (Kafka 4.4 jars) decodes the records we write.

A coordinator session (classic group, KIP-848 group with a regex, commits, deletes, a streams group) writes to
in-memory logs; the batches go into a real segment of ``__consumer_offsets-<n>``, which Kafka's
DumpLogSegments must parse record by record. Skipped only when there is no java.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from storage import Log, LogConfig
from tests.coordinator.group.helpers import Harness, assignment, info, join_request, run, sync_request
from tests.coordinator.group.test_consumer_protocol import hb, join
from tests.coordinator.group.test_offsets import commit
from tests.coordinator.group.test_streams_protocol import hb as streams_hb
from tests.coordinator.group.test_streams_protocol import join as streams_join
from wire import build_simple_batch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FETCH = os.path.join(REPO, "compat_tests", "jvm", "fetch_jars.sh")

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java is not installed (needed to run "
                                                                     "Apache Kafka's kafka-dump-log)")


@pytest.fixture(scope="module")
def jars() -> str:
    out = subprocess.run(["bash", FETCH], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, f"fetch_jars.sh failed:\n{out.stderr}"
    return out.stdout.strip().splitlines()[-1]


async def session(h: Harness) -> None:
    c = h.coordinator
    j = await c.join_group(info(3, "classic"), join_request("dump-classic"))
    await c.sync_group(info(3), sync_request("dump-classic", j.member_id, 1, {j.member_id: assignment({"a": [0]})}))
    await c.commit_offsets(info(8), commit("dump-classic", {("a", 0): 42}, generation=1, member_id=j.member_id))
    await c.consumer_group_heartbeat(info(1), join("m1", group_id="dump-848"))
    await c.consumer_group_heartbeat(info(1), hb("m2", 0, regex="[ab]", owned={}, rebalance_timeout_ms=500,
                                                 group_id="dump-848"))
    await c.consumer_group_heartbeat(info(1), hb("m2", -1, group_id="dump-848"))
    await c.commit_offsets(info(9), commit("dump-simple", {("b", 1): 7}, metadata=None, leader_epoch=-1))
    await c.delete_groups(info(2), ["dump-simple"])
    await c.streams_group_heartbeat(info(0), streams_join("s1"))
    await c.streams_group_heartbeat(info(0), streams_join("s2"))
    await c.streams_group_heartbeat(info(0), streams_hb("s1", 2, {"0": [0, 1, 2, 3]}))  # revocation
    await c.streams_group_heartbeat(info(0), streams_hb("s2", -1, {}))
    await h.settle()


def write_segment(directory: str, batches: list[list[tuple[bytes | None, bytes | None]]]) -> int:
    log = Log.open(directory, LogConfig(message_timestamp_after_max_ms=(1 << 63) - 1))
    count = 0
    for records in batches:
        log.append_as_leader(build_simple_batch([v for _, v in records], keys=[k for k, _ in records],
                                                timestamp=1_700_000_000_000), 0)
        count += len(records)
    log.close()
    return count


@run
async def test_kafka_decodes_every_record_we_write(jars, tmp_path):
    h = Harness()
    await session(h)
    decoded: list[tuple[dict, dict | None]] = []
    total = 0
    for partition, log in sorted(h.logs.logs.items()):
        if not log.batches:
            continue
        directory = str(tmp_path / f"__consumer_offsets-{partition}")
        total += write_segment(directory, log.batches)
        files = sorted(os.path.join(directory, f) for f in os.listdir(directory) if f.endswith(".log"))
        out = subprocess.run(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", os.path.join(jars, "*"),
                              "org.apache.kafka.tools.DumpLogSegments", "--offsets-decoder", "--files", ",".join(files)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr[-3000:]
        for line in out.stdout.splitlines():
            m = re.search(r"key: (\{.*\}) payload: (\{.*\}|<DELETE>|null)\s*$", line)
            if m:
                payload = m.group(2)
                decoded.append((json.loads(m.group(1)), None if payload in ("<DELETE>", "null") else json.loads(payload)))
            elif "offset:" in line and "key:" in line:
                raise AssertionError(f"kafka-dump-log could not decode: {line}")
    assert len(decoded) == total > 20
    by_type: dict[str, list] = {}
    for key, payload in decoded:
        by_type.setdefault(str(key["type"]), []).append((key["data"], payload))
    offsets = {(k["group"], k["topic"], k["partition"]): p for k, p in by_type["1"]}
    assert offsets[("dump-classic", "a", 0)]["data"]["offset"] == 42
    assert offsets[("dump-simple", "b", 1)] is None  # deleted with its group
    groups = [p for k, p in by_type["2"] if k["group"] == "dump-classic" and p is not None]
    assert groups[-1]["data"]["protocol"] == "range" and groups[-1]["data"]["generation"] == 1
    regexes = [p for k, p in by_type["16"] if p is not None]
    assert regexes[0]["data"]["topics"] == ["a", "b"]
    for record_type in ("3", "5", "6", "7", "8", "17", "19", "20", "21", "22", "23"):  # 17-23: streams groups
        assert by_type[record_type], record_type
    topology = [p for _, p in by_type["23"] if p is not None][0]["data"]
    assert topology["epoch"] == 1 and topology["subtopologies"][0]["sourceTopics"] == ["a"]
    members = [p["data"] for k, p in by_type["19"] if p is not None and k["memberId"] == "s1"]
    assert members[0]["processId"] == "p-s1"
    pending = [p["data"] for k, p in by_type["22"] if p is not None and p["data"]["activeTasksPendingRevocation"]]
    assert pending and pending[0]["state"] == 2  # Kafka's UNREVOKED_TASKS
