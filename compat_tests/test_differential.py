"""The same scenarios against pykbroker and Apache Kafka 4.4; where what a client observes differs, Kafka is right.

Each scenario talks over raw sockets and returns its observations as a flat dict; the test runs it against both
and fails on every difference not listed in ``differential_allowlist.ALLOWED``. On one node it talks to that
node; in cluster mode (``make differential-cluster``: 3 pykbroker brokers against a 3-node Kafka 4.4 KRaft
cluster) its client routes each request as a Kafka client does (``compat_tests/routing_client.py``).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable

import pytest

from compat_tests.conftest import (
    assert_same_observations,
    differential_params,
    observe_both,
)
from compat_tests.routing_client import RoutingClient
from pykbroker.testing import RawClient
from wire import CompressionType, ErrorCode, Record, TimestampType, Writer, build_batch, build_simple_batch
from wire.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AlterClientQuotasRequest,
    AlterConfigsRequest,
    ApiVersionsRequest,
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    ConsumerProtocolSubscription,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeGroupsRequest,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeTopicPartitionsRequest,
    DescribeTransactionsRequest,
    ElectLeadersRequest,
    EndTxnRequest,
    FetchRequest,
    FindCoordinatorRequest,
    HeartbeatRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    ListConfigResourcesRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    MetadataRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetForLeaderEpochRequest,
    ProduceRequest,
    SaslHandshakeRequest,
    SyncGroupRequest,
    TxnOffsetCommitRequest,
)
from wire.messages.add_partitions_to_txn_request import AddPartitionsToTxnTopic
from wire.messages.alter_client_quotas_request import EntityData as QuotaEntity
from wire.messages.alter_client_quotas_request import EntryData as QuotaEntry
from wire.messages.alter_client_quotas_request import OpData as QuotaOp
from wire.messages.alter_configs_request import AlterableConfig as LegacyAlterable
from wire.messages.alter_configs_request import AlterConfigsResource as LegacyAlterResource
from wire.messages.create_acls_request import AclCreation
from wire.messages.create_partitions_request import CreatePartitionsTopic
from wire.messages.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
)
from wire.messages.delete_records_request import DeleteRecordsPartition, DeleteRecordsTopic
from wire.messages.describe_client_quotas_request import ComponentData as QuotaComponent
from wire.messages.describe_configs_request import DescribeConfigsResource
from wire.messages.describe_log_dirs_request import DescribableLogDirTopic
from wire.messages.describe_producers_request import TopicRequest as DescribeProducersTopic
from wire.messages.describe_topic_partitions_request import TopicRequest as TopicRequestDTP
from wire.messages.elect_leaders_request import TopicPartitions
from wire.messages.fetch_request import FetchPartition, FetchTopic, ForgottenTopic
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.join_group_request import JoinGroupRequestProtocol
from wire.messages.leave_group_request import MemberIdentity
from wire.messages.list_offsets_request import ListOffsetsPartition, ListOffsetsTopic
from wire.messages.metadata_request import MetadataRequestTopic
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_delete_request import OffsetDeleteRequestPartition, OffsetDeleteRequestTopic
from wire.messages.offset_fetch_request import OffsetFetchRequestTopic
from wire.messages.offset_for_leader_epoch_request import OffsetForLeaderPartition, OffsetForLeaderTopic
from wire.messages.produce_request import PartitionProduceData, TopicProduceData
from wire.messages.sync_group_request import SyncGroupRequestAssignment
from wire.messages.txn_offset_commit_request import (
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)

Observations = dict[str, object]
NOW = int(time.time() * 1000)


def topic(name: str, partitions: int = 1, rf: int = 1, **kwargs) -> CreatableTopic:
    return CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf, **kwargs)


def create(c: RawClient, *topics: CreatableTopic) -> dict[str, object]:
    response = c.request(CreateTopicsRequest(topics=list(topics), timeout_ms=10_000), 7)
    return {t.name: t for t in response.topics}


def produce(c: RawClient, name: str, records: bytes, acks: int = -1, partition: int = 0) -> int:
    request = ProduceRequest(acks=acks, timeout_ms=5000, topic_data=[TopicProduceData(
        name=name, partition_data=[PartitionProduceData(index=partition, records=records)])])
    return c.request(request, 11).responses[0].partition_responses[0].error_code


def batch(count: int = 3, timestamp: int = NOW, keys: bool = True, size: int = 10) -> bytes:
    return build_simple_batch([b"v" * size] * count, keys=[b"k%d" % i for i in range(count)] if keys else None,
                              timestamp=timestamp)


# -- scenarios ---------------------------------------------------------------------------------------------
def api_versions(c: RawClient) -> Observations:
    response = c.request(ApiVersionsRequest(client_software_name="diff", client_software_version="1"), 4)
    out: Observations = {f"api.{k.api_key}": (k.min_version, k.max_version) for k in response.api_keys}
    out.update({f"supported.{f.name}": (f.min_version, f.max_version) for f in response.supported_features})
    out.update({f"finalized.{f.name}": (f.min_version_level, f.max_version_level)
                for f in response.finalized_features})
    return out


def metadata(c: RawClient) -> Observations:
    def ask(name: str, auto: bool):
        response = c.request(MetadataRequest(topics=[MetadataRequestTopic(name=name)],
                                             allow_auto_topic_creation=auto), 12)
        t = response.topics[0]
        return t.error_code, len(t.partitions), t.is_internal
    return {"unknown": ask("md-unknown", False), "auto-created": ask("md-auto", True),
            "illegal-name": ask("md bad", True), "internal": ask("__consumer_offsets", False)[0]}


def create_topics(c: RawClient) -> Observations:
    create(c, topic("ct-exists"), topic("ct.dot"))
    got = create(c, topic("ct-exists"), topic("bad/name"), topic("ct-rf", rf=3), topic("ct-zero", partitions=0),
                 topic("ct-rf0", rf=0), topic("ct-conf", configs=[CreatableTopicConfig(name="nope", value="1")]),
                 topic("ct-both", 2, assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1])]),
                 topic("ct-broker", -1, -1, assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[7])]),
                 topic("ct_dot"), topic("ct-dup"), topic("ct-dup"), topic("ct-ok", -1, -1))
    out: Observations = {}
    for name, t in got.items():
        out[f"{name}.code"] = t.error_code
        out[f"{name}.message"] = t.error_message
        if t.error_code == ErrorCode.NONE:
            out[f"{name}.partitions"] = (t.num_partitions, t.replication_factor)
    return out


def topic_configs(c: RawClient) -> Observations:
    create(c, topic("tc-a", configs=[CreatableTopicConfig(name="cleanup.policy", value="compact")]))
    c.wait_for_topics("tc-a")  # Kafka's brokers learn of a new topic asynchronously
    response = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
        resource_type=2, resource_name="tc-a", configuration_keys=None)], include_synonyms=True), 4)
    out: Observations = {}
    for e in response.results[0].configs:
        out[e.name] = (e.value, e.config_source, e.read_only, e.is_sensitive, e.config_type)
        out[f"{e.name}.synonyms"] = [(s.name, s.value, s.source) for s in e.synonyms]
    for name in ("tc-missing", "bad name"):
        r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(resource_type=2, resource_name=name)]), 4)
        out[f"describe {name}"] = r.results[0].error_code
    ops = [("retention.ms", 0, "x"), ("nope", 0, "1"), ("retention.ms", 2, "5"), ("cleanup.policy", 2, "delete")]
    for name, op, value in ops:
        r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=2, resource_name="tc-a", configs=[AlterableConfig(name=name, config_operation=op,
                                                                           value=value)])]), 1)
        out[f"alter {name} {op} {value}"] = (r.responses[0].error_code, r.responses[0].error_message)
    return out


def partitions_admin(c: RawClient) -> Observations:
    create(c, topic("pa-a", 2))
    out: Observations = {}
    for count in (2, 1, 3):
        r = c.request(CreatePartitionsRequest(topics=[CreatePartitionsTopic(name="pa-a", count=count)],
                                              timeout_ms=5000), 3)
        out[f"grow to {count}"] = (r.results[0].error_code, r.results[0].error_message)
    r = c.request(ElectLeadersRequest(election_type=0, topic_partitions=[TopicPartitions(topic="pa-a", partitions=[0, 9])],
                                      timeout_ms=5000), 2)
    out["elect"] = [(p.partition_id, p.error_code) for p in r.replica_election_results[0].partition_result]
    r = c.request(ElectLeadersRequest(election_type=0, topic_partitions=[TopicPartitions(topic="pa-a", partitions=[0]),
                                                                          TopicPartitions(topic="pa-none", partitions=[0])],
                                      timeout_ms=0), 2)  # kafka-go's default timeout: no time left
    out["elect, no time left"] = (r.error_code, [(t.topic, [(p.partition_id, p.error_code, p.error_message)
                                                            for p in t.partition_result])
                                                 for t in r.replica_election_results])
    produce(c, "pa-a", batch(5))
    for offset in (2, 9, -1):
        r = c.request(DeleteRecordsRequest(topics=[DeleteRecordsTopic(name="pa-a", partitions=[
            DeleteRecordsPartition(partition_index=0, offset=offset)])], timeout_ms=5000), 2)
        p = r.topics[0].partitions[0]
        out[f"delete records {offset}"] = (p.error_code, p.low_watermark)
    r = c.request(DeleteTopicsRequest(topic_names=["pa-a", "pa-missing"], timeout_ms=5000), 5)
    out["delete topics"] = sorted((t.name, t.error_code) for t in r.responses)
    return out


def produce_and_fetch(c: RawClient) -> Observations:
    create(c, topic("pf-a"), topic("pf-small", configs=[CreatableTopicConfig(name="max.message.bytes", value="1000")]),
           topic("pf-compacted", configs=[CreatableTopicConfig(name="cleanup.policy", value="compact")]),
           topic("pf-isr", configs=[CreatableTopicConfig(name="min.insync.replicas", value="2")]))
    c.wait_for_topics("pf-a", "pf-small", "pf-compacted", "pf-isr")  # Kafka elects leaders asynchronously
    corrupt = bytearray(batch())
    corrupt[-1] ^= 0xFF
    out: Observations = {
        "ok": produce(c, "pf-a", batch()),
        "acks=2": produce(c, "pf-a", batch(), acks=2),
        "partition 7": produce(c, "pf-a", batch(), partition=7),
        "unknown topic": produce(c, "pf-missing", batch()),
        "corrupt": produce(c, "pf-a", bytes(corrupt)),
        "too large": produce(c, "pf-small", batch(1, size=2000)),
        "future timestamp": produce(c, "pf-a", batch(timestamp=NOW + 2 * 3_600_000)),
        "keyless on compacted": produce(c, "pf-compacted", batch(keys=False)),
        "isr too small": produce(c, "pf-isr", batch()),
    }
    for offset, epoch in ((0, -1), (3, -1), (50, -1), (0, 5)):
        request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, topics=[FetchTopic(topic="pf-a", partitions=[
            FetchPartition(partition=0, fetch_offset=offset, current_leader_epoch=epoch, partition_max_bytes=1 << 20)])])
        p = c.request(request, 12).responses[0].partitions[0]
        out[f"fetch {offset} epoch {epoch}"] = (p.error_code, p.high_watermark, len(p.records or b"") > 0)
    for ts in (-2, -1, -3, NOW - 1000, NOW + 10**7):
        request = ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="pf-a", partitions=[
            ListOffsetsPartition(partition_index=0, timestamp=ts)])])
        p = c.request(request, 8).topics[0].partitions[0]
        out[f"list offsets {'time' if ts > 0 and ts < NOW else ts if ts < 0 else 'future'}"] = (p.error_code, p.offset)
    return out


def produce_answer(c: RawClient, name: str, records: bytes, version: int = 11) -> tuple:
    """(error code, error message, record errors) of a produce; the timestamp window's bounds are elided
    (they hold each broker's clock)."""
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
        name=name, partition_data=[PartitionProduceData(index=0, records=records)])])
    p = c.request(request, version).responses[0].partition_responses[0]

    def elide(message: str | None) -> str | None:
        return None if message is None else re.sub(r"within \[-?\d+, -?\d+\]", "within [...]", message)

    return (p.error_code, elide(p.error_message),
            [(e.batch_index, elide(e.batch_index_error_message)) for e in p.record_errors or []])


