"""Share sessions' partition order and the rotation a ShareFetch tries them in (Kafka 4.4's)."""

import uuid

from coordinator.share.share_partition_manager import _rotated
from coordinator.share.share_session import ShareSessionCache

T = uuid.UUID(int=7)


def test_partitions_that_answered_records_move_to_the_end_of_the_session():
    cache = ShareSessionCache()
    session = cache.open("g", "m", [(T, 0), (T, 1), (T, 2)], connection=None)
    cache.answered_records(session, [(T, 0)])
    assert list(session.partitions) == [(T, 1), (T, 2), (T, 0)]
    cache.answered_records(session, [(T, 2), (T, 9)])  # one the session does not hold is not added
    assert list(session.partitions) == [(T, 1), (T, 0), (T, 2)]


def test_partitions_are_tried_rotated_by_the_session_epoch_from_epoch_1():
    keys = [("g", T, i) for i in range(3)]
    assert _rotated(keys, 0) == keys
    assert [k[2] for k in _rotated(keys, 1)] == [1, 2, 0]
    assert [k[2] for k in _rotated(keys, 5)] == [2, 0, 1]
    assert _rotated(keys, 6) == keys
    assert _rotated(keys[:1], 3) == keys[:1]
