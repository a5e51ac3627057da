"""Topics, groups, ACLs and SCRAM users through the console, each a Kafka admin request as the logged-in
principal; a refusal raises ``RequestError`` with Kafka's error code and message (what the page shows).

Topic admin goes to the controller (as Kafka's AdminClient sends CreateTopics, DeleteTopics and
CreatePartitions), group requests to the group's coordinator, DeleteRecords and ListOffsets to each
partition's leader. Resetting a group's offsets is OffsetCommit with generation -1, as
kafka-consumer-groups --reset-offsets does, and like it only while the group has no members.
"""

from __future__ import annotations

import asyncio
import os
import struct
import time
from typing import Any

from pykbroker.console.kafka import KafkaSession, RequestError, check
from pykbroker.console.messages import LATEST, end_offsets, leaders, list_offsets
from pykbroker.console.streams import describe_streams_group
from pykbroker.security.client import salted_password
from replication.broker_client import BrokerConnectionError
from replication.metadata.acl import AclOperation, AclPermissionType, PatternType, ResourceType
from wire import ErrorCode
from wire.messages import (
    ConsumerGroupDescribeRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    ShareGroupDescribeRequest,
)
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.alter_user_scram_credentials_request import (
    AlterUserScramCredentialsRequest,
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from wire.messages.consumer_protocol_assignment import ConsumerProtocolAssignment
from wire.messages.create_acls_request import AclCreation
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from wire.messages.delete_acls_request import DeleteAclsFilter
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.describe_share_group_offsets_request import (
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequestGroup,
)
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_fetch_request import OffsetFetchRequestGroup

__all__ = ["acls", "alter_acl", "alter_topic_configs", "create_partitions", "create_topic", "delete_group",
           "delete_records", "delete_topic", "describe_group", "list_groups", "reset_offsets", "scram_users",
           "topic_configs", "upsert_scram_user", "delete_scram_user"]

TOPIC_RESOURCE = 2  # ConfigResource.Type.TOPIC
SET, DELETE = 0, 1  # IncrementalAlterConfigs operations
# How often (and how far apart) a request a loading coordinator answers with a retriable error is retried.
LOADING_RETRIES = 40
LOADING_BACKOFF_S = 0.25
# Errors a just-created topic answers until this broker's metadata and its partitions' leaders have it, and
# how long create_topic waits for them to go away.
NOT_YET_KNOWN = frozenset({ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
                           ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.BROKER_NOT_AVAILABLE})
READABLE_TIMEOUT_S = 30.0
SCRAM_CODES = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
SCRAM_ITERATIONS = 8192
SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
           4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
           7: "CLIENT_METRICS_CONFIG", 8: "GROUP_CONFIG"}


# -- topics -------------------------------------------------------------------------------------------------


async def create_topic(session: KafkaSession, name: str, partitions: int, replication_factor: int,
                       configs: dict[str, str]) -> None:
    topic = CreatableTopic(name=name, num_partitions=partitions, replication_factor=replication_factor,
                           assignments=[], configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])
    answer = await session.to_controller(CreateTopicsRequest(topics=[topic], timeout_ms=30_000, validate_only=False))
    [result] = answer.topics
    check(result.error_code, result.error_message, f"create topic {name}")
    await _wait_readable(session, name, partitions, "create topic", "the topic was created, but is not readable")


