"""Classic groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup on a fake clock; responses, records, replay."""

from __future__ import annotations

import asyncio

from coordinator.group.classic_group import ClassicGroupState
from coordinator.group.config import GroupCoordinatorConfig
from tests.coordinator.group.helpers import (
    Harness,
    assignment,
    info,
    join_request,
    run,
    subscription,
    sync_request,
    types,
)
from wire import ErrorCode
from wire.messages import HeartbeatRequest, LeaveGroupRequest
from wire.messages.leave_group_request import MemberIdentity

G = "group-1"


async def join_two(h: Harness, version: int = 5):
    """Two dynamic members join together (after the v4+ member id handshake); responses, leader first."""
    c = h.coordinator
    ids = ["", ""]
    if version >= 4:
        for i, client in enumerate(("c1", "c2")):
            r = await c.join_group(info(version, client), join_request(G))
            assert r.error_code == ErrorCode.MEMBER_ID_REQUIRED
            ids[i] = r.member_id
    t1 = h.spawn(c.join_group(info(version, "c1"), join_request(G, member_id=ids[0])))
    t2 = h.spawn(c.join_group(info(version, "c2"), join_request(G, member_id=ids[1])))
    await h.settle()
    return await t1, await t2


@run
async def test_first_member_gets_member_id_required_on_v4_and_joins_with_it():
    h = Harness()
    c = h.coordinator
    r = await c.join_group(info(4, "c1"), join_request(G))
    assert r.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert r.member_id.startswith("c1-")
    group = h.group(G)
    assert group.is_pending_member(r.member_id)
    # The new (empty) group is written to the log right away.
    assert types(h.records(G)) == ["GroupMetadata"]
    r2 = await c.join_group(info(4, "c1"), join_request(G, member_id=r.member_id))
    assert r2.error_code == ErrorCode.NONE
    assert r2.member_id == r.member_id and r2.leader == r.member_id and r2.generation_id == 1
    assert r2.protocol_name == "range" and r2.protocol_type == "consumer"
    assert [m.member_id for m in r2.members] == [r.member_id]
    assert group.state is ClassicGroupState.COMPLETING_REBALANCE


@run
async def test_join_sync_stable_and_records():
    h = Harness()
    c = h.coordinator
    r1, r2 = await join_two(h)
    assert r1.error_code == r2.error_code == ErrorCode.NONE
    assert r1.generation_id == r2.generation_id == 1
    assert r1.leader == r2.leader == r1.member_id
    assert {m.member_id for m in r1.members} == {r1.member_id, r2.member_id}
    assert r2.members == []
    before = h.log_end(G)
    follower = h.spawn(c.sync_group(info(5), sync_request(G, r2.member_id, 1)))
    await h.settle()
    assert not follower.done()
    a1, a2 = assignment({"a": [0, 1]}), assignment({"a": [2, 3]})
    s1 = await c.sync_group(info(5), sync_request(G, r1.member_id, 1, {r1.member_id: a1, r2.member_id: a2},
                                                  protocol_type="consumer", protocol_name="range"))
    s2 = await follower
    assert (s1.error_code, s1.assignment, s1.protocol_name, s1.protocol_type) == (0, a1, "range", "consumer")
    assert (s2.error_code, s2.assignment) == (0, a2)
    assert h.group(G).state is ClassicGroupState.STABLE
    written = h.records(G, before)
    assert types(written) == ["GroupMetadata"]
    value = written[0].value
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == ("consumer", 1, "range",
                                                                                      r1.member_id)
    assert {(m.member_id, m.assignment, m.subscription) for m in value.members} == {
        (r1.member_id, a1, subscription("a")), (r2.member_id, a2, subscription("a"))}
    assert written[0].value_version == 3
    # Heartbeats are fine; SyncGroup again returns the stored assignment.
    hb = await c.heartbeat(info(4), HeartbeatRequest(group_id=G, generation_id=1, member_id=r2.member_id))
    assert hb.error_code == ErrorCode.NONE
    again = await c.sync_group(info(5), sync_request(G, r2.member_id, 1))
    assert again.assignment == a2
    await h.assert_replay_matches()


