"""The registry served by the broker, driven by Confluent's own Python client: SchemaRegistryClient with the
Avro, Protobuf and JSON Schema serializers producing and consuming through the broker, the error codes the
client raises, compatibility, and ids that survive a restart (they live in the _schemas topic)."""

from __future__ import annotations

import json
import os
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from pykbroker.schema_registry.wire_format import RegisteredSchema, decode
from pykbroker.testing import BrokerProcess

USER_V1 = json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
# Adds a field with a default: BACKWARD (and FULL) compatible.
USER_V2 = json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "long"},
    {"name": "email", "type": ["null", "string"], "default": None}]})
# Adds a field without a default: not BACKWARD compatible.
USER_BAD = json.dumps({"type": "record", "name": "User", "namespace": "example", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}, {"name": "zip", "type": "string"}]})


def wait_http(url: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "/subjects", timeout=10) as answer:
                answer.read()
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("registry"), overrides={
            "schema.registry.listeners": "http://127.0.0.1:0"}) as broker:  # any free port, read back
        url = broker.schema_registry_url
        wait_http(url)
        yield broker, url


def produce_consume(bootstrap: str, topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for v in values:
        producer.produce(topic, v)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])  # no group to join: quicker
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < len(values) and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    consumer.close()
    return got


def lookup_over_rest(url: str):
    """A wire_format lookup through the REST API (the broker's in-process lookup reads the same records)."""
    def lookup(schema_id: int) -> RegisteredSchema | None:
        with urllib.request.urlopen(f"{url}/schemas/ids/{schema_id}") as answer:
            body = json.load(answer)
        refs = {r["name"]: lookup_ref(r) for r in body.get("references", [])}
        return RegisteredSchema(schema_id, body.get("schemaType", "AVRO"), body["schema"], refs)

    def lookup_ref(ref: dict) -> RegisteredSchema:
        with urllib.request.urlopen(f"{url}/subjects/{ref['subject']}/versions/{ref['version']}") as answer:
            body = json.load(answer)
        return RegisteredSchema(body["id"], body.get("schemaType", "AVRO"), body["schema"])
    return lookup


def test_avro_serializer_round_trip_and_evolution(registry):
    broker, url = registry
    client = SchemaRegistryClient({"url": url})
    topic = "users-avro"
    ctx = SerializationContext(topic, MessageField.VALUE)
    v1 = AvroSerializer(client, USER_V1)
    v2 = AvroSerializer(client, USER_V2)
    records = [v1({"name": "ada", "age": 36}, ctx), v2({"name": "bob", "age": 40, "email": "b@x"}, ctx)]
    got = produce_consume(broker.bootstrap, topic, records)
    deserializer = AvroDeserializer(client)
    assert [deserializer(v, ctx) for v in got] == [{"name": "ada", "age": 36},
                                                   {"name": "bob", "age": 40, "email": "b@x"}]
    assert client.get_versions(f"{topic}-value") == [1, 2]
    latest = client.get_latest_version(f"{topic}-value")
    assert latest.version == 2 and json.loads(latest.schema.schema_str)["fields"][2]["name"] == "email"
    # The decoder the console and Iceberg topics use reads the same bytes.
    decoded = decode(got[1], lookup_over_rest(url))
    assert decoded.value == {"name": "bob", "age": 40, "email": "b@x"} and decoded.schema_id == latest.schema_id
    # The same schema again: the same id, no new version.
    assert client.register_schema(f"{topic}-value", Schema(USER_V2, "AVRO")) == latest.schema_id
    assert client.get_versions(f"{topic}-value") == [1, 2]


