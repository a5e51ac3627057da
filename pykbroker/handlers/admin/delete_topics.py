"""DeleteTopics v1-6: by name (all versions) or, from v6, by topic id — as the KRaft controller answers.

Duplicates in one request are refused with INVALID_REQUEST, unknown names with
UNKNOWN_TOPIC_OR_PARTITION, unknown ids with UNKNOWN_TOPIC_ID, and everything is refused when
``delete.topic.enable=false`` (INVALID_REQUEST before v3, TOPIC_DELETION_DISABLED after).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize_cluster, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import DeleteTopicsRequest, DeleteTopicsResponse
from wire.messages.delete_topics_response import DeletableTopicResult

if TYPE_CHECKING:
    from pykbroker.services import BrokerServices

log = logging.getLogger("pykbroker.handlers.delete_topics")

ZERO_UUID = uuid.UUID(int=0)
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."


def _requested(request: DeleteTopicsRequest) -> list[tuple[str | None, uuid.UUID]]:
    if request.topics:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, ZERO_UUID) for name in request.topic_names]


def error_response(request: DeleteTopicsRequest | None, version: int, code: int) -> DeleteTopicsResponse:
    wanted = [] if request is None else _requested(request)
    return DeleteTopicsResponse(responses=[DeletableTopicResult(name=n, topic_id=i, error_code=code)
                                           for n, i in wanted])


TOPIC_AUTHORIZATION_MESSAGE = "Topic authorization failed."


@handler(ApiKey.DELETE_TOPICS, 1, 6, error_response=error_response)
async def handle_delete_topics(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    broker = ctx.broker
    wanted = _requested(request)
    if not broker.config["delete.topic.enable"]:
        code = ErrorCode.INVALID_REQUEST if ctx.api_version < 3 else ErrorCode.TOPIC_DELETION_DISABLED
        message = "Topic deletion is disabled." if ctx.api_version < 3 else "Topic deletion is disabled."
        return DeleteTopicsResponse(responses=[
            DeletableTopicResult(name=n, topic_id=i, error_code=code, error_message=message) for n, i in wanted])
    results: list[DeletableTopicResult] = []

    def answer(name: str | None, topic_id: uuid.UUID, code: int, message: str | None = None) -> None:
        results.append(DeletableTopicResult(name=name, topic_id=topic_id, error_code=code, error_message=message))

    names = [n for n, i in wanted if n is not None and i == ZERO_UUID]
    await broker.admin.catch_up(names)  # a topic another broker created or deleted a moment ago
    ids = [i for n, i in wanted if n is None and i != ZERO_UUID]
    for name, topic_id in wanted:
        if name is None and topic_id == ZERO_UUID:
            answer(None, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
        elif name is not None and topic_id != ZERO_UUID:
            answer(name, topic_id, ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
    to_delete: dict[str, uuid.UUID] = {}
    # As Kafka's controller: DELETE on the cluster, else DESCRIBE and DELETE on each topic; a topic named by an
    # id the principal may not describe is not named back.
    checked = [n for n in names if names.count(n) == 1] + [
        ctx.metadata.topics_by_id[i].name for i in ids if ids.count(i) == 1 and i in ctx.metadata.topics_by_id]
    if authorize_cluster(ctx, AclOperation.DELETE, log_if_denied=False):
        describable = deletable = set(checked)
    else:
        describable = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, checked)
        deletable = filter_by_authorized(ctx, AclOperation.DELETE, ResourceType.TOPIC, checked)
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            answer(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            continue
        topic = ctx.metadata.topics.get(name)
        if name not in describable or (topic is not None and name not in deletable):
            answer(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_MESSAGE)
        elif topic is None:
            answer(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
        else:
            to_delete[name] = topic.topic_id
    for topic_id in dict.fromkeys(ids):
        if ids.count(topic_id) > 1:
            answer(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
            continue
        topic = ctx.metadata.topics_by_id.get(topic_id)
        if topic is None:
            answer(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_ID_MESSAGE)
        elif topic.name not in deletable:
            answer(topic.name if topic.name in describable else None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                   TOPIC_AUTHORIZATION_MESSAGE)
        elif topic.name in to_delete:
            del to_delete[topic.name]
            answer(topic.name, topic_id, ErrorCode.INVALID_REQUEST,
                   "The provided topic name maps to an ID that was already supplied.")
        else:
            to_delete[topic.name] = topic_id
    # Every topic at once (Kafka's controller deletes a request's topics together): the answer waits for the
    # slowest, not for the sum.
    deleted = await asyncio.gather(*(_delete(broker, name) for name in to_delete))
    for (name, topic_id), done in zip(to_delete.items(), deleted, strict=True):
        if not done:  # deleted meanwhile through another broker
            answer(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE)
            continue
        log.info("deleted topic %s (id %s) on request (%s)", name, topic_id, ctx.describe())
        answer(name, topic_id, ErrorCode.NONE)
    return DeleteTopicsResponse(responses=results)


async def _delete(broker: BrokerServices, name: str) -> bool:
    """Delete ``name``; False when it is gone already."""
    try:
        await broker.admin.delete_topic(name)
        return True
    except KeyError:
        return False
