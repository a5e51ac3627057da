"""Confluent's wire format, decoded with the registry's schemas: what a record value written by Confluent's
serializers (Avro, Protobuf, JSON Schema) holds, as Python values. The console and Iceberg topics import this.

The format: magic byte 0, the schema id (4 bytes, big-endian), then for Protobuf the message indexes (a
zigzag varint count and that many zigzag varints: the path to the message type in the file; a single 0 byte
is [0], the first message), then the payload: Avro binary, Protobuf binary, or JSON text.

``decode(value, lookup)``: ``lookup(schema_id)`` gives the registered schema (``RegisteredSchema``: type, text
and its resolved references); the answer is ``Decoded(schema_id, schema, value)``. A value that is not in the
format, names an unknown id or does not decode raises ``WireFormatError`` saying why.

Inside the broker, ``broker.schema_registry_for_decoding()`` is a ``schema_registry.SchemaRegistry`` (served or
not): its ``lookup`` is such a function, and ``await registry.refresh()`` reads ``_schemas`` on after a miss
(on the event loop; ``decode`` itself may run on any thread once the schemas are looked up).
"""

from __future__ import annotations

import base64
import io
import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Decoded", "MAGIC_BYTE", "RegisteredSchema", "WireFormatError", "decode", "decode_header",
           "decode_payload", "message_class", "message_descriptor", "message_indexes_of"]

MAGIC_BYTE = 0
_HEADER = struct.Struct(">bI")


class WireFormatError(ValueError):
    """The bytes are not a value Confluent's serializers wrote with a schema known here."""


@dataclass
class RegisteredSchema:
    """A schema as the decoder needs it: type, text, and the referenced schemas by reference name."""

    schema_id: int
    schema_type: str  # AVRO, PROTOBUF, JSON
    schema: str
    references: dict[str, RegisteredSchema] = field(default_factory=dict)
    _compiled: Any = None

    def compiled(self) -> Any:
        """The parsed form the decoder uses (cached): a fastavro schema, the Protobuf file's top-level message
        descriptors, or the JSON Schema document."""
        if self._compiled is None:
            if self.schema_type == "AVRO":
                import fastavro

                named: dict[str, Any] = {}
                for ref in _flatten(self):
                    fastavro.parse_schema(json.loads(ref.schema), named_schemas=named)
                self._compiled = fastavro.parse_schema(json.loads(self.schema), named_schemas=named)
            elif self.schema_type == "PROTOBUF":
                self._compiled = _protobuf_file(self)
            else:
                self._compiled = json.loads(self.schema)
        return self._compiled


@dataclass
class Decoded:
    schema_id: int
    schema: RegisteredSchema
    value: Any
    message_indexes: list[int] = field(default_factory=list)


def decode_header(value: bytes) -> tuple[int, int]:
    """(schema id, where the rest starts); WireFormatError when ``value`` has no Confluent header."""
    if len(value) < _HEADER.size or value[0] != MAGIC_BYTE:
        raise WireFormatError("not Confluent's wire format: no magic byte 0 and 4-byte schema id")
    return _HEADER.unpack_from(value)[1], _HEADER.size


def decode(value: bytes, lookup: Callable[[int], RegisteredSchema | None]) -> Decoded:
    """The Python value of a Confluent-serialized ``value``: Avro as fastavro reads it (dicts, lists, ...),
    Protobuf as a dict of field names (every field, nested messages as dicts, int64 as int), JSON parsed."""
    schema_id, pos = decode_header(value)
    schema = lookup(schema_id)
    if schema is None:
        raise WireFormatError(f"schema id {schema_id} is not registered")
    indexes: list[int] = []
    if schema.schema_type == "PROTOBUF":
        indexes, pos = _message_indexes(value, pos)
    return decode_payload(value[pos:], schema, indexes)


def decode_payload(payload: bytes, schema: RegisteredSchema, message_indexes: list[int]) -> Decoded:
    """``payload`` (the bytes after the wire format's prefix, or a whole unprefixed value) decoded with ``schema``
    (for Protobuf, as the message ``message_indexes`` names)."""
    try:
        if schema.schema_type == "AVRO":
            import fastavro

            return Decoded(schema.schema_id, schema,
                           fastavro.schemaless_reader(io.BytesIO(payload), schema.compiled(), None))
        if schema.schema_type == "PROTOBUF":
            message = message_class(schema, message_indexes)()
            message.ParseFromString(payload)
            return Decoded(schema.schema_id, schema, _message_to_dict(message), message_indexes)
        return Decoded(schema.schema_id, schema, json.loads(payload))
    except WireFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - each decoder raises its own types for bad bytes
        raise WireFormatError(f"value does not decode with schema {schema.schema_id} ({schema.schema_type}): "
                              f"{type(exc).__name__}: {exc}") from None


