"""Share-group membership and the simple assignor."""

import uuid

from coordinator.group import records as rec
from coordinator.group.topics import StaticTopics, TopicInfo
from coordinator.runtime.clock import FakeClock
from coordinator.runtime.timer import CoordinatorTimer
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


def _coordinator(clock, topics, session_timeout_ms=1000, assignment_interval_ms=0):
    """A share-group coordinator whose timeouts run at once (as the runtime runs them), collecting their records."""
    written = []

    def fire(key, token):
        operation = timer.take(key, token)
        if operation is not None:
            written.extend(operation().records)

    timer = CoordinatorTimer(clock, fire)
    return ShareGroupCoordinator(timer, topics, session_timeout_ms=session_timeout_ms,
                                 assignment_interval_ms=lambda group_id: assignment_interval_ms,
                                 now_ms=clock.now_ms), written


def _replayed(clock, topics, records):
    fresh, _ = _coordinator(clock, topics)
    for r in records:  # through the bytes, as the log holds them
        fresh.replay(rec.decode_record(*r.encode()))
    return fresh


def _initialized(c, group_id, partitions):
    """The group exists and the share-partitions of ``partitions`` of topic t are initialized (as
    AlterShareGroupOffsets leaves them), so a member is assigned them as it joins."""
    c.ensure_group(group_id)
    c.initialized_state(group_id, {T: ("t", list(partitions))})


def test_partitions_are_assigned_once_initialized():
    """Kafka 4.4: a join answers no partitions and asks for their initialization (start offset -1 for a new topic);
    once done, the next heartbeat bumps the epoch and assigns them; partitions added later are initialized at
    offset 0 and assigned after that; a failed initialization is asked again by the next heartbeat."""
    clock = FakeClock()
    topics = StaticTopics([TopicInfo("t", T, 2)])
    c, _ = _coordinator(clock, topics)
    r = c.heartbeat("g", "m", 0, None, ["t"], "c", "/h").response
    assert (r.member_epoch, r.assignment) == (2, {})
    assert (r.initialize.state_epoch, r.initialize.topics) == (2, {T: ([0, 1], -1)})
    r = c.heartbeat("g", "m", 2, None, None, "c", "/h").response  # still initializing: nothing new
    assert (r.member_epoch, r.assignment, r.initialize) == (2, None, None)
    c.initialized_state("g", {T: ("t", [0, 1])})
    r = c.heartbeat("g", "m", 2, None, None, "c", "/h").response
    assert (r.member_epoch, r.assignment) == (3, {T: [0, 1]})
    r = c.heartbeat("g", "m", 3, None, None, "c", "/h").response  # assigned what is initialized: settled
    assert (r.member_epoch, r.assignment, r.initialize) == (3, None, None)
    topics.add(TopicInfo("t", T, 3))
    r = c.heartbeat("g", "m", 3, None, None, "c", "/h").response
    assert (r.member_epoch, r.assignment, r.initialize.topics) == (4, None, {T: ([2], 0)})
    c.uninitialized_state("g", {T: [2]})
    r = c.heartbeat("g", "m", 4, None, None, "c", "/h").response
    assert (r.member_epoch, r.initialize.topics) == (4, {T: ([2], 0)})
    c.initialized_state("g", {T: ("t", [2])})
    r = c.heartbeat("g", "m", 4, None, None, "c", "/h").response
    assert (r.member_epoch, r.assignment) == (5, {T: [0, 1, 2]})
    assert c.heartbeat("g", "m", 5, None, None, "c", "/h").response.member_epoch == 5


