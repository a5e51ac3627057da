"""value_schema_id_prefix mode's columns: the top-level fields of a registered schema, typed as value_schema mode
types them (the broker test is in test_writer.py, on its shared broker)."""

from __future__ import annotations

import json

from pykbroker.iceberg.registry_values import columns_of
from pykbroker.schema_registry.wire_format import RegisteredSchema


def test_columns_of_avro_fields():
    schema = RegisteredSchema(1, "AVRO", json.dumps({"type": "record", "name": "R", "fields": [
        {"name": "offset", "type": "long"}, {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "when", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None}, {"name": "raw", "type": "bytes"}]}))
    assert columns_of(schema, [0]) == [("value_offset", "integer"), ("tags", "array"), ("when", "string"),
                                       ("note", "string"), ("raw", "bytes")]