@run
async def test_sync_checks_generation_protocol_and_membership():
    h = Harness()
    c = h.coordinator
    r1, r2 = await join_two(h)
    bad_gen = await c.sync_group(info(5), sync_request(G, r1.member_id, 7))
    assert bad_gen.error_code == ErrorCode.ILLEGAL_GENERATION
    bad_type = await c.sync_group(info(5), sync_request(G, r1.member_id, 1, protocol_type="connect"))
    assert bad_type.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    bad_name = await c.sync_group(info(5), sync_request(G, r1.member_id, 1, protocol_name="roundrobin"))
    assert bad_name.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    unknown = await c.sync_group(info(5), sync_request(G, "nobody", 1))
    assert unknown.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    no_group = await c.sync_group(info(5), sync_request("other", "x", 1))
    assert no_group.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    empty_id = await c.sync_group(info(5), sync_request("", "x", 1))
    assert empty_id.error_code == ErrorCode.INVALID_GROUP_ID


@run
async def test_protocol_selection_picks_protocol_all_support_by_vote():
    h = Harness()
    c = h.coordinator
    t1 = h.spawn(c.join_group(info(3, "c1"), join_request(G, protocols=(("roundrobin", None), ("range", None)))))
    t2 = h.spawn(c.join_group(info(3, "c2"), join_request(G, protocols=(("range", None), ("sticky", None)))))
    await h.settle()
    r1, r2 = await t1, await t2
    assert r1.protocol_name == r2.protocol_name == "range"
    # A member supporting none of the group's protocols is refused.
    r3 = await c.join_group(info(3, "c3"), join_request(G, protocols=(("sticky", None),)))
    assert r3.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    r4 = await c.join_group(info(3, "c4"), join_request(G, protocol_type="connect"))
    assert r4.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


@run
async def test_session_timeout_bounds():
    h = Harness()
    r = await h.coordinator.join_group(info(5), join_request(G, session_timeout_ms=10))
    assert r.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    r = await h.coordinator.join_group(info(5), join_request(G, session_timeout_ms=10**8))
    assert r.error_code == ErrorCode.INVALID_SESSION_TIMEOUT
    r = await h.coordinator.join_group(info(5), join_request(""))
    assert r.error_code == ErrorCode.INVALID_GROUP_ID


@run
async def test_initial_rebalance_delay_waits_for_more_members():
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=3000))
    c = h.coordinator
    t1 = h.spawn(c.join_group(info(3, "c1"), join_request(G)))
    await h.advance(2000)
    assert not t1.done()
    t2 = h.spawn(c.join_group(info(3, "c2"), join_request(G)))
    await h.advance(2000)  # 4000 ms in: the delay was extended by another 3000 ms because c2 joined
    assert not t1.done()
    await h.advance(2000)
    r1, r2 = await t1, await t2
    assert r1.generation_id == r2.generation_id == 1
    assert len(r1.members) == 2


@run
async def test_new_member_triggers_rebalance_and_missing_member_is_dropped_after_rebalance_timeout():
    h = Harness()
    c = h.coordinator
    r1, r2 = await join_two(h)
    await c.sync_group(info(5), sync_request(G, r1.member_id, 1, {}))
    # A third member joins: the group prepares a rebalance; heartbeats say so.
    t3 = h.spawn(c.join_group(info(3, "c3"), join_request(G)))
    await h.settle()
    assert h.group(G).state is ClassicGroupState.PREPARING_REBALANCE
    hb = await c.heartbeat(info(4), HeartbeatRequest(group_id=G, generation_id=1, member_id=r2.member_id))
    assert hb.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    s = await c.sync_group(info(5), sync_request(G, r2.member_id, 1))
    assert s.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    # Only the leader rejoins; c2 is dropped when the rebalance timeout (30 s) passes.
    t1 = h.spawn(c.join_group(info(3, "c1"), join_request(G, member_id=r1.member_id)))
    for _ in range(5):
        # c2 stays alive (heartbeats) but does not rejoin.
        await h.advance(5000)
        hb = await c.heartbeat(info(4), HeartbeatRequest(group_id=G, generation_id=1, member_id=r2.member_id))
        assert hb.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    await h.advance(4000)
    assert not t1.done()
    await h.advance(1000)
    j1, j3 = await t1, await t3
    assert j1.generation_id == j3.generation_id == 2
    assert {m.member_id for m in j1.members} == {r1.member_id, j3.member_id}
    assert r2.member_id not in h.group(G).members