def record_errors(c: RawClient) -> Observations:
    """Per-record errors (KIP-467): each refused record named by its index in the batch, as LogValidator."""
    compact = [CreatableTopicConfig(name="cleanup.policy", value="compact")]
    create(c, topic("re-compact", configs=compact), topic("re-plain"),
           topic("re-compact-gzip", configs=compact + [CreatableTopicConfig(name="compression.type", value="gzip")]),
           topic("re-append-time", configs=[CreatableTopicConfig(name="message.timestamp.type", value="LogAppendTime")]),
           topic("re-before", configs=[CreatableTopicConfig(name="message.timestamp.before.max.ms", value="60000")]))
    c.wait_for_topics("re-compact", "re-plain", "re-compact-gzip", "re-append-time", "re-before")

    def records(n: int, keyless: set[int] = frozenset(), deltas: dict[int, int] | None = None) -> list[Record]:
        return [Record(i, (deltas or {}).get(i, 0), None if i in keyless else b"k%d" % i, b"v") for i in range(n)]

    def build(rs: list[Record], **kwargs) -> bytes:
        return build_batch(rs, base_timestamp=kwargs.pop("base_timestamp", NOW), **kwargs)

    hours2 = 2 * 3_600_000
    out: Observations = {
        "keyless 2 of 20": produce_answer(c, "re-compact", build(records(20, {3, 17}))),
        "keyless 2 of 20 gzip": produce_answer(c, "re-compact", build(records(20, {3, 17}), compression=CompressionType.GZIP)),
        "keyless 5 of 5": produce_answer(c, "re-compact", build(records(5, {0, 1, 2, 3, 4}))),
        "keyless, topic recompresses": produce_answer(c, "re-compact-gzip", build(records(4, {1}))),
        "keyless v7": produce_answer(c, "re-compact", build(records(4, {2})), version=7),
        "future 1 of 4": produce_answer(c, "re-plain", build(records(4, deltas={2: hours2}))),
        "future 1 of 4 lz4": produce_answer(c, "re-plain", build(records(4, deltas={2: hours2}),
                                                                 compression=CompressionType.LZ4)),
        "future base": produce_answer(c, "re-plain", build(records(3, deltas={1: -hours2, 2: -hours2}),
                                                           base_timestamp=NOW + hours2)),
        "past, before bound": produce_answer(c, "re-before", build(records(3, deltas={0: -hours2, 2: -hours2}))),
        "future and keyless": produce_answer(c, "re-compact", build(records(4, {1}, {2: hours2}))),
        "producer log append time": produce_answer(c, "re-plain", build(records(3),
                                                                         timestamp_type=TimestampType.LOG_APPEND_TIME)),
        "producer log append time, append-time topic": produce_answer(
            c, "re-append-time", build(records(2), timestamp_type=TimestampType.LOG_APPEND_TIME)),
        "future on append-time topic": produce_answer(c, "re-append-time", build(records(2, deltas={1: hours2}))),
        "producer log append time, keyless": produce_answer(
            c, "re-compact", build(records(3, {0}), timestamp_type=TimestampType.LOG_APPEND_TIME)),
    }
    return out


def producer_batch(pid: int, epoch: int, seq: int, count: int = 3, transactional: bool = False) -> bytes:
    return build_simple_batch([b"v"] * count, keys=[b"k"] * count, timestamp=NOW, producer_id=pid,
                              producer_epoch=epoch, base_sequence=seq, is_transactional=transactional)


def produced(c: RawClient, name: str, records: bytes, transactional_id: str | None = None) -> tuple[int, int]:
    """(error code, base offset) of a produce; the offset only when the produce succeeded."""
    request = ProduceRequest(acks=-1, timeout_ms=5000, transactional_id=transactional_id, topic_data=[
        TopicProduceData(name=name, partition_data=[PartitionProduceData(index=0, records=records)])])
    p = c.request(request, 11).responses[0].partition_responses[0]
    return p.error_code, p.base_offset if p.error_code == ErrorCode.NONE else -1


