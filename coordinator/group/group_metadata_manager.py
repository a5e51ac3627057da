"""The groups of one __consumer_offsets partition (Kafka's GroupMetadataManager).

This module holds the group map, looks groups up, replays group records, and answers the
whole-group APIs (ListGroups, DescribeGroups, ConsumerGroupDescribe, DeleteGroups). The membership
protocols are its two collaborators, ``classic`` (``classic_protocol``: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup) and ``consumer`` (``consumer_protocol``: ConsumerGroupHeartbeat, and classic
members of consumer groups), each given the group map (``GroupMap``) and what else it needs in its
constructor. Everything runs on the shard's task.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable

from coordinator.group import records as rec
from coordinator.group.classic_group import ClassicGroup, ClassicGroupState
from coordinator.group.classic_protocol import ClassicProtocol
from coordinator.group.config import GroupCoordinatorConfig
from coordinator.group.consumer_group import ConsumerGroup, ResolvedRegex
from coordinator.group.consumer_protocol import ConsumerProtocol
from coordinator.group.embedded_protocol import PROTOCOL_TYPE
from coordinator.group.group_config import GroupConfigs
from coordinator.group.group_map import Group, GroupMap
from coordinator.group.topics import TopicsImage
from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.timer import CoordinatorTimer
from wire import ErrorCode
from wire.messages import consumer_group_describe_response as cgd
from wire.messages.describe_groups_response import DescribedGroup
from wire.messages.list_groups_response import ListedGroup

__all__ = ["Group", "GroupMetadataManager", "GROUP_TYPE_CLASSIC", "GROUP_TYPE_CONSUMER"]

log = logging.getLogger("pykbroker.coordinator.group")

GROUP_TYPE_CLASSIC = "classic"
GROUP_TYPE_CONSUMER = "consumer"
# Kafka's DescribeGroups "authorized operations omitted" marker.
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def group_type(group: Group) -> str:
    return GROUP_TYPE_CLASSIC if isinstance(group, ClassicGroup) else GROUP_TYPE_CONSUMER


def group_state_name(group: Group) -> str:
    return group.state.value


class GroupMetadataManager:
    def __init__(self, config: GroupCoordinatorConfig, clock: Clock, timer: CoordinatorTimer, topics: TopicsImage,
                 new_uuid: Callable[[], uuid.UUID] = uuid.uuid4, group_configs: GroupConfigs | None = None) -> None:
        self.config = config
        self.group_configs = group_configs  # per-group overrides (GROUP config resources); None: the broker's
        self.clock = clock
        self.timer = timer
        self.topics = topics
        self.new_uuid = new_uuid
        self.groups = GroupMap(clock)
        # The membership protocols, each given the group map and what else it needs; the consumer protocol
        # hands a group downgraded to classic over to the classic protocol's timers and rebalance.
        self.consumer = ConsumerProtocol(
            self.groups, config, clock, timer, topics, new_uuid, group_configs,
            reschedule_classic_heartbeat=lambda group, member: self.classic.reschedule_classic_heartbeat(group, member),
            prepare_classic_rebalance=lambda group, reason: self.classic.prepare_rebalance(group, reason))
        self.classic = ClassicProtocol(self.groups, config, clock, timer, new_uuid, self.consumer)

    # -- lookups ----------------------------------------------------------------------------------------
    def group(self, group_id: str) -> Group:
        return self.groups.group(group_id)

    def classic_group(self, group_id: str) -> ClassicGroup:
        return self.groups.classic_group(group_id)

    def consumer_group(self, group_id: str) -> ConsumerGroup:
        return self.groups.consumer_group(group_id)

    def get_or_create_classic_group(self, group_id: str, create: bool) -> ClassicGroup:
        return self.groups.get_or_create_classic_group(group_id, create)

    def _persisted_consumer_group(self, group_id: str, create: bool) -> ConsumerGroup | None:
        """The replay path: the consumer group a record belongs to, created if ``create``.

        A simple classic group (made by offset commits alone, backed by no record) is replaced.
        """
        g = self.groups.get(group_id)
        if isinstance(g, ConsumerGroup):
            return g
        if not create:
            return None
        if g is not None and not g.is_simple_group:
            raise ValueError(f"group {group_id} is a classic group; cannot replay consumer group records into it")
        cg = self.groups[group_id] = ConsumerGroup(group_id)
        return cg

    def group_ids(self) -> list[str]:
        return list(self.groups)

    # -- replay -----------------------------------------------------------------------------------------
    def replay(self, record: rec.CoordinatorRecord) -> None:
        """Apply one group record (types 2-8, 16)."""
        key, value = record.key, record.value
        t = record.record_type
        if t == rec.RecordType.GROUP_METADATA:
            if value is None:
                self._remove_group(key.group)
            else:
                group = ClassicGroup.from_record(key.group, value, self.clock.now_ms())
                self._remove_group(key.group)
                self.groups[key.group] = group
            return
        gid = key.group_id
        if t == rec.RecordType.CONSUMER_GROUP_METADATA:
            if value is None:
                g = self.groups.get(gid)
                if isinstance(g, ConsumerGroup):
                    self._remove_group(gid)
                return
            created = self._persisted_consumer_group(gid, True)
            assert created is not None  # create=True
            created.replay_epoch(value.epoch, value.metadata_hash)
        elif t == rec.RecordType.CONSUMER_GROUP_PARTITION_METADATA:
            # Kafka 4.0's subscription metadata: replaced by the metadata hash in 4.1; nothing to keep.
            return
        elif t == rec.RecordType.CONSUMER_GROUP_MEMBER_METADATA:
            g = self._persisted_consumer_group(gid, value is not None)
            if g is not None:
                g.replay_member_subscription(key.member_id, value)
        elif t == rec.RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER:
            g = self._persisted_consumer_group(gid, value is not None)
            if g is not None:
                g.replay_target_assignment(
                    key.member_id, None if value is None else rec.assignment_from_record(value.topic_partitions))
        elif t == rec.RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA:
            g = self._persisted_consumer_group(gid, value is not None)
            if g is not None:
                g.replay_assignment_epoch(-1, 0) if value is None else g.replay_assignment_epoch(
                    value.assignment_epoch, value.assignment_timestamp)
        elif t == rec.RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT:
            g = self._persisted_consumer_group(gid, value is not None)
            if g is not None:
                g.replay_current_assignment(key.member_id, value)
        elif t == rec.RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION:
            g = self._persisted_consumer_group(gid, value is not None)
            if g is not None:
                g.replay_regex(key.regular_expression, None if value is None else ResolvedRegex(
                    frozenset(value.topics), value.version, value.timestamp))

    def _remove_group(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

    # -- load / unload ---------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        """Start the timers of loaded members (Kafka's onLoaded)."""
        for group in list(self.groups.values()):
            if isinstance(group, ConsumerGroup):
                for member in group.members.values():
                    self.consumer.schedule_consumer_session_timeout(
                        group.group_id, member.member_id,
                        member.classic_metadata.session_timeout_ms if member.uses_classic_protocol
                        else self.consumer.consumer_session_timeout_ms(group.group_id))
                    self.consumer.maybe_schedule_rebalance_timeout(group.group_id, member)
            else:
                for classic_member in group.members.values():
                    self.classic.reschedule_classic_heartbeat(group, classic_member)
                if len(group.members) > self.config.group_max_size:
                    self.classic.prepare_rebalance(group, "freshly loaded group is over capacity")

    def on_unloaded(self) -> None:
        """Answer parked requests so clients look up the coordinator again (Kafka's onUnloaded)."""
        now = self.clock.now_ms()
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                previous = group.state
                group.transition_to(ClassicGroupState.DEAD, now)
                if previous is ClassicGroupState.PREPARING_REBALANCE:
                    group.complete_all_joins(ErrorCode.NOT_COORDINATOR)
                elif previous in (ClassicGroupState.COMPLETING_REBALANCE, ClassicGroupState.STABLE):
                    group.complete_all_syncs(ErrorCode.NOT_COORDINATOR)
        self.timer.cancel_all()

    # -- ListGroups / DescribeGroups / ConsumerGroupDescribe -------------------------------------------
    def list_groups(self, states_filter: Iterable[str], types_filter: Iterable[str]) -> list[ListedGroup]:
        states = {s.strip().lower() for s in states_filter}
        types = {t.strip().lower() for t in types_filter}
        out = []
        for group in self.groups.values():
            if states and group_state_name(group).lower() not in states:
                continue
            if types and group_type(group) not in types:
                continue
            protocol_type = (group.protocol_type or "") if isinstance(group, ClassicGroup) else PROTOCOL_TYPE
            out.append(ListedGroup(group_id=group.group_id, protocol_type=protocol_type,
                                   group_state=group_state_name(group), group_type=group_type(group)))
        return out

    def describe_groups(self, group_ids: Iterable[str], api_version: int) -> list[DescribedGroup]:
        out = []
        for group_id in group_ids:
            try:
                group = self.classic_group(group_id)
            except ApiError as exc:
                described = DescribedGroup(group_id=group_id, group_state=ClassicGroupState.DEAD.value,
                                           members=[], authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
                if api_version >= 6:
                    # KIP-1043: say why instead of pretending the group is Dead.
                    described.error_code = exc.error_code
                    described.error_message = exc.message
                out.append(described)
                continue
            stable = group.state is ClassicGroupState.STABLE
            out.append(DescribedGroup(
                group_id=group_id, group_state=group.state.value, protocol_type=group.protocol_type or "",
                protocol_data=(group.protocol_name or "") if stable else "",
                members=[m.describe(group.protocol_name if stable else None) for m in group.members.values()],
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
        return out

    def consumer_group_describe(self, group_ids: Iterable[str]) -> list[cgd.DescribedGroup]:
        out = []
        for group_id in group_ids:
            try:
                group = self.consumer_group(group_id)
            except ApiError as exc:
                out.append(cgd.DescribedGroup(group_id=group_id, error_code=exc.error_code,
                                              error_message=exc.message, members=[],
                                              authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
                continue
            out.append(cgd.DescribedGroup(
                group_id=group_id, group_state=group.state.value, group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.preferred_server_assignor() or self.config.consumer_group_assignors[0],
                members=[self._describe_member(group, m) for m in group.members.values()],
                authorized_operations=AUTHORIZED_OPERATIONS_OMITTED))
        return out

    def _describe_member(self, group: ConsumerGroup, m) -> cgd.Member:
        def assignment(partitions) -> cgd.Assignment:
            tps = []
            for topic_id, parts in sorted(partitions.items(), key=lambda kv: str(kv[0])):
                info = self.topics.by_id(topic_id)
                if info is not None:
                    tps.append(cgd.TopicPartitions(topic_id=topic_id, topic_name=info.name, partitions=sorted(parts)))
            return cgd.Assignment(topic_partitions=tps)
        return cgd.Member(
            member_id=m.member_id, instance_id=m.instance_id, rack_id=m.rack_id, member_epoch=m.member_epoch,
            client_id=m.client_id, client_host=m.client_host,
            subscribed_topic_names=sorted(m.subscribed_topic_names), subscribed_topic_regex=m.subscribed_topic_regex,
            assignment=assignment(m.assigned_partitions), target_assignment=assignment(group.target_of(m.member_id)),
            member_type=0 if m.uses_classic_protocol else 1)  # KIP-1099: 0 classic, 1 consumer

    # -- DeleteGroups and expiry -----------------------------------------------------------------------
    def validate_delete_group(self, group_id: str) -> None:
        group = self.group(group_id)
        if isinstance(group, ClassicGroup):
            if group.state is ClassicGroupState.DEAD:
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is in dead state.")
            if group.state in (ClassicGroupState.STABLE, ClassicGroupState.PREPARING_REBALANCE,
                               ClassicGroupState.COMPLETING_REBALANCE):
                raise ApiError(ErrorCode.NON_EMPTY_GROUP)
        elif not group.is_empty:
            raise ApiError(ErrorCode.NON_EMPTY_GROUP)

    def group_tombstone_records(self, group_id: str) -> list[rec.CoordinatorRecord]:
        group = self.groups[group_id]
        if isinstance(group, ClassicGroup):
            return [rec.group_metadata_tombstone(group_id)]
        return group.tombstone_records()

    def maybe_delete_group(self, group_id: str, records: list[rec.CoordinatorRecord]) -> bool:
        """Tombstone an empty group whose offsets are all gone (offset expiry)."""
        group = self.groups.get(group_id)
        if group is not None and group.is_empty:
            records.extend(self.group_tombstone_records(group_id))
            return True
        return False

    # -- tests ------------------------------------------------------------------------------------------
    def snapshot(self) -> dict:
        """The record-backed state of every group, comparable between a live shard and a replayed one."""
        out = {}
        for gid, g in sorted(self.groups.items()):
            if isinstance(g, ConsumerGroup):
                out[gid] = g.snapshot()
            else:
                # A rebalance in progress is not durable: a loaded group is Stable with members, else Empty.
                durable_state = "Stable" if g.members else "Empty"
                out[gid] = {"type": "classic", "state": durable_state, "generation": g.generation_id,
                            "protocol_type": g.protocol_type, "protocol": g.protocol_name, "leader": g.leader_id,
                            "members": [(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                         m.rebalance_timeout_ms, m.session_timeout_ms,
                                         m.metadata(g.protocol_name), m.assignment) for m in g.members.values()]}
        return out