@run
async def test_session_timeout_removes_member_and_rebalances():
    h = Harness()
    c = h.coordinator
    r1, r2 = await join_two(h)
    await c.sync_group(info(5), sync_request(G, r1.member_id, 1, {}))
    await c.sync_group(info(5), sync_request(G, r2.member_id, 1))
    for _ in range(3):
        await h.advance(6000)
        await c.heartbeat(info(4), HeartbeatRequest(group_id=G, generation_id=1, member_id=r1.member_id))
    # r2 never heartbeats: after 10 s it is gone and the group rebalances without it.
    assert r2.member_id not in h.group(G).members
    assert h.group(G).state is ClassicGroupState.PREPARING_REBALANCE
    hb = await c.heartbeat(info(4), HeartbeatRequest(group_id=G, generation_id=1, member_id=r2.member_id))
    assert hb.error_code == ErrorCode.UNKNOWN_MEMBER_ID


@run
async def test_leave_group_batched_and_to_empty_writes_empty_group():
    h = Harness()
    c = h.coordinator
    r1, r2 = await join_two(h, version=5)
    await c.sync_group(info(5), sync_request(G, r1.member_id, 1, {}))
    before = h.log_end(G)
    resp = await c.leave_group(info(5), LeaveGroupRequest(group_id=G, members=[
        MemberIdentity(member_id=r1.member_id), MemberIdentity(member_id=r2.member_id),
        MemberIdentity(member_id="ghost")]))
    assert [(m.member_id, m.error_code) for m in resp.members] == [
        (r1.member_id, 0), (r2.member_id, 0), ("ghost", ErrorCode.UNKNOWN_MEMBER_ID)]
    await h.settle()
    group = h.group(G)
    assert group.state is ClassicGroupState.EMPTY and group.generation_id == 2
    written = h.records(G, before)
    assert types(written) == ["GroupMetadata"]
    assert written[0].value.members == [] and written[0].value.generation == 2
    unknown = await c.leave_group(info(5), LeaveGroupRequest(group_id="nope", members=[MemberIdentity(member_id="m")]))
    assert [(m.member_id, m.error_code) for m in unknown.members] == [("m", ErrorCode.UNKNOWN_MEMBER_ID)]
    await h.assert_replay_matches()


@run
async def test_static_member_rejoin_without_rebalance_and_fencing():
    h = Harness()
    c = h.coordinator
    t1 = h.spawn(c.join_group(info(5, "c1"), join_request(G, instance_id="i1")))
    t2 = h.spawn(c.join_group(info(5, "c2"), join_request(G, instance_id="i2")))
    await h.settle()
    r1, r2 = await t1, await t2
    assert r1.member_id.startswith("i1-")
    await c.sync_group(info(5), sync_request(G, r1.member_id, 1, {r1.member_id: b"A1", r2.member_id: b"A2"},
                                             instance_id="i1"))
    # i2 restarts and rejoins with an unknown member id: it takes its old place, no rebalance.
    r2b = await c.join_group(info(5, "c2"), join_request(G, instance_id="i2"))
    assert r2b.error_code == ErrorCode.NONE and r2b.member_id != r2.member_id
    assert r2b.generation_id == 1
    assert h.group(G).state is ClassicGroupState.STABLE
    s = await c.sync_group(info(5), sync_request(G, r2b.member_id, 1, instance_id="i2"))
    assert s.assignment == b"A2"
    # The old member id is fenced.
    hb = await c.heartbeat(info(4), HeartbeatRequest(group_id=G, generation_id=1, member_id=r2.member_id,
                                                     group_instance_id="i2"))
    assert hb.error_code == ErrorCode.FENCED_INSTANCE_ID
    await h.assert_replay_matches()


