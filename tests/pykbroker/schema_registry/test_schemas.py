"""JSON Schema compatibility as Confluent's checker decides it (the subset schemas._JsonReads names): what a
reader (BACKWARD: the new schema) refuses of what a writer (the old one) may have written, through nested
objects, arrays, oneOf/anyOf and local $refs. The registry's 409 for it is in test_serializers.py."""

from __future__ import annotations

import json

import pytest

from pykbroker.schema_registry.schemas import compatibility_errors, parse_schema


def _json(doc) -> object:
    return parse_schema("JSON", json.dumps(doc), [], {})


def obj(**props) -> dict:
    return {"type": "object", "properties": props}


COLOUR = {"type": "string", "enum": ["red", "green"]}


@pytest.mark.parametrize("old, new, kind", [
    # enums and const
    (obj(c=COLOUR), obj(c={"type": "string", "enum": ["red"]}), "#/properties/c: ENUM_ARRAY_NARROWED"),
    (obj(c={"type": "string"}), obj(c=COLOUR), "#/properties/c: ENUM_ARRAY_NARROWED"),
    (obj(c={"enum": ["red", "green"]}), obj(c={"const": "red"}), "#/properties/c: ENUM_ARRAY_NARROWED"),
    # bounds added or tightened
    (obj(n={"type": "integer", "maximum": 10}), obj(n={"type": "integer", "maximum": 5}),
     "#/properties/n: MAXIMUM_DECREASED"),
    (obj(n={"type": "integer"}), obj(n={"type": "integer", "minimum": 0}), "#/properties/n: MINIMUM_ADDED"),
    (obj(s={"type": "string", "maxLength": 8}), obj(s={"type": "string", "maxLength": 4}),
     "#/properties/s: MAX_LENGTH_DECREASED"),
    (obj(s={"type": "string"}), obj(s={"type": "string", "pattern": "^a"}), "#/properties/s: PATTERN_ADDED"),
    (obj(n={"type": "number", "multipleOf": 2}), obj(n={"type": "number", "multipleOf": 4}),
     "#/properties/n: MULTIPLE_OF_EXPANDED"),
    # nested objects
    (obj(a=obj(b={"type": ["integer", "string"]})), obj(a=obj(b={"type": "integer"})),
     "#/properties/a/properties/b: TYPE_NARROWED"),
    (obj(a=obj(b={"type": "integer"})), obj(a={**obj(b={"type": "integer"}, c={"type": "string"}), "required": ["c"]}),
     "#/properties/a/properties/c: REQUIRED_ATTRIBUTE_ADDED"),
    (obj(a=obj(b={"type": "integer"}, x={"type": "string"})),
     obj(a={**obj(b={"type": "integer"}), "additionalProperties": False}),
     "#/properties/a/properties/x: PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    # arrays: items, tuples, bounds, uniqueness
    (obj(l={"type": "array", "items": obj(c=COLOUR)}), obj(l={"type": "array", "items": obj(c={"enum": ["red"]})}),
     "#/properties/l/items/properties/c: ENUM_ARRAY_NARROWED"),
    (obj(l={"type": "array", "items": [{"type": "integer"}, {"type": ["string", "boolean"]}]}),
     obj(l={"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}]}),
     "#/properties/l/items/1: TYPE_NARROWED"),
    (obj(l={"type": "array"}), obj(l={"type": "array", "maxItems": 3}), "#/properties/l: MAX_ITEMS_ADDED"),
    (obj(l={"type": "array"}), obj(l={"type": "array", "uniqueItems": True}), "#/properties/l: UNIQUE_ITEMS_ADDED"),
    # sum types, $refs
    (obj(v={"oneOf": [{"type": "string"}, {"type": "integer"}]}), obj(v={"oneOf": [{"type": "string"}]}),
     "#/properties/v/oneOf/1: SUM_TYPE_NARROWED"),
    ({**obj(a={"$ref": "#/definitions/A"}), "definitions": {"A": obj(c=COLOUR)}},
     {**obj(a={"$ref": "#/$defs/A"}), "$defs": {"A": obj(c={"type": "string", "enum": ["green"]})}},
     "#/properties/a/properties/c: ENUM_ARRAY_NARROWED"),
])
def test_narrowing_is_backward_incompatible(old, new, kind):
    errors = compatibility_errors("BACKWARD", _json(new), [_json(old)])
    assert any(e.startswith(f"BACKWARD: {kind}") for e in errors), errors
    # The same change the other way round widens: FORWARD (the old schema reads the new data) refuses it.
    assert compatibility_errors("BACKWARD", _json(old), [_json(new)]) == []
    assert compatibility_errors("FORWARD", _json(old), [_json(new)]) != []


@pytest.mark.parametrize("old, new", [
    (obj(c={"enum": ["red"]}), obj(c=COLOUR)),  # ENUM_ARRAY_EXTENDED
    (obj(n={"type": "integer"}), obj(n={"type": "number"})),  # integer data reads as number
    (obj(n={"type": "integer", "minimum": 5}), obj(n={"type": "integer", "minimum": 0})),  # MINIMUM_DECREASED
    (obj(n={"type": "number", "multipleOf": 4}), obj(n={"type": "number", "multipleOf": 2})),  # MULTIPLE_OF_REDUCED
    (obj(a=obj(b={"type": "integer"})), {**obj(a={**obj(b={"type": "integer"}, c={"type": "string", "default": ""}),
                                                   "required": ["c"]})}),  # REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED
    (obj(v={"type": "string"}), obj(v={"anyOf": [{"type": "string"}, {"type": "null"}]})),  # SUM_TYPE_EXTENDED
    (obj(a={"properties": {"b": {"type": "integer"}}}), obj(a=obj(b={"type": "integer"}))),  # object implied
    (obj(a=obj(b={"type": "integer"})), obj(a=obj(b={"type": "integer"}), d={"type": "string"})),  # open model
])
def test_widening_is_backward_compatible(old, new):
    assert compatibility_errors("BACKWARD", _json(new), [_json(old)]) == []
