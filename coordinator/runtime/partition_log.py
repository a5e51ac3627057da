"""``CoordinatorLog`` over a local partition of a coordinator's topic, through the replica manager.

Appends are one v2 record batch per operation (no compression, create-time timestamps = now, no
producer id), written as leader with acks=all; the offset of the batch's last record is returned once
the append is acknowledged: committed to the whole ISR, or a CoordinatorLogError (REQUEST_TIMED_OUT
after ``append_timeout_ms``, as Kafka's offsets.commit.timeout.ms). ``write`` is the same append in two
halves, as Kafka's CoordinatorPartitionWriter: the leader's own write (its offset at once), then the wait
for the high watermark (None when it is already there: a single replica). ``read_all`` reads the
partition from its log start offset to its log end and yields every record; records of
transactional batches carry their producer id, and transaction markers are yielded as
``(offset, None, None, producer_id, commit)`` (see ``coordinator.runtime.log``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import CoordinatorLogError
from coordinator.runtime.log import LogEntry
from replication.partition import PartitionError, read_bytes
from storage import AppendOrigin
from wire import (
    CONTROL_FLAG_MASK,
    TRANSACTIONAL_FLAG_MASK,
    ControlRecordType,
    ErrorCode,
    build_control_batch,
    build_simple_batch,
    decode_records,
    iter_batch_headers,
    parse_control_record,
)

__all__ = ["ReplicaCoordinatorLog"]

# How much one read of the partition asks for while loading.
READ_CHUNK_BYTES = 4 * 1024 * 1024


class ReplicaCoordinatorLog:
    """One partition of ``topic`` (__consumer_offsets, __transaction_state, ...) led by this broker."""

    def __init__(self, replica_manager: Any, partition: int, clock: Clock, *, topic: str,
                 append_timeout_ms: int = 5000) -> None:
        self._rm = replica_manager
        self.append_timeout_ms = append_timeout_ms
        self.topic = topic
        self.partition = partition
        self._clock = clock

    async def append(self, records: Sequence[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                     producer_epoch: int = -1) -> int:
        last_offset, wait_committed = await self.write(records, producer_id=producer_id,
                                                       producer_epoch=producer_epoch)
        if wait_committed is not None:
            await wait_committed()
        return last_offset

    async def write(self, records: Sequence[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                    producer_epoch: int = -1) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        batch = build_simple_batch([v for _, v in records], keys=[k for k, _ in records],
                                   timestamp=self._clock.now_ms(), producer_id=producer_id,
                                   producer_epoch=producer_epoch, is_transactional=producer_id >= 0)
        first, wait_committed = await self._write(batch)
        return first + len(records) - 1, wait_committed

    async def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                            commit: bool) -> int:
        offset, wait_committed = await self.write_marker(producer_id, producer_epoch, coordinator_epoch, commit)
        if wait_committed is not None:
            await wait_committed()
        return offset

    async def write_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                           commit: bool, *, transaction_version: int = 0
                           ) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        # Checked on the shard's task, so after every append queued before it (Kafka: the log's own check).
        partition = self._rm.get_partition(self.topic, self.partition)
        if partition is not None and partition.log.producer_state.marker_epoch_fenced(
                producer_id, producer_epoch, transaction_version):
            raise CoordinatorLogError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                      f"producer {producer_id} epoch {producer_epoch}: transaction still open")
        marker = build_control_batch(ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
                                     producer_id=producer_id, producer_epoch=producer_epoch,
                                     timestamp=self._clock.now_ms(), partition_leader_epoch=-1,
                                     coordinator_epoch=coordinator_epoch)
        return await self._write(marker)

    async def _write(self, batch: bytes) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        """Write one batch as the leader (min.insync.replicas checked first, as acks=all): the offset of its
        first record, and what waits for its commit (None: committed already)."""
        tp = (self.topic, self.partition)
        results, appended = await self._rm.append_records_locally({tp: batch}, -1, self.append_timeout_ms,
                                                                  origin=AppendOrigin.COORDINATOR)
        result = results[tp]
        if result.error_code != ErrorCode.NONE:
            raise CoordinatorLogError(result.error_code, result.error_message)
        partition, required_offset = appended[tp]
        if partition.acks_all_error(required_offset, partition.log.config.min_insync_replicas) == ErrorCode.NONE:
            return result.base_offset, None

        async def wait_committed() -> None:
            await self._rm.wait_for_high_watermarks(appended, results, self.append_timeout_ms)
            if results[tp].error_code != ErrorCode.NONE:
                raise CoordinatorLogError(results[tp].error_code, results[tp].error_message)
        return result.base_offset, wait_committed

    @property
    def log_end_offset(self) -> int | None:
        """Where the partition's log ends (for the load's progress lines); None when it is not hosted here."""
        partition = self._rm.get_partition(self.topic, self.partition)
        return None if partition is None else partition.log.log_end_offset

    def read_all(self) -> Iterator[LogEntry]:
        partition = self._rm.get_partition(self.topic, self.partition)
        if partition is None:
            raise CoordinatorLogError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                                      f"{self.topic}-{self.partition} is not hosted here")
        offset = partition.log.log_start_offset
        while True:
            # Up to the log end, as Kafka's coordinator loader: a new leader's high watermark may still trail
            # records its predecessor committed, and they must not be missed.
            try:
                read = partition.read(offset, READ_CHUNK_BYTES, read_committed=False, min_one_message=True,
                                      from_follower=True)
            except PartitionError as exc:
                raise CoordinatorLogError(exc.code, f"reading {self.topic}-{self.partition} at {offset}") from exc
            data = read_bytes(read.records)
            if not data:
                return
            progressed = False
            for pos, header in iter_batch_headers(data):
                last = header.base_offset + header.last_offset_delta
                if last < offset:
                    continue
                progressed = True
                _, batch_records = decode_records(data, pos)
                if header.attributes & CONTROL_FLAG_MASK:
                    for r in batch_records:
                        control_type, _ = parse_control_record(r)
                        if control_type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                            yield (header.base_offset + r.offset_delta, None, None, header.producer_id,
                                   control_type == ControlRecordType.COMMIT)
                else:
                    transactional = bool(header.attributes & TRANSACTIONAL_FLAG_MASK)
                    for r in batch_records:
                        record_offset = header.base_offset + r.offset_delta
                        if record_offset >= offset:
                            if transactional:
                                yield record_offset, r.key, r.value, header.producer_id
                            else:
                                yield record_offset, r.key, r.value
                offset = last + 1
            if not progressed or offset >= partition.log.log_end_offset:
                return
