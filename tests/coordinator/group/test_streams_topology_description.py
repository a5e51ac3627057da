"""The built-in topology description store (KIP-1331) on the group coordinator: Kafka 4.4's backoff of push
requests, the heartbeat's TopologyDescriptionRequired conditions, the push's checks and conversion, the records
(one batch: description and stored epoch) replaying to the same state, DeleteGroups and expiry (the description
first, the group a cycle later)."""

from __future__ import annotations

from dataclasses import replace

from coordinator.group import records as rec
from coordinator.group.streams_topology_description import (
    INITIAL_DELAY_MS,
    MAX_DELAY_MS,
    NOT_STORED,
    STORED,
    DescriptionBackoff,
)
from tests.coordinator.group.helpers import CONFIG, Harness, info, join_request, run
from tests.coordinator.group.test_streams_protocol import GROUP, hb, join, topology
from wire import ErrorCode
from wire.messages import StreamsGroupTopologyDescriptionUpdateRequest
from wire.messages import streams_group_topology_description_update_request as tdu

STORE = replace(CONFIG, streams_topology_description_store=True)


def description(node_type: int = 1) -> tdu.TopologyDescription:
    return tdu.TopologyDescription(subtopologies=[tdu.TopologyDescriptionSubtopology(subtopology_id="0", nodes=[
        tdu.TopologyDescriptionNode(name="src", node_type=node_type, source_topics=["a", "a"], stores=["x"],
                                    successors=["sink", "sink"]),
        tdu.TopologyDescriptionNode(name="sink", node_type=3, sink_topic="out", source_topics=["y"])])],
        global_stores=[])


def push(member: str = "m1", epoch: int = 1, group: str = GROUP, node_type: int = 1):
    return StreamsGroupTopologyDescriptionUpdateRequest(group_id=group, member_id=member, topology_epoch=epoch,
                                                        topology_description=description(node_type))


def test_the_backoff_doubles_per_epoch_to_an_hour_with_jitter():
    now = [0]
    lows = DescriptionBackoff(lambda: now[0], uniform=lambda lo, hi: lo)
    assert lows.arm_if_not_active("g", 1)
    assert not lows.arm_if_not_active("g", 1)  # active for 30 s - 20 %
    now[0] = int(INITIAL_DELAY_MS * 0.8) - 1
    assert not lows.arm_if_not_active("g", 1)
    now[0] += 1
    assert lows.arm_if_not_active("g", 1)  # the second attempt: 60 s - 20 %
    now[0] += int(2 * INITIAL_DELAY_MS * 0.8) - 1
    assert not lows.arm_if_not_active("g", 1)
    assert lows.arm_if_not_active("g", 2)  # another epoch starts over
    lows.clear("g", 1)
    assert not lows.arm_if_not_active("g", 2)  # clearing another epoch's leaves it
    lows.clear_group("g")
    assert lows.arm_if_not_active("g", 2)
    highs = DescriptionBackoff(lambda: now[0], uniform=lambda lo, hi: hi)
    assert highs._delay_ms(0) == int(INITIAL_DELAY_MS * 1.2) and highs._delay_ms(20) == MAX_DELAY_MS


@run
async def test_a_heartbeat_asks_for_a_push_as_kafka_does():
    h = Harness(STORE)
    c = h.coordinator
    assert (await c.streams_group_heartbeat(info(0), join("m0"))).topology_description_required is False  # v0
    first = await c.streams_group_heartbeat(info(1), join("m1"))
    assert first.error_code == ErrorCode.NONE and first.topology_description_required
    again = await c.streams_group_heartbeat(info(1), hb("m1", first.member_epoch))
    assert not again.topology_description_required  # backing off
    await h.advance(int(INITIAL_DELAY_MS * 1.2) + 1)
    assert (await c.streams_group_heartbeat(info(1), hb("m1", first.member_epoch))).topology_description_required
    stale = await c.streams_group_heartbeat(info(1), join("m2", topo=topology(epoch=0)))
    assert stale.status[0].status_code == 0 and not stale.topology_description_required  # STALE_TOPOLOGY
    fenced = await c.streams_group_heartbeat(info(1), hb("m1", 99))
    assert fenced.error_code == ErrorCode.FENCED_MEMBER_EPOCH and not fenced.topology_description_required
    off = Harness()  # no store: never asked
    assert not (await off.coordinator.streams_group_heartbeat(info(1), join("m1"))).topology_description_required
    await c.close()
    await off.coordinator.close()


