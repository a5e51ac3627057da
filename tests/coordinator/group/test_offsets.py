"""OffsetCommit / OffsetFetch / OffsetDelete and offset expiry, with records and replay."""

from __future__ import annotations

from coordinator.group.config import GroupCoordinatorConfig
from tests.coordinator.group.helpers import Harness, info, join_request, run, sync_request, types
from wire import ErrorCode
from wire.messages import OffsetCommitRequest, OffsetDeleteRequest
from wire.messages.offset_commit_request import OffsetCommitRequestPartition, OffsetCommitRequestTopic
from wire.messages.offset_delete_request import OffsetDeleteRequestPartition, OffsetDeleteRequestTopic

G = "offsets-group"


def commit(group_id: str, offsets: dict[tuple[str, int], int], *, generation: int = -1, member_id: str = "",
           instance_id=None, metadata: str | None = "meta", leader_epoch: int = 5,
           retention_ms: int = -1) -> OffsetCommitRequest:
    topics: dict[str, list] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(OffsetCommitRequestPartition(
            partition_index=partition, committed_offset=offset, committed_leader_epoch=leader_epoch,
            committed_metadata=metadata))
    return OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=generation, member_id=member_id,
                               group_instance_id=instance_id, retention_time_ms=retention_ms,
                               topics=[OffsetCommitRequestTopic(name=t, partitions=p) for t, p in topics.items()])


def codes(response) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


async def fetched(h: Harness, group_id: str, topics=None, **kw) -> dict[tuple[str, int], tuple]:
    g = await h.coordinator.fetch_offsets(info(8), group_id, topics, **kw)
    assert g.error_code == ErrorCode.NONE, g
    return {(t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.metadata, p.error_code)
            for t in g.topics for p in t.partitions}


@run
async def test_simple_consumer_commit_creates_empty_group_and_round_trips():
    h = Harness()
    r = await h.coordinator.commit_offsets(info(9), commit(G, {("a", 0): 10, ("a", 1): 11, ("b", 0): 3}))
    assert set(codes(r).values()) == {ErrorCode.NONE}
    written = h.records(G)
    assert types(written) == ["OffsetCommit"] * 3
    assert {(x.key.topic, x.key.partition, x.value.offset, x.value.leader_epoch, x.value.metadata)
            for x in written} == {("a", 0, 10, 5, "meta"), ("a", 1, 11, 5, "meta"), ("b", 0, 3, 5, "meta")}
    assert await fetched(h, G, [("a", [0, 1, 2])]) == {
        ("a", 0): (10, 5, "meta", 0), ("a", 1): (11, 5, "meta", 0), ("a", 2): (-1, -1, "", 0)}
    assert await fetched(h, G) == {("a", 0): (10, 5, "meta", 0), ("a", 1): (11, 5, "meta", 0),
                                   ("b", 0): (3, 5, "meta", 0)}
    group = h.group(G)
    assert group.state.value == "Empty" and group.protocol_type is None
    await h.assert_replay_matches()


@run
async def test_null_metadata_and_unknown_epoch_are_stored_as_kafka_does():
    h = Harness()
    await h.coordinator.commit_offsets(info(5), commit(G, {("a", 0): 1}, metadata=None, leader_epoch=-1))
    assert await fetched(h, G) == {("a", 0): (1, -1, "", 0)}


