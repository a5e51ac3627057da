"""DescribeLogDirs v1-4: every log dir with the size of each partition in it (v4: total and usable bytes)."""

from __future__ import annotations

import os

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


@handler(ApiKey.DESCRIBE_LOG_DIRS, 1, 4, error_response=error_response)
async def handle_describe_log_dirs(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return error_response(request, ctx.api_version, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    wanted: dict[str, set[int]] | None = None
    if request.topics is not None:
        wanted = {t.topic: set(t.partitions) for t in request.topics}
    by_dir: dict[str, dict[str, list[DescribeLogDirsPartition]]] = {
        os.path.abspath(d): {} for d in ctx.broker.config.log_dirs}
    for (topic, partition), p in sorted(ctx.broker.replica_manager.partitions.items()):
        if wanted is not None and partition not in wanted.get(topic, ()):
            continue
        log_dir = os.path.abspath(p.log.parent_dir)
        by_dir.setdefault(log_dir, {}).setdefault(topic, []).append(DescribeLogDirsPartition(
            partition_index=partition, partition_size=p.log.size_in_bytes, offset_lag=0, is_future_key=False))
    failures = ctx.broker.log_manager.failure_channel
    offline_dirs = {os.path.abspath(d): failures.is_offline(d) for d in ctx.broker.config.log_dirs}
    results = []
    for log_dir, topics in by_dir.items():
        offline = offline_dirs.get(log_dir, False) or any(
            p.log.is_offline for p in ctx.broker.replica_manager.partitions.values()
            if os.path.abspath(p.log.parent_dir) == log_dir)  # a dir offline with no partitions is offline too
        try:
            st = os.statvfs(log_dir)
            total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
        except OSError:
            offline, total, usable = True, -1, -1
        results.append(DescribeLogDirsResult(
            error_code=ErrorCode.KAFKA_STORAGE_ERROR if offline else ErrorCode.NONE, log_dir=log_dir,
            topics=[] if offline else [DescribeLogDirsTopic(name=t, partitions=ps) for t, ps in topics.items()],
            total_bytes=total, usable_bytes=usable))
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)
