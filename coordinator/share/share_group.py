"""Share groups: members, heartbeats, expiry and the simple assignor (KIP-932's group side).

A member joins with ShareGroupHeartbeat epoch 0 and its subscribed topic names (the client picks its
member id), heartbeats every ``group.share.heartbeat.interval.ms`` and leaves with epoch -1; one that is
silent for ``group.share.session.timeout.ms`` is removed. Any change of members, subscriptions or the
subscribed topics' partitions bumps the group epoch and recomputes the target assignment with
``simple_assign``; share groups have no revocation, so a member takes its new assignment (and the group
epoch as its member epoch) on its next heartbeat. As in Kafka, membership does not hold records: a
member's share session does, and ends (releasing them) when the client closes it or its connection.

Group states as Kafka names them: Empty (no members), Stable, Dead (deleted).

Not persisted: membership is rebuilt from heartbeats after a restart (clients rejoin on UNKNOWN_MEMBER_ID);
the groups themselves and their share-partition state survive through __share_group_state.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from coordinator.runtime.clock import Clock, TimerHandle
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
    assignment: Assignment = field(default_factory=dict)
    timer: TimerHandle | None = None


@dataclass
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    partitions_seen: tuple = ()

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed_topic_names}


@dataclass(frozen=True)
class HeartbeatResult:
    error_code: int
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None
    error_message: str | None = None


class ShareGroupCoordinator:
    def __init__(self, clock: Clock, topics: Callable[[str], tuple[uuid.UUID, int] | None], *,
                 session_timeout_ms: int = 45_000, heartbeat_interval_ms: int = 5_000, max_size: int = 200) -> None:
        self.clock = clock
        self._topics = topics
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_size = max_size
        self.groups: dict[str, ShareGroup] = {}

    # -- heartbeat ---------------------------------------------------------------------------------------
    def heartbeat(self, group_id: str, member_id: str, member_epoch: int, rack_id: str | None,
                  subscribed_topic_names: list[str] | None, client_id: str, client_host: str) -> HeartbeatResult:
        if not group_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, error_message="GroupId can't be empty.")
        if not member_id:
            return HeartbeatResult(ErrorCode.INVALID_REQUEST, error_message="MemberId can't be empty.")
        group = self.groups.get(group_id)
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
        member.rack_id = rack_id if rack_id is not None else member.rack_id
        self._maybe_reassign(group)
        target = group.target.get(member_id, {})
        send = member_epoch != group.assignment_epoch or member.member_epoch != group.assignment_epoch \
            or member_epoch == JOIN_GROUP_MEMBER_EPOCH
        member.assignment = target
        member.member_epoch = group.assignment_epoch
        self._schedule_expiry(group, member)
        return HeartbeatResult(ErrorCode.NONE, member_id, member.member_epoch, self.heartbeat_interval_ms,
                               {t: sorted(p) for t, p in target.items()} if send else None)

    def _maybe_reassign(self, group: ShareGroup) -> None:
        partitions: list[tuple[uuid.UUID, int]] = []
        ids_by_name: dict[str, uuid.UUID] = {}
        for name in sorted(group.subscribed_topics()):
            described = self._topics(name)
            if described is not None:
                topic_id, count = described
                ids_by_name[name] = topic_id
                partitions.extend((topic_id, p) for p in range(count))
        seen = tuple(partitions)
        if seen != group.partitions_seen:
            if group.partitions_seen:
                group.group_epoch += 1
            group.partitions_seen = seen
        if group.assignment_epoch == group.group_epoch and group.target.keys() == group.members.keys():
            return
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

    def _schedule_expiry(self, group: ShareGroup, member: ShareMember) -> None:
        if member.timer is not None:
            member.timer.cancel()
        group_id, member_id = group.group_id, member.member_id
        member.timer = self.clock.call_later(self.session_timeout_ms, lambda: self._expire(group_id, member_id))

    def _expire(self, group_id: str, member_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.members:
            self._remove_member(group, member_id, "session timed out")

    def _remove_member(self, group: ShareGroup, member_id: str, why: str) -> None:
        member = group.members.pop(member_id)
        if member.timer is not None:
            member.timer.cancel()
        group.group_epoch += 1
        self._maybe_reassign(group)
        log.info("share group %s: member %s %s; group epoch %d", group.group_id, member_id, why, group.group_epoch)

    # -- admin -------------------------------------------------------------------------------------------
    def ensure_group(self, group_id: str) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ShareGroup(group_id)
        return group

    def delete(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        log.info("share group %s deleted", group_id)
        return ErrorCode.NONE

    def close(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                if member.timer is not None:
                    member.timer.cancel()