def retried(c: RawClient, request, version: int, code_of: Callable, retriable: tuple[int, ...] = (
        ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS), timeout: float = 30.0):
    """Send ``request`` until its error is not one a client retries (Kafka loads coordinators asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        response = c.request(request, version)
        if code_of(response) not in retriable or time.monotonic() > deadline:
            return response
        time.sleep(0.1)


def fetch_committed(c: RawClient, name: str) -> tuple[int, int, list[tuple[int, int]], int]:
    """(error, last stable offset, aborted (producer id, first offset), records?) of a read_committed fetch."""
    request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=1, topics=[FetchTopic(
        topic=name, partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
    p = c.request(request, 12).responses[0].partitions[0]
    return (p.error_code, p.last_stable_offset,
            sorted((a.producer_id, a.first_offset) for a in p.aborted_transactions or []), len(p.records or b"") > 0)


def end_offsets(c: RawClient, name: str) -> tuple[int, int]:
    """(read_uncommitted, read_committed) latest offsets of partition 0."""
    out = []
    for isolation in (0, 1):
        request = ListOffsetsRequest(replica_id=-1, isolation_level=isolation, topics=[ListOffsetsTopic(
            name=name, partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)])])
        out.append(c.request(request, 7).topics[0].partitions[0].offset)
    return out[0], out[1]


def idempotence(c: RawClient) -> Observations:
    create(c, topic("idem-a"))
    c.wait_for_topics("idem-a")
    init = retried(c, InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4,
                   lambda r: r.error_code)  # Kafka's first answer waits for a producer id block
    pid = init.producer_id
    out: Observations = {"init": (init.error_code, init.producer_epoch)}
    out["first"] = produced(c, "idem-a", producer_batch(pid, 0, 0))
    out["retried"] = produced(c, "idem-a", producer_batch(pid, 0, 0))
    out["gap"] = produced(c, "idem-a", producer_batch(pid, 0, 5))
    out["next"] = produced(c, "idem-a", producer_batch(pid, 0, 3))
    out["older retried"] = produced(c, "idem-a", producer_batch(pid, 0, 0))
    out["bumped epoch"] = produced(c, "idem-a", producer_batch(pid, 1, 0))
    out["old epoch"] = produced(c, "idem-a", producer_batch(pid, 0, 6))
    out["bumped epoch, not from 0"] = produced(c, "idem-a", producer_batch(pid, 2, 7))
    out["new producer, not from 0"] = produced(c, "idem-a", producer_batch(pid + 1000, 0, 9))
    out["end offsets"] = end_offsets(c, "idem-a")
    r = c.request(DescribeProducersRequest(topics=[DescribeProducersTopic(name="idem-a", partition_indexes=[0, 3])]), 0)
    for p in r.topics[0].partitions:
        out[f"describe producers {p.partition_index}"] = (p.error_code, sorted(
            (s.producer_id - pid, s.producer_epoch, s.last_sequence, s.current_txn_start_offset)
            for s in p.active_producers))
    return out


def transactions(c: RawClient) -> Observations:
    create(c, topic("txn-a"))
    c.wait_for_topics("txn-a")
    out: Observations = {}
    find = retried(c, FindCoordinatorRequest(key_type=1, coordinator_keys=["dtx"]), 4,
                   lambda r: r.coordinators[0].error_code)
    out["find coordinator"] = find.coordinators[0].error_code
    too_long = c.request(InitProducerIdRequest(transactional_id="dtx", transaction_timeout_ms=10**9), 4)
    out["init too long"] = too_long.error_code
    init = retried(c, InitProducerIdRequest(transactional_id="dtx", transaction_timeout_ms=60_000), 4,
                   lambda r: r.error_code)
    pid, epoch = init.producer_id, init.producer_epoch
    out["init"] = (init.error_code, epoch)
    out["produce before add"] = produced(c, "txn-a", producer_batch(pid, epoch, 0, transactional=True), "dtx")

    def add(topic_name: str, partition: int, producer_epoch: int = epoch) -> int:
        r = c.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="dtx", v3_and_below_producer_id=pid,
            v3_and_below_producer_epoch=producer_epoch, v3_and_below_topics=[
                AddPartitionsToTxnTopic(name=topic_name, partitions=[partition])]), 3)
        return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code

    out["add unknown topic"] = add("txn-missing", 0)
    out["add old epoch"] = add("txn-a", 0, epoch - 1)
    out["add"] = add("txn-a", 0)
    out["produce"] = produced(c, "txn-a", producer_batch(pid, epoch, 0, transactional=True), "dtx")
    out["ongoing end offsets"] = end_offsets(c, "txn-a")
    out["ongoing fetch"] = fetch_committed(c, "txn-a")

    def describe(txn_id: str = "dtx"):
        s = c.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0]
        return (s.error_code, s.transaction_state, s.producer_epoch - epoch if s.error_code == 0 else None,
                sorted((t.topic, tuple(t.partitions)) for t in s.topics or []))

    out["describe ongoing"] = describe()
    out["describe unknown"] = describe("nobody")
    listed = c.request(ListTransactionsRequest(state_filters=[], producer_id_filters=[]), 1)
    out["list"] = (listed.error_code, sorted((t.transactional_id, t.transaction_state)
                                             for t in listed.transaction_states))
    out["list unknown state"] = c.request(ListTransactionsRequest(state_filters=["Sleeping"], producer_id_filters=[]),
                                          1).unknown_state_filters

    def end(commit: bool, producer_epoch: int = epoch, version: int = 3) -> int:
        return retried(c, EndTxnRequest(transactional_id="dtx", producer_id=pid, producer_epoch=producer_epoch,
                                        committed=commit), version, lambda r: r.error_code).error_code

    out["end old epoch"] = end(False, epoch - 1)
    out["end old epoch v1"] = end(False, epoch - 1, 1)
    out["abort"] = end(False)
    out["abort again"] = end(False)
    out["commit after abort"] = end(True)
    out["describe aborted"] = describe()
    out["aborted end offsets"] = end_offsets(c, "txn-a")
    code, lso, aborted, has_records = fetch_committed(c, "txn-a")
    out["aborted fetch"] = (code, lso, [(p == pid, first) for p, first in aborted], has_records)
    out["produce after end"] = produced(c, "txn-a", producer_batch(pid, epoch, 3, transactional=True), "dtx")

    # Offsets inside a transaction: visible once it commits.
    c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["dtx-group"]), 4)
    add_offsets = retried(c, AddOffsetsToTxnRequest(transactional_id="dtx", producer_id=pid, producer_epoch=epoch,
                                                    group_id="dtx-group"), 3, lambda r: r.error_code)
    out["add offsets"] = add_offsets.error_code
    commit = retried(c, TxnOffsetCommitRequest(
        transactional_id="dtx", group_id="dtx-group", producer_id=pid, producer_epoch=epoch, generation_id_or_member_epoch=-1,
        member_id="", group_instance_id=None, topics=[TxnOffsetCommitRequestTopic(name="txn-a", partitions=[
            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=2, committed_leader_epoch=-1,
                                            committed_metadata="m")])]), 3,
        lambda r: r.topics[0].partitions[0].error_code)
    out["txn offset commit"] = commit.topics[0].partitions[0].error_code

    def fetched_offset(require_stable: bool):
        r = c.request(OffsetFetchRequest(group_id="dtx-group", require_stable=require_stable, topics=[
            OffsetFetchRequestTopic(name="txn-a", partition_indexes=[0])]), 7)
        p = r.topics[0].partitions[0]
        return r.error_code, p.error_code, p.committed_offset

    out["offset fetch pending"] = fetched_offset(False)
    out["offset fetch pending, stable"] = fetched_offset(True)
    out["commit"] = end(True)
    # Kafka answers EndTxn once the decision is written and writes the markers after; wait for them.
    deadline = time.monotonic() + 10
    while describe()[1].startswith("Prepare") and time.monotonic() < deadline:
        time.sleep(0.1)
    out["describe committed"] = describe()
    out["offset fetch committed, stable"] = fetched_offset(True)
    fenced = retried(c, InitProducerIdRequest(transactional_id="dtx", transaction_timeout_ms=60_000), 4,
                     lambda r: r.error_code)
    out["reinit"] = (fenced.error_code, fenced.producer_id == pid, fenced.producer_epoch - epoch)
    out["end fenced"] = end(True)
    return out


def transactions_v2(c: RawClient) -> Observations:
    """Transaction version 2 (KIP-890 part 2): writes add their partitions, every end bumps the epoch."""
    create(c, topic("txn2-a"))
    c.wait_for_topics("txn2-a")
    retried(c, FindCoordinatorRequest(key_type=1, coordinator_keys=["dtx2"]), 4, lambda r: r.coordinators[0].error_code)
    init = retried(c, InitProducerIdRequest(transactional_id="dtx2", transaction_timeout_ms=60_000), 5,
                   lambda r: r.error_code)
    pid, epoch = init.producer_id, init.producer_epoch
    out: Observations = {"init": (init.error_code, epoch)}

    def produce_v12(producer_epoch: int, seq: int) -> tuple[int, int]:
        request = ProduceRequest(acks=-1, timeout_ms=5000, transactional_id="dtx2", topic_data=[TopicProduceData(
            name="txn2-a", partition_data=[PartitionProduceData(
                index=0, records=producer_batch(pid, producer_epoch, seq, transactional=True))])])
        p = retried(c, request, 12, lambda r: r.responses[0].partition_responses[0].error_code).responses[0]
        p = p.partition_responses[0]
        return p.error_code, p.base_offset if p.error_code == ErrorCode.NONE else -1

    def end(commit: bool, producer_epoch: int) -> tuple[int, bool, int]:
        r = retried(c, EndTxnRequest(transactional_id="dtx2", producer_id=pid, producer_epoch=producer_epoch,
                                     committed=commit), 5, lambda r: r.error_code)
        return r.error_code, r.producer_id == pid, r.producer_epoch - epoch

    def describe():
        deadline = time.monotonic() + 10
        while True:
            s = c.request(DescribeTransactionsRequest(transactional_ids=["dtx2"]), 0).transaction_states[0]
            if not s.transaction_state.startswith("Prepare") or time.monotonic() > deadline:
                return (s.error_code, s.transaction_state, s.producer_epoch - epoch,
                        sorted((t.topic, tuple(t.partitions)) for t in s.topics or []))
            time.sleep(0.1)

    out["produce adds the partition"] = produce_v12(epoch, 0)
    out["describe ongoing"] = describe()
    out["ongoing end offsets"] = end_offsets(c, "txn2-a")
    out["commit"] = end(True, epoch)
    out["describe committed"] = describe()
    out["commit retried"] = end(True, epoch)
    out["commit again"] = end(True, epoch + 1)
    out["empty abort"] = end(False, epoch + 1)
    out["describe after empty abort"] = describe()
    out["produce old epoch"] = produce_v12(epoch, 3)
    out["produce new epoch"] = produce_v12(epoch + 2, 0)
    c.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["dtx2-group"]), 4)
    commit = retried(c, TxnOffsetCommitRequest(
        transactional_id="dtx2", group_id="dtx2-group", producer_id=pid, producer_epoch=epoch + 2, generation_id_or_member_epoch=-1,
        member_id="", group_instance_id=None, topics=[TxnOffsetCommitRequestTopic(name="txn2-a", partitions=[
            TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_leader_epoch=-1,
                                            committed_metadata="")])]), 5,
        lambda r: r.topics[0].partitions[0].error_code)
    out["txn offset commit adds the group"] = commit.topics[0].partitions[0].error_code
    out["describe with offsets"] = describe()
    out["abort"] = end(False, epoch + 2)
    out["describe aborted"] = describe()
    out["end offsets"] = end_offsets(c, "txn2-a")
    code, lso, aborted, has_records = fetch_committed(c, "txn2-a")
    out["fetch committed"] = (code, lso, [(p == pid, first) for p, first in aborted], has_records)
    r = c.request(OffsetFetchRequest(group_id="dtx2-group", require_stable=True, topics=[
        OffsetFetchRequestTopic(name="txn2-a", partition_indexes=[0])]), 7)
    out["offset after abort"] = (r.topics[0].partitions[0].error_code, r.topics[0].partitions[0].committed_offset)
    return out


def subscription(*topics: str) -> bytes:
    """A consumer's JoinGroup metadata (ConsumerProtocolSubscription v0)."""
    w = Writer()
    w.int16(0)
    ConsumerProtocolSubscription(topics=list(topics), owned_partitions=[]).encode_into(w, 0)
    return w.getvalue()


def group_coordinator_ready(c: RawClient, group: str) -> None:
    """Wait, as clients retry, until the group's coordinator is found and loaded (Kafka loads it asynchronously)."""
    retried(c, FindCoordinatorRequest(key_type=0, coordinator_keys=[group]), 4, lambda r: r.coordinators[0].error_code)
    retried(c, DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5,
            lambda r: r.groups[0].error_code)


def classic_groups(c: RawClient) -> Observations:
    """The classic protocol: JoinGroup/SyncGroup/Heartbeat/LeaveGroup, offsets, describe, list, delete."""
    create(c, topic("dg-t", partitions=2))
    c.wait_for_topics("dg-t")
    group = "dg-classic"
    group_coordinator_ready(c, group)
    out: Observations = {}

    def join(member_id: str = "", group_id: str = group, session_ms: int = 10_000, protocol_type: str = "consumer"):
        return c.request(JoinGroupRequest(
            group_id=group_id, session_timeout_ms=session_ms, rebalance_timeout_ms=10_000, member_id=member_id,
            group_instance_id=None, protocol_type=protocol_type,
            protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription("dg-t"))]), 9)

    out["join empty group id"] = join(group_id="").error_code
    out["join short session"] = join(session_ms=10).error_code
    first = join()
    member = first.member_id
    out["join without member id"] = (first.error_code, bool(member))
    joined = join(member)
    out["join"] = (joined.error_code, joined.generation_id, joined.leader == member, joined.protocol_name,
                   joined.protocol_type, len(joined.members))
    out["join other protocol type"] = join(protocol_type="connect").error_code
    out["join unknown member"] = join("nobody").error_code
    generation = joined.generation_id
    assignment = b"\x00\x00\x00\x00\x00\x01\x00\x04dg-t\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00"

    def sync(generation_id: int, member_id: str):
        r = c.request(SyncGroupRequest(group_id=group, generation_id=generation_id, member_id=member_id,
                                       group_instance_id=None, protocol_type="consumer", protocol_name="range",
                                       assignments=[SyncGroupRequestAssignment(member_id=member,
                                                                               assignment=assignment)]), 5)
        return r.error_code, r.assignment == assignment if r.error_code == 0 else None

    out["sync wrong generation"] = sync(generation + 1, member)
    out["sync unknown member"] = sync(generation, "nobody")
    out["sync"] = sync(generation, member)

    def heartbeat(generation_id: int, member_id: str) -> int:
        return c.request(HeartbeatRequest(group_id=group, generation_id=generation_id, member_id=member_id,
                                          group_instance_id=None), 4).error_code

    out["heartbeat"] = heartbeat(generation, member)
    out["heartbeat wrong generation"] = heartbeat(generation + 1, member)
    out["heartbeat unknown member"] = heartbeat(generation, "nobody")
    out["heartbeat unknown group"] = c.request(HeartbeatRequest(group_id="dg-nothing", generation_id=1,
                                                                member_id="x", group_instance_id=None), 4).error_code

    def commit(generation_id: int, member_id: str, name: str = "dg-t", offset: int = 5) -> int:
        r = c.request(OffsetCommitRequest(
            group_id=group, generation_id_or_member_epoch=generation_id, member_id=member_id, group_instance_id=None,
            retention_time_ms=-1, topics=[OffsetCommitRequestTopic(name=name, partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                                             committed_metadata="m")])]), 8)
        return r.topics[0].partitions[0].error_code

    out["commit"] = commit(generation, member)
    out["commit unknown topic"] = commit(generation, member, name="dg-missing")
    out["commit wrong generation"] = commit(generation + 1, member)
    out["commit as simple consumer"] = commit(-1, "")
    out["commit unknown member"] = commit(generation, "nobody")

    def fetched():
        r = c.request(OffsetFetchRequest(group_id=group, require_stable=True, topics=[
            OffsetFetchRequestTopic(name="dg-t", partition_indexes=[0, 1])]), 7)
        return r.error_code, [(p.error_code, p.committed_offset, p.metadata) for t in r.topics for p in t.partitions]

    out["fetch"] = fetched()

    def described():
        g = c.request(DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5).groups[0]
        return g.error_code, g.group_state, g.protocol_type, g.protocol_data, len(g.members)

    out["describe stable"] = described()
    listed = c.request(ListGroupsRequest(states_filter=["Stable"], types_filter=[]), 5)
    out["list stable"] = (listed.error_code, sorted((g.group_id, g.protocol_type, g.group_state, g.group_type)
                                                    for g in listed.groups if g.group_id.startswith("dg-")))

    def delete(*names: str):
        r = c.request(DeleteGroupsRequest(groups_names=list(names)), 2)
        return sorted((g.group_id, g.error_code) for g in r.results)

    out["delete non-empty and missing"] = delete(group, "dg-missing")

    def offset_delete() -> tuple[int, int]:
        r = c.request(OffsetDeleteRequest(group_id=group, topics=[OffsetDeleteRequestTopic(
            name="dg-t", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]), 0)
        return r.error_code, r.topics[0].partitions[0].error_code if r.topics else None

    out["offset delete subscribed"] = offset_delete()
    left = c.request(LeaveGroupRequest(group_id=group, members=[
        MemberIdentity(member_id=member, group_instance_id=None), MemberIdentity(member_id="nobody",
                                                                                   group_instance_id=None)]), 3)
    out["leave"] = (left.error_code, [m.error_code for m in left.members])
    out["describe after leave"] = described()
    out["offset delete"] = offset_delete()
    out["fetch after offset delete"] = fetched()
    out["delete"] = delete(group)
    out["describe deleted"] = described()
    return out


def consumer_groups(c: RawClient) -> Observations:
    """The consumer protocol (KIP-848): ConsumerGroupHeartbeat and ConsumerGroupDescribe."""
    create(c, topic("dgc-t", partitions=3))
    c.wait_for_topics("dgc-t")
    group = "dg-consumer"
    group_coordinator_ready(c, group)
    out: Observations = {}
    member = str(uuid.uuid4())

    def heartbeat(epoch: int, member_id: str = member, topics: list[str] | None = None):
        r = c.request(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch, instance_id=None, rack_id=None,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1, subscribed_topic_names=topics,
            server_assignor=None, topic_partitions=[] if epoch == 0 else None), 1)
        owned = None if r.assignment is None else sum(len(t.partitions) for t in r.assignment.topic_partitions)
        return r.error_code, r.member_epoch, r.heartbeat_interval_ms, owned

    out["join without topics"] = heartbeat(0, topics=None)[0]
    out["join"] = heartbeat(0, topics=["dgc-t"])
    out["heartbeat"] = heartbeat(1)
    out["heartbeat wrong epoch"] = heartbeat(7)[:2]
    out["heartbeat unknown member"] = heartbeat(1, member_id=str(uuid.uuid4()))[:2]

    def described():
        g = c.request(ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                      0).groups[0]
        return (g.error_code, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name,
                [(m.member_epoch, sorted(t.topic_name for t in m.assignment.topic_partitions), m.subscribed_topic_names)
                 for m in g.members])

    out["describe"] = described()
    g = c.request(DescribeGroupsRequest(groups=[group], include_authorized_operations=False), 5).groups[0]
    out["classic describe of a consumer group"] = (g.error_code, g.group_state, g.protocol_type, len(g.members))
    out["leave"] = heartbeat(-1)[:2]
    out["describe after leave"] = described()
    out["describe missing"] = c.request(ConsumerGroupDescribeRequest(group_ids=["dg-none"],
                                                                     include_authorized_operations=False),
                                        0).groups[0].error_code
    return out


