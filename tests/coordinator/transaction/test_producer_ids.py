"""Producer ids are unique across blocks and restarts."""

from __future__ import annotations

from coordinator.transaction.producer_ids import BLOCK_SIZE, ProducerIdManager


def test_ids_are_sequential_within_a_block(tmp_path):
    m = ProducerIdManager(tmp_path, node_id=1)
    assert [m.next_producer_id() for _ in range(3)] == [0, 1, 2]


def test_a_new_block_is_reserved_when_one_runs_out(tmp_path):
    m = ProducerIdManager(tmp_path, node_id=1)
    ids = [m.next_producer_id() for _ in range(BLOCK_SIZE + 5)]
    assert ids == list(range(BLOCK_SIZE + 5))


def test_restart_never_reuses_an_id(tmp_path):
    m = ProducerIdManager(tmp_path, node_id=1)
    seen = {m.next_producer_id() for _ in range(10)}
    # as after kill -9: a new manager on the same directory
    m2 = ProducerIdManager(tmp_path, node_id=1)
    fresh = m2.next_producer_id()
    assert fresh not in seen
    assert fresh == BLOCK_SIZE
