"""Metadata v0-13.

- v0: an empty topic list means all topics; v1+: null means all topics, empty means none.
- v1+: rack, controller id, is_internal. v2+: cluster id. v3+: throttle time. v4+: the request says
  whether unknown topics may be auto-created. v5+: offline replicas. v7+: leader epoch.
- v8+: authorized operations when asked (cluster ones only v8-10). v9+: flexible. v10+: topic ids;
  v12+: topics may be named by id (unknown id: UNKNOWN_TOPIC_ID). v13+: top-level error code.
- An unknown topic is auto-created when allowed, but, as in Kafka, the request that creates it answers
  UNKNOWN_TOPIC_OR_PARTITION with no partitions; the topic shows from the next request on.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from pykbroker.context import RequestContext
from pykbroker.handlers.authorized_operations import AUTHORIZED_OPERATIONS_OMITTED
from pykbroker.registry import handler
from pykbroker.security.auth_helper import (
    AclOperation,
    ResourceType,
    authorize_cluster,
    authorized_operations,
    filter_by_authorized,
)
from pykbroker.topic_names import INTERNAL_TOPICS, topic_name_error
from replication.metadata.acl import CLUSTER_NAME
from replication.metadata.image import MetadataImage, TopicState, live_endpoints, partition_leader_view
from wire import ZERO_UUID, ApiKey, ErrorCode
from wire.messages import MetadataRequest, MetadataResponse
from wire.messages.metadata_response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)


def error_response(request: MetadataRequest | None, version: int, code: int) -> MetadataResponse:
    return MetadataResponse(error_code=code)


# A topic's partition entries by (topic name, listener), with the topic state and broker registrations they were
# built from: images are immutable, so while both are the same objects the entries are still right. Building
# them is most of a Metadata answer at thousands of partitions (5,000: 25 ms of 40). Not used while a replica
# here is lost to an offline log dir (that is not in the image).
_partitions_cache: dict[tuple[str, str], tuple[TopicState, object, list[MetadataResponsePartition]]] = {}


def _partitions(topic: TopicState, image: MetadataImage, listener: str,
                lost_replicas: Callable[[str, int], Collection[int]] | None) -> list[MetadataResponsePartition]:
    key = (topic.name, listener)
    cached = _partitions_cache.get(key) if lost_replicas is None else None
    if cached is not None and cached[0] is topic and cached[1] is image.brokers:
        return cached[2]
    partitions = []
    for p in topic.partitions:
        lost = lost_replicas(topic.name, p.partition) if lost_replicas is not None else ()
        code, leader, offline = partition_leader_view(image, p, listener, lost)
        partitions.append(MetadataResponsePartition(
            error_code=code, partition_index=p.partition, leader_id=leader, leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas), isr_nodes=list(p.isr), offline_replicas=offline))
    if lost_replicas is None:
        if len(_partitions_cache) > 2 * len(image.topics) + 64:  # deleted topics' entries go
            for stale in [k for k in _partitions_cache if k[0] not in image.topics]:
                del _partitions_cache[stale]
        _partitions_cache[key] = (topic, image.brokers, partitions)
    return partitions


def topic_metadata(topic: TopicState, include_operations: bool, image: MetadataImage, listener: str,
                   lost_replicas: Callable[[str, int], Collection[int]] | None = None) -> MetadataResponseTopic:
    """One topic's entry: every partition with its leader (LEADER_NOT_AVAILABLE while it has none), epoch,
    replicas, ISR and offline replicas (authorized operations are filled in by the caller, who knows the
    principal). ``lost_replicas`` None: no replica is lost to an offline log dir (the entries may be cached).
    The partition list may be shared with other answers: read it, never change it."""
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.internal,
        partitions=_partitions(topic, image, listener, lost_replicas),
        topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def _missing(name: str | None, topic_id, code: int) -> MetadataResponseTopic:
    return MetadataResponseTopic(error_code=code, name=name, topic_id=topic_id, partitions=[])


@handler(ApiKey.METADATA, 0, 13, error_response=error_response)
async def handle_metadata(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    broker = ctx.broker
    store = ctx.metadata
    version = ctx.api_version
    include_ops = request.include_topic_authorized_operations
    lost = broker.lost_replicas if broker.any_lost_replicas() else None
    all_topics = request.topics is None or (version == 0 and not request.topics)
    topics: list[MetadataResponseTopic] = []
    refused: list[MetadataResponseTopic] = []  # after the others, as Kafka lists them
    if all_topics:  # topics the principal may not describe are left out
        visible = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, store.topics,
                                       log_if_denied=False)
        topics = [topic_metadata(t, False, store, ctx.listener.name, lost) for t in store.topics.values()
                  if t.name in visible]
    else:
        assert request.topics is not None  # not all topics: a list was asked for
        wanted_names = [(w, store.topics_by_id[w.topic_id].name if w.name is None else w.name)
                        for w in request.topics if w.name is not None or w.topic_id in store.topics_by_id]
        describable = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC,
                                           dict.fromkeys(name for _, name in wanted_names))
        auto_create = (request.allow_auto_topic_creation or version < 4) and broker.config.auto_create_topics_enable
        creatable = _creatable(ctx, [name for _, name in wanted_names
                                     if name in describable and name not in store.topics]) if auto_create else None
        for wanted in request.topics:
            if wanted.name is None:
                topic = store.topics_by_id.get(wanted.topic_id)
                if topic is None:
                    topics.insert(0, _missing(None, wanted.topic_id, ErrorCode.UNKNOWN_TOPIC_ID))
                    continue
                if topic.name not in describable:  # topic ids are not secret: the id is named
                    refused.append(_missing(None, topic.topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
            else:
                if wanted.name not in describable:  # nor is the topic's existence disclosed
                    refused.append(_missing(wanted.name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                    continue
                topic = store.topics.get(wanted.name)
            if topic is not None:
                topics.append(topic_metadata(topic, False, store, ctx.listener.name, lost))
                continue
            assert wanted.name is not None  # a topic asked for by id was answered above
            if creatable is not None and wanted.name not in creatable:
                refused.insert(0, MetadataResponseTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                        name=wanted.name, topic_id=ZERO_UUID, partitions=[],
                                                        is_internal=wanted.name in INTERNAL_TOPICS))
                continue
            name_error = topic_name_error(wanted.name)
            if name_error is not None:
                topics.append(_missing(wanted.name, ZERO_UUID, ErrorCode.INVALID_TOPIC_EXCEPTION))
                continue
            # Kafka answers the request that triggers auto-creation with UNKNOWN_TOPIC_OR_PARTITION: its
            # controller creates the topic asynchronously, and clients retry until it appears. We create it
            # at once, so the next Metadata request shows it, but this one answers as Kafka does.
            if request.allow_auto_topic_creation or version < 4:
                await broker.internal_topics.auto_create_topic(wanted.name)
            topics.append(_missing(wanted.name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    if include_ops and version >= 8:
        for t in topics:
            if t.name is not None:
                t.topic_authorized_operations = authorized_operations(ctx, ResourceType.TOPIC, t.name)
    cluster_ops = AUTHORIZED_OPERATIONS_OMITTED
    if request.include_cluster_authorized_operations and 8 <= version <= 10:
        cluster_ops = authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME) if authorize_cluster(
            ctx, AclOperation.DESCRIBE) else 0
    image = ctx.metadata
    return MetadataResponse(
        brokers=[MetadataResponseBroker(node_id=b.node_id, host=e.host, port=e.port, rack=b.rack)
                 for b, e in live_endpoints(image, ctx.listener.name)],
        cluster_id=broker.cluster_id,
        controller_id=image.controller_id,
        topics=topics + refused,
        cluster_authorized_operations=cluster_ops,
    )


def _creatable(ctx: RequestContext, missing: list[str]) -> set[str]:
    """Of the missing topics, those the principal may auto-create (CREATE on the cluster, else on each)."""
    if not missing or authorize_cluster(ctx, AclOperation.CREATE, log_if_denied=False):
        return set(missing)
    return filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, dict.fromkeys(missing))
