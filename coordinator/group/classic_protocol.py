"""The classic group membership protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

A collaborator of ``GroupMetadataManager``, given the shard's group map, config, clock and timer; JoinGroup
and friends for consumer groups go to the consumer protocol (``consumer``).
The logic follows Kafka's GroupMetadataManager step by step: a rebalance parks JoinGroups until every
member has rejoined (or the rebalance timeout passes; the first rebalance of an empty group waits
``group.initial.rebalance.delay.ms`` more for others to join), elects a leader, answers every
JoinGroup with the new generation, then waits for the leader's SyncGroup. The assignment is stored as
a GroupMetadata record before SyncGroups are answered; that record, and the one written when a group
becomes empty, are the only durable parts of a classic group (``replay=False``: the in-memory group is
already up to date).

Requests that return later (JoinGroup, SyncGroup) are given a ``Responder`` callback.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from coordinator.group import records as rec
from coordinator.group.classic_group import (
    EMPTY_ASSIGNMENT,
    MEMBER_ID_DELIMITER,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicGroupMember,
    ClassicGroupState,
    Responder,
)
from coordinator.group.request_info import RequestInfo
from coordinator.runtime.errors import ApiError, append_error_to_response_error
from coordinator.runtime.result import CoordinatorResult
from wire import ErrorCode
from wire.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from wire.messages.leave_group_response import MemberResponse

if TYPE_CHECKING:
    import uuid
    from collections.abc import Callable

    from coordinator.group.config import GroupCoordinatorConfig
    from coordinator.group.consumer_protocol import ConsumerProtocol
    from coordinator.group.group_map import GroupMap
    from coordinator.runtime.clock import Clock
    from coordinator.runtime.timer import CoordinatorTimer

__all__ = ["ClassicProtocol", "join_key", "sync_key", "heartbeat_key"]

log = logging.getLogger("pykbroker.coordinator.group")

S = ClassicGroupState
EMPTY_RESULT: CoordinatorResult = CoordinatorResult()


def join_key(group_id: str) -> str:
    return f"join-{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync-{group_id}"


def heartbeat_key(group_id: str, member_id: str) -> str:
    return f"heartbeat-{group_id}-{member_id}"


def requires_known_member_id(api_version: int) -> bool:
    """JoinGroup v4+: a new member first gets MEMBER_ID_REQUIRED with its id (KIP-394)."""
    return api_version >= 4


def supports_skipping_assignment(api_version: int) -> bool:
    return api_version >= 9


def _protocols(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
    return [(p.name, p.metadata) for p in request.protocols]


def _is_protocol_inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and current is not None and requested != current


class ClassicProtocol:
    """JoinGroup / SyncGroup / Heartbeat / LeaveGroup against classic groups."""

    def __init__(self, groups: GroupMap, config: GroupCoordinatorConfig, clock: Clock, timer: CoordinatorTimer,
                 new_uuid: Callable[[], uuid.UUID], consumer: ConsumerProtocol) -> None:
        """``groups``: the shard's group map; ``consumer``: the consumer protocol, which serves classic members
        of consumer groups."""
        self.groups = groups
        self.config = config
        self.clock = clock
        self.timer = timer
        self.new_uuid = new_uuid
        self.consumer = consumer

    # -- JoinGroup --------------------------------------------------------------------------------------
    def classic_group_join(self, info: RequestInfo, request: JoinGroupRequest,
                           responder: Responder) -> CoordinatorResult:
        from coordinator.group.consumer_group import ConsumerGroup
        converted: list[rec.CoordinatorRecord] = []
        if self.groups.other_type(request.group_id):
            # A streams group's id: Kafka's classicGroupJoin converts an empty one to a classic group (its stored
            # topology description deleted with it), and refuses a live one.
            released = self.groups.release_empty_other(request.group_id)
            if released is None:
                responder(JoinGroupResponse(member_id=request.member_id,
                                            error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
                return EMPTY_RESULT
            converted = released
        group = self.groups.get(request.group_id)
        if isinstance(group, ConsumerGroup) and not group.is_empty:
            return self.consumer.classic_group_join_to_consumer_group(group, info, request, responder)
        return self._classic_group_join_to_classic_group(info, request, responder, converted)

    def _classic_group_join_to_classic_group(self, info: RequestInfo, request: JoinGroupRequest, responder: Responder,
                                             converted: list[rec.CoordinatorRecord]) -> CoordinatorResult:
        group_id, member_id = request.group_id, request.member_id
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        records = converted + self.consumer.maybe_delete_empty_consumer_group(group_id)
        is_new_group = group_id not in self.groups
        try:
            group = self.groups.get_or_create_classic_group(group_id, is_unknown)
        except ApiError:
            responder(JoinGroupResponse(member_id=member_id, error_code=ErrorCode.UNKNOWN_MEMBER_ID))
            return CoordinatorResult(records, replay=False) if records else EMPTY_RESULT

        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            responder(JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.GROUP_MAX_SIZE_REACHED))
            result = EMPTY_RESULT
        elif is_unknown:
            result = self._join_new_member(info, request, group, responder)
        else:
            result = self._join_existing_member(info, request, group, responder)

        if is_new_group and not result.records:
            # Commit the new group to the log even though nothing else is written yet.
            def on_appended(exc: BaseException | None) -> None:
                if exc is None:
                    return
                # The group was never written: forget it again (Kafka reverts its snapshot).
                if self.groups.get(group_id) is group and group.is_empty:
                    del self.groups[group_id]
                code = append_error_to_response_error(getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
                responder(JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID, error_code=code))
            records.append(rec.group_metadata_record(group_id, self._empty_group_value(group)))
            return CoordinatorResult(records, on_appended=on_appended, replay=False)
        if records:
            return CoordinatorResult([*records, *result.records], result.response, result.on_appended, replay=False)
        return result

    def _empty_group_value(self, group: ClassicGroup):
        from wire.messages import GroupMetadataValue
        return GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None,
                                  current_state_timestamp=(-1 if group.current_state_timestamp is None
                                                           else group.current_state_timestamp), members=[])

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        max_size = self.config.group_max_size
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.state is S.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (member is not None and member.is_awaiting_join) or group.num_members_awaiting_join < max_size
        return member_id in group.members or len(group.members) < max_size

    def _generate_member_id(self, client_id: str, instance_id: str | None) -> str:
        return f"{instance_id if instance_id is not None else client_id}{MEMBER_ID_DELIMITER}{self.new_uuid()}"

    def _join_new_member(self, info: RequestInfo, request: JoinGroupRequest,
                         group: ClassicGroup, responder: Responder) -> CoordinatorResult:
        if group.state is S.DEAD:
            responder(JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return EMPTY_RESULT
        if not group.supports_protocols(request.protocol_type, [p.name for p in request.protocols]):
            responder(JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return EMPTY_RESULT
        new_member_id = self._generate_member_id(info.client_id, request.group_instance_id)
        if request.group_instance_id is not None:
            existing = group.static_member_id(request.group_instance_id)
            if existing is not None:
                log.info("static member %s of group %s rejoins with an unknown member id; replacing %s by %s",
                         request.group_instance_id, group.group_id, existing, new_member_id)
                return self._update_static_member_then_rebalance_or_complete_join(
                    info, request, group, existing, new_member_id, responder)
            return self._add_member_then_rebalance_or_complete_join(info, request, group, new_member_id, responder)
        if requires_known_member_id(info.api_version):
            group.add_pending_member(new_member_id)
            self.timer.schedule(heartbeat_key(group.group_id, new_member_id), request.session_timeout_ms,
                                lambda: self._expire_classic_heartbeat(group.group_id, new_member_id))
            responder(JoinGroupResponse(member_id=new_member_id, error_code=ErrorCode.MEMBER_ID_REQUIRED))
            return EMPTY_RESULT
        return self._add_member_then_rebalance_or_complete_join(info, request, group, new_member_id, responder)

    def _join_existing_member(self, info: RequestInfo, request: JoinGroupRequest,
                              group: ClassicGroup, responder: Responder) -> CoordinatorResult:
        member_id = request.member_id
        if group.state is S.DEAD:
            responder(JoinGroupResponse(member_id=member_id, error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return EMPTY_RESULT
        if not group.supports_protocols(request.protocol_type, [p.name for p in request.protocols]):
            responder(JoinGroupResponse(member_id=member_id, error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
            return EMPTY_RESULT
        if group.is_pending_member(member_id):
            if request.group_instance_id is not None:
                raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR, "a pending member cannot be static")
            return self._add_member_then_rebalance_or_complete_join(info, request, group, member_id, responder)
        try:
            group.validate_member(member_id, request.group_instance_id)
        except ApiError as exc:
            responder(JoinGroupResponse(member_id=member_id, error_code=exc.error_code, protocol_type=None,
                                        protocol_name=None))
            return EMPTY_RESULT
        member = group.members[member_id]
        protocols = _protocols(request)
        if group.state is S.PREPARING_REBALANCE:
            return self._update_member_then_rebalance_or_complete_join(request, group, member, responder)
        if group.state is S.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # The member lost the JoinGroup response: answer again with this generation.
                responder(self._join_response(group, member_id, with_members=group.is_leader(member_id)))
                return EMPTY_RESULT
            return self._update_member_then_rebalance_or_complete_join(request, group, member, responder)
        if group.state is S.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                # The leader rejoining forces a rebalance (e.g. for topic metadata changes).
                return self._update_member_then_rebalance_or_complete_join(request, group, member, responder)
            responder(self._join_response(group, member_id, with_members=False))
            return EMPTY_RESULT
        # Empty: the member is not known any more; it must rejoin from scratch.
        responder(JoinGroupResponse(member_id=member_id, error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        return EMPTY_RESULT

    @staticmethod
    def _join_response(group: ClassicGroup, member_id: str, with_members: bool,
                       skip_assignment: bool = False) -> JoinGroupResponse:
        return JoinGroupResponse(
            error_code=ErrorCode.NONE, members=group.current_members_for_leader() if with_members else [],
            member_id=member_id, generation_id=group.generation_id, protocol_name=group.protocol_name,
            protocol_type=group.protocol_type, leader=group.leader_id or "", skip_assignment=skip_assignment)

    def _update_member_then_rebalance_or_complete_join(self, request: JoinGroupRequest,
                                                       group: ClassicGroup, member: ClassicGroupMember,
                                                       responder: Responder) -> CoordinatorResult:
        group.update_member(member, _protocols(request), request.rebalance_timeout_ms, request.session_timeout_ms,
                            responder)
        return self.maybe_prepare_rebalance_or_complete_join(group, f"member {member.member_id} rejoined")

    def _add_member_then_rebalance_or_complete_join(self, info: RequestInfo,
                                                    request: JoinGroupRequest, group: ClassicGroup, member_id: str,
                                                    responder: Responder) -> CoordinatorResult:
        member = ClassicGroupMember(
            member_id=member_id, group_instance_id=request.group_instance_id, client_id=info.client_id,
            client_host=info.client_host, rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms, protocol_type=request.protocol_type,
            supported_protocols=_protocols(request), is_new=True)
        if group.state is S.PREPARING_REBALANCE and group.previous_state is S.EMPTY:
            group.new_member_added = True
        group.add(member, responder)
        # New members cannot heartbeat while parked: time their JoinGroup out instead.
        self._reschedule_heartbeat(group, member, self.config.classic_group_new_member_join_timeout_ms)
        return self.maybe_prepare_rebalance_or_complete_join(group, f"adding new member {member_id}")

    def maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup,
                                                 reason: str) -> CoordinatorResult:
        if group.can_rebalance():
            return self.prepare_rebalance(group, reason)
        return self._maybe_complete_join_phase(group)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> CoordinatorResult:
        if group.state is S.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_with_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial = group.state is S.EMPTY
        if initial:
            delay = self.config.group_initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            gid = group.group_id
            self.timer.schedule(join_key(gid), delay,
                                lambda: self._try_complete_initial_rebalance(gid, delay, remaining))
        group.transition_to(S.PREPARING_REBALANCE, self.clock.now_ms())
        log.info("preparing to rebalance group %s (generation %d): %s", group.group_id, group.generation_id, reason)
        return EMPTY_RESULT if initial else self._maybe_complete_join_else_schedule(group)

    def _maybe_complete_join_else_schedule(self, group: ClassicGroup) -> CoordinatorResult:
        if group.has_all_members_joined():
            return self._complete_join(group)
        gid = group.group_id
        self.timer.schedule(join_key(gid), group.rebalance_timeout_ms(), lambda: self._complete_join_by_id(gid))
        return EMPTY_RESULT

    def _try_complete_initial_rebalance(self, group_id: str, delay_ms: int,
                                        remaining_ms: int) -> CoordinatorResult:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            return EMPTY_RESULT
        if group.new_member_added and remaining_ms != 0:
            # Someone joined during the delay: wait a little longer for more.
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)
            self.timer.schedule(join_key(group_id), new_delay,
                                lambda: self._try_complete_initial_rebalance(group_id, new_delay, new_remaining))
            return EMPTY_RESULT
        return self._complete_join(group)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> CoordinatorResult:
        if group.state is not S.PREPARING_REBALANCE:
            return EMPTY_RESULT
        if group.previous_state is S.EMPTY:
            return EMPTY_RESULT  # the initial rebalance completes on its delay timer
        if not group.has_all_members_joined():
            return EMPTY_RESULT
        return self._complete_join(group)

    def _complete_join_by_id(self, group_id: str) -> CoordinatorResult:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            return EMPTY_RESULT
        return self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> CoordinatorResult:
        """End the join phase: drop dynamic members that did not rejoin, start the next generation."""
        gid = group.group_id
        self.timer.cancel(join_key(gid))
        for member in [m for m in group.not_yet_rejoined_members() if not m.is_static]:
            group.remove(member.member_id)
            self.timer.cancel(heartbeat_key(gid, member.member_id))
        if group.state is S.DEAD:
            return EMPTY_RESULT
        if not group.maybe_elect_new_joined_leader() and group.members:
            # Nobody rejoined: wait another rebalance timeout for sessions to expire.
            self.timer.schedule(join_key(gid), group.rebalance_timeout_ms(), lambda: self._complete_join_by_id(gid))
            return EMPTY_RESULT
        group.init_next_generation(self.clock.now_ms())
        if group.state is S.EMPTY:
            log.info("group %s with generation %d is now empty", gid, group.generation_id)
            return CoordinatorResult([rec.group_metadata_record(gid, group.to_record_value({}))], replay=False)
        log.info("stabilized group %s generation %d with %d members", gid, group.generation_id, len(group.members))
        for member in list(group.members.values()):
            response = self._join_response(group, member.member_id, with_members=group.is_leader(member.member_id))
            group.complete_join(member, response)
            self.reschedule_classic_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        generation = group.generation_id
        self.timer.schedule(sync_key(gid), group.rebalance_timeout_ms(),
                            lambda: self._expire_pending_sync(gid, generation))
        return EMPTY_RESULT

    def _update_static_member_then_rebalance_or_complete_join(
            self, info: RequestInfo, request: JoinGroupRequest, group: ClassicGroup,
            old_member_id: str, new_member_id: str, responder: Responder) -> CoordinatorResult:
        current_leader = group.leader_id
        instance_id = request.group_instance_id
        if instance_id is None:
            raise ValueError("a static member joins with its group instance id")
        new_member = group.replace_static_member(instance_id, old_member_id, new_member_id)
        self.timer.cancel(heartbeat_key(group.group_id, old_member_id))
        self.reschedule_classic_heartbeat(group, new_member)
        old_rebalance_timeout = new_member.rebalance_timeout_ms
        old_session_timeout = new_member.session_timeout_ms
        old_protocols = list(new_member.supported_protocols)
        group.update_member(new_member, _protocols(request), request.rebalance_timeout_ms,
                            request.session_timeout_ms, responder)
        if group.state is S.STABLE:
            if group.protocol_name == group.select_protocol():
                # Same protocol: persist the new member id without a rebalance.
                assignment = group.group_assignment()

                def on_appended(exc: BaseException | None) -> None:
                    if exc is not None:
                        group.update_member(new_member, old_protocols, old_rebalance_timeout, old_session_timeout, None)
                        old = group.replace_static_member(instance_id, new_member_id, old_member_id)
                        self.reschedule_classic_heartbeat(group, old)
                        code = append_error_to_response_error(getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
                        responder(JoinGroupResponse(
                            member_id=UNKNOWN_MEMBER_ID, generation_id=group.generation_id,
                            protocol_name=group.protocol_name, protocol_type=group.protocol_type,
                            leader=current_leader or "", error_code=code))
                    elif supports_skipping_assignment(info.api_version):
                        is_leader = group.is_leader(new_member_id)
                        group.complete_join(new_member, self._join_response(
                            group, new_member_id, with_members=is_leader, skip_assignment=is_leader))
                    else:
                        response = self._join_response(group, new_member_id, with_members=False)
                        response.leader = current_leader or ""
                        group.complete_join(new_member, response)

                record = rec.group_metadata_record(group.group_id, group.to_record_value(assignment))
                return CoordinatorResult([record], on_appended=on_appended, replay=False)
            return self.maybe_prepare_rebalance_or_complete_join(
                group, f"static member {new_member_id} rejoined with a change of protocol")
        if group.state is S.COMPLETING_REBALANCE:
            return self.prepare_rebalance(group, f"updating metadata of static member {new_member_id}")
        if group.state in (S.EMPTY, S.DEAD):
            raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR,
                           f"group {group.group_id} in state {group.state.value} with a known static member")
        return self._maybe_complete_join_phase(group)

    # -- heartbeats and expiry --------------------------------------------------------------------------
    def reschedule_classic_heartbeat(self, group: ClassicGroup,
                                     member: ClassicGroupMember) -> None:
        self._reschedule_heartbeat(group, member, member.session_timeout_ms)

    def _reschedule_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember,
                              timeout_ms: int) -> None:
        gid, mid = group.group_id, member.member_id
        self.timer.schedule(heartbeat_key(gid, mid), timeout_ms, lambda: self._expire_classic_heartbeat(gid, mid))

    def _expire_classic_heartbeat(self, group_id: str, member_id: str) -> CoordinatorResult:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup) or group.state is S.DEAD:
            return EMPTY_RESULT
        if group.is_pending_member(member_id):
            log.info("pending member %s of group %s removed after session timeout", member_id, group_id)
            group.remove(member_id)
            if group.state is S.PREPARING_REBALANCE and group.has_all_members_joined():
                return self._complete_join(group)
            return EMPTY_RESULT
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return EMPTY_RESULT
        log.info("member %s of group %s has failed (session timeout); removing it", member_id, group_id)
        return self._remove_member_and_update_group(group, member, "session timeout")

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicGroupMember,
                                        reason: str) -> CoordinatorResult:
        group.complete_join(member, JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID,
                                                      error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member.member_id)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            return self.maybe_prepare_rebalance_or_complete_join(group, reason)
        if group.state is S.PREPARING_REBALANCE and group.has_all_members_joined():
            return self._complete_join(group)
        return EMPTY_RESULT

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timer.cancel(sync_key(group.group_id))

    def _expire_pending_sync(self, group_id: str, generation_id: int) -> CoordinatorResult:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup) or generation_id != group.generation_id:
            return EMPTY_RESULT
        if group.state in (S.COMPLETING_REBALANCE, S.STABLE) and group.pending_sync_members:
            missing = sorted(group.pending_sync_members)
            for member_id in missing:
                group.remove(member_id)
                self.timer.cancel(heartbeat_key(group_id, member_id))
            return self.prepare_rebalance(group, f"removing {missing} on pending sync request expiration")
        return EMPTY_RESULT

    # -- SyncGroup --------------------------------------------------------------------------------------
    def classic_group_sync(self, info: RequestInfo, request: SyncGroupRequest,
                           responder: Responder) -> CoordinatorResult:
        from coordinator.group.consumer_group import ConsumerGroup
        group = self.groups.get(request.group_id)
        if group is None or group.is_empty:
            responder(SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
            return EMPTY_RESULT
        if isinstance(group, ConsumerGroup):
            return self.consumer.classic_group_sync_to_consumer_group(group, info, request, responder)
        return self._sync_classic(group, request, responder)

    def _validate_sync(self, group: ClassicGroup, request: SyncGroupRequest) -> int | None:
        if group.state is S.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            group.validate_member(request.member_id, request.group_instance_id)
        except ApiError as exc:
            return exc.error_code
        if request.generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if (_is_protocol_inconsistent(request.protocol_type, group.protocol_type)
                or _is_protocol_inconsistent(request.protocol_name, group.protocol_name)):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _sync_classic(self, group: ClassicGroup, request: SyncGroupRequest,
                      responder: Responder) -> CoordinatorResult:
        member_id = request.member_id
        error = self._validate_sync(group, request)
        if error is not None:
            responder(SyncGroupResponse(error_code=error))
            return EMPTY_RESULT
        if group.state is S.PREPARING_REBALANCE:
            responder(SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
            return EMPTY_RESULT
        if group.state is S.COMPLETING_REBALANCE:
            group.members[member_id].awaiting_sync = responder
            self._remove_pending_sync_member(group, member_id)
            if not group.is_leader(member_id):
                return EMPTY_RESULT
            assignment = {a.member_id: a.assignment for a in request.assignments}
            for mid in group.members:
                assignment.setdefault(mid, EMPTY_ASSIGNMENT)
            generation = request.generation_id

            def on_appended(exc: BaseException | None) -> None:
                # Someone may have joined meanwhile: only act if this generation is still completing.
                if group.state is not S.COMPLETING_REBALANCE or group.generation_id != generation:
                    return
                if exc is not None:
                    code = append_error_to_response_error(getattr(exc, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
                    self._reset_and_propagate_assignment_with_error(group, code)
                    self.maybe_prepare_rebalance_or_complete_join(group, f"error {code} storing the assignment")
                else:
                    for m in group.members.values():
                        m.assignment = assignment.get(m.member_id, EMPTY_ASSIGNMENT)
                    self._propagate_assignment(group, ErrorCode.NONE)
                    group.transition_to(S.STABLE, self.clock.now_ms())

            record = rec.group_metadata_record(group.group_id, group.to_record_value(assignment))
            return CoordinatorResult([record], on_appended=on_appended, replay=False)
        # Stable: answer with the stored assignment.
        self._remove_pending_sync_member(group, member_id)
        responder(SyncGroupResponse(protocol_type=group.protocol_type, protocol_name=group.protocol_name,
                                    assignment=group.members[member_id].assignment, error_code=ErrorCode.NONE))
        return EMPTY_RESULT

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.state in (S.DEAD, S.EMPTY, S.PREPARING_REBALANCE) or not group.pending_sync_members:
            self.timer.cancel(sync_key(group.group_id))

    def _reset_and_propagate_assignment_with_error(self, group: ClassicGroup,
                                                   error: int) -> None:
        for m in group.members.values():
            m.assignment = EMPTY_ASSIGNMENT
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        ok = error == ErrorCode.NONE
        for member in list(group.members.values()):
            response = SyncGroupResponse(error_code=error, assignment=member.assignment,
                                         protocol_type=group.protocol_type if ok else None,
                                         protocol_name=group.protocol_name if ok else None)
            if group.complete_sync(member, response):
                self.reschedule_classic_heartbeat(group, member)

    # -- Heartbeat --------------------------------------------------------------------------------------
    def classic_group_heartbeat(self, info: RequestInfo,
                                request: HeartbeatRequest) -> CoordinatorResult:
        from coordinator.group.consumer_group import ConsumerGroup
        group = self.groups.get(request.group_id)
        if group is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {request.group_id} not found.")
        if isinstance(group, ConsumerGroup):
            return self.consumer.classic_group_heartbeat_to_consumer_group(group, info, request)
        if group.state is S.DEAD:
            raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        group.validate_member(request.member_id, request.group_instance_id)
        if request.generation_id != group.generation_id:
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        if group.state is S.EMPTY:
            return CoordinatorResult(response=HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        self.reschedule_classic_heartbeat(group, group.members[request.member_id])
        if group.state is S.PREPARING_REBALANCE:
            return CoordinatorResult(response=HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
        return CoordinatorResult(response=HeartbeatResponse(error_code=ErrorCode.NONE))

    # -- LeaveGroup -------------------------------------------------------------------------------------
    def classic_group_leave(self, info: RequestInfo,
                            request: LeaveGroupRequest) -> CoordinatorResult:
        from coordinator.group.consumer_group import ConsumerGroup
        group = self.groups.get(request.group_id)
        if group is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Group {request.group_id} not found.")
        if isinstance(group, ConsumerGroup):
            return self.consumer.classic_group_leave_to_consumer_group(group, info, request)
        if group.state is S.DEAD:
            return CoordinatorResult(response=LeaveGroupResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE))
        responses: list[MemberResponse] = []
        left: list[str] = []
        for identity in request.members:
            mid, iid = identity.member_id, identity.group_instance_id
            code: int = ErrorCode.NONE
            if mid == UNKNOWN_MEMBER_ID:
                # Administrative removal of a static member by instance id.
                static_member_id = group.static_member_id(iid) if iid is not None else None
                if static_member_id is not None:
                    self._remove_current_member(group, static_member_id)
                else:
                    code = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.is_pending_member(mid):
                group.remove(mid)
                self.timer.cancel(heartbeat_key(group.group_id, mid))
            else:
                try:
                    group.validate_member(mid, iid)
                    self._remove_current_member(group, mid)
                except ApiError as exc:
                    code = exc.error_code
            responses.append(MemberResponse(member_id=mid, group_instance_id=iid, error_code=code))
            if code == ErrorCode.NONE:
                left.append(mid)
        result = EMPTY_RESULT
        if left:
            if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
                result = self.maybe_prepare_rebalance_or_complete_join(group, f"members {left} left the group")
            elif group.state is S.PREPARING_REBALANCE:
                result = self._maybe_complete_join_phase(group)
        return CoordinatorResult(result.records, LeaveGroupResponse(error_code=ErrorCode.NONE, members=responses),
                                 result.on_appended, replay=False)

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members[member_id]
        self.timer.cancel(heartbeat_key(group.group_id, member_id))
        log.info("member %s left group %s through LeaveGroup", member_id, group.group_id)
        group.complete_join(member, JoinGroupResponse(member_id=UNKNOWN_MEMBER_ID,
                                                      error_code=ErrorCode.UNKNOWN_MEMBER_ID))
        group.remove(member_id)
