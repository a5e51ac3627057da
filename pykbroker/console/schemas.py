"""Record values decoded through a Confluent-compatible schema registry, for the message browser.

A value in Confluent's wire format (magic byte 0, 4-byte schema id, payload: what Confluent's Avro,
Protobuf and JSON Schema serializers write) is decoded with the schema its id names
(``schema_registry.wire_format.decode``) and added to the record as ``decoded``: the schema id, its type and
the value as JSON; a value that does not decode gets ``decode_error`` saying why (keys likewise:
``key_decoded``, ``key_decode_error``). Schemas come from
``console.schema.registry.url`` (any Confluent-compatible registry: ``GET /schemas/ids/{id}``, references
through ``GET /subjects/{subject}/versions/{version}``) or, unset, from the broker's own registry when it
serves one (``schema.registry.listeners``). Ids never change meaning, so schemas are cached by id.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import decimal
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import Counter
from typing import Any, Protocol
from urllib.parse import quote

from pykbroker.schema_registry.wire_format import RegisteredSchema, WireFormatError, decode, decode_header

__all__ = ["BrokerRegistry", "RestRegistry", "SchemaSource", "ValueDecoder", "schema_source"]

# How long one registry request may take.
REGISTRY_TIMEOUT_S = 10.0
# Reference chains followed at most this deep (a registry answering a cycle is not followed forever).
MAX_REFERENCE_DEPTH = 16
# Schema ids looked up per answer (the most frequent first): binary keys or values that only look framed
# (a leading zero byte) would otherwise name a different "id" each.
MAX_SCHEMA_IDS = 16
# How long an id the registry does not know is not asked again, and how often the broker's own registry
# reads _schemas on for ids it does not know yet.
NOT_FOUND_TTL_S = 30.0
REFRESH_INTERVAL_S = 1.0
# Records decoded at a time by a search before the event loop serves others.
MATCH_CHUNK = 200


class SchemaSource(Protocol):
    async def schema(self, schema_id: int) -> RegisteredSchema | None: ...


class RegistryUnavailable(Exception):
    """The registry did not answer (or answered an error other than not found)."""


class BrokerRegistry:
    """The broker's own registry (``pykbroker.schema_registry.SchemaRegistry``): its schemas by id, read on in
    ``_schemas`` when an id is not known yet."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self._refreshed = 0.0

    async def schema(self, schema_id: int) -> RegisteredSchema | None:
        found: RegisteredSchema | None = self.registry.lookup(schema_id)
        if found is None and time.monotonic() - self._refreshed >= REFRESH_INTERVAL_S:
            self._refreshed = time.monotonic()
            await self.registry.refresh()
            found = self.registry.lookup(schema_id)
        return found


class RestRegistry:
    """A Confluent-compatible registry at ``url``, over its REST API (standard library HTTP on a thread)."""

    def __init__(self, url: str) -> None:
        # https://user:password@host:port: HTTP basic authentication (a registry with authentication.method=BASIC).
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        self._headers = {"Accept": "application/vnd.schemaregistry.v1+json"}
        if parts.username is not None:
            user_info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._headers["Authorization"] = "Basic " + base64.b64encode(user_info.encode()).decode()
            parts = parts._replace(netloc=parts.netloc.rpartition("@")[2])
        self.url = urllib.parse.urlunsplit(parts)  # without the credentials: it appears in messages
        self._cache: dict[int, RegisteredSchema] = {}
        self._not_found: dict[int, float] = {}  # id -> when the registry said it does not know it

    def _get(self, path: str) -> Any:
        """The JSON answer of ``GET path``; None for 404 (not found)."""
        request = urllib.request.Request(self.url + path, headers=self._headers)
        try:
            with urllib.request.urlopen(request, timeout=REGISTRY_TIMEOUT_S) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise RegistryUnavailable(f"the schema registry at {self.url} answered {exc.code} to GET {path}") from None
        except (OSError, ValueError) as exc:
            raise RegistryUnavailable(f"the schema registry at {self.url} cannot be read "
                                      f"(console.schema.registry.url): {exc}") from None

    async def schema(self, schema_id: int) -> RegisteredSchema | None:
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        if time.monotonic() - self._not_found.get(schema_id, -NOT_FOUND_TTL_S) < NOT_FOUND_TTL_S:
            return None
        data = await asyncio.to_thread(self._get, f"/schemas/ids/{schema_id}")
        if data is None:
            if len(self._not_found) > 10_000:
                self._not_found.clear()
            self._not_found[schema_id] = time.monotonic()
            return None
        found = RegisteredSchema(schema_id, data.get("schemaType") or "AVRO", data["schema"],
                                 await self._references(data.get("references") or [], 0))
        self._cache[schema_id] = found
        return found

    async def _references(self, refs: list[dict[str, Any]], depth: int) -> dict[str, RegisteredSchema]:
        if depth > MAX_REFERENCE_DEPTH:
            raise RegistryUnavailable(f"schema references nested deeper than {MAX_REFERENCE_DEPTH}")
        out = {}
        for ref in refs:
            v = await asyncio.to_thread(self._get, f"/subjects/{quote(ref['subject'], safe='')}/versions/{ref['version']}")
            if v is None:
                continue  # a deleted reference: the decoder says what it misses
            out[ref["name"]] = RegisteredSchema(v["id"], v.get("schemaType") or "AVRO", v["schema"],
                                                await self._references(v.get("references") or [], depth + 1))
        return out


