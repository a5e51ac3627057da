"""Share-group APIs over real sockets against a broker process: sessions, acquisition, acknowledgement,
admin APIs, the share.version switch, and state surviving kill -9."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from pykbroker.testing import BrokerProcess, RawClient
from wire import ErrorCode, build_simple_batch
from wire.messages import (
    AlterShareGroupOffsetsRequest,
    CreateTopicsRequest,
    DeleteGroupsRequest,
    DescribeShareGroupOffsetsRequest,
    IncrementalAlterConfigsRequest,
    ListGroupsRequest,
    ProduceRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    UpdateFeaturesRequest,
)
from wire.messages.alter_share_group_offsets_request import (
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from wire.messages.create_topics_request import CreatableTopic, CreatableTopicConfig
from wire.messages.describe_share_group_offsets_request import DescribeShareGroupOffsetsRequestGroup
from wire.messages.incremental_alter_configs_request import AlterableConfig, AlterConfigsResource
from wire.messages.produce_request import PartitionProduceData, TopicProduceData
from wire.messages.share_acknowledge_request import AcknowledgementBatch as AckBatch
from wire.messages.share_acknowledge_request import AcknowledgePartition, AcknowledgeTopic
from wire.messages.share_fetch_request import AcknowledgementBatch, FetchPartition, FetchTopic
from wire.messages.update_features_request import FeatureUpdateKey

GROUP = 32  # ConfigResource.Type.GROUP
ACCEPT, RELEASE, REJECT = 1, 2, 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with BrokerProcess(tmp_path_factory.mktemp("share")) as b:
        yield b


def enable(c: RawClient, level: int = 2) -> None:
    """Finalize share.version at ``level`` (2 on a new cluster, as Kafka 4.4; 0 turns share groups off)."""
    r = c.request(UpdateFeaturesRequest(timeout_ms=5000, feature_updates=[
        FeatureUpdateKey(feature="share.version", max_version_level=level, upgrade_type=1 if level else 2)]), 1)
    assert r.error_code == ErrorCode.NONE


def create_topic(c: RawClient, name: str, partitions: int = 1) -> uuid.UUID:
    c.request(CreateTopicsRequest(topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)],
                                  timeout_ms=5000), 7)
    return c.wait_for_topics(name)[name].topic_id


def produce(c: RawClient, topic: str, count: int, partition: int = 0) -> None:
    batch = build_simple_batch([b"v%d" % i for i in range(count)], timestamp=int(time.time() * 1000))
    r = c.request(ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[TopicProduceData(name=topic, partition_data=[
        PartitionProduceData(index=partition, records=batch)])]), 9)
    assert r.responses[0].partition_responses[0].error_code == ErrorCode.NONE


def earliest(c: RawClient, group: str) -> None:
    """share.auto.offset.reset=earliest for ``group`` (the default, latest, is the log end at the first fetch)."""
    r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
        resource_type=GROUP, resource_name=group, configs=[
            AlterableConfig(name="share.auto.offset.reset", config_operation=0, value="earliest")])]), 1)
    assert r.responses[0].error_code == ErrorCode.NONE, r


def join(c: RawClient, group: str, topic: str, member: str | None = None):
    """A member joins and heartbeats until it is assigned partitions (Kafka 4.4 assigns a share-partition once its
    state is initialized, which the join starts); answers (member id, the assigning heartbeat's answer)."""
    earliest(c, group)
    member = member or uuid.uuid4().hex[:22]
    r = c.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                                             subscribed_topic_names=[topic]), 1)
    assert r.error_code == ErrorCode.NONE, r
    deadline = time.monotonic() + 30
    while not (r.assignment and r.assignment.topic_partitions) and time.monotonic() < deadline:
        time.sleep(0.05)
        r = c.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=r.member_epoch), 1)
        assert r.error_code == ErrorCode.NONE, r
    assert r.assignment and r.assignment.topic_partitions, f"{member} was not assigned {topic} in 30 s"
    return member, r


def fetch(c: RawClient, group: str, member: str, epoch: int, topic_id, acks=None, wait_ms: int = 200,
          partitions=(0,), version: int = 2, max_records: int = 500, min_bytes: int = 1):
    parts = [FetchPartition(partition_index=p, acknowledgement_batches=[
        AcknowledgementBatch(first_offset=f, last_offset=la, acknowledge_types=t) for f, la, t in (acks or {}).get(p, [])])
        for p in partitions]
    return c.request(ShareFetchRequest(group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=wait_ms,
                                       min_bytes=min_bytes, max_bytes=1 << 20, max_records=max_records, batch_size=500,
                                       topics=[FetchTopic(topic_id=topic_id, partitions=parts)]), version)


