"""Partition reassignment rules, as pure functions (Kafka's ``ReplicaAssignment`` and the ZooKeeper-era
controller's ``onPartitionReassignment``).

A partition's assignment while it moves is three lists, as the topic znode stores them: ``replicas`` (RS,
every replica that holds or is getting the data), ``adding`` (AR) and ``removing`` (RR). The original
replicas are ORS = RS - AR, the target TRS = RS - RR, and RS = TRS followed by the rest of ORS, so the
target's first replica is the preferred one as soon as the move starts.

The move goes in two phases, as Kafka's controller runs it:
- A: the topic znode gets RS, AR and RR; the adding replicas see themselves assigned, fetch from the
  leader and join the ISR once caught up (the leader's ordinary ISR expansion);
- B: once every target replica is in the ISR, one write sets the assignment to TRS and the partition state
  to ISR ∩ TRS with a new leader epoch, led by the current leader if it stays, else by the first live
  in-sync target replica (Kafka's ReassignPartitionLeaderElectionStrategy); removed replicas see they are no
  longer assigned, stop and delete their logs.
A new target for a partition already moving starts from the original replicas again; cancelling sets the
assignment back to the original replicas (ORS), dropping the adding ones from the ISR.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from replication.controller.elections import LeaderAndIsr

__all__ = ["ReplicaAssignment", "reassignment_complete", "completion_state", "revert_state"]


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """RS, AR and RR of one partition (AR and RR empty when it is not moving)."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "replicas", tuple(self.replicas))
        object.__setattr__(self, "adding", tuple(self.adding))
        object.__setattr__(self, "removing", tuple(self.removing))

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def origin(self) -> tuple[int, ...]:
        """ORS: the replicas before the move."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        """TRS: the replicas after the move."""
        return tuple(r for r in self.replicas if r not in self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """The assignment of a move from this one's original replicas to ``target`` (Kafka's reassignTo)."""
        origin = self.origin
        full = tuple(target) + tuple(r for r in origin if r not in target)
        return ReplicaAssignment(full, tuple(r for r in target if r not in origin),
                                 tuple(r for r in origin if r not in target))

    def revert(self) -> ReplicaAssignment:
        """Cancelled: back to the original replicas."""
        return ReplicaAssignment(self.origin)

    def completed(self) -> ReplicaAssignment:
        return ReplicaAssignment(self.target)


def reassignment_complete(assignment: ReplicaAssignment, isr: Collection[int]) -> bool:
    """Phase B may run: every target replica is in sync."""
    return all(r in isr for r in assignment.target)


def completion_state(current: LeaderAndIsr, assignment: ReplicaAssignment, live: Collection[int]) -> LeaderAndIsr | None:
    """The partition state that ends a move (phase B): ISR ∩ TRS, the leader kept when it stays and is alive,
    else the first target replica that is alive and in sync; always a new leader epoch. None when no target
    replica can lead (the move waits)."""
    target = assignment.target
    isr = tuple(r for r in current.isr if r in target)
    if current.leader in target and current.leader in live:
        return LeaderAndIsr(current.leader, current.leader_epoch + 1, isr)
    for r in target:
        if r in live and r in isr:
            return LeaderAndIsr(r, current.leader_epoch + 1, isr)
    return None


def revert_state(current: LeaderAndIsr, assignment: ReplicaAssignment, live: Collection[int]) -> LeaderAndIsr | None:
    """The partition state of a cancelled move: the adding replicas leave the ISR; a leader among them hands
    over to the first original replica that is alive and in sync. None when nothing changes, and when no
    original replica is in sync (the ISR would be empty: the cancellation is refused)."""
    origin = assignment.origin
    isr = tuple(r for r in current.isr if r in origin)
    if not isr:
        return None
    if current.leader in origin:
        if isr == current.isr:
            return current
        return LeaderAndIsr(current.leader, current.leader_epoch + 1, isr)
    for r in origin:
        if r in live and r in isr:
            return LeaderAndIsr(r, current.leader_epoch + 1, isr)
    return None
