"""Replica placement, checked against the table in Kafka's AdminUtils documentation (5 brokers, 10
partitions, 3 replicas, start index 0 and shift 0)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from replication.assignment import (
    ReplicaAssignmentError,
    assign_replicas,
    rack_alternated_brokers,
    start_index_for_new_partitions,
)

# Kafka's documented layout: the brokers holding each partition's 1st, 2nd and 3rd replica.
KAFKA_TABLE = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
               5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}


def test_the_documented_layout():
    assert dict(enumerate(assign_replicas(10, 3, [0, 1, 2, 3, 4], start_index=0))) == KAFKA_TABLE


def test_broker_ids_are_used_in_sorted_order_whatever_their_values():
    assert assign_replicas(3, 2, [30, 10, 20], start_index=0) == [[10, 20], [20, 30], [30, 10]]


def test_leaders_and_replicas_spread_evenly_from_a_random_start():
    assignments = assign_replicas(300, 3, [1, 2, 3], rng=random.Random(7))
    assert Counter(a[0] for a in assignments) == {1: 100, 2: 100, 3: 100}
    assert Counter(b for a in assignments for b in a) == {1: 300, 2: 300, 3: 300}
    assert all(len(set(a)) == 3 for a in assignments)


def test_added_partitions_continue_the_leaders_round_robin():
    existing = assign_replicas(4, 2, [1, 2, 3], rng=random.Random(3))
    start = start_index_for_new_partitions(existing[0][0], [1, 2, 3])
    added = assign_replicas(2, 2, [1, 2, 3], start_index=start, start_partition_id=4)
    # As Kafka's createPartitions: the first replicas go on round-robin from partition 0's; the shift of the
    # other replicas restarts from the start index.
    assert [a[0] for a in added] == [a[0] for a in assign_replicas(6, 2, [1, 2, 3], start_index=start)[4:]]
    assert [a[0] for a in existing + added] == [existing[0][0], *[[1, 2, 3][(existing[0][0] - 1 + i) % 3]
                                                                  for i in range(1, 6)]]


def test_more_replicas_than_brokers_is_refused():
    with pytest.raises(ReplicaAssignmentError, match="larger than available brokers: 2"):
        assign_replicas(1, 3, [1, 2])
    assert assign_replicas(2, 1, [5]) == [[5], [5]]


# Kafka's AdminRackAwareTest: brokers 0-5 on three racks.
RACKS = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}


def test_the_rack_alternated_broker_list_takes_one_broker_of_each_rack_in_turn():
    assert rack_alternated_brokers(RACKS) == [0, 3, 1, 5, 4, 2]
    assert rack_alternated_brokers({b: r for b, r in RACKS.items() if b != 5}) == [0, 3, 1, 4, 2]


def test_rack_aware_placement_is_kafkas():
    assert dict(enumerate(assign_replicas(7, 3, list(RACKS), start_index=0, racks=RACKS))) == {
        0: [0, 3, 1], 1: [3, 1, 5], 2: [1, 5, 4], 3: [5, 4, 2], 4: [4, 2, 0], 5: [2, 0, 3], 6: [0, 4, 2]}


def test_every_partition_spans_every_rack_it_can():
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    for replicas in assign_replicas(30, 3, list(racks), rng=random.Random(5), racks=racks):
        assert len({racks[b] for b in replicas}) == 3
    for replicas in assign_replicas(30, 2, [1, 2, 3], rng=random.Random(5), racks={1: "a", 2: "a", 3: "b"}):
        assert len({"a" if b < 3 else "b" for b in replicas}) == 2


def test_racks_are_ignored_unless_every_broker_has_one():
    assert assign_replicas(5, 2, [0, 1, 2], start_index=0, racks={0: "a", 1: None, 2: "b"}) == \
        assign_replicas(5, 2, [0, 1, 2], start_index=0)
