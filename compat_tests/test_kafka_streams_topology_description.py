"""A real Kafka Streams 4.4 application (group.protocol=streams) pushes its topology description (KIP-1331): to a
Kafka 4.4 whose group.streams.topology.description.plugin.class is the in-memory plugin of compat_tests/jvm/topodesc,
and to a pykbroker with its built-in store (group.streams.topology.description.store.enable). StreamsGroupDescribe
v1 must return the same description from both, and Kafka 4.4's ``kafka-streams-groups.sh --describe --topology``
must print the same; pykbroker's must still be there after the broker restarts (the
record in __consumer_offsets) and stay the same once a second instance joins. Slow (JVMs):
``make test-streams-slow``.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from compat_tests.streams_app import StreamsApp
from compat_tests.test_differential_streams_groups import kafka_with_description_plugin
from compat_tests.test_kafka_streams import EOS, create_topics
from compat_tests.test_kafka_streams import jars as jars  # noqa: F401 - the fixture, shared
from compat_tests.test_kafka_streams_groups_tool import normalized, tool
from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode
from wire.messages import StreamsGroupDescribeRequest

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="set PYKBROKER_STREAMS_SLOW=1 (make test-streams-slow)")
STORED = 3
STORE = {"group.streams.topology.description.store.enable": "true"}


@pytest.fixture(scope="module")
def kafka_plugin(tmp_path_factory):
    yield from kafka_with_description_plugin(tmp_path_factory)


def stored_description(bootstrap: str, group: str, timeout: float = 120.0):
    """The group's description once StreamsGroupDescribe v1 reports it STORED, as comparable tuples."""
    deadline = time.monotonic() + timeout
    while True:
        with RawClient(bootstrap, timeout=30) as c:
            [g] = c.request(StreamsGroupDescribeRequest(group_ids=[group], include_topology_description=True),
                            1).groups
        if g.error_code == ErrorCode.NONE and g.topology_description_status == STORED:
            d = g.topology_description

            def nodes(ns):
                return [(n.name, n.node_type, n.source_topics, n.sink_topic, n.stores, n.successors) for n in ns]
            return (g.topology.epoch, [(s.subtopology_id, nodes(s.nodes)) for s in d.subtopologies],
                    [(nodes([x.source]), nodes([x.processor])) for x in d.global_stores])
        if time.monotonic() > deadline:
            raise AssertionError(f"no stored topology description for {group} in {timeout} s: {g}")
        time.sleep(0.5)


def shown(bootstrap: str, app_id: str) -> list[str]:
    """What ``kafka-streams-groups.sh --describe --topology`` prints of the group."""
    out = tool(bootstrap, "--describe", "--group", app_id, "--topology")
    print(out)
    return normalized(out, app_id)


def pushed(jars: Path, bootstrap: str, root: Path, app_id: str) -> tuple:
    """Run the counting application until its description is stored; (the description, the description once a
    second instance runs, what the tool shows)."""
    create_topics(bootstrap, [f"{app_id}-in", f"{app_id}-out"], 1)
    apps = [StreamsApp(jars, bootstrap, app_id, f"{app_id}-in", f"{app_id}-out", root, f"desc-{i}",
                       {**EOS, "group.protocol": "streams"}) for i in range(2)]
    try:
        apps[0].start().wait_for_state("RUNNING", 180)
        first = stored_description(bootstrap, app_id)
        apps[1].start().wait_for_state("RUNNING", 180)
        return first, stored_description(bootstrap, app_id), shown(bootstrap, app_id)
    finally:
        for app in apps:
            app.stop()


def test_a_streams_application_pushes_its_description_and_it_survives_a_restart(tmp_path, jars, kafka_plugin):
    app_id = f"desc-{uuid.uuid4().hex[:8]}"
    kafka = pushed(jars, kafka_plugin.bootstrap, tmp_path / "kafka", app_id)
    with BrokerProcess(tmp_path / "broker", overrides=STORE) as broker:
        ours = pushed(jars, broker.bootstrap, tmp_path / "pykbroker", app_id)
    assert ours == kafka
    assert kafka[0][1], "the description has sub-topologies"
    assert any("KSTREAM-SOURCE" in line for line in kafka[2]), kafka[2]
    with BrokerProcess(tmp_path / "broker", overrides=STORE) as broker:
        assert stored_description(broker.bootstrap, app_id, 60) == kafka[0]
        assert shown(broker.bootstrap, app_id) == kafka[2]
