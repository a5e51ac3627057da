"""Schemas the registry accepts, per type (AVRO, JSON, PROTOBUF, Confluent's names): parsing (a schema that
does not parse is refused with 42201, as Confluent does), the canonical text two registrations are compared by,
and the compatibility checks BACKWARD / FORWARD / FULL (and their _TRANSITIVE forms) between two versions.

Avro is parsed by fastavro (named types from references resolved first); JSON Schema is a JSON document;
Protobuf is what Confluent's clients register: the base64 of a serialized ``FileDescriptorProto`` (the Python
serializer's form), or ``.proto`` text (the Java serializer's; read by ``proto_text``).
The checks follow the reader/writer rules of each format, as far as clients depend on them: Avro's schema
resolution (fields added need a default, promotions int->long->float->double, string<->bytes, enum symbols,
unions, arrays and maps recursively); JSON: Confluent's JSON Schema differences that matter (``_JsonReads``:
types, enums, bounds, required properties, closed content models, nested objects, arrays, oneOf/anyOf and
local $refs); Protobuf: a field number may not change type and a message may not disappear.
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
    """The JSON types ``s`` allows: its ``type``, else what its keywords imply (None: any, as far as known)."""
    if not isinstance(s, dict):
        return None
    if "type" in s:
        t = s["type"]
        return {t} if isinstance(t, str) else set(t)
    values = [s["const"]] if "const" in s else s.get("enum")
    if isinstance(values, list) and values:
        return {_json_value_type(v) for v in values}
    if any(k in s for k in ("properties", "required", "additionalProperties")):
        return {"object"}
    return {"array"} if "items" in s else None


def _json_value_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "object")


# Bounds a reader may loosen but not tighten (Confluent's <NAME>_ADDED and _DECREASED / _INCREASED differences):
# keyword -> True when a larger reader value accepts more (a maximum), False when a smaller one does (a minimum).
_JSON_BOUNDS = {"maxLength": True, "minLength": False, "maximum": True, "minimum": False, "exclusiveMaximum": True,
                "exclusiveMinimum": False, "maxItems": True, "minItems": False, "maxProperties": True,
                "minProperties": False}
_BOUND_NAMES = {"maxLength": "MAX_LENGTH", "minLength": "MIN_LENGTH", "maximum": "MAXIMUM", "minimum": "MINIMUM",
                "exclusiveMaximum": "EXCLUSIVE_MAXIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM",
                "maxItems": "MAX_ITEMS", "minItems": "MIN_ITEMS", "maxProperties": "MAX_PROPERTIES",
                "minProperties": "MIN_PROPERTIES"}


class _JsonReads:
    """Confluent's JSON Schema differences that make data of ``writer`` invalid for ``reader`` (the important
    subset, named by Confluent's ``Difference.Type``): TYPE_NARROWED, ENUM_ARRAY_NARROWED (``enum`` and
    ``const``), the bounds (MAX_LENGTH, MIN_LENGTH, MAXIMUM, MINIMUM, EXCLUSIVE_*, MAX_ITEMS, MIN_ITEMS,
    MAX_PROPERTIES, MIN_PROPERTIES added or tightened), PATTERN_ADDED/CHANGED, MULTIPLE_OF_ADDED/EXPANDED,
    UNIQUE_ITEMS_ADDED, REQUIRED_ATTRIBUTE_ADDED (without a default), PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL,
    ADDITIONAL_PROPERTIES / ITEMS recursively, SUM_TYPE_NARROWED (a writer's ``oneOf``/``anyOf`` branch no
    reader branch reads), through nested ``properties``, ``items`` (one schema or a tuple) and local ``$ref``s
    (``#/definitions/...``, ``#/$defs/...``). Properties added to or removed from an open content model are
    accepted, as Confluent's lenient checker does (its strict one refuses a property added to an open model)."""

    def __init__(self, reader_root: Any, writer_root: Any) -> None:
        self.roots = (reader_root, writer_root)
        self.errors: list[str] = []

    def _resolve(self, schema: Any, root: Any, seen: int = 0) -> Any:
        ref = schema.get("$ref") if isinstance(schema, dict) else None
        if not isinstance(ref, str) or not ref.startswith("#") or seen > 32:
            return schema
        target = root
        for part in (p.replace("~1", "/").replace("~0", "~") for p in ref[1:].split("/") if p):
            target = target.get(part) if isinstance(target, dict) else None
        return self._resolve(target, root, seen + 1) if target is not None else schema

    def _error(self, path: str, kind: str, detail: str) -> None:
        self.errors.append(f"{path}: {kind}: {detail}")

    def check(self, reader: Any, writer: Any, path: str, depth: int = 0) -> None:
        reader, writer = self._resolve(reader, self.roots[0]), self._resolve(writer, self.roots[1])
        if depth > 64 or reader is True or reader == {} or writer is False:
            return
        if reader is False:
            self._error(path, "TYPE_NARROWED", "the reader accepts nothing")
            return
        if not isinstance(reader, dict) or not isinstance(writer, dict):
            return
        w_branches = writer.get("oneOf") or writer.get("anyOf")
        if isinstance(w_branches, list) and "type" not in writer:
            for i, branch in enumerate(w_branches):
                self.check(reader, branch, f"{path}/{'oneOf' if 'oneOf' in writer else 'anyOf'}/{i}", depth + 1)
            return
        r_branches = reader.get("oneOf") or reader.get("anyOf")
        if isinstance(r_branches, list) and "type" not in reader:
            for branch in r_branches:
                probe = _JsonReads(*self.roots)
                probe.check(branch, writer, path, depth + 1)
                if not probe.errors:
                    return
            self._error(path, "SUM_TYPE_NARROWED", "no branch of the reader's oneOf/anyOf reads the writer's schema")
            return
        rt, wt = _json_types(reader), _json_types(writer)
        if rt is not None and wt is not None and not (wt <= rt or (wt - rt <= {"integer"} and "number" in rt)):
            self._error(path, "TYPE_NARROWED", f"type {sorted(wt)} cannot be read as {sorted(rt)}")
            return
        self._enum(reader, writer, path)
        self._bounds(reader, writer, path)
        self._object(reader, writer, path, depth)
        self._array(reader, writer, path, depth)

    def _enum(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        r_values = [reader["const"]] if "const" in reader else reader.get("enum")
        w_values = [writer["const"]] if "const" in writer else writer.get("enum")
        if not isinstance(r_values, list):
            return
        if not isinstance(w_values, list):
            self._error(path, "ENUM_ARRAY_NARROWED", "the reader allows only the values of its enum")
            return
        missing = [v for v in w_values if v not in r_values]
        if missing:
            self._error(path, "ENUM_ARRAY_NARROWED", f"values {json.dumps(missing)} missing from the reader's enum")

    def _bounds(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> None:
        for keyword, upper in _JSON_BOUNDS.items():
            r, w = reader.get(keyword), writer.get(keyword)
            if not isinstance(r, int | float) or isinstance(r, bool):
                continue
            if not isinstance(w, int | float) or isinstance(w, bool):
                self._error(path, f"{_BOUND_NAMES[keyword]}_ADDED", f"{keyword} {r} added")
            elif (r < w) if upper else (r > w):
                self._error(path, f"{_BOUND_NAMES[keyword]}_{'DECREASED' if upper else 'INCREASED'}",
                            f"{keyword} {w} changed to {r}")
        if "pattern" in reader and reader["pattern"] != writer.get("pattern"):
            self._error(path, "PATTERN_ADDED" if "pattern" not in writer else "PATTERN_CHANGED",
                        f"pattern {reader['pattern']!r}")
        r_mult, w_mult = reader.get("multipleOf"), writer.get("multipleOf")
        if isinstance(r_mult, int | float) and r_mult:
            if not isinstance(w_mult, int | float):
                self._error(path, "MULTIPLE_OF_ADDED", f"multipleOf {r_mult} added")
            elif (w_mult / r_mult) != int(w_mult / r_mult):
                self._error(path, "MULTIPLE_OF_EXPANDED", f"multipleOf {w_mult} changed to {r_mult}")
        if reader.get("uniqueItems") is True and writer.get("uniqueItems") is not True:
            self._error(path, "UNIQUE_ITEMS_ADDED", "the reader needs unique items")

    def _object(self, reader: dict[str, Any], writer: dict[str, Any], path: str, depth: int) -> None:
        r_props, w_props = reader.get("properties") or {}, writer.get("properties") or {}
        if not isinstance(r_props, dict) or not isinstance(w_props, dict):
            return
        for name in sorted(set(reader.get("required") or []) - set(writer.get("required") or [])):
            if not (isinstance(r_props.get(name), dict) and "default" in r_props[name]):
                self._error(f"{path}/properties/{name}", "REQUIRED_ATTRIBUTE_ADDED",
                            "required by the reader, not by the writer")
        for name in sorted(set(r_props) & set(w_props)):
            self.check(r_props[name], w_props[name], f"{path}/properties/{name}", depth + 1)
        r_extra, w_extra = reader.get("additionalProperties"), writer.get("additionalProperties")
        for name in sorted(set(w_props) - set(r_props)):
            if r_extra is False:
                self._error(f"{path}/properties/{name}", "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
                            "written, but the reader allows no additional properties")
            elif isinstance(r_extra, dict):
                self.check(r_extra, w_props[name], f"{path}/properties/{name}", depth + 1)
        if isinstance(r_extra, dict) and isinstance(w_extra, dict):
            self.check(r_extra, w_extra, f"{path}/additionalProperties", depth + 1)

    def _array(self, reader: dict[str, Any], writer: dict[str, Any], path: str, depth: int) -> None:
        r_items, w_items = reader.get("items"), writer.get("items")
        if isinstance(r_items, dict | bool) and isinstance(w_items, dict | bool):
            self.check(r_items, w_items, f"{path}/items", depth + 1)
        elif isinstance(r_items, dict | bool) and isinstance(w_items, list):
            for i, item in enumerate(w_items):
                self.check(r_items, item, f"{path}/items/{i}", depth + 1)
        elif isinstance(r_items, list) and isinstance(w_items, list):
            for i, (r, w) in enumerate(zip(r_items, w_items, strict=False)):
                self.check(r, w, f"{path}/items/{i}", depth + 1)


def _json_reads(reader: Any, writer: Any, path: str) -> list[str]:
    reads = _JsonReads(reader, writer)
    reads.check(reader, writer, path)
    return reads.errors


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
