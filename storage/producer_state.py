"""Producer state of a partition: per producer id, its epoch, last sequences and open transaction.

What idempotence and transactions need from the log (Kafka's ProducerStateManager): for each producer id
its epoch, the metadata of its last five batches (sequences and offsets, to detect retries and gaps),
the coordinator epoch of its last transaction marker and the first offset of its open transaction; plus
the open transactions by first offset (the last stable offset is the smallest of them).

On disk: ``<20-digit offset>.snapshot`` files in the partition directory, the state as of that offset
(Kafka's version 1 format, big-endian)::

    version int16 (1) | crc uint32 (CRC-32C of everything after it) | count int32 | count × entry
    entry: producer_id int64 | epoch int16 | last_sequence int32 | last_offset int64 | offset_delta int32
           | timestamp int64 | coordinator_epoch int32 | current_txn_first_offset int64 (-1: none)

Only each producer's last batch survives a snapshot (as in Kafka). A snapshot is taken at every segment
roll and at close; recovery loads the latest valid one and replays the log from its offset. State is
rebuilt from the log, never the only copy. Mutated under the owning log's lock.

In memory only, as in Kafka: a ``VerificationStateEntry`` per producer whose transactional write this
leader is checking with the transaction coordinator (KIP-890), holding the lowest sequence seen, so that a
later batch cannot be written before an earlier one whose check failed and is being retried.
"""

from __future__ import annotations

import logging
import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import NamedTuple