def fetch_paths(c: RawClient) -> Observations:
    """Fetch sessions, size limits, epochs and old versions; OffsetForLeaderEpoch; ListOffsets v1;
    DescribeTopicPartitions with a cursor; DescribeCluster."""
    create(c, topic("fp-a", partitions=2))
    # fp-b on fp-a 0's leader, so that a fetch session there can take it in on a cluster too.
    leader = c.wait_for_topics("fp-a")["fp-a"].partitions
    leader = next(p.leader_id for p in leader if p.partition_index == 0)
    create(c, CreatableTopic(name="fp-b", num_partitions=-1, replication_factor=-1,
                             assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[leader])]))
    fp_b_id = c.wait_for_topics("fp-a", "fp-b")["fp-b"].topic_id
    for _ in range(3):
        produce(c, "fp-a", batch(5, size=100))
    produce(c, "fp-a", batch(2), partition=1)
    out: Observations = {}

    def fetch(version: int, partitions: list[tuple[str, int, int]], *, session_id: int = 0, session_epoch: int = -1,
              max_bytes: int = 1 << 20, partition_max: int = 1 << 20, forgotten: list[tuple[str, int]] = (),
              epoch: int = -1, last_fetched_epoch: int = -1):
        topics: dict[str, list[FetchPartition]] = {}
        for name, index, offset in partitions:
            topics.setdefault(name, []).append(FetchPartition(
                partition=index, fetch_offset=offset, current_leader_epoch=epoch, last_fetched_epoch=last_fetched_epoch,
                log_start_offset=-1, partition_max_bytes=partition_max))
        request = FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=max_bytes, isolation_level=0,
                               session_id=session_id, session_epoch=session_epoch,
                               topics=[FetchTopic(topic=t, partitions=ps) for t, ps in topics.items()],
                               forgotten_topics_data=[ForgottenTopic(topic=t, partitions=[p]) for t, p in forgotten],
                               rack_id="")
        return c.request(request, version)

    def summary(r):
        return (r.error_code, sorted((t.topic, p.partition_index, p.error_code, p.high_watermark,
                                      len(p.records or b"")) for t in r.responses for p in t.partitions))

    out["fetch v4"] = summary(fetch(4, [("fp-a", 0, 0), ("fp-a", 1, 0)]))[1]
    out["fetch v12 max_bytes 1 (first batch anyway)"] = summary(fetch(12, [("fp-a", 0, 0)], max_bytes=1))
    out["fetch v12 partition max 1"] = summary(fetch(12, [("fp-a", 0, 0), ("fp-a", 1, 0)], partition_max=1))
    out["fetch v12 from the middle of a batch"] = summary(fetch(12, [("fp-a", 0, 7)]))
    out["fetch v12 diverging epoch"] = [
        (p.error_code, p.diverging_epoch.epoch, p.diverging_epoch.end_offset)
        for t in fetch(12, [("fp-a", 0, 15)], epoch=0, last_fetched_epoch=5).responses for p in t.partitions]
    out["fetch v12 fenced epoch"] = summary(fetch(12, [("fp-a", 0, 0)], epoch=9))
    opened = fetch(12, [("fp-a", 0, 0), ("fp-a", 1, 0)], session_id=0, session_epoch=0)
    out["session open"] = (opened.error_code, opened.session_id > 0, summary(opened)[1])
    sid = opened.session_id
    out["session incremental, nothing new"] = summary(fetch(12, [], session_id=sid, session_epoch=1))
    produce(c, "fp-a", batch(1), partition=1)
    out["session incremental, new data"] = summary(fetch(12, [], session_id=sid, session_epoch=2))
    out["session wrong epoch"] = fetch(12, [], session_id=sid, session_epoch=7).error_code
    out["session unknown id"] = fetch(12, [], session_id=sid + 12345, session_epoch=1).error_code
    out["session forget"] = summary(fetch(12, [("fp-b", 0, 0)], session_id=sid, session_epoch=3,
                                          forgotten=[("fp-a", 0)]))
    out["session close"] = fetch(12, [], session_id=sid, session_epoch=-1).error_code

    # By topic id (v13+): a partition of an unknown topic id enters the session, answered on every fetch.
    unknown_id = uuid.uuid4()

    def fetch_by_id(named: list[uuid.UUID], session_id: int, session_epoch: int, forgotten: list[uuid.UUID] = (),
                    max_wait_ms: int = 0):
        request = FetchRequest(max_wait_ms=max_wait_ms, min_bytes=1 if max_wait_ms else 0, max_bytes=1 << 20, isolation_level=0,
                               session_id=session_id, session_epoch=session_epoch, rack_id="",
                               topics=[FetchTopic(topic_id=t, partitions=[FetchPartition(
                                   partition=0, fetch_offset=0, current_leader_epoch=-1, last_fetched_epoch=-1,
                                   log_start_offset=-1, partition_max_bytes=1 << 20)]) for t in named],
                               forgotten_topics_data=[ForgottenTopic(topic_id=t, partitions=[0]) for t in forgotten])
        r = c.request(request, 17)
        names = {fp_b_id: "fp-b", unknown_id: "unknown"}
        return r.error_code, r.session_id, sorted((names.get(t.topic_id, "?"), p.partition_index, p.error_code)
                                                  for t in r.responses for p in t.partitions)

    code, sid, answers = fetch_by_id([fp_b_id, unknown_id], 0, 0)
    out["session by id open, one topic id unknown"] = (code, sid > 0, answers)
    out["session by id incremental, unknown id answered again"] = fetch_by_id([], sid, 1)[::2]
    # With nothing new on fp-b, the fetch waits its max_wait_ms though the session holds an unknown topic id.
    started = time.monotonic()
    waited = fetch_by_id([], sid, 2, max_wait_ms=1000)[::2]
    out["session by id with an unknown id, nothing new: waits"] = (waited, time.monotonic() - started >= 0.9)
    out["session by id, unknown id forgotten"] = fetch_by_id([], sid, 3, forgotten=[unknown_id])[::2]
    fetch_by_id([], sid, -1)

    def epochs(leader_epoch: int, current: int = -1):
        r = c.request(OffsetForLeaderEpochRequest(replica_id=-1, topics=[OffsetForLeaderTopic(
            topic="fp-a", partitions=[OffsetForLeaderPartition(partition=0, current_leader_epoch=current,
                                                               leader_epoch=leader_epoch)])]), 4)
        p = r.topics[0].partitions[0]
        return p.error_code, p.leader_epoch, p.end_offset

    out["epoch 0"] = epochs(0)
    out["epoch 3"] = epochs(3)
    out["epoch fenced"] = epochs(0, current=4)

    def list_offsets(version: int, ts: int):
        r = c.request(ListOffsetsRequest(replica_id=-1, topics=[ListOffsetsTopic(name="fp-a", partitions=[
            ListOffsetsPartition(partition_index=0, timestamp=ts, max_num_offsets=3)])]), version)
        p = r.topics[0].partitions[0]
        return p.error_code, p.offset

    out["list offsets v1 latest"] = list_offsets(1, -1)
    out["list offsets v1 earliest"] = list_offsets(1, -2)

    described = c.request(DescribeTopicPartitionsRequest(topics=[TopicRequestDTP(name="fp-a"), TopicRequestDTP(
        name="fp-missing")], response_partition_limit=1, cursor=None), 0)
    out["describe topic partitions"] = (
        sorted((t.name, t.error_code, [p.partition_index for p in t.partitions]) for t in described.topics),
        None if described.next_cursor is None else (described.next_cursor.topic_name,
                                                     described.next_cursor.partition_index))
    cluster = c.request(DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1), 1)
    # The controller id a client sees is one of the brokers (a KRaft broker names a random live one).
    out["describe cluster"] = (cluster.error_code, cluster.endpoint_type, len(cluster.brokers),
                               cluster.controller_id in {b.broker_id for b in cluster.brokers})
    out["describe cluster controllers"] = c.request(DescribeClusterRequest(
        include_cluster_authorized_operations=False, endpoint_type=2), 1).error_code
    return out