def acquired(response) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count) for t in response.responses for p in t.partitions
            for a in p.acquired_records]


def test_share_apis_are_refused_while_share_version_is_not_finalized(tmp_path):
    with BrokerProcess(tmp_path) as b, RawClient(b.bootstrap) as c:
        enable(c, 0)  # a new cluster finalizes share.version 2, as Kafka 4.4: disabled, share groups are off
        r = c.request(ShareGroupHeartbeatRequest(group_id="g", member_id="m" * 22, member_epoch=0,
                                                 subscribed_topic_names=["t"]), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        r = c.request(ShareFetchRequest(group_id="g", member_id="m" * 22), 1)
        assert r.error_code == ErrorCode.UNSUPPORTED_VERSION
        enable(c)
        create_topic(c, "t")
        first = c.request(ShareGroupHeartbeatRequest(group_id="g", member_id="f" * 22, member_epoch=0,
                                                     subscribed_topic_names=["t"]), 1)
        assert (first.member_epoch, first.assignment.topic_partitions) == (2, [])  # t-0 is being initialized
        _, r = join(c, "g", "t", "f" * 22)  # assigned once initialized, at the epoch that initialization bumped
        assert r.member_epoch == 3 and r.assignment.topic_partitions[0].partitions == [0]


def test_records_go_to_one_member_and_acknowledgements_settle_them(broker):
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "acks")
        m1, _ = join(c, "g-acks", "acks")
        m2, _ = join(c, "g-acks", "acks")
        produce(c, "acks", 5)
        assert acquired(fetch(c, "g-acks", m1, 0, tid)) == [(0, 4, 1)]
        assert acquired(fetch(c, "g-acks", m2, 0, tid, wait_ms=50)) == []
        # m1 accepts 0-1, releases 2, rejects 3-4 (alone: a ShareFetch would take 2 back at once);
        # m2 then gets 2 with a delivery count of 2
        r = c.request(ShareAcknowledgeRequest(group_id="g-acks", member_id=m1, share_session_epoch=1, topics=[
            AcknowledgeTopic(topic_id=tid, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                AckBatch(first_offset=0, last_offset=4, acknowledge_types=[ACCEPT, ACCEPT, RELEASE, REJECT, REJECT])])])]),
            1)
        assert r.responses[0].partitions[0].error_code == ErrorCode.NONE
        assert acquired(fetch(c, "g-acks", m2, 1, tid)) == [(2, 2, 2)]
        # acknowledging what another member holds is INVALID_RECORD_STATE
        r = c.request(ShareAcknowledgeRequest(group_id="g-acks", member_id=m1, share_session_epoch=2, topics=[
            AcknowledgeTopic(topic_id=tid, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                AckBatch(first_offset=2, last_offset=2, acknowledge_types=[ACCEPT])])])]), 1)
        assert r.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
        r = c.request(ShareAcknowledgeRequest(group_id="g-acks", member_id=m2, share_session_epoch=2, topics=[
            AcknowledgeTopic(topic_id=tid, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                AckBatch(first_offset=2, last_offset=2, acknowledge_types=[ACCEPT])])])]), 1)
        assert r.error_code == ErrorCode.NONE and r.responses[0].partitions[0].error_code == ErrorCode.NONE
        offsets = c.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id="g-acks", topics=None)]), 1)
        part = offsets.groups[0].topics[0].partitions[0]
        # the persisted start offset lags by one write, as Kafka's: 2 is where the last write started
        assert (part.start_offset, part.lag) == (2, 0)