def _zigzag(value: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(value) or shift > 63:
            raise WireFormatError("truncated Protobuf message indexes")
        b = value[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos


def _message_indexes(value: bytes, pos: int) -> tuple[list[int], int]:
    count, pos = _zigzag(value, pos)
    if count == 0:
        return [0], pos
    if not 0 < count <= 100:
        raise WireFormatError(f"bad Protobuf message index count {count}")
    indexes = []
    for _ in range(count):
        index, pos = _zigzag(value, pos)
        indexes.append(index)
    return indexes, pos


# -- Protobuf --------------------------------------------------------------------------------------------

def _flatten(schema: RegisteredSchema) -> list[RegisteredSchema]:
    """Referenced schemas, dependencies first."""
    out: list[RegisteredSchema] = []
    for ref in schema.references.values():
        for s in [*_flatten(ref), ref]:
            if all(s is not o for o in out):
                out.append(s)
    return out


def _file_proto(schema: RegisteredSchema, name: str) -> Any:
    from google.protobuf import descriptor_pb2

    text = schema.schema.strip()
    if "{" in text:  # .proto source, as Confluent's Java serializers register it
        from pykbroker.schema_registry.proto_text import parse_proto

        proto = parse_proto(text)
    else:
        proto = descriptor_pb2.FileDescriptorProto()
        proto.ParseFromString(base64.b64decode(text))
    if not proto.name:
        proto.name = name
    return proto


def _protobuf_file(schema: RegisteredSchema) -> Any:
    from google.protobuf import (  # noqa: F401 - the well-known types, for files importing them
        any_pb2,
        descriptor_pool,
        duration_pb2,
        empty_pb2,
        struct_pb2,
        timestamp_pb2,
        wrappers_pb2,
    )

    pool = descriptor_pool.DescriptorPool()
    for module in (any_pb2, duration_pb2, empty_pb2, struct_pb2, timestamp_pb2, wrappers_pb2):
        pool.AddSerializedFile(module.DESCRIPTOR.serialized_pb)
    for name, ref in _named_refs(schema):
        proto = _file_proto(ref, name)
        try:
            pool.Add(proto)
        except TypeError:
            pass  # a well-known file already in the pool
    main = _file_proto(schema, f"schema-{schema.schema_id}.proto")
    pool.Add(main)
    package = f"{main.package}." if main.package else ""
    return [pool.FindMessageTypeByName(package + m.name) for m in main.message_type]


def _named_refs(schema: RegisteredSchema) -> list[tuple[str, RegisteredSchema]]:
    out: list[tuple[str, RegisteredSchema]] = []
    for name, ref in schema.references.items():
        for pair in [*_named_refs(ref), (name, ref)]:
            if all(pair[0] != o[0] for o in out):
                out.append(pair)
    return out


def message_descriptor(schema: RegisteredSchema, indexes: list[int]) -> Any:
    """The message type ``indexes`` names in the file of ``schema`` (a protobuf Descriptor)."""
    messages = list(schema.compiled())
    descriptor = None
    for index in indexes:
        if not 0 <= index < len(messages):
            raise WireFormatError(f"message index {index} is not in schema {schema.schema_id}")
        descriptor = messages[index]
        messages = list(descriptor.nested_types)
    if descriptor is None:
        raise WireFormatError("no message index")
    return descriptor


def message_indexes_of(schema: RegisteredSchema, name: str) -> list[int]:
    """The message indexes of the message ``name`` (its full name, or its name when that is unambiguous) in the
    file of the Protobuf ``schema``; ``""``: the first message, [0]."""
    if not name:
        return [0]
    found: list[list[int]] = []

    def walk(messages: list[Any], path: list[int]) -> None:
        for i, descriptor in enumerate(messages):
            if name in (descriptor.full_name, descriptor.name):
                found.append([*path, i])
            walk(list(descriptor.nested_types), [*path, i])

    walk(list(schema.compiled()), [])
    exact = [p for p in found if message_descriptor(schema, p).full_name == name]
    if len(exact) == 1 or len(found) == 1:
        return exact[0] if exact else found[0]
    raise WireFormatError(f"schema {schema.schema_id} has {'no' if not found else 'several'} message {name!r}")


def message_class(schema: RegisteredSchema, indexes: list[int]) -> Any:
    from google.protobuf import message_factory

    return message_factory.GetMessageClass(message_descriptor(schema, indexes))


def _message_to_dict(message: Any) -> dict[str, Any]:
    """Every field of ``message`` by name (proto3 defaults included): nested messages as dicts (None when
    unset), repeated fields as lists, maps as dicts, enums by name, int64 as int, bytes as bytes."""
    return {f.name: _field_value(message, f) for f in message.DESCRIPTOR.fields}


def _field_value(message: Any, f: Any) -> Any:
    value = getattr(message, f.name)
    if f.message_type is not None and f.message_type.GetOptions().map_entry:
        value_field = f.message_type.fields_by_name["value"]
        return {k: _single(v, value_field) for k, v in value.items()}
    if _is_repeated(f):
        return [_single(v, f) for v in value]
    if f.message_type is not None and not message.HasField(f.name):
        return None
    return _single(value, f)


def _is_repeated(f: Any) -> bool:
    is_repeated = getattr(f, "is_repeated", None)
    return bool(is_repeated) if is_repeated is not None else f.label == f.LABEL_REPEATED


def _single(value: Any, f: Any) -> Any:
    if f.message_type is not None:
        return _message_to_dict(value)
    if f.enum_type is not None:
        found = f.enum_type.values_by_number.get(value)
        return found.name if found is not None else value
    return value
