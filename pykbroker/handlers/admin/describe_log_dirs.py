"""DescribeLogDirs v1-5: every log dir with the replicas in it — size, offset lag, and whether it is a future
replica (a move by AlterReplicaLogDirs in progress) — and (v4) total and usable bytes, (v5) whether it is cordoned
(``cordoned.log.dirs``, KIP-1066: it takes no new partitions); an offline dir answers
KAFKA_STORAGE_ERROR alone. With named partitions, a dir lists only the topics with one of them in it (as Kafka
4.1: no topic with an empty list of partitions)."""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import DescribeLogDirsRequest, DescribeLogDirsResponse
from wire.messages.describe_log_dirs_response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)


def error_response(request: DescribeLogDirsRequest | None, version: int, code: int) -> DescribeLogDirsResponse:
    return DescribeLogDirsResponse(error_code=code, results=[])


@handler(ApiKey.DESCRIBE_LOG_DIRS, 1, 5, error_response=error_response)
async def handle_describe_log_dirs(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    wanted = None if request.topics is None else {(t.topic, p) for t in request.topics for p in t.partitions}
    results = []
    for info in ctx.broker.replica_manager.describe_log_dirs(wanted):
        by_topic: dict[str, list[DescribeLogDirsPartition]] = {}
        for r in info.replicas:
            by_topic.setdefault(r.topic, []).append(DescribeLogDirsPartition(partition_index=r.partition, partition_size=r.size,
                                                              offset_lag=r.offset_lag, is_future_key=r.is_future))
        results.append(DescribeLogDirsResult(
            error_code=info.error_code, log_dir=info.log_dir,
            topics=[DescribeLogDirsTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
            total_bytes=info.total_bytes, usable_bytes=info.usable_bytes, is_cordoned=info.is_cordoned))
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)
