"""StreamsGroupHeartbeat (KIP-1071) on a shard: join with a topology, task assignment, revocation, leave.

The heartbeat computes the group's next state and answers with the records that take a replay there (the
runtime replays them after the append), as Kafka's GroupMetadataManager.streamsGroupHeartbeat:

- a member joins with epoch 0 and its topology; the group takes the first topology, a newer topology epoch
  replaces it, the same epoch with other content is STREAMS_INVALID_TOPOLOGY_EPOCH, an older one
  STREAMS_TOPOLOGY_FENCED; a malformed topology is STREAMS_INVALID_TOPOLOGY;
- the group epoch is bumped when a member joins, leaves or changes, or the topology or its topics change; the
  target assignment (``streams_assignor``) is then recomputed at that epoch, empty while the topology is not
  ready (its status is answered: missing source or internal topics, incorrectly partitioned topics);
- a member moves to the target as KIP-848 members do: active tasks it must give up are pending revocation
  (epoch unchanged) until its heartbeat no longer reports them; active tasks another member still owns are
  withheld until released;
- epoch -1 (or -2, static leave) removes the member.

A member that does not heartbeat within the session timeout is removed as if it had left.

Not built yet: rebalance timeouts, static membership, warm-up tasks, task offsets and lags,
endpoint information, shutdown-application fan-out, creating missing internal topics.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from coordinator.group import records as rec
from coordinator.group import streams_group_records as srec
from coordinator.group.request_info import RequestInfo
from coordinator.group.streams_assignor import assign
from coordinator.group.streams_group import StreamsGroup, StreamsGroupMember, StreamsGroups
from coordinator.group.streams_topology import configure, validate
from coordinator.group.topics import TopicsImage, metadata_hash
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

__all__ = ["StreamsProtocol", "MemberState"]

log = logging.getLogger("pykbroker.coordinator.group")

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2


class MemberState:
    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2


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


def session_timeout_key(group_id: str, member_id: str) -> str:
    return f"streams-session-timeout-{group_id}-{member_id}"


class StreamsProtocol:
    """Defaults as Kafka 4.4's group.streams.session.timeout.ms (45 s), .heartbeat.interval.ms (5 s) and
    .num.standby.replicas (0), which the shard passes from the broker config."""

    def __init__(self, groups: StreamsGroups, topics: TopicsImage, timer: CoordinatorTimer,
                 session_timeout_ms: int = 45_000, heartbeat_interval_ms: int = 5000,
                 num_standby_replicas: int = 0, other_group: Callable[[str], bool] = lambda _: False,
                 acceptable_recovery_lag: int = 10_000, task_offset_interval_ms: int = 60_000) -> None:
        """``other_group(group_id)``: a classic or consumer group has that id."""
        self.groups = groups
        self.other_group = other_group
        self.topics = topics
        self.timer = timer
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.num_standby_replicas = num_standby_replicas
        self.acceptable_recovery_lag = acceptable_recovery_lag
        self.task_offset_interval_ms = task_offset_interval_ms

    # -- sessions --------------------------------------------------------------------------------------
    def _schedule_session_timeout(self, group_id: str, member_id: str) -> None:
        self.timer.schedule(session_timeout_key(group_id, member_id), self.session_timeout_ms,
                            lambda: self._expire(group_id, member_id))

    def _expire(self, group_id: str, member_id: str) -> CoordinatorResult:
        """A member that stopped heartbeating is fenced: removed as if it had left."""
        group = self.groups.groups.get(group_id)
        if group is None or member_id not in group.members:
            return CoordinatorResult([])
        log.info("streams group %s: member %s fenced, its session expired", group_id, member_id)
        return CoordinatorResult(self._remove_member(group, member_id))

    def on_loaded(self) -> None:
        """Start the session timers of loaded members (Kafka's onLoaded)."""
        for group in self.groups.groups.values():
            for member_id in group.members:
                self._schedule_session_timeout(group.group_id, member_id)

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

    # -- heartbeat -------------------------------------------------------------------------------------
    def heartbeat(self, info: RequestInfo, r: StreamsGroupHeartbeatRequest) -> CoordinatorResult:
        self._validate(r)
        group = self.groups.groups.get(r.group_id)
        if group is None and self.other_group(r.group_id):
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {r.group_id} is not a streams group.")
        if r.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(group, r)
        if group is None:
            if r.member_epoch != 0:
                raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {r.group_id} not found.")
            group = StreamsGroup(r.group_id, srec.GroupMetadata(0, 0))
        old = group.members.get(r.member_id)
        if r.member_epoch != 0:
            if old is None:
                raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID,
                               f"Member {r.member_id} is not a member of group {r.group_id}.")
            if r.member_epoch not in (old.member_epoch, old.previous_member_epoch) or (
                    r.member_epoch != old.member_epoch and r.active_tasks is None):
                raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH,
                               f"The streams group member has a smaller or larger member epoch ({r.member_epoch})"
                               f" than the one known by the group coordinator ({old.member_epoch}).")
        records: list[rec.CoordinatorRecord] = []
        g = r.group_id

        # topology
        topology = group.topology
        if r.topology is not None:
            new = topology_value(r.topology)
            if topology is None or new.epoch > topology.epoch:
                validate(new)
                topology = new
                records.append(srec.topology_record(g, topology))
            elif new.epoch == topology.epoch and new != topology:
                raise ApiError(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
                               f"Topology epoch {new.epoch} is already used by a different topology.")
            elif new.epoch < topology.epoch:
                raise ApiError(ErrorCode.STREAMS_TOPOLOGY_FENCED,
                               f"Topology epoch {new.epoch} is older than the group's ({topology.epoch}).")
        assert topology is not None or old is not None

        # member metadata
        metadata = self._member_metadata(info, r, old)
        members_meta = {mid: m.metadata for mid, m in group.members.items()}
        changed = old is None or old.metadata != metadata
        if changed:
            records.append(srec.member_metadata_record(g, r.member_id, metadata))
            members_meta[r.member_id] = metadata

        # group epoch, target assignment
        configured = configure(topology, self.topics) if topology is not None else None
        topics = {t for s in (topology.subtopologies if topology else ())
                  for t in (*s.source_topics, *(i.name for i in s.repartition_source_topics))}
        mhash = metadata_hash(self.topics, topics)
        epoch = group.group_epoch
        topology_changed = topology is not group.topology
        newly_ready = (topology is not None and configured is not None and configured.status is None
                       and group.metadata.validated_topology_epoch != topology.epoch)
        if changed or topology_changed or newly_ready or mhash != group.metadata.metadata_hash:
            epoch += 1
            records.append(srec.epoch_record(g, replace(
                group.metadata, epoch=epoch, metadata_hash=mhash,
                validated_topology_epoch=topology.epoch if topology is not None and configured is not None
                and configured.status is None else group.metadata.validated_topology_epoch,
                last_assignment_configs=(("num.standby.replicas", str(self.num_standby_replicas)),))))
        target_epoch = group.target_assignment_epoch
        target = dict(group.target_assignment)
        if epoch != target_epoch:
            tasks = configured.tasks if configured is not None and configured.status is None else {}
            processes = {mid: m.process_id for mid, m in members_meta.items() if m is not None}
            new_target = assign(processes, tasks, group.target_assignment, self.num_standby_replicas)
            for mid, t in new_target.items():
                if target.get(mid) != t:
                    records.append(srec.target_assignment_record(g, mid, t))
            target = new_target
            target_epoch = epoch
            records.append(srec.target_assignment_epoch_record(g, epoch))

        # reconciliation
        member = old or StreamsGroupMember(r.member_id, metadata)
        updated = self._reconcile(group, member, target_epoch, target.get(r.member_id, srec.EMPTY_TASKS), r)
        if old is None or updated.view() != old.view():
            records.append(srec.current_assignment_record(
                g, r.member_id, updated.member_epoch, updated.previous_member_epoch, updated.state,
                updated.assigned, updated.pending_revocation, updated.active_epochs))

        self._schedule_session_timeout(g, r.member_id)
        response = StreamsGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=r.member_id, member_epoch=updated.member_epoch,
            heartbeat_interval_ms=self.heartbeat_interval_ms, task_offset_interval_ms=self.task_offset_interval_ms,
            acceptable_recovery_lag=self.acceptable_recovery_lag)  # v0's legacy field stays 0, as on Kafka 4.4
        if configured is not None and configured.status is not None:
            response.status = [_resp.Status(status_code=configured.status, status_detail=configured.detail)]
        if r.member_epoch == 0 or old is None or updated.assigned != old.assigned or r.active_tasks is None:
            response.active_tasks = self._ids(updated.assigned.active)
            response.standby_tasks = self._ids(updated.assigned.standby)
            response.warmup_tasks = self._ids(updated.assigned.warmup)
        return CoordinatorResult(records, response)

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

    def _reconcile(self, group: StreamsGroup, member: StreamsGroupMember, target_epoch: int,
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
        owned_by_others = {t for mid, m in group.members.items() if mid != member.member_id
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

    def _leave(self, group: StreamsGroup | None, r: StreamsGroupHeartbeatRequest) -> CoordinatorResult:
        member = group.members.get(r.member_id) if group is not None else None
        if group is None or member is None:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {r.member_id} is not a member of group {r.group_id}.")
        self.timer.cancel(session_timeout_key(r.group_id, r.member_id))
        return CoordinatorResult(self._remove_member(group, r.member_id), StreamsGroupHeartbeatResponse(
            error_code=ErrorCode.NONE, member_id=r.member_id, member_epoch=r.member_epoch, heartbeat_interval_ms=0))

    def _remove_member(self, group: StreamsGroup, mid: str) -> list[rec.CoordinatorRecord]:
        """The member's tombstones, the bumped group epoch and the others' new target assignment."""
        g = group.group_id
        records = [srec.current_assignment_tombstone(g, mid), srec.target_assignment_tombstone(g, mid),
                   srec.member_metadata_tombstone(g, mid)]
        epoch = group.group_epoch + 1
        records.append(srec.epoch_record(g, replace(group.metadata, epoch=epoch)))
        rest = {m: x.metadata.process_id for m, x in group.members.items() if m != mid and x.metadata is not None}
        configured = configure(group.topology, self.topics) if group.topology is not None else None
        tasks = configured.tasks if configured is not None and configured.status is None else {}
        new_target = assign(rest, tasks, group.target_assignment, self.num_standby_replicas)
        for m, t in new_target.items():
            if group.target_assignment.get(m) != t:
                records.append(srec.target_assignment_record(g, m, t))
        records.append(srec.target_assignment_epoch_record(g, epoch))
        return records