def admin_misc(c: RawClient) -> Observations:
    """ACLs without an authorizer, log dirs, broker and broker-logger configs (client quotas: not served yet)."""
    create(c, topic("am-a", partitions=2))
    c.wait_for_topics("am-a")
    out: Observations = {}
    acls = c.request(DescribeAclsRequest(resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
                                         principal_filter=None, host_filter=None, operation=1, permission_type=1), 3)
    out["describe acls"] = (acls.error_code, len(acls.resources))
    created = c.request(CreateAclsRequest(creations=[AclCreation(
        resource_type=2, resource_name="am-a", resource_pattern_type=3, principal="User:alice", host="*",
        operation=3, permission_type=3)]), 3)
    out["create acls"] = [r.error_code for r in created.results]

    dirs = c.request(DescribeLogDirsRequest(topics=[DescribableLogDirTopic(topic="am-a", partitions=[0, 1, 5])]), 4)
    out["log dirs"] = (dirs.error_code, [(d.error_code, [(t.name, sorted(p.partition_index for p in t.partitions))
                                                         for t in d.topics]) for d in dirs.results])

    def configs(resource_type: int, name: str, keys: list[str] | None):
        r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=resource_type, resource_name=name, configuration_keys=keys)], include_synonyms=False,
            include_documentation=False), 4).results[0]
        return r.error_code, sorted((e.name, e.value, e.read_only, e.config_source, e.is_sensitive, e.config_type)
                                    for e in r.configs)

    broker_id = str(c.request(DescribeClusterRequest(include_cluster_authorized_operations=False), 1).brokers[0].broker_id)
    keys = ["log.retention.hours", "num.partitions", "default.replication.factor", "auto.create.topics.enable",
            "log.segment.bytes", "message.max.bytes", "offsets.topic.num.partitions", "group.min.session.timeout.ms",
            "transaction.max.timeout.ms", "log.cleanup.policy", "compression.type", "min.insync.replicas",
            "unclean.leader.election.enable", "log.message.timestamp.type", "delete.topic.enable"]
    out["broker configs"] = configs(4, broker_id, keys)
    out["broker configs, unknown broker"] = configs(4, "77", ["num.partitions"])[0]
    out["broker configs, bad name"] = configs(4, "one", ["num.partitions"])[0]
    logger = configs(8, broker_id, None)
    # (the root level itself is each broker's own logging set-up)
    out["broker logger"] = (logger[0], len(logger[1]) > 0, dict((e[0], e[2:]) for e in logger[1]).get("root"))

    def set_logger(name: str, op: int, level: str | None, resource: str = broker_id):
        r = c.request(IncrementalAlterConfigsRequest(validate_only=False, resources=[AlterConfigsResource(
            resource_type=8, resource_name=resource, configs=[AlterableConfig(name=name, config_operation=op,
                                                                              value=level)])]), 1)
        return r.responses[0].error_code

    out["logger root to DEBUG"] = set_logger("root", 0, "DEBUG")
    out["logger root now"] = dict((e[0], e[1]) for e in configs(8, broker_id, None)[1]).get("root")
    out["logger root back to INFO"] = set_logger("root", 0, "INFO")
    out["logger unknown"] = set_logger("no.such.logger", 0, "DEBUG")
    out["logger bad level"] = set_logger("root", 0, "LOUD")
    out["logger delete root"] = set_logger("root", 1, None)
    out["logger append"] = set_logger("root", 2, "INFO")
    out["logger bad node"] = set_logger("root", 0, "INFO", resource="x")
    out["logger other node"] = set_logger("root", 0, "INFO", resource="77")
    return out


def protocol_edges(c: RawClient) -> Observations:
    """What a broker does with odd requests: each on a fresh connection, noting whether it is closed."""
    import struct
    create(c, topic("pe-a"))
    c.wait_for_topics("pe-a")
    host, port = c.sock.getpeername()[:2]
    # On a cluster, pe-a's leader: an acks=0 produce elsewhere is a NOT_LEADER that closes the connection.
    bootstrap = c.leader("pe-a") if isinstance(c, RoutingClient) else f"{host}:{port}"
    out: Observations = {}

    def fresh(client_id: str | None = "diff") -> RawClient:
        return RawClient(bootstrap, timeout=10, client_id=client_id)

    def answer_or_close(request, version: int, summarize: Callable, client_id: str | None = "diff"):
        with fresh(client_id) as raw:
            try:
                return summarize(raw.request(request, version))
            except (ConnectionError, OSError):
                return "closed"

    for version in (6, 99):  # newer than served: the whole answer, byte for byte (v0 format)
        with fresh() as raw:
            # header v2 (ApiVersions v3+ is flexible): client id, an empty tagged-field section, then a v3 body
            body = struct.pack(">hhi", 18, version, 7) + struct.pack(">h", 4) + b"diff" + b"\x00" + b"\x05diff\x021\x00"
            raw.send_bytes(struct.pack(">i", len(body)) + body)
            out[f"api versions v{version}"] = raw.recv_frame().hex()
    with fresh() as raw:
        raw.send_bytes(struct.pack(">ihhi", 14, 999, 0, 8) + struct.pack(">h", 4) + b"diff")
        out["unknown api key"] = "closed" if raw.is_closed_by_peer() else "open"
    with fresh() as raw:
        raw.send_bytes(struct.pack(">ihhi", 14, 3, 77, 9) + struct.pack(">h", 4) + b"diff")
        out["unsupported metadata version"] = "closed" if raw.is_closed_by_peer() else "open"

    def acks0(name: str, records: bytes) -> str:
        with fresh() as raw:
            raw.send(ProduceRequest(acks=0, timeout_ms=5000, topic_data=[TopicProduceData(
                name=name, partition_data=[PartitionProduceData(index=0, records=records)])]), 9)
            return "closed" if raw.is_closed_by_peer(2.0) else "open"

    out["acks=0 ok"] = acks0("pe-a", batch())
    out["acks=0 unknown topic"] = acks0("pe-missing", batch())
    corrupt = bytearray(batch())
    corrupt[-1] ^= 0xFF
    out["acks=0 corrupt"] = acks0("pe-a", bytes(corrupt))
    out["null client id"] = answer_or_close(
        MetadataRequest(topics=[MetadataRequestTopic(name="pe-a")], allow_auto_topic_creation=False), 12,
        lambda r: [(t.name, t.error_code) for t in r.topics], client_id=None)
    out["metadata v1 all topics"] = answer_or_close(
        MetadataRequest(topics=None), 1, lambda r: sorted(t.name for t in r.topics if t.name.startswith("pe-")))
    out["sasl handshake on plaintext"] = answer_or_close(
        SaslHandshakeRequest(mechanism="PLAIN"), 1, lambda r: (r.error_code, sorted(r.mechanisms)))
    old_format = bytes.fromhex(  # one magic-1 message (MessageSet v1), as a 0.10 client wrote it
        "0000000000000000" "00000022" "9ed6b0e9" "01" "00" "00000171a1b2c3d4" "ffffffff" "00000008" "6f6c642d666d7421")
    out["produce magic 1"] = answer_or_close(
        ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(
            name="pe-a", partition_data=[PartitionProduceData(index=0, records=old_format)])]), 7,
        lambda r: r.responses[0].partition_responses[0].error_code)
    return out


