"""Partition over a real log: min.insync.replicas (Kafka's effectiveMinIsr), the high watermark over the
ISR, ISR expansion and shrinking from followers' fetch positions, acks=all answers, follower appends."""

from __future__ import annotations

import uuid

import pytest

from replication.partition import Partition, PartitionError
from storage import Log, LogConfig
from wire import ErrorCode, Record, build_batch, build_control_batch, build_simple_batch

LAG_MS = 10_000


def batch(count: int = 1) -> bytes:
    return build_simple_batch([b"v"] * count, timestamp=1_700_000_000_000)


def new_partition(tmp_path, node_id: int = 1, name: str = "t-0") -> tuple[Partition, list[int]]:
    """A partition on broker ``node_id`` and the list its high-watermark listener appends to."""
    moves: list[int] = []
    log = Log.open(str(tmp_path / f"broker{node_id}" / name), LogConfig())
    p = Partition("t", 0, uuid.UUID(int=3), log, node_id,
                  on_high_watermark_changed=lambda part: moves.append(part.log.high_watermark))
    return p, moves


def leader(tmp_path, replicas: list[int], isr: list[int]) -> Partition:
    p, _ = new_partition(tmp_path)
    p.make_leader(0, replicas, isr, now_ms=0)
    return p


def test_isr_smaller_than_min_insync_replicas_refuses_acks_all(tmp_path):
    p = leader(tmp_path, [1, 2, 3], [1])
    with pytest.raises(PartitionError) as exc:
        p.append_records_to_leader(batch(), -1, 2)
    assert exc.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert "min.isr requirement of 2" in exc.value.message
    p.append_records_to_leader(batch(), 1, 2)  # acks=1 does not need the ISR


def test_min_insync_replicas_above_the_replication_factor_counts_as_the_replication_factor(tmp_path):
    p = leader(tmp_path / "a", [1], [1])
    p.append_records_to_leader(batch(), -1, 2)
    p = leader(tmp_path / "b", [1, 2], [1])
    with pytest.raises(PartitionError) as exc:
        p.append_records_to_leader(batch(), -1, 3)
    assert "min.isr requirement of 2" in exc.value.message


def test_alone_in_the_isr_the_high_watermark_follows_each_append(tmp_path):
    p, moves = new_partition(tmp_path)
    p.make_leader(0, [1], [1])
    p.append_records_to_leader(batch(3), -1, 1)
    p.append_records_to_leader(batch(2), 1, 1)
    assert p.log.high_watermark == 5 and moves == [3, 5]
    assert p.acks_all_error(5, 1) == ErrorCode.NONE


