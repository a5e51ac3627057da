"""What the share coordinator's state APIs (83-87) have in common: CLUSTER_ACTION, one answer per partition.

These are broker-to-broker APIs: a share-partition leader calls the share coordinator of the share-partition's
__share_group_state partition. Each partition of the request is handled on its own by the local
``ShareCoordinator``; an ``ApiError`` (NOT_COORDINATOR when this broker does not lead that partition,
FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH, ...) becomes that partition's error code and message.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.runtime.errors import ApiError
from pykbroker.context import RequestContext
from pykbroker.handlers.share._common import service
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ErrorCode

__all__ = ["cluster_action_allowed", "per_partition"]

log = logging.getLogger("pykbroker.handlers.share_group_state")

Key = tuple[str, uuid.UUID, int]


def cluster_action_allowed(ctx: RequestContext) -> bool:
    """Kafka's authorizeClusterOperation(request, CLUSTER_ACTION) for the share state APIs."""
    return authorize_cluster(ctx, AclOperation.CLUSTER_ACTION)


# the coordinator runtime's errors, which Kafka 4.4's ShareCoordinatorService answers as "Unable to <operation>: "
# and the exception's message (its default message here)
_RUNTIME_ERRORS: dict[int, str] = {
    ErrorCode.NOT_COORDINATOR: "This is not the correct coordinator.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
}


async def per_partition(ctx: RequestContext, group_id: str, topics,
                        operation: Callable[[Key, Any], Awaitable[Any]],
                        what: str = "") -> list[tuple[uuid.UUID, Any, int, str | None, Any]]:
    """Run ``operation(key, partition data)`` on the local share coordinator for every partition of ``topics``;
    returns ``(topic id, partition data, error code, error message, result)`` in request order. ``what`` (e.g.
    "read share group state") words a coordinator error as Kafka 4.4 does: "Unable to read share group state: This
    is not the correct coordinator."."""
    out: list[tuple[uuid.UUID, Any, int, str | None, Any]] = []
    for t in topics:
        for p in t.partitions:
            key = (group_id, t.topic_id, p.partition)
            try:
                out.append((t.topic_id, p, ErrorCode.NONE, None, await operation(key, p)))
            except ApiError as exc:
                message = exc.message
                if what and exc.error_code in _RUNTIME_ERRORS:
                    message = f"Unable to {what}: {exc.message or _RUNTIME_ERRORS[exc.error_code]}"
                out.append((t.topic_id, p, exc.error_code, message, None))
            except Exception as exc:
                log.warning("share state of group %s topic %s partition %d failed: %s (%s)", group_id, t.topic_id,
                            p.partition, exc, ctx.describe())
                out.append((t.topic_id, p, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc), None))
    return out


def coordinator(ctx: RequestContext):
    return service(ctx).coordinator


def by_topic(rows, make_partition) -> dict[uuid.UUID, list]:
    """Group ``per_partition``'s rows by topic id, each made into a response partition."""
    out: dict[uuid.UUID, list] = {}
    for topic_id, p, code, message, result in rows:
        out.setdefault(topic_id, []).append(make_partition(p, code, message, result))
    return out


__all__ += ["by_topic", "coordinator"]