def client_quotas(c: RawClient) -> Observations:
    """AlterClientQuotas checks and DescribeClientQuotas filters (the controller's answers)."""
    out: Observations = {}

    def alter(entity: list[tuple[str, str | None]], ops: list[tuple[str, float | None]], validate_only=False):
        r = c.request(AlterClientQuotasRequest(validate_only=validate_only, entries=[QuotaEntry(
            entity=[QuotaEntity(entity_type=t, entity_name=n) for t, n in entity],
            ops=[QuotaOp(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])]), 1)
        return [(e.error_code, e.error_message) for e in r.entries]

    out["user"] = alter([("user", "cq-alice")], [("producer_byte_rate", 1024.0), ("request_percentage", 12.5)])
    out["user and client"] = alter([("user", "cq-alice"), ("client-id", "cq-app")], [("consumer_byte_rate", 2048.0)])
    out["default client"] = alter([("client-id", None)], [("producer_byte_rate", 4096.0)])
    out["ip"] = alter([("ip", "127.0.0.1")], [("connection_creation_rate", 10.0)])
    out["validate only"] = alter([("client-id", "cq-dry")], [("producer_byte_rate", 1.0)], validate_only=True)
    out["remove"] = alter([("user", "cq-alice")], [("request_percentage", None)])
    out["fraction"] = alter([("user", "cq-bob")], [("producer_byte_rate", 10.5)])
    out["zero"] = alter([("user", "cq-bob")], [("producer_byte_rate", 0.0)])
    out["unknown key"] = alter([("user", "cq-bob")], [("no_such_quota", 1.0)])
    out["ip key on user"] = alter([("user", "cq-bob")], [("connection_creation_rate", 1.0)])
    out["ip with user"] = alter([("ip", "127.0.0.1"), ("user", "cq-bob")], [("connection_creation_rate", 1.0)])
    out["empty entity"] = alter([], [("producer_byte_rate", 1.0)])
    out["empty name"] = alter([("client-id", "")], [("producer_byte_rate", 1.0)])
    out["unknown type"] = alter([("group", "g")], [("producer_byte_rate", 1.0)])

    def describe(components: list[tuple[str, int, str | None]], strict: bool = False):
        deadline = time.monotonic() + 5
        while True:
            r = c.request(DescribeClientQuotasRequest(components=[QuotaComponent(
                entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict), 1)
            entries = sorted((sorted(((e.entity_type, e.entity_name or "<default>") for e in q.entity)),
                              sorted((v.key, v.value) for v in q.values)) for q in r.entries or []
                             if any((e.entity_name or "").startswith("cq-") or e.entity_name is None
                                    or e.entity_type == "ip" for e in q.entity))
            if entries or r.error_code or time.monotonic() > deadline:  # Kafka applies alterations asynchronously
                return r.error_code, r.error_message, entries
            time.sleep(0.1)

    out["describe user"] = describe([("user", 0, "cq-alice")])
    out["describe user strict"] = describe([("user", 0, "cq-alice")], strict=True)
    out["describe default clients"] = describe([("client-id", 1, None)])
    out["describe any ip"] = describe([("ip", 2, None)])
    out["describe bad exact"] = describe([("user", 0, None)])
    out["describe ip and user"] = describe([("ip", 2, None), ("user", 2, None)])
    out["describe unknown type"] = describe([("group", 2, None)])
    return out


def broker_configs(c: RawClient) -> Observations:
    """Dynamic broker configs: per-broker and cluster-default changes, incremental ops, errors, validate_only,
    the legacy whole-set AlterConfigs, and what DescribeConfigs shows afterwards (broker and topic)."""
    create(c, topic("bc-a"))
    c.wait_for_topics("bc-a")
    broker_id = str(c.request(DescribeClusterRequest(include_cluster_authorized_operations=False), 1).brokers[0].broker_id)
    out: Observations = {}

    def incremental(name: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False,
                    resource_type: int = 4):
        r = c.request(IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[AlterConfigsResource(
            resource_type=resource_type, resource_name=name, configs=[
                AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])]), 1)
        return r.responses[0].error_code, r.responses[0].error_message

    def legacy(name: str, configs: dict[str, str | None], validate_only: bool = False):
        r = c.request(AlterConfigsRequest(validate_only=validate_only, resources=[LegacyAlterResource(
            resource_type=4, resource_name=name, configs=[LegacyAlterable(name=k, value=v)
                                                          for k, v in configs.items()])]), 2)
        return r.responses[0].error_code, r.responses[0].error_message

    def describe(resource_type: int, name: str, keys: list[str] | None = None, until: Callable | None = None):
        deadline = time.monotonic() + 5
        while True:  # Kafka's brokers apply committed changes asynchronously
            r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=resource_type, resource_name=name, configuration_keys=keys)], include_synonyms=True,
                include_documentation=False), 4).results[0]
            got = (r.error_code, r.error_message, sorted(
                (e.name, e.value, e.read_only, e.config_source, e.is_sensitive, e.config_type,
                 [(s.name, s.value, s.source) for s in e.synonyms]) for e in r.configs))
            if until is None or until(got) or time.monotonic() > deadline:
                return got

    def has(name: str, value: str | None) -> Callable:
        return lambda got: any(e[0] == name and e[1] == value for e in got[2])

    def lacks(name: str) -> Callable:
        return lambda got: all(e[0] != name for e in got[2])

    keys = ["log.retention.ms", "log.retention.hours", "message.max.bytes", "log.cleanup.policy",
            "log.segment.bytes", "num.partitions", "min.insync.replicas", "compression.type",
            "log.retention.bytes"]
    out["default before"] = describe(4, "")
    out["set per-broker"] = incremental(broker_id, [("log.retention.ms", 0, "3600000")])
    out["set default"] = incremental("", [("log.retention.ms", 0, "7200000"), ("message.max.bytes", 0, "500000"),
                                          ("compression.type", 0, "lz4")])
    out["append list"] = incremental("", [("log.cleanup.policy", 2, "compact")])
    out["subtract list"] = incremental(broker_id, [("log.cleanup.policy", 3, "delete")])
    out["append non-list"] = incremental("", [("log.retention.ms", 2, "5")])
    out["append unknown"] = incremental("", [("no.such.config", 2, "5")])
    out["static"] = incremental("", [("num.partitions", 0, "3")])
    out["static per-broker"] = incremental(broker_id, [("log.dirs", 0, "/tmp/x"), ("num.partitions", 0, "3")])
    out["unknown name"] = incremental("", [("bc.custom.config", 0, "1")])
    out["not a number"] = incremental("", [("log.retention.ms", 0, "soon")])
    out["below minimum"] = incremental("", [("log.segment.bytes", 0, "10")])
    out["bad boolean"] = incremental("", [("unclean.leader.election.enable", 0, "maybe")])
    out["bad choice"] = incremental("", [("compression.type", 0, "brotli")])
    out["bad double"] = incremental("", [("log.cleaner.min.cleanable.ratio", 0, "2.5")])
    out["security without listener"] = incremental(broker_id, [("ssl.keystore.type", 0, "PKCS12")])
    out["listener config at default"] = incremental("", [("listener.name.plaintext.ssl.keystore.type", 0, "PKCS12")])
    out["null value"] = incremental("", [("log.retention.bytes", 0, None)])
    out["duplicate keys"] = incremental("", [("log.retention.bytes", 0, "1"), ("log.retention.bytes", 0, "2")])
    out["unknown operation"] = incremental("", [("log.retention.bytes", 7, "1")])
    out["other broker"] = incremental("77", [("log.retention.bytes", 0, "1")])
    out["not a broker id"] = incremental("x", [("log.retention.bytes", 0, "1")])
    out["validate only"] = incremental("", [("log.retention.bytes", 0, "1000")], validate_only=True)
    out["delete unset"] = incremental("", [("log.flush.interval.ms", 1, None)])
    out["default after"] = describe(4, "", until=has("log.cleanup.policy", "delete,compact"))
    out["broker after"] = describe(4, broker_id, keys, until=has("log.cleanup.policy", ""))
    out["topic after"] = describe(2, "bc-a", ["retention.ms", "max.message.bytes", "cleanup.policy",
                                              "compression.type", "min.insync.replicas"],
                                  until=has("cleanup.policy", ""))

    out["legacy static"] = legacy("", {"num.partitions": "3"})
    out["legacy null"] = legacy("", {"log.retention.bytes": None})
    out["legacy other broker"] = legacy("77", {"log.retention.bytes": "1"})
    out["legacy validate only"] = legacy("", {"log.retention.bytes": "5000"}, validate_only=True)
    out["legacy replace default"] = legacy("", {"log.retention.bytes": "5000", "min.insync.replicas": "1"})
    out["default after legacy"] = describe(4, "", until=lacks("message.max.bytes"))
    out["legacy replace per-broker"] = legacy(broker_id, {})
    out["broker after legacy"] = describe(4, broker_id, keys, until=has("log.retention.ms", None))
    out["topic after legacy"] = describe(2, "bc-a", ["retention.ms", "retention.bytes", "cleanup.policy"],
                                         until=has("retention.bytes", "5000"))
    out["restore"] = incremental("", [("log.retention.bytes", 1, None)])
    out["default restored"] = describe(4, "", until=lacks("log.retention.bytes"))
    return out


