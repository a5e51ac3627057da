"""What a group coordinator operation knows about the request beyond its body."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RequestInfo"]


@dataclass(frozen=True)
class RequestInfo:
    """The API version and the client of a request."""

    api_version: int = 0
    client_id: str = ""
    client_host: str = ""
