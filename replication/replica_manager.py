"""The replica manager: partitions hosted here, appends with acks, reads with long polls.

It owns the Partition objects (created from cluster metadata), turns storage and leadership errors
into Kafka error codes, and wakes delayed fetches through ``PartitionWatchers`` whenever an append or
an offset move happens. Event-loop only.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass, field

from replication.partition import Partition, PartitionError, ReadResult
from replication.watchers import PartitionWatchers
from storage import AppendOrigin
from wire import ErrorCode

log = logging.getLogger("replication.replica_manager")

__all__ = ["AppendResult", "FetchPartition", "FetchedPartition", "ReplicaManager"]

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class AppendResult:
    """Outcome of one partition's append, as Produce reports it."""

    error_code: int = ErrorCode.NONE
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str | None]] = field(default_factory=list)


@dataclass(slots=True)
class FetchPartition:
    """One partition a fetch asks for."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1


@dataclass(slots=True)
class FetchedPartition:
    """One partition's fetch answer: an error or a read."""

    request: FetchPartition
    error_code: int = ErrorCode.NONE
    read: ReadResult | None = None

    @property
    def size(self) -> int:
        return self.read.size if self.read is not None else 0


# Fallback for exceptions without an ``error_code`` attribute (storage errors carry their own).
_ERROR_CODES_BY_NAME = {
    "CorruptRecordError": ErrorCode.CORRUPT_MESSAGE,
    "InvalidRecordError": ErrorCode.INVALID_RECORD,
    "RecordTooLargeError": ErrorCode.MESSAGE_TOO_LARGE,
    "RecordBatchTooLargeError": ErrorCode.RECORD_LIST_TOO_LARGE,
    "InvalidTimestampError": ErrorCode.INVALID_TIMESTAMP,
    "OffsetOutOfRangeError": ErrorCode.OFFSET_OUT_OF_RANGE,
    "KafkaStorageError": ErrorCode.KAFKA_STORAGE_ERROR,
}


def storage_error_code(exc: BaseException) -> tuple[int, str | None]:
    """Map a storage exception to (Kafka error code, message)."""
    code = getattr(exc, "error_code", None)
    if code is None:
        code = _ERROR_CODES_BY_NAME.get(type(exc).__name__, ErrorCode.UNKNOWN_SERVER_ERROR)
    return code, str(exc) or None


