"""KIP-848 consumer groups: ConsumerGroupHeartbeat epochs, assignment, revocation, regexes, static
members, session timeouts, conversion to and from classic groups; records and replay."""

from __future__ import annotations

from dataclasses import replace

from coordinator.group.consumer_group import ConsumerGroup, ConsumerGroupState, MemberState
from tests.coordinator.group.helpers import (
    TOPIC_A,
    TOPIC_B,
    Harness,
    assignment,
    info,
    join_request,
    run,
    subscription,
    sync_request,
    types,
)
from tests.coordinator.group.test_offsets import codes, commit
from wire import ErrorCode
from wire.messages import ConsumerGroupHeartbeatRequest, HeartbeatRequest, LeaveGroupRequest
from wire.messages.consumer_group_heartbeat_request import TopicPartitions
from wire.messages.leave_group_request import MemberIdentity

G = "cg"
A, B = TOPIC_A.topic_id, TOPIC_B.topic_id


def hb(member_id: str, epoch: int, *, topics=None, regex=None, owned=None, instance_id=None, assignor=None,
       rebalance_timeout_ms: int = -1, group_id: str = G) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id=group_id, member_id=member_id, member_epoch=epoch, instance_id=instance_id,
        rebalance_timeout_ms=rebalance_timeout_ms, subscribed_topic_names=topics, subscribed_topic_regex=regex,
        server_assignor=assignor,
        topic_partitions=None if owned is None else [TopicPartitions(topic_id=t, partitions=sorted(p))
                                                     for t, p in owned.items()])


def join(member_id: str, topics=("a",), **kw) -> ConsumerGroupHeartbeatRequest:
    return hb(member_id, 0, topics=list(topics), owned={}, rebalance_timeout_ms=kw.pop("rebalance_timeout_ms", 30_000),
              **kw)


def assigned(response) -> dict:
    if response.assignment is None:
        return None
    return {tp.topic_id: set(tp.partitions) for tp in response.assignment.topic_partitions}


@run
async def test_first_member_gets_everything_and_records():
    """A new group is at epoch 1 (Kafka 4.3+), so its first member joins at epoch 2."""
    h = Harness()
    r = await h.coordinator.consumer_group_heartbeat(info(1), join("m1"))
    assert r.error_code == 0, r
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms) == ("m1", 2, 5000)
    assert assigned(r) == {A: {0, 1, 2, 3}}
    assert types(h.records(G)) == ["ConsumerGroupMemberMetadata", "ConsumerGroupMetadata",
                                   "ConsumerGroupTargetAssignmentMember", "ConsumerGroupTargetAssignmentMetadata",
                                   "ConsumerGroupCurrentMemberAssignment"]
    group = h.group(G)
    assert isinstance(group, ConsumerGroup)
    assert (group.group_epoch, group.assignment_epoch, group.state) == (2, 2, ConsumerGroupState.STABLE)
    # A plain heartbeat changes nothing and returns no assignment.
    again = await h.coordinator.consumer_group_heartbeat(info(1), hb("m1", 2))
    assert (again.error_code, again.member_epoch, again.assignment) == (0, 2, None)
    await h.assert_replay_matches()


@run
async def test_second_member_incremental_revocation_and_assignment():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    r2 = await c.consumer_group_heartbeat(info(1), join("m2"))
    # m2 moves to epoch 3 but its partitions are still owned by m1: nothing yet.
    assert r2.member_epoch == 3 and assigned(r2) == {}
    assert h.group(G).members["m2"].state is MemberState.UNRELEASED_PARTITIONS
    # m1 is asked to revoke two partitions, staying at epoch 2.
    r1 = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    kept = assigned(r1)[A]
    assert r1.member_epoch == 2 and len(kept) == 2
    assert h.group(G).members["m1"].state is MemberState.UNREVOKED_PARTITIONS
    # While it still owns them, it stays put.
    same = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    assert same.member_epoch == 2
    # Once revoked it reaches epoch 3; m2 then receives the released partitions.
    r1 = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: kept}))
    assert r1.member_epoch == 3
    r2 = await c.consumer_group_heartbeat(info(1), hb("m2", 3, owned={}))
    assert assigned(r2) == {A: {0, 1, 2, 3} - kept}
    group = h.group(G)
    assert group.state is ConsumerGroupState.STABLE
    assert {m.member_id: m.member_epoch for m in group.members.values()} == {"m1": 3, "m2": 3}
    await h.assert_replay_matches()


