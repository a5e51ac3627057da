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
    (S.PREPARE_COMMIT, lambda m: m.prepare_add_partitions([("t", 0)], 1)),  # not while it is ending
])
def test_illegal_transitions_are_refused(start, step):
    m = TransactionMetadata("tx", producer_id=1, producer_epoch=0, timeout_ms=1_000, state=start)
    with pytest.raises(IllegalTransition):
        step(m)


def test_records_round_trip_and_tombstones():
    m = ongoing()
    transit = m.prepare_end(True, 3_000)
    key, value = encode_txn_record("tx", transit)
    assert key[:2] == b"\x00\x00" and value[:2] == b"\x00\x01"  # key v0, value v1, as Kafka 4.1 writes them
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


def test_transaction_version_2_bumps_the_epoch_with_every_end():
    m = ongoing()
    m.complete_transition(m.prepare_end(True, 3_000, client_version=2))
    assert (m.state, m.producer_epoch, m.last_producer_epoch, m.client_transaction_version) == (
        S.PREPARE_COMMIT, 1, 0, 2)
    m.complete_transition(m.prepare_complete(4_000))
    assert (m.state, m.producer_id, m.producer_epoch) == (S.COMPLETE_COMMIT, 7, 1)
    # An abort with nothing added (TV2) starts and ends a transaction of its own.
    m.complete_transition(m.prepare_end(False, 5_000, client_version=2))
    assert (m.state, m.producer_epoch, m.start_timestamp_ms) == (S.PREPARE_ABORT, 2, 5_000)


def test_an_exhausted_epoch_moves_to_the_next_producer_id_on_completion():
    m = ongoing()
    m.producer_epoch = 32_766
    m.complete_transition(m.prepare_end(True, 3_000, client_version=2, next_producer_id=99))
    assert (m.producer_id, m.producer_epoch, m.next_producer_id) == (7, 32_767, 99)
    m.complete_transition(m.prepare_complete(4_000))
    assert (m.producer_id, m.prev_producer_id, m.producer_epoch, m.next_producer_id) == (99, 7, 0, -1)


def test_version_1_records_carry_the_tagged_fields_and_version_0_records_still_read():
    m = ongoing()
    transit = m.prepare_end(True, 3_000, client_version=2, next_producer_id=12)
    _, decoded = decode_txn_record(*encode_txn_record("tx", transit))
    assert (decoded.prev_producer_id, decoded.next_producer_id, decoded.client_transaction_version) == (7, 12, 2)
    from wire import Writer
    from wire.messages import TransactionLogValue
    w = Writer()
    w.int16(0)
    TransactionLogValue(producer_id=5, producer_epoch=3, transaction_timeout_ms=1_000, transaction_status=4,
                        transaction_partitions=[], transaction_last_update_timestamp_ms=2,
                        transaction_start_timestamp_ms=1).encode_into(w, 0)
    key, _ = encode_txn_record("old", None)
    _, old = decode_txn_record(key, w.getvalue())
    assert (old.producer_id, old.producer_epoch, old.state, old.client_transaction_version, old.next_producer_id) == (
        5, 3, S.COMPLETE_COMMIT, 0, -1)
