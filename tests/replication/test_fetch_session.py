"""KIP-227 fetch sessions: creation, incremental updates, forgetting, errors, eviction."""

from __future__ import annotations

import random

from replication.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, CachedPartition, FetchSessionCache
from wire import ZERO_UUID, ErrorCode


def part(topic: str, partition: int, offset: int = 0) -> CachedPartition:
    return CachedPartition(topic, partition, ZERO_UUID, fetch_offset=offset, max_bytes=1024)


def test_sessionless_full_fetch_creates_nothing():
    cache = FetchSessionCache()
    ctx = cache.new_context(0, FINAL_EPOCH, [part("a", 0)], [])
    assert ctx.response_session_id == 0
    assert not ctx.incremental
    assert len(cache) == 0


def test_initial_fetch_opens_session_and_incremental_fetch_uses_it():
    cache = FetchSessionCache(rng=random.Random(1))
    ctx = cache.new_context(0, INITIAL_EPOCH, [part("a", 0), part("a", 1)], [])
    sid = ctx.response_session_id
    assert sid != 0 and len(cache) == 1
    # epoch 1: only partition 1 moved; partition 0 stays in the session
    ctx2 = cache.new_context(sid, 1, [part("a", 1, offset=5)], [])
    assert ctx2.incremental and ctx2.error == ErrorCode.NONE
    assert [(p.partition, p.fetch_offset) for p in ctx2.partitions] == [(0, 0), (1, 5)]
    # epoch 2: forget partition 0
    ctx3 = cache.new_context(sid, 2, [], [("a", 0)])
    assert [p.partition for p in ctx3.partitions] == [1]


def test_incremental_response_only_carries_changes():
    cache = FetchSessionCache()
    ctx = cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], [])
    p = ctx.partitions[0]
    args = dict(has_records=False, error_code=0, high_watermark=10, last_stable_offset=10, log_start_offset=0)
    assert p.needs_response(**args)  # first time: everything is new
    assert not p.needs_response(**args)  # nothing changed
    assert p.needs_response(**{**args, "high_watermark": 11})
    assert p.needs_response(**{**args, "high_watermark": 11, "has_records": True})
    assert p.needs_response(**{**args, "high_watermark": 11, "error_code": ErrorCode.OFFSET_OUT_OF_RANGE})


def test_unknown_session_and_wrong_epoch():
    cache = FetchSessionCache()
    assert cache.new_context(12345, 1, [], []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    sid = cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], []).response_session_id
    assert cache.new_context(sid, 7, [], []).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.new_context(sid, 1, [], []).error == ErrorCode.NONE


def test_topic_id_usage_must_not_change_within_a_session():
    cache = FetchSessionCache()
    sid = cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], [], uses_topic_ids=True).response_session_id
    assert cache.new_context(sid, 1, [], [], uses_topic_ids=False).error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_final_epoch_closes_the_session():
    cache = FetchSessionCache()
    sid = cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], []).response_session_id
    ctx = cache.new_context(sid, FINAL_EPOCH, [part("a", 0)], [])
    assert ctx.response_session_id == 0 and len(cache) == 0


def test_least_recently_used_session_is_evicted():
    cache = FetchSessionCache(max_slots=2)
    s1 = cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], []).response_session_id
    s2 = cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], []).response_session_id
    cache.new_context(s1, 1, [], [])  # s1 used most recently
    cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], [])
    assert cache.new_context(s2, 1, [], []).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.new_context(s1, 2, [], []).error == ErrorCode.NONE


def test_no_slots_means_sessionless():
    cache = FetchSessionCache(max_slots=0)
    assert cache.new_context(0, INITIAL_EPOCH, [part("a", 0)], []).response_session_id == 0


def test_deleted_topic_leaves_sessions():
    cache = FetchSessionCache()
    sid = cache.new_context(0, INITIAL_EPOCH, [part("a", 0), part("b", 0)], []).response_session_id
    cache.remove_topic("a")
    assert [p.topic for p in cache.new_context(sid, 1, [], []).partitions] == ["b"]
