"""StreamsGroupHeartbeat v0-1: the Streams group protocol of KIP-1071 (``coordinator.group.streams_protocol``).

Served while streams groups are on (``Broker.streams_groups_enabled``); otherwise UNSUPPORTED_VERSION. Checked
in Kafka 4.4's order: READ on the group; a topology naming Kafka's internal topics or invalid topic names is
STREAMS_INVALID_TOPOLOGY; DESCRIBE on every topic it names (source, repartition and changelog topics), else
TOPIC_AUTHORIZATION_FAILED. A MISSING_INTERNAL_TOPICS status makes the broker create the group's repartition and
changelog topics in the background when the member may CREATE them (on the cluster, else on each topic), the
heartbeat answered at once as Kafka 4.4's; otherwise the status says which it may not create, and nothing is
created.
"""

from __future__ import annotations

import logging

from coordinator.group.streams_topology import (
    StatusCode,
    hash_map_order,
    missing_internal_topics,
    topology_topics,
)
from coordinator.group.topics import MetadataStoreTopics
from pykbroker.context import RequestContext
from pykbroker.handlers.group._common import coordinator, request_info
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize,
    authorize_cluster,
    filter_by_authorized,
)
from pykbroker.topic_names import INTERNAL_TOPICS, topic_name_error
from wire import ApiKey, ErrorCode
from wire.messages import StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse
from wire.messages.streams_group_heartbeat_request import Topology
from wire.messages.streams_group_heartbeat_response import Status

log = logging.getLogger("pykbroker.coordinator.group")


def error_response(request: StreamsGroupHeartbeatRequest | None, version: int,
                   code: int) -> StreamsGroupHeartbeatResponse:
    return StreamsGroupHeartbeatResponse(error_code=code)


def _refused_topology(ctx: RequestContext, topology: Topology) -> StreamsGroupHeartbeatResponse | None:
    """The answer to a topology whose topics the member may not use, or None."""
    names = topology_topics(topology)
    if prohibited := [t for t in names if t in INTERNAL_TOPICS]:
        return StreamsGroupHeartbeatResponse(error_code=ErrorCode.STREAMS_INVALID_TOPOLOGY, error_message=(
            f"Use of Kafka internal topics {','.join(prohibited)} in a Kafka Streams topology is prohibited."))
    if invalid := [t for t in names if topic_name_error(t)]:
        return StreamsGroupHeartbeatResponse(error_code=ErrorCode.STREAMS_INVALID_TOPOLOGY,
                                             error_message=f"Topic names {','.join(invalid)} are not valid topic names.")
    if names and len(filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)) < len(names):
        return StreamsGroupHeartbeatResponse(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    return None


@handler(ApiKey.STREAMS_GROUP_HEARTBEAT, 0, 1, error_response=error_response)
async def handle_streams_group_heartbeat(ctx: RequestContext,
                                         request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse:
    if not ctx.broker.streams_groups_enabled:
        return error_response(request, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return error_response(request, ctx.api_version, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if request.topology is not None and (refused := _refused_topology(ctx, request.topology)) is not None:
        return refused
    response = await coordinator(ctx).streams_group_heartbeat(request_info(ctx), request)
    missing = next((s for s in response.status or () if s.status_code == StatusCode.MISSING_INTERNAL_TOPICS), None)
    if missing is not None:
        await _create_internal_topics(ctx, request, missing)
    return response  # at once: the topics are created in the background, as Kafka 4.4 does


async def _create_internal_topics(ctx: RequestContext, request: StreamsGroupHeartbeatRequest, status: Status) -> None:
    """Start creating the group's missing repartition and changelog topics in the background (Kafka 4.4 does it
    broker-side, without holding the heartbeat); a later heartbeat finds them and gets its tasks. A member that may
    not create them all creates none: ``status`` says which it may not create."""
    topology = await coordinator(ctx).streams_group_topology(request.group_id)
    if topology is None:
        return
    missing = missing_internal_topics(topology, MetadataStoreTopics(ctx.broker.metadata))
    if not missing:
        return
    if not authorize_cluster(ctx, AclOperation.CREATE, log_if_denied=False):
        allowed = filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, [t.name for t in missing])
        if refused := [n for n in hash_map_order([t.name for t in missing]) if n not in allowed]:
            status.status_detail = f"{status.status_detail}; Unauthorized to CREATE on topics {', '.join(refused)}."
            return
    ctx.broker.internal_topics.create_streams_internal_topics(request.group_id, missing)
