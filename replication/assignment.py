"""Replica placement for new topics and partitions: pure functions, as Kafka's AdminUtils spreads replicas.

Rack-unaware placement (Kafka's ``assignReplicasToBrokersRackUnaware``): the first replica of partition
``p`` is broker ``(p + start_index) % n`` of the sorted broker list, so leaders go round-robin; each
further replica is shifted from the first by ``1 + (shift + j) % (n - 1)``, where the shift grows by
one every ``n`` partitions, so followers of consecutive rounds land on different brokers. Both the
start index and the first shift are random unless fixed (adding partitions fixes them, so new
partitions continue the existing pattern).

Rack-aware placement (``assignReplicasToBrokersRackAware``), when every broker has a rack: the same walk over
a rack-alternated broker list (one broker of each rack in turn, racks sorted, brokers by id), the shift
scaled by the number of racks, and a candidate skipped while a rack (then a broker) without a replica of the
partition remains, so each partition spans as many racks as it can. When only some brokers have a rack, the
placement ignores racks (Kafka's RackAwareMode.Safe).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

__all__ = ["ReplicaAssignmentError", "assign_replicas", "rack_alternated_brokers", "start_index_for_new_partitions"]


class ReplicaAssignmentError(ValueError):
    """The brokers cannot hold that many replicas of each partition."""


def _replica_index(first_replica_index: int, shift: int, replica: int, n_brokers: int) -> int:
    return (first_replica_index + 1 + (shift + replica) % (n_brokers - 1)) % n_brokers


def assign_replicas(partitions: int, replication_factor: int, brokers: Sequence[int], *,
                    start_index: int = -1, start_partition_id: int = 0,
                    rng: random.Random | None = None, racks: Mapping[int, str | None] | None = None
                    ) -> list[list[int]]:
    """Replica lists for ``partitions`` new partitions (numbered from ``start_partition_id``).

    ``start_index`` >= 0 fixes where the round-robin starts (and the first shift); -1 picks at random.
    ``racks``: each broker's ``broker.rack`` (rack-aware when every one of ``brokers`` has one).
    """
    if replication_factor <= 0:
        raise ReplicaAssignmentError("Replication factor must be larger than 0.")
    ordered = sorted(brokers)
    n = len(ordered)
    if replication_factor > n:
        raise ReplicaAssignmentError(
            f"Replication factor: {replication_factor} larger than available brokers: {n}.")
    rng = rng or random.Random()
    if racks is not None and ordered and all(racks.get(b) is not None for b in ordered):
        return _assign_rack_aware(partitions, replication_factor, {b: racks[b] for b in ordered},  # type: ignore[misc]
                                  start_index, start_partition_id, rng)
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    assignments: list[list[int]] = []
    for partition_id in range(start_partition_id, start_partition_id + partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start) % n
        replicas = [ordered[first]]
        replicas += [ordered[_replica_index(first, shift, j, n)] for j in range(replication_factor - 1)]
        assignments.append(replicas)
    return assignments


def rack_alternated_brokers(racks: Mapping[int, str]) -> list[int]:
    """One broker of each rack in turn (racks sorted, each rack's brokers by id) until all are listed."""
    by_rack: dict[str, list[int]] = {}
    for broker in sorted(racks):
        by_rack.setdefault(racks[broker], []).append(broker)
    queues = [iter(by_rack[rack]) for rack in sorted(by_rack)]
    out: list[int] = []
    i = 0
    while len(out) < len(racks):
        nxt = next(queues[i], None)
        if nxt is not None:
            out.append(nxt)
        i = (i + 1) % len(queues)
    return out


def _assign_rack_aware(partitions: int, replication_factor: int, racks: Mapping[int, str], start_index: int,
                       start_partition_id: int, rng: random.Random) -> list[list[int]]:
    arranged = rack_alternated_brokers(racks)
    n = len(arranged)
    n_racks = len(set(racks.values()))
    start = start_index if start_index >= 0 else rng.randrange(n)
    shift = start_index if start_index >= 0 else rng.randrange(n)
    assignments: list[list[int]] = []
    for partition_id in range(max(0, start_partition_id), max(0, start_partition_id) + partitions):
        if partition_id > 0 and partition_id % n == 0:
            shift += 1
        first = (partition_id + start) % n
        leader = arranged[first]
        replicas, racks_used, brokers_used = [leader], {racks[leader]}, {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, shift * n_racks, k, n)] if n > 1 else leader
                rack = racks[broker]
                k += 1
                if ((rack not in racks_used or len(racks_used) == n_racks)
                        and (broker not in brokers_used or len(brokers_used) == n)):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        assignments.append(replicas)
    return assignments


def start_index_for_new_partitions(existing_first_replica: int, brokers: Sequence[int]) -> int:
    """Where added partitions continue the round-robin: the first broker at or after partition 0's first replica."""
    ordered = sorted(brokers)
    for i, b in enumerate(ordered):
        if b >= existing_first_replica:
            return i
    return 0
