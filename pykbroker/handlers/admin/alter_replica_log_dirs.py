"""AlterReplicaLogDirs v1-2 (v2 flexible): move replicas between this broker's log dirs (cluster ALTER).

Each partition is answered as Kafka's replica manager does: NONE once its future log is being filled (or it
is already in that dir), LOG_DIR_NOT_FOUND for a path not in log.dirs, KAFKA_STORAGE_ERROR for an offline dir
or partition, REPLICA_NOT_AVAILABLE for a partition not hosted here yet (the dir is remembered and used when
it is created: kafka-reassign-partitions asks before the reassignment and again until it succeeds).
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, authorize_cluster
from wire import ApiKey, ErrorCode
from wire.messages import AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse
from wire.messages.alter_replica_log_dirs_response import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirTopicResult,
)


def _answer(codes: dict[tuple[str, int], int]) -> AlterReplicaLogDirsResponse:
    by_topic: dict[str, list[AlterReplicaLogDirPartitionResult]] = {}
    for (topic, partition), code in codes.items():
        by_topic.setdefault(topic, []).append(AlterReplicaLogDirPartitionResult(partition_index=partition,
                                                                                error_code=code))
    return AlterReplicaLogDirsResponse(results=[AlterReplicaLogDirTopicResult(topic_name=t, partitions=ps)
                                                for t, ps in by_topic.items()])


def _wanted(request: AlterReplicaLogDirsRequest | None) -> dict[tuple[str, int], str]:
    """(topic, partition) → dir; a partition named twice keeps its last dir (Kafka builds a map too)."""
    out: dict[tuple[str, int], str] = {}
    for d in request.dirs if request is not None else []:
        for t in d.topics:
            for p in t.partitions:
                out[(t.name, p)] = d.path
    return out


def error_response(request: AlterReplicaLogDirsRequest | None, version: int, code: int) -> AlterReplicaLogDirsResponse:
    return _answer({tp: code for tp in _wanted(request)})


@handler(ApiKey.ALTER_REPLICA_LOG_DIRS, 1, 2, error_response=error_response)
async def handle_alter_replica_log_dirs(ctx: RequestContext,
                                        request: AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse:
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return _answer(ctx.broker.replica_manager.alter_replica_log_dirs(_wanted(request)))