def test_share_session_epochs(broker):
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "sessions")
        m, _ = join(c, "g-sessions", "sessions")
        assert fetch(c, "g-sessions", m, 3, tid).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert fetch(c, "g-sessions", m, 0, tid, wait_ms=0).error_code == ErrorCode.NONE
        assert fetch(c, "g-sessions", m, 5, tid).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert fetch(c, "g-sessions", m, 1, tid, wait_ms=0).error_code == ErrorCode.NONE
        r = fetch(c, "g-sessions", m, 0, tid, acks={0: [(0, 0, [ACCEPT])]})
        assert r.error_code == ErrorCode.INVALID_REQUEST
        r = c.request(ShareAcknowledgeRequest(group_id="g-sessions", member_id=m, share_session_epoch=0), 1)
        assert r.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        assert fetch(c, "g-sessions", m, -1, tid).error_code == ErrorCode.NONE
        assert fetch(c, "g-sessions", m, 1, tid).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def test_closing_the_session_releases_what_the_member_holds(broker):
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "close")
        m1, _ = join(c, "g-close", "close")
        m2, _ = join(c, "g-close", "close")
        produce(c, "close", 3)
        assert acquired(fetch(c, "g-close", m1, 0, tid)) == [(0, 2, 1)]
        fetch(c, "g-close", m1, -1, tid, acks={0: [(0, 0, [ACCEPT])]})
        assert acquired(fetch(c, "g-close", m2, 0, tid)) == [(1, 2, 2)]


def test_record_limit_mode_and_describe_list_reset_delete(broker):
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "admin")
        m, hb = join(c, "g-admin", "admin")
        produce(c, "admin", 10)
        assert acquired(fetch(c, "g-admin", m, 0, tid, max_records=3)) == [(0, 9, 1)]  # whole batch
        described = c.request(ShareGroupDescribeRequest(group_ids=["g-admin", "nope"]), 1).groups
        assert (described[0].group_state, described[0].assignor_name, len(described[0].members)) == ("Stable", "simple", 1)
        assert described[1].error_code == ErrorCode.GROUP_ID_NOT_FOUND
        listed = c.request(ListGroupsRequest(types_filter=["share"]), 5).groups
        assert [(g.group_id, g.group_type, g.group_state) for g in listed if g.group_id == "g-admin"] == [
            ("g-admin", "share", "Stable")]
        alter = AlterShareGroupOffsetsRequest(group_id="g-admin", topics=[AlterShareGroupOffsetsRequestTopic(
            topic_name="admin", partitions=[AlterShareGroupOffsetsRequestPartition(partition_index=0, start_offset=7)])])
        assert c.request(alter, 0).error_code == ErrorCode.NON_EMPTY_GROUP
        assert c.request(DeleteGroupsRequest(groups_names=["g-admin"]), 2).results[0].error_code == ErrorCode.NON_EMPTY_GROUP
        c.request(ShareGroupHeartbeatRequest(group_id="g-admin", member_id=m, member_epoch=-1), 1)
        r = c.request(alter, 0)
        assert r.error_code == ErrorCode.NONE and r.responses[0].partitions[0].error_code == ErrorCode.NONE
        offsets = c.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id="g-admin", topics=None)]), 1)
        assert offsets.groups[0].topics[0].partitions[0].start_offset == 7
        m2, _ = join(c, "g-admin", "admin")
        assert acquired(fetch(c, "g-admin", m2, 0, tid, max_records=2, version=2)) == [(7, 9, 1)]
        c.request(ShareGroupHeartbeatRequest(group_id="g-admin", member_id=m2, member_epoch=-1), 1)
        assert c.request(DeleteGroupsRequest(groups_names=["g-admin"]), 2).results[0].error_code == ErrorCode.NONE
        offsets = c.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id="g-admin", topics=None)]), 1)
        # a group that does not exist has no offsets: no error, no topics (Kafka 4.4)
        assert (offsets.groups[0].error_code, offsets.groups[0].topics) == (ErrorCode.NONE, [])


