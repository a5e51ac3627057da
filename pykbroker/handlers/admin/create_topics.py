"""CreateTopics v2-7, with Kafka's (KRaft controller's) validation order and error messages.

Per topic: a legal, non-colliding name; not existing yet; configs known and valid; either explicit
assignments (then num_partitions and replication_factor must be -1) or counts, where -1 means the broker
defaults. ``validate_only`` runs every check and creates nothing. v5+ answers with the topic's partition
count, replication factor and configs; v7 with its topic id.

Before anything else, as Kafka's controller: more than MAX_PARTITIONS_PER_BATCH partitions in the whole
request fails every topic with POLICY_VIOLATION, and so does a request whose topics would take more than
MAX_RECORDS_PER_USER_OP metadata records (each topic, its partitions, its configs): no request can make
the broker build an unbounded number of partitions.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, authorize_cluster, filter_by_authorized
from pykbroker.topic_config import topic_config_entries, topic_config_error
from pykbroker.topic_names import topic_name_error
from replication.assignment import assign_replicas
from wire import ApiKey, ErrorCode
from wire.messages import CreateTopicsRequest, CreateTopicsResponse
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.create_topics_response import CreatableTopicConfigs, CreatableTopicResult

if TYPE_CHECKING:
    from pykbroker.services import BrokerServices
    from replication.metadata.image import TopicState

log = logging.getLogger("pykbroker.handlers.create_topics")

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
# Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH and QuorumController's MAX_RECORDS_PER_USER_OP.
MAX_PARTITIONS_PER_BATCH = 10_000
MAX_RECORDS_PER_USER_OP = 10_000


def too_few_brokers_message(replication: int, brokers: int) -> str:
    """Kafka 4.4's placement error when a replication factor exceeds the brokers that may take replicas."""
    return (f"Unable to replicate the partition {replication} time(s): The target replication factor of "
            f"{replication} cannot be reached because only {brokers} broker(s) are registered or some brokers "
            "have all their log directories cordoned.")


def placement_error(replication: int, usable: int) -> str | None:
    """Kafka 4.4's StripedReplicaPlacer refusal for ``replication`` replicas over ``usable`` brokers, or None."""
    if usable == 0:
        return (f"Unable to replicate the partition {replication} time(s): All brokers are currently fenced, or have "
                "all their log directories cordoned.")
    return too_few_brokers_message(replication, usable) if replication > usable else None


def usable_broker_ids(ctx: RequestContext) -> list[int]:
    """The live brokers new replicas may go to (Kafka's usableBrokers): not one whose log dirs are all cordoned
    (KIP-1066): this broker by its own effective cordoned.log.dirs, another by its dynamic value ``*``."""
    out = []
    for node_id in ctx.metadata.live_broker_ids():
        if node_id == ctx.broker.node_id:
            if ctx.broker.log_manager.all_cordoned:
                continue
        elif ctx.metadata.broker_configs.get(str(node_id), {}).get("cordoned.log.dirs", "").strip() == "*":
            continue
        out.append(node_id)
    return out


TOO_MANY_PARTITIONS = "Excessively large number of partitions per request."
TOO_MANY_RECORDS = "Unable to perform excessively large batch operation."


Plan = tuple[int, str | None, list[list[int]]]


def _over_limits(ctx: RequestContext, single: list[CreatableTopic], plans: dict[str, Plan]) -> str | None:
    """Kafka's per-request limits over the topics the controller gets (distinct, authorized): the
    POLICY_VIOLATION message for each of them, or None. ``plans``: each topic's plan_topic, filled here."""
    total_partitions = sum(len(t.assignments) if t.assignments else ctx.broker.config.num_partitions
                           if t.num_partitions == -1 else max(t.num_partitions, 0) for t in single)
    if total_partitions > MAX_PARTITIONS_PER_BATCH:
        return TOO_MANY_PARTITIONS
    records = 0
    for t in single:
        code, _, assignments = plans[t.name] = plan_topic(ctx, t)
        if code == ErrorCode.NONE:
            records += 1 + len(assignments) + len(t.configs)
    return TOO_MANY_RECORDS if records > MAX_RECORDS_PER_USER_OP else None


def error_response(request: CreateTopicsRequest | None, version: int, code: int) -> CreateTopicsResponse:
    topics = [] if request is None else request.topics
    return CreateTopicsResponse(topics=[_failed(t.name, code, None) for t in topics])


def _failed(name: str, code: int, message: str | None) -> CreatableTopicResult:
    return CreatableTopicResult(name=name, error_code=code, error_message=message, num_partitions=-1,
                                replication_factor=-1, configs=None)


def collision_error(name: str, existing: list[str]) -> str | None:
    """Kafka refuses a name that equals an existing one once '.' and '_' are unified."""
    if "." not in name and "_" not in name:
        return None
    unified = name.replace(".", "_")
    for other in existing:
        if other != name and other.replace(".", "_") == unified:
            return f"Topic '{name}' collides with existing topic: {other}"
    return None