def test_join_heartbeat_leave_and_expiry():
    clock = FakeClock()
    c, expired = _coordinator(clock, StaticTopics([TopicInfo("t", T, 2)]))
    _initialized(c, "g", [0, 1])
    r = c.heartbeat("g", "m1", 0, None, ["t"], "client", "/host").response
    assert (r.error_code, r.member_epoch, r.assignment) == (ErrorCode.NONE, 2, {T: [0, 1]})  # a new group is at epoch 1 (Kafka 4.3+)
    assert c.heartbeat("g", "m1", 5, None, None, "client", "/host").response.error_code == \
        ErrorCode.FENCED_MEMBER_EPOCH
    assert c.heartbeat("g", "zz", 3, None, None, "client", "/host").response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    r2 = c.heartbeat("g", "m2", 0, None, ["t"], "client", "/host").response
    assert r2.member_epoch == 3 and sum(len(p) for p in r2.assignment.values()) == 1
    r = c.heartbeat("g", "m1", 2, None, None, "client", "/host").response
    assert r.member_epoch == 3 and sum(len(p) for p in r.assignment.values()) == 1
    clock.advance(1000)  # m1 and m2 stop heartbeating
    assert c.groups["g"].members == {} and c.groups["g"].state == "Empty"
    assert {type(r.key).__name__ for r in expired if r.value is None} == {
        "ShareGroupCurrentMemberAssignmentKey", "ShareGroupTargetAssignmentMemberKey", "ShareGroupMemberMetadataKey"}
    assert c.delete("g").response == ErrorCode.NONE and c.delete("g").response == ErrorCode.GROUP_ID_NOT_FOUND


def test_records_written_replay_into_the_same_groups():
    clock = FakeClock()
    topics = StaticTopics([TopicInfo("t", T, 3)])
    c, expired = _coordinator(clock, topics)
    log = []
    for step in [lambda: c.heartbeat("g", "m1", 0, "rack-a", ["t"], "c1", "/h1"),
                 lambda: c.initialized_state("g", {T: ("t", [0, 1])}),
                 lambda: c.heartbeat("g", "m2", 0, None, ["t"], "c2", "/h2"),
                 lambda: c.heartbeat("g", "m1", 2, None, None, "c1", "/h1"),
                 lambda: c.heartbeat("h", "x", 0, None, ["t"], "c3", "/h3"),
                 lambda: c.heartbeat("h", "x", 2, None, None, "c3", "/h3")]:
        result = step()
        assert result.replay is False  # the operation already applied its change
        log.extend(result.records)
    first = [type(r.key).__name__ for r in log[:5]]
    assert first == ["ShareGroupMemberMetadataKey", "ShareGroupMetadataKey", "ShareGroupTargetAssignmentMemberKey",
                     "ShareGroupTargetAssignmentMetadataKey", "ShareGroupCurrentMemberAssignmentKey"]
    fresh = _replayed(clock, topics, log)
    assert {g: v.view() for g, v in fresh.groups.items()} == {g: v.view() for g, v in c.groups.items()}
    assert fresh.groups["g"].group_epoch == 3 and fresh.groups["g"].members["m1"].rack_id == "rack-a"
    assert fresh.groups["g"].initialized == {T: ("t", {0, 1})}
    assert [(name, p) for name, p, _ in fresh.groups["g"].initializing.values()] == [("t", {2})]
    assert [(name, p) for name, p, _ in fresh.groups["h"].initializing.values()] == [("t", {0, 1, 2})]
    # a replayed member keeps its epoch: its next heartbeat is accepted without rejoining
    fresh.on_loaded()
    again = fresh.heartbeat("g", "m2", 3, None, None, "c2", "/h2")
    assert again.response.error_code == ErrorCode.NONE and again.records == []
    # a member leaves, the group is deleted: replaying everything leaves no group
    log.extend(c.heartbeat("h", "x", -1, None, None, "c3", "/h3").records)
    log.extend(c.delete("h").records)
    assert set(_replayed(clock, topics, log).groups) == {"g"}
    # replayed members expire a session timeout after the load
    clock.advance(1000)
    assert fresh.groups["g"].members == {}