def test_compatibility_and_error_codes(registry):
    _, url = registry
    client = SchemaRegistryClient({"url": url})
    subject = "compat-value"
    client.register_schema(subject, Schema(USER_V1, "AVRO"))
    with pytest.raises(SchemaRegistryError) as incompatible:
        client.register_schema(subject, Schema(USER_BAD, "AVRO"))
    assert incompatible.value.error_code == 409 and incompatible.value.http_status_code == 409
    assert client.test_compatibility(subject, Schema(USER_BAD, "AVRO")) is False
    assert client.test_compatibility(subject, Schema(USER_V2, "AVRO")) is True
    assert client.set_compatibility(subject, "NONE") == {"compatibility": "NONE"}
    assert client.get_compatibility(subject) == "NONE"
    assert client.register_schema(subject, Schema(USER_BAD, "AVRO")) > 0
    for call, code in [(lambda: client.get_version("no-such-subject", 1), 40401),
                       (lambda: client.get_version(subject, 99), 40402),
                       (lambda: client.get_schema(9999), 40403),
                       (lambda: client.register_schema(subject, Schema('{"type": "nope"}', "AVRO")), 42201),
                       (lambda: client.lookup_schema(subject, Schema(USER_V2, "AVRO")), 40403),
                       (lambda: client.set_compatibility(subject, "SIDEWAYS"), 42203)]:
        with pytest.raises(SchemaRegistryError) as err:
            call()
        assert err.value.error_code == code
    # Soft delete hides the version, a permanent delete needs a soft one first.
    assert client.delete_version(subject, 2) == 2
    assert client.get_versions(subject) == [1]
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_version(subject, 1, permanent=True)
    assert err.value.error_code == 40407
    assert client.delete_subject(subject) == [1]
    assert client.delete_subject(subject, permanent=True) == [1, 2]
    assert subject not in client.get_subjects()


