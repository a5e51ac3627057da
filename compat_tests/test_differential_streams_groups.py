"""Streams groups (KIP-1071) judged by Apache Kafka 4.4: the same StreamsGroupHeartbeat conversations against a
4.4 node and a pykbroker, failing on every difference not in ``differential_allowlist.ALLOWED``.

- a new group's first assignment delayed by streams.initial.rebalance.delay.ms (ASSIGNMENT_DELAYED);
- static members: a leave with epoch -2 keeps the member's place, a new member id of the same instance takes it
  back (its tasks, no new group epoch); an instance id held by a live member is refused;
- shutdown-application fan-out: one member's request reaches every member as SHUTDOWN_APPLICATION;
- endpoint information for interactive queries: partitions by user endpoint when a member's epoch is behind;
- rack-aware assignment tags: MISSING_CLIENT_TAGS for a member without them;
- standby tasks for stateful tasks only, on another process; task offsets members report, as described;
- internal topics nobody created: the first heartbeat answered at once (MISSING_INTERNAL_TOPICS, no tasks), the
  broker creating them meanwhile, a later heartbeat assigned;
- which member gets which task, as Kafka's sticky assignor places them: several members per process, members
  joining and leaving, tasks kept across epochs, standbys following reported offsets, ties between members
  broken in the order of Kafka's own table of the group's members;
- the group's lifecycle through the other group APIs: ListGroups and DescribeGroups, JoinGroup and
  ConsumerGroupHeartbeat on its id, offset commits fenced by member epoch, DeleteGroups of a live and an
  empty group;
- topology descriptions (KIP-1331) against a Kafka 4.4 whose group.streams.topology.description.plugin.class is
  the in-memory plugin of compat_tests/jvm/topodesc and a pykbroker with its built-in store
  (group.streams.topology.description.store.enable): the heartbeat asking for a push (once per backoff, never at
  v0), every refused push in Kafka's order, the push, StreamsGroupDescribe v1 returning it, deletion, and a
  classic JoinGroup converting the emptied group (its description deleted first).

Each scenario sets its group's ``streams.initial.rebalance.delay.ms`` and ``streams.assignment.interval.ms`` to 0
(group configs) but the first, so assignments are computed at once and the conversations need no timing.
Slow (a Kafka start and seconds of delays): ``make test-streams-slow`` (PYKBROKER_STREAMS_SLOW=1).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path

import pytest

from compat_tests.conftest import assert_same_observations, differential_params, observe_both
from compat_tests.jvm.kafka_broker import KafkaBroker, jars_dir
from compat_tests.routing_client import RoutingClient
from pykbroker.testing import RawClient
from wire import ErrorCode
from wire.messages import (
    ConsumerGroupHeartbeatRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    FindCoordinatorRequest,
    IncrementalAlterConfigsRequest,
    JoinGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    StreamsGroupDescribeRequest,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
)
from wire.messages import streams_group_heartbeat_request as req
from wire.messages import streams_group_topology_description_update_request as tdu
from wire.messages.create_topics_request import CreatableTopic
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.join_group_request import JoinGroupRequestProtocol
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_fetch_request import OffsetFetchRequestGroup, OffsetFetchRequestTopics

pytestmark = pytest.mark.skipif(os.environ.get("PYKBROKER_STREAMS_SLOW") != "1",
                                reason="slow: make test-streams-slow (PYKBROKER_STREAMS_SLOW=1)")

Observations = dict[str, object]
GROUP_RESOURCE = 32
RETRIABLE = (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)


# -- helpers -----------------------------------------------------------------------------------------------
def _retry(send: Callable[[], object], code_of: Callable[[object], int], timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        response = send()
        if code_of(response) not in RETRIABLE or time.monotonic() > deadline:
            return response
        time.sleep(0.1)


def _setup(c: RawClient, group: str, topic: str, partitions: int = 2, delay: bool = False,
           extra: dict[str, str] | None = None, changelog: bool = True) -> None:
    """The source topic and (unless not ``changelog``) its changelog (``_stateful``'s, made here so that no
    heartbeat finds it missing), the group's coordinator loaded, and (unless ``delay``) no initial delay nor
    interval."""
    names = (topic, f"{topic}-changelog") if changelog else (topic,)
    c.request(CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
                                          for name in names], timeout_ms=10000), 7)
    c.wait_for_topics(*names)
    _retry(lambda: c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4),
           lambda r: r.coordinators[0].error_code)
    configs = dict(extra or {})
    if not delay:
        configs |= {"streams.initial.rebalance.delay.ms": "0", "streams.assignment.interval.ms": "0"}
    if configs:
        r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=GROUP_RESOURCE, resource_name=group,
            configs=[AlterableConfig(name=k, config_operation=0, value=v) for k, v in configs.items()])]), 1)
        assert r.responses[0].error_code == ErrorCode.NONE, r
        _until_configured(c, group, configs)


def _until_configured(c: RawClient, group: str, configs: dict[str, str], timeout: float = 15.0) -> None:
    """Wait until the group's configs are in effect: Kafka applies them from its metadata log after answering.
    On a cluster they are asked of the group's coordinator, the broker whose heartbeats they time."""
    coordinator = c.coordinator(group) if isinstance(c, RoutingClient) else None
    with RawClient(coordinator, timeout=30) if coordinator else nullcontext(c) as at:
        deadline = time.monotonic() + timeout
        while True:
            [result] = at.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=list(configs))]), 4).results
            if {x.name: x.value for x in result.configs} == configs or time.monotonic() > deadline:
                return
            time.sleep(0.1)


