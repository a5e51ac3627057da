"""Merging persisted state batches: newer wins, trimmed at the start offset, equal neighbours joined."""

from coordinator.share.state_batch import StateBatch as B
from coordinator.share.state_batch import combine, merge


def test_update_inside_a_batch_splits_it():
    assert merge([B(0, 9, 0, 1)], [B(3, 4, 2, 1)], 0) == [B(0, 2, 0, 1), B(3, 4, 2, 1), B(5, 9, 0, 1)]


def test_update_over_several_batches_wins():
    got = merge([B(0, 4, 0, 1), B(5, 9, 4, 2)], [B(3, 6, 2, 3)], 0)
    assert got == [B(0, 2, 0, 1), B(3, 6, 2, 3), B(7, 9, 4, 2)]


def test_trimmed_below_the_start_offset():
    assert merge([B(0, 9, 0, 1)], [B(12, 12, 2, 1)], 5) == [B(5, 9, 0, 1), B(12, 12, 2, 1)]
    assert merge([B(0, 4, 2, 1)], [], 5) == []


def test_later_updates_win_over_earlier_ones_of_the_same_write():
    assert merge([], [B(0, 3, 0, 1), B(2, 2, 4, 5)], 0) == [B(0, 1, 0, 1), B(2, 2, 4, 5), B(3, 3, 0, 1)]


def test_adjacent_equal_batches_are_joined():
    assert combine([B(3, 4, 2, 1), B(0, 2, 2, 1), B(5, 5, 2, 2)]) == [B(0, 4, 2, 1), B(5, 5, 2, 2)]
