"""What every group handler needs: the coordinator and the request's client identity."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from coordinator.group import GroupCoordinator, RequestInfo
from pykbroker.context import RequestContext
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized, has_authorizer
from replication.metadata.features import GROUP_VERSION

__all__ = ["consumer_protocol_enabled", "coordinator", "describable_topics", "request_info"]


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
    return RequestInfo(api_version=ctx.api_version, client_id=ctx.client_id or "", client_host=f"/{host}",
                       describable_topics=describable_topics(ctx) if has_authorizer(ctx) else None)


def describable_topics(ctx: RequestContext) -> Callable[[Iterable[str]], set[str]]:
    """The filter a member's regex resolution goes through: topics the principal may DESCRIBE, allowed ones
    logged and denied ones not (Kafka's filterTopicDescribeAuthorizedTopics)."""
    def describable(names: Iterable[str]) -> set[str]:
        return filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names, log_if_denied=False)
    return describable