def test_acknowledged_state_survives_kill_9(tmp_path):
    """A RELEASE piggybacked on a ShareFetch with max_wait_ms 0 is not acquired again by that same fetch (Kafka
    4.4 answers it with no records: its acknowledgement and acquisition start together and the release counts
    once persisted), so after kill -9 the record comes back with delivery count 2, as on Kafka 4.4."""
    b = BrokerProcess(tmp_path).start()
    try:
        with RawClient(b.bootstrap) as c:
            enable(c)
            tid = create_topic(c, "durable")
            m, _ = join(c, "g-durable", "durable")
            produce(c, "durable", 6)
            assert acquired(fetch(c, "g-durable", m, 0, tid)) == [(0, 5, 1)]
            r = fetch(c, "g-durable", m, 1, tid, acks={0: [(0, 5, [ACCEPT, REJECT, RELEASE, ACCEPT, ACCEPT, ACCEPT])]},
                      wait_ms=0)
            assert r.responses[0].partitions[0].acknowledge_error_code == ErrorCode.NONE
            assert acquired(r) == []
        b.restart(hard=True)
        with RawClient(b.bootstrap) as c:
            m = "n" * 22
            r = c.request(ShareGroupHeartbeatRequest(group_id="g-durable", member_id=m, member_epoch=0,
                                                     subscribed_topic_names=["durable"]), 1)
            # the group's initialized share-partitions (ShareGroupStatePartitionMetadata) survived: the new member is
            # assigned them without a new initialization, once share.assignment.interval.ms lets the group reassign
            # (the member from before the kill is still in it)
            deadline = time.monotonic() + 10
            while not (r.assignment and r.assignment.topic_partitions) and time.monotonic() < deadline:
                time.sleep(0.1)
                r = c.request(ShareGroupHeartbeatRequest(group_id="g-durable", member_id=m,
                                                         member_epoch=r.member_epoch), 1)
                assert r.error_code == ErrorCode.NONE, r
            assert r.assignment and [t.partitions for t in r.assignment.topic_partitions] == [[0]], r
            # only the released record comes back, with its delivery count
            deadline = time.monotonic() + 10
            r = fetch(c, "g-durable", m, 0, tid, wait_ms=1000)
            epoch = 1
            while not acquired(r) and time.monotonic() < deadline:
                r = fetch(c, "g-durable", m, epoch, tid, wait_ms=1000)
                epoch += 1
            assert acquired(r) == [(2, 2, 2)], r
    finally:
        b.close()


def test_a_waiting_share_fetch_acquires_what_its_own_acknowledgements_release(broker):
    """With max_wait_ms > 0 the fetch finds nothing at first, waits, and gets the record its piggybacked RELEASE
    made available, delivery count raised: Kafka 4.4 answers [(2, 2, 2)] here too."""
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "release-wait")
        m, _ = join(c, "g-release-wait", "release-wait")
        produce(c, "release-wait", 6)
        assert acquired(fetch(c, "g-release-wait", m, 0, tid)) == [(0, 5, 1)]
        r = fetch(c, "g-release-wait", m, 1, tid, acks={0: [(0, 5, [ACCEPT, ACCEPT, RELEASE, ACCEPT, ACCEPT, ACCEPT])]},
                  wait_ms=1000)
        assert r.responses[0].partitions[0].acknowledge_error_code == ErrorCode.NONE
        assert acquired(r) == [(2, 2, 2)]


def test_a_share_fetch_short_of_min_bytes_answers_every_record_it_acquired(broker):
    """min_bytes beyond what the log holds: the fetch waits max_wait_ms and answers the records there, and those
    appended while it waited, each once with delivery count 1 (librdkafka's 0180 with fetch.min.bytes=INT_MAX,
    as on Kafka 4.4, which acquires only when it answers). pykbroker dropped from its answer what an earlier pass
    of the wait had acquired, leaving it locked to the member until its lock expired."""
    def offsets(response) -> list[tuple[int, int]]:
        return [(o, n) for first, last, n in acquired(response) for o in range(first, last + 1)]

    with RawClient(broker.bootstrap) as c, RawClient(broker.bootstrap) as other:
        enable(c)
        tid = create_topic(c, "min-bytes")
        m, _ = join(c, "g-min-bytes", "min-bytes")
        produce(c, "min-bytes", 1)
        assert offsets(fetch(c, "g-min-bytes", m, 0, tid, wait_ms=300, min_bytes=1 << 30)) == [(0, 1)]
        produce(c, "min-bytes", 1)
        later = threading.Timer(0.3, produce, (other, "min-bytes", 2))
        later.start()
        try:
            r = fetch(c, "g-min-bytes", m, 1, tid, wait_ms=1500, min_bytes=1 << 30)
        finally:
            later.join()
        assert offsets(r) == [(1, 1), (2, 1), (3, 1)]


def test_group_configs_are_checked_as_kafka_checks_them(broker):
    with RawClient(broker.bootstrap) as c:
        def alter(name: str, value: str):
            r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=GROUP, resource_name="g-configs", configs=[
                    AlterableConfig(name=name, config_operation=0, value=value)])]), 1)
            return r.responses[0].error_code, r.responses[0].error_message
        assert alter("share.auto.offset.reset", "by_duration:PT1H") == (ErrorCode.NONE, None)
        assert alter("share.auto.offset.reset", "sometimes")[0] == ErrorCode.INVALID_CONFIG
        assert alter("share.record.lock.duration.ms", "1000") == (
            ErrorCode.INVALID_CONFIG,
            "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.")
        assert alter("no.such.config", "1") == (ErrorCode.INVALID_CONFIG, "Unknown group config name: no.such.config")


