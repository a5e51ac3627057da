"""Remote log metadata in ``__remote_log_metadata`` (Kafka's TopicBasedRemoteLogMetadataManager).

Every state change of a remote segment (``storage.remote.metadata``) is one record, appended with acks=all to
the partition ``metadata_partition(topic_id, partition)`` of the internal topic, so it is replicated like any
data and survives the leader: a new leader replays it and continues copying where the old one stopped, and a
follower knows what is remote (and which local segments it may delete) without downloading anything.

Every broker replays the metadata partitions it hosts (leader or follower) up to their high watermark into one
``RemotePartitionMetadata`` per user partition; ``poll`` is called after each write and by the remote log
manager's task. A broker's own records are applied when written too, since its replica of the metadata partition
may be a follower whose replay trails the write (replaying them again changes nothing). A write to a metadata partition led elsewhere is sent to its leader as a Produce request
(``send_produce``). Runs on the event loop; reads of the local log are short (a few MiB at most per poll).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from replication.partition import PartitionError, read_bytes
from storage import AppendOrigin
from storage.remote.metadata import RemotePartitionMetadata, decode_record
from wire import ErrorCode, build_simple_batch, decode_records, iter_batch_headers

log = logging.getLogger("replication.remote_log_metadata")

__all__ = ["REMOTE_LOG_METADATA_TOPIC_NAME", "RemoteLogMetadataError", "TopicBasedRemoteLogMetadataManager"]

REMOTE_LOG_METADATA_TOPIC_NAME = "__remote_log_metadata"
_READ_CHUNK_BYTES = 1 << 20


_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (a signed 32-bit result, as Java's int)."""
    m, length = 0x5BD1E995, len(data)
    h = (0x9747B28C ^ length) & _MASK32
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = ((h * m) & _MASK32) ^ k
    tail = length % 4
    if tail:
        base = length - tail
        for j in range(tail - 1, -1, -1):
            h ^= data[base + j] << (8 * j)
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def _java_long_hash(v: int) -> int:
    return ((v & _MASK32) ^ ((v >> 32) & _MASK32)) & _MASK32


