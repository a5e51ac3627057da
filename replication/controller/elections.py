"""Leader and ISR rules of the controller, as pure functions (Kafka's PartitionLeaderElectionAlgorithms and
the ZooKeeper-era controller's replica state changes).

- A new partition is led by the first live replica of its assignment, with every live replica in sync.
- An offline partition (its leader died, or it had none) elects the first replica of the assignment that
  is alive and in the ISR; with unclean leader election allowed and no such replica, the first live
  replica, alone in a new ISR (data the old ISR had may be lost, as Kafka documents).
- A replica that goes offline leaves every ISR it is in, unless it is the last member (the ISR then keeps
  it, so the partition knows whom to wait for); if it led, the partition has no leader until elected.
- A replica whose log dir goes offline (Kafka's KRaft controller, handleDirectoriesOffline) leaves the ISR
  and, if it led, the lead passes to another live in-sync replica or to none; with eligible leader replicas
  (KIP-966) even the last member leaves the ISR (it stays eligible), without them it stays. Once its log is
  back online it may lead again as the last eligible replica (``recovered_replica_election``).
Every change of leader or ISR made by the controller bumps the leader epoch, as Kafka's ZooKeeper-mode
controller does (``LeaderAndIsr.newLeaderAndIsr``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["LeaderAndIsr", "NO_LEADER", "initial_leader_and_isr", "offline_partition_election",
           "preferred_replica_election", "remove_replica_from_isr", "imbalanced_brokers",
           "controlled_shutdown_election", "directory_offline_change", "eligible_leader_replicas",
           "recovered_replica_election"]

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's leader (-1: none), leader epoch and ISR; ``unclean`` when elected from outside the ISR."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    unclean: bool = False


def initial_leader_and_isr(assignment: Sequence[int], live: Collection[int]) -> LeaderAndIsr | None:
    """A new partition's first state; None while none of its replicas is alive (it stays offline)."""
    live_replicas = tuple(r for r in assignment if r in live)
    if not live_replicas:
        return None
    return LeaderAndIsr(live_replicas[0], 0, live_replicas)


def offline_partition_election(current: LeaderAndIsr, assignment: Sequence[int], live: Collection[int],
                               unclean_allowed: bool) -> LeaderAndIsr | None:
    """Elect a leader for a partition whose leader is gone; None when no replica may lead yet."""
    for r in assignment:
        if r in live and r in current.isr:
            return LeaderAndIsr(r, current.leader_epoch + 1, tuple(i for i in current.isr if i in live))
    if unclean_allowed:
        for r in assignment:
            if r in live:
                return LeaderAndIsr(r, current.leader_epoch + 1, (r,), unclean=True)
    return None


def preferred_replica_election(current: LeaderAndIsr, assignment: Sequence[int],
                               live: Collection[int]) -> LeaderAndIsr | None:
    """Leadership back to the preferred (first) replica when it is alive and in sync; None when it cannot
    lead (the caller tells "not needed", when it already leads, from "not available")."""
    preferred = assignment[0]
    if preferred == current.leader or preferred not in live or preferred not in current.isr:
        return None
    return LeaderAndIsr(preferred, current.leader_epoch + 1, current.isr)


def imbalanced_brokers(leaders: dict[tuple[str, int], int], assignments: dict[tuple[str, int], Sequence[int]],
                       percentage: int) -> dict[int, list[tuple[str, int]]]:
    """Kafka's auto leader rebalance check: for each broker, the partitions it prefers but does not lead,
    when they are more than ``percentage`` % of the partitions it prefers (leader.imbalance.per.broker.percentage)."""
    preferred_by: dict[int, list[tuple[str, int]]] = {}
    for tp, assignment in assignments.items():
        if assignment:
            preferred_by.setdefault(assignment[0], []).append(tp)
    out = {}
    for broker, tps in preferred_by.items():
        not_led = [tp for tp in tps if leaders.get(tp) != broker]
        if not_led and len(not_led) * 100 > percentage * len(tps):
            out[broker] = not_led
    return out


def controlled_shutdown_election(current: LeaderAndIsr, assignment: Sequence[int], live: Collection[int],
                                 shutting_down: int) -> LeaderAndIsr | None:
    """A broker shutting down hands over (Kafka's ControlledShutdownPartitionLeaderElectionStrategy): a
    partition it leads goes to the first replica of the assignment that is alive and in sync; it leaves the
    ISR of the others (unless it is their last member). None when nothing can or need change."""
    if current.leader == shutting_down:
        for r in assignment:
            if r != shutting_down and r in live and r in current.isr:
                return LeaderAndIsr(r, current.leader_epoch + 1, tuple(i for i in current.isr if i != shutting_down))
        return None
    if shutting_down in current.isr and len(current.isr) > 1:
        return LeaderAndIsr(current.leader, current.leader_epoch + 1,
                            tuple(i for i in current.isr if i != shutting_down))
    return None


def remove_replica_from_isr(current: LeaderAndIsr, replica: int) -> LeaderAndIsr | None:
    """``replica`` went offline: its new state, or None if it was neither leader nor in the ISR."""
    if replica not in current.isr and replica != current.leader:
        return None
    isr = current.isr if len(current.isr) == 1 else tuple(r for r in current.isr if r != replica)
    leader = NO_LEADER if replica == current.leader else current.leader
    return LeaderAndIsr(leader, current.leader_epoch + 1, isr)


def directory_offline_change(current: LeaderAndIsr, assignment: Sequence[int], live: Collection[int], replica: int,
                             elr_enabled: bool) -> LeaderAndIsr | None:
    """``replica``'s log dir went offline: the partition's new state, None if the replica neither leads nor is
    in the ISR (nothing to change)."""
    if replica not in current.isr and replica != current.leader:
        return None
    isr = tuple(r for r in current.isr if r != replica)
    if not isr and not elr_enabled:
        isr = current.isr  # without ELR the last member stays, so the partition knows whom to wait for
    leader = current.leader
    if leader == replica:
        leader = next((r for r in assignment if r != replica and r in live and r in isr), NO_LEADER)
    return LeaderAndIsr(leader, current.leader_epoch + 1, isr)


def eligible_leader_replicas(old_isr: Sequence[int], new_isr: Sequence[int], elr: Sequence[int], min_isr: int,
                             elr_enabled: bool) -> tuple[int, ...]:
    """KIP-966: with ELR on and the ISR below ``min_isr``, the replicas that just left the ISR stay eligible to
    lead (they held every committed record); otherwise the ISR itself suffices and nobody else is eligible."""
    if not elr_enabled or len(new_isr) >= min_isr:
        return ()
    left = [r for r in old_isr if r not in new_isr]
    return tuple(dict.fromkeys([*elr, *left]))


def recovered_replica_election(current: LeaderAndIsr, assignment: Sequence[int], replica: int) -> LeaderAndIsr | None:
    """A leaderless partition whose ``replica`` was its last in-sync member (ELR, or the ISR kept without it)
    and whose log is back online: ``replica`` leads alone. None when the partition has a leader, or another
    member of its ISR could lead."""
    if current.leader != NO_LEADER or replica not in assignment or any(r != replica for r in current.isr):
        return None
    return LeaderAndIsr(replica, current.leader_epoch + 1, (replica,))
