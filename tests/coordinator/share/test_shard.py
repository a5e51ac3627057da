"""The share coordinator's shard: records written, replay gives the same state, snapshots, fencing."""

import uuid

import pytest

from coordinator.runtime.errors import ApiError
from coordinator.share.records import decode_record
from coordinator.share.shard import ShareCoordinatorShard
from coordinator.share.state_batch import StateBatch as B
from wire import ErrorCode
from wire.messages import ShareSnapshotKey, ShareUpdateKey

KEY = ("g", uuid.UUID(int=7), 0)


def apply(shard, result, log):
    for record in result.records:
        key, value = record.encode()
        decoded = decode_record(key, value)  # what replay at load sees
        log.append((key, value))
        shard.replay(len(log) - 1, decoded)


def replayed(log, snapshot_every=500):
    fresh = ShareCoordinatorShard(0, snapshot_every, lambda: 1)
    for i, (k, v) in enumerate(log):
        fresh.replay(i, decode_record(k, v))
    return fresh


def test_initialize_then_updates_then_replay():
    shard, log = ShareCoordinatorShard(0, 500, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 0, 10), log)
    assert isinstance(decode_record(*log[0]).key, ShareSnapshotKey)
    apply(shard, shard.write_state(KEY, 0, 0, 10, [B(10, 14, 2, 1), B(15, 15, 0, 2)]), log)
    apply(shard, shard.write_state(KEY, 0, 0, 15, [B(15, 15, 4, 3)]), log)
    assert isinstance(decode_record(*log[1]).key, ShareUpdateKey)
    state = shard.read_state(KEY)
    assert state.start_offset == 15 and state.state_batches == [B(15, 15, 4, 3)]
    assert replayed(log).snapshot() == shard.snapshot()


def test_a_snapshot_replaces_the_updates_when_due():
    shard, log = ShareCoordinatorShard(0, 2, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 0, 0), log)
    for i in range(4):
        apply(shard, shard.write_state(KEY, 0, 0, 0, [B(i, i, 2, 1)]), log)
    types = [type(decode_record(k, v).key).__name__ for k, v in log]
    assert types == ["ShareSnapshotKey", "ShareUpdateKey", "ShareUpdateKey", "ShareSnapshotKey", "ShareUpdateKey"]
    assert shard.read_state(KEY).state_batches == [B(0, 3, 2, 1)]
    assert replayed(log, 2).snapshot() == shard.snapshot()
    assert replayed(log[3:], 2).snapshot() == shard.snapshot()  # the snapshot alone carries the state


def test_an_older_state_epoch_is_fenced_and_delete_writes_a_snapshot_tombstone():
    """Kafka 4.4 deletes a share-partition's state with one record: the snapshot key's tombstone."""
    shard, log = ShareCoordinatorShard(0, 500, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 3, 0), log)
    apply(shard, shard.write_state(KEY, 3, 0, 0, [B(0, 1, 2, 1)]), log)
    with pytest.raises(ApiError) as err:
        shard.write_state(KEY, 2, 0, 0, [])
    assert err.value.error_code == ErrorCode.FENCED_STATE_EPOCH
    apply(shard, shard.delete_state(KEY), log)
    assert shard.read_state(KEY) is None
    assert replayed(log).snapshot() == {}
    assert isinstance(decode_record(*log[-1]).key, ShareSnapshotKey) and log[-1][1] is None
    assert isinstance(decode_record(*log[-2]).key, ShareUpdateKey) and log[-2][1] is not None
    apply(shard, shard.initialize_state(KEY, 4, -1), log)  # initialized again after the deletion
    assert replayed(log).snapshot() == shard.snapshot() == {KEY: (-1, 4, ())}


def test_initialized_state_is_kafkas_snapshot():
    """InitializeShareGroupState as Kafka 4.4's share coordinator writes it (its records read back from a 4.4
    broker): the state epoch asked for (the group epoch), leader epoch 0, the delivery complete count -1 without a
    start offset and 0 with one; the snapshot epoch counts up; the same state epoch again replaces the state (an
    offsets alter of a group whose epoch did not move), a lower one is fenced."""
    shard, log = ShareCoordinatorShard(0, 500, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 2, -1), log)
    first = decode_record(*log[-1]).value
    assert (first.snapshot_epoch, first.state_epoch, first.leader_epoch, first.start_offset,
            first.delivery_complete_count, first.state_batches) == (0, 2, 0, -1, -1, [])
    summary = shard.summary(KEY)
    assert (summary.state_epoch, summary.leader_epoch, summary.start_offset, summary.delivery_complete_count) == \
        (2, 0, -1, -1)
    assert shard.read_state_with_leader_epoch(KEY, 0).records == []  # leader epoch 0 is the one stored
    for offset in (2, 3):
        apply(shard, shard.initialize_state(KEY, 4, offset), log)
    altered = decode_record(*log[-1]).value
    assert (altered.snapshot_epoch, altered.state_epoch, altered.leader_epoch, altered.start_offset,
            altered.delivery_complete_count) == (2, 4, 0, 3, 0)
    with pytest.raises(ApiError) as err:
        shard.initialize_state(KEY, 3, 0)
    assert err.value.error_code == ErrorCode.FENCED_STATE_EPOCH


