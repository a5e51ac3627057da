"""A Confluent-compatible schema registry served by the broker (``schema.registry.listeners``, off by default),
as Redpanda builds one in: Confluent's serializers, CLI and UIs point ``schema.registry.url`` at any broker.

``store.SchemasTopic`` keeps ids and schemas in the compacted ``_schemas`` topic in Confluent's record format
(``state.py``), so they survive restarts and every broker of a cluster serves the same registry; ``api.py``
answers Confluent's REST API on a stdlib HTTP server on the broker's event loop (``console.http``);
``schemas.py`` parses Avro, JSON Schema and Protobuf and checks compatibility; ``wire_format.py`` decodes
values Confluent's serializers wrote (for the console and Iceberg topics). ``SchemaRegistry.lookup`` gives the
decoder a schema by id.
"""

from __future__ import annotations

import logging
from typing import Any

from pykbroker.config import ConfigError
from pykbroker.console.http import ConsoleHttpServer, Request, Response
from pykbroker.metrics.http import parse_host_port
from pykbroker.schema_registry.api import RegistryApi
from pykbroker.schema_registry.security import RegistrySecurity
from pykbroker.schema_registry.state import RegistryState, StoredSchema
from pykbroker.schema_registry.store import SchemasTopic
from pykbroker.schema_registry.wire_format import RegisteredSchema

__all__ = ["RegistryHttpServer", "SchemaRegistry", "registered_schema"]

log = logging.getLogger("pykbroker.schema_registry")


class RegistryHttpServer(ConsoleHttpServer):
    """The console's HTTP server with path patterns (subjects and versions in the path) instead of fixed routes."""

    def __init__(self, api: RegistryApi) -> None:
        super().__init__({})
        self.api = api

    async def _answer(self, request: Request) -> Response:
        try:
            return await self.api.answer(request)
        except Exception:
            log.exception("schema registry: serving %s %s failed", request.method, request.path)
            return Response(500, "application/json", b'{"error_code":500,"message":"internal error"}')


def registered_schema(state: RegistryState, stored: StoredSchema) -> RegisteredSchema:
    """The decoder's view of ``stored``, its references resolved from ``state``."""
    refs = {}
    for ref in stored.references:
        found = state.versions.get((ref.subject, ref.version))
        if found is not None:
            refs[ref.name] = registered_schema(state, found)
    return RegisteredSchema(stored.id, stored.schema_type, stored.schema, refs)


class SchemaRegistry:
    """The registry of one broker: its store, its HTTP listeners, and schemas by id for decoders."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.store = SchemasTopic(broker, broker.config["schema.registry.topic"])
        self.api = RegistryApi(self.store, broker.node_id, RegistrySecurity(
            broker, broker.config["schema.registry.authentication.method"] == "BASIC",
            bool(broker.config["schema.registry.authorization.enable"])))
        self.servers: list[RegistryHttpServer] = []
        self.ports: list[int] = []
        self._cache: dict[int, RegisteredSchema] = {}

    async def start(self) -> None:
        try:
            import fastavro  # noqa: F401
            import google.protobuf  # noqa: F401
        except ImportError as exc:
            raise ConfigError(f"schema.registry.listeners: the registry needs fastavro and protobuf ({exc}); "
                              "pip install 'pykbroker[registry]'") from None
        for value in broker_listeners(self.broker.config["schema.registry.listeners"]):
            tls = value.startswith("https://")
            host, port = parse_host_port("schema.registry.listeners", value.removeprefix("https://"))
            if tls:
                from pykbroker.console import page_ssl_context
            context = page_ssl_context(self.broker.config, "schema.registry.listeners") if tls else None
            server = RegistryHttpServer(self.api)
            try:
                bound = await server.start(host, port, context)
            except OSError as exc:
                raise ConfigError(f"schema.registry.listeners: {host or '0.0.0.0'}:{port} cannot be bound "
                                  f"({exc.strerror or exc}); pick another port, e.g. --override "
                                  "schema.registry.listeners=http://127.0.0.1:0 (any free one)") from exc
            self.servers.append(server)
            self.ports.append(bound)
            log.info("schema registry: serving Confluent's Schema Registry API at %s://%s:%d/ (schemas in %s; %s, %s)",
                     "https" if tls else "http", host or "0.0.0.0", bound, self.store.topic,
                     "basic authentication with the broker's SCRAM users" if self.api.security.basic
                     else "no authentication", "ACLs authorize" if self.api.security.authorization
                     else "no authorization")

    async def close(self) -> None:
        for server in self.servers:
            await server.close()

    def lookup(self, schema_id: int) -> RegisteredSchema | None:
        """The schema of ``schema_id`` as far as this broker has read ``_schemas`` (``refresh`` reads on)."""
        cached = self._cache.get(schema_id)
        if cached is not None:
            return cached
        stored = self.store.state.by_id(schema_id)
        if stored is None:
            return None
        schema = self._cache[schema_id] = registered_schema(self.store.state, stored)
        return schema

    def latest(self, subject: str) -> RegisteredSchema | None:
        """The latest (not deleted) version of ``subject`` as far as this broker has read ``_schemas``."""
        versions = self.store.state.subject_versions(subject)
        return self.lookup(versions[-1].id) if versions else None

    async def refresh(self) -> None:
        """Read ``_schemas`` up to its high watermark (a decoder calls this when ``lookup`` misses)."""
        await self.store.catch_up()


def broker_listeners(value: str) -> list[str]:
    """Each comma-separated entry of ``schema.registry.listeners``: host:port, or https://host:port for TLS."""
    return [v.strip().removeprefix("http://") for v in value.split(",") if v.strip()]