class ReplicaManager:
    """Partitions of this broker and the append/read paths over them."""

    def __init__(self, log_manager, node_id: int) -> None:
        self.log_manager = log_manager
        self.node_id = node_id
        self.partitions: dict[TopicPartition, Partition] = {}
        self.watchers = PartitionWatchers()

    # -- lifecycle -----------------------------------------------------------------------------------
    def get_partition(self, topic: str, partition: int) -> Partition | None:
        return self.partitions.get((topic, partition))

    def become_leader(self, topic: str, partition: int, topic_id: uuid.UUID, leader_epoch: int,
                      replicas: list[int], isr: list[int], log_config) -> Partition:
        """Host ``topic-partition`` as leader, creating its log if needed."""
        p = self.partitions.get((topic, partition))
        if p is None:
            log_ = self.log_manager.get_or_create_log(topic, partition, topic_id, log_config)
            p = Partition(topic, partition, topic_id, log_, self.node_id)
            self.partitions[(topic, partition)] = p
        p.make_leader(leader_epoch, replicas, isr)
        return p

    def delete_partitions(self, topic: str) -> None:
        """Stop hosting every partition of ``topic`` and delete their logs."""
        for key in [k for k in self.partitions if k[0] == topic]:
            p = self.partitions.pop(key)
            self.log_manager.delete_log(p.topic, p.partition)
            self.watchers.notify(key)

    def update_log_config(self, topic: str, log_config) -> None:
        for (t, _), p in self.partitions.items():
            if t == topic:
                p.log.update_config(log_config)

    # -- produce -------------------------------------------------------------------------------------
    def append_records(self, entries: dict[TopicPartition, bytes | memoryview], required_acks: int, *,
                       origin: str = AppendOrigin.CLIENT) -> dict[TopicPartition, AppendResult]:
        """Append each partition's records as leader; per-partition errors, never an exception.

        ``origin`` COORDINATOR: coordinator records and transaction markers (no sequence checks).
        """
        results: dict[TopicPartition, AppendResult] = {}
        for tp, records in entries.items():
            p = self.partitions.get(tp)
            if p is None:
                results[tp] = AppendResult(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            try:
                info = p.append_records_to_leader(records, required_acks, p.log.config.min_insync_replicas,
                                                  origin=origin)
            except PartitionError as exc:
                results[tp] = AppendResult(exc.code, error_message=exc.message)
                continue
            except Exception as exc:  # storage refusals: corrupt, too large, invalid, disk errors
                code, message = storage_error_code(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("append to %s-%d failed", tp[0], tp[1])
                record_errors = list(getattr(exc, "record_errors", []) or [])
                results[tp] = AppendResult(code, error_message=message, record_errors=record_errors,
                                           log_start_offset=p.log.log_start_offset)
                continue
            results[tp] = AppendResult(
                ErrorCode.NONE,
                base_offset=info.first_offset,
                log_append_time_ms=info.log_append_time if info.log_append_time is not None else -1,
                log_start_offset=p.log.log_start_offset,
            )
            self.watchers.notify(tp)
        return results

    # -- fetch ---------------------------------------------------------------------------------------
    def read_partitions(self, wanted: list[FetchPartition], max_bytes: int, read_committed: bool) -> list[FetchedPartition]:
        """One pass over ``wanted``: the first partition with data may exceed ``max_bytes`` by one batch."""
        out: list[FetchedPartition] = []
        remaining = max_bytes
        for fp in wanted:
            p = self.partitions.get((fp.topic, fp.partition))
            if p is None:
                out.append(FetchedPartition(fp, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            limit = min(fp.max_bytes, remaining)
            try:
                read = p.read(fp.fetch_offset, limit, read_committed=read_committed,
                              min_one_message=remaining == max_bytes, current_leader_epoch=fp.current_leader_epoch,
                              last_fetched_epoch=fp.last_fetched_epoch)
            except PartitionError as exc:
                out.append(FetchedPartition(fp, exc.code))
                continue
            except Exception as exc:
                code, _ = storage_error_code(exc)
                if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                    log.exception("read of %s-%d at %d failed", fp.topic, fp.partition, fp.fetch_offset)
                out.append(FetchedPartition(fp, code))  # as Kafka: no offsets with an error (all -1)
                continue
            remaining = max(0, remaining - read.size)
            out.append(FetchedPartition(fp, ErrorCode.NONE, read))
        return out

    async def fetch(self, wanted: list[FetchPartition], *, max_wait_ms: int, min_bytes: int, max_bytes: int,
                    read_committed: bool) -> list[FetchedPartition]:
        """Read now; if fewer than ``min_bytes`` are there and nothing failed, wait for appends (long poll)."""
        deadline = time.monotonic() + max_wait_ms / 1000
        keys = [(fp.topic, fp.partition) for fp in wanted]
        while True:
            result = self.read_partitions(wanted, max_bytes, read_committed)
            total = sum(r.size for r in result)
            if total >= min_bytes or any(r.error_code for r in result) or not wanted:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return result
            if not await self.watchers.wait(keys, remaining):
                return self.read_partitions(wanted, max_bytes, read_committed)

    async def wait_for(self, keys: list[TopicPartition], timeout_s: float) -> bool:
        return await self.watchers.wait(keys, timeout_s)

    def notify(self, topic: str, partition: int) -> None:
        """Offsets of ``topic-partition`` moved (append, high watermark, last stable offset)."""
        self.watchers.notify((topic, partition))

    async def close(self) -> None:
        await asyncio.sleep(0)
