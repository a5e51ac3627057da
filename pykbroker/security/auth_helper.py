"""What handlers call to authorize a request (Kafka's AuthHelper): one call per check, nothing else to know.

Each function takes the request context; with no authorizer configured everything is allowed and
authorized-operation bit sets hold every operation the resource type supports, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from replication.metadata.acl import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    ResourceType,
    authorized_operations_bits,
)
from wire import ApiKey

if TYPE_CHECKING:
    from pykbroker.context import RequestContext
    from pykbroker.security.authorizer import StandardAuthorizer

__all__ = ["AclOperation", "ResourceType", "authorize", "authorize_by_resource_type", "authorize_cluster",
           "authorized_operations", "filter_by_authorized", "has_authorizer"]


def _authorizer(ctx: RequestContext) -> StandardAuthorizer | None:
    return getattr(ctx.broker, "authorizer", None)


def _host(ctx: RequestContext) -> str:
    """The client's address without the port (what ACL hosts name)."""
    return ctx.client_address.rsplit(":", 1)[0].strip("[]")


def _api_name(ctx: RequestContext) -> str:
    key = ctx.header.request_api_key
    name = ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)
    return "".join(word.capitalize() for word in name.split("_"))


def has_authorizer(ctx: RequestContext) -> bool:
    return _authorizer(ctx) is not None


def authorize(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str, *,
              log_if_allowed: bool = True, log_if_denied: bool = True, ref_count: int = 1) -> bool:
    """May the request's principal do ``operation`` on the named resource?"""
    authorizer = _authorizer(ctx)
    if authorizer is None:
        return True
    return authorizer.authorize(ctx.principal, _host(ctx), operation, resource_type, name, _api_name(ctx),
                                log_if_allowed=log_if_allowed, log_if_denied=log_if_denied, ref_count=ref_count)


def authorize_cluster(ctx: RequestContext, operation: AclOperation, *, log_if_denied: bool = True) -> bool:
    """``operation`` on the CLUSTER resource (Kafka's authorizeClusterOperation without the throw)."""
    return authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME, log_if_denied=log_if_denied)


def filter_by_authorized(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType,
                         names: Iterable[str], *, log_if_denied: bool = True) -> set[str]:
    """The names (each checked once, counting its references) the principal may do ``operation`` on."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    if _authorizer(ctx) is None:
        return set(counts)
    return {name for name, count in counts.items()
            if authorize(ctx, operation, resource_type, name, log_if_denied=log_if_denied, ref_count=count)}


def authorize_by_resource_type(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
    """May the principal do ``operation`` on at least one resource of the type?"""
    authorizer = _authorizer(ctx)
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(ctx.principal, _host(ctx), operation, resource_type, _api_name(ctx))


def authorized_operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The bit set of the operations the principal may do on the resource (never logged)."""
    supported = SUPPORTED_OPERATIONS[resource_type]
    if _authorizer(ctx) is None:
        return authorized_operations_bits(supported)
    return authorized_operations_bits(op for op in supported if authorize(
        ctx, op, resource_type, name, log_if_allowed=False, log_if_denied=False))


def not_authorized_message(ctx: RequestContext, operation: AclOperation) -> str:
    """The message of Kafka's ClusterAuthorizationException from authorizeClusterOperation (it names the request
    and the operation on the cluster it needed)."""
    return (f"Request Request(connectionId={ctx.client_address}, session=Session({ctx.principal},/{_host(ctx)}), "
            f"listenerName=ListenerName({ctx.listener.name})) needs {operation.name} permission.")
