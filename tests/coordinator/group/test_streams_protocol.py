"""StreamsGroupHeartbeat on the group coordinator (KIP-1071): join with a topology, tasks spread over members,
revocation before reassignment, leave, topology errors and status; every step's records replay to the same state.
A new group starts at epoch 1, so its first member joins at epoch 2, as on Kafka 4.4 (the differential scenarios
of compat_tests/test_differential_streams_groups.py judge the same conversations by Kafka itself)."""

from __future__ import annotations

from coordinator.group.streams_topology import StatusCode
from tests.coordinator.group.helpers import Harness, info, run
from wire import ErrorCode
from wire.messages import StreamsGroupHeartbeatRequest
from wire.messages import streams_group_heartbeat_request as req

GROUP = "app"


def topology(epoch: int = 1, source: str = "a", repartition: str | None = None) -> req.Topology:
    subs = [req.Subtopology(subtopology_id="0", source_topics=[source])]
    if repartition is not None:
        subs.append(req.Subtopology(subtopology_id="1", repartition_source_topics=[
            req.TopicInfo(name=repartition, partitions=2)]))
    return req.Topology(epoch=epoch, subtopologies=subs)


def join(member: str, process: str | None = None, topo: req.Topology | None = None,
         **fields) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(group_id=GROUP, member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
                                        topology=topo or topology(), process_id=process or f"p-{member}",
                                        active_tasks=[], standby_tasks=[], warmup_tasks=[], **fields)


def hb(member: str, epoch: int, active: dict[str, list[int]] | None = None, **fields) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(
        group_id=GROUP, member_id=member, member_epoch=epoch,
        active_tasks=None if active is None else [req.TaskIds(subtopology_id=s, partitions=p)
                                                  for s, p in sorted(active.items())],
        standby_tasks=None if active is None else [], warmup_tasks=None if active is None else [], **fields)


def tasks(ids) -> dict[str, list[int]]:
    return {t.subtopology_id: list(t.partitions) for t in ids or ()}


@run
async def test_one_member_gets_every_task_then_shares_them_after_revocation():
    h = Harness()
    c = h.coordinator
    r1 = await c.streams_group_heartbeat(info(0), join("m1"))
    assert r1.error_code == ErrorCode.NONE and r1.member_epoch == 2
    assert tasks(r1.active_tasks) == {"0": [0, 1, 2, 3]} and not r1.status
    assert (r1.heartbeat_interval_ms, r1.task_offset_interval_ms, r1.acceptable_recovery_lag) == (5000, 60000, 10000)
    g = h.shard(GROUP).streams.groups[GROUP]
    assert g.group_epoch == 2 and g.topology.epoch == 1 and g.members["m1"].metadata.process_id == "p-m1"
    assert g.members["m1"].state == 1  # Kafka's MemberState.STABLE

    r2 = await c.streams_group_heartbeat(info(0), join("m2"))
    assert r2.member_epoch == 3 and tasks(r2.active_tasks) == {}  # its tasks are still m1's: withheld
    assert h.shard(GROUP).streams.groups[GROUP].members["m2"].state == 3  # UNRELEASED_TASKS
    # m1 must give two tasks up first, at its epoch
    r1 = await c.streams_group_heartbeat(info(0), hb("m1", 2, {"0": [0, 1, 2, 3]}))
    assert r1.member_epoch == 2 and tasks(r1.active_tasks) == {"0": [0, 1]}
    assert h.shard(GROUP).streams.groups[GROUP].members["m1"].state == 2  # UNREVOKED_TASKS
    r1 = await c.streams_group_heartbeat(info(0), hb("m1", 2, {"0": [0, 1]}))
    assert r1.member_epoch == 3
    r2 = await c.streams_group_heartbeat(info(0), hb("m2", 3, {}))
    assert r2.member_epoch == 3 and tasks(r2.active_tasks) == {"0": [2, 3]}
    await h.assert_replay_matches()

    # m2 leaves: the epoch moves at once, m1's next heartbeat gets every task back
    left = await c.streams_group_heartbeat(info(0), hb("m2", -1, {}))
    assert left.error_code == ErrorCode.NONE and left.member_epoch == -1
    g = h.shard(GROUP).streams.groups[GROUP]
    assert (g.group_epoch, g.target_assignment_epoch) == (4, 3)
    r1 = await c.streams_group_heartbeat(info(0), hb("m1", 3, {"0": [0, 1]}))
    assert r1.member_epoch == 4 and tasks(r1.active_tasks) == {"0": [0, 1, 2, 3]}
    assert set(h.shard(GROUP).streams.groups[GROUP].members) == {"m1"}
    await h.assert_replay_matches()
    await c.close()