async def _wait_readable(session: KafkaSession, name: str, count: int, action: str, done: str,
                         timeout_s: float = READABLE_TIMEOUT_S) -> None:
    """Return once this broker's Metadata has ``count`` partitions of ``name`` (at least one for -1, the
    broker's default), each with a leader, and each leader answers ListOffsets for them: CreateTopics and
    CreatePartitions answer once the controller committed the change, before the brokers applied it, and the
    page reads the topic right after "created" or "partitions added". Another refusal (no DESCRIBE on the
    topic) ends the wait: the change is made either way. After ``timeout_s`` the error names ``action`` and
    says what is ``done``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            parts = await leaders(session, name)
            if not parts or min(parts.values()) < 0 or len(parts) < count:
                raise RequestError(ErrorCode.LEADER_NOT_AVAILABLE, None, f"topic {name}")
            await end_offsets(session, name, parts)
            return
        except RequestError as exc:
            if exc.error not in NOT_YET_KNOWN:
                return
            if time.monotonic() >= deadline:
                raise RequestError(exc.error, f"{done} after {timeout_s:.0f} s ({exc}): see the brokers' logs",
                                   f"{action} {name}") from exc
        await asyncio.sleep(LOADING_BACKOFF_S)


async def delete_topic(session: KafkaSession, name: str) -> None:
    answer = await session.to_controller(DeleteTopicsRequest(topic_names=[name], timeout_ms=30_000))
    [result] = answer.responses
    check(result.error_code, result.error_message, f"delete topic {name}")


async def create_partitions(session: KafkaSession, name: str, count: int) -> None:
    answer = await session.to_controller(CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)], timeout_ms=30_000,
        validate_only=False))
    [result] = answer.results
    check(result.error_code, result.error_message, f"add partitions to {name}")
    await _wait_readable(session, name, count, "add partitions to", "the partitions were added, but are not readable")


async def delete_records(session: KafkaSession, name: str, partition: int, offset: int) -> int:
    """Delete the records of ``partition`` before ``offset`` (-1: all); the new log start offset."""
    [(p, leader)] = (await leaders(session, name, partition)).items()
    answer = await session.request(DeleteRecordsRequest(topics=[DeleteRecordsTopic(name=name, partitions=[
        DeleteRecordsPartition(partition_index=p, offset=offset)])], timeout_ms=30_000), leader)
    [result] = answer.topics[0].partitions
    check(result.error_code, None, f"delete records of {name}-{p}")
    return int(result.low_watermark)


async def topic_configs(session: KafkaSession, name: str) -> list[dict[str, Any]]:
    answer = await session.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name, configuration_keys=None)], include_synonyms=False,
        include_documentation=False))
    [result] = answer.results
    check(result.error_code, result.error_message, f"describe configs of {name}")
    return [{"name": c.name, "value": c.value, "source": SOURCES.get(c.config_source, str(c.config_source)),
             "read_only": c.read_only, "sensitive": c.is_sensitive, "default": c.config_source == 5}
            for c in sorted(result.configs, key=lambda c: c.name)]


async def alter_topic_configs(session: KafkaSession, name: str, set_: dict[str, str], delete: list[str]) -> None:
    """IncrementalAlterConfigs: SET ``set_``, DELETE ``delete``; Kafka's validation message on refusal."""
    configs = ([AlterableConfig(name=k, config_operation=SET, value=v) for k, v in set_.items()]
               + [AlterableConfig(name=k, config_operation=DELETE, value=None) for k in delete])
    answer = await session.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=TOPIC_RESOURCE, resource_name=name, configs=configs)], validate_only=False))
    [result] = answer.responses
    check(result.error_code, result.error_message, f"alter configs of {name}")


# -- groups -------------------------------------------------------------------------------------------------


