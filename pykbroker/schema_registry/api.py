"""Confluent's Schema Registry REST API (the part its serializers, CLI and UIs use), over ``SchemasTopic``.

Answers are JSON (``application/vnd.schemaregistry.v1+json``); errors are ``{"error_code", "message"}`` with
Confluent's codes and HTTP statuses: 40401 subject, 40402 version, 40403 schema not found, 40404/40405 subject
(not) soft-deleted, 40406/40407 version (not) soft-deleted, 40408 no subject-level config, 409 incompatible,
42201 invalid schema, 42202 invalid version, 42203 invalid compatibility level, 42204 invalid mode, 42205
operation not permitted, 42206 still referenced, 50001 store error; 401 unauthenticated and 40301 denied
(``security.py``: each route names the access it needs).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from pykbroker.console.http import Request, Response
from pykbroker.schema_registry.schemas import (
    COMPATIBILITY_LEVELS,
    SCHEMA_TYPES,
    InvalidSchemaError,
    ParsedSchema,
    SchemaReference,
    compatibility_errors,
    parse_schema,
)
from pykbroker.schema_registry.security import Access, RegistrySecurity
from pykbroker.schema_registry.state import RegistryState, StoredSchema
from pykbroker.schema_registry.store import RegistryStoreError, SchemasTopic

__all__ = ["RegistryApi", "RegistryError"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
MODES = ("READWRITE", "READONLY", "IMPORT")
MAX_VERSION = 2**31 - 1


class RegistryError(Exception):
    """An answer with Confluent's ``error_code`` (its HTTP status is the code's first three digits)."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        return self.error_code if self.error_code < 1000 else int(str(self.error_code)[:3])


def _subject_not_found(subject: str) -> RegistryError:
    return RegistryError(40401, f"Subject '{subject}' not found.")


def _json(data: Any, status: int = 200) -> Response:
    return Response(status, CONTENT_TYPE, json.dumps(data).encode())


Handler = Callable[[Request, list[str]], Awaitable[Any]]


