"""What every group handler needs: the coordinator and the request's client identity."""

from __future__ import annotations

from coordinator.group import GroupCoordinator, RequestInfo
from pykbroker.context import RequestContext

__all__ = ["coordinator", "request_info"]


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    return ctx.broker.group_coordinator


def request_info(ctx: RequestContext) -> RequestInfo:
    """Client id and host as Kafka records them for members ("/host", like InetAddress.toString())."""
    host = ctx.client_address.rsplit(":", 1)[0] if ":" in ctx.client_address else ctx.client_address
    return RequestInfo(api_version=ctx.api_version, client_id=ctx.client_id or "", client_host=f"/{host}")