async def list_groups(session: KafkaSession, unavailable: list[int] | None = None,
                      retries: int = LOADING_RETRIES) -> list[dict[str, Any]]:
    """Groups of every broker (each lists those it coordinates, asked at once) this principal may describe. A
    broker that cannot be reached, or (after ``retries`` tries) is still loading its groups, is skipped when
    ``unavailable`` is given (its id appended there); otherwise the error is raised."""
    meta = await session.metadata([])

    async def listed(node_id: int) -> list[dict[str, Any]]:
        try:
            for attempt in range(retries):  # a coordinator still loading its __consumer_offsets partitions
                answer = await session.request(ListGroupsRequest(states_filter=[], types_filter=[]), node_id)
                if answer.error_code not in (ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                             ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) or attempt == retries - 1:
                    break
                await asyncio.sleep(LOADING_BACKOFF_S)
            check(answer.error_code, None, "list groups")
        except (BrokerConnectionError, RequestError) as exc:
            retriable = isinstance(exc, BrokerConnectionError) or exc.error in (
                ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            if unavailable is None or not retriable:
                raise
            unavailable.append(node_id)
            return []
        return [{"group_id": g.group_id, "type": (g.group_type or "classic").lower(), "state": g.group_state,
                 "protocol_type": g.protocol_type, "coordinator": node_id} for g in answer.groups]

    found = await asyncio.gather(*(listed(b.node_id) for b in meta.brokers))
    return sorted((g for groups in found for g in groups), key=lambda g: g["group_id"])


def _assignment(data: bytes | None) -> list[dict[str, Any]]:
    """A classic consumer member's assignment (ConsumerProtocol); [] for other protocols or garbage."""
    if not data or len(data) < 2:
        return []
    try:
        version = struct.unpack(">h", data[:2])[0]
        decoded: Any = ConsumerProtocolAssignment.decode(data[2:], min(max(version, 0), 3))
    except Exception:  # noqa: BLE001 - not the consumer protocol: shown without an assignment
        return []
    return [{"topic": tp.topic, "partitions": sorted(tp.partitions)} for tp in decoded.assigned_partitions]


def _tps(topic_partitions: Any) -> list[dict[str, Any]]:
    return [{"topic": tp.topic_name, "partitions": sorted(tp.partitions)} for tp in topic_partitions or []]


async def committed_offsets(session: KafkaSession, group_id: str) -> dict[tuple[str, int], int]:
    answer = await session.to_coordinator(group_id, OffsetFetchRequest(groups=[OffsetFetchRequestGroup(
        group_id=group_id, topics=None)], require_stable=False))
    [g] = answer.groups
    check(g.error_code, None, f"offsets of group {group_id}")
    return {(t.name, p.partition_index): p.committed_offset for t in g.topics for p in t.partitions
            if p.error_code == ErrorCode.NONE and p.committed_offset >= 0}


async def _described(session: KafkaSession, group_id: str, request: Any) -> Any:
    """The one group a describe request to ``group_id``'s coordinator answers (RequestError when refused)."""
    answer = await session.to_coordinator(group_id, request)
    [g] = answer.groups
    check(g.error_code, g.error_message, f"group {group_id}")
    return g


def _member(m: Any, instance_id: str | None, assignment: list[dict[str, Any]]) -> dict[str, Any]:
    return {"member_id": m.member_id, "client_id": m.client_id, "client_host": m.client_host,
            "instance_id": instance_id, "assignment": assignment}


async def describe_group(session: KafkaSession, group_id: str, group_type: str) -> dict[str, Any]:
    """Members with their assignments, state, and committed offsets with lag per partition (a streams
    group's members with their tasks, and its topology: ``console.streams``)."""
    if group_type == "streams":
        described = await describe_streams_group(session, group_id)
        offsets = await _offsets_with_lag(session, group_id)
        return {"group_id": group_id, "type": group_type, **described, "offsets": offsets,
                "lag": sum(o["lag"] for o in offsets if o["lag"] is not None)}
    if group_type == "consumer":
        g = await _described(session, group_id, ConsumerGroupDescribeRequest(group_ids=[group_id],
                                                                             include_authorized_operations=False))
        members = [_member(m, m.instance_id, _tps(m.assignment.topic_partitions)) for m in g.members]
    elif group_type == "share":
        g = await _described(session, group_id, ShareGroupDescribeRequest(group_ids=[group_id],
                                                                          include_authorized_operations=False))
        members = [_member(m, None, _tps(m.assignment.topic_partitions)) for m in g.members]
    else:
        g = await _described(session, group_id, DescribeGroupsRequest(groups=[group_id],
                                                                      include_authorized_operations=False))
        members = [_member(m, m.group_instance_id, _assignment(m.member_assignment)) for m in g.members]
    state = g.group_state
    offsets = await (_share_offsets(session, group_id) if group_type == "share" else _offsets_with_lag(session, group_id))
    return {"group_id": group_id, "type": group_type, "state": state, "members": members, "offsets": offsets,
            "lag": sum(o["lag"] for o in offsets if o["lag"] is not None)}


async def _offsets_with_lag(session: KafkaSession, group_id: str) -> list[dict[str, Any]]:
    committed = await committed_offsets(session, group_id)
    ends: dict[tuple[str, int], int] = {}
    for topic in sorted({t for t, _ in committed}):
        try:
            parts = await leaders(session, topic)
            ends.update({(topic, p): e for p, e in (await list_offsets(session, topic, parts, LATEST)).items()})
        except RequestError:
            pass  # a topic this principal may not describe (or deleted): lag unknown
    return [{"topic": t, "partition": p, "committed": c, "end": ends.get((t, p)),
             "lag": None if (t, p) not in ends else max(ends[(t, p)] - c, 0)}
            for (t, p), c in sorted(committed.items())]


async def _share_offsets(session: KafkaSession, group_id: str) -> list[dict[str, Any]]:
    """A share group's start offset and lag of each partition it has state for (DescribeShareGroupOffsets v1)."""
    answer = await session.to_coordinator(group_id, DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequestGroup(group_id=group_id, topics=None)]))
    [g] = answer.groups
    if g.error_code == ErrorCode.GROUP_ID_NOT_FOUND:
        return []  # no state yet
    check(g.error_code, g.error_message, f"offsets of share group {group_id}")
    return [{"topic": t.topic_name, "partition": p.partition_index, "committed": p.start_offset, "end": None,
             "lag": p.lag if p.lag >= 0 else None}
            for t in sorted(g.topics, key=lambda t: t.topic_name) for p in sorted(t.partitions, key=lambda p: p.partition_index)
            if p.error_code == ErrorCode.NONE and p.start_offset >= 0]