def _topology(topic: str) -> req.Topology:
    """A stateless sub-topology reading ``topic``."""
    return req.Topology(epoch=1, subtopologies=[req.Subtopology(subtopology_id="0", source_topics=[topic])])


def _stateful(topic: str) -> req.Topology:
    """A sub-topology reading ``topic`` into a state store (its changelog ``<topic>-changelog``): its tasks get
    standby copies."""
    return req.Topology(epoch=1, subtopologies=[req.Subtopology(
        subtopology_id="0", source_topics=[topic], state_changelog_topics=[req.TopicInfo(
            name=f"{topic}-changelog", topic_configs=[req.KeyValue(key="cleanup.policy", value="compact")])])])


def _join(group: str, member: str, topic: str, process: str, topology: req.Topology | None = None,
          **fields) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=30000,
                                        process_id=process, topology=topology or _topology(topic), active_tasks=[],
                                        standby_tasks=[], warmup_tasks=[], **fields)


def _hb(group: str, member: str, epoch: int, active: list | None = None, **fields) -> StreamsGroupHeartbeatRequest:
    return StreamsGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=epoch, active_tasks=active,
                                        standby_tasks=None if active is None else [],
                                        warmup_tasks=None if active is None else [], **fields)


def _send(c: RawClient, request: StreamsGroupHeartbeatRequest) -> StreamsGroupHeartbeatResponse:
    return _retry(lambda: c.request(request, 1), lambda r: r.error_code)


def _tasks(ids) -> object:
    return None if ids is None else sorted((t.subtopology_id, sorted(t.partitions)) for t in ids)


def _partitions(tps) -> list:
    return sorted((t.topic, sorted(t.partitions)) for t in tps)


def _seen(r: StreamsGroupHeartbeatResponse) -> tuple:
    """What a heartbeat answer shows, but the member id (a generated one on join is not compared)."""
    endpoints = None if r.partitions_by_user_endpoint is None else sorted(
        ((e.user_endpoint.host, e.user_endpoint.port), _partitions(e.active_partitions),
         _partitions(e.standby_partitions))
        for e in r.partitions_by_user_endpoint)
    return (ErrorCode(r.error_code).name, r.error_message, r.member_epoch, r.heartbeat_interval_ms,
            r.task_offset_interval_ms, r.acceptable_recovery_lag,
            [(s.status_code, s.status_detail) for s in r.status or ()], _tasks(r.active_tasks),
            _tasks(r.standby_tasks), _tasks(r.warmup_tasks), r.endpoint_information_epoch, endpoints)


class Member:
    """One streams member's side of the conversation: its epoch and the active tasks it owns."""

    def __init__(self, c: RawClient, group: str, member: str) -> None:
        self.c, self.group, self.member = c, group, member
        self.epoch = 0
        self.active: list[req.TaskIds] = []
        self.last: StreamsGroupHeartbeatResponse | None = None

    def take(self, r: StreamsGroupHeartbeatResponse) -> StreamsGroupHeartbeatResponse:
        if r.error_code == ErrorCode.NONE:
            self.epoch = r.member_epoch
            if r.active_tasks is not None:
                self.active = [req.TaskIds(subtopology_id=t.subtopology_id, partitions=list(t.partitions))
                               for t in r.active_tasks]
        self.last = r
        return r

    def join(self, topic: str, process: str, **fields) -> StreamsGroupHeartbeatResponse:
        return self.take(_send(self.c, _join(self.group, self.member, topic, process, **fields)))

    def join_stateful(self, topic: str, process: str, **fields) -> StreamsGroupHeartbeatResponse:
        return self.join(topic, process, topology=_stateful(topic), **fields)

    def beat(self, **fields) -> StreamsGroupHeartbeatResponse:
        return self.take(_send(self.c, _hb(self.group, self.member, self.epoch, list(self.active), **fields)))


