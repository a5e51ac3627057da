"""A classic consumer group (JoinGroup/SyncGroup protocol): its states, members and generations.

The state machine (Kafka's ClassicGroupState) is ``ClassicGroupState``, the legal moves are
``LEGAL_TRANSITIONS``, and ``ClassicGroup.transition_to`` is the only way the state changes.

Durable part: a ``GroupMetadataValue`` record is the snapshot of a group at the points Kafka writes
one (a generation's assignment is received from the leader; the group becomes empty; a static member
is replaced). ``ClassicGroup.from_record`` rebuilds a group from it at load: Stable with its members,
or Empty. Everything else here (members waiting in JoinGroup/SyncGroup, pending members, the
rebalance in progress) lives in memory only, as in Kafka; after a failover clients simply rejoin.

Parked JoinGroup/SyncGroup requests are plain callbacks (``Responder``): this module does no I/O.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from coordinator.group import embedded_protocol
from coordinator.runtime.errors import ApiError
from wire import ErrorCode
from wire.messages import GroupMetadataValue, JoinGroupResponse, SyncGroupResponse
from wire.messages.describe_groups_response import DescribedGroupMember
from wire.messages.group_metadata_value import MemberMetadata
from wire.messages.join_group_response import JoinGroupResponseMember

__all__ = ["ClassicGroup", "ClassicGroupMember", "ClassicGroupState", "IllegalStateTransition",
           "LEGAL_TRANSITIONS", "Protocol", "Responder"]

# A parked request's answer: called once with the response.
Responder = Callable[[object], None]
# (protocol name, protocol metadata) in the member's order of preference.
Protocol = tuple[str, bytes]

EMPTY_ASSIGNMENT = b""
UNKNOWN_MEMBER_ID = ""
MEMBER_ID_DELIMITER = "-"


class ClassicGroupState(Enum):
    """The states of a classic group (names as Kafka reports them in DescribeGroups/ListGroups).

    EMPTY — no members, but committed offsets (or a simple consumer's) may remain. JoinGroup from new
        members is accepted (-> PREPARING_REBALANCE); SyncGroup, Heartbeat and LeaveGroup get
        UNKNOWN_MEMBER_ID; offset commits only from generation -1 (simple consumers, admin). Moves to
        DEAD when its offsets expire or it is deleted.
    PREPARING_REBALANCE — a rebalance started: JoinGroups are parked until every known member has
        rejoined or the rebalance timeout passes; heartbeats and SyncGroup get REBALANCE_IN_PROGRESS.
        Moves to COMPLETING_REBALANCE when the join phase completes with members, to EMPTY without.
    COMPLETING_REBALANCE — the generation is chosen and JoinGroup answered; waiting for the leader's
        SyncGroup with the assignment (followers' SyncGroups are parked). Moves to STABLE when the
        assignment is stored, back to PREPARING_REBALANCE when membership changes.
    STABLE — every member has its assignment. Heartbeats, offset commits of this generation and
        SyncGroup (answered with the stored assignment) are served. A new member, a leaving or failed
        member, the leader rejoining or a member with changed metadata -> PREPARING_REBALANCE.
    DEAD — the group is being removed (deleted, expired, converted, or its partition unloaded);
        requests get COORDINATOR_NOT_AVAILABLE or UNKNOWN_MEMBER_ID so clients look it up again.
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = ClassicGroupState
# from -> the states it may move to (Kafka's validPreviousStates, read the other way round).
LEGAL_TRANSITIONS: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    S.EMPTY: frozenset({S.PREPARING_REBALANCE, S.DEAD}),
    S.PREPARING_REBALANCE: frozenset({S.EMPTY, S.COMPLETING_REBALANCE, S.DEAD}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE, S.STABLE, S.DEAD}),
    S.STABLE: frozenset({S.PREPARING_REBALANCE, S.DEAD}),
    S.DEAD: frozenset({S.DEAD}),
}


class IllegalStateTransition(RuntimeError):
    """A move that LEGAL_TRANSITIONS does not allow: a coordinator bug, never a client error."""


