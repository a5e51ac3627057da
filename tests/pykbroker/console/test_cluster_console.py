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
from confluent_kafka.admin import AdminClient, NewTopic

from pykbroker.testing import ClusterProcesses
from replication.metadata.embedded_store import uuid_from_kafka_string
from replication.remote_log_metadata import metadata_partition
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
    cluster = ClusterProcesses(tmp_path, size=2, overrides={
        "group.initial.rebalance.delay.ms": "0", "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "4"})
    try:  # started by hand (not ``with``): the console on broker 2 only
        cluster.zookeeper.start()
        cluster.add_broker(1)
        cluster.add_broker(2, {"console.listener": "127.0.0.1:0", "console.write.actions.enable": "true"})
        cluster.wait_for_brokers(2)
        url = cluster.broker(2).console_url
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
        # partitions added through broker 2's console are readable as soon as it answers, on whichever broker
        # leads them (CreatePartitions answers once the controller committed them, before the leaders have logs)
        assert call(url, "api/topic/partitions", {"name": "spread", "count": 8}) is None
        grown = call(url, "api/topic?name=spread")
        assert isinstance(grown, dict) and [p["high_watermark"] for p in grown["partitions"][4:]] == [0] * 4, grown
        d = call(url, "api/messages?topic=spread&start=beginning&order=oldest&limit=1000")
        assert isinstance(d, dict) and len(d["records"]) == 41, d
        for p in range(4, 8):
            produced = call(url, "api/produce", {"topic": "spread", "partition": p, "value": f"new {p}"})
            assert isinstance(produced, dict) and produced["offset"] == 0, (p, produced)
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


@pytest.mark.parametrize("metadata_replicas", ["1", "2"])
def test_remote_sizes_of_partitions_led_by_the_other_broker(tmp_path, metadata_replicas):
    """A tiered topic led by broker 1, seen on broker 2's console: a partition whose __remote_log_metadata
    partition broker 2 replays shows its remote bytes (the same records the leader's size comes from; every
    partition when that topic has a replica on both brokers); the others the records their leader says are remote
    (ListOffsets v9: log start to latest tiered offset), as no Kafka request answers remote bytes. Never "–"
    once segments are copied."""
    remote = tmp_path / "remote"
    cluster = ClusterProcesses(tmp_path, size=2, overrides={
        "remote.log.storage.system.enable": "true", "rsm.config.dir": str(remote),
        "remote.log.storage.manager.class.name": "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
        "remote.log.manager.task.interval.ms": "200", "log.retention.check.interval.ms": "200",
        "log.initial.task.delay.ms": "0", "log.segment.delete.delay.ms": "0",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "2",
        "rlmm.config.remote.log.metadata.topic.replication.factor": metadata_replicas,
        "offsets.topic.replication.factor": "1"})
    try:
        cluster.zookeeper.start()
        cluster.add_broker(1)
        cluster.add_broker(2, {"console.listener": "127.0.0.1:0"})
        cluster.wait_for_brokers(2)
        url = cluster.broker(2).console_url
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic("tiered", 6, replica_assignment=[[1]] * 6, config={
            "remote.storage.enable": "true", "internal.segment.bytes": "20000", "local.retention.bytes": "1"})])["tiered"].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, "batch.size": 8000})
        for _ in range(300):
            for p in range(6):
                producer.produce("tiered", b"x" * 200, partition=p)
        assert producer.flush(30) == 0
        deadline = time.monotonic() + 90
        while True:
            overview = call(url, "api/overview")
            assert isinstance(overview, dict)
            [tiered] = [t for t in overview["topics"] if t["name"] == "tiered"]
            metadata = call(url, "api/topic?name=__remote_log_metadata")
            if all(p["remote_size"] or p["remote_records"] for p in tiered["partitions"]) and isinstance(metadata, dict):
                break  # every partition has copied segments
            assert time.monotonic() < deadline, ([(p["partition"], p["log_start_offset"], p["high_watermark"],
                                                   p["remote_size"], p["remote_records"]) for p in tiered["partitions"]],
                                                 tiered["configs"], metadata)
            time.sleep(0.5)
        hosts = {p["partition"]: p["replicas"] for p in metadata["partitions"]}
        topic_id = uuid_from_kafka_string(tiered["topic_id"])
        replayed_here = {p for p in range(6) if 2 in hosts[metadata_partition(topic_id, p, 2)]}
        if metadata_replicas == "2":
            assert replayed_here == set(range(6)), hosts
        for p in tiered["partitions"]:
            assert p["leader"] == 1 and p["size"] is not None, p
            if p["partition"] in replayed_here:
                assert p["remote_size"] > 0 and p["remote_records"] is None, p
            else:
                assert p["remote_size"] is None and 0 < p["remote_records"] <= p["high_watermark"], p
    finally:
        cluster.close()
