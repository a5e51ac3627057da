"""What every share-group handler needs: whether share groups are on, and the service."""

from __future__ import annotations

from coordinator.share.service import ShareGroupService
from pykbroker.context import RequestContext

__all__ = ["client_host", "enabled", "member_id_valid", "service"]


def enabled(ctx: RequestContext) -> bool:
    """Kafka's isShareGroupProtocolEnabled: share.version >= 1 finalized, or group.share.enable."""
    return ctx.broker.share_groups_enabled


def service(ctx: RequestContext) -> ShareGroupService:
    return ctx.broker.share_groups


def member_id_valid(member_id: str | None) -> bool:
    """Kafka's isMemberIdValid: non-empty and at most 36 characters (a UUID's string form)."""
    return bool(member_id) and len(member_id) <= 36


def client_host(ctx: RequestContext) -> str:
    host = ctx.client_address.rsplit(":", 1)[0] if ":" in ctx.client_address else ctx.client_address
    return f"/{host}"
