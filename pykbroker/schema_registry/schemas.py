"""Schemas the registry accepts, per type (AVRO, JSON, PROTOBUF, Confluent's names): parsing (a schema that
does not parse is refused with 42201, as Confluent does), the canonical text two registrations are compared by,
and the compatibility checks BACKWARD / FORWARD / FULL (and their _TRANSITIVE forms) between two versions.

Avro is parsed by fastavro (named types from references resolved first); JSON Schema is a JSON document;
Protobuf is what Confluent's clients register: the base64 of a serialized ``FileDescriptorProto`` (the Python
serializer's form), or ``.proto`` text (the Java serializer's; read by ``proto_text``).
The checks follow the reader/writer rules of each format, as far as clients depend on them: Avro's schema
resolution (fields added need a default, promotions int->long->float->double, string<->bytes, enum symbols,
unions, arrays and maps recursively); JSON: a property's type may not change and a reader may not require a
property the writer lacks; Protobuf: a field number may not change type and a message may not disappear.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["COMPATIBILITY_LEVELS", "InvalidSchemaError", "ParsedSchema", "SchemaReference", "compatibility_errors",
           "parse_schema", "SCHEMA_TYPES"]

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
COMPATIBILITY_LEVELS = ("NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
                        "FULL_TRANSITIVE")


class InvalidSchemaError(ValueError):
    """The schema text does not parse as its type (Confluent's 42201)."""


@dataclass(frozen=True)
class SchemaReference:
    """A named reference to another subject's version (an Avro named type, an imported .proto file)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass
class ParsedSchema:
    """A schema as registered: its type, text, references and the parsed form the checks use."""

    schema_type: str
    schema: str
    references: list[SchemaReference] = field(default_factory=list)
    parsed: Any = None

    def canonical(self) -> str:
        """The text two registrations of the same schema share (JSON re-serialized compactly, sorted keys)."""
        if self.schema_type in ("AVRO", "JSON"):
            return json.dumps(json.loads(self.schema), sort_keys=True, separators=(",", ":"))
        return self.schema.strip()


def parse_schema(schema_type: str, text: str, references: list[SchemaReference],
                 resolved: dict[str, ParsedSchema]) -> ParsedSchema:
    """Parse ``text`` as ``schema_type``; ``resolved`` maps each reference's name to its schema.
    InvalidSchemaError when it does not parse."""
    if schema_type == "AVRO":
        parsed = _parse_avro(text, resolved)
    elif schema_type == "JSON":
        try:
            parsed = json.loads(text)
        except ValueError as exc:
            raise InvalidSchemaError(f"Invalid schema {text!r}: not JSON ({exc})") from None
        if not isinstance(parsed, (dict, bool)):
            raise InvalidSchemaError(f"Invalid schema {text!r}: a JSON Schema is an object or a boolean")
    elif schema_type == "PROTOBUF":
        parsed = parse_protobuf(text)
    else:
        raise InvalidSchemaError(f"Unknown schema type {schema_type!r}: one of {', '.join(SCHEMA_TYPES)}")
    return ParsedSchema(schema_type, text, list(references), parsed)


def _parse_avro(text: str, resolved: dict[str, ParsedSchema]) -> Any:
    import fastavro

    try:
        document = json.loads(text)
    except ValueError:
        document = text.strip()  # a bare name: "string"
        if not document.replace(".", "").replace("_", "").isalnum():
            raise InvalidSchemaError(f"Invalid schema {text!r}: not JSON") from None
    named: dict[str, Any] = {}
    try:
        for ref in resolved.values():
            if ref.schema_type == "AVRO":
                fastavro.parse_schema(ref.parsed, named_schemas=named)
        return fastavro.parse_schema(document, named_schemas=named, _write_hint=False)
    except Exception as exc:  # noqa: BLE001 - fastavro raises several types for a bad schema
        raise InvalidSchemaError(f"Invalid schema {text!r}: {exc}") from None


def parse_protobuf(text: str) -> Any:
    """The ``FileDescriptorProto`` of the base64 form (Python serializers) or of ``.proto`` source (Java ones)."""
    stripped = text.strip()
    if "{" in stripped:
        from pykbroker.schema_registry.proto_text import ProtoSyntaxError, parse_proto

        try:
            return parse_proto(stripped)
        except ProtoSyntaxError as exc:
            raise InvalidSchemaError(f"Invalid schema: .proto text that does not parse ({exc})") from None
    try:
        raw = base64.b64decode(stripped, validate=True)
        from google.protobuf import descriptor_pb2

        proto = descriptor_pb2.FileDescriptorProto()
        proto.ParseFromString(raw)
        return proto
    except Exception as exc:  # noqa: BLE001 - binascii.Error, DecodeError
        raise InvalidSchemaError(f"Invalid schema: not a base64 FileDescriptorProto nor .proto text ({exc})") \
            from None


# -- compatibility -------------------------------------------------------------------------------------------

def compatibility_errors(level: str, new: ParsedSchema, previous: list[ParsedSchema]) -> list[str]:
    """Why ``new`` is not compatible with ``previous`` (oldest first) under ``level``; [] when it is."""
    if level == "NONE" or not previous:
        return []
    against = previous if level.endswith("_TRANSITIVE") else previous[-1:]
    base = level.removesuffix("_TRANSITIVE")
    errors: list[str] = []
    for old in against:
        if old.schema_type != new.schema_type:
            errors.append(f"schema type {new.schema_type} differs from {old.schema_type}")
            continue
        if base in ("BACKWARD", "FULL"):
            errors += [f"BACKWARD: {e}" for e in _reads(new, old)]
        if base in ("FORWARD", "FULL"):
            errors += [f"FORWARD: {e}" for e in _reads(old, new)]
    return errors


def _reads(reader: ParsedSchema, writer: ParsedSchema) -> list[str]:
    """Why data written with ``writer`` cannot be read with ``reader``."""
    if reader.schema_type == "AVRO":
        return _avro_reads(reader.parsed, writer.parsed, "")
    if reader.schema_type == "JSON":
        return _json_reads(reader.parsed, writer.parsed, "#")
    return _proto_reads(reader.parsed, writer.parsed)


_AVRO_PROMOTIONS = {"int": {"long", "float", "double"}, "long": {"float", "double"}, "float": {"double"},
                    "string": {"bytes"}, "bytes": {"string"}}


def _avro_type(s: Any) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "union"
    t = s.get("type")
    return t if isinstance(t, str) else _avro_type(t)


def _avro_reads(reader: Any, writer: Any, path: str) -> list[str]:
    rt, wt = _avro_type(reader), _avro_type(writer)
    if wt == "union":
        return [e for branch in writer for e in _avro_reads(reader, branch, path)]
    if rt == "union":
        if any(not _avro_reads(branch, writer, path) for branch in reader):
            return []
        return [f"{path or '/'}: the reader's union has no branch for the writer's {wt}"]
    if isinstance(reader, dict) and isinstance(reader.get("type"), (dict, list)) and rt not in ("record",):
        reader = reader["type"]
    if isinstance(writer, dict) and isinstance(writer.get("type"), (dict, list)) and wt not in ("record",):
        writer = writer["type"]
    if rt != wt:
        if rt in _AVRO_PROMOTIONS.get(wt, set()):
            return []
        return [f"{path or '/'}: type {wt} cannot be read as {rt}"]
    if rt == "record":
        errors = []
        written = {f["name"]: f for f in writer.get("fields", [])}
        for f in reader.get("fields", []):
            names = [f["name"], *f.get("aliases", [])]
            match = next((written[n] for n in names if n in written), None)
            if match is None:
                if "default" not in f:
                    errors.append(f"{path}/{f['name']}: field added without a default")
            else:
                errors += _avro_reads(f["type"], match["type"], f"{path}/{f['name']}")
        return errors
    if rt == "enum":
        missing = set(writer.get("symbols", [])) - set(reader.get("symbols", []))
        if missing and "default" not in reader:
            return [f"{path or '/'}: enum symbols {sorted(missing)} missing from the reader"]
        return []
    if rt == "array":
        return _avro_reads(reader["items"], writer["items"], f"{path}/items")
    if rt == "map":
        return _avro_reads(reader["values"], writer["values"], f"{path}/values")
    if rt == "fixed" and reader.get("size") != writer.get("size"):
        return [f"{path or '/'}: fixed size {writer.get('size')} cannot be read as {reader.get('size')}"]
    return []


def _json_types(s: Any) -> set[str] | None:
    if not isinstance(s, dict) or "type" not in s:
        return None
    t = s["type"]
    return {t} if isinstance(t, str) else set(t)


def _json_reads(reader: Any, writer: Any, path: str) -> list[str]:
    if not isinstance(reader, dict) or not isinstance(writer, dict):
        return []
    errors = []
    rt, wt = _json_types(reader), _json_types(writer)
    if rt is not None and wt is not None and not wt <= rt and not (wt <= {"integer"} and "number" in rt):
        errors.append(f"{path}: type {sorted(wt)} cannot be read as {sorted(rt)}")
    r_props, w_props = reader.get("properties", {}), writer.get("properties", {})
    for name in set(reader.get("required", [])) - set(writer.get("required", [])):
        if name not in w_props or "default" not in r_props.get(name, {}):
            errors.append(f"{path}/properties/{name}: required by the reader, not by the writer")
    for name in set(r_props) & set(w_props):
        errors += _json_reads(r_props[name], w_props[name], f"{path}/properties/{name}")
    if reader.get("additionalProperties") is False:
        for name in set(w_props) - set(r_props):
            errors.append(f"{path}/properties/{name}: written, but the reader allows no additional properties")
    return errors


def _proto_messages(proto: Any, prefix: str = "") -> dict[str, Any]:
    out = {}
    for m in getattr(proto, "message_type", None) or getattr(proto, "nested_type", []):
        name = f"{prefix}{m.name}"
        out[name] = m
        out.update(_proto_messages(m, name + "."))
    return out


def _proto_reads(reader: Any, writer: Any) -> list[str]:
    errors = []
    r_messages, w_messages = _proto_messages(reader), _proto_messages(writer)
    for name, w in w_messages.items():
        r = r_messages.get(name)
        if r is None:
            errors.append(f"message {name} removed")
            continue
        r_fields = {f.number: f for f in r.field}
        for f in w.field:
            mine = r_fields.get(f.number)
            if mine is not None and (mine.type != f.type or mine.type_name != f.type_name):
                errors.append(f"{name}.{f.name} (field {f.number}) changed type")
    return errors
