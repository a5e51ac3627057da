"""What a group coordinator operation knows about the request beyond its body."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["RequestInfo"]


@dataclass(frozen=True)
class RequestInfo:
    """The API version and the client of a request."""

    api_version: int = 0
    client_id: str = ""
    client_host: str = ""
    # The subset of the given topic names the request's principal may DESCRIBE (Kafka filters a member's
    # regex resolution through the authorizer with the heartbeat's context); None: no authorizer, all.
    describable_topics: Callable[[Iterable[str]], set[str]] | None = field(default=None, compare=False)
