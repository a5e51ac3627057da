"""What every share-group handler needs: whether share groups are on, and the service."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from coordinator.runtime.errors import ApiError
from coordinator.share.service import ShareGroupService
from coordinator.share.share_group import ShareGroup
from coordinator.share.share_partition_manager import UNKNOWN_TOPIC_MESSAGE
from pykbroker.context import RequestContext
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from wire import ErrorCode

__all__ = ["UNKNOWN_TOPIC_MESSAGE", "client_host", "enabled", "leader_of", "member_id_valid", "readable_topic_ids", "service", "share_group"]



def enabled(ctx: RequestContext) -> bool:
    """Kafka's isShareGroupProtocolEnabled: share.version >= 1 finalized, or group.share.enable."""
    return ctx.broker.share_groups_enabled


def service(ctx: RequestContext) -> ShareGroupService:
    return ctx.broker.share_groups


async def share_group(ctx: RequestContext, group_id: str) -> tuple[int, ShareGroup | None]:
    """(error code, the share group or None if unknown) from the group's __consumer_offsets shard."""
    try:
        return 0, await service(ctx).group(group_id)
    except ApiError as exc:
        return exc.error_code, None


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


def leader_of(ctx: RequestContext, topic_id: uuid.UUID, index: int, error: int) -> tuple[int, int]:
    """(leader id, leader epoch) a ShareFetch or ShareAcknowledge partition answers: the partition's leader where
    ``error`` says the client asked the wrong broker (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH), else zeros, as
    Kafka 4.4 leaves the field unset."""
    if error not in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH):
        return 0, 0
    topic = ctx.metadata.topics_by_id.get(topic_id)
    if topic is None or index >= len(topic.partitions):
        return -1, -1
    p = topic.partitions[index]
    return p.leader, p.leader_epoch