def _settle(members: list[Member], rounds: int = 12) -> None:
    """Heartbeat every member, reporting what it owns, until a round changes no epoch and no task."""
    for _ in range(rounds):
        before = [(m.epoch, _tasks(m.active)) for m in members]
        for m in members:
            m.beat()
        if before == [(m.epoch, _tasks(m.active)) for m in members]:
            return


def _describe(c: RawClient, group: str) -> tuple:
    [g] = c.request(StreamsGroupDescribeRequest(group_ids=[group]), 1).groups
    return (ErrorCode(g.error_code).name, g.group_state, g.group_epoch, g.assignment_epoch,
            sorted((m.instance_id, m.process_id, m.member_epoch, m.rack_id, (m.user_endpoint.host, m.user_endpoint.port)
                    if m.user_endpoint else None, sorted((t.key, t.value) for t in m.client_tags),
                    _tasks(m.assignment.active_tasks), _tasks(m.assignment.standby_tasks))
                   for m in g.members))


def _placement(c: RawClient, group: str) -> list:
    """Each member's active and standby tasks by member id: which member of a process gets a task is Kafka's
    sticky assignor's too."""
    [g] = c.request(StreamsGroupDescribeRequest(group_ids=[group]), 1).groups
    return sorted((m.member_id, m.process_id, m.member_epoch, _tasks(m.assignment.active_tasks),
                   _tasks(m.assignment.standby_tasks)) for m in g.members)


# -- scenarios ---------------------------------------------------------------------------------------------
def initial_delay(c: RawClient) -> Observations:
    """A new group's first assignment waits for group.streams.initial.rebalance.delay.ms (3 s by default)."""
    _setup(c, "sg-delay", "sg-delay-in", delay=True)
    m = Member(c, "sg-delay", "m1")
    out: Observations = {"join": _seen(m.join("sg-delay-in", "p1"))}
    out["describe while delayed"] = _describe(c, "sg-delay")
    deadline = time.monotonic() + 15
    while not m.active and time.monotonic() < deadline:
        time.sleep(0.5)
        m.beat()
    out["assigned"] = _seen(m.last) if m.last is not None else None
    out["describe"] = _describe(c, "sg-delay")
    return out


def static_members(c: RawClient) -> Observations:
    g, t = "sg-static", "sg-static-in"
    _setup(c, g, t, partitions=4)
    a, b = Member(c, g, "a1"), Member(c, g, "b1")
    out: Observations = {"join a": _seen(a.join(t, "pa", instance_id="ia")), "join b": _seen(b.join(t, "pb", instance_id="ib"))}
    _settle([a, b])
    out["settled"] = _describe(c, g)
    owned = _tasks(a.active)
    out["a leaves statically"] = _seen(c.request(_hb(g, "a1", -2, list(a.active), instance_id="ia"), 1))
    out["after static leave"] = _describe(c, g)
    out["another member takes instance ib"] = _seen(c.request(_join(g, "x1", t, "px", instance_id="ib"), 1))
    a2 = Member(c, g, "a2")
    r = a2.join(t, "pa", instance_id="ia")
    out["a rejoins as a2"] = _seen(r)
    out["a2 has a's tasks"] = _tasks(a2.active) == owned
    out["after rejoin"] = _describe(c, g)
    out["old member id a1"] = _seen(c.request(_hb(g, "a1", a.epoch, []), 1))
    out["b leaves dynamically with -1"] = _seen(c.request(_hb(g, "b1", -1, list(b.active), instance_id="ib"), 1))
    out["after b left"] = _describe(c, g)
    return out


