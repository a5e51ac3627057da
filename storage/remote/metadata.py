"""Remote log metadata: what is in remote storage, segment by segment (Kafka's RemoteLogSegmentMetadata).

A remote segment moves through Kafka's ``RemoteLogSegmentState`` machine; each move is one record in the
replicated internal topic ``__remote_log_metadata`` (see ``replication.remote_log_metadata``), and the state of
a partition is the replay of its records (``RemotePartitionMetadata``). Record values are Kafka's
RemoteLogMetadataSerde format, so Kafka's own tools read the topic: the frame version (unsigned varint 1), the
record's api key and version (unsigned varints), then the generated message (``wire.messages``):

* ``RemoteLogSegmentMetadataRecord`` (0) — a copy started (state 0), with every RemoteLogSegmentMetadata field;
* ``RemoteLogSegmentMetadataUpdateRecord`` (1) — the segment's new state;
* ``RemotePartitionDeleteMetadataRecord`` (2) — every segment of a partition is being deleted (topic deletion,
  remote.log.delete.on.disable).

``decode_record`` turns one into a dict (``type``: ``segment``, ``update`` or ``partition_delete``).
Pure data and replay: no I/O, no clock.
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass, field, replace

from wire import DecodeError, Message, Reader, Writer
from wire.messages import (
    RemoteLogSegmentMetadataRecord,
    RemoteLogSegmentMetadataUpdateRecord,
    RemotePartitionDeleteMetadataRecord,
)
from wire.messages.remote_log_segment_metadata_record import (
    RemoteLogSegmentIdEntry,
    SegmentLeaderEpochEntry,
    TopicIdPartitionEntry,
)
from wire.messages.remote_log_segment_metadata_update_record import RemoteLogSegmentIdEntry as UpdateSegmentId
from wire.messages.remote_log_segment_metadata_update_record import (
    TopicIdPartitionEntry as UpdateTopicIdPartition,
)
from wire.messages.remote_partition_delete_metadata_record import (
    TopicIdPartitionEntry as DeleteTopicIdPartition,
)

__all__ = ["RemoteLogSegmentMetadata", "RemoteLogSegmentState", "RemotePartitionMetadata", "decode_record",
           "encode_segment", "encode_update", "encode_partition_delete"]


class RemoteLogSegmentState(enum.IntEnum):
    """Kafka's states of a remote segment.

    COPY_SEGMENT_STARTED: the leader is uploading it; not readable, not counted (a crash leaves it here, and the
    next leader deletes it). COPY_SEGMENT_FINISHED: uploaded with its indexes; readable and counted.
    DELETE_SEGMENT_STARTED: retention (or a partition delete) is removing it; no longer readable.
    DELETE_SEGMENT_FINISHED: gone; dropped from the cache.
    """

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3

    def can_transition_to(self, target: RemoteLogSegmentState) -> bool:
        return target in _TRANSITIONS[self]


S = RemoteLogSegmentState
_TRANSITIONS: dict[RemoteLogSegmentState, frozenset[RemoteLogSegmentState]] = {
    S.COPY_SEGMENT_STARTED: frozenset({S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}),
    S.COPY_SEGMENT_FINISHED: frozenset({S.DELETE_SEGMENT_STARTED}),
    S.DELETE_SEGMENT_STARTED: frozenset({S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED}),
    S.DELETE_SEGMENT_FINISHED: frozenset(),
}


@dataclass(frozen=True, slots=True)
class RemoteLogSegmentMetadata:
    """One remote segment: offsets [start_offset, end_offset], its leader epochs and size, and its state."""

    topic_id: uuid.UUID
    topic: str
    partition: int
    segment_id: uuid.UUID
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_size_in_bytes: int
    # Leader epoch -> its first offset in this segment (Kafka's segmentLeaderEpochs).
    segment_leader_epochs: tuple[tuple[int, int], ...] = ()
    state: RemoteLogSegmentState = RemoteLogSegmentState.COPY_SEGMENT_STARTED
    txn_index_empty: bool = True
    custom_metadata: bytes | None = field(default=None, compare=False)  # the RemoteStorageManager's own

    @property
    def object_prefix(self) -> str:
        """Where the segment's objects live: ``<topic>-<partition>-<topic id>/<start offset>-<segment id>``."""
        return f"{self.topic}-{self.partition}-{self.topic_id}/{self.start_offset:020d}-{self.segment_id}"

    @property
    def highest_epoch(self) -> int:
        return self.segment_leader_epochs[-1][0] if self.segment_leader_epochs else -1


