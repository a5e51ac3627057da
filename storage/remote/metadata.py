"""Remote log metadata: what is in remote storage, segment by segment (Kafka's RemoteLogSegmentMetadata).

A remote segment moves through Kafka's ``RemoteLogSegmentState`` machine; each move is one record in the
replicated internal topic ``__remote_log_metadata`` (see ``replication.remote_log_metadata``), and the state of
a partition is the replay of its records (``RemotePartitionMetadata``). Records are JSON objects (pykbroker's
encoding; Kafka's TopicBasedRemoteLogMetadataManager uses its own binary serde):

* ``{"type": "segment", ...every RemoteLogSegmentMetadata field...}`` — a copy started (state 0);
* ``{"type": "update", "segment_id", "topic_id", "partition", "state", "broker_id", "event_timestamp_ms"}``;
* ``{"type": "partition_delete", "topic_id", "partition", "broker_id", "event_timestamp_ms"}`` — every
  segment of a partition is being deleted (topic deletion, remote.log.delete.on.disable).

Pure data and replay: no I/O, no clock.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import asdict, dataclass, field, replace

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
    custom: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def object_prefix(self) -> str:
        """Where the segment's objects live: ``<topic>-<partition>-<topic id>/<start offset>-<segment id>``."""
        return f"{self.topic}-{self.partition}-{self.topic_id}/{self.start_offset:020d}-{self.segment_id}"

    @property
    def highest_epoch(self) -> int:
        return self.segment_leader_epochs[-1][0] if self.segment_leader_epochs else -1


def encode_segment(m: RemoteLogSegmentMetadata) -> bytes:
    d = asdict(m)
    d.update(type="segment", topic_id=str(m.topic_id), segment_id=str(m.segment_id), state=int(m.state),
             segment_leader_epochs=[list(e) for e in m.segment_leader_epochs])
    return json.dumps(d, separators=(",", ":")).encode()


def encode_update(m: RemoteLogSegmentMetadata, state: RemoteLogSegmentState, broker_id: int, now_ms: int) -> bytes:
    return json.dumps({"type": "update", "topic_id": str(m.topic_id), "partition": m.partition,
                       "segment_id": str(m.segment_id), "state": int(state), "broker_id": broker_id,
                       "event_timestamp_ms": now_ms}, separators=(",", ":")).encode()


def encode_partition_delete(topic_id: uuid.UUID, partition: int, broker_id: int, now_ms: int) -> bytes:
    return json.dumps({"type": "partition_delete", "topic_id": str(topic_id), "partition": partition,
                       "broker_id": broker_id, "event_timestamp_ms": now_ms}, separators=(",", ":")).encode()


def decode_record(value: bytes) -> dict:
    """The record as a dict (``type`` says which); ValueError for anything else."""
    d = json.loads(value)
    if not isinstance(d, dict) or d.get("type") not in ("segment", "update", "partition_delete"):
        raise ValueError(f"not a remote log metadata record: {value[:80]!r}")
    d["topic_id"] = uuid.UUID(d["topic_id"])
    if "segment_id" in d:
        d["segment_id"] = uuid.UUID(d["segment_id"])
    return d


class RemotePartitionMetadata:
    """The remote segments of one partition: the replay of its metadata records (one writer: the replayer).

    A record that would make an illegal move (a late duplicate, a stale leader's update) is ignored, as
    Kafka's RemoteLogMetadataCache refuses it.
    """

    def __init__(self, topic_id: uuid.UUID, partition: int) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.segments: dict[uuid.UUID, RemoteLogSegmentMetadata] = {}
        self.delete_requested = False

    def apply(self, record: dict) -> None:
        kind = record["type"]
        if kind == "segment":
            fields = {k: v for k, v in record.items() if k != "type"}
            fields["state"] = RemoteLogSegmentState(fields["state"])
            fields["segment_leader_epochs"] = tuple(tuple(e) for e in fields["segment_leader_epochs"])
            m = RemoteLogSegmentMetadata(**fields)
            if m.segment_id not in self.segments:
                self.segments[m.segment_id] = m
        elif kind == "update":
            current = self.segments.get(record["segment_id"])
            target = RemoteLogSegmentState(record["state"])
            if current is None or not current.state.can_transition_to(target):
                return
            if target is RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
                del self.segments[current.segment_id]
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