@run
async def test_a_push_is_checked_converted_stored_and_replayed():
    h = Harness(STORE)
    c = h.coordinator
    joined = await c.streams_group_heartbeat(info(1), join("m1"))
    refused = {
        "unknown group": push(group="other"), "unknown member": push(member="m9"), "another epoch": push(epoch=2),
        "unknown node type": push(node_type=4)}
    got = {k: await c.streams_group_topology_description_update(r) for k, r in refused.items()}
    assert {k: (r.error_code, r.error_message) for k, r in got.items()} == {
        "unknown group": (ErrorCode.GROUP_ID_NOT_FOUND, "Group other not found."),
        "unknown member": (ErrorCode.UNKNOWN_MEMBER_ID, f"Member m9 is not a member of group {GROUP}."),
        "another epoch": (ErrorCode.INVALID_REQUEST,
                          "Topology epoch 2 does not match the group's current topology epoch 1."),
        "unknown node type": (ErrorCode.INVALID_REQUEST, "Unknown topology node type: 4")}
    [d] = await c.streams_group_describe(info(1), [GROUP])
    assert d.topology_description_status == NOT_STORED and d.topology_description is None
    since = len(h.records(GROUP))
    assert (await c.streams_group_topology_description_update(push())).error_code == ErrorCode.NONE
    written = h.records(GROUP, since)
    assert [r.record_type for r in written] == [rec.RecordType.PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION,
                                                rec.RecordType.STREAMS_GROUP_METADATA]
    assert written[1].value.stored_description_topology_epoch == 1
    [d] = await c.streams_group_describe(info(1), [GROUP])
    assert d.topology_description_status == STORED
    [s] = d.topology_description.subtopologies
    assert [(n.name, n.node_type, n.source_topics, n.sink_topic, n.stores, n.successors) for n in s.nodes] == [
        ("src", 1, ["a"], None, [], ["sink"]), ("sink", 3, [], "out", [], [])]
    assert not (await c.streams_group_heartbeat(info(1), hb("m1", joined.member_epoch))).topology_description_required
    await h.assert_replay_matches()
    await c.close()


@run
async def test_deleting_or_expiring_the_group_drops_its_description():
    h = Harness(replace(STORE, offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000))
    c = h.coordinator
    for group in (GROUP, "other"):
        joining, leaving = join("m1"), hb("m1", -1)
        joining.group_id = leaving.group_id = group
        assert (await c.streams_group_heartbeat(info(1), joining)).error_code == ErrorCode.NONE
        assert (await c.streams_group_topology_description_update(push(group=group))).error_code == ErrorCode.NONE
        assert (await c.streams_group_heartbeat(info(1), leaving)).error_code == ErrorCode.NONE
    since = len(h.records(GROUP))
    [deleted] = await c.delete_groups(info(2), [GROUP])
    assert deleted.error_code == ErrorCode.NONE
    assert rec.RecordType.PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION in [r.record_type for r in h.records(GROUP, since)
                                                           if r.value is None]
    # "other" has no offsets: eligible at once; its description goes first, the group one cycle later
    await h.advance(10_000)
    other = h.shard("other").streams.groups["other"]
    assert other.description is None and other.metadata.stored_description_topology_epoch == -1
    await h.advance(10_000)
    assert "other" not in h.shard("other").streams.groups
    await h.assert_replay_matches()
    await c.close()


@run
async def test_a_classic_join_converts_an_empty_streams_group_and_drops_its_description():
    h = Harness(STORE)
    c = h.coordinator
    assert (await c.streams_group_heartbeat(info(1), join("m1"))).error_code == ErrorCode.NONE
    assert (await c.streams_group_topology_description_update(push())).error_code == ErrorCode.NONE
    assert (await c.join_group(info(9), join_request(GROUP))).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    await c.streams_group_heartbeat(info(1), hb("m1", -1))
    since = len(h.records(GROUP))
    converted = await c.join_group(info(9), join_request(GROUP))
    assert converted.error_code == ErrorCode.MEMBER_ID_REQUIRED  # a classic group now, as Kafka 4.4's conversion
    tombstones = [r.record_type for r in h.records(GROUP, since) if r.value is None]
    assert rec.RecordType.PYKBROKER_STREAMS_GROUP_TOPOLOGY_DESCRIPTION in tombstones
    assert rec.RecordType.STREAMS_GROUP_METADATA in tombstones and GROUP not in h.shard(GROUP).streams.groups
    await h.assert_replay_matches()
    await h.advance(60_000)  # the classic member never rejoins: the classic group is empty again
    back = await c.streams_group_heartbeat(info(1), join("m1"))  # the empty classic group turns streams again
    assert back.error_code == ErrorCode.NONE and back.topology_description_required  # nothing stored any more
    await c.close()


@run
async def test_a_stored_epoch_without_this_stores_record_is_asked_for_again():
    """A log written by Kafka with a description plugin says the epoch is stored, but the plugin holds it."""
    h = Harness(STORE)
    c = h.coordinator
    joined = await c.streams_group_heartbeat(info(1), join("m1"))
    g = h.shard(GROUP).streams.groups[GROUP]
    g.metadata = replace(g.metadata, stored_description_topology_epoch=1)
    [d] = await c.streams_group_describe(info(1), [GROUP])
    assert d.topology_description_status == NOT_STORED
    await h.advance(int(INITIAL_DELAY_MS * 1.2) + 1)
    assert (await c.streams_group_heartbeat(info(1), hb("m1", joined.member_epoch))).topology_description_required
    await c.close()
