"""The streams task assignor against answers Kafka 4.4's StickyTaskAssignor gave for the same inputs (recorded with
``compat_tests/jvm/StreamsAssignorDriver.java``; ``compat_tests/test_streams_assignor_placement.py`` compares
thousands of random rounds with the live class)."""

from __future__ import annotations

from coordinator.group.streams_assignor import assign
from coordinator.group.streams_group import StreamsGroup
from coordinator.group.streams_group_records import TasksTuple

MEMBERS = {"a1": "pa", "a2": "pa", "b1": "pb", "c1": "pc", "c2": "pc", "c3": "pc"}
TASKS = {"0": 8, "1": 3}  # sub-topology 0 stateful, 1 stateless


def _kafka(active: dict[str, list[int]], standby: list[int] | None = None) -> TasksTuple:
    return TasksTuple.of(active=active, standby={"0": standby or []})


def test_a_new_group_is_placed_member_by_member_as_kafka_places_it():
    got = assign(MEMBERS, TASKS, {}, 1, stateful={"0"})
    assert got == {"a1": _kafka({"0": [0, 6]}, [7]), "a2": _kafka({"0": [4], "1": [2]}, [3]),
                   "b1": _kafka({"0": [2], "1": [0]}, [1, 5]), "c1": _kafka({"0": [5], "1": [1]}, [4]),
                   "c2": _kafka({"0": [3, 7]}, [0]), "c3": _kafka({"0": [1]}, [2, 6])}


def test_owners_keep_their_tasks_and_reported_offsets_rank_standbys_as_kafkas():
    before = assign(MEMBERS, TASKS, {}, 1, stateful={"0"})
    members = {m: p for m, p in MEMBERS.items() if m != "c2"} | {"b2": "pb"}  # c2 left, b2 joined
    current = {m: t for m, t in before.items() if m != "c2"}
    offsets = {"b1": {("0", p): 100 * p for p in range(8)}}
    got = assign(members, TASKS, current, 1, stateful={"0"}, reported_offsets=offsets)
    assert got == {"a1": _kafka({"0": [0, 6]}, [7]), "a2": _kafka({"0": [4], "1": [2]}, [3]),
                   "b1": _kafka({"0": [2], "1": [0]}, [5]), "b2": _kafka({"0": [3]}, [0, 1]),
                   "c1": _kafka({"0": [5], "1": [1]}, [4]), "c3": _kafka({"0": [1, 7]}, [2, 6])}


def test_members_are_ordered_as_kafkas_timeline_hash_map_of_them():
    g = StreamsGroup("g")
    for m in ("a1", "a2", "b1", "c1", "c2", "c3"):
        g.member(m)
    del g.members["a2"]  # a member's metadata tombstone
    for m in ("b2", "xx", "yy", "zz", "ww", "qq"):
        g.member(m)
    # what Kafka 4.4's TimelineHashMap iterated after the same puts and remove (Java 17)
    assert g.member_order() == "yy,c1,xx,c3,ww,b2,c2,a1,qq,zz,b1".split(",")
