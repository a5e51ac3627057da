"""ElectLeaders v0-2 (v0: preferred elections only). On one node every partition is led by its preferred
(and only) replica, so an election is never needed. In a cluster the controller elects (ZooKeeper mode:
another broker answers NOT_CONTROLLER and the admin client asks the controller Metadata names): preferred
elections move leadership to the first replica when it is alive and in sync, unclean ones elect a leader
for partitions without a live one. A request for every partition (null) lists each topic with only the
partitions where something happened or failed, as Kafka's controller answers. A request whose timeout_ms is not
positive has expired before Kafka's controller looks at it: REQUEST_TIMED_OUT, at the top (v1+) and for each
partition named, whatever they are (kafka-go's ElectLeaders sends 0 unless told otherwise)."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster, not_authorized_message
from wire import ApiKey, ErrorCode
from wire.messages import ElectLeadersRequest, ElectLeadersResponse
from wire.messages.elect_leaders_response import PartitionResult, ReplicaElectionResult

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."


def error_response(request: ElectLeadersRequest | None, version: int, code: int) -> ElectLeadersResponse:
    return ElectLeadersResponse(error_code=code, replica_election_results=[])


def elect(ctx: RequestContext, topic: str, partition: int) -> tuple[int, str]:
    state = ctx.metadata.topics.get(topic)
    if state is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic}"
    if not 0 <= partition < len(state.partitions):
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic}-{partition}"
    return ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MESSAGE


@handler(ApiKey.ELECT_LEADERS, 0, 2, error_response=error_response)
async def handle_elect_leaders(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):  # answered by Kafka's controller
        return ElectLeadersResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, replica_election_results=[
            ReplicaElectionResult(topic=t.topic, partition_result=[PartitionResult(
                partition_id=p, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                error_message=not_authorized_message(ctx, AclOperation.ALTER)) for p in t.partitions])
            for t in request.topic_partitions or []])
    if request.timeout_ms <= 0:
        return ElectLeadersResponse(error_code=ErrorCode.REQUEST_TIMED_OUT, replica_election_results=[
            ReplicaElectionResult(topic=t.topic, partition_result=[PartitionResult(
                partition_id=p, error_code=ErrorCode.REQUEST_TIMED_OUT, error_message=None) for p in t.partitions])
            for t in request.topic_partitions or []])
    if ctx.api_version >= 1 and request.election_type not in (PREFERRED, UNCLEAN):
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST)
    if ctx.broker.cluster_mode:
        return await _elect_in_cluster(ctx, request)
    results = []
    if request.topic_partitions is None:  # every partition; the ones needing no election are left out
        for name in ctx.metadata.topics:
            results.append(ReplicaElectionResult(topic=name, partition_result=[]))
    else:
        for t in request.topic_partitions:
            partition_results = []
            for partition in t.partitions:
                code, message = elect(ctx, t.topic, partition)
                partition_results.append(PartitionResult(partition_id=partition, error_code=code,
                                                         error_message=message))
            results.append(ReplicaElectionResult(topic=t.topic, partition_result=partition_results))
    return ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=results)


async def _elect_in_cluster(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    from replication.metadata.zk.controller_election import ControllerMovedError

    preferred = ctx.api_version == 0 or request.election_type == PREFERRED
    wanted = None if request.topic_partitions is None else [
        (t.topic, p) for t in request.topic_partitions for p in t.partitions]
    try:
        codes = await ctx.broker.controller.elect_leaders(wanted, preferred)
    except ControllerMovedError:
        return error_response(request, ctx.api_version, ErrorCode.NOT_CONTROLLER)
    by_topic: dict[str, list[PartitionResult]] = {}
    if wanted is None:
        by_topic = {name: [] for name in ctx.metadata.topics}
    for (topic, partition), code in codes.items():
        if wanted is None and code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        by_topic.setdefault(topic, []).append(PartitionResult(
            partition_id=partition, error_code=code,
            error_message=None if code == ErrorCode.NONE else _MESSAGES.get(code, ErrorCode(code).name)))
    return ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=[
        ReplicaElectionResult(topic=t, partition_result=ps) for t, ps in by_topic.items()])


# Kafka's default messages of the errors an election answers.
_MESSAGES: dict[int, str] = {
    ErrorCode.ELECTION_NOT_NEEDED: NOT_NEEDED_MESSAGE,
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "Eligible topic partition leaders are not available.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
}
