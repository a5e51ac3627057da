"""Replica placement for new topics and partitions: pure functions, as Kafka's AdminUtils spreads replicas.

Rack-unaware placement (Kafka's ``assignReplicasToBrokersRackUnaware``): the first replica of partition
``p`` is broker ``(p + start_index) % n`` of the sorted broker list, so leaders go round-robin; each
further replica is shifted from the first by ``1 + (shift + j) % (n - 1)``, where the shift grows by
one every ``n`` partitions, so followers of consecutive rounds land on different brokers. Both the
start index and the first shift are random unless fixed (adding partitions fixes them, so new
partitions continue the existing pattern).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["ReplicaAssignmentError", "assign_replicas", "start_index_for_new_partitions"]


class ReplicaAssignmentError(ValueError):
    """The brokers cannot hold that many replicas of each partition."""


def _replica_index(first_replica_index: int, shift: int, replica: int, n_brokers: int) -> int:
    return (first_replica_index + 1 + (shift + replica) % (n_brokers - 1)) % n_brokers


def assign_replicas(partitions: int, replication_factor: int, brokers: Sequence[int], *,
                    start_index: int = -1, start_partition_id: int = 0,
                    rng: random.Random | None = None) -> list[list[int]]:
    """Replica lists for ``partitions`` new partitions (numbered from ``start_partition_id``).

    ``start_index`` >= 0 fixes where the round-robin starts (and the first shift); -1 picks at random.
    """
    if replication_factor <= 0:
        raise ReplicaAssignmentError("Replication factor must be larger than 0.")
    ordered = sorted(brokers)
    n = len(ordered)
    if replication_factor > n:
        raise ReplicaAssignmentError(
            f"Replication factor: {replication_factor} larger than available brokers: {n}.")
    rng = rng or random.Random()
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


def start_index_for_new_partitions(existing_first_replica: int, brokers: Sequence[int]) -> int:
    """Where added partitions continue the round-robin: the first broker at or after partition 0's first replica."""
    ordered = sorted(brokers)
    for i, b in enumerate(ordered):
        if b >= existing_first_replica:
            return i
    return 0
