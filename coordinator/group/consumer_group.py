"""A consumer group of the KIP-848 protocol (ConsumerGroupHeartbeat): members, epochs, assignments.

Every field of ``ConsumerGroup`` and ``ConsumerGroupMember`` is the replay of records (types 3, 5-8
and 16, see ``records``); ``ConsumerGroup.replay_*`` are the only mutators, so a group rebuilt from the
log is the group that wrote it.

Two state machines, both derived rather than driven, as in Kafka:

``ConsumerGroupState`` (the group) is recomputed after every replayed record from the epochs:
    EMPTY — no members. ASSIGNING — the group epoch moved past the target assignment epoch (a new
    target assignment is due). RECONCILING — the target is computed but some member has not reached
    it. STABLE — every member owns exactly its target at the target epoch. DEAD — removed.

``MemberState`` (one member, Kafka's byte values as stored in the current-assignment record) is the
outcome of reconciliation (``reconciliation.next_assignment``):
    STABLE — owns its share of the target at the target epoch. UNREVOKED_PARTITIONS — must give up
    partitions first; it stays at its epoch until its heartbeat no longer lists them.
    UNRELEASED_PARTITIONS — at the target epoch but waiting for partitions other members still own.
    UNKNOWN — a value from a newer broker; the member is reconciled from scratch.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum, IntEnum
from uuid import UUID

from coordinator.group import records as rec
from coordinator.runtime.errors import ApiError
from wire import ErrorCode
from wire.messages import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
)
from wire.messages import consumer_group_member_metadata_value as _member_value

__all__ = ["ClassicMemberMetadata", "ConsumerGroup", "ConsumerGroupMember", "ConsumerGroupState", "MemberState",
           "ResolvedRegex", "INITIAL_GROUP_EPOCH", "LEAVE_GROUP_MEMBER_EPOCH", "LEAVE_GROUP_STATIC_MEMBER_EPOCH"]

LEAVE_GROUP_MEMBER_EPOCH = -1
INITIAL_GROUP_EPOCH = 1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Partitions = dict[UUID, frozenset[int]]
EMPTY_PARTITIONS: Partitions = {}


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member that speaks the classic protocol inside a consumer group: its session timeout and protocols."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]

    def to_record(self) -> _member_value.ClassicMemberMetadata:
        return _member_value.ClassicMemberMetadata(
            session_timeout_ms=self.session_timeout_ms,
            supported_protocols=[_member_value.ClassicProtocol(name=n, metadata=m) for n, m in self.supported_protocols])

    @classmethod
    def from_record(cls, value: _member_value.ClassicMemberMetadata | None) -> ClassicMemberMetadata | None:
        if value is None:
            return None
        return cls(value.session_timeout_ms, tuple((p.name, p.metadata) for p in value.supported_protocols))


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember:
    """One member, immutable: updates build a new one with ``dataclasses.replace``."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned_partitions: Mapping[UUID, frozenset[int]] = field(default_factory=dict)
    partitions_pending_revocation: Mapping[UUID, frozenset[int]] = field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None
    # KIP-1251: (topic id, partition) -> the member epoch at which it was assigned to this member; an offset
    # commit with an older member epoch is still accepted for a partition assigned at or before that epoch.
    assignment_epochs: Mapping[tuple[UUID, int], int] = field(default_factory=dict)

    @property
    def classic_metadata(self) -> ClassicMemberMetadata:
        """The classic protocol's metadata of a member that uses that protocol."""
        if self.classic_member_metadata is None:
            raise ValueError(f"member {self.member_id} does not use the classic protocol")
        return self.classic_member_metadata

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch

    def with_epoch(self, member_epoch: int) -> ConsumerGroupMember:
        """Kafka's Builder.updateMemberEpoch: the old epoch becomes the previous one."""
        return replace(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch)

    def subscription_record_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id, rack_id=self.rack_id, client_id=self.client_id,
            client_host=self.client_host, subscribed_topic_names=sorted(self.subscribed_topic_names),
            subscribed_topic_regex=self.subscribed_topic_regex, rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic_member_metadata=None if self.classic_member_metadata is None
            else self.classic_member_metadata.to_record())

    def subscription_record(self, group_id: str) -> rec.CoordinatorRecord:
        return rec.consumer_group_member_subscription_record(group_id, self.subscription_record_value(), self.member_id)

    def current_assignment_record(self, group_id: str) -> rec.CoordinatorRecord:
        return rec.consumer_group_current_assignment_record(
            group_id, self.member_id, self.member_epoch, self.previous_member_epoch, int(self.state),
            self.assigned_partitions, self.partitions_pending_revocation, self.assignment_epochs)

    def updated_with_subscription(self, v: ConsumerGroupMemberMetadataValue) -> ConsumerGroupMember:
        return replace(self, instance_id=v.instance_id, rack_id=v.rack_id, client_id=v.client_id,
                       client_host=v.client_host, subscribed_topic_names=frozenset(v.subscribed_topic_names),
                       subscribed_topic_regex=v.subscribed_topic_regex or None,
                       rebalance_timeout_ms=v.rebalance_timeout_ms, server_assignor=v.server_assignor,
                       classic_member_metadata=ClassicMemberMetadata.from_record(v.classic_member_metadata))

    def updated_with_assignment(self, v: ConsumerGroupCurrentMemberAssignmentValue) -> ConsumerGroupMember:
        return replace(self, member_epoch=v.member_epoch, previous_member_epoch=v.previous_member_epoch,
                       state=MemberState.from_value(v.state),
                       assigned_partitions=rec.assignment_from_record(v.assigned_partitions),
                       partitions_pending_revocation=rec.assignment_from_record(v.partitions_pending_revocation),
                       assignment_epochs=rec.assignment_epochs_from_record(v.assigned_partitions, v.member_epoch))

    def assignment_epoch(self, topic_id: UUID, partition: int) -> int | None:
        """The epoch at which ``partition`` was assigned to this member, None when it is not assigned to it."""
        if partition not in self.assigned_partitions.get(topic_id, ()):
            return None
        return self.assignment_epochs.get((topic_id, partition), self.member_epoch)

    def subscription_equals(self, other: ConsumerGroupMember) -> bool:
        """Whether the fields of the member-metadata record are the same."""
        return self.subscription_record_value() == other.subscription_record_value()