@run
async def test_leave_and_fencing():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    await c.consumer_group_heartbeat(info(1), join("m2"))
    ahead = await c.consumer_group_heartbeat(info(1), hb("m2", 9))
    assert ahead.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    unknown = await c.consumer_group_heartbeat(info(1), hb("zz", 3))
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    before = h.log_end(G)
    left = await c.consumer_group_heartbeat(info(1), hb("m2", -1))
    assert (left.error_code, left.member_id, left.member_epoch) == (0, "m2", -1)
    assert types(h.records(G, before)) == ["ConsumerGroupCurrentMemberAssignment-",
                                           "ConsumerGroupTargetAssignmentMember-",
                                           "ConsumerGroupMemberMetadata-", "ConsumerGroupMetadata"]
    r1 = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    # m1 keeps everything it owned: only its epoch moves, so no assignment is sent.
    assert r1.member_epoch == 4 and r1.assignment is None
    assert h.group(G).members["m1"].assigned_partitions == {A: frozenset({0, 1, 2, 3})}
    await h.assert_replay_matches()


@run
async def test_session_timeout_fences_member():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    await c.consumer_group_heartbeat(info(1), join("m2"))
    for _ in range(10):
        await h.advance(5000)
        await c.consumer_group_heartbeat(info(1), hb("m1", h.group(G).members["m1"].member_epoch,
                                                    owned={A: set(h.group(G).members["m1"].assigned_partitions.get(A, ()))}))
    group = h.group(G)
    assert list(group.members) == ["m1"]
    assert group.members["m1"].assigned_partitions == {A: frozenset({0, 1, 2, 3})}
    gone = await c.consumer_group_heartbeat(info(1), hb("m2", 2))
    assert gone.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    # Rejoining with the same member id works (KIP-1082 clients keep their id).
    back = await c.consumer_group_heartbeat(info(1), join("m2"))
    assert back.error_code == 0
    await h.assert_replay_matches()


@run
async def test_request_validation():
    h = Harness()
    c = h.coordinator
    bad = [
        (hb("", 0, topics=["a"], owned={}, rebalance_timeout_ms=1), ErrorCode.INVALID_REQUEST),
        (hb("m", 0, topics=["a"], owned={}), ErrorCode.INVALID_REQUEST),  # no rebalance timeout
        (hb("m", 0, topics=["a"], rebalance_timeout_ms=1), ErrorCode.INVALID_REQUEST),  # owned null
        (hb("m", 0, topics=[], owned={}, rebalance_timeout_ms=1), ErrorCode.INVALID_REQUEST),
        (hb("m", -3), ErrorCode.INVALID_REQUEST),
        (hb("m", -2), ErrorCode.INVALID_REQUEST),  # static leave without instance id
        (join("m", assignor="sticky"), ErrorCode.UNSUPPORTED_ASSIGNOR),
        (hb("m", 0, regex="(", owned={}, rebalance_timeout_ms=1), ErrorCode.INVALID_REGULAR_EXPRESSION),
        (join("m", group_id=""), ErrorCode.INVALID_GROUP_ID),
    ]
    for request, code in bad:
        r = await c.consumer_group_heartbeat(info(1), request)
        assert r.error_code == code, (request, r)
    # v0 lets the coordinator choose the member id.
    r = await c.consumer_group_heartbeat(info(0), join(""))
    assert r.error_code == 0 and r.member_id