def test_a_closed_connection_ends_its_share_sessions_and_releases_their_records(broker):
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "disconnect")
        m2, _ = join(c, "g-disconnect", "disconnect")
        produce(c, "disconnect", 4)
        with RawClient(broker.bootstrap) as gone:
            m1, _ = join(gone, "g-disconnect", "disconnect")
            assert acquired(fetch(gone, "g-disconnect", m1, 0, tid)) == [(0, 3, 1)]
        # no lock duration to wait for: the records come back as soon as the connection is gone
        deadline = time.monotonic() + 10
        got = []
        epoch = 0
        while not got and time.monotonic() < deadline:
            got = acquired(fetch(c, "g-disconnect", m2, epoch, tid, wait_ms=500))
            epoch += 1
        assert got == [(0, 3, 2)]


def test_a_group_keeps_its_members_and_epochs_after_kill_9(tmp_path):
    """Membership is in __consumer_offsets (Kafka 4.2's share-group records): after a crash the group is listed and
    described as before, and its member goes on heartbeating with its epoch, without rejoining."""
    b = BrokerProcess(tmp_path).start()
    try:
        with RawClient(b.bootstrap) as c:
            enable(c)
            tid = create_topic(c, "relisted")
            m, _ = join(c, "g-relisted", "relisted")
            fetch(c, "g-relisted", m, 0, tid, wait_ms=0)
            before = c.request(ShareGroupDescribeRequest(group_ids=["g-relisted"]), 1).groups[0]
        b.restart(hard=True)
        with RawClient(b.bootstrap) as c:
            listed = c.request(ListGroupsRequest(types_filter=["share"]), 5).groups
            assert [(g.group_id, g.group_state) for g in listed] == [("g-relisted", "Stable")]
            after = c.request(ShareGroupDescribeRequest(group_ids=["g-relisted"]), 1).groups[0]
            assert after == before
            r = c.request(ShareGroupHeartbeatRequest(group_id="g-relisted", member_id=m,
                                                     member_epoch=before.members[0].member_epoch), 1)
            assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, before.members[0].member_epoch)
            c.request(ShareGroupHeartbeatRequest(group_id="g-relisted", member_id=m, member_epoch=-1), 1)
        b.restart(hard=True)
        with RawClient(b.bootstrap) as c:  # the member's leave was persisted too
            described = c.request(ShareGroupDescribeRequest(group_ids=["g-relisted"]), 1).groups[0]
            assert (described.error_code, described.group_state, described.members) == (ErrorCode.NONE, "Empty", [])
            assert described.group_epoch == before.group_epoch + 1
    finally:
        b.close()


def test_group_configs_are_described(broker):
    from wire.messages import DescribeConfigsRequest
    from wire.messages.describe_configs_request import DescribeConfigsResource
    with RawClient(broker.bootstrap) as c:
        earliest(c, "g-described")
        r = c.request(DescribeConfigsRequest(resources=[DescribeConfigsResource(
            resource_type=GROUP, resource_name="g-described", configuration_keys=None)]), 4)
        entries = {e.name: (e.value, e.config_source) for e in r.results[0].configs}
        assert entries["share.auto.offset.reset"] == ("earliest", 8)
        assert entries["share.record.lock.duration.ms"] == ("30000", 5)


def test_group_share_enable_turns_share_groups_on_at_start(tmp_path):
    with BrokerProcess(tmp_path, overrides={"group.share.enable": "true"}) as b, RawClient(b.bootstrap) as c:
        create_topic(c, "t")
        _, r = join(c, "g", "t")
        assert r.error_code == ErrorCode.NONE


def test_deleting_a_topic_deletes_its_share_state(broker):
    from wire.messages import DeleteTopicsRequest
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "doomed")
        m, _ = join(c, "g-doomed", "doomed")
        produce(c, "doomed", 2)
        assert acquired(fetch(c, "g-doomed", m, 0, tid)) == [(0, 1, 1)]
        c.request(DeleteTopicsRequest(topic_names=["doomed"], timeout_ms=5000), 5)
        offsets = c.request(DescribeShareGroupOffsetsRequest(groups=[DescribeShareGroupOffsetsRequestGroup(
            group_id="g-doomed", topics=None)]), 1)
        assert offsets.groups[0].topics == []


