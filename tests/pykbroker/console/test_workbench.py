"""The console as a workbench, in a real headless Chromium against a real broker.

A person's steps through the page (``browser.Browser`` drives Chromium over the DevTools protocol):
browse 1,000 JSON messages and find one with the filter that runs in the broker; produce one and see it
arrive in the live tail (and a Kafka consumer read it); reset a group's offsets (preview, apply) and see
its lag change; edit a topic config and see Kafka's own validation error for an invalid value; log in
on a SASL broker as a user without ACLs and be refused what the ACLs refuse. Each main page is kept as a
screenshot under build/test-artifacts/console/ (the path is printed).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from pykbroker.testing import BrokerProcess
from tests.pykbroker.console.browser import Browser

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None,
                                reason="chromium is installed by `make test` (tools/install_system_deps.sh)")

ARTIFACTS = Path(__file__).resolve().parents[3] / "build" / "test-artifacts" / "console"
TOPIC = "orders"
GROUP = "billing"
RECORDS = 1000
COMMITTED = 600


def shot(browser: Browser, name: str) -> None:
    path = browser.screenshot(ARTIFACTS / f"{name}.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name
    print(f"console screenshot: {path}")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("workbench")
    b = BrokerProcess(root / "broker",
                      overrides={"console.listener": "127.0.0.1:0", "console.write.actions.enable": "true",
                                 "group.initial.rebalance.delay.ms": "0",
                                 # tiered storage, for the partition view's local and remote sizes
                                 "remote.log.storage.system.enable": "true", "rsm.config.dir": str(root / "remote"),
                                 "remote.log.storage.manager.class.name":
                                     "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
                                 "remote.log.manager.task.interval.ms": "300"})
    with b:
        b.start()
        producer = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
        for i in range(RECORDS):
            producer.produce(TOPIC, json.dumps({"id": i, "customer": f"c{i % 37}", "amount": i * 1.5}).encode(),
                             key=str(i).encode(), headers=[("source", b"test")])
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, COMMITTED)], asynchronous=False)
        consumer.close()  # the group is Empty: its offsets may be reset
        yield b


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    with Browser(tmp_path_factory.mktemp("chromium")) as b:
        yield b


def test_browse_1000_json_messages_and_find_one_with_the_broker_side_filter(broker, browser):
    browser.goto(broker.console_url + "#/")
    browser.wait("document.body.dataset.loaded === 'true'")
    shot(browser, "overview")
    browser.goto(broker.console_url + f"#/topic/{TOPIC}/messages")
    assert browser.wait("document.body.dataset.browsed") == "100"
    first = browser.eval("[...document.querySelectorAll('#messages tr.record')].slice(0, 2).map(r => "
                         "[r.dataset.offset, r.querySelector('.val summary').textContent])")
    assert first == [["999", '{"id":999,"customer":"c0","amount":1498.5}'],
                     ["998", '{"id":998,"customer":"c36","amount":1497.0}']]  # the literal as written
    shot(browser, "messages")

    browser.fill("browse-start", "beginning")
    browser.fill("browse-order", "oldest")
    browser.fill("browse-limit", "5")
    browser.eval("document.body.dataset.browsed = ''")
    browser.click("browse-run")
    assert browser.wait("document.body.dataset.browsed") == "5"
    assert browser.eval("[...document.querySelectorAll('#messages tr.record')].map(r => r.dataset.offset)") == [
        "0", "1", "2", "3", "4"]

    browser.fill("search-filter", '"id": 777,')  # the producer's JSON has a space after the colon
    browser.fill("search-max", str(RECORDS))
    browser.click("search-run")
    assert browser.wait("document.body.dataset.searched", timeout=60) == "1"
    assert browser.text("search-progress").startswith(f"scanned {RECORDS:,} of {RECORDS:,} records, 1 matching")
    row = browser.eval("(r => [r.dataset.offset, r.querySelector('.key').textContent, r.querySelector('.val summary')"
                       ".textContent, r.lastElementChild.textContent])(document.querySelector('#messages tr.record'))")
    assert row == ["777", "777", '{"id":777,"customer":"c0","amount":1165.5}', "source=test"]
    browser.fill("decode", "hex")  # the same record shown again, as bytes
    assert browser.eval("document.querySelector('#messages tr.record .val').textContent").startswith(
        '7b 22 69 64 22 3a 20 37 37 37 2c')  # {"id": 777,
    browser.fill("decode", "json")
    shot(browser, "search")


def test_produce_a_message_and_see_it_arrive_in_the_live_tail(broker, browser):
    browser.goto(broker.console_url + f"#/topic/{TOPIC}/messages")
    browser.wait("document.body.dataset.browsed")
    browser.click("tail-toggle")
    browser.wait("document.getElementById('messages-info').textContent.startsWith('tailing')")
    # the tail's first answer (the end offsets it reads from) before the record is produced: produced earlier,
    # the record is below those ends and never shown
    assert json.loads(browser.wait("document.body.dataset.tailPositions")) == {"0": RECORDS}
    browser.fill("produce-key", "hello-key")
    browser.fill("produce-value", '{"hello": "console"}')
    browser.fill("produce-headers", "trace=abc")
    browser.click("produce-run")
    result = browser.wait("(t => t.startsWith('produced') && t)(document.getElementById('produce-result').textContent)")
    assert result == f"produced to partition 0 at offset {RECORDS}"
    arrived = browser.wait("(r => r && [r.dataset.offset, r.querySelector('.val summary').textContent, "
                           "r.lastElementChild.textContent])(document.querySelector('#messages tr.record.new'))")
    assert arrived == [str(RECORDS), '{"hello":"console"}', "trace=abc"]
    shot(browser, "tail")
    browser.click("tail-toggle")

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "reader", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, RECORDS)])
    try:
        deadline = time.monotonic() + 30
        m = None
        while (m is None or m.error() is not None) and time.monotonic() < deadline:
            m = consumer.poll(1)
        assert m is not None and m.error() is None
        assert (m.key(), m.value(), m.headers()) == (b"hello-key", b'{"hello": "console"}', [("trace", b"abc")])
    finally:
        consumer.close()
    assert "console write by User:ANONYMOUS: produce to orders-0: done" in broker.log()


def test_schema_registry_framed_values_show_their_schema_id(broker, browser):
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("framed", b"\x00\x00\x00\x00\x07" + b'{"sku": "A-1"}')  # JSON Schema, schema id 7
    producer.produce("framed", b"\x00\x00\x00\x00\x09" + b"\x02\x06abc")  # Avro: bytes without the registry
    producer.produce("framed", b'{"id": 12345678901234567891, "n": [ ]}')  # past 2^53: shown exactly
    assert producer.flush(30) == 0
    browser.eval("document.body.dataset.browsed = ''")
    browser.goto(broker.console_url + "#/topic/framed/messages")
    assert browser.wait("document.body.dataset.browsed") == "3"
    values = browser.eval("[...document.querySelectorAll('#messages tr.record .val')].map(v => v.textContent)")
    assert sorted(values) == ['schema 7 {"sku":"A-1"}{\n  "sku": "A-1"\n}', "schema 9 02 06 61 62 63",
                              '{"id":12345678901234567891,"n":[]}{\n  "id": 12345678901234567891,\n  "n": []\n}']


def test_reset_a_group_and_see_its_lag_change_then_delete_it(broker, browser):
    browser.goto(broker.console_url + f"#/group/{GROUP}?type=classic")
    lag_before = int(browser.wait("document.body.dataset.groupLag"))
    assert lag_before >= RECORDS - COMMITTED
    browser.fill("reset-topic", TOPIC)
    browser.fill("reset-to", "offset")
    browser.fill("reset-value", "100")
    browser.click("reset-preview")
    browser.wait("document.getElementById('reset-result').textContent.startsWith('preview')")
    preview = browser.eval("[...document.querySelectorAll('#reset-table tr')].slice(1).map(r => "
                           "[...r.children].map(c => c.textContent))")
    assert preview == [[TOPIC, "0", f"{COMMITTED}", "100", f"{lag_before + COMMITTED - 100:,}"]]
    assert int(browser.eval("document.body.dataset.groupLag")) == lag_before  # a preview changes nothing
    browser.click("reset-apply")
    browser.wait("document.getElementById('reset-result').textContent === 'offsets reset'")
    lag_after = int(browser.wait(f"document.body.dataset.groupLag !== '{lag_before}' && document.body.dataset.groupLag"))
    assert lag_after == lag_before + COMMITTED - 100
    assert browser.eval("document.querySelector('#group-offsets tr.offset .committed').textContent") == "100"
    shot(browser, "group")  # the preview table, and the lag chart's step up
    assert f"console write by User:ANONYMOUS: reset offsets of group {GROUP} on {TOPIC} to offset 100: done" in broker.log()

    browser.click("group-delete")  # (confirmed: the tests' window.confirm says yes)
    browser.wait(f"location.hash === '#/groups' && document.getElementById('status').textContent === 'deleted group {GROUP}'")
    browser.wait("!!document.querySelector('#group-list tr')")
    assert browser.eval(f"!!document.querySelector('#group-list tr[data-group=\"{GROUP}\"]')") is False
    assert f"console write by User:ANONYMOUS: delete group {GROUP}: done" in broker.log()


def test_edit_a_topic_config_and_see_kafkas_error_for_an_invalid_value(broker, browser):
    browser.goto(broker.console_url + f"#/topic/{TOPIC}/configs")
    browser.wait("!!document.querySelector('input.config-value[data-name=\"retention.ms\"]')")
    browser.eval("(e => { e.value = 'soon'; e.dispatchEvent(new Event('input')); })"
                 "(document.querySelector('input.config-value[data-name=\"retention.ms\"]'))")
    browser.click("configs-save")
    error = browser.wait("document.getElementById('configs-error').textContent")
    assert error == ("alter configs of orders: INVALID_CONFIG: Invalid value soon for configuration retention.ms: "
                     "Not a number of type LONG")
    shot(browser, "configs")
    browser.eval("(e => { e.value = '3600000'; e.dispatchEvent(new Event('input')); })"
                 "(document.querySelector('input.config-value[data-name=\"retention.ms\"]'))")
    browser.click("configs-save")
    browser.wait("document.getElementById('configs-result').textContent === 'saved'")
    assert browser.eval("document.querySelector('input.config-value[data-name=\"retention.ms\"]').value") == "3600000"
    assert browser.eval("document.getElementById('configs-error').textContent") == ""

    # The live-tail test produces one more record; this test may also run alone.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "workbench-watermarks"})
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    finally:
        consumer.close()
    assert end in (RECORDS, RECORDS + 1)
    browser.goto(broker.console_url + f"#/topic/{TOPIC}/partitions")
    row = browser.wait("(r => r && [...r.children].map(c => c.textContent))"
                       "(document.querySelector('#partitions tr.partition'))")
    assert row[:7] == ["0", "1", "1", "1", "0", f"{end:,}", f"{end:,}"]
    assert row[7].endswith("KiB") and row[8] == "–"  # local size; no tiered storage here
    shot(browser, "partitions")
    browser.goto(broker.console_url + "#/topics")
    browser.wait(f"!!document.querySelector('#topic-list tr[data-topic=\"{TOPIC}\"]')")
    shot(browser, "topics")


def test_create_a_tiered_topic_add_partitions_delete_records_and_delete_it(broker, browser):
    browser.goto(broker.console_url + "#/topics")
    browser.wait("document.body.dataset.view === 'topics'")
    browser.fill("create-name", "lifecycle")
    browser.fill("create-configs", "remote.storage.enable=true\nsegment.bytes=1048576\nlocal.retention.bytes=1048576")
    browser.click("create-run")
    assert browser.wait("document.getElementById('status').textContent") == "created topic lifecycle"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for _ in range(1500):  # ~1.6 MB: the closed 1-MiB segment goes to remote storage
        producer.produce("lifecycle", b"x" * 1100, partition=0)
    assert producer.flush(30) == 0

    browser.goto(broker.console_url + "#/topic/lifecycle/partitions")  # polled: the remote size appears
    row = browser.wait("(r => r && !['–', '0 B'].includes(r.children[8].textContent) && [...r.children].map(c => c.textContent))"
                       "(document.querySelector('#partitions tr.partition'))", timeout=60)
    assert row[:7] == ["0", "1", "1", "1", "0", "1,500", "1,500"], row
    assert row[7].endswith("MiB") and row[8].endswith("KiB"), row  # local and remote (one ~1 MiB segment) sizes
    shot(browser, "partitions-tiered")

    browser.goto(broker.console_url + "#/topic/lifecycle/actions")
    browser.wait("document.body.dataset.view === 'topic-actions'")
    browser.fill("partitions-count", "3")
    browser.eval("document.querySelector('#partitions-form button').click()")
    assert browser.wait("document.getElementById('status').textContent") == "lifecycle now has 3 partitions"
    browser.fill("dr-partition", "0")
    browser.fill("dr-offset", "1000")
    browser.eval("document.querySelector('#delete-records-form button').click()")
    assert browser.wait("(t => t.startsWith('log start') && t)(document.getElementById('status').textContent)") == \
        "log start offset of lifecycle-0 is now 1000"
    browser.goto(broker.console_url + "#/topic/lifecycle/partitions")
    rows = browser.wait("(rs => rs.length === 3 && rs.map(r => [...r.children].slice(0, 7).map(c => c.textContent)))"
                        "([...document.querySelectorAll('#partitions tr.partition')])")
    assert [r[4:7] for r in rows] == [["1,000", "1,500", "500"], ["0", "0", "0"], ["0", "0", "0"]]

    browser.goto(broker.console_url + "#/topic/lifecycle/actions")
    browser.wait("document.body.dataset.view === 'topic-actions'")
    browser.fill("delete-confirm", "lifecycle")
    browser.eval("document.querySelector('#delete-topic-form button').click()")
    browser.wait("location.hash === '#/topics' && document.getElementById('status').textContent === "
                 "'deleted topic lifecycle'")
    browser.wait("!!document.querySelector('#topic-list tr') && "
                 "!document.querySelector('#topic-list tr[data-topic=\"lifecycle\"]')")
    log = broker.log()
    for action in ("create topic lifecycle", "add partitions to topic lifecycle (count=3)",
                   "delete records of lifecycle-0 before offset 1000", "delete topic lifecycle"):
        assert f"console write by User:ANONYMOUS: {action}" in log, action


# -- a SASL broker with ACLs: login, and the broker's authorizer decides -------------------------------------

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_bob="bob-secret";')


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("secured"), port=0, overrides={
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",  # bound by the broker
        "sasl.enabled.mechanisms": "PLAIN", "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin", "console.listener": "127.0.0.1:0",
        "console.write.actions.enable": "true"})
    with b:
        b.start()
        producer = Producer({"bootstrap.servers": b.bootstrap})
        producer.produce("secret", b'{"pin": 1234}')
        assert producer.flush(30) == 0
        yield b


def test_a_user_without_permission_is_refused(secured, browser):
    browser.goto(secured.console_url)
    browser.wait("document.body.dataset.view === 'login'")
    browser.fill("login-user", "bob")
    browser.fill("login-password", "wrong")
    browser.click("login-run")
    assert "login refused" in browser.wait("document.getElementById('login-error').textContent")
    shot(browser, "login")
    browser.fill("login-password", "bob-secret")
    browser.click("login-run")
    browser.wait("document.body.dataset.view === 'overview' && document.body.dataset.loaded === 'true'")
    assert "User:bob" in browser.text("who")
    # bob may describe nothing: the overview lists no topic, and the topic page shows the broker's refusal
    assert browser.eval("document.querySelectorAll('#topics tr.topic').length") == 0
    browser.goto(secured.console_url + "#/topic/secret/messages")
    refused = browser.wait("document.getElementById('status').textContent")
    assert refused == "topic secret: TOPIC_AUTHORIZATION_FAILED"
    shot(browser, "refused")
    browser.goto(secured.console_url + "#/topics")
    browser.fill("create-name", "bobs-topic")
    browser.click("create-run")
    assert browser.wait("document.getElementById('status').textContent") == \
        "create topic bobs-topic: TOPIC_AUTHORIZATION_FAILED: Authorization failed."
    log = secured.log()
    assert "console write by User:bob: create topic bobs-topic" in log and "refused: create topic" in log

    browser.eval("document.getElementById('logout').click()")
    browser.wait("document.body.dataset.view === 'login'")
    browser.fill("login-user", "admin")
    browser.fill("login-password", "admin-secret")
    browser.click("login-run")
    browser.wait("document.body.dataset.view === 'overview' && "
                 "!!document.querySelector('#topics tr.topic[data-topic=\"secret\"]')")
    browser.goto(secured.console_url + "#/security")
    browser.wait("!!document.querySelector('#acls tr')")
    browser.fill("acl-principal", "User:bob")
    browser.fill("acl-name", "secret")
    browser.fill("acl-operation", "READ")
    browser.eval("document.querySelector('#acl-form button').click()")
    browser.wait("document.querySelectorAll('#acls tr').length === 2")
    assert browser.eval("[...document.querySelectorAll('#acls tr')[1].children].slice(0, 7).map(c => c.textContent)") == [
        "TOPIC", "secret", "LITERAL", "User:bob", "*", "READ", "ALLOW"]
    browser.fill("user-name", "carol")
    browser.fill("user-mechanism", "SCRAM-SHA-512")
    browser.fill("user-password", "carol-secret")
    browser.eval("document.querySelector('#user-form button').click()")
    users = browser.wait("(rs => rs.length > 1 && rs.slice(1).map(r => [...r.children].slice(0, 3).map(c => c.textContent)))"
                         "([...document.querySelectorAll('#users tr')])")
    assert users == [["carol", "SCRAM-SHA-512", "8192"]]
    shot(browser, "security")
    log = secured.log()
    assert "console write by User:admin: create ACL" in log
    assert "console write by User:admin: set SCRAM credential of carol (SCRAM-SHA-512): done" in log
