"""Kafka Streams 4.4 with group.protocol=streams (KIP-1071), two static instances and a standby of every task, on
pykbroker and on Kafka 4.4 with the same steps: the counting application of compat_tests/streams_app.py with
``group.instance.id`` per instance and the group config ``streams.num.standby.replicas=1``.

Half the input is counted; the group must be Stable with a standby task on each instance; one instance is closed
(a static member leaves with epoch -2 and keeps its tasks) and started again: it must come back under its
instance id without a rebalance (the group epoch does not move) and the output, read with read_committed, must
be exact. Slow (JVMs): ``make test-streams-slow``.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.streams_app import CommittedCounts, StreamsApp, produce_keys, streams_jars
from compat_tests.test_differential_streams_groups import GROUP_RESOURCE, _until_configured
from compat_tests.test_kafka_streams import EOS, KEYS, PARTITIONS, create_topics
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import IncrementalAlterConfigsRequest, StreamsGroupDescribeRequest
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="set PYKBROKER_STREAMS_SLOW=1 (make test-streams-slow)")
ROUNDS = 6


@pytest.fixture(scope="module")
def jars() -> Path:
    found = streams_jars()
    if found is None:
        pytest.skip("java or Maven is missing: Kafka Streams cannot run")
    return found


def describe(bootstrap: str, group: str):
    with RawClient(bootstrap, timeout=30) as c:
        [g] = c.request(StreamsGroupDescribeRequest(group_ids=[group]), 1).groups
    return g


def wait_for(bootstrap: str, group: str, condition, what: str, timeout: float = 120.0):
    deadline = time.monotonic() + timeout
    while True:
        g = describe(bootstrap, group)
        if g.error_code == ErrorCode.NONE and condition(g):
            return g
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached in {timeout} s; the group: {g}")
        time.sleep(0.5)


def tasks(ids) -> int:
    return sum(len(t.partitions) for t in ids)


def static_instances_with_standbys(jars: Path, bootstrap: str, root: Path) -> dict[str, object]:
    """The steps of the module docstring; what they showed (compared between the two brokers by the tests)."""
    app_id = f"static-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [f"{app_id}-in", f"{app_id}-out"], 1)
    with RawClient(bootstrap, timeout=30) as c:
        r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=GROUP_RESOURCE, resource_name=app_id, configs=[AlterableConfig(
                name="streams.num.standby.replicas", config_operation=0, value="1")])]), 1)
        assert r.responses[0].error_code == ErrorCode.NONE, r
        _until_configured(c, app_id, {"streams.num.standby.replicas": "1"})
    apps = [StreamsApp(jars, bootstrap, app_id, f"{app_id}-in", f"{app_id}-out", root, f"static-{i}",
                       {**EOS, "group.protocol": "streams", "group.instance.id": f"{app_id}-instance-{i}"})
            for i in range(2)]
    counts = CommittedCounts(bootstrap, f"{app_id}-out", PARTITIONS)
    seen: dict[str, object] = {}
    try:
        for app in apps:
            app.start()
        for app in apps:
            app.wait_for_state("RUNNING", 180)
        produce_keys(bootstrap, f"{app_id}-in", KEYS, ROUNDS // 2)
        before = wait_for(bootstrap, app_id, lambda g: g.group_state == "Stable" and len(g.members) == 2 and all(
            tasks(m.assignment.active_tasks) and tasks(m.assignment.standby_tasks) for m in g.members),
            "two stable members, each with active and standby tasks")
        seen["instance ids"] = sorted(m.instance_id for m in before.members)
        apps[0].stop()
        left = wait_for(bootstrap, app_id, lambda g: any(m.member_epoch == -2 for m in g.members),
                        "the closed instance left as a static member (epoch -2)", 60)
        seen["left statically keeping its place"] = (len(left.members), left.group_epoch == before.group_epoch)
        apps[0].start()
        apps[0].wait_for_state("RUNNING", 180)
        after = wait_for(bootstrap, app_id, lambda g: g.group_state == "Stable" and all(
            m.member_epoch >= 0 for m in g.members), "the instance back and the group stable again")
        seen["back without a rebalance"] = after.group_epoch == before.group_epoch
        seen["members after"] = sorted((m.instance_id, tasks(m.assignment.active_tasks),
                                        tasks(m.assignment.standby_tasks)) for m in after.members)
        produce_keys(bootstrap, f"{app_id}-in", KEYS, ROUNDS - ROUNDS // 2, first_round=ROUNDS // 2)
        try:
            counts.wait_for_totals(KEYS, ROUNDS, 180)
        except TimeoutError as exc:
            raise AssertionError(f"{exc}; instance logs:\n" + "\n".join(a.log() for a in apps)) from None
        time.sleep(2.0)
        seen["output exact"] = counts.complete(KEYS, ROUNDS) and not counts.anomalies()
    finally:
        counts.close()
        for app in apps:
            app.stop()
    return seen


def test_static_instances_with_standbys_rejoin_without_a_rebalance(tmp_path, jars, request):
    kafka = static_instances_with_standbys(jars, request.getfixturevalue("kafka44_judge").bootstrap,
                                           tmp_path / "kafka")
    with BrokerProcess(tmp_path / "broker") as broker:
        ours = static_instances_with_standbys(jars, broker.bootstrap, tmp_path / "pykbroker")
    print(f"Kafka 4.4: {kafka}\npykbroker: {ours}")
    instance_free = {k: v for k, v in ours.items() if k not in ("instance ids", "members after")}
    assert instance_free == {k: v for k, v in kafka.items() if k not in ("instance ids", "members after")}
    assert [m[1:] for m in ours["members after"]] == [m[1:] for m in kafka["members after"]]  # type: ignore[union-attr]