def listener_configs(c: RawClient) -> Observations:
    """Per-broker listener, SASL and SSL configs (DynamicBrokerConfig): accepted and stored as Kafka does, and
    refused once a listener's own prefixed configs differ from those it started with (DynamicListenerConfig)."""
    out: Observations = {}

    def incremental(ops: list[tuple[str, int, str | None]], validate_only: bool = False):
        r = c.request(IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[AlterConfigsResource(
            resource_type=4, resource_name="1", configs=[AlterableConfig(name=k, config_operation=op, value=v)
                                                         for k, op, v in ops])]), 1)
        return r.responses[0].error_code, r.responses[0].error_message

    def legacy(configs: dict[str, str]):
        r = c.request(AlterConfigsRequest(validate_only=False, resources=[LegacyAlterResource(
            resource_type=4, resource_name="1", configs=[LegacyAlterable(name=k, value=v) for k, v in configs.items()])]), 2)
        return r.responses[0].error_code, r.responses[0].error_message

    def describe(keys: list[str], until: Callable | None = None):
        deadline = time.monotonic() + 5
        while True:  # Kafka's brokers apply committed changes asynchronously
            r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=4, resource_name="1", configuration_keys=keys)], include_synonyms=True), 4).results[0]
            got = (r.error_code, sorted((e.name, e.value, e.read_only, e.config_source, e.is_sensitive, e.config_type,
                                         [(s.name, s.value, s.source) for s in e.synonyms]) for e in r.configs))
            if until is None or until(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    for name, value in (("sasl.kerberos.min.time.before.relogin", "58000"), ("sasl.kerberos.service.name", "kafka"),
                        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256"), ("sasl.login.refresh.window.factor", "0.9"),
                        ("sasl.kerberos.min.time.before.relogin", "soon"), ("ssl.client.auth", "required"),
                        ("ssl.keystore.type", "PKCS12")):
        out[f"validate {name}={value}"] = incremental([(name, 0, value)], validate_only=True)
    out["kerberos relogin"] = incremental([("sasl.kerberos.min.time.before.relogin", 0, "58000")])
    out["legacy kerberos"] = legacy({"sasl.kerberos.min.time.before.relogin": "57000",
                                     "sasl.kerberos.service.name": "kafka"})
    keys = ["sasl.kerberos.min.time.before.relogin", "sasl.kerberos.service.name", "sasl.enabled.mechanisms",
            "ssl.client.auth", "listener.name.plaintext.sasl.enabled.mechanisms"]
    out["describe"] = describe(keys, until=lambda got: any(e[1] == "57000" for e in got[1]))
    out["sasl mechanisms"] = incremental([("sasl.enabled.mechanisms", 0, "PLAIN")])
    out["ssl client auth"] = incremental([("ssl.client.auth", 0, "required")])
    out["listener ssl keystore type"] = incremental([("listener.name.plaintext.ssl.keystore.type", 0, "PKCS12")])
    out["listener ssl keystore location"] = incremental([("listener.name.plaintext.ssl.keystore.location", 0,
                                                          "/nonexistent.p12")])
    out["listener sasl mechanisms"] = incremental([("listener.name.plaintext.sasl.enabled.mechanisms", 0, "PLAIN")])
    prefixed = "listener.name.plaintext.sasl.enabled.mechanisms"
    out["describe prefixed"] = describe(keys, until=lambda got: any(e[0] == prefixed for e in got[1]))
    out["unknown listener"] = incremental([("listener.name.nosuch.ssl.keystore.type", 0, "PKCS12")])
    out["then ssl client auth"] = incremental([("ssl.client.auth", 0, "none")])
    out["then kerberos relogin"] = incremental([("sasl.kerberos.min.time.before.relogin", 0, "59000")])
    out["then kerberos renew jitter"] = incremental([("sasl.kerberos.ticket.renew.jitter", 0, "0.1")])
    out["then delete the listener's own"] = incremental([(prefixed, 1, None)])
    out["describe deleted"] = describe(keys, until=lambda got: all(e[0] != prefixed for e in got[1]))
    out["then kerberos renew jitter again"] = incremental([("sasl.kerberos.ticket.renew.jitter", 0, "0.2")])
    # with the jitter among the keys: the wait for its 0.2 ran out its 5 s on both brokers while it was not asked for
    out["describe after"] = describe([*keys, "sasl.kerberos.ticket.renew.jitter"],
                                     until=lambda got: any(e[1] == "0.2" for e in got[1]))
    out["clean up"] = legacy({})
    return out


def group_configs(c: RawClient) -> Observations:
    """GROUP config resources (KIP-848, type 32): described with the broker's defaults, altered within the
    broker's group.consumer.* bounds, and in effect on the group (the heartbeat interval members are given)."""
    create(c, topic("dgcfg-t"))
    c.wait_for_topics("dgcfg-t")
    group = "dg-configs"
    group_coordinator_ready(c, group)
    out: Observations = {}

    def incremental(name: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False):
        r = c.request(IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[AlterConfigsResource(
            resource_type=32, resource_name=name, configs=[AlterableConfig(name=k, config_operation=op, value=v)
                                                           for k, op, v in ops])]), 1)
        return r.responses[0].error_code, r.responses[0].error_message, r.responses[0].resource_type

    def legacy(name: str, configs: dict[str, str]):
        r = c.request(AlterConfigsRequest(validate_only=False, resources=[LegacyAlterResource(
            resource_type=32, resource_name=name, configs=[LegacyAlterable(name=k, value=v)
                                                           for k, v in configs.items()])]), 2)
        return r.responses[0].error_code, r.responses[0].error_message

    def describe(name: str, keys: list[str] | None = None, until: Callable | None = None):
        deadline = time.monotonic() + 5
        while True:  # Kafka's brokers apply committed changes asynchronously
            r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
                resource_type=32, resource_name=name, configuration_keys=keys)], include_synonyms=True,
                include_documentation=True), 4).results[0]
            got = (r.error_code, r.error_message, [
                (e.name, e.value, e.read_only, e.config_source, e.is_sensitive, e.config_type,
                 [(s.name, s.value, s.source) for s in e.synonyms], e.documentation) for e in r.configs])
            if until is None or until(got) or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    def value_is(name: str, value: str) -> Callable:
        return lambda got: any(e[0] == name and e[1] == value for e in got[2])

    member = str(uuid.uuid4())

    member_epoch = [0]  # what the coordinator last gave the member (a new group's first epoch differs by version)

    def heartbeat(epoch: int | None = None) -> tuple[int, int]:
        epoch = member_epoch[0] if epoch is None else epoch
        r = c.request(ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, instance_id=None, rack_id=None,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1, subscribed_topic_names=["dgcfg-t"] if epoch == 0 else None,
            server_assignor=None, topic_partitions=[] if epoch == 0 else None), 1)
        if r.error_code == ErrorCode.NONE:
            member_epoch[0] = r.member_epoch
        return r.error_code, r.heartbeat_interval_ms

    def heartbeat_until(interval_ms: int) -> tuple[int, int]:
        """A heartbeat once the coordinator gives ``interval_ms`` (5 s at most): on a cluster the broker that
        described the change may learn of it before the group's coordinator does."""
        deadline = time.monotonic() + 5
        while (got := heartbeat())[1] != interval_ms and time.monotonic() < deadline:
            time.sleep(0.1)
        return got

    out["describe unknown group"] = describe("dg-nobody")
    out["describe empty name"] = describe("")[:2]
    out["join"] = heartbeat(0)
    for label, ops in (
            ("set session", [("consumer.session.timeout.ms", 0, "50000")]),
            ("set heartbeat", [("consumer.heartbeat.interval.ms", 0, "6000")]),
            ("session below min", [("consumer.session.timeout.ms", 0, "1000")]),
            ("session above max", [("consumer.session.timeout.ms", 0, "70000")]),
            ("heartbeat below min", [("consumer.heartbeat.interval.ms", 0, "1000")]),
            ("heartbeat above max", [("consumer.heartbeat.interval.ms", 0, "20000")]),
            ("unknown name", [("no.such.config", 0, "1")]),
            ("not a number", [("consumer.session.timeout.ms", 0, "soon")]),
            ("append", [("consumer.session.timeout.ms", 2, "1")]),
            ("null", [("consumer.session.timeout.ms", 0, None)]),
            ("share reset", [("share.auto.offset.reset", 0, "by_duration:PT1H")]),
            ("share reset bad", [("share.auto.offset.reset", 0, "middle")]),
            ("share isolation bad", [("share.isolation.level", 0, "none")]),
            ("standby above max", [("streams.num.standby.replicas", 0, "5")])):
        out[label] = incremental(group, ops)
    out["empty name"] = incremental("", [("consumer.session.timeout.ms", 0, "50000")])
    out["validate only"] = incremental("dg-validate", [("consumer.session.timeout.ms", 0, "50000")], True)
    out["describe"] = describe(group, until=value_is("consumer.heartbeat.interval.ms", "6000"))
    out["describe keys"] = describe(group, ["consumer.session.timeout.ms", "no.such.config"])
    out["describe validated only"] = describe("dg-validate", ["consumer.session.timeout.ms"])
    out["heartbeat interval given"] = heartbeat_until(6000)
    out["delete heartbeat"] = incremental(group, [("consumer.heartbeat.interval.ms", 1, None)])
    describe(group, until=value_is("consumer.heartbeat.interval.ms", "5000"))
    out["heartbeat interval after delete"] = heartbeat_until(5000)
    out["legacy replace"] = legacy(group, {"consumer.heartbeat.interval.ms": "7000"})
    out["describe after legacy"] = describe(group, ["consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"],
                                            until=value_is("consumer.heartbeat.interval.ms", "7000"))
    def listed(until: Callable) -> list[str]:
        deadline = time.monotonic() + 5
        while True:
            r = c.request(ListConfigResourcesRequest(resource_types=[32]), 1)
            names = sorted(x.resource_name for x in r.config_resources if x.resource_name.startswith("dg-"))
            if until(names) or time.monotonic() > deadline:
                return [r.error_code, *names]
            time.sleep(0.1)

    out["list config resources"] = listed(lambda names: group in names)
    out["legacy clear"] = legacy(group, {})
    out["list config resources after clear"] = listed(lambda names: group not in names)
    return out


def classic_first_generation(c: RawClient) -> Observations:
    """How a classic group forms its first generations (Kafka's GroupMetadataManager): KIP-394 pending members
    (MEMBER_ID_REQUIRED first), the initial delayed join that gathers members joining concurrently (static and
    dynamic, two and three), and a join phase that waits for every known member, pending ones included (one that never
    rejoins until its session expires)."""
    import select
    create(c, topic("fg-t", partitions=3))
    c.wait_for_topics("fg-t")
    host, port = c.sock.getpeername()[:2]
    out: Observations = {}

    def join_request(group: str, member_id: str, instance: str | None = None,
                     session_timeout_ms: int = 10_000) -> JoinGroupRequest:
        return JoinGroupRequest(group_id=group, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=10_000,
                                member_id=member_id, group_instance_id=instance, protocol_type="consumer",
                                protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription("fg-t"))])

    def answered_within(member: RawClient, seconds: float) -> bool:
        return bool(select.select([member.sock], [], [], seconds)[0])

    class Members:
        """``n`` members of ``group``, each on its own connection; ids as the coordinator gave them."""

        def __init__(self, group: str, n: int, static: bool) -> None:
            group_coordinator_ready(c, group)
            self.group, self.static = group, static
            # On a cluster, the members talk to the group's coordinator, as a consumer does.
            address = c.coordinator(group) if isinstance(c, RoutingClient) else f"{host}:{port}"
            self.clients = [RawClient(address, timeout=30) for _ in range(n)]
            self.ids = ["" for _ in range(n)]
            self.generation = -1
            self.leader = -1

        def member_id_required(self, i: int, session_timeout_ms: int = 10_000) -> int:
            r = self.clients[i].request(join_request(self.group, "", session_timeout_ms=session_timeout_ms), 7)
            self.ids[i] = r.member_id
            return r.error_code

        def send_join(self, i: int) -> None:
            self.clients[i].send(join_request(self.group, self.ids[i], f"{self.group}-{i}" if self.static else None), 7)

        def receive_join(self, i: int) -> tuple:
            """(error, generation, leader?, members the leader is given): which member leads depends on the order
            the joins are processed in, which Kafka's request threads do not keep across connections."""
            r = self.clients[i].recv(JoinGroupResponse, 7)[1]
            self.ids[i] = r.member_id or self.ids[i]
            self.generation = max(self.generation, r.generation_id)
            if r.leader and r.leader == r.member_id:
                self.leader = i
            return r.error_code, r.generation_id, r.leader == r.member_id, len(r.members)

        def join_all(self, which: list[int]) -> list[tuple]:
            """Each member's answer, and how many group.initial.rebalance.delay.ms (3 s) the join took: one, and
            one more while members kept joining (Kafka's InitialDelayedJoin)."""
            started = time.monotonic()
            for i in which:
                self.send_join(i)
            answers = sorted(self.receive_join(i) for i in which)
            return [*answers, ("initial delays", round((time.monotonic() - started) / 3.0))]

        def heartbeat_until(self, i: int, code: int) -> int:
            """Heartbeat until ``code`` (a request on another connection may not have been processed yet)."""
            deadline = time.monotonic() + 5
            while (got := self.heartbeat(i)) != code and time.monotonic() < deadline:
                time.sleep(0.1)
            return got

        def sync(self, i: int, leader: bool) -> int:
            assignments = [SyncGroupRequestAssignment(member_id=m, assignment=b"") for m in self.ids if m] if leader else []
            r = self.clients[i].request(SyncGroupRequest(
                group_id=self.group, generation_id=self.generation, member_id=self.ids[i],
                group_instance_id=f"{self.group}-{i}" if self.static else None, protocol_type="consumer",
                protocol_name="range", assignments=assignments), 5)
            return r.error_code

        def heartbeat(self, i: int) -> int:
            return self.clients[i].request(HeartbeatRequest(
                group_id=self.group, generation_id=self.generation, member_id=self.ids[i],
                group_instance_id=f"{self.group}-{i}" if self.static else None), 4).error_code

        def close(self) -> None:
            for client in self.clients:
                client.close()

    # Members joining at the same moment all land in the first generation (the initial delayed join).
    for static in (False, True):
        for n in (2, 3):
            kind = "static" if static else "dynamic"
            m = Members(f"fg-{kind}-{n}", n, static)
            if not static:
                out[f"{kind} {n}: member id required"] = [m.member_id_required(i) for i in range(n)]
            out[f"{kind} {n}: first generation"] = m.join_all(list(range(n)))
            m.close()

    # A pending member (it got its id but has not rejoined yet) is not waited for by the initial join; when it
    # joins, the group rebalances and the first member learns of it from its heartbeat.
    m = Members("fg-pending-initial", 2, False)
    out["pending initial: member ids"] = [m.member_id_required(0), m.member_id_required(1)]
    out["pending initial: first generation"] = m.join_all([0])
    out["pending initial: leader syncs"] = m.sync(0, leader=True)
    m.send_join(1)
    out["pending initial: newcomer answered at once"] = answered_within(m.clients[1], 1.0)
    out["pending initial: leader heartbeat"] = m.heartbeat_until(0, ErrorCode.REBALANCE_IN_PROGRESS)
    m.send_join(0)
    out["pending initial: second generation"] = sorted([m.receive_join(1), m.receive_join(0)])
    m.close()

    # A later join phase waits for every known member, a pending one included (KIP-394).
    m = Members("fg-pending-wait", 3, False)
    out["pending wait: member ids"] = [m.member_id_required(0), m.member_id_required(1)]
    out["pending wait: first generation"] = m.join_all([0, 1])
    follower = 1 - m.leader  # the leader syncs first: a follower's SyncGroup waits for the leader's
    out["pending wait: syncs"] = [m.sync(m.leader, leader=True), m.sync(follower, leader=False)]
    out["pending wait: third member id"] = m.member_id_required(2)
    out["pending wait: heartbeat after a pending member"] = m.heartbeat(follower)
    m.send_join(m.leader)  # the leader's rejoin starts a rebalance
    out["pending wait: heartbeat of the other"] = m.heartbeat_until(follower, ErrorCode.REBALANCE_IN_PROGRESS)
    m.send_join(follower)
    out["pending wait: answered while a member is pending"] = answered_within(m.clients[m.leader], 1.5)
    m.send_join(2)
    out["pending wait: generation with the pending member"] = sorted(m.receive_join(i) for i in range(3))
    m.close()

    # A pending member that never rejoins (a librdkafka consumer whose subscription changed while its first
    # JoinGroup was in flight discards the MEMBER_ID_REQUIRED answer and joins again with an empty id) holds the
    # next join phase until its session times out, on Kafka 4.4 as here (librdkafka's 0045_subscribe_many_updates
    # shows ~3 s stalls on both).
    m = Members("fg-pending-abandoned", 2, False)
    session = 6_000  # group.min.session.timeout.ms
    out["abandoned: member ids"] = [m.member_id_required(1, session), m.member_id_required(0)]
    abandoned_at = time.monotonic()
    out["abandoned: first generation"] = m.join_all([0])
    out["abandoned: leader syncs"] = m.sync(0, leader=True)
    m.send_join(0)
    out["abandoned: rejoin answered at once"] = answered_within(m.clients[0], 1.0)
    out["abandoned: second generation"] = m.receive_join(0)
    out["abandoned: held until its session expired"] = time.monotonic() - abandoned_at >= 0.95 * session / 1000
    out["abandoned: its late join"] = m.clients[1].request(join_request(m.group, m.ids[1], session_timeout_ms=session),
                                                           7).error_code
    m.close()
    return out