def shutdown_application(c: RawClient) -> Observations:
    g, t = "sg-shutdown", "sg-shutdown-in"
    _setup(c, g, t)
    a, b = Member(c, g, "a1"), Member(c, g, "b1")
    a.join(t, "pa")
    b.join(t, "pb")
    _settle([a, b])
    out: Observations = {"a asks": _seen(a.beat(shutdown_application=True))}
    out["b hears"] = _seen(b.beat())
    out["a again"] = _seen(a.beat())
    c3 = Member(c, g, "c1")
    out["a new member hears"] = _seen(c3.join(t, "pc"))
    out["describe"] = _describe(c, g)
    return out


def endpoints(c: RawClient) -> Observations:
    g, t = "sg-endpoints", "sg-endpoints-in"
    _setup(c, g, t, partitions=4)
    a, b = Member(c, g, "a1"), Member(c, g, "b1")
    out: Observations = {
        "join a": _seen(a.join(t, "pa", user_endpoint=req.Endpoint(host="ha", port=1))),
        "join b": _seen(b.join(t, "pb", user_endpoint=req.Endpoint(host="hb", port=2))),
    }
    _settle([a, b])
    out["a at epoch 0"] = _seen(a.beat(endpoint_information_epoch=0))
    epoch = a.last.endpoint_information_epoch if a.last is not None else 0
    out["a up to date"] = _seen(a.beat(endpoint_information_epoch=epoch))
    out["describe"] = _describe(c, g)
    return out


def client_tags(c: RawClient) -> Observations:
    g, t = "sg-rack", "sg-rack-in"
    _setup(c, g, t, extra={"streams.rack.aware.assignment.tags": "zone", "streams.num.standby.replicas": "1"})
    a, b = Member(c, g, "a1"), Member(c, g, "b1")
    out: Observations = {
        "join tagged": _seen(a.join_stateful(t, "pa", rack_id="r1",
                                             client_tags=[req.KeyValue(key="zone", value="z1")])),
        "join untagged": _seen(b.join_stateful(t, "pb", rack_id="r2")),
    }
    _settle([a, b])
    out["tagged settled"] = _seen(a.last) if a.last is not None else None
    out["untagged settled"] = _seen(b.last) if b.last is not None else None
    out["describe"] = _describe(c, g)
    return out


def standby_tasks(c: RawClient) -> Observations:
    g, t = "sg-standbys", "sg-standbys-in"
    _setup(c, g, t, partitions=2, extra={"streams.num.standby.replicas": "1"})
    a, b, a2 = Member(c, g, "a1"), Member(c, g, "b1"), Member(c, g, "a2")
    a.join_stateful(t, "pa")
    b.join_stateful(t, "pb")
    a2.join_stateful(t, "pa")  # a second member of process pa: never a standby of pa's own active tasks
    _settle([a, b, a2])
    [d] = c.request(StreamsGroupDescribeRequest(group_ids=[g]), 1).groups
    out: Observations = {"state": (ErrorCode(d.error_code).name, d.group_state, d.group_epoch, d.assignment_epoch),
                         "tasks by member": _placement(c, g)}
    s, s2 = Member(c, "sg-stateless", "a1"), Member(c, "sg-stateless", "b1")
    _setup(c, "sg-stateless", "sg-stateless-in", extra={"streams.num.standby.replicas": "1"})
    s.join("sg-stateless-in", "pa")
    s2.join("sg-stateless-in", "pb")
    _settle([s, s2])
    out["stateless tasks have no standby"] = _describe(c, "sg-stateless")
    return out


def missing_internal_topics(c: RawClient) -> Observations:
    """Internal topics the topology needs and nobody created: the first heartbeat is answered at once with the
    MISSING_INTERNAL_TOPICS status and no tasks, the broker creates the repartition topic (its writers' task count
    of partitions) and the changelog (its sub-topology's) itself, and a later heartbeat gets the tasks."""
    g, t = "sg-missing", "sg-missing-in"
    _setup(c, g, t, partitions=2, changelog=False)
    rep, changelog = f"{g}-rep", f"{g}-store-changelog"
    topology = req.Topology(epoch=1, subtopologies=[
        req.Subtopology(subtopology_id="0", source_topics=[t], repartition_sink_topics=[rep]),
        req.Subtopology(subtopology_id="1", repartition_source_topics=[req.TopicInfo(
            name=rep, replication_factor=-1, topic_configs=[req.KeyValue(key="cleanup.policy", value="delete")])],
            state_changelog_topics=[req.TopicInfo(name=changelog, topic_configs=[
                req.KeyValue(key="cleanup.policy", value="compact")])])])
    m = Member(c, g, "m1")
    out: Observations = {"first heartbeat": _seen(m.join(t, "p1", topology=topology))}
    deadline = time.monotonic() + 30
    while not m.active and time.monotonic() < deadline:
        time.sleep(0.2)
        m.beat()
    assert m.last is not None
    out["assigned"] = ([(s.status_code, s.status_detail) for s in m.last.status or ()], _tasks(m.last.active_tasks))
    created = c.wait_for_topics(rep, changelog)
    out["created"] = sorted((name, len(created[name].partitions)) for name in (rep, changelog))
    return out


