"""The share-session and acknowledgement steps ShareFetch and ShareAcknowledge have in common."""

from __future__ import annotations

import uuid

from coordinator.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, ShareSessionError
from pykbroker.context import RequestContext
from pykbroker.handlers.share._common import service
from wire import ErrorCode

__all__ = ["acknowledge", "close_session", "parse_acks"]

Key = tuple[str, uuid.UUID, int]


def parse_acks(group_id: str, topics) -> dict[Key, list[tuple[int, int, list[int]]]]:
    """{(group, topic id, partition): [(first, last, types)]} of the request's acknowledgement batches. When the
    request acknowledges anything, every partition it names is there (without batches: nothing to apply), as Kafka
    4.4 acknowledges them all and answers each with its acknowledge error code; else it is empty."""
    out: dict[Key, list[tuple[int, int, list[int]]]] = {}
    for t in topics:
        for p in t.partitions:
            out.setdefault((group_id, t.topic_id, p.partition_index), []).extend(
                (b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in p.acknowledgement_batches)
    return out if any(out.values()) else {}


def valid_ack_types(acks: dict[Key, list[tuple[int, int, list[int]]]], renew_allowed: bool) -> bool:
    highest = 4 if renew_allowed else 3
    return all(types and all(0 <= t <= highest for t in types) for batches in acks.values() for _, _, types in batches)


async def acknowledge(ctx: RequestContext, group_id: str, member_id: str, acks,
                      readable: set[uuid.UUID]) -> dict[Key, int]:
    """Apply acknowledgements of partitions the broker hosts; unknown topic ids answer UNKNOWN_TOPIC_ID, topics
    the principal may not READ (not in ``readable``) TOPIC_AUTHORIZATION_FAILED, as Kafka."""
    topics_by_id = ctx.metadata.topics_by_id
    known = {k: v for k, v in acks.items() if k[1] in topics_by_id and k[1] in readable}
    codes = await service(ctx).partitions.acknowledge(group_id, member_id, known) if known else {}
    for key in acks:
        codes.setdefault(key, ErrorCode.TOPIC_AUTHORIZATION_FAILED if key[1] in topics_by_id
                         else ErrorCode.UNKNOWN_TOPIC_ID)
    return codes


async def close_session(ctx: RequestContext, group_id: str, member_id: str) -> None:
    """Epoch -1: the session ends and the member's acquired records go back to the others."""
    svc = service(ctx)
    session = svc.sessions.remove(group_id, member_id)
    if session is not None:
        keys = [(group_id, t, p) for t, p in session.partitions]
        await svc.partitions.release_member(group_id, member_id, keys)


def session_for(ctx: RequestContext, group_id: str, member_id: str, epoch: int,
                added: list[tuple[uuid.UUID, int]]) -> ShareSession:
    """Open (epoch 0) or advance the member's share session; raises ShareSessionError."""
    sessions = service(ctx).sessions
    if epoch == INITIAL_EPOCH:
        return sessions.open(group_id, member_id, added, connection=ctx.client_address)
    session = sessions.advance(group_id, member_id, epoch)
    return session


__all__ += ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSessionError", "session_for", "valid_ack_types"]