@run
async def test_standby_tasks_go_to_another_process():
    from dataclasses import replace

    from tests.coordinator.group.helpers import CONFIG

    h = Harness(replace(CONFIG, streams_group_num_standby_replicas=1))  # group.streams.num.standby.replicas
    c = h.coordinator
    await c.streams_group_heartbeat(info(0), join("m1"))
    await c.streams_group_heartbeat(info(0), join("m2"))
    g = h.shard(GROUP).streams.groups[GROUP]
    assert all(not t.standby for t in g.target_assignment.values())  # a stateless task has no standby

    stateful = topology()
    stateful.subtopologies[0].state_changelog_topics = [req.TopicInfo(name="b")]  # an existing topic: no creation
    for member in ("s1", "s2"):
        request = join(member, topo=stateful)
        request.group_id = "stateful"
        await c.streams_group_heartbeat(info(0), request)
    g = h.shard("stateful").streams.groups["stateful"]
    t1, t2 = g.target_assignment["s1"], g.target_assignment["s2"]
    assert t1.active and t2.active and t1.standby == t2.active and t2.standby == t1.active
    await c.close()


@run
async def test_missing_source_and_internal_topics_are_a_status_without_tasks():
    h = Harness()
    c = h.coordinator
    r = await c.streams_group_heartbeat(info(0), join("m1", topo=topology(source="nope")))
    assert r.error_code == ErrorCode.NONE and tasks(r.active_tasks) == {}
    assert [(s.status_code, s.status_detail) for s in r.status] == [
        (StatusCode.MISSING_SOURCE_TOPICS, "Source topics nope are missing.")]
    request = join("m2", topo=topology(repartition="app-rep"))
    request.group_id = "other"
    r = await c.streams_group_heartbeat(info(0), request)
    assert [s.status_code for s in r.status] == [StatusCode.MISSING_INTERNAL_TOPICS]
    await c.close()


@run
async def test_topology_and_request_errors():
    h = Harness()
    c = h.coordinator
    bad = req.Topology(epoch=3, subtopologies=[req.Subtopology(subtopology_id="0"), ])
    r = await c.streams_group_heartbeat(info(0), join("m1", topo=bad))
    assert r.error_code == ErrorCode.STREAMS_INVALID_TOPOLOGY
    await c.streams_group_heartbeat(info(0), join("m1", topo=topology(epoch=2)))
    # Kafka 4.4: an older topology is a status, another one at the same or a newer epoch is refused
    r = await c.streams_group_heartbeat(info(0), join("m2", topo=topology(epoch=1)))
    assert r.error_code == ErrorCode.NONE and [(s.status_code, s.status_detail) for s in r.status] == [
        (StatusCode.STABLE_TOPOLOGY, "The member's topology epoch 1 is behind the group's topology epoch 2.")]
    for epoch in (2, 3):
        r = await c.streams_group_heartbeat(info(0), join("m3", topo=topology(epoch=epoch, source="b")))
        assert (r.error_code, r.error_message) == (ErrorCode.INVALID_REQUEST, "Topology updates are not supported yet.")
    assert (await c.streams_group_heartbeat(info(0), hb("m9", 2))).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert (await c.streams_group_heartbeat(info(0), hb("m1", 7))).error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert (await c.streams_group_heartbeat(info(0), hb("", 0))).error_code == ErrorCode.INVALID_REQUEST
    no_topology = join("m3")
    no_topology.topology = None
    assert (await c.streams_group_heartbeat(info(0), no_topology)).error_code == ErrorCode.INVALID_REQUEST
    await c.close()


