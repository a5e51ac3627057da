"""value_schema_id_prefix mode: values in Confluent's wire format decoded with the schema registry's schemas.

A value's schema id (``schema_registry.wire_format``) names its schema; the table's value columns are the
top-level fields of that schema (an Avro record's fields, a Protobuf message's fields, a JSON Schema's
properties), typed as value_schema mode types them (``integer``, ``number``, ``string``, ``boolean``,
``bytes``; records, messages, maps, arrays and unions of several types as JSON text). A field of a newer schema
version adds a column. A field named like a coordinate column (partition, offset, timestamp, key, headers)
becomes ``value_<name>``. A value that is not in the wire format, names a schema the registry does not have,
does not decode, or has a field whose type differs from the table's column is a dead letter, with the reason.

value_schema_latest mode (``LatestSchema``): values carry no prefix; each decodes with the latest schema of the
topic's subject (for Protobuf as the message ``protobuf_name`` names, by default the file's first); a subject
with no schema, or a value that does not decode with it, is a dead letter.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pykbroker.schema_registry.wire_format import (
    RegisteredSchema,
    WireFormatError,
    decode,
    decode_header,
    decode_payload,
    message_indexes_of,
)

__all__ = ["Column", "DecodedValue", "LatestSchema", "RegistrySchemas", "columns_of", "decode_registry_value",
           "schema_ids"]

Column = tuple[str, str]  # (column name, value_schema mode type)
DecodedValue = tuple[dict[str, Any], list[Column]]



@dataclass(frozen=True)
class LatestSchema:
    """value_schema_latest: the latest schema of ``subject`` when the commit started (None: it has none)."""

    subject: str
    schema: RegisteredSchema | None
    protobuf_name: str = ""


#: What decodes a commit's values: the registry's schemas by id (value_schema_id_prefix) or the latest one.
RegistrySchemas = Mapping[int, RegisteredSchema] | LatestSchema

_COORDINATES = ("partition", "offset", "timestamp", "key", "headers")
_AVRO = {"boolean": "boolean", "int": "integer", "long": "integer", "float": "number", "double": "number",
         "string": "string", "bytes": "bytes", "fixed": "bytes", "enum": "string", "record": "object",
         "array": "array", "map": "object", "null": "string"}
_JSON = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean", "object": "object",
         "array": "array"}


def schema_ids(values: Iterable[bytes | None]) -> set[int]:
    """The schema ids the values name (values not in the wire format are left out)."""
    ids = set()
    for value in values:
        if value is not None:
            try:
                ids.add(decode_header(value)[0])
            except WireFormatError:
                pass
    return ids


def _column_name(name: str) -> str:
    return f"value_{name}" if name in _COORDINATES else name


def _avro_kind(t: Any) -> str:
    if isinstance(t, list):
        branches = [b for b in t if b != "null" and not (isinstance(b, dict) and b.get("type") == "null")]
        return _avro_kind(branches[0]) if len(branches) == 1 else "object"
    if isinstance(t, dict):
        if "logicalType" in t:
            return "string"  # dates, times, timestamps, decimals, uuids: their ISO / decimal text
        inner = t.get("type")
        return _avro_kind(inner) if isinstance(inner, (dict, list)) else _AVRO.get(str(inner), "object")
    return _AVRO.get(str(t), "object")  # a named type defined earlier: a record, enum or fixed


def _proto_kind(f: Any) -> str:
    from google.protobuf.descriptor import FieldDescriptor as F

    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        return "object"
    if getattr(f, "is_repeated", None) or getattr(f, "label", None) == F.LABEL_REPEATED:
        return "array"
    if f.type in (F.TYPE_DOUBLE, F.TYPE_FLOAT):
        return "number"
    if f.type == F.TYPE_BOOL:
        return "boolean"
    if f.type in (F.TYPE_STRING, F.TYPE_ENUM):
        return "string"
    if f.type == F.TYPE_BYTES:
        return "bytes"
    if f.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return "object"
    return "integer"


def columns_of(schema: RegisteredSchema, message_indexes: list[int]) -> list[Column]:
    """The value columns of ``schema`` (for Protobuf, of the message ``message_indexes`` names)."""
    if schema.schema_type == "AVRO":
        doc = json.loads(schema.schema)
        if not isinstance(doc, dict) or doc.get("type") != "record":
            raise WireFormatError(f"schema {schema.schema_id} is not an Avro record: no fields for columns")
        return [(_column_name(f["name"]), _avro_kind(f["type"])) for f in doc["fields"]]
    if schema.schema_type == "PROTOBUF":
        from pykbroker.schema_registry.wire_format import message_descriptor

        return [(_column_name(f.name), _proto_kind(f)) for f in message_descriptor(schema, message_indexes).fields]
    doc = json.loads(schema.schema)
    props = doc.get("properties") if isinstance(doc, dict) else None
    if not isinstance(props, dict):
        raise WireFormatError(f"schema {schema.schema_id} is not a JSON Schema object with properties")
    out = []
    for name, prop in props.items():
        t = prop.get("type") if isinstance(prop, dict) else None
        if isinstance(t, list):
            t = next((x for x in t if x != "null"), None)
        out.append((_column_name(name), _JSON.get(str(t), "object")))
    return out


def _bytes_default(item: Any) -> Any:
    """Nested values JSON has no type for: bytes as base64, dates and times in ISO form, the rest as text."""
    if isinstance(item, bytes):
        return base64.b64encode(item).decode()
    if isinstance(item, datetime.date | datetime.time):
        return item.isoformat()
    return str(item)


def _cell(kind: str, item: Any) -> Any:
    """``item`` as the column of ``kind`` stores it; ValueError when it is not of that kind."""
    if item is None:
        return None
    if kind in ("object", "array"):
        return json.dumps(item, separators=(",", ":"), default=_bytes_default)
    if kind == "integer" and isinstance(item, int) and not isinstance(item, bool):
        return item
    if kind == "number" and isinstance(item, int | float) and not isinstance(item, bool):
        return float(item)
    if kind == "string" and isinstance(item, str):
        return item
    if kind == "string" and isinstance(item, datetime.date | datetime.time):
        return item.isoformat()
    if kind == "string" and isinstance(item, decimal.Decimal | uuid.UUID):
        return str(item)
    if kind == "boolean" and isinstance(item, bool):
        return item
    if kind == "bytes" and isinstance(item, bytes):
        return item
    raise ValueError(f"{json.dumps(item, default=_bytes_default)[:64]} is not of type {kind}")


def decode_registry_value(value: bytes | None, schemas: RegistrySchemas) -> tuple[DecodedValue | None, str | None]:
    """((column values, the schema's columns), None), or (None, why it is a dead letter)."""
    if value is None:
        return None, "null value (a tombstone) has no columns"
    try:
        if isinstance(schemas, LatestSchema):
            if schemas.schema is None:
                return None, f"subject {schemas.subject!r} has no schema registered (value_schema_latest)"
            indexes = message_indexes_of(schemas.schema, schemas.protobuf_name) \
                if schemas.schema.schema_type == "PROTOBUF" else []
            decoded = decode_payload(value, schemas.schema, indexes)
        else:
            decoded = decode(value, schemas.get)
        columns = columns_of(decoded.schema, decoded.message_indexes)
    except WireFormatError as exc:
        return None, str(exc)
    if not isinstance(decoded.value, dict):
        return None, f"schema {decoded.schema_id} decodes to {type(decoded.value).__name__}, not fields"
    by_column = {_column_name(k): v for k, v in decoded.value.items()}
    out = {}
    for name, kind in columns:
        try:
            out[name] = _cell(kind, by_column.get(name))
        except ValueError as exc:
            return None, f"field {name!r}: {exc}"
    return (out, columns), None