class RegistryApi:
    """The routes: ``answer(request)`` matches the path's segments (each URL-decoded) against ``ROUTES``."""

    def __init__(self, store: SchemasTopic, node_id: int, security: RegistrySecurity | None = None) -> None:
        self.store = store
        self.node_id = node_id
        # Who may do what (schema_registry.security); None: everyone everything, as User:ANONYMOUS.
        self.security = security or RegistrySecurity(None, basic=False, authorization=False)
        p = r"([^/]+)"
        a = Access
        self.routes: list[tuple[str, re.Pattern[str], Handler, str]] = [
            (m, re.compile(f"^{path.format(p=p)}$"), h, access) for m, path, h, access in [
                ("GET", "", self.root, a.ANY), ("GET", "/schemas/types", self.types, a.ANY),
                ("GET", "/contexts", self.contexts, a.ANY),
                ("GET", "/schemas/ids/{p}", self.schema_by_id, a.ANY),
                ("GET", "/schemas/ids/{p}/schema", self.raw_by_id, a.ANY),
                ("GET", "/schemas/ids/{p}/versions", self.versions_of_id, a.ANY),
                ("GET", "/schemas/ids/{p}/subjects", self.subjects_of_id, a.ANY),
                ("GET", "/subjects", self.list_subjects, a.ANY),  # filtered to the readable ones
                ("POST", "/subjects/{p}", self.lookup, a.SUBJECT_READ),
                ("DELETE", "/subjects/{p}", self.delete_subject, a.SUBJECT_DELETE),
                ("GET", "/subjects/{p}/versions", self.list_versions, a.SUBJECT_READ),
                ("POST", "/subjects/{p}/versions", self.register, a.SUBJECT_WRITE),
                ("GET", "/subjects/{p}/versions/{p}", self.get_version, a.SUBJECT_READ),
                ("GET", "/subjects/{p}/versions/{p}/schema", self.get_raw_version, a.SUBJECT_READ),
                ("GET", "/subjects/{p}/versions/{p}/referencedby", self.referenced_by, a.SUBJECT_READ),
                ("DELETE", "/subjects/{p}/versions/{p}", self.delete_version, a.SUBJECT_DELETE),
                ("POST", "/compatibility/subjects/{p}/versions/{p}", self.check_version, a.SUBJECT_READ),
                ("POST", "/compatibility/subjects/{p}/versions", self.check_all, a.SUBJECT_READ),
                ("GET", "/config", self.get_config, a.ANY), ("PUT", "/config", self.put_config, a.GLOBAL_CONFIG_WRITE),
                ("GET", "/config/{p}", self.get_config, a.SUBJECT_CONFIG_READ),
                ("PUT", "/config/{p}", self.put_config, a.SUBJECT_CONFIG_WRITE),
                ("DELETE", "/config/{p}", self.delete_config, a.SUBJECT_CONFIG_WRITE),
                ("GET", "/mode", self.get_mode, a.ANY), ("PUT", "/mode", self.put_mode, a.GLOBAL_CONFIG_WRITE),
                ("GET", "/mode/{p}", self.get_mode, a.SUBJECT_CONFIG_READ),
                ("PUT", "/mode/{p}", self.put_mode, a.SUBJECT_CONFIG_WRITE),
                ("DELETE", "/mode/{p}", self.delete_mode, a.SUBJECT_CONFIG_WRITE)]]

    async def answer(self, request: Request) -> Response:
        path = request.path.rstrip("/")
        matched = False
        principal = await self.security.principal(request.headers.get("authorization"))
        if principal is None:
            return _json({"error_code": 401, "message": "Unauthorized"}, 401) \
                .with_headers({"WWW-Authenticate": 'Basic realm="SchemaRegistry"'})
        request.principal = principal
        for method, pattern, handler, access in self.routes:
            m = pattern.match(path)
            if m is None:
                continue
            matched = True
            if method != request.method:
                continue
            args = [unquote(g) for g in m.groups()]
            subject = args[0] if args and access != Access.ANY else None
            if not self.security.allowed(principal, request.peer, access, subject):
                return _json({"error_code": 40301, "message": self.security.denied_message(principal, access, subject)},
                             403)
            try:
                return _json(await handler(request, args))
            except RegistryError as exc:
                return _json({"error_code": exc.error_code, "message": exc.message}, exc.status)
            except RegistryStoreError as exc:
                return _json({"error_code": 50001, "message": f"Error in the backend data store: {exc}"}, 500)
        if matched:
            return _json({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, 405)
        return _json({"error_code": 404, "message": "HTTP 404 Not Found"}, 404)

    # -- helpers -------------------------------------------------------------------------------------------

    async def _state(self) -> RegistryState:
        return await self.store.catch_up()

    @staticmethod
    def _body(request: Request) -> dict[str, Any]:
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            raise RegistryError(422, "Unrecognized request body: not JSON") from None
        if not isinstance(body, dict):
            raise RegistryError(422, "Unrecognized request body: a JSON object expected")
        return body

    @staticmethod
    def _flag(request: Request, name: str) -> bool:
        return request.query.get(name, "false").lower() == "true"

    @staticmethod
    def _version(state: RegistryState, subject: str, text: str, deleted: bool = False) -> StoredSchema:
        if text in ("latest", "-1"):
            number = None
        else:
            try:
                number = int(text)
            except ValueError:
                number = 0
            if not 1 <= number <= MAX_VERSION:
                raise RegistryError(42202, f"The specified version '{text}' is not a valid version id. Allowed "
                                           "values are between [1, 2^31-1] and the string \"latest\"")
        versions = state.subject_versions(subject, deleted=deleted)
        if not versions:
            if state.subject_versions(subject, deleted=True):
                raise RegistryError(40402, f"Version {text} not found.")
            raise _subject_not_found(subject)
        if number is None:
            return versions[-1]
        for s in versions:
            if s.version == number:
                return s
        raise RegistryError(40402, f"Version {number} not found.")

    @staticmethod
    def _schema_json(s: StoredSchema, with_subject: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": s.subject, "version": s.version, "id": s.id} if with_subject else {}
        if s.schema_type != "AVRO":
            out["schemaType"] = s.schema_type
        if s.references:
            out["references"] = [r.to_json() for r in s.references]
        out["schema"] = s.schema
        return out

    def _parse(self, state: RegistryState, body: dict[str, Any]) -> ParsedSchema:
        """The body's schema parsed with its references resolved (42201 when it or a reference is bad)."""
        text = body.get("schema")
        schema_type = str(body.get("schemaType") or "AVRO").upper()
        if not isinstance(text, str):
            raise RegistryError(42201, "Invalid schema: the body has no \"schema\" string")
        if schema_type not in SCHEMA_TYPES:
            raise RegistryError(42201, f"Invalid schema type {schema_type}")
        try:
            refs = [SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"]))
                    for r in body.get("references") or []]
        except (KeyError, TypeError, ValueError):
            raise RegistryError(42201, "Invalid schema: a reference needs name, subject and version") from None
        try:
            return parse_schema(schema_type, text, refs, resolve_references(state, refs))
        except InvalidSchemaError as exc:
            raise RegistryError(42201, str(exc)) from None

    @staticmethod
    def _same(a: ParsedSchema, s: StoredSchema) -> bool:
        if a.schema_type != s.schema_type or a.references != s.references:
            return False
        try:
            return a.canonical() == ParsedSchema(s.schema_type, s.schema).canonical()
        except ValueError:
            return a.schema == s.schema

    # -- routes ---------------------------------------------------------------------------------------------

    async def root(self, _r: Request, _a: list[str]) -> Any:
        return {}

    async def types(self, _r: Request, _a: list[str]) -> Any:
        return ["JSON", "PROTOBUF", "AVRO"]

    async def contexts(self, _r: Request, _a: list[str]) -> Any:
        return ["."]

    async def _by_id(self, text: str) -> StoredSchema:
        state = await self._state()
        try:
            found = state.by_id(int(text))
        except ValueError:
            found = None
        if found is None:
            raise RegistryError(40403, f"Schema {text} not found")
        return found

    async def schema_by_id(self, request: Request, args: list[str]) -> Any:
        return self._formatted(request, self._schema_json(await self._by_id(args[0]), with_subject=False))

    @staticmethod
    def _formatted(request: Request, answer: dict[str, Any]) -> dict[str, Any]:
        """``?format=serialized`` of a Protobuf schema registered as .proto text: the base64 of its serialized
        descriptor, the form Confluent's Python client reads."""
        if request.query.get("format") == "serialized" and answer.get("schemaType") == "PROTOBUF" \
                and "{" in answer["schema"]:
            from pykbroker.schema_registry.proto_text import parse_proto

            proto = parse_proto(answer["schema"])
            answer = {**answer, "schema": base64.b64encode(proto.SerializeToString()).decode()}
        return answer

    async def raw_by_id(self, _r: Request, args: list[str]) -> Any:
        s = await self._by_id(args[0])
        return json.loads(s.schema) if s.schema_type != "PROTOBUF" else s.schema

    async def versions_of_id(self, request: Request, args: list[str]) -> Any:
        s = await self._by_id(args[0])
        deleted = self._flag(request, "deleted")
        return [{"subject": v.subject, "version": v.version} for v in sorted(
            self.store.state.versions.values(), key=lambda v: (v.subject, v.version))
            if v.id == s.id and (deleted or not v.deleted)]

    async def subjects_of_id(self, request: Request, args: list[str]) -> Any:
        return sorted({v["subject"] for v in await self.versions_of_id(request, args)})

    async def list_subjects(self, request: Request, _a: list[str]) -> Any:
        prefix = request.query.get("subjectPrefix", "")
        return [s for s in (await self._state()).subjects(self._flag(request, "deleted")) if s.startswith(prefix)
                and self.security.allowed(request.principal, request.peer, Access.SUBJECT_READ, s)]

    async def list_versions(self, request: Request, args: list[str]) -> Any:
        versions = (await self._state()).subject_versions(args[0], self._flag(request, "deleted"))
        if not versions:
            raise _subject_not_found(args[0])
        return [s.version for s in versions]

    async def get_version(self, request: Request, args: list[str]) -> Any:
        return self._formatted(request, self._schema_json(
            self._version(await self._state(), args[0], args[1], self._flag(request, "deleted"))))

    async def get_raw_version(self, request: Request, args: list[str]) -> Any:
        s = self._version(await self._state(), args[0], args[1], self._flag(request, "deleted"))
        return json.loads(s.schema) if s.schema_type != "PROTOBUF" else s.schema

    async def referenced_by(self, _r: Request, args: list[str]) -> Any:
        state = await self._state()
        s = self._version(state, args[0], args[1])
        return sorted({v.id for v in state.versions.values() if not v.deleted
                       and any(r.subject == s.subject and r.version == s.version for r in v.references)})

    async def lookup(self, request: Request, args: list[str]) -> Any:
        state = await self._state()
        subject, deleted = args[0], self._flag(request, "deleted")
        versions = state.subject_versions(subject, deleted)
        if not versions:
            raise _subject_not_found(subject)
        parsed = self._parse(state, self._body(request))
        for s in versions:
            if self._same(parsed, s):
                return self._schema_json(s)
        raise RegistryError(40403, "Schema not found")

    async def register(self, request: Request, args: list[str]) -> Any:
        subject, body = args[0], self._body(request)
        if not subject.strip():
            raise RegistryError(42208, "Invalid subject: empty")

        def build(state: RegistryState) -> tuple[list[Any], Any]:
            mode = state.mode(subject)
            if mode == "READONLY":
                raise RegistryError(42205, f"Subject {subject} is in read-only mode")
            parsed = self._parse(state, body)
            live = state.subject_versions(subject)
            for s in live:
                if self._same(parsed, s):
                    return [], {"id": s.id}
            level = state.compatibility(subject)
            previous = [parse_schema(s.schema_type, s.schema, s.references, resolve_references(state, s.references))
                        for s in live]
            errors = compatibility_errors(level, parsed, previous)
            if errors:
                raise RegistryError(409, f"Schema being registered is incompatible with an earlier schema for "
                                         f"subject \"{subject}\", details: {errors}")
            every = state.subject_versions(subject, deleted=True)
            version = (every[-1].version if every else 0) + 1
            if mode == "IMPORT" and "id" in body:
                schema_id = int(body["id"])
                version = int(body.get("version", version))
            else:
                same = [s for s in state.versions.values() if self._same(parsed, s)]
                schema_id = min(s.id for s in same) if same else state.max_id() + 1
            stored = StoredSchema(subject, version, schema_id, parsed.schema, parsed.schema_type, parsed.references)
            key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
            return [(key, stored.to_value())], {"id": schema_id}

        return await self.store.write(build, self.node_id)

    async def delete_version(self, request: Request, args: list[str]) -> Any:
        subject, permanent = args[0], self._flag(request, "permanent")

        def build(state: RegistryState) -> tuple[list[Any], Any]:
            self._writable(state, subject)
            s = self._version(state, subject, args[1], deleted=True)
            if args[1] in ("latest", "-1") and not permanent:
                s = self._version(state, subject, args[1])
            referenced = [v.id for v in state.versions.values() if not v.deleted
                          and any(r.subject == subject and r.version == s.version for r in v.references)]
            if referenced:
                raise RegistryError(42206, f"One or more references exist to the schema {{subject={subject}, "
                                           f"version={s.version}}}")
            if permanent:
                if not s.deleted:
                    raise RegistryError(40407, f"Subject '{subject}' Version {s.version} was not deleted first "
                                               "before being permanently deleted")
                return [(k, None) for k in s.keys], s.version
            if s.deleted:
                raise RegistryError(40406, f"Subject '{subject}' Version {s.version} was soft deleted. Set "
                                           "permanent=true to delete permanently")
            return [self._soft_deleted(s)], s.version

        return await self.store.write(build, self.node_id)

    async def delete_subject(self, request: Request, args: list[str]) -> Any:
        subject, permanent = args[0], self._flag(request, "permanent")

        def build(state: RegistryState) -> tuple[list[Any], Any]:
            self._writable(state, subject)
            every = state.subject_versions(subject, deleted=True)
            if not every:
                raise _subject_not_found(subject)
            live = [s for s in every if not s.deleted]
            if permanent:
                if live:
                    raise RegistryError(40405, f"Subject '{subject}' was not deleted first before being "
                                               "permanently deleted")
                return [(k, None) for s in every for k in s.keys], [s.version for s in every]
            if not live:
                raise RegistryError(40404, f"Subject '{subject}' was soft deleted. Set permanent=true to delete "
                                           "permanently")
            return [self._soft_deleted(s) for s in live], [s.version for s in live]

        return await self.store.write(build, self.node_id)

    @staticmethod
    def _soft_deleted(s: StoredSchema) -> Any:
        value = StoredSchema(s.subject, s.version, s.id, s.schema, s.schema_type, s.references, True).to_value()
        return {"keytype": "SCHEMA", "subject": s.subject, "version": s.version, "magic": 1}, value

    @staticmethod
    def _writable(state: RegistryState, subject: str) -> None:
        if state.mode(subject) == "READONLY":
            raise RegistryError(42205, f"Subject {subject} is in read-only mode")

    async def _check(self, request: Request, subject: str, against: list[StoredSchema]) -> Any:
        state = self.store.state
        parsed = self._parse(state, self._body(request))
        level = state.compatibility(subject)
        previous = [parse_schema(s.schema_type, s.schema, s.references, resolve_references(state, s.references))
                    for s in against]
        errors = compatibility_errors(level, parsed, previous)
        out: dict[str, Any] = {"is_compatible": not errors}
        if self._flag(request, "verbose"):
            out["messages"] = errors
        return out

    async def check_version(self, request: Request, args: list[str]) -> Any:
        state = await self._state()
        return await self._check(request, args[0], [self._version(state, args[0], args[1])])

    async def check_all(self, request: Request, args: list[str]) -> Any:
        state = await self._state()
        return await self._check(request, args[0], state.subject_versions(args[0]))

    async def get_config(self, request: Request, args: list[str]) -> Any:
        state = await self._state()
        subject = args[0] if args else None
        if subject is not None and subject not in state.configs and not self._flag(request, "defaultToGlobal"):
            raise RegistryError(40408, f"Subject '{subject}' does not have subject-level compatibility configured")
        return {"compatibilityLevel": state.compatibility(subject)}

    async def put_config(self, request: Request, args: list[str]) -> Any:
        body = self._body(request)
        level = str(body.get("compatibility") or body.get("compatibilityLevel") or "").upper()
        if level not in COMPATIBILITY_LEVELS:
            raise RegistryError(42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                       "backward_transitive, forward_transitive, and full_transitive")
        key = {"keytype": "CONFIG", "subject": args[0] if args else None, "magic": 0}
        return await self.store.write(lambda _s: ([(key, {"compatibilityLevel": level})],
                                                  {"compatibility": level}), self.node_id)

    async def delete_config(self, _r: Request, args: list[str]) -> Any:
        def build(state: RegistryState) -> tuple[list[Any], Any]:
            if args[0] not in state.configs:
                raise _subject_not_found(args[0])
            previous = {"compatibilityLevel": state.configs[args[0]]}
            return self._tombstones(state, "CONFIG", args[0]), previous

        return await self.store.write(build, self.node_id)

    @staticmethod
    def _tombstones(state: RegistryState, keytype: str, subject: str) -> list[Any]:
        """Tombstones for every key of this keytype and subject written so far (seq keys differ per write)."""
        return [(k, None) for k in state.keys_of(keytype, subject)]

    async def get_mode(self, _r: Request, args: list[str]) -> Any:
        state = await self._state()
        return {"mode": state.mode(args[0] if args else None)}

    async def put_mode(self, request: Request, args: list[str]) -> Any:
        mode = str(self._body(request).get("mode") or "").upper()
        if mode not in MODES:
            raise RegistryError(42204, f"Invalid mode. Valid values are {', '.join(MODES)}")
        key = {"keytype": "MODE", "subject": args[0] if args else None, "magic": 0}
        return await self.store.write(lambda _s: ([(key, {"mode": mode})], {"mode": mode}), self.node_id)

    async def delete_mode(self, _r: Request, args: list[str]) -> Any:
        def build(state: RegistryState) -> tuple[list[Any], Any]:
            previous = {"mode": state.mode(args[0])}
            return self._tombstones(state, "MODE", args[0]), previous

        return await self.store.write(build, self.node_id)


def resolve_references(state: RegistryState, refs: list[SchemaReference]) -> dict[str, ParsedSchema]:
    """{reference name: its parsed schema}, references of references first; 42201 for one not registered."""
    out: dict[str, ParsedSchema] = {}
    for ref in refs:
        found = state.versions.get((ref.subject, ref.version))
        if found is None:
            raise RegistryError(42201, f"Invalid schema: reference {ref.name} ({ref.subject} version {ref.version}) "
                                       "is not registered")
        nested = resolve_references(state, found.references)
        out.update(nested)
        try:
            out[ref.name] = parse_schema(found.schema_type, found.schema, found.references, nested)
        except InvalidSchemaError as exc:
            raise RegistryError(42201, str(exc)) from None
    return out