def _person_message_class():
    """A Protobuf message class built at run time (no protoc here): message Person {string name = 1;
    int64 id = 2; repeated string tags = 3; Address address = 4;} with a nested Address {string city = 1;}."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    f = descriptor_pb2.FileDescriptorProto(name="person.proto", package="example", syntax="proto3")
    person = f.message_type.add(name="Person")
    T = descriptor_pb2.FieldDescriptorProto
    person.field.add(name="name", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    person.field.add(name="id", number=2, type=T.TYPE_INT64, label=T.LABEL_OPTIONAL)
    person.field.add(name="tags", number=3, type=T.TYPE_STRING, label=T.LABEL_REPEATED)
    person.field.add(name="address", number=4, type=T.TYPE_MESSAGE, label=T.LABEL_OPTIONAL,
                     type_name=".example.Person.Address")
    address = person.nested_type.add(name="Address")
    address.field.add(name="city", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    pool = descriptor_pool.Default()
    try:
        pool.Add(f)
    except TypeError:
        pass  # added by an earlier test in this process
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("example.Person"))


def test_protobuf_serializer_round_trip(registry):
    broker, url = registry
    client = SchemaRegistryClient({"url": url})
    Person = _person_message_class()
    topic = "people-proto"
    ctx = SerializationContext(topic, MessageField.VALUE)
    serializer = ProtobufSerializer(Person, client, {"use.deprecated.format": False})
    sent = Person(name="ada", id=2**40, tags=["a", "b"], address=Person.Address(city="London"))
    got = produce_consume(broker.bootstrap, topic, [serializer(sent, ctx)])
    assert ProtobufDeserializer(Person, {"use.deprecated.format": False})(got[0], ctx) == sent
    assert client.get_latest_version(f"{topic}-value").schema.schema_type == "PROTOBUF"
    decoded = decode(got[0], lookup_over_rest(url))
    assert decoded.value == {"name": "ada", "id": 2**40, "tags": ["a", "b"], "address": {"city": "London"}}


def test_json_schema_serializer_round_trip(registry):
    broker, url = registry
    client = SchemaRegistryClient({"url": url})
    schema = json.dumps({"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
                         "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
                         "required": ["id"]})
    topic = "orders-json"
    ctx = SerializationContext(topic, MessageField.VALUE)
    got = produce_consume(broker.bootstrap, topic, [JSONSerializer(schema, client)({"id": 7, "item": "tea"}, ctx)])
    assert JSONDeserializer(schema)(got[0], ctx) == {"id": 7, "item": "tea"}
    assert decode(got[0], lookup_over_rest(url)).value == {"id": 7, "item": "tea"}
    # A property changing type is not BACKWARD compatible.
    changed = json.loads(schema)
    changed["properties"]["id"] = {"type": "string"}
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(f"{topic}-value", Schema(json.dumps(changed), "JSON"))
    assert err.value.error_code == 409
    # Nor is an enum of a nested array's items losing a value; gaining one is.
    def with_lines(*statuses: str) -> Schema:
        doc = json.loads(schema)
        doc["properties"]["lines"] = {"type": "array", "items": {"type": "object", "properties": {
            "status": {"type": "string", "enum": list(statuses)}}}}
        return Schema(json.dumps(doc), "JSON")

    client.register_schema(f"{topic}-value", with_lines("open", "done"))
    with pytest.raises(SchemaRegistryError) as err:
        client.register_schema(f"{topic}-value", with_lines("open"))
    assert err.value.error_code == 409
    assert "#/properties/lines/items/properties/status: ENUM_ARRAY_NARROWED" in err.value.error_message
    assert client.register_schema(f"{topic}-value", with_lines("open", "done", "lost")) > 0


@pytest.mark.skipif(os.environ.get("PYKBROKER_ICEBERG_SLOW") != "1",
                    reason="PYKBROKER_ICEBERG_SLOW=1 (make test-iceberg-slow): restarts the broker")
def test_ids_survive_a_restart(registry):
    broker, url = registry
    client = SchemaRegistryClient({"url": url})
    schema_id = client.register_schema("restart-value", Schema(USER_V1, "AVRO"))
    client.set_compatibility(level="FULL")
    broker.restart()
    wait_http(url)
    fresh = SchemaRegistryClient({"url": url})
    assert json.loads(fresh.get_schema(schema_id).schema_str) == json.loads(USER_V1)
    assert fresh.get_compatibility() == "FULL"
    # The next id follows the ones read back from _schemas.
    other = fresh.register_schema("restart-other-value", Schema(USER_BAD, "AVRO"))
    assert other > schema_id


def test_avro_references_resolve_decode_and_protect_what_they_name(registry):
    import io

    import fastavro
    from confluent_kafka.schema_registry import SchemaReference

    _, url = registry
    client = SchemaRegistryClient({"url": url})
    address = json.dumps({"type": "record", "name": "Address", "namespace": "example",
                          "fields": [{"name": "city", "type": "string"}]})
    person = json.dumps({"type": "record", "name": "Person", "namespace": "example",
                         "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "example.Address"}]})
    client.register_schema("address-value", Schema(address, "AVRO"))
    ref = SchemaReference("example.Address", "address-value", 1)
    with pytest.raises(SchemaRegistryError) as err:  # the named type is unknown without its reference
        client.register_schema("person-value", Schema(person, "AVRO"))
    assert err.value.error_code == 42201
    person_id = client.register_schema("person-value", Schema(person, "AVRO", [ref]))
    named: dict = {}
    fastavro.parse_schema(json.loads(address), named_schemas=named)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(json.loads(person), named_schemas=named),
                               {"name": "ada", "home": {"city": "Oslo"}})
    value = b"\x00" + person_id.to_bytes(4, "big") + out.getvalue()
    assert decode(value, lookup_over_rest(url)).value == {"name": "ada", "home": {"city": "Oslo"}}
    with urllib.request.urlopen(f"{url}/subjects/address-value/versions/1/referencedby") as answer:
        assert json.load(answer) == [person_id]
    with pytest.raises(SchemaRegistryError) as err:
        client.delete_version("address-value", 1)
    assert err.value.error_code == 42206