def test_a_partition_added_while_down_bumps_the_epoch_of_a_replayed_group():
    clock = FakeClock()
    topics = StaticTopics([TopicInfo("t", T, 1)])
    c, _ = _coordinator(clock, topics)
    log = list(c.ensure_group("g").records) + list(c.initialized_state("g", {T: ("t", [0])}).records)
    log.extend(c.heartbeat("g", "m1", 0, None, ["t"], "c", "/h").records)
    topics.add(TopicInfo("t", T, 2))
    fresh = _replayed(clock, topics, log)
    r = fresh.heartbeat("g", "m1", 2, None, None, "c", "/h").response
    assert (r.member_epoch, r.assignment, r.initialize.topics) == (3, None, {T: ([1], 0)})


def test_a_new_assignment_waits_for_the_share_assignment_interval():
    """KIP-1263 as Kafka 4.4's GroupMetadataManager applies share.assignment.interval.ms: the first assignment at
    once, a newcomer within the interval gets the last assignment's epoch and nothing, a heartbeat after it
    assigns; the timestamp is written and replayed, and a group that became empty assigns its next member at once."""
    clock = FakeClock()
    topics = StaticTopics([TopicInfo("t", T, 2)])
    c, _ = _coordinator(clock, topics, session_timeout_ms=60_000, assignment_interval_ms=1500)
    _initialized(c, "g", [0, 1])
    log = list(c.heartbeat("g", "a", 0, None, ["t"], "c", "/h").records)
    b = c.heartbeat("g", "b", 0, None, ["t"], "c", "/h")
    log.extend(b.records)
    assert (b.response.member_epoch, b.response.assignment) == (2, {})
    assert c.groups["g"].group_epoch == 3 and c.groups["g"].assignment_timestamp == clock.now_ms()
    clock.advance(1499)
    assert c.heartbeat("g", "b", 2, None, None, "c", "/h").response.member_epoch == 2
    assert c.groups["g"].group_epoch == 3  # no further bump while the assignment waits
    assert _replayed(clock, topics, log).groups["g"].assignment_timestamp == clock.now_ms() - 1499
    clock.advance(1)
    r = c.heartbeat("g", "b", 2, None, None, "c", "/h").response
    assert r.member_epoch == 3 and sum(len(p) for p in r.assignment.values()) == 1
    for member in ("a", "b"):
        c.heartbeat("g", member, -1, None, None, "c", "/h")
    assert (c.groups["g"].assignment_epoch, c.groups["g"].assignment_timestamp) == (5, 0)
    r = c.heartbeat("g", "d", 0, None, ["t"], "c", "/h").response
    assert (r.member_epoch, r.assignment) == (6, {T: [0, 1]})


def test_deleting_offsets_and_topics_uninitializes_and_is_replayed():
    """DeleteShareGroupOffsets (Kafka's sharePartitionsEligibleForOffsetDeletion / completeDeleteShareGroupOffsets):
    a topic's initialized partitions move to deleting (a retry deletes every partition) and are cleared once deleted;
    a topic without offsets is not answered; a deleted topic is forgotten. The record replays all three states."""
    clock = FakeClock()
    u = uuid.UUID(int=6)
    topics = StaticTopics([TopicInfo("t", T, 2), TopicInfo("u", u, 1)])
    c, _ = _coordinator(clock, topics)
    log = list(c.ensure_group("g").records) + list(c.initialized_state("g", {T: ("t", [0, 1])}).records)
    log.extend(c.heartbeat("g", "m", 0, None, ["u"], "c", "/h").records)  # u initializing
    result = c.start_deleting("g", {T: "t", u: "u"})
    log.extend(result.records)
    assert result.response == {T: [0, 1]}
    fresh = _replayed(clock, topics, log)
    assert (fresh.groups["g"].initialized, fresh.groups["g"].deleting) == ({}, {T: "t"})
    assert [(name, p) for name, p, _ in fresh.groups["g"].initializing.values()] == [("u", {0})]
    assert c.start_deleting("g", {T: "t"}).response == {T: [0, 1]}  # a retry of an interrupted deletion
    log.extend(c.deleted("g", {T}).records)
    log.extend(c.forget_topics("g", {u}).records)
    fresh = _replayed(clock, topics, log)
    assert (fresh.groups["g"].initialized, fresh.groups["g"].initializing, fresh.groups["g"].deleting) == ({}, {}, {})
