"""The console's overview in a real headless browser (Debian's Chromium, driven by ``browser.Browser``)
against a real broker.

The broker runs with ``console.listener`` only (metrics.port off); confluent-kafka produces 1,000
records to a topic and a group commits 600 of them. Chromium loads the page, runs its script (which
polls /api/overview) and dumps the DOM it rendered; the test reads the topic's message count and the
group's lag from it, and a screenshot is written under the test's tmp dir for people to look at.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from pykbroker.testing import BrokerProcess
from tests.pykbroker.console.browser import Browser

TOPIC = "console-orders"
GROUP = "console-billing"
RECORDS = 1000
COMMITTED = 600

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None,
                                reason="chromium is installed by `make test` (tools/install_system_deps.sh)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with Browser(tmp_path_factory.mktemp("chromium"), height=1600) as b:
        yield b


def rendered(browser: Browser, url: str) -> str:
    """The page's DOM once its script fetched /api/overview and rendered it."""
    browser.goto(url)
    browser.wait("document.body.dataset.loaded === 'true'")
    return str(browser.eval("document.documentElement.outerHTML"))


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    broker = BrokerProcess(tmp_path_factory.mktemp("console"),
                           overrides={"console.listener": "127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"})
    with broker:
        broker.start()
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(RECORDS):
            producer.produce(TOPIC, b"o" * 1024, key=str(i).encode())
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe([TOPIC])
        deadline = time.monotonic() + 60
        got = 0
        while got < COMMITTED and time.monotonic() < deadline:
            m = consumer.poll(1)
            if m is not None and m.error() is None:
                got += 1
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, COMMITTED)], asynchronous=False)
        yield broker, broker.console_url
        consumer.close()


def overview(url: str) -> dict:
    with urllib.request.urlopen(url + "api/overview", timeout=10) as r:
        assert r.headers["Content-Type"] == "application/json"
        return json.loads(r.read())


def test_started_line_says_where(console):
    broker, url = console
    lines = [line for line in broker.log().splitlines() if "serving the console at" in line]
    assert len(lines) == 1 and url in lines[0], lines
    assert "serving Prometheus metrics" not in broker.log()  # the console alone does not open metrics.port


def test_the_page_in_a_browser_shows_the_topic_and_the_groups_lag(console, browser, tmp_path):
    _, url = console
    dom = rendered(browser, url)
    # The first messages cell after the topic's row start is the row's own (its details hold no such cell).
    messages = re.search(rf'<tr class="topic" data-topic="{TOPIC}">.*?<td class="num messages">([^<]*)</td>', dom, re.S)
    assert messages is not None, dom[:3000]
    assert messages.group(1) == "1,000"
    group = re.search(rf'<tr class="group" data-group="{GROUP}">.*?<span class="tag ok">([^<]*)</span>.*?'
                      rf'<td class="num group-lag">([^<]*)</td>', dom, re.S)
    assert group is not None, dom[:3000]
    assert group.groups() == ("Stable", str(RECORDS - COMMITTED))
    assert "created topic " + TOPIC in dom  # the log lines

    shot = browser.screenshot(tmp_path / "console.png")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    print(f"console screenshot: {shot}")


def test_overview_json_has_partitions_configs_members_and_throughput(console):
    broker, url = console
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    deadline = time.monotonic() + 30
    # traffic while the console samples (every 2 s) until a sample shows it; to a topic of its own, as the page
    # test counts TOPIC's records and whichever runs first must not change what the other sees
    while True:
        for _ in range(50):
            producer.produce("console-traffic", b"t" * 1024)
        producer.flush(10)
        rates = overview(url)["throughput"]["topics"].get("console-traffic", {}).get("bytes_in", [])
        if any(r > 0 for r in rates[-3:]) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert any(r > 0 for r in rates), rates
    d = overview(url)
    topic = next(t for t in d["topics"] if t["name"] == TOPIC)
    [p] = topic["partitions"]
    assert p["leader"] == d["node_id"] and p["isr"] == [d["node_id"]]
    assert p["log_start_offset"] == 0 and p["log_end_offset"] >= RECORDS and p["size"] > RECORDS * 1024
    assert topic["messages"] == p["log_end_offset"]
    group = next(g for g in d["groups"] if g["group_id"] == GROUP)
    assert group["state"] == "Stable" and len(group["members"]) == 1
    assert group["offsets"] == [{"topic": TOPIC, "partition": 0, "committed": COMMITTED,
                                 "lag": p["high_watermark"] - COMMITTED}]
    assert any(f"{TOPIC}" in line for line in d["log"])
    assert [b["node_id"] for b in d["brokers"]] == [d["node_id"]]


def test_only_get_is_served_and_garbage_is_refused(console):
    broker, url = console
    port = int(url.rsplit(":", 1)[1].strip("/"))
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /api/overview HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 405")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"\xff" * 40 + b"\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")
    assert overview(url)["topics"]
    assert broker.alive


def test_iceberg_tables_panel_shows_commits_and_lag(console, browser):
    from confluent_kafka.admin import AdminClient, NewTopic

    broker, url = console
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("console-lake", 2, config={"iceberg.mode": "key_value",
                                                             "iceberg.commit.interval.ms": "200"})])["console-lake"] \
        .result(timeout=10)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce("console-lake", b"x", partition=i % 2)
    producer.flush(10)
    deadline = time.monotonic() + 60
    while True:
        tables = [t for t in overview(url)["iceberg"] if t["topic"] == "console-lake"]
        if (tables and tables[0]["commits"] and tables[0]["lag_records"] == 0) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    [table] = tables
    assert table["table"] == "kafka.console-lake" and table["mode"] == "key_value" and table["commits"] >= 1
    assert [p["partition"] for p in table["partitions"]] == [0, 1] and table["lag_records"] == 0
    dom = rendered(browser, url)
    row = re.search(r'<tr class="table" data-topic="console-lake">.*?<td class="num table-lag">([^<]*)</td>', dom, re.S)
    assert row is not None and row.group(1) == "0", dom[-3000:]
