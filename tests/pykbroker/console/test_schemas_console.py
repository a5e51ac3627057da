"""Values decoded through a Confluent-compatible schema registry in the message browser, in a real headless
Chromium: Confluent's own Avro, Protobuf and JSON Schema serializers (confluent-kafka) write through the
broker's registry (``schema.registry.listeners``); the console (no ``console.schema.registry.url``: the
broker's own registry) shows each value as the JSON of its decoded record with its schema id and type, and a
framed value whose id is not registered says why it is not decoded. With ``console.schema.registry.url`` set
(any Confluent-compatible registry over its REST API; here the broker's own) the same values decode, in
``make test-console-slow``.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import time
import urllib.request

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from pykbroker.testing import BrokerProcess, free_port
from tests.pykbroker.console.browser import Browser
from tests.pykbroker.console.test_workbench import shot
from tests.pykbroker.schema_registry.test_serializers import _person_message_class, wait_http

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None,
                                reason="chromium is installed by `make test` (tools/install_system_deps.sh)")
TOPIC = "registered"
USER = json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}, {"name": "avatar", "type": "bytes"}]})
ORDER = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}}, "required": ["id"]})


def start(tmp_path, *, url_setting: bool) -> tuple[BrokerProcess, str, str]:
    registry_port = free_port()
    registry = f"http://127.0.0.1:{registry_port}"
    overrides = {"schema.registry.listeners": registry, "console.listener": "127.0.0.1:0"}
    if url_setting:
        overrides["console.schema.registry.url"] = registry
    broker = BrokerProcess(tmp_path / "broker", overrides=overrides)
    broker.start()
    wait_http(registry)
    return broker, registry, broker.console_url


def produce_serialized(bootstrap: str, registry: str) -> None:
    client = SchemaRegistryClient({"url": registry})
    person = _person_message_class()
    values = [  # each its own subject (users-value, ...), all written to one topic
        AvroSerializer(client, USER)({"name": "ada", "age": 36, "avatar": b"\x01\xff"},
                                     SerializationContext("users", MessageField.VALUE)),
        ProtobufSerializer(person, client, {"use.deprecated.format": False})(
            person(name="grace", id=2**60 + 1, tags=["a"], address=person.Address(city="Arlington")),
            SerializationContext("people", MessageField.VALUE)),
        JSONSerializer(ORDER, client)({"id": 7, "item": "tea"}, SerializationContext("orders", MessageField.VALUE)),
        b"\x00\x00\x00\x03\xe7" + b"\x02",  # framed, but schema id 999 is not registered
    ]
    key = AvroSerializer(client, '"string"')("order-7", SerializationContext("orders", MessageField.KEY))
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, v in enumerate(values):
        producer.produce(TOPIC, v, key=key if i == 2 else b"\x00\x00\x00\x00\x00\x00\x00\x01", partition=0)
    assert producer.flush(30) == 0


def search(url: str, needle: str) -> list[dict]:
    """The matches of the console's filter for ``needle`` over the topic, once its search is done."""
    with urllib.request.urlopen(urllib.request.Request(url + "api/search", data=json.dumps(
            {"topic": TOPIC, "filter": needle}).encode(), headers={"Content-Type": "application/json"})) as r:
        r.read()
    deadline = time.monotonic() + 30
    while not (p := json.loads(urllib.request.urlopen(url + "api/search").read()))["done"]:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert p["error"] is None and p["scanned"] == 4, p
    return p["matches"]


def decoded_values(browser: Browser, url: str) -> list[list[str]]:
    browser.eval("document.body && (document.body.dataset.browsed = '')")
    browser.goto(url + f"#/topic/{TOPIC}/messages")
    assert browser.wait("document.body.dataset.browsed") == "4"
    return browser.eval("[...document.querySelectorAll('#messages tr.record')].reverse().map(r => [r.querySelector('.val'), "
                        "r.querySelector('.key')]).map(([v, k]) => [(v.querySelector('.tag') || {}).textContent, "
                        "(v.querySelector('summary') || v).textContent, k.textContent])")


def check(values: list[list[str]]) -> None:
    avro, proto, js, unknown = values
    assert avro[0].startswith("schema ") and avro[0].endswith(" AVRO"), avro
    assert avro[1].endswith('{"name":"ada","age":36,"avatar":"01ff"}'), avro
    assert proto[0].endswith(" PROTOBUF") and proto[1].endswith(
        '{"name":"grace","id":1152921504606846977,"tags":["a"],"address":{"city":"Arlington"}}'), proto  # exact int64
    assert js[0].endswith(" JSON") and js[1].endswith('{"id":7,"item":"tea"}'), js
    assert js[2].startswith("schema ") and ' AVRO "order-7"' in js[2], js  # a registered key decodes too
    assert avro[2].endswith("\x01") and "schema" not in avro[2], avro  # a binary key, no registered schema: as it is
    assert unknown[0] == "not decoded" and "schema id 999 is not registered" in unknown[1], unknown


def test_values_decoded_with_the_brokers_own_registry(tmp_path):
    broker, registry, url = start(tmp_path, url_setting=False)
    with broker, Browser(tmp_path / "chromium") as browser:
        produce_serialized(broker.bootstrap, registry)
        check(decoded_values(browser, url))
        shot(browser, "messages-schema-registry")
        # the search answers decoded matches too
        with urllib.request.urlopen(urllib.request.Request(url + "api/search", data=json.dumps(
                {"topic": TOPIC, "filter": "grace"}).encode(), headers={"Content-Type": "application/json"})) as r:
            r.read()
        deadline = time.monotonic() + 30
        while not (p := json.loads(urllib.request.urlopen(url + "api/search").read()))["done"]:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        [match] = p["matches"]
        assert match["decoded"]["value"]["name"] == "grace" and match["decoded"]["schema_type"] == "PROTOBUF"
        # the filter matches the JSON text of decoded values, not only their bytes: neither needle is in any
        # record's bytes (Avro's int 36 is the byte 0x48; Protobuf's id a varint), both in a decoded value
        for needle, expected in [('"age": 36', "AVRO"), ('"id":1152921504606846977', "PROTOBUF"),
                                 ('"order-7"', "JSON")]:
            [match] = search(url, needle)
            assert match["decoded"]["schema_type"] == expected, (needle, match)
        assert search(url, '"age": 37') == []
        # 40 binary keys that only look framed (a zero byte first) name 40 "ids": only the 16 most frequent are
        # looked up, so a page of them costs the registry little
        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i in range(40):
            producer.produce("binary-keys", b"v", key=b"\x00" + struct.pack(">I", 1000 + i), partition=0)
        assert producer.flush(30) == 0
        d = json.loads(urllib.request.urlopen(url + "api/messages?topic=binary-keys&limit=100").read())
        errors = [r["key_decode_error"] for r in d["records"]]
        assert sum(e.startswith("not looked up: more than 16 schema ids") for e in errors) == 24, errors
        assert sum(e.endswith("is not registered") for e in errors) == 16, errors


@pytest.mark.skipif(os.environ.get("PYKBROKER_CONSOLE_SLOW") != "1",
                    reason="slow: PYKBROKER_CONSOLE_SLOW=1 (make test-console-slow)")
def test_values_decoded_with_a_registry_named_by_console_schema_registry_url(tmp_path):
    broker, registry, url = start(tmp_path, url_setting=True)
    with broker, Browser(tmp_path / "chromium") as browser:
        produce_serialized(broker.bootstrap, registry)
        check(decoded_values(browser, url))
