"""StreamsGroupHeartbeat (KIP-1071) on a shard, as Kafka 4.4's GroupMetadataManager.streamsGroupHeartbeat.

The heartbeat computes the group's next state and answers with the records that take a replay there (the
runtime replays them after the append):

- a member joins with epoch 0 and its topology. A new group starts at epoch 1 and takes the first topology; a
  different topology at the same or a newer epoch is refused ("Topology updates are not supported yet."), an
  older one is answered with the STALE_TOPOLOGY status; a malformed topology is STREAMS_INVALID_TOPOLOGY;
- static members (an instance id): a leave with epoch -2 keeps the member, its tasks and the group epoch; a new
  member id joining with that instance id takes its place (its target, its tasks, its epoch) without a
  rebalance; an instance id a live member holds is UNRELEASED_INSTANCE_ID;
- the group epoch is bumped when a member joins, leaves or changes, or the topology, its topics or the
  assignment configs change; the target assignment (``streams_assignor``) is then recomputed at that epoch,
  but not while a new group waits ``streams.initial.rebalance.delay.ms`` for more members, nor within
  ``streams.assignment.interval.ms`` of the last one (both answered with ASSIGNMENT_DELAYED); a leave only
  bumps the epoch (the next heartbeat reassigns), unless it empties the group;
- a member moves to the target as KIP-848 members do: active tasks it must give up are pending revocation
  (epoch unchanged) until its heartbeat no longer reports them; active tasks another member still owns are
  withheld until released;
- interactive-query endpoints: the group's endpoint epoch moves when a member with an endpoint gets other tasks
  or an endpoint changes; a member whose epoch differs gets every member's partitions by endpoint;
- one member's shutdown request is answered to every member (SHUTDOWN_APPLICATION) until the group empties;
- members lacking a client tag of ``streams.rack.aware.assignment.tags`` are told (MISSING_CLIENT_TAGS);
- the changelog offsets members report by task are kept (in memory, as Kafka's), described, and rank the
  candidates for a standby copy (the member with the most of a task's state first).

A member that does not heartbeat within the session timeout is removed as if it had left (a static member too,
once it left with -2 and did not come back), and so is one that has not given up the tasks it must revoke
within its rebalance timeout. Settings are the group's ``streams.*`` configs over the broker's. Kafka 4.4's
sticky assignor gives no warm-up tasks, nor does this one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from coordinator.group import records as rec
from coordinator.group import streams_group_records as srec
from coordinator.group.request_info import RequestInfo
from coordinator.group.streams_assignor import assign
from coordinator.group.streams_config import StreamsGroupConfig, StreamsGroupConfigs
from coordinator.group.streams_group import StreamsGroup, StreamsGroupMember, StreamsGroups
from coordinator.group.streams_topology import ConfiguredTopology, StatusCode, configure, validate
from coordinator.group.topics import TopicsImage, metadata_hash
from coordinator.runtime.clock import Clock
from coordinator.runtime.errors import ApiError
from coordinator.runtime.result import CoordinatorResult
from coordinator.runtime.timer import CoordinatorTimer
from wire import ErrorCode
from wire.messages import (
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsGroupMemberMetadataValue,
    StreamsGroupTopologyValue,
)
from wire.messages import streams_group_heartbeat_response as _resp
from wire.messages import streams_group_member_metadata_value as _member
from wire.messages import streams_group_topology_value as _topology

__all__ = ["MemberState", "StreamsProtocol"]

log = logging.getLogger("pykbroker.coordinator.group")

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

INITIAL_DELAY_DETAIL = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DETAIL = "Assignment delayed due to the configured assignment interval."


class MemberState:
    """Kafka 4.4's streams MemberState values, as the current-assignment record stores them."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.INVALID_REQUEST, message)