@run
async def test_group_max_size():
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=0,
                                       group_max_size=1))
    c = h.coordinator
    r1 = await c.join_group(info(3, "c1"), join_request(G))
    assert r1.error_code == ErrorCode.NONE
    await c.sync_group(info(5), sync_request(G, r1.member_id, 1, {}))
    r2 = await c.join_group(info(3, "c2"), join_request(G))
    assert r2.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


@run
async def test_pending_member_expires():
    h = Harness()
    r = await h.coordinator.join_group(info(4, "c1"), join_request(G))
    assert h.group(G).is_pending_member(r.member_id)
    await h.advance(10_001)
    assert not h.group(G).is_pending_member(r.member_id)


@run
async def test_v0_join_uses_session_timeout_as_rebalance_timeout():
    h = Harness()
    req = join_request(G)
    req.rebalance_timeout_ms = -1
    r = await h.coordinator.join_group(info(0, "c1"), req)
    assert r.error_code == ErrorCode.NONE
    assert h.group(G).members[r.member_id].rebalance_timeout_ms == 10_000


@run
async def test_a_parked_join_whose_connection_closed_does_not_break_the_rebalance():
    h = Harness()
    c = h.coordinator
    r1 = await c.join_group(info(3, "c1"), join_request(G))
    await c.sync_group(info(3), sync_request(G, r1.member_id, 1, {}))
    t2 = h.spawn(c.join_group(info(3, "c2"), join_request(G)))
    await h.settle()
    t2.cancel()  # the client's connection closed while its JoinGroup was parked
    await asyncio.sleep(0)
    j1 = await c.join_group(info(3, "c1"), join_request(G, member_id=r1.member_id))
    assert j1.error_code == ErrorCode.NONE and j1.generation_id == 2 and len(j1.members) == 2


async def stable_pair(h: Harness):
    c = h.coordinator
    r1, r2 = await join_two(h, version=3)
    follower = h.spawn(c.sync_group(info(3), sync_request(G, r2.member_id, 1)))
    await c.sync_group(info(3), sync_request(G, r1.member_id, 1, {r1.member_id: b"L", r2.member_id: b"F"}))
    await follower
    return r1, r2


@run
async def test_leader_rejoin_forces_rebalance_but_follower_with_same_metadata_does_not():
    h = Harness()
    c = h.coordinator
    r1, r2 = await stable_pair(h)
    same = await c.join_group(info(3), join_request(G, member_id=r2.member_id))
    assert (same.error_code, same.generation_id, same.members) == (0, 1, [])
    assert h.group(G).state is ClassicGroupState.STABLE
    t1 = h.spawn(c.join_group(info(3), join_request(G, member_id=r1.member_id)))
    await h.settle()
    assert h.group(G).state is ClassicGroupState.PREPARING_REBALANCE
    t2 = h.spawn(c.join_group(info(3), join_request(G, member_id=r2.member_id)))
    await h.settle()
    j1, j2 = await t1, await t2
    assert j1.generation_id == j2.generation_id == 2


@run
async def test_member_missing_its_sync_is_removed_after_the_rebalance_timeout():
    h = Harness()
    c = h.coordinator
    r1, r2 = await join_two(h, version=3)
    await c.sync_group(info(3), sync_request(G, r1.member_id, 1, {}))
    # r2 never sends SyncGroup (it keeps heartbeating): after the rebalance timeout it is dropped.
    for _ in range(6):
        await h.advance(5000)
        await c.heartbeat(info(3), HeartbeatRequest(group_id=G, generation_id=1, member_id=r1.member_id))
        await c.heartbeat(info(3), HeartbeatRequest(group_id=G, generation_id=1, member_id=r2.member_id))
    assert r2.member_id not in h.group(G).members
    assert h.group(G).state is ClassicGroupState.PREPARING_REBALANCE