def test_a_consumer_group_id_is_not_a_share_group(broker):
    from wire.messages import OffsetCommitRequest
    from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
    with RawClient(broker.bootstrap) as c:
        enable(c)
        create_topic(c, "taken")
        c.request(OffsetCommitRequest(group_id="g-taken", generation_id_or_member_epoch=-1, member_id="", topics=[
            OffsetCommitRequestTopic(name="taken", partitions=[
                OffsetCommitRequestPartition(partition_index=0, committed_offset=0)])]), 8)
        r = c.request(ShareGroupHeartbeatRequest(group_id="g-taken", member_id="m" * 22, member_epoch=0,
                                                 subscribed_topic_names=["taken"]), 1)
        assert (r.error_code, r.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group g-taken is not a share group.")


def _dead_letters(c: RawClient, topic: str, want: int) -> list[tuple[bytes | None, bytes | None, dict]]:
    """(key, value, headers) of the first ``want`` records of ``topic`` partition 0, waiting up to 15 s."""
    from wire import decode_records, iter_batch_headers
    from wire.messages import FetchRequest
    from wire.messages.fetch_request import FetchPartition as LogFetchPartition
    from wire.messages.fetch_request import FetchTopic as LogFetchTopic

    deadline = time.monotonic() + 15
    while True:
        r = c.request(FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0,
                                   topics=[LogFetchTopic(topic=topic, partitions=[LogFetchPartition(
                                       partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]), 12)
        data = r.responses[0].partitions[0].records or b""
        out = [(rec.key, rec.value, dict(rec.headers)) for pos, _ in iter_batch_headers(data)
               for rec in decode_records(data, pos)[1]]
        if len(out) >= want or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def test_rejected_and_exhausted_records_go_to_the_dead_letter_queue(broker):
    """KIP-1191 with share.version 2: a REJECTed record and one released at the delivery count limit (5) are
    written to the group's errors.deadletterqueue.topic.name, with Kafka 4.4's headers and (copy.record.enable)
    the original key and value; a group whose DLQ topic does not exist, with auto-creation off, writes nothing."""
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "dlq-src")
        r = c.request(CreateTopicsRequest(topics=[CreatableTopic(name="dlq.g-dlq", num_partitions=1, replication_factor=1,
                                                                 configs=[CreatableTopicConfig(
                                                                     name="errors.deadletterqueue.group.enable",
                                                                     value="true")])], timeout_ms=5000), 7)
        assert r.topics[0].error_code == ErrorCode.NONE
        for group, dlq in (("g-dlq", "dlq.g-dlq"), ("g-nodlq", "dlq.missing")):
            r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
                resource_type=GROUP, resource_name=group, configs=[
                    AlterableConfig(name="errors.deadletterqueue.topic.name", config_operation=0, value=dlq),
                    AlterableConfig(name="errors.deadletterqueue.copy.record.enable", config_operation=0,
                                    value="true")])]), 1)
            assert r.responses[0].error_code == ErrorCode.NONE
        produce(c, "dlq-src", 3)
        for group in ("g-dlq", "g-nodlq"):
            member, _ = join(c, group, "dlq-src")
            assert acquired(fetch(c, group, member, 0, tid)) == [(0, 2, 1)]
            epoch = 1
            acks = [(0, 2, [ACCEPT, REJECT, RELEASE])]
            for count in range(2, 6):  # offset 2 comes back until its fifth delivery is released
                assert acquired(fetch(c, group, member, epoch, tid, acks={0: acks})) == [(2, 2, count)]
                epoch += 1
                acks = [(2, 2, [RELEASE])]
            r = c.request(ShareAcknowledgeRequest(group_id=group, member_id=member, share_session_epoch=epoch, topics=[
                AcknowledgeTopic(topic_id=tid, partitions=[AcknowledgePartition(partition_index=0, acknowledgement_batches=[
                    AckBatch(first_offset=2, last_offset=2, acknowledge_types=[RELEASE])])])]), 1)
            assert r.responses[0].partitions[0].error_code == ErrorCode.NONE
        letters = _dead_letters(c, "dlq.g-dlq", 2)
        assert [(k, v) for k, v, _ in letters] == [(None, b"v1"), (None, b"v2")]
        assert [h for _, _, h in letters] == [
            {"__dlq.errors.topic": b"dlq-src", "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"1",
             "__dlq.errors.group": b"g-dlq", "__dlq.errors.delivery.count": b"1",
             "__dlq.errors.message": b"Offset rejected by client."},
            {"__dlq.errors.topic": b"dlq-src", "__dlq.errors.partition": b"0", "__dlq.errors.offset": b"2",
             "__dlq.errors.group": b"g-dlq", "__dlq.errors.delivery.count": b"5",
             "__dlq.errors.message": b"Offset delivery count exceeded the threshold."}]
        from wire.messages import MetadataRequest
        assert "dlq.missing" not in {t.name for t in c.request(MetadataRequest(topics=None), 12).topics}


