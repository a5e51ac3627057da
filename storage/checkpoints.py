"""Checkpoint files, in Kafka's text formats, written atomically.

Data-directory checkpoints (Kafka's OffsetCheckpointFile), one per log dir::

    recovery-point-offset-checkpoint   log-start-offset-checkpoint
    replication-offset-checkpoint      cleaner-offset-checkpoint

each ``0\\n<count>\\n`` then one ``<topic> <partition> <offset>\\n`` line per partition. Per partition
directory: ``leader-epoch-checkpoint`` (``0\\n<count>\\n`` then ``<epoch> <start_offset>\\n``) and
``partition.metadata`` (``version: 0\\ntopic_id: <base64url topic id, no padding>``, no final newline).
Per log dir, ``.kafka_cleanshutdown`` (``{"broker_epoch":"<n>","version":"0"}``) exists only between a
clean shutdown and the next start.

Every write is Kafka's: ``<file>.tmp`` written and fsynced, renamed over the file, directory fsynced. A
checkpoint whose content does not parse raises CorruptCheckpointError (the caller decides what to lose).
Callers serialize writes to one file (the log manager's scheduler thread, or the log's lock).
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterable, Mapping

from storage.errors import StorageError
from storage.file_records import atomic_write, fsync_dir

__all__ = [
    "CLEAN_SHUTDOWN_FILE_NAME", "CLEANER_OFFSET_CHECKPOINT", "LEADER_EPOCH_CHECKPOINT", "LOG_START_OFFSET_CHECKPOINT",
    "PARTITION_METADATA_FILE", "RECOVERY_POINT_CHECKPOINT", "REPLICATION_OFFSET_CHECKPOINT",
    "CleanShutdownFile", "CorruptCheckpointError", "LeaderEpochCheckpointFile", "OffsetCheckpointFile",
    "PartitionMetadataFile", "topic_id_to_string", "topic_id_from_string",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
CLEAN_SHUTDOWN_FILE_NAME = ".kafka_cleanshutdown"

_VERSION = 0


class CorruptCheckpointError(StorageError):
    """A checkpoint file that does not parse."""


def _read_lines(path: str) -> list[str] | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return None


def _parse(path: str, lines: list[str], fields: int) -> list[list[str]]:
    try:
        version = int(lines[0].strip())
        count = int(lines[1].strip())
    except (IndexError, ValueError):
        raise CorruptCheckpointError(f"Malformed line in checkpoint file ({path}): missing version or count") from None
    if version != _VERSION:
        raise CorruptCheckpointError(f"Unrecognized version of the checkpoint file ({path}): {version}")
    entries = []
    for line in lines[2:2 + count]:
        parts = line.split()
        if len(parts) != fields:
            raise CorruptCheckpointError(f"Malformed line in checkpoint file ({path}): '{line}'")
        entries.append(parts)
    if len(entries) != count:
        raise CorruptCheckpointError(f"Expected {count} entries in checkpoint file ({path}), but found only "
                                     f"{len(entries)}")
    return entries


class OffsetCheckpointFile:
    """A data-directory checkpoint: (topic, partition) → offset."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        lines = [f"{_VERSION}\n", f"{len(offsets)}\n"]
        lines += [f"{topic} {partition} {offset}\n" for (topic, partition), offset in offsets.items()]
        atomic_write(self.path, "".join(lines).encode("utf-8"))

    def read(self) -> dict[tuple[str, int], int]:
        lines = _read_lines(self.path)
        if lines is None:
            return {}
        out: dict[tuple[str, int], int] = {}
        for topic, partition, offset in _parse(self.path, lines, 3):
            try:
                out[(topic, int(partition))] = int(offset)
            except ValueError:
                raise CorruptCheckpointError(f"Malformed line in checkpoint file ({self.path}): "
                                             f"'{topic} {partition} {offset}'") from None
        return out


