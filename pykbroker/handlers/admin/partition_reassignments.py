"""AlterPartitionReassignments v0-1 and ListPartitionReassignments v0.

On one node a partition can only be "moved" onto the replicas it already has, which completes at once;
every other target is refused with the controller's messages, and no reassignment is ever in progress.
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
    responses = []
    for t in request.topics:
        results = []
        for p in t.partitions:
            code, message = reassign(ctx, t.name, p.partition_index, p.replicas, allow)
            results.append(ReassignablePartitionResponse(partition_index=p.partition_index, error_code=code,
                                                         error_message=message))
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
    return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, error_message=None, topics=[])