def schema_source(broker: Any) -> SchemaSource | None:
    """Where the console reads schemas: ``console.schema.registry.url``, else the broker's served registry."""
    url = broker.config["console.schema.registry.url"]
    if url:
        return RestRegistry(url)
    if broker.config["schema.registry.listeners"]:
        return BrokerRegistry(broker.schema_registry_for_decoding())
    return None


def jsonable(value: Any) -> Any:
    """A decoded value as JSON can carry it: bytes as hex, decimals, dates, times and UUIDs as strings."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (decimal.Decimal, datetime.date, datetime.time, uuid.UUID)):
        return str(value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


# Where a record's decoded key and value (or why not) go: record field -> (decoded, error).
FIELDS = {"value": ("decoded", "decode_error"), "key": ("key_decoded", "key_decode_error")}


class ValueDecoder:
    """Adds ``decoded`` (or ``decode_error``) to records whose value is in Confluent's wire format, and
    ``key_decoded`` (or ``key_decode_error``) for such keys. A decoded one is the schema id and type, the value
    as JSON and that JSON as text (``json``, ``pretty``: exact where a browser's numbers are not, as int64)."""

    def __init__(self, source: SchemaSource) -> None:
        self.source = source

    async def matching(self, records: list[dict[str, Any]], needle: str) -> list[dict[str, Any]]:
        """Those of ``records`` whose decoded value or key, as JSON text (compact or pretty), holds ``needle``;
        all of them decorated. Decoded a chunk at a time, the event loop let through between chunks."""
        out = []
        for i in range(0, len(records), MATCH_CHUNK):
            chunk = records[i:i + MATCH_CHUNK]
            await self.decorate(chunk)
            out += [r for r in chunk if any(needle in d["json"] or needle in d["pretty"]
                                            for d in (r.get("decoded"), r.get("key_decoded")) if d)]
            await asyncio.sleep(0)
        return out

    async def decorate(self, records: list[dict[str, Any]]) -> None:
        framed: list[tuple[dict[str, Any], str, bytes, int]] = []
        for r in records:
            for name in FIELDS:
                raw = base64.b64decode(r[name]) if r.get(name) else b""
                try:
                    framed.append((r, name, raw, decode_header(raw)[0]))
                except WireFormatError:
                    continue  # not framed: shown as text, JSON or hex
        schemas: dict[int, RegisteredSchema | None] = {}
        failed: dict[int, str] = {}
        counts = Counter(i for *_, i in framed)
        for schema_id, _ in counts.most_common()[MAX_SCHEMA_IDS:]:
            failed[schema_id] = f"not looked up: more than {MAX_SCHEMA_IDS} schema ids among these records"
        for schema_id, _ in counts.most_common(MAX_SCHEMA_IDS):
            try:
                schemas[schema_id] = await self.source.schema(schema_id)
            except RegistryUnavailable as exc:
                failed[schema_id] = str(exc)
        for r, name, raw, schema_id in framed:
            decoded, error = FIELDS[name]
            if schema_id in failed:
                r[error] = failed[schema_id]
                continue
            try:
                d = decode(raw, schemas.get)
            except WireFormatError as exc:
                r[error] = str(exc)
            except ImportError as exc:
                r[error] = f"decoding needs fastavro and protobuf ({exc}): pip install 'pykbroker[registry]'"
            else:
                value = jsonable(d.value)
                r[decoded] = {"schema_id": schema_id, "schema_type": d.schema.schema_type, "value": value,
                              "json": json.dumps(value, ensure_ascii=False, separators=(",", ":")),
                              "pretty": json.dumps(value, indent=2, ensure_ascii=False)}
