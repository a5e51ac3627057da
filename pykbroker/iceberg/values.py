"""value_schema mode: a record value decoded as JSON against the declared properties.

A value decodes when it is a UTF-8 JSON object whose declared properties are absent, null or of their
declared type (``integer``: a whole number, not a boolean; ``number``: any number; ``object`` and ``array``
are kept as their JSON text). Undeclared properties are ignored. Anything else is a dead letter, with a
reason naming the property.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["decode_json_value"]


def _matches(json_type: str, item: Any) -> bool:
    if json_type == "integer":
        return isinstance(item, int) and not isinstance(item, bool)
    if json_type == "number":
        return isinstance(item, int | float) and not isinstance(item, bool)
    if json_type == "string":
        return isinstance(item, str)
    if json_type == "boolean":
        return isinstance(item, bool)
    if json_type == "object":
        return isinstance(item, dict)
    return isinstance(item, list)


def decode_json_value(value: bytes | None, schema: Sequence[tuple[str, str]]
                      ) -> tuple[dict[str, Any], str | None]:
    """(the declared columns' values, None) or ({}, why it is a dead letter)."""
    if value is None:
        return {}, "null value (a tombstone) has no columns"
    try:
        doc = json.loads(value)
    except (UnicodeDecodeError, ValueError) as exc:
        return {}, f"not JSON: {exc}"
    if not isinstance(doc, dict):
        return {}, f"not a JSON object but {type(doc).__name__}"
    out: dict[str, Any] = {}
    for name, json_type in schema:
        item = doc.get(name)
        if item is None:
            out[name] = None
        elif not _matches(json_type, item):
            return {}, f"property {name!r} is {json.dumps(item)[:64]}, not of type {json_type}"
        elif json_type in ("object", "array"):
            out[name] = json.dumps(item, separators=(",", ":"))
        elif json_type == "number":
            out[name] = float(item)
        else:
            out[name] = item
    return out, None