def test_a_new_leader_epoch_read_is_recorded_and_fences_the_old_leader():
    shard, log = ShareCoordinatorShard(0, 500, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 0, 0), log)
    apply(shard, shard.write_state(KEY, 0, 4, 0, [B(0, 2, 2, 1)]), log)
    result = shard.read_state_with_leader_epoch(KEY, 5)  # the partition's new leader loads the state
    assert result.response.state_batches == [B(0, 2, 2, 1)]
    assert [type(r.key).__name__ for r in result.records] == ["ShareUpdateKey"]
    apply(shard, result, log)
    assert shard.read_state(KEY).leader_epoch == 5 and replayed(log).snapshot() == shard.snapshot()
    with pytest.raises(ApiError) as err:  # the old leader's late write
        shard.write_state(KEY, 0, 4, 3, [B(3, 3, 2, 1)])
    assert err.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    with pytest.raises(ApiError) as err:
        shard.read_state_with_leader_epoch(KEY, 4)
    assert err.value.error_code == ErrorCode.FENCED_LEADER_EPOCH
    assert shard.read_state_with_leader_epoch(KEY, 5).records == []  # same epoch: nothing to write


def test_initialize_over_existing_state_needs_the_same_or_a_higher_state_epoch():
    shard, log = ShareCoordinatorShard(0, 500, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 2, -1), log)
    apply(shard, shard.write_state(KEY, 2, 0, 7, [B(7, 8, 2, 1)]), log)
    with pytest.raises(ApiError) as err:  # an initialization from before the group moved on
        shard.initialize_state(KEY, 1, -1)
    assert err.value.error_code == ErrorCode.FENCED_STATE_EPOCH
    apply(shard, shard.initialize_state(KEY, 2, 3), log)  # an offsets reset at the same group epoch
    state = shard.read_state(KEY)
    assert (state.state_epoch, state.start_offset, state.state_batches) == (2, 3, [])
    assert replayed(log).snapshot() == shard.snapshot()


def test_the_summary_answers_the_delivery_complete_count_written():
    """Kafka 4.4's summary answers the count the share-partition leader's last write carried (a v0 write: -1)."""
    shard, log = ShareCoordinatorShard(0, 500, lambda: 1000), []
    apply(shard, shard.initialize_state(KEY, 0, 0), log)
    batches = [B(0, 1, 2, 1), B(3, 4, 4, 1), B(5, 5, 0, 1), B(6, 6, 2, 1)]
    apply(shard, shard.write_state(KEY, 0, 0, 2, batches, 4), log)
    summary = shard.summary(KEY)
    assert (summary.start_offset, summary.delivery_complete_count, summary.state_batches) == (2, 4, [])
    assert replayed(log).summary(KEY).delivery_complete_count == 4
    apply(shard, shard.write_state(KEY, 0, 0, 7, []), log)
    assert shard.summary(KEY).delivery_complete_count == -1
    assert shard.summary(("other", KEY[1], 0)) is None


def test_reads_and_writes_kafka_4_4_refuses():
    """Kafka 4.4's share coordinator: INVALID_REQUEST with its messages for a read or write of a share-partition
    without state, negative epochs and partitions, and a zero topic id; nothing is written for them."""
    shard = ShareCoordinatorShard(0, 500, lambda: 1000)
    refusals = [
        (lambda: shard.read_state_with_leader_epoch(KEY, 0), "Read operation on uninitialized share partition not allowed."),
        (lambda: shard.write_state(KEY, 0, 0, 0, [B(0, 0, 2, 1)]),
         "Write operation on uninitialized share partition not allowed."),
        (lambda: shard.read_state_with_leader_epoch(KEY, -1), "The leader epoch cannot be a negative number."),
        (lambda: shard.write_state(KEY, 0, -1, 0, []), "The leader epoch cannot be a negative number."),
        (lambda: shard.write_state(KEY, -1, 0, 0, []), "The state epoch cannot be a negative number."),
        (lambda: shard.write_state(("g", KEY[1], -1), 0, 0, 0, []), "The partition id cannot be a negative number."),
        (lambda: shard.read_state_with_leader_epoch(("g", uuid.UUID(int=0), 0), 0), "The topic id cannot be null."),
    ]
    for operation, message in refusals:
        with pytest.raises(ApiError) as err:
            operation()
        assert (err.value.error_code, err.value.message) == (ErrorCode.INVALID_REQUEST, message)
    assert shard.state == {}