from storage.errors import (
    CorruptSnapshotError,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from storage.segment import filename_prefix_from_offset
from wire import ControlRecordType, RecordBatchHeader, decode_records, parse_control_record

log = logging.getLogger("storage.producer_state")

__all__ = [
    "AppendOrigin", "BatchMetadata", "CompletedTxn", "ProducerAppendInfo", "ProducerStateEntry",
    "ProducerStateManager", "read_snapshot", "write_snapshot", "PRODUCER_SNAPSHOT_SUFFIX",
]

PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
INT32_MAX = (1 << 31) - 1
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6  # the CRC covers the bytes after version and crc


class AppendOrigin:
    """Who appends: validation differs (Kafka's AppendOrigin)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


def _decrement_sequence(sequence: int, decrement: int) -> int:
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    """Sequences and offsets of one appended batch of a producer (immutable: a retry is answered from it)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return _decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


_new_batch_metadata = tuple.__new__  # BatchMetadata made without a call of Python code: tuple.__new__(cls, fields)
# A producer's kept batches: appending a sixth drops the first.
_batch_deque: partial[deque[BatchMetadata]] = partial(deque, maxlen=NUM_BATCHES_TO_RETAIN)


@dataclass(slots=True)
class ProducerStateEntry:
    """One producer id's state (its last five batches, epoch, coordinator epoch, open transaction)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    coordinator_epoch: int = -1
    last_timestamp: int = -1
    current_txn_first_offset: int | None = None
    batch_metadata: deque[BatchMetadata] = field(default_factory=_batch_deque)

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def maybe_update_producer_epoch(self, producer_epoch: int) -> bool:
        if self.producer_epoch != producer_epoch:
            self.batch_metadata.clear()
            self.producer_epoch = producer_epoch
            return True
        return False

    def add_batch_metadata(self, batch: BatchMetadata) -> None:
        self.batch_metadata.append(batch)  # the oldest of five goes (maxlen)

    def add_batch(self, producer_epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        self.maybe_update_producer_epoch(producer_epoch)
        self.add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, nxt: ProducerStateEntry) -> None:
        self.maybe_update_producer_epoch(nxt.producer_epoch)
        for batch in nxt.batch_metadata:
            self.add_batch_metadata(batch)
        self.coordinator_epoch = nxt.coordinator_epoch
        self.current_txn_first_offset = nxt.current_txn_first_offset
        self.last_timestamp = nxt.last_timestamp

    def find_duplicate_batch(self, header: RecordBatchHeader) -> BatchMetadata | None:
        """The kept batch with the same epoch and sequences as ``header`` (a producer retry), if any."""
        if header.producer_epoch != self.producer_epoch:
            return None
        first, last = header.base_sequence, header.last_sequence
        for batch in self.batch_metadata:
            if batch.last_seq == last and batch.first_seq == first:  # last_seq first: first_seq is computed
                return batch
        return None


@dataclass
class VerificationStateEntry:
    """A producer's transactional write being checked with its coordinator, before its transaction is ongoing
    on this partition (Kafka's VerificationStateEntry).

    ``lowest_sequence`` is the lowest sequence seen in ``epoch`` (a higher epoch starts over): a batch with a
    higher first sequence is refused with OUT_OF_ORDER_SEQUENCE_NUMBER while this entry lives, otherwise a
    later batch could be written while an earlier one retries a failed check, leaving the producer in an
    out-of-order loop. Removed once a transactional batch or a marker of the producer is written, or after
    ``producer.id.expiration.ms``.
    """

    timestamp_ms: int
    lowest_sequence: int
    epoch: int
    supports_epoch_bump: bool  # transaction version 2: every transaction has its own epoch

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


class CompletedTxn(NamedTuple):
    """A transaction ended by a COMMIT or ABORT marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class ProducerAppendInfo:
    """The changes one append makes to one producer's state, checked before anything is written.

    Mirrors Kafka's ProducerAppendInfo: ``append`` validates (epoch, sequence, transaction state) and
    accumulates; ``ProducerStateManager.update`` applies the result once the batches are in the log.
    """

    def __init__(self, producer_id: int, current: ProducerStateEntry, origin: str, partition: str = "",
                 verification: VerificationStateEntry | None = None) -> None:
        self.producer_id = producer_id
        self.current = current
        self.origin = origin
        self.partition = partition
        self.verification = verification
        self.updated = ProducerStateEntry(producer_id, current.producer_epoch, current.coordinator_epoch,
                                          current.last_timestamp, current.current_txn_first_offset)
        self.started_transactions: list[int] = []  # first offsets

    def _check_producer_epoch(self, producer_epoch: int, offset: int) -> None:
        if producer_epoch < self.updated.producer_epoch:
            message = (f"Epoch of producer {self.producer_id} at offset {offset} in {self.partition} is "
                       f"{producer_epoch}, which is smaller than the last seen epoch {self.updated.producer_epoch}")
            if self.origin == AppendOrigin.REPLICATION:
                log.warning(message)
            else:
                raise InvalidProducerEpochError(message)

    def _check_sequence(self, producer_epoch: int, append_first_seq: int, offset: int) -> None:
        updated, current = self.updated, self.current
        if self.verification is not None and append_first_seq > self.verification.lowest_sequence:
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition "
                f"{self.partition}: {append_first_seq} (incoming seq. number), "
                f"{self.verification.lowest_sequence} (earliest seen sequence)")
        if producer_epoch != updated.producer_epoch:
            if append_first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise OutOfOrderSequenceError(
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at offset {offset} in "
                    f"partition {self.partition}: {producer_epoch} (request epoch), {append_first_seq} (seq. "
                    f"number), {updated.producer_epoch} (current producer epoch)")
            return
        if not updated.is_empty:
            current_last_seq = updated.last_seq
        elif producer_epoch == current.producer_epoch:
            current_last_seq = current.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        # Without a current epoch (state lost to retention or DeleteRecords) any sequence is accepted.
        if not (current.producer_epoch == NO_PRODUCER_EPOCH or _in_sequence(current_last_seq, append_first_seq)):
            raise OutOfOrderSequenceError(
                f"Out of order sequence number for producer {self.producer_id} at offset {offset} in partition "
                f"{self.partition}: {append_first_seq} (incoming seq. number), {current_last_seq} (current end "
                f"sequence number)")

    def append(self, header: RecordBatchHeader, control_type: ControlRecordType | None = None,
               coordinator_epoch: int | None = None) -> CompletedTxn | None:
        """Account for one batch; a control batch needs its marker's type and coordinator epoch."""
        if header.is_control:
            if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                return None  # other control records carry no producer state
            return self._append_end_txn_marker(header, control_type, coordinator_epoch or 0)
        last_offset = header.base_offset + header.last_offset_delta
        self._check_producer_epoch(header.producer_epoch, header.base_offset)
        if self.origin == AppendOrigin.CLIENT:
            self._check_sequence(header.producer_epoch, header.base_sequence, header.base_offset)
        self.updated.add_batch(header.producer_epoch, header.last_sequence, last_offset,
                               last_offset - header.base_offset, header.max_timestamp)
        in_txn = self.updated.current_txn_first_offset is not None
        if in_txn and not header.is_transactional:
            raise InvalidTxnStateError(f"Expected transactional write from producer {self.producer_id} at offset "
                                       f"{header.base_offset} in partition {self.partition}")
        if not in_txn and header.is_transactional:
            self.updated.current_txn_first_offset = header.base_offset
            self.started_transactions.append(header.base_offset)
        return None

    def _append_end_txn_marker(self, header: RecordBatchHeader, control_type: ControlRecordType,
                               coordinator_epoch: int) -> CompletedTxn | None:
        self._check_producer_epoch(header.producer_epoch, header.base_offset)
        if self.updated.coordinator_epoch > coordinator_epoch:
            message = (f"Invalid coordinator epoch for producer {self.producer_id} at offset {header.base_offset} in "
                       f"partition {self.partition}: {coordinator_epoch} (zombie), {self.updated.coordinator_epoch} "
                       f"(current)")
            if self.origin == AppendOrigin.REPLICATION:
                log.warning(message)
            else:
                raise TransactionCoordinatorFencedError(message)
        first = self.updated.current_txn_first_offset
        completed = None if first is None else CompletedTxn(self.producer_id, first, header.base_offset,
                                                               control_type == ControlRecordType.ABORT)
        self.updated.maybe_update_producer_epoch(header.producer_epoch)
        self.updated.current_txn_first_offset = None
        self.updated.coordinator_epoch = coordinator_epoch
        self.updated.last_timestamp = header.max_timestamp
        return completed


def control_marker(buf: bytes | bytearray | memoryview, pos: int) -> tuple[ControlRecordType, int | None]:
    """(type, coordinator_epoch) of the control batch at ``pos`` (decodes its one record)."""
    _, records = decode_records(buf, pos)
    if not records:
        return ControlRecordType.UNKNOWN, None
    return parse_control_record(records[0])


class ProducerStateManager:
    """Producer ids of one partition, their snapshots, and the open transactions (module docstring)."""

    def __init__(self, log_dir: str, partition: str = "", *, producer_id_expiration_ms: int = 86_400_000,
                 new_dir: bool = False) -> None:
        """``new_dir``: ``log_dir`` was just created, so there are no snapshots to list."""
        self.log_dir = log_dir
        self.partition = partition
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.verification_states: dict[int, VerificationStateEntry] = {}
        self.ongoing_txns: dict[int, int] = {}  # first offset -> producer id, in insertion (offset) order
        self.unreplicated_txns: dict[int, tuple[int, int]] = {}  # first offset -> (producer id, last offset)
        self.last_map_offset = 0
        self.last_snap_offset = 0
        self.snapshots: dict[int, str] = {}
        if not new_dir:
            self._load_snapshot_list()

    def marker_epoch_fenced(self, producer_id: int, producer_epoch: int, transaction_version: int) -> bool:
        """A transaction-version-2 marker (WriteTxnMarkers v2, KIP-1228) of the producer's current epoch while
        its transaction is open here: a zombie coordinator's, refused with INVALID_PRODUCER_EPOCH (Kafka 4.4
        lets the same epoch through only as the retry of a completed transaction, or at the epoch's maximum).
        An older epoch is refused by the append itself, in every version."""
        if transaction_version < 2 or producer_epoch == 32767:
            return False
        entry = self.producers.get(producer_id)
        return (entry is not None and entry.producer_epoch == producer_epoch
                and entry.current_txn_first_offset is not None)

    # -- snapshots on disk -----------------------------------------------------------------------------
    def _load_snapshot_list(self) -> None:
        self.snapshots = {}
        try:
            names = os.listdir(self.log_dir)
        except (FileNotFoundError, NotADirectoryError):
            return
        for name in names:
            if name.endswith(PRODUCER_SNAPSHOT_SUFFIX):
                try:
                    offset = int(name[: -len(PRODUCER_SNAPSHOT_SUFFIX)])
                except ValueError:
                    continue
                self.snapshots[offset] = os.path.join(self.log_dir, name)

    def snapshot_path(self, offset: int) -> str:
        return os.path.join(self.log_dir, filename_prefix_from_offset(offset) + PRODUCER_SNAPSHOT_SUFFIX)

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots) if self.snapshots else None

    def oldest_snapshot_offset(self) -> int | None:
        return min(self.snapshots) if self.snapshots else None

    def take_snapshot(self, sync: bool = True) -> str | None:
        """Write the state as of ``last_map_offset`` unless a snapshot there exists; returns its path."""
        if self.last_map_offset <= self.last_snap_offset:
            return None
        path = self.snapshot_path(self.last_map_offset)
        write_snapshot(path, self.producers.values(), sync=sync)
        self.snapshots[self.last_map_offset] = path
        self.last_snap_offset = self.last_map_offset
        return path

    def _remove_snapshot(self, offset: int) -> None:
        path = self.snapshots.pop(offset, None)
        if path is not None:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def delete_snapshots_before(self, offset: int) -> None:
        for snap in [o for o in self.snapshots if o < offset]:
            self._remove_snapshot(snap)

    def remove_stray_snapshots(self, segment_base_offsets: Iterable[int]) -> None:
        """Delete snapshots without a segment of the same base offset, keeping the latest stray one only if
        it is past every segment (the snapshot a clean shutdown wrote at the log end offset)."""
        bases = set(segment_base_offsets)
        strays = sorted(o for o in self.snapshots if o not in bases)
        max_base = max(bases) if bases else None
        for offset in strays[:-1]:
            self._remove_snapshot(offset)
        if strays and max_base is not None and strays[-1] < max_base:
            self._remove_snapshot(strays[-1])

    def _load_from_snapshot(self, log_start_offset: int, now_ms: int) -> None:
        while self.snapshots:
            offset = max(self.snapshots)
            try:
                entries = read_snapshot(self.snapshots[offset])
            except (CorruptSnapshotError, OSError) as exc:
                log.warning("Failed to load producer snapshot from '%s': %s", self.snapshots[offset], exc)
                self._remove_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(now_ms, entry):
                    self.load_producer_entry(entry)
            self.last_snap_offset = self.last_map_offset = offset
            return
        self.last_snap_offset = self.last_map_offset = log_start_offset

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self._add_ongoing(entry.current_txn_first_offset, entry.producer_id)

    def _add_ongoing(self, first_offset: int, producer_id: int) -> None:
        self.ongoing_txns[first_offset] = producer_id
        if len(self.ongoing_txns) > 1 and first_offset < next(reversed(self.ongoing_txns)):
            self.ongoing_txns = dict(sorted(self.ongoing_txns.items()))

    def _is_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return entry.current_txn_first_offset is None and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> None:
        for pid in [pid for pid, e in self.producers.items() if self._is_expired(now_ms, e)]:
            del self.producers[pid]
        for pid in [pid for pid, v in self.verification_states.items()
                    if now_ms - v.timestamp_ms >= self.producer_id_expiration_ms]:
            del self.verification_states[pid]

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> None:
        """Drop snapshots outside (log_start_offset, log_end_offset] and reload from the latest left."""
        for offset in [o for o in self.snapshots if o > log_end_offset or o <= log_start_offset]:
            self._remove_snapshot(offset)
        if log_end_offset != self.last_map_offset:
            self.producers.clear()
            self.ongoing_txns.clear()
            self.unreplicated_txns.clear()
            self._load_from_snapshot(log_start_offset, now_ms)
        else:
            self.on_log_start_offset_incremented(log_start_offset)

    def reload_from_snapshots(self, log_start_offset: int, now_ms: int) -> None:
        """Forget the in-memory state and load the latest snapshot in the directory (one just written there)."""
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        self._load_snapshot_list()
        self._load_from_snapshot(log_start_offset, now_ms)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns.clear()
        self.unreplicated_txns.clear()
        for snap in list(self.snapshots):
            self._remove_snapshot(snap)
        self.last_snap_offset = 0
        self.last_map_offset = offset

    # -- appends -----------------------------------------------------------------------------------------
    def prepare_update(self, producer_id: int, origin: str) -> ProducerAppendInfo:
        current = self.producers.get(producer_id) or ProducerStateEntry(producer_id)
        return ProducerAppendInfo(producer_id, current, origin, self.partition,
                                  self.verification_states.get(producer_id))

    # -- transaction verification (KIP-890) ---------------------------------------------------------------
    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int, supports_epoch_bump: bool) -> bool:
        """The producer's transaction is open on this partition (with transaction version 2: in this epoch)."""
        entry = self.producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset is not None \
            and (not supports_epoch_bump or entry.producer_epoch == producer_epoch)

    def maybe_create_verification_state_entry(self, producer_id: int, sequence: int, epoch: int,
                                              supports_epoch_bump: bool, now_ms: int) -> VerificationStateEntry:
        entry = self.verification_states.get(producer_id)
        if entry is None:
            entry = self.verification_states[producer_id] = VerificationStateEntry(now_ms, sequence, epoch,
                                                                                   supports_epoch_bump)
        entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry

    def verification_state_entry(self, producer_id: int) -> VerificationStateEntry | None:
        return self.verification_states.get(producer_id)

    def clear_verification_state_entry(self, producer_id: int) -> None:
        self.verification_states.pop(producer_id, None)

    def after_transactional_batch(self, header: RecordBatchHeader) -> None:
        """A transactional batch or marker of the producer is being written: its check is over, unless the
        batch is the marker ending the previous transaction of a version 2 producer whose next transaction
        (already in the marker's epoch) is being checked."""
        entry = self.verification_states.get(header.producer_id)
        if entry is not None and entry.supports_epoch_bump and header.is_control \
                and header.producer_epoch == entry.epoch:
            return
        self.clear_verification_state_entry(header.producer_id)

    def continued_entry(self, header: RecordBatchHeader) -> ProducerStateEntry | None:
        """The producer's entry when ``header``, a client's non-transactional data batch, just continues it: same
        epoch, no open transaction or transaction check, and the next sequence. What ProducerAppendInfo checks
        and applies then comes down to ``continue_entry`` (an idempotent producer's every batch: acks=all
        producers are idempotent by default). Such a batch is no retry of a kept one (those end before it).
        None otherwise: the full checks decide."""
        entry = self.producers.get(header.producer_id)
        if entry is None or entry.producer_epoch != header.producer_epoch or not entry.batch_metadata \
                or entry.current_txn_first_offset is not None or header.producer_id in self.verification_states:
            return None
        last_seq = entry.batch_metadata[-1].last_seq
        first_seq = header.base_sequence
        if first_seq == last_seq + 1 or (first_seq == 0 and last_seq == INT32_MAX):
            return entry
        return None

    def continue_entry(self, entry: ProducerStateEntry, header: RecordBatchHeader, last_offset: int) -> None:
        """Apply a batch ``continued_entry`` accepted, once it is in the log (its offsets assigned, the last one
        ``last_offset``): what ``ProducerAppendInfo.append`` and ``update`` then do, and the map's end offset moves
        past it (``update_map_end_offset``)."""
        offset_delta = header.last_offset_delta
        last_seq = header.base_sequence + offset_delta  # header.last_sequence: never NO_SEQUENCE here
        if last_seq > INT32_MAX:  # sequences wrap to 0 (Kafka's incrementSequence)
            last_seq -= INT32_MAX + 1
        timestamp = header.max_timestamp
        entry.batch_metadata.append(_new_batch_metadata(BatchMetadata, (last_seq, last_offset, offset_delta, timestamp)))
        entry.last_timestamp = timestamp
        self.last_map_offset = last_offset + 1

    def update(self, info: ProducerAppendInfo) -> None:
        entry = self.producers.get(info.producer_id)
        if entry is None:
            self.producers[info.producer_id] = info.updated
        else:
            entry.update(info.updated)
        for first_offset in info.started_transactions:
            self._add_ongoing(first_offset, info.producer_id)

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def check_and_update(self, header: RecordBatchHeader, *, origin: str = AppendOrigin.CLIENT,
                         control: tuple[ControlRecordType, int | None] | None = None) -> CompletedTxn | None:
        """Validate one batch against its producer's state and apply it (a one-batch prepare + update)."""
        if not header.has_producer_id:
            return None
        info = self.prepare_update(header.producer_id, origin)
        control_type, coordinator_epoch = control if control is not None else (None, None)
        completed = info.append(header, control_type, coordinator_epoch)
        self.update(info)
        return completed

    def replay_batch(self, header: RecordBatchHeader, buf: bytes | bytearray | memoryview | None = None,
                     pos: int = 0) -> CompletedTxn | None:
        """Recovery: apply a batch already in the log (no validation); returns a completed transaction."""
        completed = None
        if header.producer_id >= 0:
            control = None
            if header.is_control and buf is not None:
                try:
                    control = control_marker(buf, pos)
                except Exception:  # noqa: BLE001 - a marker that does not decode changes no state
                    control = None
            completed = self.check_and_update(header, origin=AppendOrigin.REPLICATION, control=control)
        self.last_map_offset = header.base_offset + header.last_offset_delta + 1
        return completed

    # -- transactions ------------------------------------------------------------------------------------
    def first_undecided_offset(self) -> int | None:
        return next(iter(self.ongoing_txns)) if self.ongoing_txns else None

    def first_unstable_offset(self) -> int | None:
        ongoing, unreplicated = self.ongoing_txns, self.unreplicated_txns
        if not ongoing:  # no transaction open (every non-transactional fetch's last stable offset): no list built
            return min(unreplicated) if unreplicated else None
        first = next(iter(ongoing))
        return min(first, min(unreplicated)) if unreplicated else first

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO right after ``completed`` ends: the next open transaction of another producer, or after it."""
        for first_offset, pid in self.ongoing_txns.items():
            if pid != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        pid = self.ongoing_txns.pop(completed.first_offset, None)
        if pid is None:
            log.warning("completing transaction %s on %s which was not started", completed, self.partition)
            return
        self.unreplicated_txns[completed.first_offset] = (pid, completed.last_offset)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        if self.unreplicated_txns:  # the usual case (none): no call on every high watermark move
            self._remove_unreplicated(high_watermark)

    def _remove_unreplicated(self, offset: int) -> None:
        if not self.unreplicated_txns:  # the usual case: no list built on every high watermark move
            return
        for first in [f for f, (_, last) in self.unreplicated_txns.items() if last < offset]:
            del self.unreplicated_txns[first]

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated(log_start_offset)
        if self.last_map_offset < log_start_offset:
            self.last_map_offset = log_start_offset
        latest = self.latest_snapshot_offset()
        self.last_snap_offset = latest if latest is not None else log_start_offset


# -- snapshot format -----------------------------------------------------------------------------------


def write_snapshot(path: str, entries: Iterable[ProducerStateEntry], *, sync: bool = True) -> None:
    """Write a version-1 snapshot of ``entries`` to ``path`` (fsynced when ``sync``)."""
    import crc32c  # here, not at the top: importing it costs ~20 ms of start-up (see wire._records)

    body = bytearray()
    count = 0
    for e in entries:
        body += _ENTRY.pack(e.producer_id, e.producer_epoch, e.last_seq, e.last_data_offset, e.last_offset_delta,
                            e.last_timestamp, e.coordinator_epoch,
                            -1 if e.current_txn_first_offset is None else e.current_txn_first_offset)
        count += 1
    covered = struct.pack(">i", count) + bytes(body)
    data = struct.pack(">hI", SNAPSHOT_VERSION, crc32c.crc32c(covered)) + covered
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_snapshot(path: str) -> list[ProducerStateEntry]:
    """Entries of a snapshot file; CorruptSnapshotError on a bad version, CRC or length."""
    import crc32c  # here, not at the top: importing it costs ~20 ms of start-up (see wire._records)

    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {len(data)} bytes")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c.crc32c(data[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
                                   f"Computed crc: {computed}")
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: {count} entries in {len(data)} bytes")
    entries = []
    for i in range(count):
        (pid, epoch, seq, offset, delta, timestamp, coordinator_epoch,
         txn_first) = _ENTRY.unpack_from(data, _HEADER.size + i * _ENTRY.size)
        entry = ProducerStateEntry(pid, epoch, coordinator_epoch, timestamp, txn_first if txn_first >= 0 else None)
        if offset >= 0:
            entry.batch_metadata.append(BatchMetadata(seq, offset, delta, timestamp))
        entries.append(entry)
    return entries