_FRAME_VERSION = 1  # Kafka's AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
_RECORD_VERSION = 0
_TYPES: dict[int, type[Message]] = {RemoteLogSegmentMetadataRecord.API_KEY: RemoteLogSegmentMetadataRecord,
          RemoteLogSegmentMetadataUpdateRecord.API_KEY: RemoteLogSegmentMetadataUpdateRecord,
          RemotePartitionDeleteMetadataRecord.API_KEY: RemotePartitionDeleteMetadataRecord}


def _frame(message: RemoteLogSegmentMetadataRecord | RemoteLogSegmentMetadataUpdateRecord
           | RemotePartitionDeleteMetadataRecord) -> bytes:
    w = Writer()
    w.uvarint(_FRAME_VERSION)
    w.uvarint(message.API_KEY)
    w.uvarint(_RECORD_VERSION)
    message.encode_into(w, _RECORD_VERSION)
    return w.getvalue()


def _segment_id(m: RemoteLogSegmentMetadata) -> RemoteLogSegmentIdEntry:
    return RemoteLogSegmentIdEntry(topic_id_partition=TopicIdPartitionEntry(name=m.topic, id=m.topic_id,
                                                                            partition=m.partition), id=m.segment_id)


def encode_segment(m: RemoteLogSegmentMetadata) -> bytes:
    """A RemoteLogSegmentMetadataRecord of ``m`` (its state is COPY_SEGMENT_STARTED when written by the copy)."""
    return _frame(RemoteLogSegmentMetadataRecord(
        remote_log_segment_id=_segment_id(m), start_offset=m.start_offset, end_offset=m.end_offset,
        broker_id=m.broker_id, max_timestamp_ms=m.max_timestamp_ms, event_timestamp_ms=m.event_timestamp_ms,
        segment_leader_epochs=[SegmentLeaderEpochEntry(leader_epoch=e, offset=o) for e, o in m.segment_leader_epochs],
        segment_size_in_bytes=m.segment_size_in_bytes, custom_metadata=m.custom_metadata,
        remote_log_segment_state=int(m.state), txn_index_empty=m.txn_index_empty))


def encode_update(m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState, broker_id: int, now_ms: int) -> bytes:
    """A RemoteLogSegmentMetadataUpdateRecord: ``m`` moves to ``state``."""
    segment_id = UpdateSegmentId(topic_id_partition=UpdateTopicIdPartition(name=m.topic, id=m.topic_id,
                                                                           partition=m.partition), id=m.segment_id)
    return _frame(RemoteLogSegmentMetadataUpdateRecord(remote_log_segment_id=segment_id, broker_id=broker_id,
                                                       event_timestamp_ms=now_ms, remote_log_segment_state=int(state)))


def encode_partition_delete(topic: str, topic_id: uuid.UUID, partition: int, broker_id: int, now_ms: int,
                            state: int = 0) -> bytes:
    """A RemotePartitionDeleteMetadataRecord (Kafka's RemotePartitionDeleteState: 0 marked, 1 started, 2 finished)."""
    return _frame(RemotePartitionDeleteMetadataRecord(
        topic_id_partition=DeleteTopicIdPartition(name=topic, id=topic_id, partition=partition), broker_id=broker_id,
        event_timestamp_ms=now_ms, remote_partition_delete_state=state))


def decode_record(value: bytes) -> dict:
    """The record as a dict (``type`` says which); ValueError for anything that is not one of Kafka's records."""
    r = Reader(value)
    frame_version, api_key, version = r.uvarint(), r.uvarint(), r.uvarint()
    kind = _TYPES.get(api_key)
    if frame_version != _FRAME_VERSION or kind is None or version != _RECORD_VERSION:
        raise ValueError(f"not a remote log metadata record (frame {frame_version}, type {api_key}, "
                         f"version {version}): {value[:40]!r}")
    message = kind.decode_from(r, version)
    if r.pos != r.end:
        raise DecodeError(f"{r.end - r.pos} trailing bytes after {kind.NAME}")
    if isinstance(message, RemotePartitionDeleteMetadataRecord):
        deleted = message.topic_id_partition
        return {"type": "partition_delete", "topic_id": deleted.id, "partition": deleted.partition,
                "broker_id": message.broker_id, "event_timestamp_ms": message.event_timestamp_ms,
                "state": message.remote_partition_delete_state}
    if isinstance(message, RemoteLogSegmentMetadataUpdateRecord):
        update = message.remote_log_segment_id
        return {"type": "update", "topic_id": update.topic_id_partition.id,
                "partition": update.topic_id_partition.partition, "segment_id": update.id,
                "state": message.remote_log_segment_state, "broker_id": message.broker_id,
                "event_timestamp_ms": message.event_timestamp_ms}
    assert isinstance(message, RemoteLogSegmentMetadataRecord)
    sid = message.remote_log_segment_id
    tp = sid.topic_id_partition
    return {"type": "segment", "topic_id": tp.id, "topic": tp.name, "partition": tp.partition, "segment_id": sid.id,
            "start_offset": message.start_offset, "end_offset": message.end_offset,
            "max_timestamp_ms": message.max_timestamp_ms, "broker_id": message.broker_id,
            "event_timestamp_ms": message.event_timestamp_ms, "segment_size_in_bytes": message.segment_size_in_bytes,
            "segment_leader_epochs": [(e.leader_epoch, e.offset) for e in message.segment_leader_epochs],
            "state": message.remote_log_segment_state, "txn_index_empty": message.txn_index_empty,
            "custom_metadata": message.custom_metadata}