@run
async def test_regex_subscription_resolves_and_follows_new_topics():
    h = Harness()
    c = h.coordinator
    r = await c.consumer_group_heartbeat(info(1), hb("m1", 0, regex="[ab]", owned={}, rebalance_timeout_ms=1000))
    assert r.error_code == 0 and assigned(r) == {A: {0, 1, 2, 3}, B: {0, 1}}
    regex_records = [x for x in h.records(G) if type(x.key).__name__ == "ConsumerGroupRegularExpressionKey"]
    assert [(x.key.regular_expression, x.value.topics) for x in regex_records] == [("[ab]", ["a", "b"])]
    import uuid

    from coordinator.group.topics import TopicInfo
    h.topics.add(TopicInfo("d", uuid.UUID(int=0xD), 1))
    h.topics.add(TopicInfo("ab", uuid.UUID(int=0xAB), 1))  # not a full match of [ab]
    same = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: {0, 1, 2, 3}, B: {0, 1}}))
    assert same.member_epoch == 2
    r = await c.consumer_group_heartbeat(info(1), hb("m1", 2, regex="[abd]", owned={A: {0, 1, 2, 3}, B: {0, 1}}))
    assert r.member_epoch == 3 and assigned(r)[uuid.UUID(int=0xD)] == {0}
    await h.assert_replay_matches()


