"""AlterPartitionReassignments v0-1 and ListPartitionReassignments v0.

On one node a partition can only be "moved" onto the replicas it already has, which completes at once;
every other target is refused with the controller's messages, and no reassignment is ever in progress.
In a cluster the controller moves partitions (``replication.controller.zk_controller``; another broker answers
NOT_CONTROLLER and the admin client asks the controller Metadata names, as in Kafka's ZooKeeper mode);
v1's ``allow_replication_factor_change`` false refuses targets of another size here first. Ongoing moves
are listed by the controller from its own state, by other brokers from their metadata image (full replicas,
adding and removing ones).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster, not_authorized_message
from wire import ApiKey, ErrorCode
from wire.messages import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from wire.messages.alter_partition_reassignments_response import (
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from wire.messages.list_partition_reassignments_response import (
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)


def alter_error(request: AlterPartitionReassignmentsRequest | None, version: int, code: int
                ) -> AlterPartitionReassignmentsResponse:
    return AlterPartitionReassignmentsResponse(error_code=code, responses=[])


def _rf_change(ctx: RequestContext, topic: str, partition: int, replicas: list[int] | None,
               allow_rf_change: bool) -> tuple[int, str | None] | None:
    """Kafka 4.4's refusal of a target that changes the replication factor when v1 forbids it."""
    state = ctx.metadata.topics.get(topic)
    if allow_rf_change or replicas is None or state is None or not 0 <= partition < len(state.partitions):
        return None
    p = state.partitions[partition]
    current = [r for r in p.replicas if r not in p.adding_replicas]
    if replicas and len(replicas) != len(current):
        return (ErrorCode.INVALID_REPLICATION_FACTOR, f"The replication factor is changed from {len(current)} "
                f"to {len(replicas)}")
    return None


async def _reassign_in_cluster(ctx: RequestContext, request: AlterPartitionReassignmentsRequest, allow: bool
                               ) -> AlterPartitionReassignmentsResponse:
    from replication.metadata.zk.controller_election import ControllerMovedError

    refused: dict[tuple[str, int], tuple[int, str | None]] = {}
    wanted: dict[tuple[str, int], list[int] | None] = {}
    for t in request.topics:
        for p in t.partitions:
            tp = (t.name, p.partition_index)
            refusal = _rf_change(ctx, t.name, p.partition_index, p.replicas, allow)
            if refusal is not None:
                refused[tp] = refusal
            else:
                wanted[tp] = None if p.replicas is None else list(p.replicas)
    try:
        results = {**refused, **await ctx.broker.controller.alter_partition_reassignments(wanted)}
    except ControllerMovedError:
        return AlterPartitionReassignmentsResponse(error_code=ErrorCode.NOT_CONTROLLER, responses=[],
                                                   allow_replication_factor_change=allow)
    return AlterPartitionReassignmentsResponse(error_code=ErrorCode.NONE, allow_replication_factor_change=allow,
                                               responses=[ReassignableTopicResponse(name=t.name, partitions=[
                                                   ReassignablePartitionResponse(
                                                       partition_index=p.partition_index,
                                                       error_code=results[(t.name, p.partition_index)][0],
                                                       error_message=results[(t.name, p.partition_index)][1])
                                                   for p in t.partitions]) for t in request.topics])


def reassign(ctx: RequestContext, topic: str, partition: int, replicas: list[int] | None,
             allow_rf_change: bool) -> tuple[int, str | None]:
    state = ctx.metadata.topics.get(topic)
    if state is None or not 0 <= partition < len(state.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    current = state.partitions[partition].replicas
    if not replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    for broker_id in replicas:
        if broker_id != ctx.broker.node_id:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes broker "
                    f"{broker_id}, but no such broker is registered.")
    if len(set(replicas)) != len(replicas):
        return (ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"The manual partition assignment includes the broker "
                f"{replicas[0]} more than once.")
    if len(replicas) != len(current) and not allow_rf_change:
        return (ErrorCode.INVALID_REPLICATION_FACTOR, f"The replication factor is changed from {len(current)} "
                f"to {len(replicas)}")
    return ErrorCode.NONE, None  # already on those replicas: the reassignment completes at once


