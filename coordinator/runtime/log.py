"""The narrow interface between a coordinator and a partition of its internal topic.

A coordinator never touches storage directly. For each partition of its topic (__consumer_offsets,
__transaction_state, __share_group_state) it leads, the runtime is given a ``CoordinatorLog`` (by a
``CoordinatorLogFactory``) and needs exactly two things from it:

``await log.append(records) -> last_offset``
    Append ``records`` — a list of ``(key: bytes | None, value: bytes | None)`` pairs encoded by
    the coordinator's record format (a ``None`` value is a tombstone) — as ONE record batch, atomically,
    and return the offset of the last record once the batch is committed (Kafka appends coordinator
    batches with acks=all and completes the write when the high watermark passes it). Never called
    with an empty list. The batch is a plain (non-transactional, non-control) v2 batch, without
    headers, timestamps = append time, compression as configured for the topic. The broker's
    implementation (``partition_log.ReplicaCoordinatorLog``) writes it to
    ``<topic>-<partition>`` through the replica manager as leader with acks=all, so
    followers will replicate it once replication exists.
    On failure raise ``coordinator.runtime.errors.CoordinatorLogError(error_code)`` with the Kafka error
    (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT, KAFKA_STORAGE_ERROR, ...); the
    coordinator maps it to the client error as Kafka does and drops the operation's state change.

``await log.write(records, producer_id=-1, producer_epoch=-1) -> (last_offset, wait_committed)``
    The same append in two halves (what the runtime uses, to pipeline a shard's writes as Kafka's
    CoordinatorRuntime does): returns once the leader has written the batch, with the offset of its last
    record and ``wait_committed`` — None when the batch is committed already, else a function whose
    awaitable completes once the high watermark passes the batch (or raises CoordinatorLogError). A failure
    of the leader's write raises at once and leaves no record.

``log.read_all()``
    Every record of the partition from the log start offset to the high watermark, in offset order,
    as ``(offset, key, value)`` tuples (``value is None`` for tombstones; control records are
    omitted). May be a plain or an async iterable. Called once when the shard is loaded (at start,
    and later when this broker becomes leader of the partition); replaying these records rebuilds the
    coordinator state exactly.

``await log.append(records, producer_id=pid, producer_epoch=epoch)``
    The same, as a transactional batch of that producer (TxnOffsetCommit): the records stay pending
    until a transaction marker of the producer ends the transaction.

``await log.append_marker(producer_id, producer_epoch, coordinator_epoch, commit) -> offset``
    Append a COMMIT or ABORT control batch (the transaction coordinator's marker) as the coordinator;
    ``write_marker`` is its two halves, as ``write``.

Replay entries of transactional data carry the producer id as a fourth element, and a marker is the
entry ``(offset, None, None, producer_id, commit)``.

Appends, writes and reads of one partition are only ever issued by that partition's shard task, one at a
time, so an implementation needs no locking of its own; the ``wait_committed`` of its writes are awaited
meanwhile (one at a time, in write order, by the shard's committer).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["CoordinatorLog", "CoordinatorLogFactory", "InMemoryCoordinatorLog", "InMemoryCoordinatorLogs", "LogEntry"]

# (offset, key, value) or (offset, key, value, producer_id) or (offset, None, None, producer_id, commit).
LogEntry = tuple


@runtime_checkable
class CoordinatorLog(Protocol):
    """One partition of a coordinator's topic, as seen by its shard."""

    async def append(self, records: Sequence[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                     producer_epoch: int = -1) -> int:
        """Append one batch atomically; the offset of its last record once committed."""
        ...

    async def write(self, records: Sequence[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                    producer_epoch: int = -1) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        """Write one batch as the leader: the offset of its last record, and what waits for its commit."""
        ...

    async def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                            commit: bool) -> int:
        """Append a transaction marker; its offset."""
        ...

    async def write_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                           commit: bool, *, transaction_version: int = 0
                           ) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        """Write a transaction marker as the leader: its offset, and what waits for its commit."""
        ...

    def read_all(self) -> Iterable[LogEntry] | AsyncIterable[LogEntry]:
        """All committed records in offset order, for replay at load."""
        ...


# Partition index -> that partition's log.
CoordinatorLogFactory = Callable[[int], CoordinatorLog]


class InMemoryCoordinatorLog:
    """A CoordinatorLog kept in a list: unit tests, and the broker until the data path is wired.

    ``fail_next_append`` makes the next append raise the given exception (to test failure handling).
    """

    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self.batches: list[list[tuple[bytes | None, bytes | None]]] = []
        self.fail_next_append: Exception | None = None

    @property
    def log_end_offset(self) -> int:
        return len(self.entries)

    async def append(self, records: Sequence[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                     producer_epoch: int = -1) -> int:
        if not records:
            raise ValueError("empty coordinator batch")
        if self.fail_next_append is not None:
            exc, self.fail_next_append = self.fail_next_append, None
            raise exc
        self.batches.append(list(records))
        for key, value in records:
            entry = (len(self.entries), key, value)
            self.entries.append(entry if producer_id < 0 else (*entry, producer_id))
        return len(self.entries) - 1

    async def write(self, records: Sequence[tuple[bytes | None, bytes | None]], *, producer_id: int = -1,
                    producer_epoch: int = -1) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        """``append``, committed at once (a subclass may hold commits back: tests of the pipeline)."""
        return await self.append(records, producer_id=producer_id, producer_epoch=producer_epoch), None

    async def append_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                            commit: bool) -> int:
        self.entries.append((len(self.entries), None, None, producer_id, commit))
        return len(self.entries) - 1

    async def write_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                           commit: bool, *, transaction_version: int = 0
                           ) -> tuple[int, Callable[[], Awaitable[None]] | None]:
        return await self.append_marker(producer_id, producer_epoch, coordinator_epoch, commit), None

    def read_all(self) -> Iterable[LogEntry]:
        return list(self.entries)


class InMemoryCoordinatorLogs:
    """A CoordinatorLogFactory of in-memory logs that outlive the coordinator using them (for replay tests)."""

    def __init__(self) -> None:
        self.logs: dict[int, InMemoryCoordinatorLog] = {}

    def __call__(self, partition: int) -> InMemoryCoordinatorLog:
        log = self.logs.get(partition)
        if log is None:
            log = self.logs[partition] = InMemoryCoordinatorLog()
        return log

    def all_entries(self) -> list[tuple[int, LogEntry]]:
        """(partition, entry) for every record, partition by partition."""
        return [(p, e) for p, log in sorted(self.logs.items()) for e in log.entries]
