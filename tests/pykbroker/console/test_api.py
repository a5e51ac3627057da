"""The console's JSON API against a real broker, over HTTP as the page calls it (the browser tests cover
the page; these the API's rules): writes off by default, no cross-site POSTs, a bounded filter, browse
positions, confirmation for deleting a topic, Kafka's refusals passed through, bad input answered 400."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

import pytest
from confluent_kafka import Producer

from pykbroker.testing import BrokerProcess

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
    with BrokerProcess(tmp_path_factory.mktemp("api"), overrides={
            "console.listener": "127.0.0.1:0", "console.write.actions.enable": "true"}) as broker:
        broker.start()
        url = broker.console_url
        events(broker, url, TOPIC)
        yield broker, url


def events(broker: BrokerProcess, url: str, topic: str) -> None:
    """``topic`` created through the console with PARTITIONS partitions of PER_PARTITION records each: record i of
    each partition at BASE_TS + i*10 + p, a total order. Tests that change a topic's records use one of their
    own, so that no test depends on which ran before it."""
    assert call(url, "api/topic/create", {"name": topic, "partitions": PARTITIONS}) == (200, None)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce(topic, json.dumps({"i": i, "p": p}).encode(), partition=p, timestamp=BASE_TS + i * 10 + p)
    assert producer.flush(30) == 0


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
    status, d = call(url, "api/topic/create", {"name": "evil\n[2026-01-01] INFO forged line"})
    assert status == 400 and d["code"] == "INVALID_TOPIC_EXCEPTION"  # type: ignore[index]
    audit = [line for line in broker.log().splitlines() if "pykbroker.console.audit" in line]
    assert any("create topic evil\\n[2026-01-01] INFO forged line (partitions" in line for line in audit)
    assert broker.alive


def test_delete_records_and_a_group_reset_preview(console):
    broker, url = console
    events(broker, url, "trimmed")

    def groups() -> list[str]:
        status, listed = call(url, "api/groups")
        assert status == 200 and isinstance(listed, list)
        return [g["group_id"] for g in listed]

    assert call(url, "api/topic/delete-records", {"name": "trimmed", "partition": 0, "offset": 10}) == (200, 10)
    _, d = call(url, "api/topic?name=trimmed")
    assert d["partitions"][0]["log_start_offset"] == 10  # type: ignore[index]
    status, preview = call(url, "api/group/reset-preview", {"group": "g", "topic": "trimmed", "to": "earliest"})
    assert status == 200
    assert [(r["partition"], r["current"], r["new"], r["lag_after"]) for r in preview] == [  # type: ignore[union-attr]
        (0, None, 10, 90), (1, None, 0, 100), (2, None, 0, 100)]
    assert "g" not in groups()  # the preview committed nothing
    assert call(url, "api/group/reset", {"group": "g", "topic": "trimmed", "to": "latest"})[0] == 200
    assert "g" in groups()
    assert call(url, "api/group?id=g&type=classic")[1]["lag"] == 0  # type: ignore[index]
    assert call(url, "api/group/delete", {"group": "g"}) == (200, None)
    assert "g" not in groups()


def test_create_add_partitions_and_delete_a_topic(console):
    _, url = console
    assert call(url, "api/topic/create", {"name": "scratch", "partitions": 1,
                                          "configs": {"cleanup.policy": "compact"}}) == (200, None)
    assert call(url, "api/topic/partitions", {"name": "scratch", "count": 3}) == (200, None)
    _, d = call(url, "api/topic?name=scratch")
    assert len(d["partitions"]) == 3  # type: ignore[index]
    assert {c["name"]: c["value"] for c in d["configs"]}["cleanup.policy"] == "compact"  # type: ignore[index]
    status, d = call(url, "api/topic/create", {"name": "bad", "configs": {"cleanup.policy": "sometimes"}})
    assert status == 400 and d["code"] == "INVALID_CONFIG"  # type: ignore[index]
    assert call(url, "api/topic/delete", {"name": "scratch", "confirm": "scratch"}) == (200, None)
    assert call(url, "api/topic?name=scratch")[1]["code"] == "UNKNOWN_TOPIC_OR_PARTITION"  # type: ignore[index]


def test_writes_are_off_unless_configured(tmp_path):
    with BrokerProcess(tmp_path, overrides={"console.listener": "127.0.0.1:0"}) as broker:
        broker.start()
        url = broker.console_url
        status, session = call(url, "api/session")
        assert isinstance(session, dict) and session.pop("cluster_id")  # shown in the page's header
        assert (status, session) == (200, {"principal": "User:ANONYMOUS", "login_required": False,
                                           "write_enabled": False, "node_id": 1})
        status, d = call(url, "api/topic/create", {"name": "nope"})
        assert status == 403 and "console.write.actions.enable=true" in d["error"]
        assert call(url, "api/messages?topic=nope")[1]["code"] == "UNKNOWN_TOPIC_OR_PARTITION"
        assert "read-only: console.write.actions.enable=false" in broker.log()


def test_the_tail_follows_new_records_and_skips_ahead_when_far_behind(console):
    broker, url = console
    events(broker, url, "tailed")  # its own: the records it adds would change what other tests browse
    status, start = call(url, "api/tail?topic=tailed")
    assert status == 200 and start["records"] == []
    ends = {int(p): o for p, o in start["positions"].items()}
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(250):
        producer.produce("tailed", b"new-%d" % i, partition=1)
    producer.produce("tailed", b"one", partition=2)
    assert producer.flush(30) == 0
    positions = json.dumps(start["positions"])
    status, d = call(url, f"api/tail?topic=tailed&positions={urllib.parse.quote(positions)}")
    assert status == 200 and d["skipped"] == 50  # partition 1 was 250 behind: its newest 200 only
    got = {(r["partition"], r["offset"]) for r in d["records"]}
    assert got == {(1, ends[1] + 50 + i) for i in range(200)} | {(2, ends[2])}
    assert d["positions"] == {"0": ends[0], "1": ends[1] + 250, "2": ends[2] + 1}


def _as(url: str, path: str, body: object = None, cookie: str = "") -> tuple[int, object, str]:
    """A call with a session cookie; (status, JSON, the Set-Cookie value answered)."""
    request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Cookie": cookie},
                                     method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read()), (r.headers["Set-Cookie"] or "").split(";")[0]
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null"), ""


@pytest.mark.skipif(os.environ.get("PYKBROKER_CONSOLE_SLOW") != "1",
                    reason="half a minute: make test-console-slow (PYKBROKER_CONSOLE_SLOW=1)")
def test_scram_users_set_through_the_console_log_in_to_it(tmp_path):
    overrides = {"listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",  # bound by the broker
                 "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                 "listener.name.sasl_plaintext.plain.sasl.jaas.config":
                     'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";',
                 "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                 "super.users": "User:ANONYMOUS;User:admin", "console.listener": "127.0.0.1:0",
                 "console.write.actions.enable": "true"}
    for m in ("scram-sha-256", "scram-sha-512"):
        overrides[f"listener.name.sasl_plaintext.{m}.sasl.jaas.config"] = \
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    with BrokerProcess(tmp_path, port=0, overrides=overrides) as broker:
        broker.start()
        url = broker.console_url
        status, d, _ = _as(url, "api/overview")
        assert status == 401 and d == {"error": "log in first", "code": "LOGIN_REQUIRED"}
        status, d, admin = _as(url, "api/login", {"username": "admin", "password": "admin-secret"})  # PLAIN
        assert status == 200 and d == {"principal": "User:admin"} and admin.startswith("pykbroker_console=")
        assert _as(url, "api/user/upsert", {"user": "carol", "mechanism": "SCRAM-SHA-512", "password": "c-pw"},
                   cookie=admin)[0] == 200
        assert _as(url, "api/users", cookie=admin)[1] == [
            {"user": "carol", "mechanisms": [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]}]
        status, d, _ = _as(url, "api/login", {"username": "carol", "password": "wrong"})
        assert status == 401 and d["code"] == "SASL_AUTHENTICATION_FAILED"
        status, d, carol = _as(url, "api/login", {"username": "carol", "password": "c-pw"})  # SCRAM-SHA-512
        assert status == 200 and d == {"principal": "User:carol"}
        session = _as(url, "api/session", cookie=carol)[1]
        assert session.pop("cluster_id") and session == {"principal": "User:carol", "login_required": True,
                                                         "write_enabled": True, "node_id": 1}
        status, d, _ = _as(url, "api/users", cookie=carol)  # only a cluster's Describe may list users
        assert status == 400 and d["code"] == "CLUSTER_AUTHORIZATION_FAILED"
        acl = {"resource_type": "GROUP", "resource_name": "carols-", "pattern_type": "PREFIXED",
               "principal": "User:carol", "host": "*", "operation": "READ", "permission_type": "ALLOW"}
        assert _as(url, "api/acl/create", acl, cookie=carol)[1]["code"] == "CLUSTER_AUTHORIZATION_FAILED"
        assert _as(url, "api/acl/create", acl, cookie=admin)[0] == 200
        assert _as(url, "api/acls", cookie=admin)[1] == [acl]
        assert _as(url, "api/acl/delete", acl, cookie=admin)[0] == 200
        assert _as(url, "api/acls", cookie=admin)[1] == []
        assert _as(url, "api/logout", {}, cookie=carol)[0] == 200
        assert _as(url, "api/session", cookie=carol)[1] == {"principal": None, "login_required": True,
                                                             "write_enabled": True}  # no cluster id before a login
        log = broker.log()
        assert "console login: User:carol" in log and "console login refused for User:carol" in log
        assert "console write by User:admin: set SCRAM credential of carol (SCRAM-SHA-512): done" in log
        assert "c-pw" not in log and "admin-secret" not in log  # passwords are never logged


def test_a_share_groups_start_offsets_are_reset_and_described(tmp_path):
    with BrokerProcess(tmp_path, overrides={"console.listener": "127.0.0.1:0", "group.share.enable": "true",
                                            "console.write.actions.enable": "true"}) as broker:
        broker.start()
        url = broker.console_url
        assert call(url, "api/topic/create", {"name": "jobs", "partitions": 2}) == (200, None)
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(10):
            producer.produce("jobs", b"job-%d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        reset = {"group": "workers", "type": "share", "topic": "jobs", "to": "offset", "value": "2"}
        status, preview = call(url, "api/group/reset-preview", reset)
        assert status == 200 and [(r["partition"], r["current"], r["new"]) for r in preview] == [(0, None, 2), (1, None, 2)]
        assert call(url, "api/group?id=workers&type=share")[1]["code"] == "GROUP_ID_NOT_FOUND"  # the preview wrote nothing
        assert call(url, "api/group/reset", reset)[0] == 200
        status, g = call(url, "api/group?id=workers&type=share")
        assert status == 200 and isinstance(g, dict)
        assert [(o["partition"], o["committed"], o["lag"]) for o in g["offsets"]] == [(0, 2, 3), (1, 2, 3)]
        assert g["lag"] == 6
        assert "console write by User:ANONYMOUS: reset offsets of group workers on jobs to offset 2: done" in broker.log()


def test_on_a_sasl_ssl_listener_the_console_logs_in_over_tls(tmp_path):
    from pykbroker.security.certs import CertificateAuthority

    ca = CertificateAuthority()
    server = ca.issue(CN="localhost")
    (tmp_path / "ca.pem").write_text(ca.pem)
    with BrokerProcess(tmp_path / "data", port=0, overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.location": str(server.write_pem(tmp_path / "server.pem")),
            "listener.name.sasl_ssl.ssl.truststore.type": "PEM",
            "listener.name.sasl_ssl.ssl.truststore.location": str(tmp_path / "ca.pem"),
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config":
                'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";',
            "console.listener": "127.0.0.1:0"}) as broker:
        broker.start()
        url = broker.console_url
        assert f"Kafka requests to {broker.address('SASL_SSL')} over TLS" in broker.log()
        assert _as(url, "api/login", {"username": "alice", "password": "nope"})[0] == 401
        status, d, alice = _as(url, "api/login", {"username": "alice", "password": "alice-secret"})
        assert status == 200 and d == {"principal": "User:alice"}
        assert _as(url, "api/overview", cookie=alice)[1]["principal"] == "User:alice"


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_members_and_their_assignments_of_a_live_group(console, protocol):
    import time

    from confluent_kafka import Consumer

    broker, url = console
    group = f"live-{protocol}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": protocol,
                         "client.id": f"reader-{protocol}", "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 60
        while len(consumer.assignment()) < PARTITIONS and time.monotonic() < deadline:
            consumer.poll(0.2)
        listed = {g["group_id"]: g for g in call(url, "api/groups")[1]}  # type: ignore[union-attr]
        assert listed[group]["type"] == protocol and listed[group]["state"] == "Stable"
        status, g = call(url, f"api/group?id={group}&type={protocol}")
        assert status == 200 and isinstance(g, dict)
        [member] = g["members"]
        assert member["client_id"] == f"reader-{protocol}"
        assert member["assignment"] == [{"topic": TOPIC, "partitions": list(range(PARTITIONS))}]
        status, d = call(url, "api/group/reset", {"group": group, "topic": TOPIC, "to": "earliest"})
        assert status == 400 and d["code"] == "NON_EMPTY_GROUP" and "current state is Stable" in d["error"]
    finally:
        consumer.close()


def test_the_console_is_served_over_https_with_the_brokers_key_store(tmp_path):
    import ssl

    from pykbroker.security.certs import CertificateAuthority

    ca = CertificateAuthority()
    server = ca.issue(CN="localhost")
    with BrokerProcess(tmp_path / "data", overrides={
            "console.listener": "https://127.0.0.1:0", "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(server.write_pem(tmp_path / "server.pem"))}) as broker:
        broker.start()
        url = broker.console_url
        assert url.startswith("https://127.0.0.1:")
        trusted = ssl.create_default_context(cadata=ca.pem)
        with urllib.request.urlopen(f"{url}api/session", context=trusted, timeout=30) as r:
            assert json.loads(r.read())["principal"] == "User:ANONYMOUS"
        with urllib.request.urlopen(url, context=trusted, timeout=30) as r:
            assert b"pykbroker console" in r.read()
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP gets no answer
            urllib.request.urlopen(f"{url.replace('https:', 'http:')}api/session", timeout=10)
        assert broker.alive
