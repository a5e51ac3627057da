"""A transactional id's state, its legal transitions, and its records in __transaction_state.

Kafka's TransactionMetadata in miniature. The coordinator changes a transaction in two steps: it
computes the next state (``TxnTransit``), appends it to __transaction_state, and only once the append
succeeded applies it (``TransactionMetadata.complete_transition``). While an append is in flight the
transaction has a ``pending_state`` and every other request on it gets CONCURRENT_TRANSACTIONS.

Records are byte-compatible with Apache Kafka 4.4 (``kafka-dump-log --transaction-log-decoder``):

- key   = int16 0 + TransactionLogKey v0 (the transactional id)
- value = int16 1 + TransactionLogValue v1 (with the KIP-890 tagged fields), or null (tombstone) once
  the id expired; v0 values (older brokers) are read too
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum

from coordinator.runtime.errors import UnknownRecordTypeError
from coordinator.runtime.records import decode_coordinator_record
from wire import DecodeError, Writer
from wire.messages import TransactionLogKey, TransactionLogValue
from wire.messages.transaction_log_value import PartitionsSchema

__all__ = ["TxnState", "TxnTransit", "TransactionLogRecord", "TransactionMetadata", "decode_record",
           "decode_txn_record", "encode_txn_record", "TRANSACTION_STATE_TOPIC_NAME"]

TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
# Written as Kafka 4.4 writes with transaction.version 2 finalized: v1 (flexible, with tagged fields).
VALUE_VERSION = 1
MAX_PRODUCER_EPOCH = 32767  # Short.MAX_VALUE; an epoch reaching MAX - 1 forces a new producer id

TopicPartition = tuple[str, int]


class TxnState(IntEnum):
    """Kafka's TransactionState, with the ids stored in TransactionLogValue.transaction_status."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name DescribeTransactions and ListTransactions report (Kafka's stateName)."""
        return _DISPLAY_NAMES[self]

    @classmethod
    def from_display_name(cls, name: str) -> TxnState | None:
        return _BY_DISPLAY_NAME.get(name)


_DISPLAY_NAMES = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_DISPLAY_NAME = {v: k for k, v in _DISPLAY_NAMES.items()}

S = TxnState
# Kafka's TransactionState.validPreviousStates.
VALID_PREVIOUS_STATES: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
    S.DEAD: frozenset({S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT}),
    S.PREPARE_EPOCH_FENCE: frozenset({S.ONGOING}),
}
COMPLETED_STATES = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The state a transaction moves to, as written to __transaction_state."""

    producer_id: int
    prev_producer_id: int  # the producer id before this transition (differs after a rotation)
    next_producer_id: int  # TV2: the id the producer moves to once an exhausted epoch completes
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    start_timestamp_ms: int
    update_timestamp_ms: int
    client_transaction_version: int = 0


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka never hands out MAX_PRODUCER_EPOCH, so the coordinator can always fence a producer."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id's state on its coordinator (event-loop only).

    ``client_transaction_version`` is the transaction version (KIP-890) of the client's last request
    that changed the state: from 2 on every EndTxn bumps the epoch.
    """

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_timestamp_ms: int = -1
    update_timestamp_ms: int = -1
    prev_producer_id: int = -1
    next_producer_id: int = -1
    last_producer_epoch: int = -1
    client_transaction_version: int = 0
    pending_state: TxnState | None = None

    @property
    def supports_epoch_bump(self) -> bool:
        return self.client_transaction_version >= 2

    # -- transitions --------------------------------------------------------------------------------
    def _transit(self, state: TxnState, *, producer_id: int | None = None, next_producer_id: int | None = None,
                 producer_epoch: int | None = None, last_producer_epoch: int | None = None,
                 timeout_ms: int | None = None, partitions: Iterable[TopicPartition] | None = None,
                 start_ms: int | None = None, client_version: int | None = None, now_ms: int) -> TxnTransit:
        if self.pending_state is not None:
            raise IllegalTransition(f"transactional id {self.transactional_id} is already moving to "
                                    f"{self.pending_state.display_name}")
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise IllegalTransition(f"transactional id {self.transactional_id}: {self.state.display_name} -> "
                                    f"{state.display_name} is not a legal transition")
        self.pending_state = state
        return TxnTransit(
            producer_id=self.producer_id if producer_id is None else producer_id,
            prev_producer_id=self.producer_id,
            next_producer_id=self.next_producer_id if next_producer_id is None else next_producer_id,
            producer_epoch=self.producer_epoch if producer_epoch is None else producer_epoch,
            last_producer_epoch=self.last_producer_epoch if last_producer_epoch is None else last_producer_epoch,
            timeout_ms=self.timeout_ms if timeout_ms is None else timeout_ms,
            state=state,
            partitions=frozenset(self.partitions if partitions is None else partitions),
            start_timestamp_ms=self.start_timestamp_ms if start_ms is None else start_ms,
            update_timestamp_ms=now_ms,
            client_transaction_version=(self.client_transaction_version if client_version is None
                                        else client_version))

    def prepare_producer_id_rotation(self, producer_id: int, timeout_ms: int, now_ms: int, *,
                                     record_last_epoch: bool) -> TxnTransit:
        """A fresh producer id at epoch 0 (the epoch is exhausted)."""
        return self._transit(S.EMPTY, producer_id=producer_id, producer_epoch=0,
                             last_producer_epoch=self.producer_epoch if record_last_epoch else -1,
                             timeout_ms=timeout_ms, partitions=(), start_ms=-1, now_ms=now_ms)

    def prepare_increment_epoch(self, timeout_ms: int, now_ms: int, expected_epoch: int | None = None) -> TxnTransit:
        """InitProducerId on a completed transaction: same producer id, next epoch (Kafka's rules).

        With ``expected_epoch`` (KIP-360 recovery): the current epoch (or none yet) bumps and remembers it;
        the last epoch is a retry of a bump that succeeded and keeps the epoch; anything else is fenced
        (raises ValueError, the coordinator answers PRODUCER_FENCED).
        """
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, -1
        elif self.producer_epoch == -1 or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        else:
            raise ValueError(f"expected epoch {expected_epoch} is neither the current epoch {self.producer_epoch} "
                             f"nor the last one {self.last_producer_epoch}")
        return self._transit(S.EMPTY, producer_epoch=epoch, last_producer_epoch=last, timeout_ms=timeout_ms,
                             partitions=(), start_ms=-1, now_ms=now_ms)

    def prepare_add_partitions(self, partitions: Iterable[TopicPartition], now_ms: int,
                               client_version: int = 0) -> TxnTransit:
        start = now_ms if self.state in COMPLETED_STATES else self.start_timestamp_ms
        new = set(partitions) if self.state in COMPLETED_STATES else self.partitions | set(partitions)
        return self._transit(S.ONGOING, partitions=new, start_ms=start, client_version=client_version,
                             now_ms=now_ms)

    def prepare_end(self, commit: bool, now_ms: int, client_version: int = 0, next_producer_id: int = -1) -> TxnTransit:
        """PrepareCommit/PrepareAbort; from transaction version 2 the epoch is bumped with it (KIP-890).

        An abort of a transaction that added nothing (TV2, from Empty or Complete*) starts now.
        """
        if client_version >= 2:
            epoch, last = self.producer_epoch + 1, self.producer_epoch
        else:
            epoch, last = self.producer_epoch, self.last_producer_epoch
        start = now_ms if self.state in COMPLETED_STATES else self.start_timestamp_ms
        return self._transit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT, producer_epoch=epoch,
                             last_producer_epoch=last, next_producer_id=next_producer_id, start_ms=start,
                             client_version=client_version, now_ms=now_ms)

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """CompleteCommit/CompleteAbort, moving to the next producer id if the epoch overflowed (TV2)."""
        state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        if self.supports_epoch_bump and self.next_producer_id >= 0:
            return self._transit(state, producer_id=self.next_producer_id, next_producer_id=-1, producer_epoch=0,
                                 partitions=(), now_ms=now_ms)
        return self._transit(state, next_producer_id=-1, partitions=(), now_ms=now_ms)

    def prepare_dead(self, now_ms: int) -> TxnTransit:
        return self._transit(S.DEAD, partitions=(), now_ms=now_ms)

    def complete_transition(self, transit: TxnTransit) -> None:
        """Apply ``transit`` once its record is in the log."""
        self.producer_id = transit.producer_id
        self.prev_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.timeout_ms = transit.timeout_ms
        self.state = transit.state
        self.partitions = set(transit.partitions)
        self.start_timestamp_ms = transit.start_timestamp_ms
        self.update_timestamp_ms = transit.update_timestamp_ms
        self.client_transaction_version = transit.client_transaction_version
        self.pending_state = None

    def abort_transition(self) -> None:
        """The append failed: nothing changes."""
        self.pending_state = None

    @classmethod
    def from_transit(cls, transactional_id: str, transit: TxnTransit) -> TransactionMetadata:
        metadata = cls(transactional_id, transit.producer_id, transit.producer_epoch, transit.timeout_ms)
        metadata.complete_transition(transit)
        return metadata


class IllegalTransition(RuntimeError):
    """A transition the state machine forbids (a coordinator bug, never a client error)."""


# -- records ---------------------------------------------------------------------------------------------

def encode_txn_record(transactional_id: str, transit: TxnTransit | None) -> tuple[bytes, bytes | None]:
    """The __transaction_state record of ``transit`` (None: the tombstone of an expired id)."""
    kw = Writer()
    kw.int16(0)
    TransactionLogKey(transactional_id=transactional_id).encode_into(kw, 0)
    if transit is None:
        return kw.getvalue(), None
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(transit.partitions):
        by_topic.setdefault(topic, []).append(partition)
    value = TransactionLogValue(
        producer_id=transit.producer_id, producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.timeout_ms, transaction_status=int(transit.state),
        transaction_partitions=[PartitionsSchema(topic=t, partition_ids=ps) for t, ps in by_topic.items()],
        transaction_last_update_timestamp_ms=transit.update_timestamp_ms,
        transaction_start_timestamp_ms=transit.start_timestamp_ms,
        previous_producer_id=transit.prev_producer_id, next_producer_id=transit.next_producer_id,
        next_producer_epoch=-1, client_transaction_version=transit.client_transaction_version)
    vw = Writer()
    vw.int16(VALUE_VERSION)
    value.encode_into(vw, VALUE_VERSION)
    return kw.getvalue(), vw.getvalue()


# The key's int16 prefix is its version (0), which the shared codec reads as the record type.
_CLASSES = {0: (TransactionLogKey, TransactionLogValue)}


def decode_txn_record(key: bytes | None, value: bytes | None) -> tuple[str, TxnTransit | None]:
    """(transactional id, state or None for a tombstone) of a __transaction_state record."""
    try:
        record = decode_coordinator_record(key, value, _CLASSES, TRANSACTION_STATE_TOPIC_NAME)
    except UnknownRecordTypeError as exc:
        raise DecodeError(f"unknown __transaction_state key version {exc.record_type}") from exc
    transactional_id = record.key.transactional_id
    v = record.value
    if v is None:
        return transactional_id, None
    partitions = frozenset((p.topic, i) for p in (v.transaction_partitions or []) for i in p.partition_ids)
    def tagged(name: str, default: int) -> int:
        value = getattr(v, name, None)
        return default if value is None else value

    return transactional_id, TxnTransit(
        producer_id=v.producer_id, prev_producer_id=tagged("previous_producer_id", -1),
        next_producer_id=tagged("next_producer_id", -1), producer_epoch=v.producer_epoch, last_producer_epoch=-1,
        timeout_ms=v.transaction_timeout_ms, state=TxnState(v.transaction_status), partitions=partitions,
        start_timestamp_ms=v.transaction_start_timestamp_ms,
        update_timestamp_ms=v.transaction_last_update_timestamp_ms,
        client_transaction_version=tagged("client_transaction_version", 0))


@dataclass(frozen=True, slots=True)
class TransactionLogRecord:
    """One __transaction_state record as the coordinator runtime appends and replays it.

    ``transit`` None is the tombstone of an expired id. A record replayed after its own append keeps
    what the bytes do not hold (the last producer epoch); one decoded at load has it as -1.
    """

    transactional_id: str
    transit: TxnTransit | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_txn_record(self.transactional_id, self.transit)


def decode_record(key: bytes | None, value: bytes | None) -> TransactionLogRecord:
    """The runtime's decoder for __transaction_state; raises DecodeError."""
    try:
        return TransactionLogRecord(*decode_txn_record(key, value))
    except ValueError as exc:  # e.g. an unknown transaction status
        raise DecodeError(str(exc)) from exc
