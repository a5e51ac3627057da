"""One __share_group_state partition's state machine (Kafka's ShareCoordinatorShard).

The shard holds the persisted state of every share-partition whose key (``group:topicId:partition``)
hashes to its partition. Write operations return a ``CoordinatorResult`` with the records to append;
``replay`` applies one record and is the only way the state changes, so loading a partition is replaying
it. A write appends a ShareUpdate (a delta) until ``snapshot_update_records_per_snapshot`` updates have
been written for the key since its last snapshot; then it writes a ShareSnapshot of the merged state,
as Kafka does, so replay never has to fold an unbounded chain of deltas.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field

from coordinator.group.records import CoordinatorRecord
from coordinator.runtime.errors import ApiError
from coordinator.runtime.result import CoordinatorResult
from coordinator.share.record_state import RecordState
from coordinator.share.state_batch import StateBatch, combine, merge
from wire import ErrorCode
from wire.messages import ShareSnapshotKey, ShareSnapshotValue, ShareUpdateKey, ShareUpdateValue
from wire.messages import share_snapshot_value as _snap
from wire.messages import share_update_value as _upd

__all__ = ["READ_UNINITIALIZED", "uninitialized", "ShareCoordinatorShard", "ShareGroupOffset", "SharePartitionKey"]

log = logging.getLogger("pykbroker.coordinator.share")

# Delivery states of records a share group is done with.
_DONE = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
# (group id, topic id, partition): Kafka's SharePartitionKey.
SharePartitionKey = tuple[str, uuid.UUID, int]
# Kafka 4.4's INVALID_REQUEST messages for state requests it refuses
NULL_TOPIC_ID = "The topic id cannot be null."
NEGATIVE_PARTITION_ID = "The partition id cannot be a negative number."
NEGATIVE_LEADER_EPOCH = "The leader epoch cannot be a negative number."
NEGATIVE_STATE_EPOCH = "The state epoch cannot be a negative number."
WRITE_UNINITIALIZED = "Write operation on uninitialized share partition not allowed."
READ_UNINITIALIZED = "Read operation on uninitialized share partition not allowed."


def uninitialized(exc: ApiError) -> bool:
    """Whether ``exc`` is the refusal of a read of a share-partition without state (its leader answers the fetch
    as Kafka's does for state the group coordinator never initialized)."""
    return exc.error_code == ErrorCode.INVALID_REQUEST and exc.message == READ_UNINITIALIZED


def _check_request(key: SharePartitionKey, leader_epoch: int, state_epoch: int = 0) -> None:
    """Kafka 4.4's checks of a Read/WriteShareGroupState partition, in its order: INVALID_REQUEST."""
    for bad, message in ((key[1] == uuid.UUID(int=0), NULL_TOPIC_ID), (key[2] < 0, NEGATIVE_PARTITION_ID),
                         (leader_epoch < 0, NEGATIVE_LEADER_EPOCH), (state_epoch < 0, NEGATIVE_STATE_EPOCH)):
        if bad:
            raise ApiError(ErrorCode.INVALID_REQUEST, message)


@dataclass
class ShareGroupOffset:
    """The persisted state of one share-partition (Kafka's ShareGroupOffset)."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: list[StateBatch] = field(default_factory=list)
    delivery_complete_count: int = -1
    create_timestamp: int = -1
    write_timestamp: int = -1

    def lag(self, high_watermark: int) -> int:
        """Records from the start offset to ``high_watermark`` not yet acknowledged or archived (the lag
        DescribeShareGroupOffsets v1 answers); a summary from another coordinator counts its completed ones."""
        if self.state_batches:
            done = sum(min(b.last_offset, high_watermark - 1) - b.first_offset + 1 for b in self.state_batches
                       if b.delivery_state in _DONE and b.first_offset < high_watermark)
        else:
            done = max(self.delivery_complete_count, 0)
        return max(0, high_watermark - self.start_offset - done)


def _batches(values) -> list[StateBatch]:
    return [StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in values]


class ShareCoordinatorShard:
    def __init__(self, partition: int, snapshot_every: int, now_ms) -> None:
        self.partition = partition
        self.snapshot_every = snapshot_every
        self._now_ms = now_ms
        self.state: dict[SharePartitionKey, ShareGroupOffset] = {}
        self._updates_since_snapshot: dict[SharePartitionKey, int] = {}

    # -- lifecycle (the runtime's Shard protocol) ------------------------------------------------------
    def on_loaded(self) -> None:
        log.debug("__share_group_state-%d loaded: %d share-partitions", self.partition, len(self.state))

    def on_unloaded(self) -> None:
        pass

    # -- replay ----------------------------------------------------------------------------------------
    def replay(self, offset: int, record: CoordinatorRecord) -> None:
        key = (record.key.group_id, record.key.topic_id, record.key.partition)
        value = record.value
        if isinstance(record.key, ShareSnapshotKey):
            if value is None:
                self.state.pop(key, None)
                self._updates_since_snapshot.pop(key, None)
                return
            self.state[key] = ShareGroupOffset(
                value.snapshot_epoch, value.state_epoch, value.leader_epoch, value.start_offset,
                combine(_batches(value.state_batches)), value.delivery_complete_count, value.create_timestamp,
                value.write_timestamp)
            self._updates_since_snapshot[key] = 0
        elif isinstance(record.key, ShareUpdateKey):
            current = self.state.get(key)
            if value is None or current is None:
                return  # an update with no snapshot before it (deleted state): nothing to apply it to
            start = value.start_offset if value.start_offset >= 0 else current.start_offset
            current.start_offset = start
            current.leader_epoch = value.leader_epoch
            current.state_batches = merge(current.state_batches, _batches(value.state_batches), start)
            current.delivery_complete_count = value.delivery_complete_count
            self._updates_since_snapshot[key] = self._updates_since_snapshot.get(key, 0) + 1

    # -- operations ------------------------------------------------------------------------------------
    def read_state(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        return self.state.get(key)

    def read_state_with_leader_epoch(self, key: SharePartitionKey, leader_epoch: int) -> CoordinatorResult:
        """ReadShareGroupState from a share-partition leader at ``leader_epoch`` (Kafka's
        readStateAndMaybeUpdateLeaderEpoch): a lower epoch than the one stored is FENCED_LEADER_EPOCH; a higher
        one is recorded (a ShareUpdate with no batches), so the previous leader's later writes are fenced.
        The response is the state as it was read. A negative leader epoch or a share-partition without state is
        INVALID_REQUEST, as Kafka 4.4 refuses them (a leader initializes first: the group coordinator does)."""
        _check_request(key, leader_epoch)
        current = self.state.get(key)
        if current is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, READ_UNINITIALIZED)
        if leader_epoch < current.leader_epoch:
            raise ApiError(ErrorCode.FENCED_LEADER_EPOCH, f"leader epoch {leader_epoch} < {current.leader_epoch}")
        if leader_epoch == current.leader_epoch:
            return CoordinatorResult(response=current)
        value = ShareUpdateValue(snapshot_epoch=current.snapshot_epoch, leader_epoch=leader_epoch, start_offset=-1,
                                 delivery_complete_count=current.delivery_complete_count, state_batches=[])
        return CoordinatorResult([CoordinatorRecord(
            ShareUpdateKey(group_id=key[0], topic_id=key[1], partition=key[2]), value)], response=current)

    def summary(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        """ReadShareGroupStateSummary: the state without its batches, with the delivery complete count its last
        write carried (Kafka 4.4 answers the stored count: -1 as initialized without a start offset, 0 with one,
        then what the share-partition leader counted)."""
        current = self.state.get(key)
        if current is None:
            return None
        return ShareGroupOffset(current.snapshot_epoch, current.state_epoch, current.leader_epoch,
                                current.start_offset, [], current.delivery_complete_count, current.create_timestamp,
                                current.write_timestamp)

    def initialize_state(self, key: SharePartitionKey, state_epoch: int, start_offset: int) -> CoordinatorResult:
        """A fresh snapshot for ``key`` (InitializeShareGroupState), as Kafka 4.4's share coordinator writes it:
        the group's state epoch (the group epoch), leader epoch 0, the start offset, no batches, a delivery
        complete count of -1 without a start offset and 0 with one. State that exists is replaced at the same or
        a higher state epoch (AlterShareGroupOffsets of a group whose epoch did not move writes the same epoch);
        a lower one is FENCED_STATE_EPOCH."""
        now = self._now_ms()
        current = self.state.get(key)
        if current is not None and state_epoch < current.state_epoch:
            raise ApiError(ErrorCode.FENCED_STATE_EPOCH,
                           f"state epoch {state_epoch} is below the current {current.state_epoch}")
        snapshot_epoch = current.snapshot_epoch + 1 if current is not None else 0
        return CoordinatorResult([self._snapshot_record(key, ShareGroupOffset(
            snapshot_epoch, state_epoch, 0, start_offset, [], -1 if start_offset == -1 else 0, now, now))])

    def write_state(self, key: SharePartitionKey, state_epoch: int, leader_epoch: int, start_offset: int,
                    batches: list[StateBatch], delivery_complete_count: int = -1) -> CoordinatorResult:
        """WriteShareGroupState: a ShareUpdate, or a ShareSnapshot when one is due. Kafka 4.4's refusals first
        (INVALID_REQUEST: negative epochs, a share-partition without state), then its fencing."""
        _check_request(key, leader_epoch, state_epoch)
        current = self.state.get(key)
        if current is None:
            raise ApiError(ErrorCode.INVALID_REQUEST, WRITE_UNINITIALIZED)
        if leader_epoch < current.leader_epoch:
            raise ApiError(ErrorCode.FENCED_LEADER_EPOCH, f"leader epoch {leader_epoch} < {current.leader_epoch}")
        if state_epoch < current.state_epoch:
            raise ApiError(ErrorCode.FENCED_STATE_EPOCH, f"state epoch {state_epoch} < {current.state_epoch}")
        now = self._now_ms()
        if self._updates_since_snapshot.get(key, 0) >= self.snapshot_every:
            base = current
            start = start_offset if start_offset >= 0 else base.start_offset
            merged = merge(base.state_batches, batches, start)
            return CoordinatorResult([self._snapshot_record(key, ShareGroupOffset(
                base.snapshot_epoch + 1, max(state_epoch, base.state_epoch), leader_epoch, start, merged,
                delivery_complete_count, base.create_timestamp, now))])
        value = ShareUpdateValue(
            snapshot_epoch=current.snapshot_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
            delivery_complete_count=delivery_complete_count,
            state_batches=[_upd.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                           delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                           for b in batches])
        return CoordinatorResult([CoordinatorRecord(
            ShareUpdateKey(group_id=key[0], topic_id=key[1], partition=key[2]), value)])

    def delete_state(self, key: SharePartitionKey) -> CoordinatorResult:
        """DeleteShareGroupState: a tombstone of the snapshot key, the one record Kafka 4.4 writes (updates
        replayed after it find no state to apply to)."""
        if key not in self.state:
            return CoordinatorResult()
        return CoordinatorResult([
            CoordinatorRecord(ShareSnapshotKey(group_id=key[0], topic_id=key[1], partition=key[2]), None)])

    @staticmethod
    def _snapshot_record(key: SharePartitionKey, state: ShareGroupOffset) -> CoordinatorRecord:
        value = ShareSnapshotValue(
            snapshot_epoch=state.snapshot_epoch, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
            start_offset=state.start_offset, delivery_complete_count=state.delivery_complete_count,
            create_timestamp=state.create_timestamp, write_timestamp=state.write_timestamp,
            state_batches=[_snap.StateBatch(first_offset=b.first_offset, last_offset=b.last_offset,
                                            delivery_state=b.delivery_state, delivery_count=b.delivery_count)
                           for b in state.state_batches])
        return CoordinatorRecord(ShareSnapshotKey(group_id=key[0], topic_id=key[1], partition=key[2]), value)

    def snapshot(self) -> dict:
        """The whole state (tests: replay into a fresh shard must give the same)."""
        return {k: (v.start_offset, v.state_epoch, tuple(v.state_batches)) for k, v in self.state.items()}
