"""Server-side partition assignors of consumer groups (KIP-848): ``uniform`` and ``range``.

An assignor is a pure function of the group spec (each member's subscribed topic ids and its current
target assignment) and the partition counts; it returns the new target assignment of every member.

- ``uniform`` (Kafka's UniformAssignor, the default): every partition of the subscribed topics to
  exactly one subscribed member, counts balanced to within one partition where subscriptions allow,
  and sticky: a member keeps the partitions it already has as long as balance permits.
- ``range`` (Kafka's RangeAssignor): per topic, contiguous ranges of partitions to the subscribed
  members in order (static members by instance id first, then by member id), so members get the same
  partition numbers of co-partitioned topics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol
from uuid import UUID

__all__ = ["Assignor", "AssignorError", "GroupSpec", "MemberSpec", "RangeAssignor", "UniformAssignor", "ASSIGNORS"]

Partitions = dict[UUID, frozenset[int]]


class AssignorError(Exception):
    """The assignment cannot be computed (Kafka's PartitionAssignorException)."""


@dataclass(frozen=True)
class MemberSpec:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: frozenset[UUID]
    current: Mapping[UUID, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupSpec:
    members: Mapping[str, MemberSpec]
    homogeneous: bool


# topic id -> number of partitions (-1 when the topic does not exist)
NumPartitions = Callable[[UUID], int]


class Assignor(Protocol):
    name: str

    def assign(self, spec: GroupSpec, num_partitions: NumPartitions) -> dict[str, Partitions]: ...


def _freeze(assignment: dict[str, dict[UUID, set[int]]]) -> dict[str, Partitions]:
    return {m: {t: frozenset(ps) for t, ps in topics.items() if ps} for m, topics in assignment.items()}


class RangeAssignor:
    name = "range"

    @staticmethod
    def _sorted_members(spec: GroupSpec) -> list[str]:
        def key(member_id: str):
            instance = spec.members[member_id].instance_id
            return (0, instance, "") if instance is not None else (1, "", member_id)
        return sorted(spec.members, key=key)

    def assign(self, spec: GroupSpec, num_partitions: NumPartitions) -> dict[str, Partitions]:
        members = self._sorted_members(spec)
        out: dict[str, dict[UUID, set[int]]] = {m: {} for m in members}
        subscribers: dict[UUID, list[str]] = {}
        for m in members:
            for topic_id in sorted(spec.members[m].subscribed_topic_ids, key=str):
                subscribers.setdefault(topic_id, []).append(m)
        for topic_id, subs in subscribers.items():
            n = num_partitions(topic_id)
            if n == -1:
                raise AssignorError("Member is subscribed to a non-existent topic")
            quota, extra = divmod(n, len(subs))
            start = 0
            for m in subs:
                size = quota + (1 if extra > 0 else 0)
                extra -= 1 if extra > 0 else 0
                end = min(start + size, n)
                if start < end:
                    out[m][topic_id] = set(range(start, end))
                start = end
        return _freeze(out)


class UniformAssignor:
    name = "uniform"

    def assign(self, spec: GroupSpec, num_partitions: NumPartitions) -> dict[str, Partitions]:
        members = sorted(spec.members)
        out: dict[str, dict[UUID, set[int]]] = {m: {} for m in members}
        if not members:
            return {}
        topics: set[UUID] = set()
        for m in members:
            topics |= spec.members[m].subscribed_topic_ids
        partitions_of: dict[UUID, int] = {}
        for t in topics:
            n = num_partitions(t)
            if n == -1:
                raise AssignorError("Member is subscribed to a non-existent topic")
            partitions_of[t] = n
        all_partitions = [(t, p) for t in sorted(topics, key=str) for p in range(partitions_of[t])]
        eligible = {(t, p): [m for m in members if t in spec.members[m].subscribed_topic_ids]
                    for t, p in all_partitions}
        count = dict.fromkeys(members, 0)
        owner: dict[tuple[UUID, int], str] = {}

        # Targets: as even as possible. With identical subscriptions each member gets P//N or P//N+1.
        if spec.homogeneous:
            quota, extra = divmod(len(all_partitions), len(members))
        else:
            quota, extra = 0, 0

        extra_left = [extra]

        def cap() -> int:
            return quota + 1 if extra_left[0] > 0 else quota

        # 1. Stickiness: keep current partitions that are still valid, within the quota when homogeneous.
        # Members holding the most keep first, so the "+1" slots go to those that already have them.
        by_size = sorted(members, key=lambda m: (-sum(len(v) for v in spec.members[m].current.values()), m))
        for m in by_size:
            kept = 0
            limit = cap() if spec.homogeneous else None
            for t in sorted(spec.members[m].current, key=str):
                if t not in spec.members[m].subscribed_topic_ids or t not in partitions_of:
                    continue
                for p in sorted(spec.members[m].current[t]):
                    if p >= partitions_of[t] or (t, p) in owner:
                        continue
                    if limit is not None and kept >= limit:
                        break
                    owner[(t, p)] = m
                    out[m].setdefault(t, set()).add(p)
                    kept += 1
            count[m] = kept
            if spec.homogeneous and kept > quota:
                extra_left[0] -= 1

        # 2. Everything unowned goes to the least loaded eligible member.
        for tp in all_partitions:
            if tp in owner:
                continue
            candidates = eligible[tp]
            if not candidates:
                continue
            m = min(candidates, key=lambda c: (count[c], c))
            owner[tp] = m
            out[m].setdefault(tp[0], set()).add(tp[1])
            count[m] += 1

        # 3. Mixed subscriptions: move partitions from the most to the least loaded member able to take them.
        rounds = 0 if spec.homogeneous else len(all_partitions) * 2
        for _ in range(rounds):
            moved = False
            for tp in sorted(owner, key=lambda x: (-count[owner[x]], str(x[0]), x[1])):
                src = owner[tp]
                dst = min(eligible[tp], key=lambda c: (count[c], c))
                if count[src] - count[dst] > 1:
                    out[src][tp[0]].discard(tp[1])
                    out[dst].setdefault(tp[0], set()).add(tp[1])
                    owner[tp] = dst
                    count[src] -= 1
                    count[dst] += 1
                    moved = True
                    break
            if not moved:
                break
        return _freeze(out)


ASSIGNORS: dict[str, Callable[[], Assignor]] = {"uniform": UniformAssignor, "range": RangeAssignor}