@handler(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1, error_response=alter_error)
async def handle_alter_partition_reassignments(ctx: RequestContext, request: AlterPartitionReassignmentsRequest
                                               ) -> AlterPartitionReassignmentsResponse:
    allow = request.allow_replication_factor_change if ctx.api_version >= 1 else True
    if not authorize_cluster(ctx, AclOperation.ALTER):  # answered by Kafka's controller
        message = not_authorized_message(ctx, AclOperation.ALTER)
        return AlterPartitionReassignmentsResponse(
            error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message,
            allow_replication_factor_change=allow, responses=[ReassignableTopicResponse(name=t.name, partitions=[
                ReassignablePartitionResponse(partition_index=p.partition_index,
                                              error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=message)
                for p in t.partitions]) for t in request.topics])
    if ctx.broker.cluster_mode:
        return await _reassign_in_cluster(ctx, request, allow)
    responses = []
    for t in request.topics:
        results = []
        for p in t.partitions:
            code, error_message = reassign(ctx, t.name, p.partition_index, p.replicas, allow)
            results.append(ReassignablePartitionResponse(partition_index=p.partition_index, error_code=code,
                                                         error_message=error_message))
        responses.append(ReassignableTopicResponse(name=t.name, partitions=results))
    return AlterPartitionReassignmentsResponse(error_code=ErrorCode.NONE, responses=responses,
                                               allow_replication_factor_change=allow)


def list_error(request: ListPartitionReassignmentsRequest | None, version: int, code: int
               ) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(error_code=code, topics=[])


@handler(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0, error_response=list_error)
async def handle_list_partition_reassignments(ctx: RequestContext, request: ListPartitionReassignmentsRequest
                                              ) -> ListPartitionReassignmentsResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        message = not_authorized_message(ctx, AclOperation.DESCRIBE)
        return ListPartitionReassignmentsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                  error_message=message, topics=[
            OngoingTopicReassignment(name=t.name, partitions=[OngoingPartitionReassignment(
                partition_index=p, replicas=[], adding_replicas=[], removing_replicas=[]) for p in t.partition_indexes])
            for t in request.topics or []])
    wanted = None if request.topics is None else {t.name: t.partition_indexes for t in request.topics}
    if ctx.broker.cluster_mode and ctx.broker.controller.active:
        return _list_from_controller(ctx, wanted)
    topics = []
    for name in sorted(ctx.metadata.topics) if wanted is None else wanted:
        state = ctx.metadata.topics.get(name)
        if state is None:
            continue  # as Kafka 4.4: unknown topics are left out
        indexes = range(len(state.partitions)) if wanted is None else wanted[name]
        ongoing = [OngoingPartitionReassignment(partition_index=i, replicas=list(p.replicas),
                                                adding_replicas=list(p.adding_replicas),
                                                removing_replicas=list(p.removing_replicas))
                   for i in indexes if 0 <= i < len(state.partitions)
                   and ((p := state.partitions[i]).adding_replicas or p.removing_replicas)]
        if ongoing:
            topics.append(OngoingTopicReassignment(name=name, partitions=ongoing))
    return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None, topics=topics)


def _list_from_controller(ctx: RequestContext, wanted: dict[str, list[int]] | None
                          ) -> ListPartitionReassignmentsResponse:
    """The controller's own view: a move shows from the moment AlterPartitionReassignments answered, as Kafka's
    controller answers, before the brokers' metadata has caught up with it."""
    by_topic: dict[str, list[OngoingPartitionReassignment]] = {}
    for (topic, partition), a in ctx.broker.controller.ongoing_reassignments().items():
        if wanted is not None and partition not in wanted.get(topic, ()):
            continue
        by_topic.setdefault(topic, []).append(OngoingPartitionReassignment(
            partition_index=partition, replicas=list(a.replicas), adding_replicas=list(a.adding),
            removing_replicas=list(a.removing)))
    return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None, topics=[
        OngoingTopicReassignment(name=t, partitions=ps) for t, ps in by_topic.items()])