class LeaderEpochCheckpointFile:
    """``leader-epoch-checkpoint``: the (epoch, start_offset) entries of a partition's leader-epoch cache."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        entries = list(entries)
        text = f"{_VERSION}\n{len(entries)}\n" + "".join(f"{epoch} {offset}\n" for epoch, offset in entries)
        atomic_write(self.path, text.encode("utf-8"))

    def read(self) -> list[tuple[int, int]]:
        lines = _read_lines(self.path)
        if lines is None:
            return []
        try:
            return [(int(epoch), int(offset)) for epoch, offset in _parse(self.path, lines, 2)]
        except ValueError:
            raise CorruptCheckpointError(f"Malformed line in checkpoint file ({self.path})") from None


def topic_id_to_string(topic_id: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")


def topic_id_from_string(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"Input string with prefix `{text[:16]}` is too long to be decoded as a base64 UUID")
    return uuid.UUID(bytes=raw)


class PartitionMetadataFile:
    """``partition.metadata``: the topic id of the partition directory (KIP-516).

    As Kafka's (UnifiedLog.assignTopicId, PartitionMetadataFile.record/maybeFlush): ``record`` only remembers the
    id (``recorded``), and the owner's scheduler thread writes it (``write_temp``, then ``commit_temp``: temp file
    written and fsynced, renamed over the file, directory fsynced), so that creating thousands of partitions waits
    for no file write and no fsync on the event loop. Until then ``recorded`` is the partition's id."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.recorded: uuid.UUID | None = None  # recorded, not written yet

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def write(self, topic_id: uuid.UUID) -> None:
        atomic_write(self.path, self._content(topic_id))

    def record(self, topic_id: uuid.UUID) -> None:
        """Remember ``topic_id``; ``write_temp`` and ``commit_temp`` write it."""
        self.recorded = topic_id

    def write_temp(self, topic_id: uuid.UUID, suffix: str = ".tmp") -> str:
        """``<path><suffix>`` holding ``topic_id``, written and fsynced; its path."""
        tmp = self.path + suffix
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, self._content(topic_id))
            os.fsync(fd)
        finally:
            os.close(fd)
        return tmp

    def commit_temp(self, tmp: str, topic_id: uuid.UUID) -> None:
        """Rename ``tmp`` (from ``write_temp(topic_id)``) over the file; ``topic_id`` is then no longer pending
        (unless another was recorded meanwhile). The caller fsyncs the directory (``sync_dir``)."""
        os.replace(tmp, self.path)
        if self.recorded == topic_id:
            self.recorded = None

    def sync_dir(self) -> None:
        fsync_dir(os.path.dirname(os.path.abspath(self.path)))

    def flush(self) -> None:
        """Write the recorded id now (temp file fsynced, renamed, directory fsynced), if any. Called under the
        owner's lock, its temp file is not the scheduler thread's (which writes its own without the lock: one file
        for both, that thread's truncating open could land between this write and its rename)."""
        topic_id = self.recorded
        if topic_id is not None:
            self.commit_temp(self.write_temp(topic_id, ".flush.tmp"), topic_id)
            self.sync_dir()

    @staticmethod
    def _content(topic_id: uuid.UUID) -> bytes:
        return f"version: {_VERSION}\ntopic_id: {topic_id_to_string(topic_id)}".encode()

    def read(self) -> uuid.UUID:
        lines = _read_lines(self.path)
        if lines is None:
            raise FileNotFoundError(self.path)
        try:
            version_key, version = (p.strip() for p in lines[0].split(":", 1))
            id_key, topic_id = (p.strip() for p in lines[1].split(":", 1))
            if version_key != "version" or int(version) != _VERSION or id_key != "topic_id":
                raise ValueError(lines[:2])
            return topic_id_from_string(topic_id)
        except (IndexError, ValueError):
            raise CorruptCheckpointError(f"Malformed partition metadata file {self.path}") from None


class CleanShutdownFile:
    """``.kafka_cleanshutdown`` in a log dir: present when the last shutdown was clean (Kafka's format)."""

    def __init__(self, log_dir: str) -> None:
        self.path = os.path.join(log_dir, CLEAN_SHUTDOWN_FILE_NAME)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def write(self, broker_epoch: int = -1) -> None:
        payload = json.dumps({"broker_epoch": str(broker_epoch), "version": str(_VERSION)}, separators=(",", ":"))
        atomic_write(self.path, payload.encode("utf-8"))

    def read_broker_epoch(self) -> int | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                return int(json.load(f).get("broker_epoch", "-1"))
        except (OSError, ValueError, AttributeError):
            return None

    def delete(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