def metadata_partition(topic_id: uuid.UUID, partition: int, num_partitions: int) -> int:
    """Kafka's RemoteLogMetadataTopicPartitioner.metadataPartition."""
    h = 1
    for part in (_java_long_hash(topic_id.int & 0xFFFFFFFFFFFFFFFF), _java_long_hash(topic_id.int >> 64),
                 partition & _MASK32):
        h = (31 * h + part) & _MASK32
    return (murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % num_partitions


class RemoteLogMetadataError(Exception):
    """A metadata record could not be written (the metadata partition's leader is not available, a timeout)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


SendProduce = Callable[[int, str, int, bytes], Awaitable[int]]  # (leader, topic, partition, batch) -> error code
# (leader, topic, partition) -> the leader's high watermark (ListOffsets LATEST), None when it cannot be asked.
EndOffset = Callable[[int, str, int], Awaitable["int | None"]]


class TopicBasedRemoteLogMetadataManager:
    """Writes and replays remote log metadata records (see the module docstring)."""

    def __init__(self, replica_manager: Any, node_id: int, num_partitions: int, *,
                 leader_of: Callable[[str, int], int | None], send_produce: SendProduce | None = None,
                 end_offset: EndOffset | None = None, time_ms: Callable[[], int],
                 append_timeout_ms: int = 30_000) -> None:
        self._rm = replica_manager
        self.node_id = node_id
        self.num_partitions = num_partitions
        self._leader_of = leader_of
        self._send_produce = send_produce
        self._end_offset = end_offset
        # (topic id, partition, leader epoch) whose metadata was replayed up to the metadata partition leader's high
        # watermark when this broker became their leader; and the target offsets still being waited for.
        self._ready: set[tuple[uuid.UUID, int, int]] = set()
        self._targets: dict[tuple[uuid.UUID, int, int], int] = {}
        self.time_ms = time_ms
        self.append_timeout_ms = append_timeout_ms
        self._positions: dict[int, int] = {}  # metadata partition -> next offset to replay
        self.partitions: dict[tuple[uuid.UUID, int], RemotePartitionMetadata] = {}

    def metadata_partition(self, topic_id: uuid.UUID, partition: int) -> int:
        """The partition of __remote_log_metadata that holds a user partition's records: Kafka's
        RemoteLogMetadataTopicPartitioner (murmur2 of Java's Objects.hash of the topic id's halves and the
        partition), so Kafka's tools and brokers look for them where pykbroker writes them."""
        return metadata_partition(topic_id, partition, self.num_partitions)

    def partition_metadata(self, topic_id: uuid.UUID, partition: int) -> RemotePartitionMetadata:
        key = (topic_id, partition)
        found = self.partitions.get(key)
        if found is None:
            found = self.partitions[key] = RemotePartitionMetadata(topic_id, partition)
        return found

    def leads(self, topic_id: uuid.UUID, partition: int) -> bool:
        """Whether this broker leads the metadata partition of a user partition."""
        p = self._rm.get_partition(REMOTE_LOG_METADATA_TOPIC_NAME, self.metadata_partition(topic_id, partition))
        return p is not None and p.is_leader

    def hosts(self, topic_id: uuid.UUID, partition: int) -> bool:
        """Whether this broker hosts (and so replays, each task interval) the metadata partition of a user partition."""
        return self._rm.get_partition(REMOTE_LOG_METADATA_TOPIC_NAME, self.metadata_partition(topic_id, partition)) \
            is not None

    def is_ready(self, topic_id: uuid.UUID, partition: int) -> bool:
        """Whether this broker hosts the metadata partition and has replayed it up to its high watermark."""
        mp = self.metadata_partition(topic_id, partition)
        p = self._rm.get_partition(REMOTE_LOG_METADATA_TOPIC_NAME, mp)
        return p is not None and self._positions.get(mp, 0) >= p.log.high_watermark

    def is_caught_up(self, topic_id: uuid.UUID, partition: int) -> bool:
        """``is_ready``, and nothing this replica of the metadata partition holds is above its high watermark (a
        restarted broker's high watermark lags its log until its leader's answers): every record it has is replayed."""
        mp = self.metadata_partition(topic_id, partition)
        p = self._rm.get_partition(REMOTE_LOG_METADATA_TOPIC_NAME, mp)
        return p is not None and self._positions.get(mp, 0) >= p.log.high_watermark == p.log.log_end_offset

    async def ensure_ready(self, topic_id: uuid.UUID, partition: int, leader_epoch: int) -> bool:
        """Whether a new leader (of ``leader_epoch``) may copy and delete: once it has replayed the metadata
        partition up to the high watermark its leader had when asked (Kafka's TopicBasedRemoteLogMetadataManager
        .isReady after the ConsumerTask caught up to the end offsets), so it never takes a predecessor's finished
        copy for a missing or half-done one (a needless re-copy, a deletion). Asked once per leader epoch; False
        until then (the caller retries next round while this replica of the metadata partition catches up)."""
        key = (topic_id, partition, leader_epoch)
        if key in self._ready:
            return True
        mp = self.metadata_partition(topic_id, partition)
        target = self._targets.get(key)
        if target is None:
            leader = self._leader_of(REMOTE_LOG_METADATA_TOPIC_NAME, mp)
            local = self._rm.get_partition(REMOTE_LOG_METADATA_TOPIC_NAME, mp)
            if local is not None and local.is_leader:
                target = local.log.high_watermark
            elif leader is not None and self._end_offset is not None:
                target = await self._end_offset(leader, REMOTE_LOG_METADATA_TOPIC_NAME, mp)
            elif leader is None and self._send_produce is None and local is not None:
                target = local.log.high_watermark  # a single node: its replica is the only one
            if target is None:
                return False
            self._targets[key] = target
        self.poll(mp)
        if self._positions.get(mp, 0) < target:
            return False
        self._targets.pop(key, None)
        self._ready = {k for k in self._ready if k[:2] != key[:2]} | {key}
        log.info("remote log metadata of %s partition %d replayed to %d in %s-%d; its leader (epoch %d) may copy",
                 topic_id, partition, target, REMOTE_LOG_METADATA_TOPIC_NAME, mp, leader_epoch)
        return True

    async def write(self, topic_id: uuid.UUID, partition: int, value: bytes) -> None:
        """Append one record (acks=all) and replay it; RemoteLogMetadataError when it cannot be written."""
        mp = self.metadata_partition(topic_id, partition)
        batch = build_simple_batch([value], timestamp=self.time_ms())  # no key, as Kafka's ProducerManager
        leader = self._leader_of(REMOTE_LOG_METADATA_TOPIC_NAME, mp)
        if leader == self.node_id or (leader is None and self._send_produce is None):
            tp = (REMOTE_LOG_METADATA_TOPIC_NAME, mp)
            result = (await self._rm.append_records({tp: batch}, -1, self.append_timeout_ms,
                                                    origin=AppendOrigin.COORDINATOR))[tp]
            code, message = result.error_code, result.error_message
        elif leader is not None and self._send_produce is not None:
            code, message = await self._send_produce(leader, REMOTE_LOG_METADATA_TOPIC_NAME, mp, batch), None
        else:
            code, message = ErrorCode.LEADER_NOT_AVAILABLE, None
        if code != ErrorCode.NONE:
            raise RemoteLogMetadataError(code, f"writing to {REMOTE_LOG_METADATA_TOPIC_NAME}-{mp}: "
                                               f"{ErrorCode(code).name} {message or ''}".strip())
        # Known at once (write-through): this broker's replica of the metadata partition may be a follower whose
        # high watermark, and so the replay, trails the write; a copy finished here must never look unfinished.
        self.partition_metadata(topic_id, partition).apply(decode_record(value))
        self.poll(mp)

    def poll(self, only: int | None = None) -> int:
        """Replay new records of the hosted metadata partitions (or of ``only``); returns how many."""
        applied = 0
        for mp in ([only] if only is not None else range(self.num_partitions)):
            p = self._rm.get_partition(REMOTE_LOG_METADATA_TOPIC_NAME, mp)
            if p is None:
                continue
            position = max(self._positions.get(mp, 0), p.log.log_start_offset)
            while position < p.log.high_watermark:
                try:
                    read = p.read(position, _READ_CHUNK_BYTES, read_committed=False, min_one_message=True,
                                  from_follower=False, allow_follower_read=True)
                except PartitionError as exc:
                    log.debug("cannot replay %s-%d at %d: %s", REMOTE_LOG_METADATA_TOPIC_NAME, mp, position, exc)
                    break
                data = read_bytes(read.records)
                if not data:
                    break
                for pos, header in iter_batch_headers(data):
                    last = header.base_offset + header.last_offset_delta
                    if last < position:
                        continue
                    _, records = decode_records(data, pos)
                    for r in records:
                        if header.base_offset + r.offset_delta < position or r.value is None:
                            continue
                        try:
                            record = decode_record(bytes(r.value))
                        except (ValueError, KeyError) as exc:
                            log.warning("skipping an unreadable record in %s-%d: %s",
                                        REMOTE_LOG_METADATA_TOPIC_NAME, mp, exc)
                            continue
                        self.partition_metadata(record["topic_id"], record["partition"]).apply(record)
                        applied += 1
                    position = last + 1
            self._positions[mp] = position
        return applied
