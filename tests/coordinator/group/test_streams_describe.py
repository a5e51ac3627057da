"""StreamsGroupDescribe, ListGroups and DescribeGroups on a streams group (KIP-1071)."""

from __future__ import annotations

from tests.coordinator.group.helpers import Harness, info, run
from tests.coordinator.group.test_streams_protocol import GROUP, hb, join, topology
from wire import ErrorCode


@run
async def test_describe_shows_topology_members_and_assignments():
    h = Harness()
    c = h.coordinator
    await c.streams_group_heartbeat(info(0, "client-1"), join("m1"))
    [d] = await c.streams_group_describe(info(0), [GROUP])
    assert d.error_code == ErrorCode.NONE and d.group_state == "Stable"
    assert (d.group_epoch, d.assignment_epoch, d.assignor_name) == (2, 2, "sticky")
    assert d.topology.epoch == 1 and [s.source_topics for s in d.topology.subtopologies] == [["a"]]
    [m] = d.members
    assert (m.member_id, m.member_epoch, m.process_id, m.client_id, m.topology_epoch) == ("m1", 2, "p-m1", "client-1", 1)
    assert [(t.subtopology_id, t.partitions) for t in m.assignment.active_tasks] == [("0", [0, 1, 2, 3])]
    assert m.target_assignment == m.assignment

    await c.streams_group_heartbeat(info(0), join("m2"))
    [d] = await c.streams_group_describe(info(0), [GROUP])
    assert d.group_state == "Reconciling" and len(d.members) == 2
    await c.streams_group_heartbeat(info(0), hb("m1", 2, {"0": [0, 1, 2, 3]}))
    await c.streams_group_heartbeat(info(0), hb("m1", 2, {"0": [0, 1]}))
    await c.streams_group_heartbeat(info(0), hb("m2", 3, {}))
    [d] = await c.streams_group_describe(info(0), [GROUP])
    assert d.group_state == "Stable"

    missing, empty = await c.streams_group_describe(info(0), ["nope", ""])
    assert (missing.error_code, missing.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group nope not found.")
    assert empty.error_code == ErrorCode.INVALID_GROUP_ID
    await c.close()


@run
async def test_list_groups_has_type_streams_and_describe_groups_refuses_it():
    h = Harness()
    c = h.coordinator
    await c.streams_group_heartbeat(info(0), join("m1", topo=topology(source="nope")))
    _, groups = await c.list_groups(info(5), [], [])
    [g] = [g for g in groups if g.group_id == GROUP]
    assert (g.protocol_type, g.group_type, g.group_state) == ("streams", "streams", "NotReady")
    _, groups = await c.list_groups(info(5), [], ["consumer"])
    assert GROUP not in [g.group_id for g in groups]
    _, groups = await c.list_groups(info(5), ["notready"], ["streams"])
    assert [g.group_id for g in groups] == [GROUP]
    [d] = await c.describe_groups(info(6), [GROUP])
    assert (d.error_code, d.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, f"Group {GROUP} is not a classic group.")
    await c.close()
