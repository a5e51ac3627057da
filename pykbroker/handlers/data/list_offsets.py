"""ListOffsets v1-11.

Special timestamps: -2 earliest (log start offset), -1 latest (high watermark; last stable offset in
read_committed), -3 max timestamp (v7+), -4 earliest local (v8+: the first offset in local segments), -5
latest tiered (v9+: the highest offset copied to remote storage, -1 for a topic without tiered storage), -6
earliest pending upload (v11+, KIP-1023: the first offset not copied yet). Any other negative timestamp, or a
special one older than its version, is UNSUPPORTED_VERSION, as Kafka 4.4 answers it. A timestamp >= 0 finds
the first offset whose batch has a timestamp at or after it, below the high watermark.
- v2+: isolation_level. v4+: current_leader_epoch fencing and the leader epoch of the answer.
- v6+: flexible. v10+: timeout_ms (no remote storage: answered at once).
- A request with a replica id other than -1 (a follower, or -2 for debugging) is not a client's: its
  latest offset is the log end offset, as Kafka answers followers that handle an out-of-range fetch.
- KIP-207: a new leader whose high watermark is still below the start offset of its leader epoch answers
  a client's latest offset, and a timestamp search that finds nothing below the high watermark, with
  OFFSET_NOT_AVAILABLE (LEADER_NOT_AVAILABLE before v5), both retriable; earliest offsets are answered.
"""

from __future__ import annotations

from pykbroker.context import RequestContext
from pykbroker.registry import handler
from pykbroker.security.auth_helper import AclOperation, ResourceType, filter_by_authorized
from replication.partition import PartitionError
from replication.replica_manager import storage_error_code
from wire import ApiKey, ErrorCode
from wire.messages import ListOffsetsRequest, ListOffsetsResponse
from wire.messages.list_offsets_response import ListOffsetsPartitionResponse, ListOffsetsTopicResponse

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
READ_COMMITTED = 1
#: The first version that accepts each special timestamp.
SPECIAL_TIMESTAMP_VERSIONS = {LATEST: 0, EARLIEST: 0, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9,
                              EARLIEST_PENDING_UPLOAD: 11}


def error_response(request: ListOffsetsRequest | None, version: int, code: int) -> ListOffsetsResponse:
    topics = [] if request is None else request.topics
    return ListOffsetsResponse(topics=[
        ListOffsetsTopicResponse(name=t.name, partitions=[
            ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=code, timestamp=-1,
                                         offset=-1, leader_epoch=-1) for p in t.partitions])
        for t in topics])


def list_offset(partition, timestamp: int, read_committed: bool, from_replica: bool = False) -> tuple[int, int, int]:
    """(timestamp, offset, leader_epoch) for one partition; raises PartitionError."""
    log = partition.log
    lagging = not from_replica and partition.high_watermark_behind_epoch_start
    if timestamp == LATEST:
        if lagging:
            raise _offset_not_available(partition)
        offset = log.log_end_offset if from_replica else log.last_stable_offset if read_committed \
            else log.high_watermark
        return -1, offset, log.latest_epoch_for_offset(offset)
    if timestamp == EARLIEST:
        offset = log.log_start_offset
        return -1, offset, log.latest_epoch_for_offset(offset)
    if timestamp in (EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD):  # tiered storage's (the log's answer)
        ts, offset, epoch = log.fetch_offset_by_timestamp(timestamp)
        return ts, offset, epoch
    found = log.fetch_offset_by_timestamp(timestamp)
    limit = log.last_stable_offset if read_committed else log.high_watermark
    if lagging and (found is None or found[1] >= limit):
        raise _offset_not_available(partition)
    if found is None:
        return -1, -1, -1
    ts, offset, epoch = found
    if timestamp != MAX_TIMESTAMP and offset >= limit:
        return -1, -1, -1
    return ts, offset, epoch


def _offset_not_available(partition) -> PartitionError:
    return PartitionError(ErrorCode.OFFSET_NOT_AVAILABLE,
                          f"Failed to fetch offsets for partition {partition.topic}-{partition.partition} with leader "
                          f"epoch {partition.leader_epoch} as its high watermark ({partition.log.high_watermark}) is "
                          f"lagging behind the start offset from the beginning of this epoch "
                          f"({partition.leader_epoch_start_offset}).")


@handler(ApiKey.LIST_OFFSETS, 1, 11, error_response=error_response)
async def handle_list_offsets(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    rm = ctx.broker.replica_manager
    read_committed = ctx.api_version >= 2 and request.isolation_level == READ_COMMITTED
    from_replica = request.replica_id != -1
    topics = []
    unauthorized = []
    describable = filter_by_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics))
    for t in request.topics:
        if t.name not in describable:  # answered after the authorized topics, as Kafka does
            unauthorized.append(ListOffsetsTopicResponse(name=t.name, partitions=[ListOffsetsPartitionResponse(
                partition_index=p.partition_index, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, timestamp=-1,
                offset=-1, leader_epoch=-1) for p in t.partitions]))
            continue
        parts = []
        for p in t.partitions:
            answer = ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1,
                                                  leader_epoch=-1)
            try:
                partition = rm.leader_partition(t.name, p.partition_index, p.current_leader_epoch)
                if p.timestamp < 0 and SPECIAL_TIMESTAMP_VERSIONS.get(p.timestamp, 1 << 15) > ctx.api_version:
                    raise PartitionError(ErrorCode.UNSUPPORTED_VERSION)
                remote = await rm.remote_offset_for_timestamp(partition, p.timestamp)  # tiered: remote first
                answer.timestamp, answer.offset, answer.leader_epoch = remote or list_offset(
                    partition, p.timestamp, read_committed, from_replica)
            except PartitionError as exc:
                answer.error_code = exc.code
                if exc.code == ErrorCode.OFFSET_NOT_AVAILABLE and ctx.api_version < 5:
                    answer.error_code = ErrorCode.LEADER_NOT_AVAILABLE
            except Exception as exc:
                answer.error_code, _ = storage_error_code(exc)
            parts.append(answer)
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(topics=topics + unauthorized)
