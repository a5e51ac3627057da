"""Shared broker state: configuration, cluster metadata, the handler registry, open connections."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from coordinator.transaction.producer_ids import ProducerIdManager
from pykbroker.config import Config, Listener
from pykbroker.metadata_store import EmbeddedMetadataStore, load_or_create_cluster_id
from pykbroker.registry import REGISTRY, Registry
from wire import ErrorCode
from wire.messages import ApiVersionsResponse
from wire.messages.api_versions_response import ApiVersion

if TYPE_CHECKING:
    from pykbroker.connection import Connection

log = logging.getLogger("pykbroker.broker")


class Broker:
    """Everything request handlers share. Lives on the event loop; no locks needed."""

    def __init__(self, config: Config, registry: Registry = REGISTRY) -> None:
        import pykbroker.handlers  # noqa: F401  (registers every handler)

        self.config = config
        self.registry = registry
        self.node_id = config.node_id
        self.cluster_id = load_or_create_cluster_id(config.log_dirs, config.node_id, config["cluster.id"])
        self.metadata = EmbeddedMetadataStore(config.log_dirs[0], config.node_id)
        self.producer_ids = ProducerIdManager(config.log_dirs[0], config.node_id)
        self.connections: set[Connection] = set()
        # Set by the server once sockets are bound (port 0 becomes the real port).
        self.bound_listeners: dict[str, Listener] = {}
        self._api_versions_cache: list[ApiVersion] | None = None

    @property
    def controller_id(self) -> int:
        """Single node: this broker is the controller."""
        return self.node_id

    def advertised_listener(self, listener_name: str) -> Listener:
        """The address clients connected on ``listener_name`` should use for this broker."""
        advertised = {lst.name: lst for lst in self.config.advertised_listeners}
        lst = advertised.get(listener_name) or self.config.advertised_listeners[0]
        bound = self.bound_listeners.get(lst.name)
        port = lst.port
        host = lst.host
        if bound is not None and port == 0:
            port = bound.port
        if host in ("", "0.0.0.0", "::"):
            host = bound.host if bound is not None and bound.host not in ("", "0.0.0.0", "::") else "localhost"
        return Listener(lst.name, host, port)

    def api_versions(self) -> list[ApiVersion]:
        """The ApiVersions entries, computed from the registry."""
        if self._api_versions_cache is None:
            self._api_versions_cache = [ApiVersion(api_key=k, min_version=lo, max_version=hi)
                                        for k, lo, hi in self.registry.api_versions()]
        return self._api_versions_cache

    def unsupported_api_versions_response(self) -> ApiVersionsResponse:
        """The v0-encoded answer to an ApiVersions request newer than we serve."""
        return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=self.api_versions())

    async def auto_create_topic(self, name: str):
        """Create ``name`` for a Metadata request when auto.create.topics.enable; None when not allowed.

        The data path adds topic creation with logs; until then auto-creation is refused.
        """
        return None
