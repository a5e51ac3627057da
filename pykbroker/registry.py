"""The handler registry: the single source of truth for what the broker serves.

Each handler module registers one coroutine per API key with the version range it implements;
dispatch is a lookup here and the ApiVersions answer is computed from it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wire import REQUESTS, RESPONSES, ApiKey

if TYPE_CHECKING:
    from pykbroker.context import RequestContext

Handler = Callable[["RequestContext", Any], Awaitable[Any]]
ErrorResponder = Callable[[Any, int, int], Any]

__all__ = ["ApiHandler", "REGISTRY", "handler", "Registry"]


@dataclass(frozen=True)
class ApiHandler:
    """One API: key, served versions, the coroutine, and how to answer with an error code."""

    api_key: int
    min_version: int
    max_version: int
    handle: Handler
    error_response: ErrorResponder | None
    request_class: type
    response_class: type

    @property
    def name(self) -> str:
        return ApiKey(self.api_key).name

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class Registry:
    """API key -> ApiHandler."""

    def __init__(self) -> None:
        self._handlers: dict[int, ApiHandler] = {}

    def register(self, entry: ApiHandler) -> None:
        if entry.api_key in self._handlers:
            raise ValueError(f"API {entry.name} registered twice")
        req = entry.request_class
        if entry.min_version < req.LOWEST_VERSION and entry.error_response is None:
            raise ValueError(f"{entry.name}: versions below {req.LOWEST_VERSION} need an error responder")
        if entry.max_version > req.HIGHEST_VERSION:
            raise ValueError(f"{entry.name}: no generated codec for v{entry.max_version}")
        self._handlers[entry.api_key] = entry

    def get(self, api_key: int) -> ApiHandler | None:
        return self._handlers.get(api_key)

    def api_versions(self) -> list[tuple[int, int, int]]:
        """(api_key, min_version, max_version) for every served API, sorted by key."""
        return [(k, h.min_version, h.max_version) for k, h in sorted(self._handlers.items())]

    def __iter__(self):
        return iter(self._handlers.values())


REGISTRY = Registry()


def handler(api_key: ApiKey, min_version: int, max_version: int, *,
            error_response: ErrorResponder | None = None) -> Callable[[Handler], Handler]:
    """Register the decorated coroutine as the handler of ``api_key`` for the given versions."""

    def register(fn: Handler) -> Handler:
        REGISTRY.register(ApiHandler(int(api_key), min_version, max_version, fn, error_response,
                                     REQUESTS[int(api_key)], RESPONSES[int(api_key)]))
        return fn

    return register