async def reset_offsets(session: KafkaSession, group_id: str, topic: str, to: str, value: str | None,
                        dry_run: bool, group_type: str | None = None) -> list[dict[str, Any]]:
    """New committed offsets of ``group_id`` on every partition of ``topic`` for ``to`` (earliest, latest,
    timestamp: ms, offset: a number clamped to the log); committed unless ``dry_run``. A share group's
    (``group_type`` "share", or listed as one) start offsets are set with AlterShareGroupOffsets."""
    listed = {g["group_id"]: g for g in await list_groups(session)}
    state = listed.get(group_id, {}).get("state", "Dead")
    share = (group_type or listed.get(group_id, {}).get("type")) == "share"
    if not dry_run and state not in ("Empty", "Dead"):
        raise RequestError(ErrorCode.NON_EMPTY_GROUP, f"Assignments can only be reset if the group '{group_id}' is "
                           f"inactive, but the current state is {state}.", f"reset group {group_id}")
    parts = await leaders(session, topic)
    if share:
        committed = {(o["topic"], o["partition"]): o["committed"] for o in await _share_offsets(session, group_id)}
    else:
        committed = await committed_offsets(session, group_id)
    bounds = await end_offsets(session, topic, parts)
    if to == "earliest":
        target = {p: s for p, (s, _) in bounds.items()}
    elif to == "latest":
        target = {p: e for p, (_, e) in bounds.items()}
    elif to == "timestamp":
        target = await list_offsets(session, topic, parts, int(value or 0))
    elif to == "offset":
        target = {p: min(max(int(value or 0), s), e) for p, (s, e) in bounds.items()}
    else:
        raise ValueError(f"reset to {to!r}: earliest, latest, timestamp or offset")
    preview = [{"topic": topic, "partition": p, "current": committed.get((topic, p)), "new": target[p],
                "end": bounds[p][1], "lag_after": bounds[p][1] - target[p]} for p in sorted(parts)]
    if dry_run:
        return preview
    if share:
        shared = await session.to_coordinator(group_id, AlterShareGroupOffsetsRequest(group_id=group_id, topics=[
            AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[AlterShareGroupOffsetsRequestPartition(
                partition_index=p, start_offset=o) for p, o in sorted(target.items())])]))
        check(shared.error_code, shared.error_message, f"reset share group {group_id}")
        for t in shared.responses:
            for sp in t.partitions:
                check(sp.error_code, sp.error_message, f"reset share group {group_id} on {topic}-{sp.partition_index}")
        return preview
    answer = await session.to_coordinator(group_id, OffsetCommitRequest(
        group_id=group_id, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=[OffsetCommitRequestTopic(name=topic, partitions=[OffsetCommitRequestPartition(
            partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
            for p, o in sorted(target.items())])]))
    for t in answer.topics:
        for p in t.partitions:
            check(p.error_code, None, f"reset group {group_id} on {topic}-{p.partition_index}")
    return preview


async def delete_group(session: KafkaSession, group_id: str) -> None:
    answer = await session.to_coordinator(group_id, DeleteGroupsRequest(groups_names=[group_id]))
    [result] = answer.results
    check(result.error_code, None, f"delete group {group_id}")


# -- ACLs and SCRAM users -----------------------------------------------------------------------------------


async def acls(session: KafkaSession) -> list[dict[str, Any]]:
    answer = await session.request(DescribeAclsRequest(
        resource_type_filter=ResourceType.ANY, resource_name_filter=None, pattern_type_filter=PatternType.ANY,
        principal_filter=None, host_filter=None, operation=AclOperation.ANY, permission_type=AclPermissionType.ANY))
    check(answer.error_code, answer.error_message, "describe ACLs")
    return [{"resource_type": ResourceType.from_code(r.resource_type).name, "resource_name": r.resource_name,
             "pattern_type": PatternType.from_code(r.pattern_type).name, "principal": a.principal, "host": a.host,
             "operation": AclOperation.from_code(a.operation).name,
             "permission_type": AclPermissionType.from_code(a.permission_type).name}
            for r in answer.resources for a in r.acls]


async def alter_acl(session: KafkaSession, acl: dict[str, str], *, delete: bool) -> None:
    """Create (or with ``delete``, delete exactly) one ACL given by names as ``acls()`` lists them."""
    fields: dict[str, Any] = dict(resource_type=ResourceType[acl["resource_type"]], resource_name=acl["resource_name"],
                  principal=acl["principal"], host=acl.get("host") or "*",
                  operation=AclOperation[acl["operation"]], permission_type=AclPermissionType[acl["permission_type"]])
    pattern = PatternType[acl.get("pattern_type") or "LITERAL"]
    if delete:
        answer = await session.request(DeleteAclsRequest(filters=[DeleteAclsFilter(
            resource_type_filter=fields["resource_type"], resource_name_filter=fields["resource_name"],
            pattern_type_filter=pattern, principal_filter=fields["principal"], host_filter=fields["host"],
            operation=fields["operation"], permission_type=fields["permission_type"])]))
        [result] = answer.filter_results
        check(result.error_code, result.error_message, "delete ACL")
        if not result.matching_acls:
            raise ValueError("delete ACL: no ACL matches exactly")
    else:
        answer = await session.request(CreateAclsRequest(creations=[AclCreation(resource_pattern_type=pattern,
                                                                                **fields)]))
        [result] = answer.results
        check(result.error_code, result.error_message, "create ACL")


async def scram_users(session: KafkaSession) -> list[dict[str, Any]]:
    answer = await session.request(DescribeUserScramCredentialsRequest(users=None))
    check(answer.error_code, answer.error_message, "describe SCRAM users")
    names = {v: k for k, v in SCRAM_CODES.items()}
    return [{"user": r.user, "mechanisms": [{"mechanism": names.get(c.mechanism, str(c.mechanism)),
                                             "iterations": c.iterations} for c in r.credential_infos]}
            for r in sorted(answer.results, key=lambda r: r.user) if r.error_code == ErrorCode.NONE]


async def upsert_scram_user(session: KafkaSession, user: str, mechanism: str, password: str) -> None:
    if mechanism not in SCRAM_CODES:
        raise ValueError(f"mechanism must be one of {', '.join(SCRAM_CODES)}")
    salt = os.urandom(32)
    answer = await session.to_controller(AlterUserScramCredentialsRequest(deletions=[], upsertions=[
        ScramCredentialUpsertion(name=user, mechanism=SCRAM_CODES[mechanism], iterations=SCRAM_ITERATIONS, salt=salt,
                                 salted_password=salted_password(mechanism, password, salt, SCRAM_ITERATIONS))]))
    [result] = answer.results
    check(result.error_code, result.error_message, f"set SCRAM credential of {user}")


async def delete_scram_user(session: KafkaSession, user: str, mechanism: str) -> None:
    answer = await session.to_controller(AlterUserScramCredentialsRequest(upsertions=[], deletions=[
        ScramCredentialDeletion(name=user, mechanism=SCRAM_CODES[mechanism])]))
    [result] = answer.results
    check(result.error_code, result.error_message, f"delete SCRAM credential of {user}")

