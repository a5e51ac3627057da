"""value_schema_id_prefix mode on a real broker with its schema registry: values Confluent's Avro and Protobuf
serializers wrote become the columns of their schema, a second schema version adds a column, and what does
not decode goes to the dead-letter table with the reason; pyiceberg reads exactly the records."""

from __future__ import annotations

import json

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from pykbroker.iceberg.registry_values import columns_of
from pykbroker.schema_registry.wire_format import RegisteredSchema
from pykbroker.testing import BrokerProcess, free_port
from tests.pykbroker.iceberg.test_writer import catalog, create, table_rows, wait_rows
from tests.pykbroker.schema_registry.test_serializers import (
    USER_V1,
    USER_V2,
    _person_message_class,
    wait_http,
)

MODE = {"iceberg.mode": "value_schema_id_prefix", "iceberg.commit.interval.ms": "200"}


def test_columns_of_avro_fields():
    schema = RegisteredSchema(1, "AVRO", json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "offset", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None}, {"name": "raw", "type": "bytes"}]}))
    assert columns_of(schema, [0]) == [("value_offset", "integer"), ("tags", "array"), ("when", "string"),
                                       ("note", "string"), ("raw", "bytes")]


def test_avro_and_protobuf_values_become_columns(tmp_path):
    port = free_port()
    with BrokerProcess(tmp_path, overrides={"schema.registry.listeners": f"http://127.0.0.1:{port}"}) as broker:
        url = f"http://127.0.0.1:{port}"
        wait_http(url)
        client = SchemaRegistryClient({"url": url})
        create(broker, "users", 1, **MODE)
        create(broker, "people", 1, **MODE)
        ctx = SerializationContext("users", MessageField.VALUE)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        producer.produce("users", AvroSerializer(client, USER_V1)({"name": "ada", "age": 36}, ctx))
        producer.produce("users", b"\x00\x00\x00\x03\xe7 no such schema id")
        producer.produce("users", b"plain text")
        producer.flush(10)
        rows = wait_rows(tmp_path, "users", 1)
        assert [(r["offset"], r["name"], r["age"]) for r in rows] == [(0, "ada", 36)]
        # The second version (a field added, int promoted to long) adds a column.
        producer.produce("users", AvroSerializer(client, USER_V2)({"name": "bob", "age": 40, "email": "b@x"}, ctx))
        Person = _person_message_class()
        serializer = ProtobufSerializer(Person, client, {"use.deprecated.format": False})
        producer.produce("people", serializer(Person(name="cy", id=2**40, tags=["t"], address=Person.Address(
            city="Oslo")), SerializationContext("people", MessageField.VALUE)))
        producer.flush(10)
        rows = wait_rows(tmp_path, "users", 2)
        assert [(r["offset"], r["name"], r["age"], r["email"]) for r in rows] == [
            (0, "ada", 36, None), (3, "bob", 40, "b@x")]
        assert [f.name for f in catalog(tmp_path).load_table(("kafka", "users")).schema().fields] == [
            "partition", "offset", "timestamp", "key", "headers", "name", "age", "email"]
        dead = sorted(table_rows(tmp_path, "users~dlq"), key=lambda r: r["offset"])
        assert [r["offset"] for r in dead] == [1, 2]
        assert "schema id 999 is not registered" in dead[0]["error"]
        assert "not Confluent's wire format" in dead[1]["error"]
        people = wait_rows(tmp_path, "people", 1)
        assert [(r["name"], r["id"], r["tags"], r["address"]) for r in people] == [
            ("cy", 2**40, '["t"]', '{"city":"Oslo"}')]
        assert "table kafka.users evolved: added email" in broker.log()