def topology_value(t) -> StreamsGroupTopologyValue:
    """The heartbeat's Topology as the StreamsGroupTopology record value."""
    def info(i) -> _topology.TopicInfo:
        return _topology.TopicInfo(name=i.name, partitions=i.partitions, replication_factor=i.replication_factor,
                                   topic_configs=[_topology.TopicConfig(key=c.key, value=c.value)
                                                  for c in i.topic_configs])
    return StreamsGroupTopologyValue(epoch=t.epoch, subtopologies=[
        _topology.Subtopology(
            subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
            source_topic_regex=list(s.source_topic_regex),
            state_changelog_topics=[info(i) for i in s.state_changelog_topics],
            repartition_sink_topics=list(s.repartition_sink_topics),
            repartition_source_topics=[info(i) for i in s.repartition_source_topics],
            copartition_groups=[_topology.CopartitionGroup(
                source_topics=list(c.source_topics), source_topic_regex=list(c.source_topic_regex),
                repartition_source_topics=list(c.repartition_source_topics)) for c in s.copartition_groups])
        for s in t.subtopologies])


def _tasks_set(tasks: srec.Tasks) -> set[tuple[str, int]]:
    return {(s, p) for s, parts in tasks for p in parts}


def _grouped(tasks: set[tuple[str, int]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for s, p in tasks:
        out.setdefault(s, []).append(p)
    return out


def _assignment(m: StreamsGroupMember) -> tuple:
    """What the current-assignment record of a member holds."""
    return (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.pending_revocation,
            sorted(m.active_epochs.items()))


def session_timeout_key(group_id: str, member_id: str) -> str:
    return f"streams-session-timeout-{group_id}-{member_id}"


def rebalance_timeout_key(group_id: str, member_id: str) -> str:
    return f"streams-rebalance-timeout-{group_id}-{member_id}"


def initial_rebalance_key(group_id: str) -> str:
    return f"streams-initial-rebalance-{group_id}"


def _task_offsets(reported) -> dict[tuple[str, int], int]:
    """A heartbeat's TaskOffsets by task; a task twice is INVALID_REQUEST, as Kafka's MemberTaskOffsets."""
    out: dict[tuple[str, int], int] = {}
    for t in reported:
        if (t.subtopology_id, t.partition) in out:
            raise _invalid(f"Task offsets contain a duplicate entry for subtopology {t.subtopology_id} and partition "
                           f"{t.partition}.")
        out[(t.subtopology_id, t.partition)] = t.offset
    return out


def _status(code: int, detail: str) -> _resp.Status:
    return _resp.Status(status_code=code, status_detail=detail)


class StreamsProtocol:
    def __init__(self, groups: StreamsGroups, topics: TopicsImage, timer: CoordinatorTimer, clock: Clock,
                 configs: StreamsGroupConfigs, other_group: Callable[[str], bool] = lambda _: False,
                 empty_classic_group: Callable[[str], bool] = lambda _: False) -> None:
        """``configs``: each group's settings; ``other_group(group_id)``: a classic or consumer group has that id;
        ``empty_classic_group(group_id)``: that group is a classic group without members, which a joining streams
        member converts (Kafka's offline migration of a classic Streams application)."""
        self.groups = groups
        self.other_group = other_group
        self.empty_classic_group = empty_classic_group
        self.topics = topics
        self.timer = timer
        self.clock = clock
        self.configs = configs

    # -- sessions --------------------------------------------------------------------------------------
    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.schedule(session_timeout_key(group_id, member_id), self.configs.of(group_id).session_timeout_ms,
                            lambda: self._expire(group_id, member_id))

    def _expire(self, group_id: str, member_id: str) -> CoordinatorResult:
        """A member that stopped heartbeating is fenced: removed as if it had left."""
        group = self.groups.groups.get(group_id)
        if group is None or member_id not in group.members:
            return CoordinatorResult([])
        log.info("streams group %s: member %s fenced, its session expired", group_id, member_id)
        return CoordinatorResult(self._remove_member(group, member_id))

    def _schedule_rebalance_timeout(self, group_id: str, member: StreamsGroupMember) -> None:
        """A member giving tasks up must have done so within its rebalance timeout, or it is fenced."""
        timeout = member.metadata.rebalance_timeout_ms if member.metadata is not None else -1
        epoch = member.member_epoch
        self.timer.schedule(rebalance_timeout_key(group_id, member.member_id), max(timeout, 0),
                            lambda: self._rebalance_timeout(group_id, member.member_id, epoch, timeout))

    def _rebalance_timeout(self, group_id: str, member_id: str, epoch: int, timeout: int) -> CoordinatorResult:
        group = self.groups.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None or member.member_epoch != epoch:
            return CoordinatorResult([])
        log.info("streams group %s: member %s fenced, it did not give its tasks up within %d ms", group_id,
                 member_id, timeout)
        self.timer.cancel(session_timeout_key(group_id, member_id))
        return CoordinatorResult(self._remove_member(group, member_id))

    def on_loaded(self) -> None:
        """Start the session timers of loaded members, and the rebalance timers of those giving tasks up
        (Kafka's onLoaded)."""
        for group in self.groups.groups.values():
            for member_id, member in group.members.items():
                self._schedule_session_timeout(group.group_id, member_id)
                if member.state == MemberState.UNREVOKED_TASKS:
                    self._schedule_rebalance_timeout(group.group_id, member)

    # -- validation ------------------------------------------------------------------------------------
    @staticmethod
    def _validate(r: StreamsGroupHeartbeatRequest) -> None:
        if not r.group_id or not r.group_id.strip():
            raise _invalid("GroupId can't be empty.")
        if not r.member_id or not r.member_id.strip():
            raise _invalid("MemberId can't be empty.")
        if r.member_epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided when joining the group.")
            if r.topology is None:
                raise _invalid("Topology must be non-empty when joining the group.")
            if not r.process_id:
                raise _invalid("ProcessId must be non-empty when joining the group.")
        elif r.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _invalid(f"MemberEpoch is {r.member_epoch}, but must be greater than or equal to -2.")

    def _member(self, group: StreamsGroup,
                r: StreamsGroupHeartbeatRequest) -> tuple[StreamsGroupMember | None, StreamsGroupMember | None]:
        """(the member as the group knows it or None for a new one, the static member it replaces or None)."""
        old = group.members.get(r.member_id)
        holder = group.static_member(r.instance_id) if r.instance_id is not None else None
        if r.member_epoch == 0:
            if holder is None or holder.member_id == r.member_id:
                return old, None
            if holder.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise ApiError(ErrorCode.UNRELEASED_INSTANCE_ID,
                               f"Static member {r.member_id} with instance id {r.instance_id} cannot join the group "
                               f"because the instance id is owned by {holder.member_id} member.")
            return old, holder
        if old is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
        if holder is not None and holder.member_id != r.member_id:
            raise ApiError(ErrorCode.FENCED_INSTANCE_ID,
                           f"Static member {r.member_id} with instance id {r.instance_id} is fenced by existing "
                           f"member {holder.member_id}.")
        if r.member_epoch not in (old.member_epoch, old.previous_member_epoch) or (
                r.member_epoch != old.member_epoch and r.active_tasks is None):
            raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The streams group member has a smaller or larger member epoch ({r.member_epoch})"
                           f" than the one known by the group coordinator ({old.member_epoch}).")
        return old, None

    # -- heartbeat -------------------------------------------------------------------------------------
    def heartbeat(self, info: RequestInfo, r: StreamsGroupHeartbeatRequest) -> CoordinatorResult:
        self._validate(r)
        g, mid = r.group_id, r.member_id
        group = self.groups.groups.get(g)
        converted: list[rec.CoordinatorRecord] = []
        if group is None and self.other_group(g):
            if r.member_epoch != 0 or not self.empty_classic_group(g):
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {g} is not a streams group.")
            # As Kafka's getOrCreateStreamsGroup: the empty classic group gives way (its tombstone; the committed
            # offsets stay) and the streams group starts from them.
            log.info("streams group %s: converted the empty classic group to a streams group", g)
            converted.append(rec.group_metadata_tombstone(g))
        if r.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group, r)
        new_group = group is None
        if group is None:
            if r.member_epoch != 0:
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {g} not found.")
            group = StreamsGroup(g)  # in memory until its records are replayed, as Kafka's new group
        cfg = self.configs.of(g)
        old, replaced = self._member(group, r)
        base = old or replaced
        records: list[rec.CoordinatorRecord] = converted
        members = dict(group.members)
        target = dict(group.target_assignment)
        if replaced is not None:  # the static member's new member id takes its place, tasks and epoch
            records += [srec.current_assignment_tombstone(g, replaced.member_id),
                        srec.target_assignment_tombstone(g, replaced.member_id),
                        srec.member_metadata_tombstone(g, replaced.member_id)]
            del members[replaced.member_id]
            self.timer.cancel(session_timeout_key(g, replaced.member_id))
            target[mid] = target.pop(replaced.member_id, srec.EMPTY_TASKS)
            base = StreamsGroupMember(mid, replaced.metadata, member_epoch=0, previous_member_epoch=0,
                                      assigned=replaced.assigned, active_epochs=dict(replaced.active_epochs))

        # topology
        statuses: list[_resp.Status] = []
        topology = group.topology
        if r.topology is not None:
            new = topology_value(r.topology)
            if topology is None:
                validate(new)
                topology = new
                records.append(srec.topology_record(g, topology))
            elif new.epoch >= topology.epoch and new != topology:
                raise _invalid("Topology updates are not supported yet.")
        assert topology is not None

        # member metadata
        metadata = self._member_metadata(info, r, base)
        changed = base is None or base.metadata != metadata
        if changed or replaced is not None:
            records.append(srec.member_metadata_record(g, mid, metadata))
        if replaced is not None:
            records.append(srec.target_assignment_record(g, mid, target[mid]))
        if metadata.topology_epoch < topology.epoch:
            statuses.append(_status(StatusCode.STABLE_TOPOLOGY, f"The member's topology epoch {metadata.topology_epoch}"
                                    f" is behind the group's topology epoch {topology.epoch}."))
        members_meta = {m: x.metadata for m, x in members.items() if x.metadata is not None}
        members_meta[mid] = metadata

        # group epoch
        configured = configure(topology, self.topics)
        ready = configured.status is None
        mhash = metadata_hash(self.topics, {t for s in topology.subtopologies
                                            for t in (*s.source_topics, *(i.name for i in s.repartition_source_topics))})
        assignment_configs = (("num.standby.replicas", str(cfg.num_standby_replicas)),)
        validated = topology.epoch if ready else group.metadata.validated_topology_epoch
        epoch = group.group_epoch
        if (changed or topology is not group.topology or mhash != group.metadata.metadata_hash
                or validated != group.metadata.validated_topology_epoch
                or assignment_configs != group.metadata.last_assignment_configs):
            epoch += 1
            records.append(srec.epoch_record(g, replace(group.metadata, epoch=epoch, metadata_hash=mhash,
                                                        validated_topology_epoch=validated,
                                                        last_assignment_configs=assignment_configs)))
        if not group.members and cfg.initial_rebalance_delay_ms > 0:
            self.timer.schedule_if_absent(initial_rebalance_key(g), cfg.initial_rebalance_delay_ms,
                                          lambda: CoordinatorResult([]))

        if r.task_offsets is not None or r.task_end_offsets is not None:  # Kafka's MemberTaskOffsets.update
            offsets, ends = group.task_offsets.get(mid, ({}, {}))
            group.task_offsets[mid] = (offsets if r.task_offsets is None else _task_offsets(r.task_offsets),
                                       ends if r.task_end_offsets is None else _task_offsets(r.task_end_offsets))

        # target assignment
        target_epoch = group.target_assignment_epoch
        member_target = target.get(mid, srec.EMPTY_TASKS)
        if epoch > target_epoch:
            now = self.clock.now_ms()
            if self.timer.is_scheduled(initial_rebalance_key(g)):
                target_epoch, member_target = max(1, target_epoch), srec.EMPTY_TASKS
                statuses.append(_status(StatusCode.ASSIGNMENT_DELAYED, INITIAL_DELAY_DETAIL))
            elif cfg.assignment_interval_ms > 0 and now < group.last_assignment_ms + cfg.assignment_interval_ms:
                statuses.append(_status(StatusCode.ASSIGNMENT_DELAYED, INTERVAL_DETAIL))
            else:
                current = {m: x.assigned for m, x in members.items()}
                current[mid] = base.assigned if base is not None else srec.EMPTY_TASKS
                # Kafka's view of the group with this member updated: the group's members in their order, a
                # member new to it (or a static member's new id) last
                order = [m for m in group.member_order() if m in members_meta] + [m for m in members_meta
                                                                                  if m not in group.members]
                new_target = self._assign(topology, configured, {m: members_meta[m] for m in order}, current, cfg,
                                          group.task_offsets)
                for m, t in new_target.items():
                    if target.get(m) != t:
                        records.append(srec.target_assignment_record(g, m, t))
                records.append(srec.target_assignment_epoch_record(g, epoch, now))
                target_epoch, member_target = epoch, new_target.get(mid, srec.EMPTY_TASKS)

        # reconciliation
        member = base or StreamsGroupMember(mid, metadata, member_epoch=0)
        others = {m: x for m, x in members.items() if m != mid}
        updated = replace(self._reconcile(others, member, target_epoch, member_target, r), metadata=metadata)
        if base is None or _assignment(updated) != _assignment(base) or replaced is not None:
            records.append(srec.current_assignment_record(
                g, mid, updated.member_epoch, updated.previous_member_epoch, updated.state,
                updated.assigned, updated.pending_revocation, updated.active_epochs))
            if updated.state == MemberState.UNREVOKED_TASKS:
                self._schedule_rebalance_timeout(g, updated)
            else:
                self.timer.cancel(rebalance_timeout_key(g, mid))

        self._schedule_session_timeout(g, mid)
        if r.shutdown_application and group.shutdown_request_member_id is None:
            log.info("streams group %s: member %s asked the application to shut down", g, mid)
            group.shutdown_request_member_id = mid
        response = StreamsGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=mid, member_epoch=updated.member_epoch,
            heartbeat_interval_ms=cfg.heartbeat_interval_ms, task_offset_interval_ms=cfg.task_offset_interval_ms,
            acceptable_recovery_lag=cfg.acceptable_recovery_lag)  # v0's legacy field stays 0, as on Kafka 4.4
        tasks_changed = base is None or updated.assigned != base.assigned
        if r.member_epoch == 0 or tasks_changed:
            response.active_tasks = self._ids(updated.assigned.active)
            response.standby_tasks = self._ids(updated.assigned.standby)
            response.warmup_tasks = self._ids(updated.assigned.warmup)
        self._endpoints(group, members, updated, base, topology, tasks_changed, r, response, new_group)

        if configured.status is not None:
            statuses.append(_status(configured.status, configured.detail))
        if group.shutdown_request_member_id is not None:
            statuses.append(_status(StatusCode.SHUTDOWN_APPLICATION,
                                    f"Streams group member {group.shutdown_request_member_id} encountered a fatal "
                                    "error and requested a shutdown for the entire application."))
        tags = {t.key for t in metadata.client_tags}
        missing = [k for k in cfg.rack_aware_assignment_tags if k not in tags]
        if missing:
            statuses.append(_status(StatusCode.MISSING_CLIENT_TAGS,
                                    f"Missing required client tags for rack-aware standby assignment: "
                                    f"[{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' in your "
                                    "Streams config."))
        response.status = statuses
        return CoordinatorResult(records, response)

    def _assign(self, topology: StreamsGroupTopologyValue, configured: ConfiguredTopology,
                members: dict[str, StreamsGroupMemberMetadataValue], current: dict[str, srec.TasksTuple],
                cfg: StreamsGroupConfig, task_offsets) -> dict[str, srec.TasksTuple]:
        """Kafka's TargetAssignmentBuilder: the sticky assignor over every member's current assignment."""
        tasks = configured.tasks if configured.status is None else {}
        return assign({m: x.process_id for m, x in members.items()}, tasks, current, cfg.num_standby_replicas,
                      stateful={s.subtopology_id for s in topology.subtopologies if s.state_changelog_topics},
                      reported_offsets={m: task_offsets[m][0] for m in members if m in task_offsets})

    def _endpoints(self, group: StreamsGroup, members: dict[str, StreamsGroupMember], updated: StreamsGroupMember,
                   base: StreamsGroupMember | None, topology: StreamsGroupTopologyValue, tasks_changed: bool,
                   r: StreamsGroupHeartbeatRequest, response: StreamsGroupHeartbeatResponse, new_group: bool) -> None:
        """Kafka's endpoint information: the group's endpoint epoch moves when this member's endpoint changes or
        a member with an endpoint gets other tasks; a member at another epoch gets every member's partitions."""
        endpoint = updated.metadata.user_endpoint if updated.metadata is not None else None
        before = base.metadata.user_endpoint if base is not None and base.metadata is not None else None
        if before != endpoint or (tasks_changed and endpoint is not None):
            group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != r.endpoint_information_epoch:
            listed = [m for mid, m in sorted(members.items()) if mid != updated.member_id] + [updated]
            response.partitions_by_user_endpoint = [
                self._endpoint_partitions(m, topology) for m in listed
                if m.metadata is not None and m.metadata.user_endpoint is not None]
        if not new_group:
            response.endpoint_information_epoch = group.endpoint_information_epoch

    def _endpoint_partitions(self, m: StreamsGroupMember,
                             topology: StreamsGroupTopologyValue) -> _resp.EndpointToPartitions:
        """A member's endpoint with the partitions of its active tasks, and of its standby and warm-up tasks:
        each task's partition of every source and repartition source topic of its sub-topology."""
        subs = {s.subtopology_id: (*s.source_topics, *(i.name for i in s.repartition_source_topics))
                for s in topology.subtopologies}

        def partitions(*task_sets: srec.Tasks) -> list[_resp.TopicPartition]:
            out: dict[str, set[int]] = {}
            for tasks in task_sets:
                for s, parts in tasks:
                    for name in subs.get(s, ()):
                        info = self.topics.by_name(name)
                        out.setdefault(name, set()).update(
                            p for p in parts if info is None or p < info.num_partitions)
            return [_resp.TopicPartition(topic=t, partitions=sorted(p)) for t, p in sorted(out.items())]
        assert m.metadata is not None and m.metadata.user_endpoint is not None
        ep = m.metadata.user_endpoint
        return _resp.EndpointToPartitions(user_endpoint=_resp.Endpoint(host=ep.host, port=ep.port),
                                          active_partitions=partitions(m.assigned.active),
                                          standby_partitions=partitions(m.assigned.standby, m.assigned.warmup))

    @staticmethod
    def _ids(tasks: srec.Tasks) -> list[_resp.TaskIds]:
        return [_resp.TaskIds(subtopology_id=s, partitions=list(p)) for s, p in tasks]

    @staticmethod
    def _member_metadata(info: RequestInfo, r: StreamsGroupHeartbeatRequest,
                         old: StreamsGroupMember | None) -> StreamsGroupMemberMetadataValue:
        prev = old.metadata if old is not None else None
        return StreamsGroupMemberMetadataValue(
            instance_id=r.instance_id if r.instance_id is not None else (prev.instance_id if prev else None),
            rack_id=r.rack_id if r.rack_id is not None else (prev.rack_id if prev else None),
            client_id=info.client_id, client_host=info.client_host,
            rebalance_timeout_ms=r.rebalance_timeout_ms if r.rebalance_timeout_ms != -1
            else (prev.rebalance_timeout_ms if prev else -1),
            topology_epoch=r.topology.epoch if r.topology is not None else (prev.topology_epoch if prev else 0),
            process_id=r.process_id if r.process_id is not None else (prev.process_id if prev else ""),
            user_endpoint=(_member.Endpoint(host=r.user_endpoint.host, port=r.user_endpoint.port)
                           if r.user_endpoint is not None else (prev.user_endpoint if prev else None)),
            client_tags=([_member.KeyValue(key=t.key, value=t.value) for t in r.client_tags]
                         if r.client_tags is not None else (list(prev.client_tags) if prev else [])))

    @staticmethod
    def _reconcile(others: dict[str, StreamsGroupMember], member: StreamsGroupMember, target_epoch: int,
                   target: srec.TasksTuple, r: StreamsGroupHeartbeatRequest) -> StreamsGroupMember:
        """One KIP-848 reconciliation step on active tasks (standby tasks move at once)."""
        reported = None if r.active_tasks is None else {(t.subtopology_id, p) for t in r.active_tasks
                                                        for p in t.partitions}
        have = _tasks_set(member.assigned.active)
        pending = _tasks_set(member.pending_revocation.active)
        if member.state == MemberState.UNREVOKED_TASKS and (reported is None or reported & pending):
            return member  # still giving tasks up
        if member.state == MemberState.STABLE and member.member_epoch == target_epoch:
            return member
        want = _tasks_set(target.active)
        keep, revoke = have & want, have - want
        owned_by_others = {t for m in others.values()
                           for t in (*_tasks_set(m.assigned.active), *_tasks_set(m.pending_revocation.active))}
        add = want - keep - owned_by_others
        new = StreamsGroupMember(member.member_id, member.metadata)
        new.previous_member_epoch = member.member_epoch
        if revoke and (reported is None or reported & revoke):
            new.member_epoch = member.member_epoch
            new.state = MemberState.UNREVOKED_TASKS
            new.assigned = srec.TasksTuple.of(active=_grouped(keep), standby=_grouped(_tasks_set(target.standby)))
            new.pending_revocation = srec.TasksTuple.of(active=_grouped(revoke))
            new.active_epochs = {t: e for t, e in member.active_epochs.items() if t in keep}
            return new
        new.member_epoch = target_epoch
        new.state = MemberState.UNRELEASED_TASKS if add != want - keep else MemberState.STABLE
        new.assigned = srec.TasksTuple.of(active=_grouped(keep | add), standby=_grouped(_tasks_set(target.standby)))
        new.active_epochs = {t: member.active_epochs.get(t, target_epoch) for t in keep | add}
        return new

    # -- leaving ---------------------------------------------------------------------------------------
    def _leave(self, group: StreamsGroup | None, r: StreamsGroupHeartbeatRequest) -> CoordinatorResult:
        member = group.members.get(r.member_id) if group is not None else None
        if group is None or member is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
        response = StreamsGroupHeartbeatResponse(error_code=ErrorCode.NONE, member_id=r.member_id,
                                                 member_epoch=r.member_epoch, heartbeat_interval_ms=0)
        static = member.metadata is not None and member.metadata.instance_id is not None
        if r.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH and static:
            # The member keeps its place and tasks until its session ends or its instance comes back.
            return CoordinatorResult([srec.current_assignment_record(
                r.group_id, r.member_id, LEAVE_GROUP_STATIC_MEMBER_EPOCH, member.previous_member_epoch, member.state,
                member.assigned, member.pending_revocation, {t: 0 for t in member.active_epochs})], response)
        self.timer.cancel(session_timeout_key(r.group_id, r.member_id))
        self.timer.cancel(rebalance_timeout_key(r.group_id, r.member_id))
        return CoordinatorResult(self._remove_member(group, r.member_id), response)

    def _remove_member(self, group: StreamsGroup, mid: str) -> list[rec.CoordinatorRecord]:
        """The member's tombstones and the bumped group epoch; the next heartbeat of another member computes the
        new target (an emptied group's empty target is at the new epoch at once, as Kafka's)."""
        g = group.group_id
        epoch = group.group_epoch + 1
        records = [srec.current_assignment_tombstone(g, mid), srec.target_assignment_tombstone(g, mid),
                   srec.member_metadata_tombstone(g, mid), srec.epoch_record(g, replace(group.metadata, epoch=epoch))]
        if set(group.members) == {mid}:
            records.append(srec.target_assignment_epoch_record(g, epoch))
            group.shutdown_request_member_id = None
        return records