def placement(c: RawClient) -> Observations:
    """Kafka's sticky placement member by member: several members per process, members joining and leaving,
    tasks staying with their owners across epochs, standby copies following reported changelog offsets."""
    g, t = "sg-place", "sg-place-in"
    _setup(c, g, t, partitions=8, extra={"streams.num.standby.replicas": "1"})
    a1, a2, b1 = Member(c, g, "a1"), Member(c, g, "a2"), Member(c, g, "b1")
    out: Observations = {}
    a1.join_stateful(t, "pa")
    _settle([a1])
    out["one member"] = _placement(c, g)
    a2.join_stateful(t, "pa")
    b1.join_stateful(t, "pb")
    _settle([a1, a2, b1])
    out["two processes"] = _placement(c, g)
    c1, c2, c3 = Member(c, g, "c1"), Member(c, g, "c2"), Member(c, g, "c3")
    for m in (c1, c2, c3):
        m.join_stateful(t, "pc")
    members = [a1, a2, b1, c1, c2, c3]
    _settle(members)
    out["three processes"] = _placement(c, g)
    out["a2 leaves"] = _seen(c.request(_hb(g, "a2", -1, list(a2.active)), 1))[:3]
    members.remove(a2)
    _settle(members)
    out["after a2 left"] = _placement(c, g)
    reported = [req.TaskOffset(subtopology_id="0", partition=p, offset=100 * p) for p in range(8)]
    b1.beat(task_offsets=reported)
    b2 = Member(c, g, "b2")
    b2.join_stateful(t, "pb")
    members.append(b2)
    _settle(members)
    out["b2 joins after b1 reported offsets"] = _placement(c, g)
    return out


def member_order(c: RawClient) -> Observations:
    """Ties between members go as Kafka's HashMaps order them, from its group's own table of members: after c7
    leaves, a3 and c5 (one HashMap bucket) are taken in that table's order, not in the order they joined."""
    g, t = "sg-order", "sg-order-in"
    _setup(c, g, t, partitions=4)
    out: Observations = {}
    members: list[Member] = []
    for name, process in (("c4", "pa"), ("c7", "pb"), ("c9", "pb"), ("a1", "pb"), ("a3", "pb"), ("c5", "pb")):
        members.append(Member(c, g, name))
        members[-1].join(t, process)
        _settle(members)
        out[f"{name} joined"] = _placement(c, g)
    gone = members.pop(1)
    out["c7 leaves"] = _seen(c.request(_hb(g, gone.member, -1, list(gone.active)), 1))[:3]
    _settle(members)
    out["after c7 left"] = _placement(c, g)
    return out


def task_offsets(c: RawClient) -> Observations:
    """Members report their changelog offsets by task: the group shows them (Kafka keeps them in memory)."""
    g, t = "sg-offsets", "sg-offsets-in"
    _setup(c, g, t, extra={"streams.num.standby.replicas": "1"})
    a, b = Member(c, g, "a1"), Member(c, g, "b1")
    a.join_stateful(t, "pa")
    b.join_stateful(t, "pb")
    _settle([a, b])
    reported = [req.TaskOffset(subtopology_id="0", partition=p, offset=10 * (p + 1)) for p in (0, 1)]
    out: Observations = {"report": _seen(a.beat(task_offsets=reported, task_end_offsets=reported[:1]))}
    out["duplicate"] = _seen(c.request(_hb(g, "b1", b.epoch, list(b.active), task_offsets=reported + reported[:1]),
                                       1))[:2]
    [d] = c.request(StreamsGroupDescribeRequest(group_ids=[g]), 1).groups
    out["described"] = sorted((m.process_id, sorted((x.subtopology_id, x.partition, x.offset) for x in m.task_offsets),
                               sorted((x.subtopology_id, x.partition, x.offset) for x in m.task_end_offsets))
                              for m in d.members)
    return out


