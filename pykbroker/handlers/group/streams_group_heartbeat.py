"""StreamsGroupHeartbeat v0-1: the Streams group protocol of KIP-1071 (``coordinator.group.streams_protocol``).

Served while streams groups are on (``Broker.streams_groups_enabled``); otherwise UNSUPPORTED_VERSION. A
MISSING_INTERNAL_TOPICS status makes the broker create the group's repartition and changelog topics. READ on the group is required, DESCRIBE on the
topology's source topics as Kafka checks them.
"""

from __future__ import annotations

import logging

from coordinator.group.streams_topology import StatusCode, missing_internal_topics
from coordinator.group.topics import MetadataStoreTopics
from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize, filter_by_authorized
from wire import ApiKey, ErrorCode
from wire.messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse

log = logging.getLogger("pykbroker.coordinator.group")


def error_response(request: StreamsGroupHeartbeatRequest | None, version: int,
                   code: int) -> StreamsGroupHeartbeatResponse:
    return StreamsGroupHeartbeatResponse(error_code=code)


@handler(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, error_response=error_response)
async def handle_streams_group_heartbeat(ctx: RequestContext,
                                         request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse:
    if not ctx.broker.streams_groups_enabled:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if request.topology is not None:
        sources = {t for s in request.topology.subtopologies for t in s.source_topics}
        if sources and len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, sources)) < len(sources):
            return error_response(request, ctx.api_version, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    response = await coordinator(ctx).streams_group_heartbeat(request_info(ctx), request)
    if any(s.status_code == StatusCode.MISSING_INTERNAL_TOPICS for s in response.status or ()):
        await _create_internal_topics(ctx, request)
    return response


async def _create_internal_topics(ctx: RequestContext, request: StreamsGroupHeartbeatRequest) -> None:
    """Create the group's missing repartition and changelog topics (Kafka 4.4 does it broker-side); the
    member's next heartbeat finds them and gets its tasks."""
    topology = await coordinator(ctx).streams_group_topology(request.group_id)
    if topology is None:
        return
    topics = MetadataStoreTopics(ctx.broker.metadata)
    for t in missing_internal_topics(topology, topics):
        try:
            created = await ctx.broker.internal_topics.create_streams_internal_topic(
                t.name, t.partitions, t.replication_factor, t.configs)
        except Exception as exc:  # the heartbeat is answered anyway; the status stays MISSING_INTERNAL_TOPICS
            log.warning("streams group %s: cannot create internal topic %s: %s", request.group_id, t.name, exc)
            continue
        if created:
            log.info("streams group %s: created internal topic %s (%d partitions)", request.group_id, t.name,
                     t.partitions)