def test_the_high_watermark_waits_for_every_in_sync_follower_and_never_moves_back(tmp_path):
    p, moves = new_partition(tmp_path)
    p.make_leader(0, [1, 2, 3], [1, 2, 3], now_ms=0)
    p.append_records_to_leader(batch(10), -1, 2)
    assert p.log.high_watermark == 0 and p.acks_all_error(10, 2) is None  # followers' positions unknown
    p.update_follower_fetch_state(2, 10, 0, now_ms=100, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 0  # broker 3 is in the ISR and has not fetched
    p.update_follower_fetch_state(3, 4, 0, now_ms=100, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 4 and p.acks_all_error(10, 2) is None
    p.update_follower_fetch_state(3, 10, 0, now_ms=200, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 10 and p.acks_all_error(10, 2) == ErrorCode.NONE
    p.update_follower_fetch_state(3, 2, 0, now_ms=300, lag_time_max_ms=LAG_MS)  # a follower that truncated
    assert p.log.high_watermark == 10 and moves == [4, 10]


def test_a_follower_that_reaches_the_high_watermark_is_proposed_for_the_isr_and_counted_once_committed(tmp_path):
    p = leader(tmp_path, [1, 2], [1])
    p.append_records_to_leader(batch(5), -1, 1)
    assert p.log.high_watermark == 5
    assert p.update_follower_fetch_state(2, 3, 0, now_ms=10, lag_time_max_ms=LAG_MS) is None  # behind
    proposed = p.update_follower_fetch_state(2, 5, 0, now_ms=20, lag_time_max_ms=LAG_MS)
    assert proposed == [1, 2]
    p.pending_isr = proposed
    assert p.maximal_isr == [1, 2] and p.isr == [1]
    p.commit_isr(proposed, partition_epoch=1, now_ms=30)
    assert p.isr == [1, 2] and p.partition_epoch == 1 and p.pending_isr is None
    p.append_records_to_leader(batch(), -1, 2)
    assert p.acks_all_error(6, 2) is None  # now broker 2 must have it too
    p.update_follower_fetch_state(2, 6, 0, now_ms=40, lag_time_max_ms=LAG_MS)
    assert p.acks_all_error(6, 2) == ErrorCode.NONE


def test_a_follower_lagging_past_the_lag_time_is_out_of_sync(tmp_path):
    p = leader(tmp_path, [1, 2, 3], [1, 2, 3])
    p.append_records_to_leader(batch(4), -1, 1)
    p.update_follower_fetch_state(2, 4, 0, now_ms=1_000, lag_time_max_ms=LAG_MS)
    p.update_follower_fetch_state(3, 1, 0, now_ms=1_000, lag_time_max_ms=LAG_MS)
    assert p.out_of_sync_replicas(5_000, LAG_MS) == []  # both counted as caught up at leadership start (0)
    assert p.out_of_sync_replicas(LAG_MS + 1, LAG_MS) == [3]  # 2 caught up at 1000, 3 never since
    p.commit_isr([1, 2], partition_epoch=1, now_ms=LAG_MS + 2)
    # The ISR is now {1, 2}: the high watermark follows broker 2 alone.
    assert p.log.high_watermark == 4


def test_acks_all_after_the_isr_shrank_below_min_insync_replicas(tmp_path):
    p = leader(tmp_path, [1, 2], [1, 2])
    p.append_records_to_leader(batch(), -1, 2)
    p.commit_isr([1], partition_epoch=1, now_ms=0)
    assert p.acks_all_error(1, 2) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


def test_a_follower_appends_the_leaders_batches_and_takes_its_high_watermark(tmp_path):
    leader_p = leader(tmp_path, [1, 2], [1, 2])
    leader_p.append_records_to_leader(batch(3), 1, 1)
    follower, moves = new_partition(tmp_path, node_id=2)
    assert follower.make_follower(1, 0, [1, 2], [1, 2])
    assert follower.is_follower and not follower.is_leader
    read = leader_p.read(0, 1 << 20, read_committed=False, min_one_message=True, from_follower=True)
    assert leader_p.log.high_watermark == 0  # a follower reads past it, up to the log end
    data = read.records if isinstance(read.records, bytes) else read.records.read_bytes()
    follower.append_records_as_follower(data, read.high_watermark)
    assert follower.log.log_end_offset == 3 and follower.log.high_watermark == 0
    leader_p.update_follower_fetch_state(2, 3, 0, now_ms=1, lag_time_max_ms=LAG_MS)
    follower.update_follower_high_watermark(leader_p.log.high_watermark)
    assert follower.log.high_watermark == 3 and moves == [3]
    with pytest.raises(PartitionError) as exc:
        follower.append_records_to_leader(batch(), 1, 1)
    assert exc.value.code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_new_leader_whose_high_watermark_is_behind_its_epoch_start_says_so_until_followers_catch_up(tmp_path):
    """KIP-207: the follower elected leader knows its log end (3), not yet the high watermark it had not
    been told (0); ListOffsets answers OFFSET_NOT_AVAILABLE until an in-sync follower fetched up to 3."""
    old_leader = leader(tmp_path, [1, 2, 3], [1, 2, 3])
    old_leader.append_records_to_leader(batch(3), 1, 1)
    follower, _ = new_partition(tmp_path, node_id=2)
    follower.make_follower(1, 0, [1, 2, 3], [1, 2, 3])
    read = old_leader.read(0, 1 << 20, read_committed=False, min_one_message=True, from_follower=True)
    follower.append_records_as_follower(read.records if isinstance(read.records, bytes) else read.records.read_bytes(),
                                        read.high_watermark)
    assert not follower.high_watermark_behind_epoch_start  # a follower is never asked
    follower.make_leader(1, [1, 2, 3], [2, 3], now_ms=0)
    assert follower.leader_epoch_start_offset == 3 and follower.log.high_watermark == 0
    assert follower.high_watermark_behind_epoch_start
    follower.update_follower_fetch_state(3, 2, 0, now_ms=1, lag_time_max_ms=LAG_MS)
    assert follower.log.high_watermark == 2 and follower.high_watermark_behind_epoch_start
    follower.update_follower_fetch_state(3, 3, 0, now_ms=2, lag_time_max_ms=LAG_MS)
    assert follower.log.high_watermark == 3 and not follower.high_watermark_behind_epoch_start


def test_an_older_state_of_the_same_leadership_does_not_shrink_the_isr_back(tmp_path):
    """A leader's own ISR expansion committed at partition epoch 2, then metadata read before it landed (partition
    epoch 1, the smaller ISR) arrives: it is ignored, so the high watermark still waits for the added member.
    (The chaos campaign lost acknowledged records this way: the stale ISR let the high watermark pass the
    follower that the controller then elected.)"""
    p, _ = new_partition(tmp_path)
    p.make_leader(0, [1, 2, 3], [1, 2], partition_epoch=1, now_ms=0)
    p.commit_isr([1, 2, 3], partition_epoch=2, now_ms=0)
    assert p.make_leader(0, [1, 2, 3], [1, 2], partition_epoch=1, now_ms=10) is False
    assert p.isr == [1, 2, 3] and p.partition_epoch == 2
    p.append_records_to_leader(batch(10), -1, 2)
    p.update_follower_fetch_state(2, 10, 0, now_ms=20, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 0 and p.acks_all_error(10, 2) is None  # broker 3 has not fetched them
    p.update_follower_fetch_state(3, 10, 0, now_ms=30, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 10 and p.acks_all_error(10, 2) == ErrorCode.NONE


def test_a_shrink_committed_late_does_not_drop_the_expansion_proposed_since(tmp_path):
    """The leader's shrink to [1, 2] lands and its metadata arrives first; broker 3 catches up and is proposed
    again; then the shrink's own answer arrives, late (a loaded broker). It must not clear the pending
    expansion: the high watermark keeps waiting for broker 3, which the expansion puts in the ISR. (The chaos
    campaign lost acknowledged records this way: the high watermark passed broker 3's log end offset, the
    expansion committed, and the controller elected broker 3.)"""
    p, _ = new_partition(tmp_path)
    p.make_leader(0, [1, 2, 3], [1, 2, 3], partition_epoch=0, now_ms=0)
    p.append_records_to_leader(batch(10), -1, 2)
    for follower in (2, 3):
        p.update_follower_fetch_state(follower, 10, 0, now_ms=10, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 10
    p.pending_isr = [1, 2]  # the shrink, proposed
    p.make_leader(0, [1, 2, 3], [1, 2], partition_epoch=1, now_ms=20)  # its metadata, first
    assert p.isr == [1, 2] and p.pending_isr is None
    p.append_records_to_leader(batch(10), -1, 2)
    proposed = p.update_follower_fetch_state(3, 10, 0, now_ms=30, lag_time_max_ms=LAG_MS)
    assert proposed == [1, 2, 3]
    p.pending_isr = proposed
    p.commit_isr([1, 2], partition_epoch=1, now_ms=40)  # the shrink's own answer, late
    assert p.pending_isr == [1, 2, 3] and p.maximal_isr == [1, 2, 3]
    p.update_follower_fetch_state(2, 20, 0, now_ms=50, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 10 and p.acks_all_error(20, 2) is None  # broker 3 is still at 10
    p.make_leader(0, [1, 2, 3], [1, 2, 3], partition_epoch=2, now_ms=60)  # the expansion lands
    assert p.isr == [1, 2, 3] and p.pending_isr is None
    p.update_follower_fetch_state(3, 20, 0, now_ms=70, lag_time_max_ms=LAG_MS)
    assert p.log.high_watermark == 20 and p.acks_all_error(20, 2) == ErrorCode.NONE



def test_a_read_committed_read_with_nothing_to_read_answers_no_aborted_transactions(tmp_path):
    """As Kafka's LocalLog.read (emptyFetchDataInfo): at or past the last stable offset nothing is read and the
    answer's aborted transactions are empty, without a search, even when an aborted transaction spans the offset."""
    p = leader(tmp_path, [1], [1])

    def txn(producer_id: int, sequence: int) -> bytes:
        return build_batch([Record(0, 0, None, b"t")], base_timestamp=1, producer_id=producer_id, producer_epoch=0,
                           base_sequence=sequence, is_transactional=True)

    for records in (txn(4, 0), txn(5, 0), txn(4, 1)):  # offsets 0-2: producer 5's transaction at 1 stays open
        p.append_records_to_leader(records, 1, 1)
    p.append_records_to_leader(build_control_batch(0, producer_id=4, producer_epoch=0, timestamp=1,
                                                   partition_leader_epoch=0, coordinator_epoch=0),
                               1, 1, origin="coordinator")  # producer 4's aborted: 0-2, its marker at 3
    assert p.log.high_watermark == 4 and p.log.last_stable_offset == 1
    read = p.read(0, 1 << 20, read_committed=True, min_one_message=True)
    assert read.size > 0 and [(t.producer_id, t.first_offset) for t in read.aborted_transactions] == [(4, 0)]
    for offset in (1, 2, 4):  # at the last stable offset, past it, at the log end
        read = p.read(offset, 1 << 20, read_committed=True, min_one_message=True)
        assert read.records == b"" and read.aborted_transactions == []
    assert p.read(1, 1 << 20, read_committed=False, min_one_message=True).aborted_transactions is None
