"""The RemoteStorageManager: a closed segment's files to an object store and back (Kafka's RSM contract).

A segment is copied as up to seven objects under ``RemoteLogSegmentMetadata.object_prefix``: ``.log``,
``.index``, ``.timeindex``, ``.txnindex`` (only when not empty), ``.snapshot`` (the producer state at the
segment's end) and ``.leader_epoch_checkpoint`` (the leader-epoch cache up to the segment's end, in the
``leader-epoch-checkpoint`` text format). Copying again overwrites; deleting removes whatever exists. The
metadata records, not these objects, say what is readable: an object without a COPY_SEGMENT_FINISHED record
is never read and never counted (``orphans`` lists them).

Blocking (object-store I/O): called from threads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from storage.remote.metadata import RemoteLogSegmentMetadata
from storage.remote.object_store import ObjectNotFoundError, ObjectStore

__all__ = ["IndexType", "LogSegmentData", "RemoteStorageManager"]

IndexType = Literal["index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint"]
_SUFFIXES = ("log", "index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint")


@dataclass(frozen=True, slots=True)
class LogSegmentData:
    """The local files of a segment to copy (Kafka's LogSegmentData)."""

    log_segment: str
    offset_index: str
    time_index: str
    transaction_index: str | None
    producer_snapshot_index: str | None
    leader_epoch_index: bytes


class RemoteStorageManager:
    """Copies, fetches and deletes segments' objects in ``store`` (see the module docstring)."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def copy_log_segment_data(self, metadata: RemoteLogSegmentMetadata, data: LogSegmentData) -> None:
        """Upload the segment's objects."""
        prefix = metadata.object_prefix
        # Indexes first and the data last: a crash in between leaves objects only the metadata can vouch for.
        self.store.put_file(f"{prefix}.index", data.offset_index)
        self.store.put_file(f"{prefix}.timeindex", data.time_index)
        if data.transaction_index is not None and os.path.exists(data.transaction_index) \
                and os.path.getsize(data.transaction_index) > 0:
            self.store.put_file(f"{prefix}.txnindex", data.transaction_index)
        if data.producer_snapshot_index is not None and os.path.exists(data.producer_snapshot_index):
            self.store.put_file(f"{prefix}.snapshot", data.producer_snapshot_index)
        self.store.put(f"{prefix}.leader_epoch_checkpoint", data.leader_epoch_index)
        self.store.put_file(f"{prefix}.log", data.log_segment)

    def fetch_log_segment(self, metadata: RemoteLogSegmentMetadata, start_position: int,
                          end_position: int | None = None) -> bytes:
        """Bytes [start_position, end_position) of the segment's ``.log``."""
        return self.store.get(f"{metadata.object_prefix}.log", start_position, end_position)

    def fetch_index(self, metadata: RemoteLogSegmentMetadata, index_type: IndexType) -> bytes:
        """A whole index object; an absent transaction index reads as empty."""
        try:
            return self.store.get(f"{metadata.object_prefix}.{index_type}")
        except ObjectNotFoundError:
            if index_type == "txnindex":
                return b""
            raise

    def delete_log_segment_data(self, metadata: RemoteLogSegmentMetadata) -> None:
        for suffix in _SUFFIXES:
            self.store.delete(f"{metadata.object_prefix}.{suffix}")

    def partition_prefix(self, topic: str, partition: int, topic_id: object) -> str:
        return f"{topic}-{partition}-{topic_id}/"

    def stored_bytes(self, prefix: str = "") -> int:
        """Bytes of every object under ``prefix`` (what a bucket listing shows; tests and measurements)."""
        return sum(self.store.size(key) for key in self.store.list(prefix))