def test_a_groups_record_lock_and_delivery_count_limits_bound_its_share_partitions(broker):
    """share.partition.max.record.locks and share.delivery.count.limit set on the group apply to its
    share-partitions, not the broker's group.share.* values (they were stored and described, never applied:
    confluent-kafka-python's test_partition_max_record_locks_caps_in_flight got 200 records in one poll under a
    cap of 100, as Kafka 4.4 never gives)."""
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "limits")
        r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=GROUP, resource_name="g-limits", configs=[
                AlterableConfig(name="share.partition.max.record.locks", config_operation=0, value="100"),
                AlterableConfig(name="share.delivery.count.limit", config_operation=0, value="2")])]), 1)
        assert r.responses[0].error_code == ErrorCode.NONE, r
        m, _ = join(c, "g-limits", "limits")
        for _ in range(3):
            produce(c, "limits", 50)
        # whole batches while the share-partition holds fewer than 100 records: 0-99, not the third batch, in one
        # range of acquired records as Kafka answers consecutive batches
        assert acquired(fetch(c, "g-limits", m, 0, tid)) == [(0, 99, 1)]
        # released, the records come back with delivery count 2; released again at the limit of 2 they are archived
        assert acquired(fetch(c, "g-limits", m, 1, tid, acks={0: [(0, 99, [RELEASE])]})) == [(0, 99, 2)]
        assert acquired(fetch(c, "g-limits", m, 2, tid, acks={0: [(0, 99, [RELEASE])]})) == [(100, 149, 1)]


def test_a_member_that_resubscribes_loses_the_topics_it_left_at_once(broker):
    """A heartbeat naming a new subscription answers the member's assignment without the topics it left, at the same
    member epoch, while the next target assignment waits for share.assignment.interval.ms (KIP-1263), as Kafka 4.4
    answers. pykbroker kept the old assignment until then: confluent-kafka-python's
    test_resubscribe_to_different_topic got records of the topic it had left."""
    with RawClient(broker.bootstrap) as c:
        enable(c)
        create_topic(c, "resub-a")
        create_topic(c, "resub-b")
        m, r = join(c, "g-resub", "resub-a")
        epoch = r.member_epoch
        r = c.request(IncrementalAlterConfigsRequest(resources=[AlterConfigsResource(
            resource_type=GROUP, resource_name="g-resub", configs=[
                AlterableConfig(name="share.assignment.interval.ms", config_operation=0, value="15000")])]), 1)
        assert r.responses[0].error_code == ErrorCode.NONE, r
        r = c.request(ShareGroupHeartbeatRequest(group_id="g-resub", member_id=m, member_epoch=epoch,
                                                 subscribed_topic_names=["resub-b"]), 1)
        assert r.error_code == ErrorCode.NONE, r
        assert (r.member_epoch, r.assignment.topic_partitions) == (epoch, [])


def test_a_share_consumer_over_its_consumer_byte_rate_is_told_to_wait(broker):
    """consumer_byte_rate binds a share consumer: the bytes ShareFetch answers count and over the quota the answer
    is empty with a throttle time, as Kafka 4.4's (share_fetch_throttled in test_differential_kafka44): what was
    acquired stays locked to the member. pykbroker once never throttled ShareFetch (confluent-kafka-python's
    throttle_cb tests, which pass on Kafka 4.4, saw no throttle event), then answered the records with it."""
    from wire.messages import AlterClientQuotasRequest
    from wire.messages.alter_client_quotas_request import EntityData, EntryData, OpData
    with RawClient(broker.bootstrap) as c, RawClient(broker.bootstrap, client_id="share-slow") as slow:
        enable(c)
        tid = create_topic(c, "share-quota")
        r = c.request(AlterClientQuotasRequest(validate_only=False, entries=[EntryData(
            entity=[EntityData(entity_type="client-id", entity_name="share-slow")],
            ops=[OpData(key="consumer_byte_rate", value=1024.0, remove=False)])]), 1)
        assert r.entries[0].error_code == ErrorCode.NONE
        m, _ = join(slow, "g-quota", "share-quota")
        produce(c, "share-quota", 2000)
        fetched = fetch(slow, "g-quota", m, 0, tid, max_records=2000)  # one batch of 2000: more than 10 s of quota
        assert fetched.responses == [] and fetched.throttle_time_ms > 0
        other, _ = join(c, "g-quota", "share-quota")
        assert acquired(fetch(c, "g-quota", other, 0, tid, max_records=2000)) == []  # locked to the first member


