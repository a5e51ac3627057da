"""What every share-group handler needs: whether share groups are on, and the service."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from coordinator.share.service import ShareGroupService
from pykbroker.context import RequestContext
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized

__all__ = ["client_host", "enabled", "member_id_valid", "readable_topic_ids", "service"]


def enabled(ctx: RequestContext) -> bool:
    """Kafka's isShareGroupProtocolEnabled: share.version >= 1 finalized, or group.share.enable."""
    return ctx.broker.share_groups_enabled


def service(ctx: RequestContext) -> ShareGroupService:
    return ctx.broker.share_groups


def member_id_valid(member_id: str | None) -> bool:
    """Kafka's isMemberIdValid: non-empty and at most 36 characters (a UUID's string form)."""
    return member_id is not None and 0 < len(member_id) <= 36


def client_host(ctx: RequestContext) -> str:
    host = ctx.client_address.rsplit(":", 1)[0] if ":" in ctx.client_address else ctx.client_address
    return f"/{host}"


def readable_topic_ids(ctx: RequestContext, topic_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """The ids of the known topics among ``topic_ids`` the principal may READ (Kafka's filterByAuthorized over
    the topic names of a ShareFetch's or ShareAcknowledge's partitions; each name checked once)."""
    topics_by_id = ctx.metadata.topics_by_id
    names = {t: topics_by_id[t].name for t in topic_ids if t in topics_by_id}
    readable = filter_by_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, names.values())
    return {t for t, name in names.items() if name in readable}
