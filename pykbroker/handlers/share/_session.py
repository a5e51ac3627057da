"""The share-session and acknowledgement steps ShareFetch and ShareAcknowledge have in common."""

from __future__ import annotations

import uuid

from coordinator.share.share_session import FINAL_EPOCH, INITIAL_EPOCH, ShareSession, ShareSessionError
from pykbroker.context import RequestContext
from pykbroker.handlers.share._common import service
from wire import ErrorCode

__all__ = ["acknowledge", "close_session", "parse_acks", "partition_exists"]


Key = tuple[str, uuid.UUID, int]


def parse_acks(group_id: str, topics) -> dict[Key, list[tuple[int, int, list[int]]]]:
    """{(group, topic id, partition): [(first, last, types)]} of the request's acknowledgement batches. When the
    request acknowledges anything, every partition it names is there (without batches: nothing to apply), as Kafka
    4.4 acknowledges them all and answers each with its acknowledge error code; else it is empty. A partition named
    twice has the batches of its last entry, as in Kafka's map of them."""
    out: dict[Key, list[tuple[int, int, list[int]]]] = {}
    for t in topics:
        for p in t.partitions:
            out[(group_id, t.topic_id, p.partition_index)] = [
                (b.first_offset, b.last_offset, list(b.acknowledge_types)) for b in p.acknowledgement_batches]
    return out if any(out.values()) else {}


def invalid_ack_batches(acks: dict[Key, list[tuple[int, int, list[int]]]], renew_allowed: bool) -> set[Key]:
    """The partitions Kafka 4.4's KafkaApis refuses before its share-partitions see them (INVALID_REQUEST, no
    message; the others go on): a batch whose first offset is past its last, that starts before the previous batch
    of the partition ends (out of order, or inside it: overlapping by its last offset alone passes), without types
    or with neither one type nor one per offset, or of an unknown type (RENEW without ``is_renew_ack``)."""
    highest = 4 if renew_allowed else 3
    invalid = set()
    for key, batches in acks.items():
        previous_last = -1
        for first, last, types in batches:
            if first > last or first < previous_last or not types \
                    or (len(types) > 1 and last - first != len(types) - 1) or not all(0 <= t <= highest for t in types):
                invalid.add(key)
                break
            previous_last = last
    return invalid


async def acknowledge(ctx: RequestContext, group_id: str, member_id: str, acks,
                      readable: set[uuid.UUID], renew_allowed: bool) -> dict[Key, tuple[int, str | None]]:
    """Apply acknowledgements of partitions the broker hosts: (code, message) per partition. Unknown topic ids
    answer UNKNOWN_TOPIC_ID, a partition the topic does not have UNKNOWN_TOPIC_OR_PARTITION (no message: refused
    before Kafka 4.4's share-partition manager, which gives one for a partition it has not loaded), topics the
    principal may not READ (not in ``readable``) TOPIC_AUTHORIZATION_FAILED, as Kafka 4.4."""
    topics_by_id = ctx.metadata.topics_by_id
    invalid = invalid_ack_batches(acks, renew_allowed)
    known = {k: v for k, v in acks.items()
             if k[1] in readable and partition_exists(ctx, k[1], k[2]) and k not in invalid}
    codes = await service(ctx).partitions.acknowledge(group_id, member_id, known) if known else {}
    codes |= {k: (ErrorCode.INVALID_REQUEST, None) for k in invalid
              if k[1] in readable and partition_exists(ctx, k[1], k[2])}
    for key in acks:
        codes.setdefault(key, (ErrorCode.UNKNOWN_TOPIC_ID if key[1] not in topics_by_id
                               else ErrorCode.TOPIC_AUTHORIZATION_FAILED if key[1] not in readable
                               else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
    return codes


def partition_exists(ctx: RequestContext, topic_id: uuid.UUID, index: int) -> bool:
    """Whether the topic is known and has partition ``index``."""
    topic = ctx.metadata.topics_by_id.get(topic_id)
    return topic is not None and 0 <= index < len(topic.partitions)


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


__all__ += ["FINAL_EPOCH", "INITIAL_EPOCH", "ShareSessionError", "invalid_ack_batches", "session_for"]
