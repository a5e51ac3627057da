"""The reassignment rules: the full replica set of a move, when it may complete, and the states that end or
cancel it (as Kafka's ReplicaAssignment and the controller's reassignment election)."""

from replication.controller.elections import LeaderAndIsr
from replication.controller.reassignment import (
    ReplicaAssignment,
    completion_state,
    reassignment_complete,
    revert_state,
)


def test_a_move_lists_the_target_first_then_the_rest_of_the_original_replicas():
    a = ReplicaAssignment((1, 2, 3)).reassign_to([4, 2, 5])
    assert a == ReplicaAssignment((4, 2, 5, 1, 3), adding=(4, 5), removing=(1, 3))
    assert a.origin == (2, 1, 3) and a.target == (4, 2, 5) and a.is_being_reassigned
    assert a.completed() == ReplicaAssignment((4, 2, 5)) and a.revert() == ReplicaAssignment((2, 1, 3))


def test_a_new_target_during_a_move_starts_from_the_original_replicas():
    moving = ReplicaAssignment((1, 2)).reassign_to([3, 4])
    assert moving.reassign_to([2, 5]) == ReplicaAssignment((2, 5, 1), adding=(5,), removing=(1,))
    assert moving.reassign_to([1, 2]) == ReplicaAssignment((1, 2))  # back where it started: nothing moves
    assert not ReplicaAssignment((1, 2)).reassign_to([2, 1]).is_being_reassigned  # a reorder moves no data


def test_a_move_completes_once_every_target_replica_is_in_sync():
    a = ReplicaAssignment((1, 2)).reassign_to([2, 3])
    assert not reassignment_complete(a, (1, 2))
    assert reassignment_complete(a, (1, 2, 3))


def test_completion_keeps_a_staying_leader_and_otherwise_elects_an_in_sync_target_replica():
    a = ReplicaAssignment((1, 2)).reassign_to([2, 3])
    assert completion_state(LeaderAndIsr(2, 4, (1, 2, 3)), a, {1, 2, 3}) == LeaderAndIsr(2, 5, (2, 3))
    assert completion_state(LeaderAndIsr(1, 4, (1, 2, 3)), a, {1, 2, 3}) == LeaderAndIsr(2, 5, (2, 3))
    assert completion_state(LeaderAndIsr(1, 4, (1, 2, 3)), a, {1, 3}) == LeaderAndIsr(3, 5, (2, 3))
    assert completion_state(LeaderAndIsr(1, 4, (1,)), a, {1}) is None


def test_cancelling_drops_the_adding_replicas_from_the_isr_and_from_leadership():
    a = ReplicaAssignment((1, 2)).reassign_to([3, 2])
    assert revert_state(LeaderAndIsr(1, 4, (1, 2)), a, {1, 2, 3}) == LeaderAndIsr(1, 4, (1, 2))
    assert revert_state(LeaderAndIsr(1, 4, (1, 2, 3)), a, {1, 2, 3}) == LeaderAndIsr(1, 5, (1, 2))
    assert revert_state(LeaderAndIsr(3, 4, (2, 3)), a, {1, 2, 3}) == LeaderAndIsr(2, 5, (2,))
    assert revert_state(LeaderAndIsr(3, 4, (3,)), a, {1, 2, 3}) is None