def plan_topic(ctx: RequestContext, topic: CreatableTopic) -> Plan:
    """(error code, message, one replica list per partition) for one requested topic."""
    broker = ctx.broker
    name = topic.name
    message = topic_name_error(name)
    if message is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, message, []
    if name in ctx.metadata.topics:
        return ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.", []
    message = collision_error(name, list(ctx.metadata.topics))
    if message is not None:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, message, []
    message = topic_config_error({c.name: c.value for c in topic.configs}, defaults=broker.default_log_config,
                                 remote_storage_system_enable=broker.config["remote.log.storage.system.enable"])
    if message is not None:
        return ErrorCode.INVALID_CONFIG, message, []
    live_brokers = ctx.metadata.live_broker_ids()
    if topic.assignments:
        if topic.replication_factor != -1:
            return (ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but replication "
                    "factor was not set to -1.", [])
        if topic.num_partitions != -1:
            return (ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but numPartitions "
                    "was not set to -1.", [])
        by_index: dict[int, list[int]] = {}
        for a in topic.assignments:
            if a.partition_index in by_index:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                        f"Found multiple manual partition assignments for partition {a.partition_index}", [])
            if not a.broker_ids:
                return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty " \
                    "replica list.", []
            if len(set(a.broker_ids)) != len(a.broker_ids):
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes the broker "
                        f"{a.broker_ids[0]} more than once.", [])
            unknown = [b for b in a.broker_ids if b not in live_brokers]
            if unknown:
                return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes broker "
                        f"{unknown[0]}, but no such broker is registered.", [])
            by_index[a.partition_index] = list(a.broker_ids)
        if sorted(by_index) != list(range(len(by_index))):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "partitions should be a consecutive 0-based integer sequence", [])
        return ErrorCode.NONE, None, [by_index[i] for i in range(len(by_index))]
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        return (ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.", [])
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        return ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.", []
    partitions = broker.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    replication = (broker.config.default_replication_factor if topic.replication_factor == -1
                   else topic.replication_factor)
    usable = usable_broker_ids(ctx)
    if (message := placement_error(replication, len(usable))) is not None:
        return ErrorCode.INVALID_REPLICATION_FACTOR, message, []
    return ErrorCode.NONE, None, assign_replicas(partitions, replication, usable,
                                                  racks={b.node_id: b.rack for b in ctx.metadata.brokers.values()})


@handler(ApiKey.CREATE_TOPICS, 2, 7, error_response=error_response)
async def handle_create_topics(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    broker = ctx.broker
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results = []
    planned: list[tuple[CreatableTopicResult, list[list[int]], dict[str, str]]] = []  # to create, in order
    answered: set[str] = set()
    names = [n for n in counts if counts[n] == 1 and n != CLUSTER_METADATA_TOPIC]
    await broker.admin.catch_up(names)  # a topic another broker created or deleted a moment ago
    creatable = set(names) if authorize_cluster(ctx, AclOperation.CREATE, log_if_denied=False) else \
        filter_by_authorized(ctx, AclOperation.CREATE, ResourceType.TOPIC, names)
    plans: dict[str, Plan] = {}
    over_limits = _over_limits(ctx, [t for t in request.topics if t.name in creatable], plans)  # the controller's
    configs_visible = filter_by_authorized(ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, names,
                                           log_if_denied=False)
    # The configs answered, once per distinct set of configs (most requests give every topic the same, or none).
    layers, defaults = broker.dynamic_config.layers(), broker.default_log_config.to_properties()
    described: dict[frozenset[tuple[str, str]], list[CreatableTopicConfigs]] = {}
    for topic in request.topics:
        name = topic.name
        if counts[name] > 1:
            if name not in answered:
                answered.add(name)
                results.append(_failed(name, ErrorCode.INVALID_REQUEST, "Duplicate topic name."))
            continue
        if name == CLUSTER_METADATA_TOPIC:
            results.append(_failed(name, ErrorCode.INVALID_REQUEST,
                                   f"Creation of internal topic {name} is prohibited."))
            continue
        if name not in creatable:
            results.append(_failed(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed."))
            continue
        if over_limits is not None:
            results.append(_failed(name, ErrorCode.POLICY_VIOLATION, over_limits))
            continue
        code, message, assignments = plans[name] if name in plans else plan_topic(ctx, topic)
        if code != ErrorCode.NONE:
            log.info("CreateTopics %s refused: %s (%s)", name, message, ctx.describe())
            results.append(_failed(name, code, message))
            continue
        configs = {c.name: c.value for c in topic.configs if c.value is not None}  # nulls were refused
        result = CreatableTopicResult(name=name, error_code=ErrorCode.NONE, error_message=None,
                                      num_partitions=len(assignments), replication_factor=len(assignments[0]))
        if name not in configs_visible:  # created, but its configs are not shown (Kafka's controller)
            result.num_partitions = result.replication_factor = -1
            result.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            key = frozenset(configs.items())
            if key not in described:
                described[key] = [
                    CreatableTopicConfigs(name=e.name, value=e.value, read_only=e.read_only, config_source=e.source,
                                          is_sensitive=e.sensitive)
                    for e in topic_config_entries(layers, configs, defaults)]
            result.configs = described[key]
        results.append(result)
        planned.append((result, assignments, configs))
    if not request.validate_only:
        # Every topic at once, as Kafka's controller creates a request's topics in one batch: each is its own
        # ZooKeeper write, and the answer waits for all their leaders together instead of one after another.
        created = await asyncio.gather(*(_create(broker, result.name, assignments, configs)
                                         for result, assignments, configs in planned))
        for (result, _assignments, _configs), state in zip(planned, created, strict=True):
            if state is None:  # created meanwhile through another broker (Kafka's controller orders them)
                at = next(i for i, r in enumerate(results) if r is result)
                results[at] = _failed(result.name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{result.name}' already exists.")
            else:
                result.topic_id = state.topic_id
    return CreateTopicsResponse(topics=results)


async def _create(broker: BrokerServices, name: str, assignments: list[list[int]], configs: dict[str, str]) -> TopicState | None:
    """The topic created, or None when it exists already (another broker created it since this one planned)."""
    try:
        return await broker.admin.create_topic(name, assignments, configs)
    except KeyError:
        return None