def test_a_first_fetch_answers_the_share_partition_loaded_first_and_the_next_fetch_the_rest(broker):
    """As Kafka 4.4, whose delayed share fetch acquires only share-partitions already initialized and completes as
    soon as one finishes initializing: a member's first fetch of two new share-partitions with records answers one
    of them alone, the other left out (librdkafka's 0179 expects one partition's records in its first batch), its
    next fetch the other (Kafka 4.4 answered [0] then [1] in 6 runs out of 6)."""
    with RawClient(broker.bootstrap) as c:
        enable(c)
        tid = create_topic(c, "first-loaded", partitions=2)
        member, _ = join(c, "g-first-loaded", "first-loaded")
        produce(c, "first-loaded", 5, partition=0)
        produce(c, "first-loaded", 5, partition=1)
        first = fetch(c, "g-first-loaded", member, 0, tid, partitions=(0, 1), wait_ms=2000)
        with_records = [p.partition_index for t in first.responses for p in t.partitions if p.acquired_records]
        assert len(with_records) == 1 and acquired(first) == [(0, 4, 1)], first
        assert [p.partition_index for t in first.responses for p in t.partitions] == with_records, first
        second = fetch(c, "g-first-loaded", member, 1, tid, partitions=(0, 1), wait_ms=2000)
        assert [p.partition_index for t in second.responses for p in t.partitions if p.acquired_records] \
            == [1 - with_records[0]] and acquired(second) == [(0, 4, 1)], second


def test_a_closed_session_releases_all_its_partitions_to_a_waiting_fetch_at_once(broker):
    """As Kafka 4.4's releaseSession, which starts every share-partition's release before any state write completes:
    another member's fetch waiting on two partitions whose records a closing session holds gets both partitions'
    records in one answer (pykbroker released and wrote them one after the other, and the waiting fetch answered the
    first alone). The differential scenario share_session_close_release_order judges it by Kafka 4.4."""
    with RawClient(broker.bootstrap) as c, RawClient(broker.bootstrap) as waiting:
        enable(c)
        tid = create_topic(c, "close-both", partitions=2)
        a, _ = join(c, "g-close-both", "close-both")
        b = "b" * 22  # a ShareFetch is not checked against the group's members (Kafka 4.4 neither)
        produce(c, "close-both", 5, partition=0)
        produce(c, "close-both", 5, partition=1)
        held, epoch, deadline = [], 0, time.monotonic() + 30
        while len(held) < 2 and time.monotonic() < deadline:  # a's first fetch answers the first partition loaded
            held += acquired(fetch(c, "g-close-both", a, epoch, tid, partitions=(0, 1)))
            epoch += 1
        assert held == [(0, 4, 1), (0, 4, 1)]
        waiting.send(ShareFetchRequest(group_id="g-close-both", member_id=b, share_session_epoch=0, max_wait_ms=10_000,
                                       min_bytes=1, max_bytes=1 << 20, max_records=500, batch_size=500,
                                       topics=[FetchTopic(topic_id=tid, partitions=[
                                           FetchPartition(partition_index=p) for p in (0, 1)])]), 2)
        # b's fetch waits (every record is a's) before a's session ends; arriving later, it would find both released
        # just the same, so the wait only makes the test sensitive, never flaky
        time.sleep(0.3)
        fetch(c, "g-close-both", a, -1, tid, partitions=())
        _, answer = waiting.recv(ShareFetchResponse, 2)
        assert sorted((p.partition_index, [(x.first_offset, x.last_offset, x.delivery_count) for x in p.acquired_records])
                      for t in answer.responses for p in t.partitions) == [(0, [(0, 4, 2)]), (1, [(0, 4, 2)])], answer