class RemotePartitionMetadata:
    """The remote segments of one partition: the replay of its metadata records (one writer: the event loop).

    A record that would make an illegal move (a late duplicate, a stale leader's update) is ignored, as
    Kafka's RemoteLogMetadataCache refuses it; so applying a broker's own record when it writes it and again
    when the replay reaches it changes nothing the second time.
    """

    def __init__(self, topic_id: uuid.UUID, partition: int) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.segments: dict[uuid.UUID, RemoteLogSegmentMetadata] = {}
        self.deleted: set[uuid.UUID] = set()  # DELETE_SEGMENT_FINISHED: a late copy of its first record is ignored
        self.delete_requested = False

    def apply(self, record: dict) -> None:
        kind = record["type"]
        if kind == "segment":
            fields = {k: v for k, v in record.items() if k != "type"}
            fields["state"] = RemoteLogSegmentState(fields["state"])
            fields["segment_leader_epochs"] = tuple(tuple(e) for e in fields["segment_leader_epochs"])
            m = RemoteLogSegmentMetadata(**fields)
            if m.segment_id not in self.segments and m.segment_id not in self.deleted:
                self.segments[m.segment_id] = m
        elif kind == "update":
            current = self.segments.get(record["segment_id"])
            target = RemoteLogSegmentState(record["state"])
            if current is None or not current.state.can_transition_to(target):
                return
            if target is RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
                del self.segments[current.segment_id]
                self.deleted.add(current.segment_id)
            else:
                self.segments[current.segment_id] = replace(current, state=target,
                                                            event_timestamp_ms=record["event_timestamp_ms"])
        elif kind == "partition_delete":
            self.delete_requested = True

    # -- queries -----------------------------------------------------------------------------------------------
    def copied(self) -> list[RemoteLogSegmentMetadata]:
        """Readable segments (COPY_SEGMENT_FINISHED), by start offset."""
        return sorted((m for m in self.segments.values() if m.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED),
                      key=lambda m: (m.start_offset, m.end_offset))

    def unfinished(self) -> list[RemoteLogSegmentMetadata]:
        """Copies that never finished and deletions that never ended (what a new leader cleans up)."""
        return [m for m in self.segments.values() if m.state in (RemoteLogSegmentState.COPY_SEGMENT_STARTED,
                                                                  RemoteLogSegmentState.DELETE_SEGMENT_STARTED)]

    @property
    def highest_offset(self) -> int:
        """The highest offset copied (-1: none) — Kafka's highestOffsetInRemoteStorage."""
        return max((m.end_offset for m in self.copied()), default=-1)

    @property
    def log_start_offset(self) -> int | None:
        """The first offset held remotely, None when nothing is."""
        copied = self.copied()
        return copied[0].start_offset if copied else None

    @property
    def size_in_bytes(self) -> int:
        return sum(m.segment_size_in_bytes for m in self.copied())

    def segment_for_offset(self, offset: int) -> RemoteLogSegmentMetadata | None:
        """A readable segment holding ``offset`` (the one starting last, when copies overlap)."""
        best = None
        for m in self.copied():
            if m.start_offset <= offset <= m.end_offset:
                best = m
        return best

    def next_segment_after(self, offset: int) -> RemoteLogSegmentMetadata | None:
        """The first readable segment starting after ``offset`` (a gap left by transaction markers)."""
        return next((m for m in self.copied() if m.start_offset > offset), None)