@run
async def test_regex_resolves_only_topics_the_member_may_describe():
    """Kafka 4.1 filters a regex's topics through the authorizer with the heartbeating member's principal."""
    h = Harness()
    c = h.coordinator
    allowed = {"a"}
    seen: list[list[str]] = []

    def describable(names):
        names = sorted(names)
        seen.append(names)
        return {n for n in names if n in allowed}

    member = replace(info(1), describable_topics=describable)
    r = await c.consumer_group_heartbeat(member, hb("m1", 0, regex="[ab]", owned={}, rebalance_timeout_ms=1000))
    assert r.error_code == 0 and assigned(r) == {A: {0, 1, 2, 3}}
    assert seen == [["a", "b"]]
    regex_records = [x for x in h.records(G) if type(x.key).__name__ == "ConsumerGroupRegularExpressionKey"]
    assert [(x.key.regular_expression, x.value.topics) for x in regex_records] == [("[ab]", ["a"])]
    # Once DESCRIBE on b is granted, a heartbeat after the refresh interval resolves b too and the group
    # rebalances (before it, the resolution stands).
    allowed.add("b")
    r = await c.consumer_group_heartbeat(member, hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    assert r.member_epoch == 2 and seen == [["a", "b"]]
    await h.advance(10_000)
    r = await c.consumer_group_heartbeat(member, hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    assert r.member_epoch == 3 and assigned(r) == {A: {0, 1, 2, 3}, B: {0, 1}}
    # Revoked again: b is taken back (the member first revokes it at its epoch, then moves on).
    allowed.discard("b")
    await h.advance(10_000)
    r = await c.consumer_group_heartbeat(member, hb("m1", 3, owned={A: {0, 1, 2, 3}, B: {0, 1}}))
    assert r.member_epoch == 3 and assigned(r) == {A: {0, 1, 2, 3}}
    r = await c.consumer_group_heartbeat(member, hb("m1", 3, owned={A: {0, 1, 2, 3}}))
    assert r.member_epoch == 4
    await h.assert_replay_matches()


@run
async def test_members_seeing_different_topics_do_not_re_resolve_a_shared_regex_on_every_heartbeat():
    """As Kafka, the regex is resolved with the principal of whichever member refreshes it, at most once per
    refresh interval; heartbeats in between leave the resolution and the group epoch alone."""
    h = Harness()
    c = h.coordinator
    narrow = replace(info(1), describable_topics=lambda names: {n for n in names if n == "a"})
    wide = replace(info(1), describable_topics=lambda names: set(names))
    await c.consumer_group_heartbeat(narrow, hb("m1", 0, regex="[ab]", owned={}, rebalance_timeout_ms=1000))
    await c.consumer_group_heartbeat(wide, hb("m2", 0, regex="[ab]", owned={}, rebalance_timeout_ms=1000))
    epoch = h.group(G).group_epoch
    for _ in range(3):
        await c.consumer_group_heartbeat(narrow, hb("m1", h.group(G).members["m1"].member_epoch))
        await c.consumer_group_heartbeat(wide, hb("m2", h.group(G).members["m2"].member_epoch))
    assert h.group(G).group_epoch == epoch
    assert h.group(G).resolved_regexes["[ab]"].topics == {"a"}  # the first resolution stands


@run
async def test_partition_count_change_bumps_epoch():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    h.topics.add(replace(TOPIC_A, num_partitions=6))
    r = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    assert r.member_epoch == 3 and assigned(r) == {A: {0, 1, 2, 3, 4, 5}}


@run
async def test_range_assignor_on_request():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1", topics=("a", "b"), assignor="range"))
    await c.consumer_group_heartbeat(info(1), join("m2", topics=("a", "b"), assignor="range"))
    group = h.group(G)
    assert group.target_of("m1") == {A: frozenset({0, 1}), B: frozenset({0})}
    assert group.target_of("m2") == {A: frozenset({2, 3}), B: frozenset({1})}
    described = (await c.consumer_group_describe(info(0), [G]))[0]
    assert described.assignor_name == "range" and described.group_epoch == 3


@run
async def test_static_member_leaves_temporarily_and_is_replaced_without_rebalance():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1", instance_id="i1"))
    unreleased = await c.consumer_group_heartbeat(info(1), join("m2", instance_id="i1"))
    assert unreleased.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    bye = await c.consumer_group_heartbeat(info(1), hb("m1", -2, instance_id="i1"))
    assert (bye.error_code, bye.member_epoch) == (0, -2)
    epoch = h.group(G).group_epoch
    back = await c.consumer_group_heartbeat(info(1), join("m3", instance_id="i1"))
    assert back.error_code == 0 and back.member_epoch == 2
    assert assigned(back) == {A: {0, 1, 2, 3}}
    assert h.group(G).group_epoch == epoch and list(h.group(G).members) == ["m3"]
    fenced = await c.consumer_group_heartbeat(info(1), hb("m1", 2, instance_id="i1"))
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
    await h.assert_replay_matches()


@run
async def test_offset_commits_of_consumer_members_check_the_member_epoch():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    ok = await c.commit_offsets(info(9), commit(G, {("a", 0): 5}, generation=2, member_id="m1"))
    assert codes(ok) == {("a", 0): 0}
    stale = await c.commit_offsets(info(9), commit(G, {("a", 0): 5}, generation=0, member_id="m1"))
    assert codes(stale) == {("a", 0): ErrorCode.STALE_MEMBER_EPOCH}
    old = await c.commit_offsets(info(8), commit(G, {("a", 0): 5}, generation=2, member_id="m1"))
    assert codes(old) == {("a", 0): ErrorCode.UNSUPPORTED_VERSION}
    fetch = await c.fetch_offsets(info(9), G, [("a", [0])], member_id="m1", member_epoch=0)
    assert fetch.error_code == ErrorCode.STALE_MEMBER_EPOCH


@run
async def test_upgrade_classic_group_then_downgrade_when_the_consumer_member_leaves():
    h = Harness()
    c = h.coordinator
    # A classic group with one consumer-protocol member, Stable.
    j = await c.join_group(info(3, "classic"), join_request(G))
    await c.sync_group(info(3), sync_request(G, j.member_id, 1, {j.member_id: assignment({"a": [0, 1, 2, 3]})}))
    # A KIP-848 member joins: the group becomes a consumer group; the classic member keeps its partitions.
    r = await c.consumer_group_heartbeat(info(1), join("new"))
    assert r.error_code == 0, r
    group = h.group(G)
    assert isinstance(group, ConsumerGroup)
    assert group.members[j.member_id].uses_classic_protocol
    assert group.members[j.member_id].assigned_partitions == {A: frozenset({0, 1, 2, 3})}
    assert types(h.records(G))[-len(types(h.records(G))):].count("GroupMetadata-") == 1
    # The classic member is told to rejoin by its heartbeat, and gets its share by JoinGroup/SyncGroup.
    beat = await c.heartbeat(info(3), HeartbeatRequest(group_id=G, generation_id=1, member_id=j.member_id))
    assert beat.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin = await c.join_group(info(3, "classic"), join_request(G, member_id=j.member_id,
                                                                 protocols=(("range", subscription("a")),)))
    assert rejoin.error_code == 0 and rejoin.protocol_name == "range"
    sync = await c.sync_group(info(3), sync_request(G, j.member_id, rejoin.generation_id))
    assert sync.error_code == 0
    from coordinator.group.embedded_protocol import parse_assignment
    classic_parts = {p for tp in parse_assignment(sync.assignment).assigned_partitions for p in tp.partitions}
    assert 0 < len(classic_parts) <= 4
    await h.assert_replay_matches()
    # The consumer-protocol member leaves: only a classic member remains, so the group is classic again.
    await c.consumer_group_heartbeat(info(1), hb("new", -1))
    assert type(h.group(G)).__name__ == "ClassicGroup"
    assert h.group(G).state.value == "PreparingRebalance"
    await h.assert_replay_matches()


@run
async def test_classic_leave_from_consumer_group():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    j = await c.join_group(info(5, "classic"), join_request(G))
    assert j.error_code == ErrorCode.MEMBER_ID_REQUIRED
    j = await c.join_group(info(5, "classic"), join_request(G, member_id=j.member_id))
    assert j.error_code == 0 and j.protocol_type == "consumer"
    left = await c.leave_group(info(5), LeaveGroupRequest(group_id=G, members=[MemberIdentity(member_id=j.member_id)]))
    assert [(m.member_id, m.error_code) for m in left.members] == [(j.member_id, 0)]
    assert list(h.group(G).members) == ["m1"]
    await h.assert_replay_matches()


@run
async def test_describe_list_and_delete():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    d = (await c.consumer_group_describe(info(0), [G, "missing"]))
    assert d[0].group_state == "Stable" and d[0].members[0].member_id == "m1"
    assert [(tp.topic_name, tp.partitions) for tp in d[0].members[0].assignment.topic_partitions] == [("a", [0, 1, 2, 3])]
    assert d[1].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    code, listed = await c.list_groups(info(5), [], ["consumer"])
    assert code == 0 and [(g.group_id, g.group_type, g.group_state, g.protocol_type) for g in listed] == [
        (G, "consumer", "Stable", "consumer")]
    assert (await c.list_groups(info(5), ["empty"], []))[1] == []
    classic_view = await c.describe_groups(info(6), [G])
    assert classic_view[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert classic_view[0].error_message == f"Group {G} is not a classic group."
    res = await c.delete_groups(info(2), [G])
    assert [(r.group_id, r.error_code) for r in res] == [(G, ErrorCode.NON_EMPTY_GROUP)]
    await c.consumer_group_heartbeat(info(1), hb("m1", -1))
    await c.commit_offsets(info(9), commit(G, {("a", 0): 1}))
    res = await c.delete_groups(info(2), [G, "missing"])
    assert [(r.group_id, r.error_code) for r in res] == [(G, 0), ("missing", ErrorCode.GROUP_ID_NOT_FOUND)]
    assert h.group(G) is None
    assert (await c.fetch_offsets(info(8), G, None)).topics == []
    await h.assert_replay_matches()


@run
async def test_classic_join_replaces_an_empty_consumer_group_and_keeps_its_offsets():
    h = Harness()
    c = h.coordinator
    await c.consumer_group_heartbeat(info(1), join("m1"))
    await c.commit_offsets(info(9), commit(G, {("a", 0): 3}, generation=2, member_id="m1"))
    await c.consumer_group_heartbeat(info(1), hb("m1", -1))
    assert h.group(G).is_empty
    j = await c.join_group(info(3, "classic"), join_request(G))
    assert j.error_code == 0 and j.generation_id == 1
    assert type(h.group(G)).__name__ == "ClassicGroup"
    fetched_group = await c.fetch_offsets(info(8), G, [("a", [0])])
    assert fetched_group.topics[0].partitions[0].committed_offset == 3
    wrong = await c.join_group(info(3, "x"), join_request(G, protocol_type="connect"))
    assert wrong.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    await c.sync_group(info(3), sync_request(G, j.member_id, 1, {j.member_id: assignment({"a": [0]})}))
    await h.assert_replay_matches()


@run
async def test_a_new_target_assignment_waits_for_the_assignment_interval():
    """KIP-1263 (Kafka 4.3): with the default consumer.assignment.interval.ms of 1 s, a member joining within it
    of the last assignment gets that assignment's epoch and nothing; a heartbeat after it computes the next one.
    A group that became empty assigns its next member at once."""
    from coordinator.group.config import GroupCoordinatorConfig
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=0))
    c = h.coordinator
    first = await c.consumer_group_heartbeat(info(1), join("m1"))
    assert (first.member_epoch, assigned(first)) == (2, {A: {0, 1, 2, 3}})
    second = await c.consumer_group_heartbeat(info(1), join("m2"))
    assert (second.member_epoch, assigned(second)) == (2, {})
    group = h.group(G)
    assert (group.group_epoch, group.assignment_epoch, group.state) == (3, 2, ConsumerGroupState.ASSIGNING)
    await h.advance(999)
    early = await c.consumer_group_heartbeat(info(1), hb("m2", 2))
    assert early.member_epoch == 2 and h.group(G).assignment_epoch == 2
    await h.advance(1)
    due = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={A: {0, 1, 2, 3}}))
    assert due.member_epoch == 2 and len(assigned(due)[A]) == 2  # revoking two partitions for m2
    assert h.group(G).assignment_epoch == 3
    assert h.group(G).assignment_timestamp == h.clock.now_ms()
    for member in ("m1", "m2"):
        await c.consumer_group_heartbeat(info(1), hb(member, -1))
    assert h.group(G).is_empty and h.group(G).assignment_timestamp == 0
    again = await c.consumer_group_heartbeat(info(1), join("m3"))
    assert again.member_epoch == h.group(G).group_epoch and assigned(again) == {A: {0, 1, 2, 3}}
    await h.assert_replay_matches()


