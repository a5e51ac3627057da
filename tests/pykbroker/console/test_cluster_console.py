"""Any broker's console shows the whole cluster: a two-broker ZooKeeper cluster, the console on broker 2
only; its messages, partitions, groups, overview (sizes, offsets, lag) and writes reach the leaders and
coordinators on broker 1 too.

Slow (ZooKeeper and two brokers): run with PYKBROKER_CONSOLE_SLOW=1 (``make test-console-slow``, part of
``make test-slow``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer

from pykbroker.testing import ClusterProcesses, free_port
from tests.pykbroker.console.browser import Browser
from tests.pykbroker.console.test_workbench import shot

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_CONSOLE_SLOW") != "1",
                                reason="slow: PYKBROKER_CONSOLE_SLOW=1 (make test-console-slow)")


def call(url: str, path: str, body: object = None) -> object:
    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"{path}: {exc.code} {exc.read().decode()}") from None


def test_one_brokers_console_reads_and_writes_partitions_led_by_the_other(tmp_path):
    port = free_port()
    cluster = ClusterProcesses(tmp_path, size=2, overrides={
        "group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "4"})
    try:  # started by hand (not ``with``): the console on broker 2 only
        cluster.zookeeper.start()
        cluster.add_broker(1)
        cluster.add_broker(2, {"console.listener": f"127.0.0.1:{port}", "console.write.actions.enable": "true"})
        cluster.wait_for_brokers(2)
        url = f"http://127.0.0.1:{port}/"
        assert call(url, "api/topic/create", {"name": "spread", "partitions": 4, "replication_factor": 1}) is None
        topic = call(url, "api/topic?name=spread")
        assert isinstance(topic, dict)
        assert {p["leader"] for p in topic["partitions"]} == {1, 2}
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        for p in range(4):
            for i in range(10):
                producer.produce("spread", f"{p}-{i}".encode(), partition=p)
        assert producer.flush(30) == 0
        d = call(url, "api/messages?topic=spread&start=beginning&order=oldest&limit=1000")
        assert isinstance(d, dict)
        assert sorted((r["partition"], r["offset"]) for r in d["records"]) == [(p, i) for p in range(4) for i in range(10)]
        produced = call(url, "api/produce", {"topic": "spread", "partition": next(
            p["partition"] for p in topic["partitions"] if p["leader"] == 1), "value": "via broker 2"})
        assert isinstance(produced, dict) and produced["offset"] == 10
        # offsets of groups coordinated by either broker: reset commits through each group's coordinator
        for group in (f"g{i}" for i in range(6)):
            call(url, "api/group/reset", {"group": group, "topic": "spread", "to": "offset", "value": "5"})
        groups = call(url, "api/groups")
        assert isinstance(groups, list)
        assert {g["group_id"] for g in groups} == {f"g{i}" for i in range(6)}
        assert {g["coordinator"] for g in groups} == {1, 2}
        for g in groups:
            described = call(url, f"api/group?id={g['group_id']}&type=classic")
            assert isinstance(described, dict) and described["lag"] == 4 * 10 + 1 - 4 * 5
        overview = call(url, "api/overview")
        assert isinstance(overview, dict)
        assert [b["node_id"] for b in overview["brokers"]] == [1, 2]
        # the overview of broker 2 shows broker 1's partitions and groups too (sizes, offsets, lag)
        [spread] = [t for t in overview["topics"] if t["name"] == "spread"]
        assert spread["messages"] == 41, spread
        assert all(p["size"] and p["high_watermark"] in (10, 11) for p in spread["partitions"]), spread["partitions"]
        assert {g["group_id"]: g["lag"] for g in overview["groups"]} == {f"g{i}": 21 for i in range(6)}
        assert {g["coordinator"] for g in overview["groups"]} == {1, 2}
        if shutil.which("chromium") is not None:  # and the page shows it
            with Browser(tmp_path / "chromium") as browser:
                browser.goto(url + "#/")
                browser.wait("document.querySelector('#topics tr.topic[data-topic=\"spread\"] td.messages')"
                             "?.textContent === '41'")
                assert browser.eval("[...document.querySelectorAll('#groups td.group-lag')].map(td => td.textContent)"
                                    ) == ["21"] * 6
                shot(browser, "cluster-overview")
                # lag over time: broker 2 sampled the groups it coordinates, so their chart starts with history
                here = next(g["group_id"] for g in overview["groups"] if g["coordinator"] == 2)
                there = next(g["group_id"] for g in overview["groups"] if g["coordinator"] == 1)
                deadline = time.monotonic() + 60
                while len((call(url, f"api/group?id={here}&type=classic")["history"] or {"lag": []})["lag"]) < 2:  # type: ignore[index]
                    assert time.monotonic() < deadline
                    time.sleep(0.5)
                browser.goto(url + f"#/group/{here}?type=classic")
                assert int(browser.wait("document.body.dataset.lagSamples")) >= 3
                assert browser.text("group-lag-span").startswith("last ")
                assert call(url, f"api/group?id={there}&type=classic")["history"] is None  # type: ignore[index]
                browser.eval("document.body.dataset.lagSamples = ''")
                browser.goto(url + f"#/group/{there}?type=classic")
                assert browser.wait("document.body.dataset.lagSamples") == "1"
                assert browser.text("group-lag-span") == "since this page opened"
        # a broker down (kill -9): the other's console still answers, with what it can reach
        cluster.broker(1).kill()
        overview = call(url, "api/overview")
        assert isinstance(overview, dict)
        assert {g["group_id"] for g in overview["groups"] if g["coordinator"] == 2} == \
            {g["group_id"] for g in groups if g["coordinator"] == 2}
        assert overview["unavailable"] in ([1], [])  # [] once Metadata no longer lists broker 1
        listed = call(url, "api/groups")
        assert isinstance(listed, list) and {g["coordinator"] for g in listed} <= {2}
    finally:
        cluster.close()
