"""TransactionMetadata: legal transitions only, pending states, and __transaction_state records."""

from __future__ import annotations

import pytest

from coordinator.transaction.metadata import (
    IllegalTransition,
    TransactionMetadata,
    TxnState,
    decode_txn_record,
    encode_txn_record,
)

S = TxnState


def ongoing() -> TransactionMetadata:
    m = TransactionMetadata("tx", producer_id=7, producer_epoch=-1, timeout_ms=60_000)
    m.complete_transition(m.prepare_increment_epoch(60_000, 1_000))
    m.complete_transition(m.prepare_add_partitions([("t", 0), ("t", 1)], 2_000))
    return m


def test_a_transaction_moves_through_prepare_and_complete():
    m = ongoing()
    assert (m.state, m.producer_epoch, m.partitions, m.start_timestamp_ms) == (S.ONGOING, 0, {("t", 0), ("t", 1)},
                                                                               2_000)
    transit = m.prepare_end(True, 3_000)
    assert m.pending_state is S.PREPARE_COMMIT and m.state is S.ONGOING  # nothing applies before the write
    m.complete_transition(transit)
    m.complete_transition(m.prepare_complete(4_000))
    assert (m.state, m.partitions, m.pending_state, m.update_timestamp_ms) == (S.COMPLETE_COMMIT, set(), None, 4_000)


def test_a_pending_transition_blocks_others_until_it_completes_or_fails():
    m = ongoing()
    m.prepare_end(False, 3_000)
    with pytest.raises(IllegalTransition):
        m.prepare_add_partitions([("t", 2)], 3_000)
    m.abort_transition()  # the append failed: still Ongoing, free to move
    assert m.state is S.ONGOING and m.pending_state is None
    m.complete_transition(m.prepare_end(False, 3_000))
    assert m.state is S.PREPARE_ABORT


@pytest.mark.parametrize("start,step", [
    (S.EMPTY, lambda m: m.prepare_end(True, 1)),            # nothing to commit
    (S.COMPLETE_COMMIT, lambda m: m.prepare_complete(1)),   # completes only a prepared transaction
    (S.EMPTY, lambda m: m.prepare_fence_epoch(1)),          # only an ongoing transaction is fenced
])
def test_illegal_transitions_are_refused(start, step):
    m = TransactionMetadata("tx", producer_id=1, producer_epoch=0, timeout_ms=1_000, state=start)
    with pytest.raises(IllegalTransition):
        step(m)


def test_records_round_trip_and_tombstones():
    m = ongoing()
    transit = m.prepare_end(True, 3_000)
    key, value = encode_txn_record("tx", transit)
    assert key[:2] == b"\x00\x00" and value[:2] == b"\x00\x00"  # key and value version 0, as Kafka writes them
    txn_id, decoded = decode_txn_record(key, value)
    assert txn_id == "tx"
    assert (decoded.producer_id, decoded.producer_epoch, decoded.state, decoded.partitions, decoded.timeout_ms,
            decoded.start_timestamp_ms, decoded.update_timestamp_ms) == (
        7, 0, S.PREPARE_COMMIT, frozenset({("t", 0), ("t", 1)}), 60_000, 2_000, 3_000)
    assert decode_txn_record(*encode_txn_record("tx", None)) == ("tx", None)


def test_state_names_are_kafkas():
    assert [s.display_name for s in S] == ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                                           "CompleteAbort", "Dead", "PrepareEpochFence"]
    assert S.from_display_name("Ongoing") is S.ONGOING and S.from_display_name("nope") is None