@dataclass(eq=False)
class ClassicGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: list[Protocol]
    assignment: bytes = EMPTY_ASSIGNMENT
    awaiting_join: Responder | None = None
    awaiting_sync: Responder | None = None
    is_new: bool = False

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session expiry should spare the member (it waits in JoinGroup/SyncGroup)."""
        if self.is_new:
            return False
        return self.is_awaiting_join or self.is_awaiting_sync

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.supported_protocols]

    def matches(self, protocols: list[Protocol]) -> bool:
        return list(protocols) == list(self.supported_protocols)

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.supported_protocols:
            if name == protocol_name:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.supported_protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")

    def describe(self, protocol_name: str | None) -> DescribedGroupMember:
        return DescribedGroupMember(member_id=self.member_id, group_instance_id=self.group_instance_id,
                                    client_id=self.client_id, client_host=self.client_host,
                                    member_metadata=self.metadata(protocol_name) if protocol_name else b"",
                                    member_assignment=self.assignment)


class ClassicGroup:
    """One classic group; mutated only by its shard's task."""

    def __init__(self, group_id: str, now_ms: int, state: ClassicGroupState = S.EMPTY, generation_id: int = 0,
                 protocol_type: str | None = None, protocol_name: str | None = None, leader_id: str | None = None,
                 current_state_timestamp: int | None = None) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = state
        self.current_state_timestamp: int | None = (current_state_timestamp if current_state_timestamp is not None
                                                    else now_ms)
        self.generation_id = generation_id
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader_id = leader_id
        self.members: dict[str, ClassicGroupMember] = {}
        self.static_members: dict[str, str] = {}
        self.pending_join_members: set[str] = set()
        self.pending_sync_members: set[str] = set()
        self.supported_protocols: Counter[str] = Counter()
        self.num_members_awaiting_join = 0
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None

    # -- state ------------------------------------------------------------------------------------------
    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        """Move to ``target``; refuses moves LEGAL_TRANSITIONS does not allow."""
        if target not in LEGAL_TRANSITIONS[self.state]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state.value} -> {target.value} is not allowed")
        self.previous_state = self.state
        self.state = target
        self.current_state_timestamp = now_ms

    def is_in(self, *states: ClassicGroupState) -> bool:
        return self.state in states

    def can_rebalance(self) -> bool:
        return S.PREPARING_REBALANCE in LEGAL_TRANSITIONS[self.state]

    @property
    def is_empty(self) -> bool:
        return self.state is S.EMPTY

    @property
    def is_simple_group(self) -> bool:
        """An empty group without protocol type: created by offset commits alone, backed by no record."""
        return self.protocol_type is None and self.state is S.EMPTY and not self.members

    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == embedded_protocol.PROTOCOL_TYPE

    # -- members ----------------------------------------------------------------------------------------
    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id is not None and self.leader_id == member_id

    def add(self, member: ClassicGroupMember, responder: Responder | None = None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise ValueError(f"static member {member.group_instance_id} is already in group {self.group_id}")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError("the group and member protocol types differ")
        if not self.supports_protocols(member.protocol_type, member.protocol_names()):
            raise ValueError("none of the member's protocols is supported")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(member.protocol_names())
        member.awaiting_join = responder
        if member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self.supported_protocols.subtract(removed.protocol_names())
            if removed.is_awaiting_join:
                self.num_members_awaiting_join -= 1
            if removed.group_instance_id is not None:
                self.static_members.pop(removed.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: ClassicGroupMember, protocols: list[Protocol], rebalance_timeout_ms: int,
                      session_timeout_ms: int, responder: Responder | None) -> None:
        self.supported_protocols.subtract(member.protocol_names())
        member.supported_protocols = list(protocols)
        self.supported_protocols.update(member.protocol_names())
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if responder is not None and not member.is_awaiting_join:
            self.num_members_awaiting_join += 1
        elif responder is None and member.is_awaiting_join:
            self.num_members_awaiting_join -= 1
        member.awaiting_join = responder

    def replace_static_member(self, instance_id: str, old_member_id: str, new_member_id: str) -> ClassicGroupMember:
        """Give a static member's place to a new member id, fencing whoever waits under the old id."""
        removed = self.members.pop(old_member_id, None)
        if removed is None:
            raise ValueError(f"cannot replace unknown member {old_member_id}")
        self.complete_join(removed, JoinGroupResponse(
            error_code=ErrorCode.FENCED_INSTANCE_ID, member_id=old_member_id, leader="", members=[],
            protocol_type=None, protocol_name=None, skip_assignment=False, generation_id=-1))
        self.complete_sync(removed, SyncGroupResponse(error_code=ErrorCode.FENCED_INSTANCE_ID, assignment=b"",
                                                      protocol_type=None, protocol_name=None))
        new_member = ClassicGroupMember(
            member_id=new_member_id, group_instance_id=removed.group_instance_id, client_id=removed.client_id,
            client_host=removed.client_host, rebalance_timeout_ms=removed.rebalance_timeout_ms,
            session_timeout_ms=removed.session_timeout_ms, protocol_type=removed.protocol_type,
            supported_protocols=list(removed.supported_protocols), assignment=removed.assignment)
        self.members[new_member_id] = new_member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[instance_id] = new_member_id
        return new_member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def add_pending_member(self, member_id: str) -> None:
        if member_id in self.members:
            raise ValueError(f"{member_id} is already a member")
        self.pending_join_members.add(member_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_join_members

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_members_awaiting_join and not self.pending_join_members

    def not_yet_rejoined_members(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """Kafka's validateMember: FENCED_INSTANCE_ID / UNKNOWN_MEMBER_ID."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise ApiError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)

    # -- protocols --------------------------------------------------------------------------------------
    def supports_protocols(self, protocol_type: str, protocol_names: Iterable[str]) -> bool:
        names = list(protocol_names)
        if self.state is S.EMPTY:
            return bool(protocol_type) and bool(names)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols.get(n, 0) == len(self.members) for n in names))

    def candidate_protocols(self) -> set[str]:
        return {name for name, count in self.supported_protocols.items() if count == len(self.members)}

    def select_protocol(self) -> str:
        """The protocol every member supports that most members prefer (ties: first member's order)."""
        if not self.members:
            raise ValueError("cannot select a protocol for an empty group")
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        first = next(iter(self.members.values()))
        for name in first.protocol_names():
            if votes.get(name) == best:
                return name
        return max(votes, key=votes.__getitem__)

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, when the group uses the consumer protocol and it parses."""
        if self.protocol_type != embedded_protocol.PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for m in self.members.values():
                topics.update(embedded_protocol.parse_subscription(m.metadata(self.protocol_name)).topics)
        except embedded_protocol.EmbeddedProtocolError:
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        if self.subscribed_topics is not None:
            return topic in self.subscribed_topics
        return self.uses_consumer_protocol()

    # -- generations ------------------------------------------------------------------------------------
    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(S.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(S.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick a member that did; False if none rejoined."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def current_members_for_leader(self) -> list[JoinGroupResponseMember]:
        if self.state in (S.DEAD, S.PREPARING_REBALANCE):
            raise ValueError(f"no member metadata for group {self.group_id} in state {self.state.value}")
        return [JoinGroupResponseMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                                        metadata=m.metadata(self.protocol_name))
                for m in self.members.values()]

    def group_assignment(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

    # -- parked requests --------------------------------------------------------------------------------
    def complete_join(self, member: ClassicGroupMember, response: JoinGroupResponse) -> bool:
        if member.awaiting_join is None:
            return False
        responder, member.awaiting_join = member.awaiting_join, None
        self.num_members_awaiting_join -= 1
        responder(response)
        return True

    def complete_all_joins(self, error_code: int) -> None:
        for member_id, member in list(self.members.items()):
            self.complete_join(member, JoinGroupResponse(error_code=error_code, member_id=member_id))

    def complete_sync(self, member: ClassicGroupMember, response: SyncGroupResponse) -> bool:
        if member.awaiting_sync is None:
            return False
        responder, member.awaiting_sync = member.awaiting_sync, None
        responder(response)
        return True

    def complete_all_syncs(self, error_code: int) -> None:
        for member in list(self.members.values()):
            self.complete_sync(member, SyncGroupResponse(error_code=error_code))

    # -- records ----------------------------------------------------------------------------------------
    def to_record_value(self, assignment: dict[str, bytes]) -> GroupMetadataValue:
        """The GroupMetadataValue Kafka writes for this group with the given assignment."""
        members = []
        for m in self.members.values():
            if self.protocol_name is None:
                raise ValueError("cannot write a non-empty group without a protocol")
            members.append(MemberMetadata(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms, subscription=m.metadata(self.protocol_name),
                assignment=assignment.get(m.member_id, EMPTY_ASSIGNMENT)))
        return GroupMetadataValue(protocol_type=self.protocol_type or "", generation=self.generation_id,
                                  protocol=self.protocol_name, leader=self.leader_id,
                                  current_state_timestamp=(-1 if self.current_state_timestamp is None
                                                           else self.current_state_timestamp),
                                  members=members)

    @classmethod
    def from_record(cls, group_id: str, value: GroupMetadataValue, now_ms: int) -> ClassicGroup:
        """The group a GroupMetadataValue describes: Stable with its members, or Empty."""
        group = cls(group_id, now_ms, state=S.STABLE if value.members else S.EMPTY, generation_id=value.generation,
                    protocol_type=value.protocol_type or None, protocol_name=value.protocol, leader_id=value.leader)
        # Old records (v0/v1) carry no state timestamp: expiry then falls back to commit timestamps.
        group.current_state_timestamp = None if value.current_state_timestamp == -1 else value.current_state_timestamp
        for m in value.members:
            group.add(ClassicGroupMember(
                member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout,
                session_timeout_ms=m.session_timeout, protocol_type=value.protocol_type,
                supported_protocols=[(value.protocol or "", m.subscription)], assignment=m.assignment))
        group.subscribed_topics = group.compute_subscribed_topics()
        return group

    def __repr__(self) -> str:
        return (f"ClassicGroup({self.group_id!r}, state={self.state.value}, generation={self.generation_id}, "
                f"protocol_type={self.protocol_type!r}, members={list(self.members)})")