def lifecycle(c: RawClient) -> Observations:
    g, t = "sg-life", "sg-life-in"
    _setup(c, g, t)
    a = Member(c, g, "a1")
    a.join(t, "pa")
    _settle([a])
    out: Observations = {}
    listed = c.request(ListGroupsRequest(states_filter=[], types_filter=["streams"]), 5).groups
    out["list streams"] = sorted((x.group_id, x.protocol_type, x.group_state, x.group_type) for x in listed
                                 if x.group_id == g)
    listed = c.request(ListGroupsRequest(states_filter=[], types_filter=["consumer", "classic"]), 5).groups
    out["list others"] = [x.group_id for x in listed if x.group_id == g]
    [d] = c.request(DescribeGroupsRequest(groups=[g]), 6).groups
    out["describe groups"] = (ErrorCode(d.error_code).name, d.error_message, d.group_state, d.protocol_type)
    join = c.request(JoinGroupRequest(group_id=g, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                                      protocol_type="consumer", protocols=[JoinGroupRequestProtocol(
                                          name="range", metadata=b"")], reason=None), 9)
    out["join group"] = (ErrorCode(join.error_code).name, join.member_id)
    cg = c.request(ConsumerGroupHeartbeatRequest(group_id=g, member_id="c" * 22, member_epoch=0,
                                                 rebalance_timeout_ms=30000, subscribed_topic_names=[t],
                                                 topic_partitions=[]), 1)
    out["consumer heartbeat"] = (ErrorCode(cg.error_code).name, cg.error_message)

    def commit(member: str, epoch: int) -> str:
        r = c.request(OffsetCommitRequest(group_id=g, generation_id_or_member_epoch=epoch, member_id=member,
                                          topics=[OffsetCommitRequestTopic(name=t, partitions=[
                                              OffsetCommitRequestPartition(partition_index=0,
                                                                           committed_offset=5)])]), 9)
        return ErrorCode(r.topics[0].partitions[0].error_code).name
    out["commit at the member epoch"] = commit("a1", a.epoch)
    out["commit at an older epoch"] = commit("a1", a.epoch - 1)
    out["commit at a newer epoch"] = commit("a1", a.epoch + 1)
    out["commit by an unknown member"] = commit("zz", a.epoch)
    out["commit as an admin"] = commit("", -1)
    fetched = c.request(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
        group_id=g, member_id="a1", member_epoch=a.epoch, topics=[OffsetFetchRequestTopics(
            name=t, partition_indexes=[0])])], require_stable=False), 9).groups[0]
    out["fetch"] = (ErrorCode(fetched.error_code).name,
                    [(p.partition_index, p.committed_offset) for x in fetched.topics for p in x.partitions])
    deleted = c.request(DeleteGroupsRequest(groups_names=[g]), 2).results
    out["delete a live group"] = [(x.group_id, ErrorCode(x.error_code).name) for x in deleted]
    out["leave"] = _seen(c.request(_hb(g, "a1", -1, list(a.active)), 1))
    out["empty"] = _describe(c, g)
    deleted = c.request(DeleteGroupsRequest(groups_names=[g]), 2).results
    out["delete the empty group"] = [(x.group_id, ErrorCode(x.error_code).name) for x in deleted]
    out["after delete"] = _describe(c, g)
    return out


def _node(name: str, node_type: int, **fields) -> tdu.TopologyDescriptionNode:
    return tdu.TopologyDescriptionNode(name=name, node_type=node_type, **fields)


def _description(topic: str, node_type: int = 1, global_store: tuple[int, int] | None = None) -> tdu.TopologyDescription:
    """A source (with fields of other types and duplicates, which Kafka's converter drops), a processor with a store
    and a sink; ``global_store``: the node types of a global store's source and processor."""
    stores = [] if global_store is None else [tdu.TopologyDescriptionGlobalStore(
        source=_node("KSTREAM-SOURCE-G", global_store[0], source_topics=["g"], successors=["KTABLE-SOURCE-G"]),
        processor=_node("KTABLE-SOURCE-G", global_store[1], stores=["g-store"]))]
    return tdu.TopologyDescription(subtopologies=[tdu.TopologyDescriptionSubtopology(subtopology_id="0", nodes=[
        _node("KSTREAM-SOURCE-0000000000", node_type, source_topics=[topic, topic], stores=["not-a-source-field"],
              sink_topic="neither", successors=["KSTREAM-AGGREGATE-0000000001", "KSTREAM-AGGREGATE-0000000001"]),
        _node("KSTREAM-AGGREGATE-0000000001", 2, stores=["counts", "counts"], source_topics=["x"],
              successors=["KSTREAM-SINK-0000000002"]),
        _node("KSTREAM-SINK-0000000002", 3, sink_topic=f"{topic}-out", stores=["y"])])], global_stores=stores)


