"""What every group handler needs: the coordinator and the request's client identity."""

from __future__ import annotations

from coordinator.group import GroupCoordinator, RequestInfo
from pykbroker.context import RequestContext
from pykbroker.features import GROUP_VERSION

__all__ = ["consumer_protocol_enabled", "coordinator", "request_info"]


def coordinator(ctx: RequestContext) -> GroupCoordinator:
    return ctx.broker.group_coordinator


def consumer_protocol_enabled(ctx: RequestContext) -> bool:
    """Kafka's isConsumerGroupProtocolEnabled: "consumer" in group.coordinator.rebalance.protocols and
    group.version >= 1 finalized (``kafka-features downgrade --feature group.version=0`` turns KIP-848 off)."""
    return (ctx.broker.group_coordinator.config.consumer_protocol_enabled
            and ctx.metadata.finalized_features.get(GROUP_VERSION, 0) >= 1)


def request_info(ctx: RequestContext) -> RequestInfo:
    """Client id and host as Kafka records them for members ("/host", like InetAddress.toString())."""
    host = ctx.client_address.rsplit(":", 1)[0] if ":" in ctx.client_address else ctx.client_address
    return RequestInfo(api_version=ctx.api_version, client_id=ctx.client_id or "", client_host=f"/{host}")
