"""value_schema_id_prefix mode's columns: the top-level fields of a registered schema, typed as value_schema mode
types them (the broker test is in test_writer.py, on its shared broker)."""

from __future__ import annotations

import base64
import json

from pykbroker.iceberg.registry_values import LatestSchema, columns_of, decode_registry_value
from pykbroker.schema_registry.wire_format import RegisteredSchema


def test_columns_of_avro_fields():
    schema = RegisteredSchema(1, "AVRO", json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "offset", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None}, {"name": "raw", "type": "bytes"}]}))
    assert columns_of(schema, [0]) == [("value_offset", "integer"), ("tags", "array"), ("when", "string"),
                                       ("note", "string"), ("raw", "bytes")]


def test_latest_schema_decodes_unprefixed_protobuf_as_the_named_message():
    """value_schema_latest: a value without the wire format's prefix, as the message protobuf_name names (the
    file's first by default); a subject without a schema or a value that does not decode is a dead letter."""
    from tests.pykbroker.schema_registry.test_serializers import _person_message_class

    Person = _person_message_class()
    file_proto = Person.DESCRIPTOR.file.serialized_pb
    schema = RegisteredSchema(7, "PROTOBUF", base64.b64encode(file_proto).decode())
    person = Person(name="cy", id=5, address=Person.Address(city="Oslo")).SerializeToString()
    decoded, error = decode_registry_value(person, LatestSchema("people-value", schema))
    assert error is None and decoded is not None
    assert decoded[0] == {"name": "cy", "id": 5, "tags": "[]", "address": '{"city":"Oslo"}'}
    address = Person.Address(city="Rome").SerializeToString()
    for name in ("example.Person.Address", "Address"):
        decoded, error = decode_registry_value(address, LatestSchema("s", schema, name))
        assert error is None and decoded is not None and decoded[0] == {"city": "Rome"}
    assert decode_registry_value(address, LatestSchema("s", schema, "Nope"))[1] == \
        "schema 7 has no message 'Nope'"
    assert "subject 'gone-value' has no schema registered" in str(
        decode_registry_value(person, LatestSchema("gone-value", None))[1])
    avro = RegisteredSchema(8, "AVRO", json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "n", "type": "long"}]}))
    assert "does not decode with schema 8 (AVRO)" in str(decode_registry_value(b"", LatestSchema("s", avro))[1])