def _push(c: RawClient, group: str, member: str, epoch: int, description: tdu.TopologyDescription) -> tuple:
    r = _retry(lambda: c.request(StreamsGroupTopologyDescriptionUpdateRequest(
        group_id=group, member_id=member, topology_epoch=epoch, topology_description=description), 0),
        lambda r: r.error_code)
    return ErrorCode(r.error_code).name, r.error_message


def _stored(c: RawClient, group: str, include: bool = True) -> tuple:
    [g] = c.request(StreamsGroupDescribeRequest(group_ids=[group], include_topology_description=include), 1).groups
    d = g.topology_description
    nodes = lambda ns: [(n.name, n.node_type, n.source_topics, n.sink_topic, n.stores, n.successors)  # noqa: E731
                        for n in ns]
    return (ErrorCode(g.error_code).name, g.topology_description_status, None if d is None else (
        [(s.subtopology_id, nodes(s.nodes)) for s in d.subtopologies],
        [(nodes([x.source]), nodes([x.processor])) for x in d.global_stores]))


def topology_description(c: RawClient) -> Observations:
    g, t = "sg-desc", "sg-desc-in"
    _setup(c, g, t)
    a = Member(c, g, "a1")
    joined = a.join(t, "pa")
    out: Observations = {"join": (_seen(joined), joined.topology_description_required)}
    r = a.beat()
    out["next heartbeat, backing off"] = (_seen(r), r.topology_description_required)
    out["describe before"] = _stored(c, g)
    offsets_only = "sg-desc-offsets"
    c.request(OffsetCommitRequest(group_id=offsets_only, generation_id_or_member_epoch=-1, member_id="",
                                  topics=[OffsetCommitRequestTopic(name=t, partitions=[
                                      OffsetCommitRequestPartition(partition_index=0, committed_offset=1)])]), 9)
    good = _description(t, global_store=(1, 2))
    out["push: empty member id"] = _push(c, g, " ", 1, good)
    out["push: empty group id"] = _push(c, "", "a1", 1, good)
    out["push: unknown group"] = _push(c, "sg-desc-none", "a1", 1, good)
    out["push: a group of offsets alone"] = _push(c, offsets_only, "a1", 1, good)
    out["push: unknown member"] = _push(c, g, "zz", 1, good)
    out["push: another topology epoch"] = _push(c, g, "a1", 2, good)
    out["push: an unknown node type"] = _push(c, g, "a1", 1, _description(t, node_type=9))
    out["push: a global store of two sources"] = _push(c, g, "a1", 1, _description(t, global_store=(1, 1)))
    out["describe after refused pushes"] = _stored(c, g)
    out["push"] = _push(c, g, "a1", 1, good)
    out["describe"] = _stored(c, g)
    out["describe without asking"] = _stored(c, g, include=False)
    r = a.beat()
    out["heartbeat once stored"] = (_seen(r), r.topology_description_required)
    out["push again"] = _push(c, g, "a1", 1, _description(t))
    out["describe again"] = _stored(c, g)
    out["leave"] = _seen(c.request(_hb(g, "a1", -1, list(a.active)), 1))
    deleted = c.request(DeleteGroupsRequest(groups_names=[g]), 2).results
    out["delete"] = [(x.group_id, ErrorCode(x.error_code).name, x.error_message) for x in deleted]
    out["describe deleted"] = _stored(c, g)
    b = Member(c, g, "b1")
    r = b.join(t, "pb")
    out["a new group of the same id"] = (_seen(r), r.topology_description_required)
    out["its describe"] = _stored(c, g)
    r = c.request(_hb(g, "b1", b.epoch, list(b.active)), 0)
    out["heartbeat v0"] = (ErrorCode(r.error_code).name, r.topology_description_required)
    out["push of the new group"] = _push(c, g, "b1", 1, good)
    out["b leaves"] = _seen(c.request(_hb(g, "b1", -1, list(b.active)), 1))
    join = c.request(JoinGroupRequest(group_id=g, session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                                      protocol_type="consumer", protocols=[JoinGroupRequestProtocol(
                                          name="range", metadata=b"")], reason=None), 9)
    out["a classic join converts the empty group"] = ErrorCode(join.error_code).name
    # Kafka answers MEMBER_ID_REQUIRED before the conversion's records commit, and reads see committed state only
    deadline = time.monotonic() + 15
    while True:
        listed = c.request(ListGroupsRequest(states_filter=[], types_filter=[]), 5).groups
        found = sorted((x.group_id, x.protocol_type, x.group_type) for x in listed if x.group_id == g)
        if found != [(g, "streams", "streams")] or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    out["listed converted"] = found
    out["describe converted"] = _stored(c, g)
    return out


