"""The console's JSON API against a real broker, over HTTP as the page calls it (the browser tests cover
the page; these the API's rules): writes off by default, no cross-site POSTs, a bounded filter, browse
positions, confirmation for deleting a topic, Kafka's refusals passed through, bad input answered 400."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Producer

from pykbroker.testing import BrokerProcess, free_port

TOPIC = "events"
PARTITIONS = 3
PER_PARTITION = 100
BASE_TS = 1_700_000_000_000


def call(url: str, path: str, body: object = None, content_type: str = "application/json") -> tuple[int, object]:
    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": content_type}, method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


def wait_search(url: str) -> dict:
    import time

    deadline = time.monotonic() + 30
    while True:
        _, progress = call(url, "api/search")
        assert isinstance(progress, dict)
        if progress["done"] or time.monotonic() > deadline:
            return progress
        time.sleep(0.1)


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    port = free_port()
    with BrokerProcess(tmp_path_factory.mktemp("api"), overrides={
            "console.listener": f"127.0.0.1:{port}", "console.write.actions.enable": "true"}) as broker:
        broker.start()
        url = f"http://127.0.0.1:{port}/"
        assert call(url, "api/topic/create", {"name": TOPIC, "partitions": PARTITIONS}) == (200, None)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
        for i in range(PER_PARTITION):
            for p in range(PARTITIONS):  # record i of each partition at BASE_TS + i*10 + p: a total order
                producer.produce(TOPIC, json.dumps({"i": i, "p": p}).encode(), partition=p,
                                 timestamp=BASE_TS + i * 10 + p)
        assert producer.flush(30) == 0
        yield broker, url


def test_browse_positions_and_orders(console):
    _, url = console
    status, d = call(url, f"api/messages?topic={TOPIC}&limit=4")
    assert status == 200
    assert [(r["partition"], r["offset"]) for r in d["records"]] == [(2, 99), (1, 99), (0, 99), (2, 98)]
    assert d["partitions"] == {str(p): {"log_start_offset": 0, "high_watermark": PER_PARTITION} for p in range(3)}
    _, d = call(url, f"api/messages?topic={TOPIC}&partition=1&start=offset&value=20&order=newest&limit=3")
    assert [r["offset"] for r in d["records"]] == [20, 19, 18]
    _, d = call(url, f"api/messages?topic={TOPIC}&start=timestamp&value={BASE_TS + 500}&order=oldest&limit=4")
    assert [(r["partition"], r["offset"]) for r in d["records"]] == [(0, 50), (1, 50), (2, 50), (0, 51)]
    _, d = call(url, f"api/messages?topic={TOPIC}&start=beginning&order=oldest&limit=1&partition=2")
    assert json.loads(__import__("base64").b64decode(d["records"][0]["value"])) == {"i": 0, "p": 2}


def test_the_filter_scans_at_most_what_it_is_given_and_reports_progress(console):
    _, url = console
    status, first = call(url, "api/search", {"topic": TOPIC, "filter": '"i": 7,', "max_scan": 150})
    assert status == 200 and first["total"] == 150
    done = wait_search(url)
    assert done["done"] and done["error"] is None and done["scanned"] == 150 and done["total"] == 150
    # partitions in order: all 100 of partition 0, then 50 of partition 1
    assert [(m["partition"], m["offset"]) for m in done["matches"]] == [(0, 7), (1, 7)]
    call(url, "api/search", {"topic": TOPIC, "filter": "nowhere", "max_scan": 10**9})
    done = wait_search(url)
    assert done["scanned"] == done["total"] == PARTITIONS * PER_PARTITION and done["matches"] == []
    assert call(url, "api/search", {"topic": TOPIC, "filter": ""})[0] == 400


def test_kafkas_refusals_and_bad_input_are_answered_not_crashed_on(console):
    broker, url = console
    status, d = call(url, "api/messages?topic=missing")
    assert status == 400 and d["code"] == "UNKNOWN_TOPIC_OR_PARTITION"
    status, d = call(url, "api/topic/create", {"name": TOPIC, "partitions": 1})
    assert status == 400 and d["code"] == "TOPIC_ALREADY_EXISTS"
    status, d = call(url, "api/topic/partitions", {"name": TOPIC, "count": 2})
    assert status == 400 and d["code"] == "INVALID_PARTITIONS"
    assert call(url, "api/tail?topic=events&positions=garbage")[0] == 400
    assert call(url, "api/messages?topic=events&limit=x")[0] == 400
    status, d = call(url, "api/produce", {"topic": TOPIC, "partition": 7, "value": "x"})
    assert status == 400 and d["code"] == "UNKNOWN_TOPIC_OR_PARTITION"
    assert call(url, "api/produce", {"topic": TOPIC, "value": "zz", "encoding": "hex"})[0] == 400  # not hex
    # a POST another site's page could send (a form: no JSON content type) changes nothing
    status, d = call(url, "api/topic/delete", {"name": TOPIC, "confirm": TOPIC}, content_type="text/plain")
    assert status == 400 and "application/json" in d["error"]
    status, d = call(url, "api/topic/delete", {"name": TOPIC, "confirm": "nope"})
    assert status == 400 and "confirm" in d["error"]
    assert call(url, f"api/topic?name={TOPIC}")[0] == 200
    assert broker.alive


def test_delete_records_and_a_group_reset_preview(console):
    _, url = console
    assert call(url, "api/topic/delete-records", {"name": TOPIC, "partition": 0, "offset": 10}) == (200, 10)
    _, d = call(url, f"api/topic?name={TOPIC}")
    assert d["partitions"][0]["log_start_offset"] == 10
    status, preview = call(url, "api/group/reset-preview", {"group": "g", "topic": TOPIC, "to": "earliest"})
    assert status == 200
    assert [(r["partition"], r["current"], r["new"], r["lag_after"]) for r in preview] == [
        (0, None, 10, 90), (1, None, 0, 100), (2, None, 0, 100)]
    assert call(url, "api/groups") == (200, [])  # the preview committed nothing


def test_writes_are_off_unless_configured(tmp_path):
    port = free_port()
    with BrokerProcess(tmp_path, overrides={"console.listener": f"127.0.0.1:{port}"}) as broker:
        broker.start()
        url = f"http://127.0.0.1:{port}/"
        assert call(url, "api/session") == (200, {"principal": "User:ANONYMOUS", "login_required": False,
                                                  "write_enabled": False})
        status, d = call(url, "api/topic/create", {"name": "nope"})
        assert status == 403 and "console.write.actions.enable=true" in d["error"]
        assert call(url, "api/messages?topic=nope")[1]["code"] == "UNKNOWN_TOPIC_OR_PARTITION"
        assert "read-only: console.write.actions.enable=false" in broker.log()


def test_the_tail_follows_new_records_and_skips_ahead_when_far_behind(console):
    broker, url = console
    status, start = call(url, f"api/tail?topic={TOPIC}")
    assert status == 200 and start["records"] == []
    ends = {int(p): o for p, o in start["positions"].items()}
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(250):
        producer.produce(TOPIC, b"new-%d" % i, partition=1)
    producer.produce(TOPIC, b"one", partition=2)
    assert producer.flush(30) == 0
    positions = json.dumps(start["positions"])
    status, d = call(url, f"api/tail?topic={TOPIC}&positions={urllib.request.quote(positions)}")
    assert status == 200 and d["skipped"] == 50  # partition 1 was 250 behind: its newest 200 only
    got = {(r["partition"], r["offset"]) for r in d["records"]}
    assert got == {(1, ends[1] + 50 + i) for i in range(200)} | {(2, ends[2])}
    assert d["positions"] == {"0": ends[0], "1": ends[1] + 250, "2": ends[2] + 1}
