"""Share-group membership and the simple assignor."""

import uuid

from coordinator.runtime.clock import FakeClock
from coordinator.share.share_group import ShareGroupCoordinator, simple_assign
from wire import ErrorCode

T = uuid.UUID(int=5)


def parts(n):
    return [(T, i) for i in range(n)]


def flat(assignment):
    return {m: sorted(p for ps in a.values() for p in ps) for m, a in assignment.items()}


def test_every_partition_goes_to_ceil_members_over_partitions_members():
    assert flat(simple_assign(["a", "b", "c"], parts(1))) == {"a": [0], "b": [0], "c": [0]}
    got = flat(simple_assign(["a", "b"], parts(4)))
    assert sorted(got["a"] + got["b"]) == [0, 1, 2, 3] and len(got["a"]) == len(got["b"]) == 2
    got = flat(simple_assign(["a", "b", "c"], parts(2)))
    assert sorted(p for ps in got.values() for p in ps) == [0, 0, 1, 1]
    assert all(len(ps) in (1, 2) for ps in got.values())


def test_members_keep_what_they_have_when_others_join():
    first = simple_assign(["a", "b"], parts(4))
    second = simple_assign(["a", "b", "c", "d"], parts(4), first)
    for m in ("a", "b"):
        assert set(flat(second)[m]) <= set(flat(first)[m])  # a and b only gave partitions away
    assert sorted(p for ps in flat(second).values() for p in ps) == [0, 1, 2, 3]


def test_join_heartbeat_leave_and_expiry():
    clock = FakeClock()
    c = ShareGroupCoordinator(clock, lambda name: (T, 2) if name == "t" else None, session_timeout_ms=1000)
    r = c.heartbeat("g", "m1", 0, None, ["t"], "client", "/host")
    assert (r.error_code, r.member_epoch, r.assignment) == (ErrorCode.NONE, 1, {T: [0, 1]})
    assert c.heartbeat("g", "m1", 5, None, None, "client", "/host").error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert c.heartbeat("g", "zz", 3, None, None, "client", "/host").error_code == ErrorCode.UNKNOWN_MEMBER_ID
    r2 = c.heartbeat("g", "m2", 0, None, ["t"], "client", "/host")
    assert r2.member_epoch == 2 and sum(len(p) for p in r2.assignment.values()) == 1
    r = c.heartbeat("g", "m1", 1, None, None, "client", "/host")
    assert r.member_epoch == 2 and sum(len(p) for p in r.assignment.values()) == 1
    clock.advance(1000)  # m1 and m2 stop heartbeating
    assert c.groups["g"].members == {} and c.groups["g"].state == "Empty"
    assert c.delete("g") == ErrorCode.NONE and c.delete("g") == ErrorCode.GROUP_ID_NOT_FOUND
