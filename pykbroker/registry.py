"""The handler registry: the single source of truth for what the broker serves.

Each handler module registers one coroutine per API key with the version range it implements;
dispatch is a lookup here and the ApiVersions answer is computed from it. The ranges are known before
the modules are imported (``pykbroker.handlers.SERVED_APIS``): a module is imported on its API's first
request, off the event loop, and must register exactly the range listed for it.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykbroker.handlers import SERVED_APIS
from wire import REQUESTS, RESPONSES, ApiKey, Message, Reader

if TYPE_CHECKING:
    from pykbroker.context import RequestContext

Handler = Callable[["RequestContext", Any], Coroutine[Any, Any, Any]]
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
    request_class: type[Message]
    response_class: type
    # Reads a request body (Reader, version): the generated codec's decode_from unless the API has a faster one
    # (wire.decode_produce_request) that gives the same requests and errors.
    decode: Callable[[Reader, int], Any] | None = None

    def __post_init__(self) -> None:
        if self.decode is None:
            object.__setattr__(self, "decode", self.request_class.decode_from)

    @property
    def name(self) -> str:
        return ApiKey(self.api_key).name

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


class Registry:
    """API key -> ApiHandler, for the APIs in ``served``: (api key, min version, max version, module)."""

    def __init__(self, served: Iterable[tuple[int, int, int, str]]) -> None:
        self._served = {int(api_key): (lo, hi, module) for api_key, lo, hi, module in served}
        self._handlers: dict[int, ApiHandler] = {}
        # One import at a time: two threads importing modules that import each other could each see the
        # other's module half initialized.
        self._import_lock = threading.Lock()

    def register(self, entry: ApiHandler) -> None:
        if entry.api_key in self._handlers:
            raise ValueError(f"API {entry.name} registered twice")
        declared = (entry.min_version, entry.max_version, entry.handle.__module__)
        if self._served.get(entry.api_key) != declared:
            raise ValueError(f"{entry.name}: v{declared[0]}-{declared[1]} in {declared[2]} is not what "
                             f"SERVED_APIS lists ({self._served.get(entry.api_key)})")
        req = entry.request_class
        if entry.min_version < req.LOWEST_VERSION and entry.error_response is None:
            raise ValueError(f"{entry.name}: versions below {req.LOWEST_VERSION} need an error responder")
        if entry.max_version > req.HIGHEST_VERSION:
            raise ValueError(f"{entry.name}: no generated codec for v{entry.max_version}")
        self._handlers[entry.api_key] = entry

    def get(self, api_key: int) -> ApiHandler | None:
        """The handler of ``api_key`` once its module is imported, else None (see ``load``)."""
        return self._handlers.get(api_key)

    async def load(self, api_key: int) -> ApiHandler | None:
        """The handler of ``api_key``, importing its module in a thread first if needed; None if not served.

        In a thread because some modules bring in a coordinator (~0.1 s of imports); the event loop
        keeps serving other connections meanwhile.
        """
        entry = self._handlers.get(api_key)
        if entry is None and api_key in self._served:
            await asyncio.to_thread(self._import, self._served[api_key][2])
            entry = self._handlers[api_key]
        return entry

    def load_all(self) -> None:
        """Import every handler module now (tests that call handlers directly)."""
        for _lo, _hi, module in self._served.values():
            self._import(module)

    def _import(self, module: str) -> None:
        with self._import_lock:
            importlib.import_module(module)

    def api_versions(self) -> list[tuple[int, int, int]]:
        """(api_key, min_version, max_version) for every served API, sorted by key."""
        return [(k, lo, hi) for k, (lo, hi, _module) in sorted(self._served.items())]

    def __iter__(self):
        return iter(self._handlers.values())


REGISTRY = Registry(SERVED_APIS)


def handler(api_key: ApiKey, min_version: int, max_version: int, *, error_response: ErrorResponder | None = None,
            decode: Callable[[Reader, int], Any] | None = None) -> Callable[[Handler], Handler]:
    """Register the decorated coroutine as the handler of ``api_key`` for the given versions (``decode``: see
    ApiHandler)."""

    def register(fn: Handler) -> Handler:
        REGISTRY.register(ApiHandler(int(api_key), min_version, max_version, fn, error_response,
                                     REQUESTS[int(api_key)], RESPONSES[int(api_key)], decode))
        return fn

    return register
