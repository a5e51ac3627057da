"""Streams-group records (KIP-1071, types 17 and 19-23): Kafka 4.4's bytes, and a load replaying them into the
shard's streams-group state."""

from __future__ import annotations

import struct

from coordinator.group import records as rec
from coordinator.group import streams_group_records as srec
from tests.coordinator.group.helpers import Harness, run
from wire.messages import StreamsGroupMemberMetadataValue, StreamsGroupTopologyValue
from wire.messages import streams_group_member_metadata_value as _member
from wire.messages import streams_group_topology_value as _topology

GROUP = "app"
TOPOLOGY = StreamsGroupTopologyValue(epoch=2, subtopologies=[
    _topology.Subtopology(subtopology_id="0", source_topics=["input"], repartition_sink_topics=["app-rep"]),
    _topology.Subtopology(subtopology_id="1", repartition_source_topics=[
        _topology.TopicInfo(name="app-rep", partitions=4, topic_configs=[
            _topology.TopicConfig(key="cleanup.policy", value="delete")])],
        state_changelog_topics=[_topology.TopicInfo(name="app-store-changelog")]),
])


def _member_value(process: str) -> StreamsGroupMemberMetadataValue:
    return StreamsGroupMemberMetadataValue(
        instance_id=None, rack_id=None, client_id=f"c-{process}", client_host="/127.0.0.1", rebalance_timeout_ms=300000,
        topology_epoch=2, process_id=process, user_endpoint=_member.Endpoint(host="h", port=7070),
        client_tags=[_member.KeyValue(key="zone", value="a")])


def _group_records() -> list[rec.CoordinatorRecord]:
    """What a heartbeat writes for a group of two members with tasks, one with a task pending revocation."""
    t1 = srec.TasksTuple.of(active={"0": [0, 1], "1": [0]}, standby={"1": [1]})
    t2 = srec.TasksTuple.of(active={"0": [2, 3], "1": [1]}, standby={"1": [0]})
    return [
        srec.member_metadata_record(GROUP, "m1", _member_value("p1")),
        srec.member_metadata_record(GROUP, "m2", _member_value("p2")),
        srec.topology_record(GROUP, TOPOLOGY),
        srec.epoch_record(GROUP, srec.GroupMetadata(5, 1234, validated_topology_epoch=2,
                                                    last_assignment_configs=(("num.standby.replicas", "1"),))),
        srec.target_assignment_record(GROUP, "m1", t1),
        srec.target_assignment_record(GROUP, "m2", t2),
        srec.target_assignment_epoch_record(GROUP, 5),
        srec.current_assignment_record(GROUP, "m1", 5, 4, 0, t1, srec.EMPTY_TASKS,
                                       active_epochs={("0", 0): 3, ("0", 1): 5, ("1", 0): 5}),
        srec.current_assignment_record(GROUP, "m2", 4, 3, 1, srec.TasksTuple.of(active={"0": [2, 3]}),
                                       srec.TasksTuple.of(active={"1": [0]})),
    ]


def test_record_keys_are_kafka_types_17_to_23():
    types = [r.encode()[0][:2] for r in _group_records()]
    assert [struct.unpack(">h", t)[0] for t in types] == [19, 19, 23, 17, 21, 21, 20, 22, 22]
    key, value = srec.epoch_record(GROUP, srec.GroupMetadata(5, 1234)).encode()
    assert key == struct.pack(">hh", 17, 3) + b"app"
    # value version 0, flexible: epoch, hash, and no tagged fields at their defaults
    assert value == struct.pack(">hiqB", 0, 5, 1234, 0)


def test_records_decode_back_equal():
    for r in _group_records():
        k, v = r.encode()
        back = rec.decode_record(k, v)
        assert back.record_type == r.record_type and back.key == r.key and back.value == r.value


async def _loaded(records: list[rec.CoordinatorRecord]) -> Harness:
    h = Harness()
    log = h.logs(h.coordinator.partition_for(GROUP))
    await log.append([r.encode() for r in records])
    await h.settle()
    return h


@run
async def test_load_replays_the_group():
    h = await _loaded(_group_records())
    g = h.shard(GROUP).streams.groups[GROUP]
    assert g.group_epoch == 5 and g.metadata.metadata_hash == 1234 and g.metadata.validated_topology_epoch == 2
    assert g.metadata.last_assignment_configs == (("num.standby.replicas", "1"),)
    assert g.topology == TOPOLOGY and g.target_assignment_epoch == 5
    assert g.target_assignment["m2"].active == (("0", (2, 3)), ("1", (1,)))
    m1, m2 = g.members["m1"], g.members["m2"]
    assert m1.metadata == _member_value("p1") and m1.member_epoch == 5 and m1.previous_member_epoch == 4
    assert m1.assigned.standby == (("1", (1,)),) and m1.active_epochs[("0", 0)] == 3
    assert m2.state == 1 and m2.pending_revocation.active == (("1", (0,)),) and m2.active_epochs == {}
    # the same records loaded twice give the same state
    await h.assert_replay_matches()
    await h.coordinator.close()


@run
async def test_tombstones_remove_members_and_the_group():
    records = _group_records()
    h = await _loaded(records + [srec.current_assignment_tombstone(GROUP, "m2"),
                                 srec.target_assignment_tombstone(GROUP, "m2"),
                                 srec.member_metadata_tombstone(GROUP, "m2")])
    g = h.shard(GROUP).streams.groups[GROUP]
    assert set(g.members) == {"m1"} and set(g.target_assignment) == {"m1"}
    await h.coordinator.close()
    tombstones = g.tombstone_records()
    assert [r.record_type for r in tombstones] == [22, 21, 20, 19, 17, 23]
    h = await _loaded(records + tombstones)
    assert h.shard(GROUP).streams.groups == {}
    assert h.snapshot()[h.coordinator.partition_for(GROUP)]["streams_groups"] == {}
    await h.coordinator.close()