@run
async def test_unknown_topics_and_large_metadata_are_refused_per_partition():
    h = Harness()
    r = await h.coordinator.commit_offsets(info(9), commit(G, {("a", 0): 1, ("a", 9): 1, ("nope", 0): 1}))
    assert codes(r) == {("a", 0): 0, ("a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    r = await h.coordinator.commit_offsets(info(9), commit(G, {("a", 1): 1}, metadata="x" * 5000))
    assert codes(r) == {("a", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE}


@run
async def test_commit_with_generation_to_unknown_group():
    h = Harness()
    r = await h.coordinator.commit_offsets(info(8), commit(G, {("a", 0): 1}, generation=1, member_id="m"))
    assert codes(r) == {("a", 0): ErrorCode.ILLEGAL_GENERATION}
    r = await h.coordinator.commit_offsets(info(9), commit(G, {("a", 0): 1}, generation=1, member_id="m"))
    assert codes(r) == {("a", 0): ErrorCode.GROUP_ID_NOT_FOUND}


@run
async def test_classic_group_generation_and_member_checks():
    h = Harness()
    c = h.coordinator
    j = await c.join_group(info(3, "c1"), join_request(G))
    # CompletingRebalance: the member must wait for its assignment.
    r = await c.commit_offsets(info(8), commit(G, {("a", 0): 1}, generation=1, member_id=j.member_id))
    assert codes(r) == {("a", 0): ErrorCode.REBALANCE_IN_PROGRESS}
    await c.sync_group(info(3), sync_request(G, j.member_id, 1, {}))
    ok = await c.commit_offsets(info(8), commit(G, {("a", 0): 7}, generation=1, member_id=j.member_id))
    assert codes(ok) == {("a", 0): 0}
    stale = await c.commit_offsets(info(8), commit(G, {("a", 0): 8}, generation=0, member_id=j.member_id))
    assert codes(stale) == {("a", 0): ErrorCode.ILLEGAL_GENERATION}
    unknown = await c.commit_offsets(info(8), commit(G, {("a", 0): 8}, generation=1, member_id="who"))
    assert codes(unknown) == {("a", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    # A standalone consumer (assign(), generation -1) may not commit into a live group (seed 004, 2.2).
    standalone = await c.commit_offsets(info(8), commit(G, {("a", 0): 9}))
    assert codes(standalone) == {("a", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert (await fetched(h, G))[("a", 0)][0] == 7
    await h.assert_replay_matches()


@run
async def test_offset_delete():
    h = Harness()
    c = h.coordinator
    await c.commit_offsets(info(9), commit(G, {("a", 0): 1, ("a", 1): 2, ("b", 0): 3}))
    before = h.log_end(G)
    r = await c.delete_offsets(info(0), OffsetDeleteRequest(group_id=G, topics=[
        OffsetDeleteRequestTopic(name="a", partitions=[OffsetDeleteRequestPartition(partition_index=0),
                                                       OffsetDeleteRequestPartition(partition_index=9)]),
        OffsetDeleteRequestTopic(name="zzz", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]))
    assert r.error_code == 0
    assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
        ("a", 0): 0, ("a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ("zzz", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert types(h.records(G, before)) == ["OffsetCommit-"]
    assert await fetched(h, G) == {("a", 1): (2, 5, "meta", 0), ("b", 0): (3, 5, "meta", 0)}
    missing = await c.delete_offsets(info(0), OffsetDeleteRequest(group_id="none", topics=[]))
    assert missing.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    await h.assert_replay_matches()


@run
async def test_offset_delete_refuses_non_consumer_groups_and_subscribed_topics():
    h = Harness()
    c = h.coordinator
    j = await c.join_group(info(3, "c1"), join_request(G, topics=("a",)))
    await c.sync_group(info(3), sync_request(G, j.member_id, 1, {}))
    await c.commit_offsets(info(8), commit(G, {("a", 0): 1, ("b", 0): 1}, generation=1, member_id=j.member_id))
    r = await c.delete_offsets(info(0), OffsetDeleteRequest(group_id=G, topics=[
        OffsetDeleteRequestTopic(name="a", partitions=[OffsetDeleteRequestPartition(partition_index=0)]),
        OffsetDeleteRequestTopic(name="b", partitions=[OffsetDeleteRequestPartition(partition_index=0)])]))
    assert {(t.name, p.partition_index): p.error_code for t in r.topics for p in t.partitions} == {
        ("a", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ("b", 0): 0}
    other = "connect-group"
    j2 = await c.join_group(info(3, "c1"), join_request(other, protocol_type="connect"))
    await c.sync_group(info(3), sync_request(other, j2.member_id, 1, {}))
    r = await c.delete_offsets(info(0), OffsetDeleteRequest(group_id=other, topics=[]))
    assert r.error_code == ErrorCode.NON_EMPTY_GROUP


@run
async def test_require_stable_and_multiple_groups():
    h = Harness()
    c = h.coordinator
    await c.commit_offsets(info(9), commit("g1", {("a", 0): 1}))
    await c.commit_offsets(info(9), commit("g2", {("a", 0): 2}))
    g1 = await c.fetch_offsets(info(8), "g1", [("a", [0])], require_stable=True)
    g2 = await c.fetch_offsets(info(8), "g2", [("a", [0])])
    assert [p.committed_offset for t in g1.topics for p in t.partitions] == [1]
    assert [p.committed_offset for t in g2.topics for p in t.partitions] == [2]
    nobody = await c.fetch_offsets(info(8), "nobody", [("a", [0])])
    assert [(p.committed_offset, p.error_code) for t in nobody.topics for p in t.partitions] == [(-1, 0)]


@run
async def test_offsets_of_empty_groups_expire_after_retention_and_the_group_is_deleted():
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=5, group_initial_rebalance_delay_ms=0,
                                    offsets_retention_ms=60_000, offsets_retention_check_interval_ms=10_000)
    h = Harness(config)
    c = h.coordinator
    await c.commit_offsets(info(9), commit(G, {("a", 0): 1}))
    await h.advance(30_000)
    await c.commit_offsets(info(9), commit(G, {("a", 1): 1}))
    before = h.log_end(G)
    await h.advance(40_000)  # a-0 is 70 s old, a-1 40 s
    assert types(h.records(G, before)) == ["OffsetCommit-"]
    assert G in h.shard(G).groups.groups
    await h.advance(30_000)
    assert types(h.records(G, before)) == ["OffsetCommit-", "OffsetCommit-", "GroupMetadata-"]
    assert G not in h.shard(G).groups.groups
    await h.assert_replay_matches()


@run
async def test_retention_time_of_v2_commits_sets_expire_timestamp():
    config = GroupCoordinatorConfig(offsets_topic_num_partitions=5, offsets_retention_check_interval_ms=1000)
    h = Harness(config)
    await h.coordinator.commit_offsets(info(2), commit(G, {("a", 0): 1}, retention_ms=5000))
    written = h.records(G)
    assert written[0].value_version == 1 and written[0].value.expire_timestamp == h.clock.now_ms() + 5000
    await h.advance(6000)
    assert await fetched(h, G) == {}


@run
async def test_offsets_of_deleted_partitions_are_removed():
    h = Harness()
    c = h.coordinator
    await c.commit_offsets(info(9), commit("g1", {("a", 0): 1, ("a", 1): 2, ("b", 0): 3}))
    await c.commit_offsets(info(9), commit("g2", {("a", 3): 4}))
    await c.on_partitions_deleted([("__consumer_offsets", 0)])
    await c.on_partitions_deleted([("a", p) for p in range(4)])
    assert await fetched(h, "g1") == {("b", 0): (3, 5, "meta", 0)}
    assert await fetched(h, "g2") == {}
    await h.assert_replay_matches()