def transaction_end_window(c: RawClient) -> Observations:
    """EndTxn is answered once PrepareCommit/PrepareAbort is written and the markers follow (Kafka's
    TransactionMarkerChannelManager). How long that window stays open differs (one node writes its markers in
    a few ms, a cluster sends them over the network), so what is judged is what a client can see in it: the
    answer's producer id and epoch (v5), the Prepare or Complete state with the bumped epoch straight after,
    retried EndTxns answered CONCURRENT_TRANSACTIONS until the transaction completes and then as a success,
    and the end state: the transaction completed, its records below the last stable offset."""
    create(c, topic("txn-w"))
    c.wait_for_topics("txn-w")
    out: Observations = {}

    def describe(txn_id: str, epoch: int) -> tuple:
        st = c.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0]
        partitions = sorted((t.topic, tuple(t.partitions)) for t in st.topics or [])
        # The Prepare state still names the partitions it sends markers to; a completed one names none.
        shown = partitions == [("txn-w", (0,))] if st.transaction_state.startswith("Prepare") else partitions == []
        return st.error_code, st.transaction_state.removeprefix("Prepare").removeprefix("Complete"), \
            st.producer_epoch - epoch, shown

    def until_done(txn_id: str, request, version: int, pid: int, epoch: int) -> tuple:
        """Retry ``request`` (an EndTxn) while it answers CONCURRENT_TRANSACTIONS; whether each answer agreed
        with the state described just before it (CONCURRENT_TRANSACTIONS only while a Prepare state may still
        be there), the last answer and the state then. Whether CONCURRENT_TRANSACTIONS was seen at all is timing."""
        consistent, deadline = True, time.monotonic() + 30
        while True:
            state = c.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0]
            r = c.request(request, version)
            if r.error_code == ErrorCode.CONCURRENT_TRANSACTIONS and not state.transaction_state.startswith("Prepare"):
                consistent = False
            if r.error_code != ErrorCode.CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
                last = (r.error_code, r.producer_id == pid, r.producer_epoch - epoch) if version >= 5 else r.error_code
                return consistent, last, describe(txn_id, epoch)
            time.sleep(0.02)

    for txn_id, version, commit in (("dtxw2", 5, True), ("dtxw1", 3, False)):
        retried(c, FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id]), 4,
                lambda r: r.coordinators[0].error_code)
        init = retried(c, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), 5,
                       lambda r: r.error_code)
        pid, epoch = init.producer_id, init.producer_epoch
        if version < 5:
            add = retried(c, AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=txn_id, v3_and_below_producer_id=pid,
                v3_and_below_producer_epoch=epoch, v3_and_below_topics=[AddPartitionsToTxnTopic(
                    name="txn-w", partitions=[0])]), 3,
                lambda r: r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)
            out[f"{txn_id} add"] = add.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
            out[f"{txn_id} produce"] = produced(c, "txn-w", producer_batch(pid, epoch, 0, transactional=True),
                                                txn_id)[0]
        else:
            request = ProduceRequest(acks=-1, timeout_ms=5000, transactional_id=txn_id, topic_data=[TopicProduceData(
                name="txn-w", partition_data=[PartitionProduceData(
                    index=0, records=producer_batch(pid, epoch, 0, transactional=True))])])
            produce = retried(c, request, 12, lambda r: r.responses[0].partition_responses[0].error_code)
            out[f"{txn_id} produce adds"] = produce.responses[0].partition_responses[0].error_code
        end = EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch, committed=commit)
        r = c.request(end, version)
        out[f"{txn_id} end"] = (r.error_code, r.producer_id == pid, r.producer_epoch - epoch) if version >= 5 \
            else r.error_code
        out[f"{txn_id} describe right after"] = describe(txn_id, epoch)
        out[f"{txn_id} retried end until done"] = until_done(txn_id, end, version, pid, epoch)
        listed = c.request(ListTransactionsRequest(state_filters=["CompleteCommit", "CompleteAbort"],
                                                   producer_id_filters=[pid]), 1)
        out[f"{txn_id} listed completed"] = sorted((t.transactional_id, t.transaction_state)
                                                   for t in listed.transaction_states)
    out["end offsets"] = end_offsets(c, "txn-w")
    code, lso, aborted, has_records = fetch_committed(c, "txn-w")
    out["fetch committed"] = (code, lso, [first for _, first in aborted], has_records)
    return out


def read_committed_at_the_last_stable_offset(c: RawClient) -> Observations:
    """read_committed fetches below, at and past the last stable offset while an aborted transaction spans it (its
    batches at 0 and 2, another producer's open transaction at 1): at and past it nothing is read, and Kafka's
    LocalLog.read answers no aborted transactions for a read with nothing to read."""
    create(c, topic("txn-lso"))
    c.wait_for_topics("txn-lso")
    producers: dict[str, tuple[int, int]] = {}
    for txn_id in ("dtx-aborted", "dtx-open"):
        retried(c, FindCoordinatorRequest(key_type=1, coordinator_keys=[txn_id]), 4,
                lambda r: r.coordinators[0].error_code)
        init = retried(c, InitProducerIdRequest(transactional_id=txn_id, transaction_timeout_ms=60_000), 5,
                       lambda r: r.error_code)
        producers[txn_id] = (init.producer_id, init.producer_epoch)

    def produce(txn_id: str, seq: int) -> tuple[int, int]:
        pid, epoch = producers[txn_id]
        request = ProduceRequest(acks=-1, timeout_ms=5000, transactional_id=txn_id, topic_data=[TopicProduceData(
            name="txn-lso", partition_data=[PartitionProduceData(
                index=0, records=producer_batch(pid, epoch, seq, count=1, transactional=True))])])
        p = retried(c, request, 12, lambda r: r.responses[0].partition_responses[0].error_code)
        return p.responses[0].partition_responses[0].error_code, p.responses[0].partition_responses[0].base_offset

    def end(txn_id: str, commit: bool) -> int:
        pid, epoch = producers[txn_id]
        code = retried(c, EndTxnRequest(transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
                                        committed=commit), 5, lambda r: r.error_code).error_code
        deadline = time.monotonic() + 10  # Kafka answers once the decision is written, the markers follow
        while c.request(DescribeTransactionsRequest(transactional_ids=[txn_id]), 0).transaction_states[0] \
                .transaction_state.startswith("Prepare") and time.monotonic() < deadline:
            time.sleep(0.05)
        return code

    def fetch(offset: int) -> tuple:
        request = FetchRequest(max_wait_ms=0, min_bytes=0, max_bytes=1 << 20, isolation_level=1, topics=[FetchTopic(
            topic="txn-lso", partitions=[FetchPartition(partition=0, fetch_offset=offset,
                                                         partition_max_bytes=1 << 20)])])
        p = c.request(request, 12).responses[0].partitions[0]
        aborted = None if p.aborted_transactions is None else sorted(
            (a.producer_id == producers["dtx-aborted"][0], a.first_offset) for a in p.aborted_transactions)
        return p.error_code, p.high_watermark, p.last_stable_offset, aborted, len(p.records or b"") > 0

    out: Observations = {"writes": [produce("dtx-aborted", 0), produce("dtx-open", 0), produce("dtx-aborted", 1)]}
    out["abort"] = end("dtx-aborted", False)
    for offset in (0, 1, 2, 4):  # below the last stable offset, at it, past it, at the log end
        out[f"fetch at {offset}"] = fetch(offset)
    out["abort the open one"] = end("dtx-open", False)
    out["fetch at 1 after"] = fetch(1)
    return out


SCENARIOS: dict[str, Callable[[RawClient], Observations]] = {
    "api_versions": api_versions, "metadata": metadata, "create_topics": create_topics,
    "topic_configs": topic_configs, "partitions_admin": partitions_admin, "produce_and_fetch": produce_and_fetch,
    "idempotence": idempotence, "transactions": transactions, "transactions_v2": transactions_v2,
    "classic_groups": classic_groups, "consumer_groups": consumer_groups, "fetch_paths": fetch_paths,
    "admin_misc": admin_misc, "protocol_edges": protocol_edges, "client_quotas": client_quotas,
    "broker_configs": broker_configs, "record_errors": record_errors, "listener_configs": listener_configs,
    "group_configs": group_configs, "classic_first_generation": classic_first_generation,
    "transaction_end_window": transaction_end_window,
    "read_committed_at_the_last_stable_offset": read_committed_at_the_last_stable_offset,
}


@pytest.fixture(scope="module")
def judged_broker(tmp_path_factory):
    """A pykbroker with Kafka's defaults, fresh for this module (no topics from other tests)."""
    from pykbroker.testing import BrokerProcess
    with BrokerProcess(tmp_path_factory.mktemp("differential")) as b:
        yield b


@pytest.mark.parametrize(("mode", "scenario"), differential_params(list(SCENARIOS), (), tuple(SCENARIOS),
                                                         single_slow=("classic_first_generation",)))
def test_pykbroker_observes_what_kafka_observes(mode, scenario, request):
    expected, got = observe_both(request, mode, SCENARIOS[scenario], "kafka_judge", "judged_broker")
    assert_same_observations(mode, scenario, expected, got)