DESCRIPTION_SCENARIOS: dict[str, Callable[[RawClient], Observations]] = {
    "topology_description": topology_description}

SCENARIOS: dict[str, Callable[[RawClient], Observations]] = {
    "initial_delay": initial_delay, "static_members": static_members,
    "shutdown_application": shutdown_application, "endpoints": endpoints, "client_tags": client_tags,
    "standby_tasks": standby_tasks, "task_offsets": task_offsets, "lifecycle": lifecycle, "placement": placement,
    "member_order": member_order, "missing_internal_topics": missing_internal_topics,
}


@pytest.fixture(scope="module")
def streams_judged_broker(tmp_path_factory):
    from pykbroker.testing import BrokerProcess
    with BrokerProcess(tmp_path_factory.mktemp("differential-streams")) as b:
        yield b


@pytest.fixture(scope="module")
def streams_kafka():
    if shutil.which("java") is None:
        pytest.skip("java is not installed: the differential tests need Apache Kafka from the Maven jars")
    jars = jars_dir("4.4.0")
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka 4.4's jars"
    with KafkaBroker(jars) as kafka:
        yield kafka


@pytest.mark.parametrize(("mode", "scenario"), differential_params(list(SCENARIOS), (), tuple(SCENARIOS)))
def test_pykbroker_observes_what_kafka_44_observes(mode, scenario, request):
    expected, got = observe_both(request, mode, SCENARIOS[scenario], "streams_kafka", "streams_judged_broker")
    assert_same_observations(mode, f"streams_{scenario}", expected, got)


PLUGIN = Path(__file__).resolve().parent / "jvm" / "topodesc" / "InMemoryTopologyDescriptionPlugin.java"


@pytest.fixture(scope="module")
def streams_store_broker(tmp_path_factory):
    """A pykbroker with its built-in topology description store."""
    from pykbroker.testing import BrokerProcess
    with BrokerProcess(tmp_path_factory.mktemp("differential-streams-store"),
                       overrides={"group.streams.topology.description.store.enable": "true"}) as b:
        yield b


@pytest.fixture(scope="module")
def streams_kafka_plugin(tmp_path_factory):
    yield from kafka_with_description_plugin(tmp_path_factory)


def kafka_with_description_plugin(tmp_path_factory):
    """A started Kafka 4.4 with the in-memory topology description plugin (compiled here, as the telemetry plugin
    is) for a fixture to yield."""
    if shutil.which("javac") is None:
        pytest.skip("javac is not installed: the topology description plugin cannot be compiled")
    jars = jars_dir("4.4.0")
    assert jars is not None, "compat_tests/jvm/fetch_jars.sh could not fetch Kafka 4.4's jars"
    classes = tmp_path_factory.mktemp("topodesc-plugin")
    subprocess.run(["javac", "-cp", f"{jars}/*", "-d", str(classes), str(PLUGIN)], check=True, timeout=120)
    with KafkaBroker(jars, overrides={"group.streams.topology.description.plugin.class":
                                      "InMemoryTopologyDescriptionPlugin"}, classpath=(classes,)) as kafka:
        yield kafka


@pytest.mark.parametrize(("mode", "scenario"), differential_params(list(DESCRIPTION_SCENARIOS), (), ()))
def test_topology_descriptions_as_kafka_44_with_a_description_plugin(mode, scenario, request):
    expected, got = observe_both(request, mode, DESCRIPTION_SCENARIOS[scenario], "streams_kafka_plugin",
                                 "streams_store_broker")
    assert_same_observations(mode, f"streams_{scenario}", expected, got)