@run
async def test_offset_commits_and_fetches_are_checked_against_the_member_epoch():
    from tests.coordinator.group.test_offsets import codes, commit, fetched

    h = Harness()
    c = h.coordinator
    await c.streams_group_heartbeat(info(0), join("m1"))
    ok = await c.commit_offsets(info(9), commit(GROUP, {("a", 0): 10}, generation=2, member_id="m1"))
    assert codes(ok) == {("a", 0): ErrorCode.NONE}
    stale = await c.commit_offsets(info(9), commit(GROUP, {("a", 0): 11}, generation=1, member_id="m1"))
    assert codes(stale) == {("a", 0): ErrorCode.STALE_MEMBER_EPOCH}
    unknown = await c.commit_offsets(info(9), commit(GROUP, {("a", 0): 11}, generation=2, member_id="m9"))
    assert codes(unknown) == {("a", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert (await fetched(h, GROUP, member_id="m1", member_epoch=2))[("a", 0)][0] == 10
    assert (await fetched(h, GROUP))[("a", 0)][0] == 10  # an admin's fetch
    _, listed = await c.list_groups(info(5), [], [])
    assert [(g.group_id, g.group_type) for g in listed] == [(GROUP, "streams")]  # no simple group beside it
    await h.assert_replay_matches()
    await c.close()


@run
async def test_a_member_without_heartbeats_is_fenced_after_the_session_timeout():
    h = Harness()
    c = h.coordinator
    await c.streams_group_heartbeat(info(0), join("m1"))
    await c.streams_group_heartbeat(info(0), join("m2"))
    await c.streams_group_heartbeat(info(0), hb("m1", 2, {"0": [0, 1, 2, 3]}))
    await c.streams_group_heartbeat(info(0), hb("m1", 2, {"0": [0, 1]}))
    await h.advance(30_000)
    await c.streams_group_heartbeat(info(0), hb("m1", 3, {"0": [0, 1]}))  # m1 keeps its session, m2 does not
    await h.advance(20_000)
    g = h.shard(GROUP).streams.groups[GROUP]
    assert set(g.members) == {"m1"} and g.group_epoch == 4
    r = await c.streams_group_heartbeat(info(0), hb("m1", 3, {"0": [0, 1]}))
    assert r.member_epoch == 4 and tasks(r.active_tasks) == {"0": [0, 1, 2, 3]}
    assert (await c.streams_group_heartbeat(info(0), hb("m2", 3, {}))).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    await h.assert_replay_matches()
    await c.close()


@run
async def test_a_streams_group_replaces_a_simple_group_and_refuses_a_consumer_groups_id():
    from tests.coordinator.group.test_offsets import commit, fetched
    from wire.messages import ConsumerGroupHeartbeatRequest

    h = Harness()
    c = h.coordinator
    await c.commit_offsets(info(9), commit(GROUP, {("a", 0): 7}))  # an admin's commit: a simple group
    await c.streams_group_heartbeat(info(0), join("m1"))
    _, listed = await c.list_groups(info(5), [], [])
    assert [(g.group_id, g.group_type) for g in listed] == [(GROUP, "streams")]
    assert (await fetched(h, GROUP, member_id="m1", member_epoch=2))[("a", 0)][0] == 7
    await h.assert_replay_matches()

    await c.consumer_group_heartbeat(info(1), ConsumerGroupHeartbeatRequest(
        group_id="cg", member_id="c1", member_epoch=0, rebalance_timeout_ms=30000, subscribed_topic_names=["a"],
        topic_partitions=[]))
    r = await c.streams_group_heartbeat(info(0), StreamsGroupHeartbeatRequest(
        group_id="cg", member_id="m1", member_epoch=0, rebalance_timeout_ms=30000, topology=topology(),
        process_id="p"))
    assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group cg is not a streams group.")
    await c.close()
