"""ElectLeaders v0-2. On one node every partition is led by its preferred (and only) replica, so an
election is never needed; the answers and messages are those of Kafka's controller."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
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
    if ctx.api_version >= 1 and request.election_type not in (PREFERRED, UNCLEAN):
        return error_response(request, ctx.api_version, ErrorCode.INVALID_REQUEST)
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
