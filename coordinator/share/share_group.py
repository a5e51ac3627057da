"""Share groups: members, heartbeats, expiry and the simple assignor (KIP-932's group side).

A member joins with ShareGroupHeartbeat epoch 0 and its subscribed topic names (the client picks its
member id), heartbeats every ``group.share.heartbeat.interval.ms`` and leaves with epoch -1; one that is
silent for ``group.share.session.timeout.ms`` is removed. Any change of members, subscriptions or the
subscribed topics' partitions (their metadata hash) bumps the group epoch and recomputes the target assignment
with ``simple_assign`` (at most every ``share.assignment.interval.ms``, KIP-1263: meanwhile members keep the last
assignment and a newcomer gets none); share groups have no revocation, so a member takes its new assignment (and the group
epoch as its member epoch) on its next heartbeat. As in Kafka, membership does not hold records: a
member's share session does, and ends (releasing them) when the client closes it or its connection.

Group states as Kafka names them: Empty (no members), Stable, Dead (deleted).

``ShareGroupCoordinator`` holds the share groups of one __consumer_offsets partition and lives in that
partition's ``GroupCoordinatorShard``, as share groups live in Kafka's group coordinator. Membership is
persisted there as Kafka 4.2 writes it (``share_group_records``): each operation updates the groups and returns
the records of the change (a diff of the group's view before and after, appended without replay, as classic
groups do), and ``replay`` rebuilds the same groups at load, so a group keeps its epochs, members (until their
session times out, counted from the load) and assignments across a restart or a coordinator failover.
Session timeouts run on the shard's ``CoordinatorTimer``, so an expiry's records are written like a request's.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coordinator.group import records as rec
from coordinator.group.topics import TopicsImage, metadata_hash
from coordinator.runtime.result import CoordinatorResult
from coordinator.runtime.timer import CoordinatorTimer
from coordinator.share import share_group_records as srec
from wire import ErrorCode

__all__ = ["ShareGroup", "ShareGroupCoordinator", "ShareMember", "simple_assign"]

log = logging.getLogger("pykbroker.coordinator.share")

LEAVE_GROUP_MEMBER_EPOCH = -1
JOIN_GROUP_MEMBER_EPOCH = 0

Assignment = dict[uuid.UUID, list[int]]


def simple_assign(members: list[str], partitions: list[tuple[uuid.UUID, int]],
                  current: dict[str, Assignment] | None = None) -> dict[str, Assignment]:
    """Kafka's SimpleAssignor for a homogeneous group, sticky: every partition goes to
    ``ceil(members / partitions)`` members, member ``i`` (in ``members`` order) wants its even share of those
    slots, and a member keeps what it has (``current``) up to that share; only the rest moves."""
    out: dict[str, Assignment] = {m: {} for m in members}
    if not members or not partitions:
        return out
    sharing = -(-len(members) // len(partitions))
    precise = sharing * len(partitions) / len(members)
    desired = [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(len(members))]
    wanted = set(partitions)
    holders: dict[tuple[uuid.UUID, int], list[str]] = {tp: [] for tp in partitions}
    owned: dict[str, set[tuple[uuid.UUID, int]]] = {m: set() for m in members}
    for i, m in enumerate(members):  # keep what is still wanted, up to the member's share and the sharing
        for topic_id, indexes in sorted((current or {}).get(m, {}).items()):
            for index in sorted(indexes):
                tp = (topic_id, index)
                if tp in wanted and len(owned[m]) < desired[i] and len(holders[tp]) < sharing:
                    owned[m].add(tp)
                    holders[tp].append(m)
    order = sorted(range(len(members)), key=lambda i: len(owned[members[i]]))
    for tp in partitions:  # fill the partitions' free slots from the least loaded members with room
        while len(holders[tp]) < sharing:
            candidates = [i for i in order if len(owned[members[i]]) < desired[i] and tp not in owned[members[i]]]
            if not candidates:
                candidates = [i for i in order if tp not in owned[members[i]]]
                if not candidates:
                    break
            i = min(candidates, key=lambda i: (len(owned[members[i]]) - desired[i], i))
            owned[members[i]].add(tp)
            holders[tp].append(members[i])
    for m in members:
        for topic_id, index in sorted(owned[m], key=lambda tp: (str(tp[0]), tp[1])):
            out[m].setdefault(topic_id, []).append(index)
    return out


@dataclass
class ShareMember:
    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed_topic_names: list[str]
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assignment: Assignment = field(default_factory=dict)


@dataclass
class ShareGroup:
    group_id: str
    # Kafka 4.3+ (ModernGroup): a new group is at epoch 1 with an assignment at epoch 1, so its first member
    # joins at epoch 2
    group_epoch: int = 1
    assignment_epoch: int = 1
    # when the assignment of ``assignment_epoch`` was computed (ms; 0: never, or the group became empty): the next
    # one waits ``share.assignment.interval.ms`` after it (KIP-1263)
    assignment_timestamp: int = 0
    metadata_hash: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    # topic id -> (topic name, partitions whose share-partition state this group initialized): only these are
    # assigned (ShareGroupStatePartitionMetadata's initialized topics)
    initialized: dict[uuid.UUID, tuple[str, set[int]]] = field(default_factory=dict)
    # topic id -> (topic name, partitions whose initialization is under way, when it started (ms; not persisted:
    # a replay counts from the load, as Kafka's does)); retried after group.share.initialize.retry.interval.ms
    initializing: dict[uuid.UUID, tuple[str, set[int], int]] = field(default_factory=dict)
    # topic id -> topic name: topics whose offsets DeleteShareGroupOffsets is deleting
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}

    def view(self) -> srec.GroupView:
        """What the records hold of this group (``share_group_records.records_between`` compares two)."""
        return srec.GroupView(
            self.group_epoch, self.metadata_hash, self.assignment_epoch,
            {m.member_id: srec.MemberView(m.rack_id, m.client_id, m.client_host, tuple(m.subscribed_topic_names),
                                          m.member_epoch, m.previous_member_epoch, srec.canonical(m.assignment))
             for m in self.members.values()},
            {mid: srec.canonical(a) for mid, a in self.target.items()},
            _topics({t: (name, p) for t, (name, p) in self.initialized.items()}),
            self.assignment_timestamp,
            _topics({t: (name, p) for t, (name, p, _) in self.initializing.items()}),
            tuple(sorted(self.deleting.items(), key=lambda kv: str(kv[0]))))

    def initialized_partitions(self, topic_id: uuid.UUID) -> set[int]:
        return self.initialized.get(topic_id, ("", set()))[1]


def _topics(topics: dict[uuid.UUID, tuple[str, set[int]]]) -> tuple[tuple[uuid.UUID, str, tuple[int, ...]], ...]:
    return tuple((t, name, tuple(sorted(p))) for t, (name, p) in sorted(topics.items(), key=lambda kv: str(kv[0]))
                 if p)


@dataclass(frozen=True)
class InitializeRequest:
    """Share-partitions whose state the group coordinator asks the share coordinator to initialize (Kafka's
    InitializeShareGroupStateParameters): ``topics`` maps a topic id to (partitions, start offset); the start
    offset is -1 (share.auto.offset.reset decides at the first fetch) for a topic new to the group and 0 for
    partitions added to a topic the group already has, so none of their records is missed. ``state_epoch`` is the
    group epoch, which the state is initialized at (as Kafka 4.4 does); state a partition already has is kept."""
    group_id: str
    state_epoch: int
    topics: dict[uuid.UUID, tuple[list[int], int]]


@dataclass(frozen=True)
class HeartbeatResult:
    error_code: int
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None
    error_message: str | None = None
    initialize: InitializeRequest | None = None


def _session_key(group_id: str, member_id: str) -> str:
    return f"share-session-timeout-{group_id}-{member_id}"


class ShareGroupCoordinator:
    """The share groups of one __consumer_offsets partition (see the module docstring)."""

    def __init__(self, timer: CoordinatorTimer, topics: TopicsImage, *, session_timeout_ms: int = 45_000,
                 heartbeat_interval_ms: int = 5_000, max_size: int = 200,
                 assignment_interval_ms: Callable[[str], int] = lambda group_id: 0,
                 now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
                 initialize_retry_interval_ms: int = 30_000) -> None:
        """``assignment_interval_ms(group_id)``: the group's share.assignment.interval.ms (KIP-1263);
        ``initialize_retry_interval_ms``: group.share.initialize.retry.interval.ms, after which a share-partition
        still initializing is asked for again."""
        self.timer = timer
        self.initialize_retry_interval_ms = initialize_retry_interval_ms
        self.assignment_interval_ms = assignment_interval_ms
        self.now_ms = now_ms
        self.topics = topics
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_size = max_size
        self.groups: dict[str, ShareGroup] = {}

    def _recorded(self, group_id: str, change: Any) -> CoordinatorResult:
        """Run ``change()`` on ``group_id`` and return its response with the records of what it changed."""
        group = self.groups.get(group_id)
        before = group.view() if group is not None else None
        response = change()
        group = self.groups.get(group_id)
        records = srec.records_between(group_id, before, group.view() if group is not None else None)
        return CoordinatorResult(records, response, replay=False)

    # -- heartbeat ---------------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed_topic_names: list[str] | None, client_id: str,
                  client_host: str) -> CoordinatorResult[HeartbeatResult]:
        return self._recorded(group_id, lambda: self._heartbeat(group_id, member_id, member_epoch, rack_id,
                                                                subscribed_topic_names, client_id, client_host))

    def _heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                   subscribed_topic_names: list[str] | None, client_id: str, client_host: str) -> HeartbeatResult:
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, error_message="GroupId can't be empty.")
        if not member_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, error_message="MemberId can't be empty.")
        group = self.groups.get(group_id)
        epoch_before = group.group_epoch if group is not None else 0
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if group is not None and member_id in group.members:
                self._remove_member(group, member_id, "left the group")
            return HeartbeatResult(ErrorCode.NONE, member_id, LEAVE_GROUP_MEMBER_EPOCH, 0)
        if member_epoch == JOIN_GROUP_MEMBER_EPOCH:
            if subscribed_topic_names is None:
                return HeartbeatResult(ErrorCode.INVALID_REQUEST,
                                       error_message="SubscribedTopicNames must be set in first request.")
            if group is None:
                group = self.groups[group_id] = ShareGroup(group_id)
            member = group.members.get(member_id)
            if member is None:
                if len(group.members) >= self.max_size:
                    return HeartbeatResult(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                           error_message=f"The share group has reached its maximum capacity of "
                                                         f"{self.max_size} members.")
                member = group.members[member_id] = ShareMember(member_id, client_id, client_host, rack_id,
                                                                list(subscribed_topic_names))
                group.group_epoch += 1
                log.info("share group %s: member %s (client %s) joined; group epoch %d", group_id, member_id,
                         client_id, group.group_epoch)
        else:
            member = group.members.get(member_id) if group is not None else None
            if member is None:
                return HeartbeatResult(ErrorCode.UNKNOWN_MEMBER_ID,
                                       error_message=f"Member {member_id} is not a member of group {group_id}.")
            if member_epoch > member.member_epoch:
                return HeartbeatResult(ErrorCode.FENCED_MEMBER_EPOCH,
                                       error_message=f"The share group member has a greater member epoch "
                                                     f"({member_epoch}) than the one known by the group coordinator "
                                                     f"({member.member_epoch}).")
        assert group is not None
        if subscribed_topic_names is not None and list(subscribed_topic_names) != member.subscribed_topic_names:
            member.subscribed_topic_names = list(subscribed_topic_names)
            group.group_epoch += 1
        elif group.group_epoch == epoch_before and group.assignment_epoch >= group.group_epoch \
                and self._initialized_assignment_pending(group):
            # share-partitions were initialized since the last assignment: assign them (once: while an assignment
            # waits for share.assignment.interval.ms, the epoch already asks for one)
            group.group_epoch += 1
        member.rack_id = rack_id if rack_id is not None else member.rack_id
        self._maybe_reassign(group, bumped=group.group_epoch != epoch_before)
        target = self._subscribed_part(member, group.target.get(member_id, {}))
        # as Kafka: the assignment goes with a full request (a join, or one naming the subscription) or when it changed
        new_assignment = {t: sorted(p) for t, p in target.items() if p}
        send = member_epoch == JOIN_GROUP_MEMBER_EPOCH or subscribed_topic_names is not None \
            or srec.canonical(member.assignment) != srec.canonical(new_assignment)
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assignment = {t: sorted(p) for t, p in target.items()}
        self._schedule_expiry(group, member)
        return HeartbeatResult(ErrorCode.NONE, member_id, member.member_epoch, self.heartbeat_interval_ms,
                               {t: sorted(p) for t, p in target.items()} if send else None,
                               initialize=self._start_initializing(group))

    def _subscribed_part(self, member: ShareMember, assignment: Assignment) -> Assignment:
        """The member's target assignment without the topics it no longer subscribes: as Kafka 4.4, a member that
        changes its subscription loses those at once (at the same member epoch), while the next target assignment
        may wait for share.assignment.interval.ms."""
        ids = {info.topic_id for name in member.subscribed_topic_names
               if (info := self.topics.by_name(name)) is not None}
        return {t: p for t, p in assignment.items() if t in ids}

    def _initialized_assignment_pending(self, group: ShareGroup) -> bool:
        """Kafka's initializedAssignmentPending: a subscribed topic's initialized partitions are not exactly those
        the target assignment holds, so the group epoch bumps and the next assignment takes them."""
        if not group.members or not group.initialized:
            return False
        subscribed = group.subscribed_topics()
        assigned: dict[uuid.UUID, set[int]] = {}
        for assignment in group.target.values():
            for topic_id, indexes in assignment.items():
                assigned.setdefault(topic_id, set()).update(indexes)
        return any(name in subscribed and assigned.get(topic_id) != partitions
                   for topic_id, (name, partitions) in group.initialized.items())

    def _start_initializing(self, group: ShareGroup) -> InitializeRequest | None:
        """The subscribed share-partitions neither initialized nor initializing (or initializing for longer than
        the retry interval), now marked initializing, as the request to initialize them (Kafka's
        maybeCreateInitializeShareGroupStateRequest)."""
        now = self.now_ms()
        fresh = {t: p for t, (_, p, since) in group.initializing.items()
                 if now - since < self.initialize_retry_interval_ms}
        known = set(group.initialized) | set(group.initializing)  # partitions added to these start at offset 0
        topics: dict[uuid.UUID, tuple[list[int], int]] = {}
        for name in sorted(group.subscribed_topics()):
            info = self.topics.by_name(name)
            if info is None:
                continue
            done = group.initialized_partitions(info.topic_id) | fresh.get(info.topic_id, set())
            missing = [p for p in range(info.num_partitions) if p not in done]
            if missing:
                topics[info.topic_id] = (missing, 0 if info.topic_id in known else -1)
                _, under_way, _ = group.initializing.get(info.topic_id, (name, set(), now))
                group.initializing[info.topic_id] = (name, under_way | set(missing), now)
                group.deleting.pop(info.topic_id, None)
        if not topics:
            return None
        log.info("share group %s: initializing share-partitions %s", group.group_id,
                 {str(t): p for t, (p, _) in topics.items()})
        return InitializeRequest(group.group_id, group.group_epoch, topics)

    def _maybe_reassign(self, group: ShareGroup, bumped: bool = False) -> None:
        """Recompute the target assignment if the group epoch moved; a change of the subscribed topics' metadata
        bumps the epoch, unless this change already did (``bumped``), as Kafka bumps it once per change."""
        partitions: list[tuple[uuid.UUID, int]] = []
        ids_by_name: dict[str, uuid.UUID] = {}
        subscribed = sorted(group.subscribed_topics())
        for name in subscribed:
            info = self.topics.by_name(name)
            if info is not None:
                ids_by_name[name] = info.topic_id
                initialized = group.initialized_partitions(info.topic_id)
                partitions.extend((info.topic_id, p) for p in range(info.num_partitions) if p in initialized)
        hashed = metadata_hash(self.topics, subscribed)
        if hashed != group.metadata_hash:
            # the topics changed (partitions added, a topic deleted, or created: also one that was missing or
            # deleted before, whose hash was 0, so a recreated topic is assigned again)
            if not bumped:
                group.group_epoch += 1
            group.metadata_hash = hashed
        if group.assignment_epoch == group.group_epoch and group.target.keys() == group.members.keys():
            return
        if group.members and not self._can_compute_next_target_assignment(group):
            return  # members keep the last assignment (a newcomer: none) until a heartbeat after the interval
        group.group_epoch = max(group.group_epoch, 1)
        # a homogeneous assignment per subscription: members with the same topics share them
        by_subscription: dict[tuple[str, ...], list[str]] = {}
        for m in group.members.values():
            by_subscription.setdefault(tuple(sorted(m.subscribed_topic_names)), []).append(m.member_id)
        target: dict[str, Assignment] = {}
        for topics, members in by_subscription.items():
            wanted = [(t, p) for t, p in partitions if any(ids_by_name.get(n) == t for n in topics)]
            target.update(simple_assign(members, wanted, group.target))
        group.target = target
        group.assignment_epoch = group.group_epoch
        # as Kafka's shareGroupFenceMember, a group that became empty writes its epoch with timestamp 0, so its
        # next member is assigned at once
        group.assignment_timestamp = self.now_ms() if group.members else 0

    def _can_compute_next_target_assignment(self, group: ShareGroup) -> bool:
        """KIP-1263 (Kafka 4.3): a new target assignment at most every share.assignment.interval.ms after the last
        one (always when none was computed yet, or since the group became empty, or with an interval of 0)."""
        interval = self.assignment_interval_ms(group.group_id)
        return group.assignment_timestamp == 0 or interval == 0 \
            or self.now_ms() >= group.assignment_timestamp + interval

    def _schedule_expiry(self, group: ShareGroup, member: ShareMember) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.timer.schedule(_session_key(group_id, member_id), self.session_timeout_ms,
                            lambda: self._recorded(group_id, lambda: self._expire(group_id, member_id)))

    def _expire(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            self._remove_member(group, member_id, "session timed out")

    def _remove_member(self, group: ShareGroup, member_id: str, why: str) -> None:
        group.members.pop(member_id)
        self.timer.cancel(_session_key(group.group_id, member_id))
        group.group_epoch += 1
        self._maybe_reassign(group, bumped=True)
        log.info("share group %s: member %s %s; group epoch %d", group.group_id, member_id, why, group.group_epoch)

    # -- admin -------------------------------------------------------------------------------------------
    def ensure_group(self, group_id: str) -> CoordinatorResult[ShareGroup]:
        """The group, created empty if unknown (AlterShareGroupOffsets on a group that never had members)."""
        def change() -> ShareGroup:
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = ShareGroup(group_id)
            return group
        return self._recorded(group_id, change)

    def initialized_state(self, group_id: str, topics: dict[uuid.UUID, tuple[str, list[int]]]
                          ) -> CoordinatorResult[None]:
        """The share coordinator initialized these share-partitions (Kafka's initializeShareGroupState): they move
        from initializing to initialized; the group's next heartbeat bumps its epoch and assigns them."""
        def change() -> None:
            group = self.groups.get(group_id)
            if group is None:
                return
            for topic_id, (name, partitions) in topics.items():
                known = group.initialized_partitions(topic_id)
                group.initialized[topic_id] = (name, known | set(partitions))
                self._drop_initializing(group, topic_id, partitions)
        return self._recorded(group_id, change)

    def uninitialized_state(self, group_id: str, topics: dict[uuid.UUID, list[int]]) -> CoordinatorResult[None]:
        """Initializing these share-partitions failed: no longer initializing, so a next heartbeat asks again."""
        def change() -> None:
            group = self.groups.get(group_id)
            if group is not None:
                for topic_id, partitions in topics.items():
                    self._drop_initializing(group, topic_id, partitions)
        return self._recorded(group_id, change)

    @staticmethod
    def _drop_initializing(group: ShareGroup, topic_id: uuid.UUID, partitions: list[int]) -> None:
        entry = group.initializing.get(topic_id)
        if entry is not None:
            left = entry[1] - set(partitions)
            if left:
                group.initializing[topic_id] = (entry[0], left, entry[2])
            else:
                del group.initializing[topic_id]

    def forget_topics(self, group_id: str, topic_ids: set[uuid.UUID]) -> CoordinatorResult[None]:
        """The topics were deleted (Kafka's maybeCleanupShareGroupState): the group forgets their share-partitions."""
        def change() -> None:
            group = self.groups.get(group_id)
            if group is not None:
                for topic_id in topic_ids:
                    group.initialized.pop(topic_id, None)
                    group.initializing.pop(topic_id, None)
                    group.deleting.pop(topic_id, None)
        return self._recorded(group_id, change)

    def start_deleting(self, group_id: str, topics: dict[uuid.UUID, str]) -> CoordinatorResult[dict[uuid.UUID, list[int]]]:
        """DeleteShareGroupOffsets (Kafka's sharePartitionsEligibleForOffsetDeletion): the topics' initialized
        share-partitions are no longer initialized and the topics are marked deleting until their state is
        deleted; answers the partitions whose state to delete per topic (all of a topic already deleting, so a
        retry finishes what a crash left). A topic absent from the answer has no offsets to delete."""
        def change() -> dict[uuid.UUID, list[int]]:
            group = self.groups.get(group_id)
            out: dict[uuid.UUID, list[int]] = {}
            if group is None:
                return out
            for topic_id, name in topics.items():
                if topic_id in group.initialized:
                    out[topic_id] = sorted(group.initialized.pop(topic_id)[1])
                    group.deleting[topic_id] = name
                elif topic_id in group.deleting:
                    info = self.topics.by_name(name)
                    out[topic_id] = list(range(info.num_partitions if info is not None else 0))
            return out
        return self._recorded(group_id, change)

    def deleted(self, group_id: str, topic_ids: set[uuid.UUID]) -> CoordinatorResult[None]:
        """The deleting topics' state is deleted (Kafka's completeDeleteShareGroupOffsets)."""
        def change() -> None:
            group = self.groups.get(group_id)
            if group is not None:
                for topic_id in topic_ids:
                    group.deleting.pop(topic_id, None)
        return self._recorded(group_id, change)

    def delete(self, group_id: str) -> CoordinatorResult[int]:
        def change() -> int:
            group = self.groups.get(group_id)
            if group is None:
                return ErrorCode.GROUP_ID_NOT_FOUND
            if group.members:
                return ErrorCode.NON_EMPTY_GROUP
            del self.groups[group_id]
            log.info("share group %s deleted", group_id)
            return ErrorCode.NONE
        return self._recorded(group_id, change)

    # -- replay and load ---------------------------------------------------------------------------------
    def replay(self, record: rec.CoordinatorRecord) -> None:
        """Apply one share-group record (types 10-15)."""
        key, value, t = record.key, record.value, record.record_type
        gid = key.group_id
        group = self.groups.get(gid)
        if group is None:
            if value is None:
                return
            group = self.groups[gid] = ShareGroup(gid)
        if t == rec.RecordType.SHARE_GROUP_METADATA:
            if value is None:
                for member_id in group.members:
                    self.timer.cancel(_session_key(gid, member_id))
                del self.groups[gid]
            else:
                group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
        elif t == rec.RecordType.SHARE_GROUP_MEMBER_METADATA:
            if value is None:
                if group.members.pop(key.member_id, None) is not None:
                    self.timer.cancel(_session_key(gid, key.member_id))
                return
            member = group.members.get(key.member_id)
            if member is None:
                member = group.members[key.member_id] = ShareMember(key.member_id, "", "", None, [])
            member.rack_id, member.client_id, member.client_host = value.rack_id, value.client_id, value.client_host
            member.subscribed_topic_names = list(value.subscribed_topic_names)
        elif t == rec.RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
            if value is not None:
                group.assignment_epoch = value.assignment_epoch
                group.assignment_timestamp = value.assignment_timestamp
        elif t == rec.RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                group.target.pop(key.member_id, None)
            else:
                group.target[key.member_id] = srec.assignment_of(value.topic_partitions)
        elif t == rec.RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            member = group.members.get(key.member_id)
            if value is not None and member is not None:
                member.member_epoch, member.previous_member_epoch = value.member_epoch, value.previous_member_epoch
                member.assignment = srec.assignment_of(value.assigned_partitions)
        elif t == rec.RecordType.SHARE_GROUP_STATE_PARTITION_METADATA:
            now = self.now_ms()
            group.initialized = {} if value is None else {
                i.topic_id: (i.topic_name, set(i.partitions)) for i in value.initialized_topics}
            group.initializing = {} if value is None else {
                i.topic_id: (i.topic_name, set(i.partitions), now) for i in value.initializing_topics}
            group.deleting = {} if value is None else {i.topic_id: i.topic_name for i in value.deleting_topics}

    def on_loaded(self) -> None:
        """As Kafka's onLoaded: every loaded member has a full session timeout to heartbeat again."""
        for group in self.groups.values():
            for member in group.members.values():
                self._schedule_expiry(group, member)
        if self.groups:
            log.info("%d share groups loaded (%d members)", len(self.groups),
                     sum(len(g.members) for g in self.groups.values()))
