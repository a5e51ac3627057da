"""CreatePartitions v0-3: grow a topic's partition count, with explicit assignments or the defaults."""

from __future__ import annotations

import asyncio
import logging

from pykbroker.context import RequestContext
from pykbroker.handlers.admin.create_topics import MAX_RECORDS_PER_USER_OP, placement_error, usable_broker_ids
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from replication.assignment import assign_replicas, start_index_for_new_partitions
from replication.metadata.image import PartitionCountChanged
from wire import ApiKey, ErrorCode
from wire.messages import CreatePartitionsRequest, CreatePartitionsResponse
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_partitions_response import CreatePartitionsTopicResult

log = logging.getLogger("pykbroker.handlers.create_partitions")
UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
PLAN_ATTEMPTS = 5  # plans of one topic's new partitions, other requests adding partitions to it meanwhile


def error_response(request: CreatePartitionsRequest | None, version: int, code: int) -> CreatePartitionsResponse:
    topics = [] if request is None else request.topics
    return CreatePartitionsResponse(results=[CreatePartitionsTopicResult(name=t.name, error_code=code)
                                             for t in topics])


def _no_increase(topic: CreatePartitionsTopic, current: int) -> tuple[int, str] | None:
    """Kafka's refusal of a count that does not grow a topic of ``current`` partitions."""
    if topic.count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
    if topic.count < current:
        return (ErrorCode.INVALID_PARTITIONS, f"The topic {topic.name} currently has {current} partition(s); "
                f"{topic.count} would not be an increase.")
    return None


def plan(ctx: RequestContext, topic: CreatePartitionsTopic) -> tuple[int, str | None, list[list[int]]]:
    """(error code, message, replica lists of the new partitions)."""
    state = ctx.metadata.topics.get(topic.name)
    if state is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE, []
    current = len(state.partitions)
    if (refused := _no_increase(topic, current)) is not None:
        return (*refused, [])
    additional = topic.count - current
    if additional > MAX_RECORDS_PER_USER_OP:  # as Kafka 4.4: its controller's bounded record list overflows
        return ErrorCode.UNKNOWN_SERVER_ERROR, None, []
    replication = len(state.partitions[0].replicas)
    live_brokers = ctx.metadata.live_broker_ids()
    if topic.assignments is None:
        usable = usable_broker_ids(ctx)
        if (message := placement_error(replication, len(usable))) is not None:
            return ErrorCode.INVALID_REPLICATION_FACTOR, message, []
        start = start_index_for_new_partitions(state.partitions[0].replicas[0], usable)
        return ErrorCode.NONE, None, assign_replicas(additional, replication, usable, start_index=start,
                                                     start_partition_id=current,
                                                     racks={b.node_id: b.rack for b in ctx.metadata.brokers.values()})
    if len(topic.assignments) != additional:
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Attempted to add {additional} additional partition(s), "
                f"but only {len(topic.assignments)} assignment(s) were specified.", [])
    new = []
    for i, a in enumerate(topic.assignments):
        index = current + i
        if len(a.broker_ids) != replication:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes a partition "
                    f"with {len(a.broker_ids)} replica(s), but this is not consistent with previous partitions, "
                    f"which have {replication} replica(s).", [])
        unknown = [b for b in a.broker_ids if b not in live_brokers]
        if unknown:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                    f"{unknown[0]}, but no such broker is registered.", [])
        if len(set(a.broker_ids)) != len(a.broker_ids):
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment for partition {index} "
                    f"includes the broker {a.broker_ids[0]} more than once.", [])
        new.append(list(a.broker_ids))
    return ErrorCode.NONE, None, new


@handler(ApiKey.CREATE_PARTITIONS, 0, 3, error_response=error_response)
async def handle_create_partitions(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results = []
    adding: list[tuple[CreatePartitionsTopicResult, CreatePartitionsTopic, list[list[int]]]] = []
    alterable = filter_by_authorized(ctx, AclOperation.ALTER, ResourceType.TOPIC, [n for n, c in counts.items() if c == 1])
    await ctx.broker.admin.catch_up(alterable)  # a topic another broker created or deleted a moment ago
    for topic in request.topics:
        if counts[topic.name] > 1:
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=ErrorCode.INVALID_REQUEST,
                                                       error_message="Duplicate topic name."))
            continue
        if topic.name not in alterable:
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                                       error_message=None))
            continue
        code, message, assignments = plan(ctx, topic)
        result = CreatePartitionsTopicResult(name=topic.name, error_code=code, error_message=message)
        if code == ErrorCode.NONE and not request.validate_only:
            adding.append((result, topic, assignments))
        results.append(result)
    # Every topic's new partitions at once: the answer waits for the slowest topic's leaders, not for the sum.
    await asyncio.gather(*(_add(ctx, result, topic, assignments) for result, topic, assignments in adding))
    return CreatePartitionsResponse(results=results)


async def _add(ctx: RequestContext, result: CreatePartitionsTopicResult, topic: CreatePartitionsTopic,
               assignments: list[list[int]]) -> None:
    """Add the planned partitions, answered in ``result``. Another broker may have added some since the plan
    (Kafka's controller takes such requests one after the other): refused as Kafka refuses the later one, or, the
    topic still smaller than asked, planned again; a topic deleted meanwhile is unknown."""
    for _attempt in range(PLAN_ATTEMPTS):
        try:
            await ctx.broker.admin.create_partitions(topic.name, assignments, topic.count - len(assignments))
            log.info("topic %s now has %d more partitions (%s)", topic.name, len(assignments), ctx.describe())
            return
        except KeyError:
            result.error_code, result.error_message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_MESSAGE
            return
        except PartitionCountChanged as changed:
            if (refused := _no_increase(topic, changed.count)) is not None:
                result.error_code, result.error_message = refused
                return
        await ctx.broker.admin.catch_up([topic.name])
        await asyncio.sleep(0)  # a single node's commit of the other request: published in a pass or two
        code, message, assignments = plan(ctx, topic)
        result.error_code, result.error_message = code, message
        if code != ErrorCode.NONE:
            return
    result.error_code, result.error_message = ErrorCode.REQUEST_TIMED_OUT, None