@dataclass(frozen=True, slots=True)
class ResolvedRegex:
    topics: frozenset[str]
    version: int
    timestamp_ms: int


class ConsumerGroup:
    """A KIP-848 group. Mutated only by replaying records (``replay_*``) on its shard's task."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        # Kafka 4.3+ (ModernGroup, TargetAssignmentMetadata.INITIAL): a new group is at epoch 1 with an assignment
        # at epoch 1 never computed (timestamp 0), so its first member joins at epoch 2 (KIP-1251 keeps epochs
        # 0 and 1 apart from any assignment a member can hold).
        self.group_epoch = INITIAL_GROUP_EPOCH
        self.metadata_hash = 0
        self.assignment_epoch = INITIAL_GROUP_EPOCH
        # When the assignment of ``assignment_epoch`` was computed (ms; 0: never, or the group became empty):
        # the next one waits ``consumer.assignment.interval.ms`` after it (KIP-1263).
        self.assignment_timestamp = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.target_assignment: dict[str, Partitions] = {}
        self.inverted_target_assignment: dict[tuple[UUID, int], str] = {}
        self.static_members: dict[str, str] = {}
        self.resolved_regexes: dict[str, ResolvedRegex] = {}
        self.subscribed_topic_counts: Counter[str] = Counter()
        self.regex_subscriber_counts: Counter[str] = Counter()
        self.server_assignor_counts: Counter[str] = Counter()
        self.current_partition_epoch: dict[tuple[UUID, int], int] = {}
        self.state = ConsumerGroupState.EMPTY

    # -- queries ----------------------------------------------------------------------------------------
    @property
    def is_empty(self) -> bool:
        return self.state is ConsumerGroupState.EMPTY

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def member(self, member_id: str) -> ConsumerGroupMember:
        m = self.members.get(member_id)
        if m is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {self.group_id}.")
        return m

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        mid = self.static_member_id(instance_id)
        return None if mid is None else self.members.get(mid)

    def target_of(self, member_id: str) -> Partitions:
        return self.target_assignment.get(member_id, EMPTY_PARTITIONS)

    def target_for(self, member_id: str, instance_id: str | None) -> Partitions:
        """A member's target; a static member replacing another takes the previous one's target."""
        if instance_id is None:
            return self.target_of(member_id)
        previous = self.static_member_id(instance_id)
        return self.target_of(previous) if previous is not None else EMPTY_PARTITIONS

    def partition_epoch(self, topic_id: UUID, partition: int) -> int:
        return self.current_partition_epoch.get((topic_id, partition), -1)

    def preferred_server_assignor(self, counts: Counter[str] | None = None) -> str | None:
        counts = self.server_assignor_counts if counts is None else counts
        positive = {k: v for k, v in counts.items() if v > 0}
        if not positive:
            return None
        return max(sorted(positive), key=lambda k: positive[k])

    def subscribed_topic_names(self) -> set[str]:
        """Every topic some member subscribes to, by name or through a resolved regex."""
        names = {t for t, c in self.subscribed_topic_counts.items() if c > 0}
        for regex, count in self.regex_subscriber_counts.items():
            if count > 0 and regex in self.resolved_regexes:
                names |= self.resolved_regexes[regex].topics
        return names

    def member_topics(self, member: ConsumerGroupMember) -> set[str]:
        """The topics one member subscribes to (names plus its regex's resolution)."""
        topics = set(member.subscribed_topic_names)
        regex = member.subscribed_topic_regex
        if regex and regex in self.resolved_regexes:
            topics |= self.resolved_regexes[regex].topics
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return topic in self.subscribed_topic_names()

    def num_classic_members(self) -> int:
        return sum(1 for m in self.members.values() if m.uses_classic_protocol)

    def all_members_use_classic_protocol_except(self, member_id: str) -> bool:
        return all(m.uses_classic_protocol for mid, m in self.members.items() if mid != member_id)

    def supports_classic_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        """Kafka's supportsClassicProtocols: consumer type and a protocol every classic member supports."""
        from coordinator.group.embedded_protocol import PROTOCOL_TYPE
        names = set(protocol_names)
        if protocol_type != PROTOCOL_TYPE or not names:
            return False
        classic = [m for m in self.members.values() if m.uses_classic_protocol]
        if not classic:
            return True
        return any(all(n in {p for p, _ in m.classic_metadata.supported_protocols} for m in classic)
                   for n in names)

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a partition of the member's target is still owned (at any epoch) by another member."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, parts in self.target_of(member.member_id).items():
            assigned = member.assigned_partitions.get(topic_id, frozenset())
            for p in parts:
                if p not in assigned and self.partition_epoch(topic_id, p) != -1:
                    return True
        return False

    # -- replay -----------------------------------------------------------------------------------------
    def replay_epoch(self, epoch: int, metadata_hash: int) -> None:
        self.group_epoch = epoch
        self.metadata_hash = metadata_hash
        self._update_state()

    def replay_member_subscription(self, member_id: str, value: ConsumerGroupMemberMetadataValue | None) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._remove_member(old)
            return
        base = old if old is not None else ConsumerGroupMember(member_id)
        self._put_member(old, base.updated_with_subscription(value))

    def replay_current_assignment(self, member_id: str, value: ConsumerGroupCurrentMemberAssignmentValue | None) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._put_member(old, replace(old, member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                              previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                                              assigned_partitions={}, partitions_pending_revocation={}))
            return
        base = old if old is not None else ConsumerGroupMember(member_id)
        self._put_member(old, base.updated_with_assignment(value))

    def replay_target_assignment(self, member_id: str, partitions: Partitions | None) -> None:
        old = self.target_assignment.pop(member_id, None)
        if old:
            for topic_id, parts in old.items():
                for p in parts:
                    if self.inverted_target_assignment.get((topic_id, p)) == member_id:
                        del self.inverted_target_assignment[(topic_id, p)]
        if partitions is not None:
            self.target_assignment[member_id] = dict(partitions)
            for topic_id, parts in partitions.items():
                for p in parts:
                    self.inverted_target_assignment[(topic_id, p)] = member_id
        self._update_state()

    def replay_assignment_epoch(self, epoch: int, timestamp_ms: int = 0) -> None:
        self.assignment_epoch = epoch
        self.assignment_timestamp = timestamp_ms
        self._update_state()

    def replay_regex(self, regex: str, resolved: ResolvedRegex | None) -> None:
        if resolved is None:
            self.resolved_regexes.pop(regex, None)
        else:
            self.resolved_regexes[regex] = resolved

    # -- bookkeeping ------------------------------------------------------------------------------------
    def _put_member(self, old: ConsumerGroupMember | None, new: ConsumerGroupMember) -> None:
        if old is not None:
            self._unindex(old)
        self.members[new.member_id] = new
        self._index(new)
        self._update_state()

    def _remove_member(self, old: ConsumerGroupMember) -> None:
        self._unindex(old)
        del self.members[old.member_id]
        self._update_state()

    def _index(self, m: ConsumerGroupMember) -> None:
        self.subscribed_topic_counts.update(m.subscribed_topic_names)
        if m.subscribed_topic_regex:
            self.regex_subscriber_counts[m.subscribed_topic_regex] += 1
        if m.server_assignor:
            self.server_assignor_counts[m.server_assignor] += 1
        if m.instance_id is not None:
            self.static_members[m.instance_id] = m.member_id
        for partitions in (m.assigned_partitions, m.partitions_pending_revocation):
            for topic_id, parts in partitions.items():
                for p in parts:
                    self.current_partition_epoch[(topic_id, p)] = m.member_epoch

    def _unindex(self, m: ConsumerGroupMember) -> None:
        self.subscribed_topic_counts.subtract(m.subscribed_topic_names)
        self.subscribed_topic_counts = +self.subscribed_topic_counts
        if m.subscribed_topic_regex:
            self.regex_subscriber_counts[m.subscribed_topic_regex] -= 1
            self.regex_subscriber_counts = +self.regex_subscriber_counts
        if m.server_assignor:
            self.server_assignor_counts[m.server_assignor] -= 1
            self.server_assignor_counts = +self.server_assignor_counts
        if m.instance_id is not None and self.static_members.get(m.instance_id) == m.member_id:
            del self.static_members[m.instance_id]
        for partitions in (m.assigned_partitions, m.partitions_pending_revocation):
            for topic_id, parts in partitions.items():
                for p in parts:
                    if self.current_partition_epoch.get((topic_id, p)) == m.member_epoch:
                        del self.current_partition_epoch[(topic_id, p)]

    def _update_state(self) -> None:
        if not self.members:
            self.state = ConsumerGroupState.EMPTY
        elif self.group_epoch > self.assignment_epoch:
            self.state = ConsumerGroupState.ASSIGNING
        elif any(not m.is_reconciled_to(self.assignment_epoch) for m in self.members.values()):
            self.state = ConsumerGroupState.RECONCILING
        else:
            self.state = ConsumerGroupState.STABLE

    # -- records for whole-group changes ---------------------------------------------------------------
    def tombstone_records(self, replaced: tuple[str, str] | None = None) -> list[rec.CoordinatorRecord]:
        """Kafka's createGroupTombstoneRecords (optionally with a leaving member id renamed)."""
        gid = self.group_id

        def mid(member_id: str) -> str:
            return replaced[1] if replaced is not None and member_id == replaced[0] else member_id

        out = [rec.consumer_group_current_assignment_tombstone(gid, mid(m)) for m in self.members]
        out += [rec.consumer_group_target_assignment_tombstone(gid, mid(m)) for m in self.members]
        out.append(rec.consumer_group_target_assignment_epoch_tombstone(gid))
        out += [rec.consumer_group_member_subscription_tombstone(gid, mid(m)) for m in self.members]
        out += [rec.consumer_group_regex_tombstone(gid, r) for r in sorted(self.resolved_regexes)]
        out.append(rec.consumer_group_partition_metadata_tombstone(gid))
        out.append(rec.consumer_group_epoch_tombstone(gid))
        return out

    def snapshot(self) -> dict:
        """Everything record-backed, for comparing a live group with one rebuilt by replay."""
        return {
            "type": "consumer",
            "group_epoch": self.group_epoch,
            "metadata_hash": self.metadata_hash,
            "assignment_epoch": self.assignment_epoch,
            "assignment_timestamp": self.assignment_timestamp,
            "state": self.state.value,
            "members": {k: v for k, v in sorted(self.members.items())},
            "target_assignment": {k: v for k, v in sorted(self.target_assignment.items())},
            "regexes": dict(sorted(self.resolved_regexes.items())),
        }

    def __repr__(self) -> str:
        return (f"ConsumerGroup({self.group_id!r}, state={self.state.value}, epoch={self.group_epoch}, "
                f"assignment_epoch={self.assignment_epoch}, members={list(self.members)})")