@run
async def test_a_member_that_resubscribes_gives_up_the_topics_it_left_at_once():
    """A member that changes its subscription within consumer.assignment.interval.ms of the last assignment is
    asked at once, at its epoch, to revoke the partitions of the topics it left, and stays at that epoch with
    nothing once it has; the next target assignment gives it the new topic after the interval. Kafka 4.4 answers so
    (raw heartbeats against a Kafka 4.4 node: [] at epoch 2, then b at epoch 3 a second later); pykbroker kept the
    topic it had left until the interval passed."""
    from coordinator.group.config import GroupCoordinatorConfig
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=0))
    c = h.coordinator
    first = await c.consumer_group_heartbeat(info(1), join("m1"))
    assert (first.member_epoch, assigned(first)) == (2, {A: {0, 1, 2, 3}})
    moved = await c.consumer_group_heartbeat(info(1), hb("m1", 2, topics=["b"], owned={A: {0, 1, 2, 3}},
                                                             rebalance_timeout_ms=30_000))
    assert (moved.member_epoch, assigned(moved)) == (2, {})
    revoked = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={}))
    assert (revoked.member_epoch, assigned(revoked)) == (2, None)
    assert h.group(G).members["m1"].state is MemberState.STABLE
    await h.advance(1000)
    due = await c.consumer_group_heartbeat(info(1), hb("m1", 2, owned={}))
    assert (due.member_epoch, assigned(due)) == (3, {B: {0, 1}})
    await h.assert_replay_matches()
