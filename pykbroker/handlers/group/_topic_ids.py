"""Topic ids in the offset APIs (OffsetCommit v10, OffsetFetch v10, TxnOffsetCommit v6): Kafka 4.4's brokers
resolve a topic id to its name before the group coordinator sees the request, which keeps offsets by name,
and answer with ids (names empty). An id this broker does not know is UNKNOWN_TOPIC_ID."""

from __future__ import annotations

import uuid

from pykbroker.context import RequestContext
from wire import ZERO_UUID


def topic_name(ctx: RequestContext, topic_id: uuid.UUID) -> str | None:
    """The name of the topic with ``topic_id``, None when there is none (the zero id included)."""
    topic = ctx.metadata.topics_by_id.get(topic_id)
    return None if topic is None else topic.name


def topic_id(ctx: RequestContext, name: str) -> uuid.UUID:
    """The id of topic ``name`` (the zero id when it is gone)."""
    topic = ctx.metadata.topics.get(name)
    return ZERO_UUID if topic is None else topic.topic_id


def answer_by_id(ctx: RequestContext, topics: list) -> list:
    """Response topics (with ``name`` and ``topic_id``) renamed to ids, as v10 / v6 answer."""
    for t in topics:
        if t.name:
            t.topic_id, t.name = topic_id(ctx, t.name), ""
    return topics
