"""The consumer group protocol of KIP-848, and classic members inside consumer groups.

A collaborator of ``GroupMetadataManager`` (``manager``), whose group map, config, clock and timer it
shares; it calls the classic protocol (``manager.classic``) to rebalance groups it converts. A
ConsumerGroupHeartbeat runs Kafka's three steps:

1. create or update the member; if its subscription changed, or the subscribed topics' metadata
   (ids, partition counts — summarised as the metadata hash) changed, bump the group epoch;
2. if the group epoch is ahead of the target assignment epoch, run the server-side assignor and
   write the changed target assignments and the new assignment epoch;
3. reconcile the member towards its target (``reconciliation.next_assignment``) and answer with its
   epoch and, when it changed or the request was a full one, its assignment.

The operation only reads the group and returns records; the runtime replays them after the append,
and that replay is what changes the group. Groups created or converted by an operation are built
detached (by replaying the creation records into a fresh object) and enter the group map by replay.

Conversions (Kafka's ``group.consumer.migration.policy``, bidirectional): a ConsumerGroupHeartbeat
joining a classic group of consumer-protocol members upgrades it to a consumer group; when the last
member using the consumer protocol leaves and only classic members remain, the group is downgraded
back. Classic members of a consumer group use JoinGroup/SyncGroup/Heartbeat/LeaveGroup; their
assignment is computed by the server assignor and delivered in SyncGroup.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING
from uuid import UUID

from coordinator.group import embedded_protocol
from coordinator.group import records as rec
from coordinator.group.assignors import ASSIGNORS, AssignorError, GroupSpec, MemberSpec
from coordinator.group.classic_group import (
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicGroupMember,
    ClassicGroupState,
    Responder,
)
from coordinator.group.consumer_group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ClassicMemberMetadata,
    ConsumerGroup,
    ConsumerGroupMember,
    MemberState,
    ResolvedRegex,
)
from coordinator.group.reconciliation import next_assignment
from coordinator.group.request_info import RequestInfo
from coordinator.group.topics import metadata_hash
from coordinator.runtime.errors import ApiError
from coordinator.runtime.result import CoordinatorResult
from wire import ErrorCode
from wire.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from wire.messages import consumer_group_heartbeat_response as cgh
from wire.messages.leave_group_response import MemberResponse

if TYPE_CHECKING:
    import uuid
    from collections.abc import Callable

    from coordinator.group.config import GroupCoordinatorConfig
    from coordinator.group.group_config import GroupConfigs
    from coordinator.group.group_map import GroupMap
    from coordinator.group.topics import TopicsImage
    from coordinator.runtime.clock import Clock
    from coordinator.runtime.timer import CoordinatorTimer

__all__ = ["ConsumerProtocol"]

log = logging.getLogger("pykbroker.coordinator.group")

EMPTY_RESULT: CoordinatorResult = CoordinatorResult()
# ConsumerGroupHeartbeat v1+ (KIP-1082): the client generates its member id.
CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION = 1
# How old a regex's resolution must be before a heartbeat resolves it again (Kafka's
# REGEX_BATCH_REFRESH_INTERVAL_MS): new topics and ACL changes reach a regex subscription within it.
REGEX_REFRESH_INTERVAL_MS = 10_000

Partitions = dict[UUID, frozenset[int]]


def session_timeout_key(group_id: str, member_id: str) -> str:
    return f"session-timeout-{group_id}-{member_id}"


def rebalance_timeout_key(group_id: str, member_id: str) -> str:
    return f"rebalance-timeout-{group_id}-{member_id}"


def consumer_join_key(group_id: str, member_id: str) -> str:
    return f"join-{group_id}-{member_id}"


def consumer_sync_key(group_id: str, member_id: str) -> str:
    return f"sync-{group_id}-{member_id}"


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.INVALID_REQUEST, message)


def _is_blank(value: str | None) -> bool:
    return value is not None and not value.strip()


def _owned(topic_partitions) -> list[tuple[UUID, list[int]]] | None:
    if topic_partitions is None:
        return None
    return [(tp.topic_id, list(tp.partitions)) for tp in topic_partitions]


def _is_subset(owned: list[tuple[UUID, list[int]]] | None, target: Mapping[UUID, frozenset[int]]) -> bool:
    if owned is None:
        return False
    return all(p in target.get(topic_id, frozenset()) for topic_id, parts in owned for p in parts)


class ConsumerProtocol:
    """ConsumerGroupHeartbeat, and classic-protocol members of consumer groups."""

    def __init__(self, groups: GroupMap, config: GroupCoordinatorConfig, clock: Clock, timer: CoordinatorTimer,
                 topics: TopicsImage, new_uuid: Callable[[], uuid.UUID], group_configs: GroupConfigs | None, *,
                 reschedule_classic_heartbeat: Callable[[ClassicGroup, ClassicGroupMember], None],
                 prepare_classic_rebalance: Callable[[ClassicGroup, str], object]) -> None:
        """``groups``: the shard's group map; ``group_configs``: per-group overrides (None: the broker's);
        ``reschedule_classic_heartbeat`` and ``prepare_classic_rebalance``: the classic protocol's, for a group
        downgraded to classic."""
        self.groups = groups
        self.config = config
        self.group_configs = group_configs
        self.clock = clock
        self.timer = timer
        self.topics = topics
        self.new_uuid = new_uuid
        self.reschedule_classic_heartbeat = reschedule_classic_heartbeat
        self.prepare_classic_rebalance = prepare_classic_rebalance

    # -- the group's configs (KIP-848 group config resources) --------------------------------------------
    def consumer_session_timeout_ms(self, group_id: str) -> int:
        """The group's consumer.session.timeout.ms, else the broker's group.consumer.session.timeout.ms."""
        if self.group_configs is None:
            return self.config.consumer_group_session_timeout_ms
        return self.group_configs.get_int(group_id, "consumer.session.timeout.ms")

    def consumer_heartbeat_interval_ms(self, group_id: str) -> int:
        """The group's consumer.heartbeat.interval.ms, else the broker's group.consumer.heartbeat.interval.ms."""
        if self.group_configs is None:
            return self.config.consumer_group_heartbeat_interval_ms
        return self.group_configs.get_int(group_id, "consumer.heartbeat.interval.ms")

    def consumer_assignment_interval_ms(self, group_id: str) -> int:
        """The group's consumer.assignment.interval.ms, else the broker's group.consumer.assignment.interval.ms."""
        if self.group_configs is None:
            return self.config.consumer_group_assignment_interval_ms
        return self.group_configs.get_int(group_id, "consumer.assignment.interval.ms")

    def _can_compute_next_target_assignment(self, group: ConsumerGroup) -> bool:
        """KIP-1263: a new target assignment at most every consumer.assignment.interval.ms after the last one
        (always when none was computed yet, or since the group became empty, or with an interval of 0)."""
        interval = self.consumer_assignment_interval_ms(group.group_id)
        return (group.assignment_timestamp == 0 or interval == 0
                or self.clock.now_ms() >= group.assignment_timestamp + interval)

    # -- timers -----------------------------------------------------------------------------------------
    def schedule_consumer_session_timeout(self, group_id: str, member_id: str,
                                          timeout_ms: int | None = None) -> None:
        if timeout_ms is None:
            timeout_ms = self.consumer_session_timeout_ms(group_id)
        self.timer.schedule(session_timeout_key(group_id, member_id), timeout_ms,
                            lambda: self._fence_member_operation(group_id, member_id, "the member session expired"))

    def maybe_schedule_rebalance_timeout(self, group_id: str,
                                         member: ConsumerGroupMember) -> None:
        if member.uses_classic_protocol:
            return
        key = rebalance_timeout_key(group_id, member.member_id)
        if member.state is not MemberState.UNREVOKED_PARTITIONS:
            self.timer.cancel(key)
            return
        epoch, member_id = member.member_epoch, member.member_id

        def expire() -> CoordinatorResult:
            group = self.groups.get(group_id)
            if not isinstance(group, ConsumerGroup) or member_id not in group.members:
                return EMPTY_RESULT
            if group.members[member_id].member_epoch != epoch:
                return EMPTY_RESULT
            log.info("member %s of group %s fenced: it did not revoke its partitions within %d ms",
                     member_id, group_id, member.rebalance_timeout_ms)
            return self._fence_member(group, group.members[member_id], None)

        self.timer.schedule(key, max(member.rebalance_timeout_ms, 0), expire)

    def _cancel_member_timers(self, group_id: str, member_id: str) -> None:
        for key in (session_timeout_key(group_id, member_id), rebalance_timeout_key(group_id, member_id),
                    consumer_join_key(group_id, member_id), consumer_sync_key(group_id, member_id)):
            self.timer.cancel(key)

    def _fence_member_operation(self, group_id: str, member_id: str,
                                reason: str) -> CoordinatorResult:
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup) or member_id not in group.members:
            return EMPTY_RESULT
        log.info("member %s fenced from group %s because %s", member_id, group_id, reason)
        return self._fence_member(group, group.members[member_id], None)

    # -- groups -----------------------------------------------------------------------------------------
    def maybe_delete_empty_consumer_group(self, group_id: str) -> list[rec.CoordinatorRecord]:
        """Before a classic JoinGroup: an empty consumer group gives way (tombstones; removed directly)."""
        group = self.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and group.is_empty:
            records = group.tombstone_records()
            del self.groups[group_id]
            return records
        return []

    def get_or_maybe_create_consumer_group(self, group_id: str, create: bool,
                                           records: list[rec.CoordinatorRecord]) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None and self.groups.other_type(group_id):
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if group is None and not create:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        if group is None:
            return ConsumerGroup(group_id)
        if isinstance(group, ConsumerGroup):
            return group
        if create and group.is_empty:
            # An empty classic group is replaced (its offsets stay).
            records.append(rec.group_metadata_tombstone(group_id))
            return ConsumerGroup(group_id)
        if create and self._validate_online_upgrade(group):
            return self._convert_to_consumer_group(group, records)
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _validate_online_upgrade(self, group: ClassicGroup) -> bool:
        if not self.config.upgrade_enabled:
            log.info("cannot upgrade classic group %s: online upgrade is disabled", group.group_id)
            return False
        if not group.uses_consumer_protocol():
            log.info("cannot upgrade classic group %s: it does not use the consumer protocol", group.group_id)
            return False
        if len(group.members) > self.config.consumer_group_max_size:
            return False
        return True

    def _convert_to_consumer_group(self, classic: ClassicGroup,
                                   records: list[rec.CoordinatorRecord]) -> ConsumerGroup:
        """Kafka's ConsumerGroup.fromClassicGroup: members keep their last assignment, all Stable."""
        generation = classic.generation_id
        members = []
        try:
            for m in classic.members.values():
                assigned = embedded_protocol.to_topic_id_partitions(
                    embedded_protocol.parse_assignment(m.assignment).assigned_partitions, self.topics)
                subscription = embedded_protocol.parse_subscription(m.metadata(classic.protocol_name))
                members.append(ConsumerGroupMember(
                    member_id=m.member_id, member_epoch=generation, previous_member_epoch=generation,
                    state=MemberState.STABLE, instance_id=m.group_instance_id, rack_id=subscription.rack_id,
                    rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id, client_host=m.client_host,
                    subscribed_topic_names=frozenset(subscription.topics), assigned_partitions=assigned,
                    classic_member_metadata=ClassicMemberMetadata(m.session_timeout_ms,
                                                                  tuple(m.supported_protocols))))
        except embedded_protocol.EmbeddedProtocolError as exc:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND,
                           f"Cannot upgrade the classic group {classic.group_id}: {exc}.") from None
        classic.complete_all_joins(ErrorCode.REBALANCE_IN_PROGRESS)
        classic.complete_all_syncs(ErrorCode.REBALANCE_IN_PROGRESS)
        records.append(rec.group_metadata_tombstone(classic.group_id))
        creation = [m.subscription_record(classic.group_id) for m in members]
        creation.append(rec.consumer_group_epoch_record(classic.group_id, generation, 0))
        creation += [rec.consumer_group_target_assignment_record(classic.group_id, m.member_id, m.assigned_partitions)
                     for m in members]
        creation.append(rec.consumer_group_target_assignment_epoch_record(classic.group_id, generation))
        creation += [m.current_assignment_record(classic.group_id) for m in members]
        records.extend(creation)
        group = ConsumerGroup(classic.group_id)
        _replay_into(group, creation)
        for member in members:
            self.timer.cancel(f"heartbeat-{classic.group_id}-{member.member_id}")
            self.schedule_consumer_session_timeout(classic.group_id, member.member_id,
                                                   member.classic_metadata.session_timeout_ms)
        log.info("upgraded classic group %s to a consumer group", classic.group_id)
        return group

    def _validate_online_downgrade(self, group: ConsumerGroup, leaving_member_id: str,
                                   replaced: bool = False) -> bool:
        if not group.all_members_use_classic_protocol_except(leaving_member_id):
            return False
        if not replaced and len(group.members) <= 1:
            return False
        if not self.config.downgrade_enabled:
            return False
        remaining = len(group.members) if replaced else len(group.members) - 1
        return remaining <= self.config.group_max_size

    def _convert_to_classic_group(self, group: ConsumerGroup, leaving_member_id: str,
                                  joining: ConsumerGroupMember | None,
                                  records: list[rec.CoordinatorRecord]) -> ClassicGroup:
        """Kafka's ClassicGroup.fromConsumerGroup; updates the group map directly (replay=False)."""
        gid = group.group_id
        records.extend(group.tombstone_records(None if joining is None else (leaving_member_id, joining.member_id)))
        now = self.clock.now_ms()
        classic = ClassicGroup(gid, now, state=ClassicGroupState.STABLE, generation_id=group.group_epoch,
                               protocol_type=embedded_protocol.PROTOCOL_TYPE)
        sources: list[tuple[ConsumerGroupMember, str]] = []
        for member_id, m in group.members.items():
            if member_id != leaving_member_id:
                sources.append((m, member_id))
        if joining is not None:
            sources.append((joining, leaving_member_id))
        for m, _ in sources:
            meta = m.classic_metadata
            classic.add(ClassicGroupMember(
                member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=meta.session_timeout_ms, protocol_type=embedded_protocol.PROTOCOL_TYPE,
                supported_protocols=list(meta.supported_protocols)))
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for m, target_owner in sources:
            member = classic.members[m.member_id]
            version = embedded_protocol.parse_version(member.metadata(classic.protocol_name))
            member.assignment = embedded_protocol.serialize_assignment(group.target_of(target_owner), self.topics,
                                                                       version)
        records.append(rec.group_metadata_record(gid, classic.to_record_value(classic.group_assignment())))
        for member_id in group.members:
            self._cancel_member_timers(gid, member_id)
        self.groups[gid] = classic
        for member in classic.members.values():
            self.reschedule_classic_heartbeat(classic, member)
        if joining is None:
            self.prepare_classic_rebalance(classic, f"downgrade of group {gid} from consumer to classic")
        log.info("downgraded consumer group %s to a classic group", gid)
        return classic

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------------------
    def _validate_heartbeat_request(self, request: ConsumerGroupHeartbeatRequest,
                                    api_version: int) -> None:
        if api_version >= CONSUMER_GENERATED_MEMBER_ID_REQUIRED_VERSION and not request.member_id.strip():
            raise _invalid("MemberId can't be empty.")
        if not request.group_id.strip():
            raise ApiError(ErrorCode.INVALID_GROUP_ID, "GroupId can't be empty.")
        if _is_blank(request.instance_id):
            raise _invalid("InstanceId can't be empty.")
        if _is_blank(request.rack_id):
            raise _invalid("RackId can't be empty.")
        epoch = request.member_epoch
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.topic_partitions is None or request.topic_partitions:
                raise _invalid("TopicPartitions must be empty when (re-)joining.")
            has_names = bool(request.subscribed_topic_names)
            has_regex = bool(request.subscribed_topic_regex)
            if not has_names and not has_regex:
                raise _invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise _invalid("InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _invalid(f"MemberEpoch is {epoch}, but must be greater than or equal to -2.")
        if epoch != 0 and not request.member_id.strip():
            raise _invalid("MemberId can't be empty.")
        if request.subscribed_topic_regex:
            try:
                re.compile(request.subscribed_topic_regex)
            except re.error as exc:
                raise ApiError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                               f"SubscribedTopicRegex `{request.subscribed_topic_regex}` is not a valid regular "
                               f"expression: {exc}.") from None
        if request.server_assignor is not None and request.server_assignor not in self._assignor_names():
            raise ApiError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                           f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
                           f"{', '.join(self._assignor_names())}.")

    def _assignor_names(self) -> list[str]:
        return [a for a in self.config.consumer_group_assignors if a in ASSIGNORS]

    def consumer_group_heartbeat(self, info: RequestInfo,
                                 request: ConsumerGroupHeartbeatRequest) -> CoordinatorResult:
        self._validate_heartbeat_request(request, info.api_version)
        if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._consumer_group_leave(request.group_id, request.instance_id, request.member_id,
                                              request.member_epoch)
        return self._consumer_group_heartbeat(info, request)

    def _consumer_group_leave(self, group_id: str, instance_id: str | None, member_id: str,
                              member_epoch: int) -> CoordinatorResult:
        group = self.groups.consumer_group(group_id)
        response = ConsumerGroupHeartbeatResponse(member_id=member_id, member_epoch=member_epoch)
        if instance_id is None:
            member = group.member(member_id)
            log.info("member %s left consumer group %s", member_id, group_id)
            return self._fence_member(group, member, response)
        static = group.static_member(instance_id)
        if static is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        member = static
        self._throw_if_instance_id_fenced(member, group_id, member_id, instance_id)
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # The static member leaves for a while and keeps its place (epoch -2) until its session ends.
            leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={})
            return CoordinatorResult([leaving.current_assignment_record(group_id)], ConsumerGroupHeartbeatResponse(
                member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH))
        return self._fence_member(group, member, response)

    @staticmethod
    def _throw_if_instance_id_fenced(member: ConsumerGroupMember, group_id: str, member_id: str,
                                     instance_id: str) -> None:
        if member.member_id != member_id:
            raise ApiError(ErrorCode.FENCED_INSTANCE_ID,
                           f"Static member {member_id} with instance id {instance_id} was fenced by member "
                           f"{member.member_id}.")

    @staticmethod
    def _throw_if_epoch_invalid(member: ConsumerGroupMember, received: int,
                                owned: list[tuple[UUID, list[int]]] | None) -> None:
        if received == 0:
            return  # (re)joining: the member starts over from what it is told
        if received > member.member_epoch:
            raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The consumer group member has a greater member epoch ({received}) than the one known "
                           f"by the group coordinator ({member.member_epoch}). The member must abandon all its "
                           "partitions and rejoin.")
        if received < member.member_epoch:
            # The previous epoch is accepted if the member only owns partitions it still has: the
            # response with the bump may have been lost.
            if received != member.previous_member_epoch or not _is_subset(owned, member.assigned_partitions):
                raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH,
                               f"The consumer group member has a smaller member epoch ({received}) than the one "
                               f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                               "all its partitions and rejoin.")

    def _throw_if_full(self, group: ConsumerGroup, member_id: str) -> None:
        if len(group.members) >= self.config.consumer_group_max_size and (
                not member_id or member_id not in group.members):
            raise ApiError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                           f"The consumer group has reached its maximum capacity of "
                           f"{self.config.consumer_group_max_size} members.")

    def _get_or_subscribe_member(self, group: ConsumerGroup, member_id: str, epoch: int,
                                 instance_id: str | None, owned, create: bool, classic: bool,
                                 records: list[rec.CoordinatorRecord]) -> ConsumerGroupMember:
        if instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not create:
                    raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID,
                                   f"Member {member_id} is not a member of group {group.group_id}.")
                member = ConsumerGroupMember(member_id)
                log.info("member %s joins consumer group %s using the %s protocol", member_id, group.group_id,
                         "classic" if classic else "consumer")
            elif not classic:
                self._throw_if_epoch_invalid(member, epoch, owned)
            return member
        existing = group.static_member(instance_id)
        if create:
            if existing is None:
                member = group.members.get(member_id) or ConsumerGroupMember(member_id)
                log.info("static member %s (instance %s) joins consumer group %s", member_id, instance_id,
                         group.group_id)
                return member
            if existing.member_id == member_id:
                return existing
            if not classic and not existing.uses_classic_protocol and existing.member_epoch != \
                    LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise ApiError(ErrorCode.UNRELEASED_INSTANCE_ID,
                               f"Static member {member_id} with instance id {instance_id} cannot join the group "
                               f"because the instance id is owned by {existing.member_id} member.")
            new_member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
            self._replace_member_records(records, group, existing, new_member)
            log.info("static member with instance id %s rejoins consumer group %s as %s, replacing %s",
                     instance_id, group.group_id, member_id, existing.member_id)
            return new_member
        if existing is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        self._throw_if_instance_id_fenced(existing, group.group_id, member_id, instance_id)
        if not classic:
            self._throw_if_epoch_invalid(existing, epoch, owned)
        return existing

    @staticmethod
    def _remove_member_records(records: list[rec.CoordinatorRecord], group_id: str, member_id: str) -> None:
        records.append(rec.consumer_group_current_assignment_tombstone(group_id, member_id))
        records.append(rec.consumer_group_target_assignment_tombstone(group_id, member_id))
        records.append(rec.consumer_group_member_subscription_tombstone(group_id, member_id))

    def _replace_member_records(self, records: list[rec.CoordinatorRecord],
                                group: ConsumerGroup, old: ConsumerGroupMember, new: ConsumerGroupMember) -> None:
        gid = group.group_id
        self._remove_member_records(records, gid, old.member_id)
        records.append(new.subscription_record(gid))
        records.append(rec.consumer_group_target_assignment_record(gid, new.member_id, group.target_of(old.member_id)))
        records.append(new.current_assignment_record(gid))

    # -- subscriptions, metadata hash, regexes -------------------------------------------------------------
    def _resolve_regex(self, regex: str, info: RequestInfo) -> frozenset[str]:
        """The topics ``regex`` matches that the requesting member may DESCRIBE (Kafka 4.4's
        refreshRegularExpressions: a topic the member may not describe is never subscribed through a regex).
        Internal topics match too, as on Kafka: a regex naming ``__consumer_offsets`` is assigned it."""
        pattern = re.compile(regex)
        matched = [t.name for t in self.topics.all() if pattern.fullmatch(t.name)]
        if info.describable_topics is None:
            return frozenset(matched)
        return frozenset(info.describable_topics(matched))

    def _subscription_after(self, group: ConsumerGroup, old: ConsumerGroupMember | None,
                            new: ConsumerGroupMember | None, records: list[rec.CoordinatorRecord],
                            info: RequestInfo | None = None,
                            ) -> tuple[set[str], dict[str, ResolvedRegex], bool]:
        """Subscribed topics of the group once ``old`` is replaced by ``new``, resolving regexes.

        Regexes are resolved only with a member's request (``info``), whose principal must be allowed to
        DESCRIBE every topic they resolve to; without one (a member fenced by a timer) nothing is resolved.
        A new regex is resolved at once; a resolved one again by its members' heartbeats once its resolution
        is REGEX_REFRESH_INTERVAL_MS old (Kafka's batch refresh interval), so members whose principals see
        different topics do not re-resolve it back and forth on every heartbeat.
        Returns (topics, resolved regexes, whether a regex resolution changed). Writes regex records.
        """
        names = Counter(group.subscribed_topic_counts)
        regexes = Counter(group.regex_subscriber_counts)
        if old is not None and old.member_id in group.members:
            names.subtract(group.members[old.member_id].subscribed_topic_names)
            old_regex = group.members[old.member_id].subscribed_topic_regex
            if old_regex:
                regexes[old_regex] -= 1
        if new is not None:
            names.update(new.subscribed_topic_names)
            if new.subscribed_topic_regex:
                regexes[new.subscribed_topic_regex] += 1
        resolved = dict(group.resolved_regexes)
        changed = False
        now = self.clock.now_ms()
        for regex, count in regexes.items():
            if count <= 0:
                if regex in resolved:
                    del resolved[regex]
                    records.append(rec.consumer_group_regex_tombstone(group.group_id, regex))
                continue
            stale = regex in resolved and now - resolved[regex].timestamp_ms >= REGEX_REFRESH_INTERVAL_MS
            if info is not None and (new is not None and regex == new.subscribed_topic_regex and stale
                                     or regex not in resolved):
                matched = self._resolve_regex(regex, info)
                if regex not in resolved or resolved[regex].topics != matched:
                    resolved[regex] = ResolvedRegex(matched, 0, now)
                    records.append(rec.consumer_group_regex_record(group.group_id, regex, matched, 0, now))
                    changed = True
        topics = {t for t, c in names.items() if c > 0}
        for regex, count in regexes.items():
            if count > 0 and regex in resolved:
                topics |= resolved[regex].topics
        return topics, resolved, changed

    def _metadata_hash(self, topics: set[str]) -> int:
        return metadata_hash(self.topics, topics)

    def _member_topic_ids(self, member: ConsumerGroupMember,
                          resolved: dict[str, ResolvedRegex]) -> frozenset[UUID]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex and member.subscribed_topic_regex in resolved:
            names |= resolved[member.subscribed_topic_regex].topics
        ids = set()
        for name in names:
            info = self.topics.by_name(name)
            if info is not None:
                ids.add(info.topic_id)
        return frozenset(ids)

    def _update_target_assignment(self, group: ConsumerGroup, group_epoch: int,
                                  old: ConsumerGroupMember | None, updated: ConsumerGroupMember | None,
                                  resolved: dict[str, ResolvedRegex],
                                  records: list[rec.CoordinatorRecord]) -> Partitions:
        """Run the assignor for ``group_epoch``; writes changed targets and the new assignment epoch."""
        counts = Counter(group.server_assignor_counts)
        old_assignor = group.members[old.member_id].server_assignor \
            if old is not None and old.member_id in group.members else None
        if old_assignor:
            counts[old_assignor] -= 1
        if updated is not None and updated.server_assignor:
            counts[updated.server_assignor] += 1
        assignor_name = group.preferred_server_assignor(counts) or self._assignor_names()[0]
        members: dict[str, ConsumerGroupMember] = dict(group.members)
        previous_targets: dict[str, Partitions] = {mid: group.target_of(mid) for mid in members}
        if updated is not None:
            previous_static = group.static_member_id(updated.instance_id)
            if previous_static is not None and previous_static != updated.member_id:
                members.pop(previous_static, None)
                previous_targets[updated.member_id] = group.target_of(previous_static)
            else:
                previous_targets.setdefault(updated.member_id, group.target_of(updated.member_id))
            members[updated.member_id] = updated
        specs = {mid: MemberSpec(mid, m.instance_id, m.rack_id, self._member_topic_ids(m, resolved),
                                 previous_targets.get(mid, {}))
                 for mid, m in members.items()}
        subscriptions = {s.subscribed_topic_ids for s in specs.values()}
        spec = GroupSpec(specs, homogeneous=len(subscriptions) <= 1)

        def num_partitions(topic_id: UUID) -> int:
            info = self.topics.by_id(topic_id)
            return -1 if info is None else info.num_partitions

        try:
            new_targets = ASSIGNORS[assignor_name]().assign(spec, num_partitions)
        except AssignorError as exc:
            raise ApiError(ErrorCode.UNKNOWN_SERVER_ERROR,
                           f"Failed to compute a new target assignment for epoch {group_epoch}: {exc}") from None
        for mid in members:
            target = new_targets.get(mid, {})
            if mid not in group.target_assignment or group.target_of(mid) != target:
                records.append(rec.consumer_group_target_assignment_record(group.group_id, mid, target))
        records.append(rec.consumer_group_target_assignment_epoch_record(group.group_id, group_epoch,
                                                                        self.clock.now_ms()))
        log.info("computed a new target assignment for group %s epoch %d with the %s assignor", group.group_id,
                 group_epoch, assignor_name)
        return new_targets.get(updated.member_id, {}) if updated is not None else {}

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                   target_epoch: int, target: Partitions, owned, records: list[rec.CoordinatorRecord],
                   subscription_changed: bool = False) -> ConsumerGroupMember:
        if member.is_reconciled_to(target_epoch) and not subscription_changed:
            return member
        updated = next_assignment(member, target_epoch, target, group.partition_epoch, owned, subscription_changed)
        if updated != member:
            records.append(updated.current_assignment_record(group.group_id))
            self.maybe_schedule_rebalance_timeout(group.group_id, updated)
        return updated

    def _member_update(self, group: ConsumerGroup, member: ConsumerGroupMember,
                       updated: ConsumerGroupMember, records: list[rec.CoordinatorRecord], info: RequestInfo,
                       ) -> tuple[int, Partitions, int]:
        """Steps 1 and 2: persist the member, maybe bump the epoch, maybe compute a new target.

        Returns (target epoch, the member's target, group epoch).
        """
        gid = group.group_id
        bump = False
        # A brand-new member (not a static member taking over another's place) always joins the epoch.
        is_new = (member.member_id not in group.members
                  and group.static_member_id(updated.instance_id) in (None, updated.member_id))
        if is_new or not updated.subscription_equals(member):
            records.append(updated.subscription_record(gid))
            if (is_new or updated.subscribed_topic_names != member.subscribed_topic_names
                    or updated.subscribed_topic_regex != member.subscribed_topic_regex):
                bump = True
        topics, resolved, regex_changed = self._subscription_after(group, member, updated, records, info)
        bump = bump or regex_changed
        metadata_hash = self._metadata_hash(topics)
        if metadata_hash != group.metadata_hash:
            bump = True
        group_epoch = group.group_epoch
        if bump:
            group_epoch += 1
            records.append(rec.consumer_group_epoch_record(gid, group_epoch, metadata_hash))
            log.info("bumped the epoch of group %s to %d", gid, group_epoch)
        if group_epoch > group.assignment_epoch and self._can_compute_next_target_assignment(group):
            target = self._update_target_assignment(group, group_epoch, member, updated, resolved, records)
            return group_epoch, target, group_epoch
        # the last target, without the topics the member no longer subscribes (Kafka 4.4 revokes them at once while
        # the next target assignment waits for consumer.assignment.interval.ms, KIP-1263)
        subscribed = self._member_topic_ids(updated, resolved)
        target = {t: p for t, p in group.target_for(updated.member_id, updated.instance_id).items() if t in subscribed}
        return group.assignment_epoch, target, group_epoch

    def _consumer_group_heartbeat(self, info: RequestInfo,
                                  request: ConsumerGroupHeartbeatRequest) -> CoordinatorResult:
        records: list[rec.CoordinatorRecord] = []
        epoch = request.member_epoch
        create = epoch == 0
        group = self.get_or_maybe_create_consumer_group(request.group_id, create, records)
        member_id = request.member_id or str(self.new_uuid())
        self._throw_if_full(group, member_id)
        owned = _owned(request.topic_partitions)
        member = self._get_or_subscribe_member(group, member_id, epoch, request.instance_id, owned, create, False,
                                               records)
        updated = member
        if request.instance_id is not None:
            updated = replace(updated, instance_id=request.instance_id)
        if request.rack_id is not None:
            updated = replace(updated, rack_id=request.rack_id)
        if request.rebalance_timeout_ms != -1:
            updated = replace(updated, rebalance_timeout_ms=request.rebalance_timeout_ms)
        if request.server_assignor is not None:
            updated = replace(updated, server_assignor=request.server_assignor)
        if request.subscribed_topic_names is not None:
            updated = replace(updated, subscribed_topic_names=frozenset(request.subscribed_topic_names))
        if request.subscribed_topic_regex is not None:
            updated = replace(updated, subscribed_topic_regex=request.subscribed_topic_regex or None)
        updated = replace(updated, client_id=info.client_id, client_host=info.client_host,
                          classic_member_metadata=None)
        target_epoch, target, _ = self._member_update(group, member, updated, records, info)
        reconciled = self._reconcile(group, updated, target_epoch, target, owned if not create else [], records,
                                     subscription_changed=not create and (
                                         updated.subscribed_topic_names != member.subscribed_topic_names
                                         or updated.subscribed_topic_regex != member.subscribed_topic_regex))
        self.schedule_consumer_session_timeout(group.group_id, reconciled.member_id)
        response = ConsumerGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=reconciled.member_id, member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.consumer_heartbeat_interval_ms(group.group_id))
        full = create or (request.rebalance_timeout_ms != -1
                          and (request.subscribed_topic_names is not None
                               or request.subscribed_topic_regex is not None)
                          and request.topic_partitions is not None)
        if full or reconciled.assigned_partitions != member.assigned_partitions:
            response.assignment = cgh.Assignment(topic_partitions=[
                cgh.TopicPartitions(topic_id=t, partitions=sorted(p))
                for t, p in sorted(reconciled.assigned_partitions.items(), key=lambda kv: str(kv[0]))])
        return CoordinatorResult(records, response)

    def _fence_member(self, group: ConsumerGroup, member: ConsumerGroupMember,
                      response) -> CoordinatorResult:
        records: list[rec.CoordinatorRecord] = []
        if self._validate_online_downgrade(group, member.member_id):
            self._convert_to_classic_group(group, member.member_id, None, records)
            return CoordinatorResult(records, response, replay=False)
        gid = group.group_id
        self._remove_member_records(records, gid, member.member_id)
        topics, _, _ = self._subscription_after(group, member, None, records)
        self._fenced_epoch_records(group, [member], topics, records)
        self._cancel_member_timers(gid, member.member_id)
        return CoordinatorResult(records, response)

    def _fenced_epoch_records(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember], topics: set[str],
                              records: list[rec.CoordinatorRecord]) -> None:
        """After members are removed: the group epoch moves on; when no member is left the target assignment
        is at that epoch and counts as never computed, so the next member is assigned at once (KIP-1263)."""
        epoch = group.group_epoch + 1
        records.append(rec.consumer_group_epoch_record(group.group_id, epoch, self._metadata_hash(topics)))
        if len(group.members) == len(leaving):
            records.append(rec.consumer_group_target_assignment_epoch_record(group.group_id, epoch, 0))

    # -- classic members of consumer groups ------------------------------------------------------------
    def classic_group_join_to_consumer_group(self, group: ConsumerGroup, info: RequestInfo,
                                             request: JoinGroupRequest, responder: Responder) -> CoordinatorResult:
        records: list[rec.CoordinatorRecord] = []
        gid, instance_id = group.group_id, request.group_instance_id
        is_unknown = request.member_id == UNKNOWN_MEMBER_ID
        member_id = str(self.new_uuid()) if is_unknown else request.member_id
        self._throw_if_full(group, member_id)
        protocols = [(p.name, p.metadata) for p in request.protocols]
        if not group.supports_classic_protocols(request.protocol_type, [n for n, _ in protocols]):
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        if info.api_version >= 4 and instance_id is None and is_unknown:
            responder(JoinGroupResponse(member_id=member_id, error_code=ErrorCode.MEMBER_ID_REQUIRED))
            return EMPTY_RESULT
        member = self._get_or_subscribe_member(group, member_id, -1, instance_id, [],
                                               create=instance_id is None or is_unknown, classic=True, records=records)
        try:
            subscription = embedded_protocol.parse_subscription(protocols[0][1])
        except embedded_protocol.EmbeddedProtocolError:
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "malformed consumer protocol subscription") from None
        updated = member
        if instance_id is not None:
            updated = replace(updated, instance_id=instance_id)
        if subscription.rack_id is not None:
            updated = replace(updated, rack_id=subscription.rack_id)
        if request.rebalance_timeout_ms != -1:
            updated = replace(updated, rebalance_timeout_ms=request.rebalance_timeout_ms)
        updated = replace(updated, server_assignor=None, subscribed_topic_names=frozenset(subscription.topics),
                          client_id=info.client_id, client_host=info.client_host,
                          classic_member_metadata=ClassicMemberMetadata(request.session_timeout_ms,
                                                                        tuple(protocols)))
        target_epoch, target, _ = self._member_update(group, member, updated, records, info)
        owned = [(tid, sorted(parts)) for tid, parts in embedded_protocol.to_topic_id_partitions(
            subscription.owned_partitions, self.topics).items()]
        updated = self._reconcile(group, updated, target_epoch, target, owned, records)
        existing_static = group.static_member_id(instance_id)
        downgrade = (existing_static is not None and existing_static != updated.member_id
                     and self._validate_online_downgrade(group, existing_static, replaced=True))
        if downgrade and existing_static is not None:
            self._convert_to_classic_group(group, existing_static, updated, records)
        response = JoinGroupResponse(error_code=ErrorCode.NONE, member_id=updated.member_id,
                                     generation_id=updated.member_epoch,
                                     protocol_type=embedded_protocol.PROTOCOL_TYPE, protocol_name=protocols[0][0],
                                     leader="", members=[], skip_assignment=False)
        session_timeout, rebalance_timeout = request.session_timeout_ms, request.rebalance_timeout_ms

        def on_appended(exc: BaseException | None) -> None:
            if exc is None:
                self.timer.cancel(consumer_join_key(gid, response.member_id))
                if not downgrade:
                    self.schedule_consumer_session_timeout(gid, response.member_id, session_timeout)
                    self.timer.schedule(consumer_sync_key(gid, response.member_id), rebalance_timeout,
                                        lambda: self._fence_member_operation(gid, response.member_id,
                                                                             "it failed to sync within the timeout"))
                responder(response)

        return CoordinatorResult(records, None, on_appended, replay=not downgrade)

    def _validate_classic_member(self, group: ConsumerGroup, member_id: str,
                                 instance_id: str | None) -> ConsumerGroupMember:
        if instance_id is None:
            member = group.member(member_id)
        else:
            static = group.static_member(instance_id)
            if static is None:
                raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID,
                               f"Member with instance id {instance_id} is not a member of group {group.group_id}.")
            member = static
            self._throw_if_instance_id_fenced(member, group.group_id, member_id, instance_id)
        if not member.uses_classic_protocol:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol.")
        return member

    def classic_group_sync_to_consumer_group(self, group: ConsumerGroup, info: RequestInfo,
                                             request: SyncGroupRequest, responder: Responder) -> CoordinatorResult:
        member = self._validate_classic_member(group, request.member_id, request.group_instance_id)
        if member.member_epoch != request.generation_id:
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        protocol_name = member.classic_metadata.supported_protocols[0][0]
        if request.protocol_type is not None and request.protocol_type != embedded_protocol.PROTOCOL_TYPE:
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if request.protocol_name is not None and request.protocol_name != protocol_name:
            raise ApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        self._throw_if_rebalance_in_progress(group, member)
        gid, mid = group.group_id, member.member_id
        version = embedded_protocol.parse_version(member.classic_metadata.supported_protocols[0][1])
        assignment = embedded_protocol.serialize_assignment(member.assigned_partitions, self.topics, version)
        # Nothing to write: every earlier write of this shard is already committed (one writer, in order).
        self.timer.cancel(consumer_sync_key(gid, mid))
        self.schedule_consumer_session_timeout(gid, mid, member.classic_metadata.session_timeout_ms)
        responder(SyncGroupResponse(error_code=ErrorCode.NONE, protocol_type=request.protocol_type,
                                    protocol_name=request.protocol_name, assignment=assignment))
        return EMPTY_RESULT

    def _throw_if_rebalance_in_progress(self, group: ConsumerGroup,
                                        member: ConsumerGroupMember) -> None:
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            gid, mid = group.group_id, member.member_id

            def fence() -> CoordinatorResult:
                return self._fence_member_operation(gid, mid, "the classic member failed to join within the "
                                                              "rebalance timeout")
            self.timer.schedule_if_absent(consumer_join_key(gid, mid), max(member.rebalance_timeout_ms, 0), fence)
            raise ApiError(ErrorCode.REBALANCE_IN_PROGRESS,
                           f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} "
                           "should rejoin to catch up.")

    def classic_group_heartbeat_to_consumer_group(self, group: ConsumerGroup,
                                                  info: RequestInfo, request: HeartbeatRequest) -> CoordinatorResult:
        member = self._validate_classic_member(group, request.member_id, request.group_instance_id)
        if member.member_epoch != request.generation_id:
            raise ApiError(ErrorCode.ILLEGAL_GENERATION)
        self.schedule_consumer_session_timeout(group.group_id, member.member_id,
                                               member.classic_metadata.session_timeout_ms)
        error = ErrorCode.NONE
        if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            error = ErrorCode.REBALANCE_IN_PROGRESS
            gid, mid = group.group_id, member.member_id
            self.timer.schedule_if_absent(consumer_join_key(gid, mid), max(member.rebalance_timeout_ms, 0),
                                          lambda: self._fence_member_operation(
                                              gid, mid, "the classic member failed to join within the rebalance timeout"))
        return CoordinatorResult(response=HeartbeatResponse(error_code=error))

    def classic_group_leave_to_consumer_group(self, group: ConsumerGroup, info: RequestInfo,
                                              request: LeaveGroupRequest) -> CoordinatorResult:
        gid = group.group_id
        responses: list[MemberResponse] = []
        leaving: list[ConsumerGroupMember] = []
        records: list[rec.CoordinatorRecord] = []
        for identity in request.members:
            mid, iid = identity.member_id, identity.group_instance_id
            try:
                if iid is None:
                    member = group.member(mid)
                    if not member.uses_classic_protocol:
                        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
                else:
                    static = group.static_member(iid)
                    if static is None:
                        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {iid} is unknown.")
                    member = static
                    if mid != UNKNOWN_MEMBER_ID:
                        self._throw_if_instance_id_fenced(member, gid, mid, iid)
                    if not member.uses_classic_protocol:
                        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)
                    mid = member.member_id
                self._remove_member_records(records, gid, mid)
                self._cancel_member_timers(gid, mid)
                leaving.append(member)
                responses.append(MemberResponse(member_id=mid, group_instance_id=iid, error_code=ErrorCode.NONE))
            except ApiError as exc:
                responses.append(MemberResponse(member_id=mid, group_instance_id=iid, error_code=exc.error_code))
        if records:
            names = Counter(group.subscribed_topic_counts)
            for m in leaving:
                names.subtract(m.subscribed_topic_names)
            topics = {t for t, c in names.items() if c > 0}
            for regex, count in group.regex_subscriber_counts.items():
                if count > 0 and regex in group.resolved_regexes:
                    topics |= group.resolved_regexes[regex].topics
            self._fenced_epoch_records(group, leaving, topics, records)
        return CoordinatorResult(records, LeaveGroupResponse(error_code=ErrorCode.NONE, members=responses))


def _replay_into(group: ConsumerGroup, records: list[rec.CoordinatorRecord]) -> None:
    """Build a detached consumer group from its creation records (the same code path as replay)."""
    for r in records:
        t = r.record_type
        if t == rec.RecordType.CONSUMER_GROUP_MEMBER_METADATA:
            group.replay_member_subscription(r.key.member_id, r.value)
        elif t == rec.RecordType.CONSUMER_GROUP_METADATA:
            group.replay_epoch(r.value.epoch, r.value.metadata_hash)
        elif t == rec.RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            group.replay_target_assignment(r.key.member_id, rec.assignment_from_record(r.value.topic_partitions))
        elif t == rec.RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.replay_assignment_epoch(r.value.assignment_epoch, r.value.assignment_timestamp)
        elif t == rec.RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            group.replay_current_assignment(r.key.member_id, r.value)