@run
async def test_static_member_removed_by_instance_id_alone():
    h = Harness()
    c = h.coordinator
    t = h.spawn(c.join_group(info(5, "c1"), join_request(G, instance_id="i1")))
    await h.settle()
    r = await t
    await c.sync_group(info(5), sync_request(G, r.member_id, 1, {}, instance_id="i1"))
    resp = await c.leave_group(info(5), LeaveGroupRequest(group_id=G, members=[
        MemberIdentity(member_id="", group_instance_id="i1"), MemberIdentity(member_id="", group_instance_id="i9")]))
    assert [(m.group_instance_id, m.error_code) for m in resp.members] == [("i1", 0), ("i9", ErrorCode.UNKNOWN_MEMBER_ID)]
    await h.settle()
    assert h.group(G).state is ClassicGroupState.EMPTY


@run
async def test_static_leader_rejoining_on_v9_skips_assignment():
    h = Harness()
    c = h.coordinator
    t = h.spawn(c.join_group(info(9, "c1"), join_request(G, instance_id="i1")))
    await h.settle()
    r = await t
    await c.sync_group(info(9), sync_request(G, r.member_id, 1, {r.member_id: b"mine"}, instance_id="i1"))
    again = await c.join_group(info(9, "c1"), join_request(G, instance_id="i1"))
    assert again.error_code == 0 and again.skip_assignment and again.leader == again.member_id
    assert len(again.members) == 1 and again.generation_id == 1
    s = await c.sync_group(info(9), sync_request(G, again.member_id, 1, instance_id="i1"))
    assert s.assignment == b"mine"


@run
async def test_unloading_answers_parked_requests_with_not_coordinator():
    h = Harness()
    c = h.coordinator
    r1 = await c.join_group(info(3, "c1"), join_request(G))
    await c.sync_group(info(3), sync_request(G, r1.member_id, 1, {}))
    t2 = h.spawn(c.join_group(info(3, "c2"), join_request(G)))
    await h.settle()
    await c.on_resignation(c.partition_for(G))
    r2 = await t2
    assert r2.error_code == ErrorCode.NOT_COORDINATOR
    # Still the partition's leader: the next request loads it again from the log, where the group is
    # Stable at generation 1 (the rebalance in progress was not durable).
    late = await c.heartbeat(info(3), HeartbeatRequest(group_id=G, generation_id=1, member_id=r1.member_id))
    assert late.error_code == 0


@run
async def test_a_join_phase_waits_for_a_pending_member_but_the_initial_join_does_not():
    """KIP-394: a member that got MEMBER_ID_REQUIRED is known; later join phases wait for it to rejoin (or for
    the rebalance timeout), while the initial delayed join completes without it (Kafka's hasAllMembersJoined)."""
    h = Harness(GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=3000))
    c = h.coordinator
    first = await c.join_group(info(5, "c1"), join_request(G))
    pending = await c.join_group(info(5, "c2"), join_request(G))
    assert first.error_code == pending.error_code == ErrorCode.MEMBER_ID_REQUIRED
    t1 = h.spawn(c.join_group(info(5, "c1"), join_request(G, member_id=first.member_id)))
    await h.advance(3000)
    r1 = await t1
    assert (r1.generation_id, [m.member_id for m in r1.members]) == (1, [first.member_id])
    await c.sync_group(info(5), sync_request(G, first.member_id, 1, {}))
    # The leader rejoins: the join phase now waits for the pending member too.
    t1 = h.spawn(c.join_group(info(5, "c1"), join_request(G, member_id=first.member_id)))
    await h.advance(1000)
    assert not t1.done()
    t2 = h.spawn(c.join_group(info(5, "c2"), join_request(G, member_id=pending.member_id)))
    await h.settle()
    r1, r2 = await t1, await t2
    assert r1.generation_id == r2.generation_id == 2
    assert sorted(m.member_id for m in r1.members) == sorted([first.member_id, pending.member_id])
