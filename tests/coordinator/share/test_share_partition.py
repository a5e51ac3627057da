"""The share-partition state machine on a fake clock: acquire, acknowledge, locks, limits, persisted state."""

import asyncio
import uuid

import pytest

from coordinator.runtime.clock import FakeClock
from coordinator.share.record_state import AcknowledgeType as A
from coordinator.share.record_state import RecordState as S
from coordinator.share.share_partition import (
    AcquiredRecords,
    InvalidRecordStateError,
    SharePartition,
    SharePartitionConfig,
)
from coordinator.share.state_batch import StateBatch as B


def sp(lock_ms=30_000, limit=5, max_locks=2000, start=0):
    p = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(lock_ms, limit, max_locks), FakeClock())
    p.load(start, [])
    return p


def test_batches_are_acquired_whole_and_by_one_member_only():
    p = sp()
    assert p.acquire("m1", [(0, 4), (5, 9)], max_records=3) == [AcquiredRecords(0, 4, 1)]
    assert p.acquire("m2", [(0, 4), (5, 9)], max_records=100) == [AcquiredRecords(5, 9, 1)]
    assert p.acquire("m3", [(0, 4), (5, 9)], max_records=100) == []
    assert p.end_offset == 10 and p.next_fetch_offset() == 10


def test_adjacent_batches_are_acquired_as_one_range():
    """Kafka 4.4 answers a fetch of several adjacent batches (transaction markers among them) with one
    AcquiredRecords, and a redelivery of released records across a batch boundary as one range too."""
    p = sp()
    assert p.acquire("m1", [(0, 9), (10, 13)], max_records=100) == [AcquiredRecords(0, 13, 1)]
    p.acknowledge("m1", 3, 5, [A.RELEASE])
    p.acknowledge("m1", 9, 12, [A.RELEASE])
    assert p.acquire("m1", [(0, 9), (10, 13)], max_records=100) == [AcquiredRecords(3, 5, 2), AcquiredRecords(9, 12, 2)]


def test_record_limit_mode_stops_at_max_records():
    p = sp()
    assert p.acquire("m1", [(0, 9)], max_records=3, record_limit=True) == [AcquiredRecords(0, 2, 1)]
    assert p.next_fetch_offset() == 3


def test_accept_moves_the_start_offset_and_only_the_holder_may_acknowledge():
    p = sp()
    p.acquire("m1", [(0, 9)], 100)
    with pytest.raises(InvalidRecordStateError):
        p.acknowledge("m2", 0, 9, [A.ACCEPT])
    p.acknowledge("m1", 0, 4, [A.ACCEPT])
    assert p.start_offset == 5
    assert p.take_dirty() == (0, [B(0, 4, 2, 1)])
    p.acknowledge("m1", 0, 4, [A.RELEASE])  # below the start offset: done already, skipped as by Kafka 4.4
    assert p.start_offset == 5 and not p.has_dirty()
    p.acknowledge("m1", 4, 5, [A.ACCEPT])  # from below the start into the window: 4 is skipped, 5 accepted (Kafka)
    assert p.start_offset == 6


def test_release_redelivers_with_a_higher_count_and_reject_archives():
    p = sp()
    p.acquire("m1", [(0, 2)], 100)
    p.acknowledge("m1", 0, 2, [A.REJECT, A.RELEASE, A.ACCEPT])
    assert p.start_offset == 1 and p.state_of(1) == (S.AVAILABLE, 1) and p.state_of(2) == (S.ACKNOWLEDGED, 1)
    assert p.next_fetch_offset() == 1
    assert p.acquire("m2", [(0, 2)], 100) == [AcquiredRecords(1, 1, 2)]


def test_delivery_count_limit_archives_a_poison_record():
    p = sp(limit=2)
    p.acquire("m1", [(0, 0)], 100)
    p.acknowledge("m1", 0, 0, [A.RELEASE])
    p.acquire("m1", [(0, 0)], 100)
    p.acknowledge("m1", 0, 0, [A.RELEASE])
    assert p.start_offset == 1 and p.in_flight == 0


def test_lock_expiry_releases_to_other_members():
    p = sp(lock_ms=1000)
    released = []
    p.on_release = lambda: released.append(1)
    p.acquire("m1", [(0, 4)], 100)
    p.clock.advance(999)
    assert p.state_of(0) == (S.ACQUIRED, 1)
    p.clock.advance(1)
    assert p.state_of(0) == (S.AVAILABLE, 1) and released
    with pytest.raises(InvalidRecordStateError):
        p.acknowledge("m1", 0, 4, [A.ACCEPT])
    assert p.acquire("m2", [(0, 4)], 100) == [AcquiredRecords(0, 4, 2)]


def test_renew_restarts_the_lock():
    p = sp(lock_ms=1000)
    p.acquire("m1", [(0, 1)], 100)
    p.clock.advance(800)
    p.acknowledge("m1", 0, 1, [A.RENEW])
    p.clock.advance(800)
    assert p.state_of(0) == (S.ACQUIRED, 1)
    p.clock.advance(200)
    assert p.state_of(0) == (S.AVAILABLE, 1)


def test_max_record_locks_limits_new_acquisitions():
    p = sp(max_locks=5)
    p.acquire("m1", [(0, 5)], 100)  # a batch is taken whole even past the limit
    assert p.in_flight == 6 and not p.can_acquire()
    assert p.acquire("m2", [(6, 9)], 100) == []
    p.acknowledge("m1", 0, 5, [A.ACCEPT])
    assert p.can_acquire()


def test_release_member_and_archived_offsets():
    p = sp()
    p.acquire("m1", [(0, 3)], 100, archive=lambda off: off == 2)
    assert p.state_of(2) == (S.ARCHIVED, 0)
    assert p.release_member("m1") == 3
    assert p.state_of(0) == (S.AVAILABLE, 1)


def test_dirty_state_and_load_round_trip():
    p = sp()
    p.acquire("m1", [(0, 9)], 100)
    p.acknowledge("m1", 0, 1, [A.ACCEPT])
    p.acknowledge("m1", 5, 6, [A.REJECT, A.RELEASE])
    start, batches = p.take_dirty()
    # the start offset written lags by one write (as Kafka's); the records it passed are in the batches
    assert start == 0
    assert batches == [B(0, 1, 2, 1), B(2, 4, 0, 1), B(5, 5, 4, 1), B(6, 6, 0, 1)]
    assert not p.has_dirty()
    q = sp()
    q.load(start, batches)
    assert q.start_offset == 2 and q.state_of(4) == (S.AVAILABLE, 1) and q.state_of(5) == (S.ARCHIVED, 1)
    # 7-9 were only acquired, never persisted: after a restart they are new again (count 1)
    assert q.acquire("m2", [(0, 9)], 100) == [AcquiredRecords(2, 4, 2), AcquiredRecords(6, 6, 2),
                                              AcquiredRecords(7, 9, 1)]


def test_acquisition_lock_timers_run_on_a_real_loop_too():
    async def main():
        from coordinator.runtime.clock import SystemClock
        p = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(20, 5, 100), SystemClock())
        p.load(0, [])
        p.acquire("m", [(0, 0)], 1)
        await asyncio.sleep(0.1)
        return p.state_of(0)
    assert asyncio.run(main()) == (S.AVAILABLE, 1)


def test_the_next_write_carries_the_start_offset_of_the_previous_one():
    p = sp()
    p.acquire("m1", [(0, 4)], 100)
    p.acknowledge("m1", 0, 4, [A.ACCEPT])
    assert p.take_dirty() == (0, [B(0, 4, 2, 1)])
    p.acquire("m1", [(5, 5)], 100)
    p.acknowledge("m1", 5, 5, [A.REJECT])
    assert p.take_dirty() == (5, [B(5, 5, 4, 1)])


def test_offsets_between_batches_without_records_are_acquired_with_them():
    """Kafka 4.4 acquires a compacted gap between two batches of one fetch with them (one range); a gap before the
    first batch read is archived."""
    p = sp()
    assert p.acquire("m1", [(0, 1), (5, 6)], 100) == [AcquiredRecords(0, 6, 1)]
    assert p.state_of(3) == (S.ACQUIRED, 1)
    p.acknowledge("m1", 0, 6, [A.ACCEPT])
    assert p.acquire("m1", [(9, 9)], 100) == [AcquiredRecords(9, 9, 1)]
    assert p.start_offset == 9  # the archived gap 7-8 does not hold the start offset back


def test_records_given_up_on_are_handed_to_the_dead_letter_queue():
    """KIP-1191's triggers: REJECT (per range and per offset) and a release at the delivery count limit (an
    acknowledgement, or a lock expiring); GAP and ACCEPT are not dead letters. Not taken (no DLQ), they are
    ARCHIVED at once."""
    clock = FakeClock()
    letters: list[tuple[int, int, int, str]] = []
    p = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(1000, 2, 2000), clock,
                       dead_letter=lambda *letter: letters.append(letter) is not None)
    p.load(0, [])
    p.acquire("m", [(0, 9)], max_records=100)
    p.acknowledge("m", 0, 2, [A.REJECT])
    p.acknowledge("m", 3, 6, [A.ACCEPT, A.GAP, A.REJECT, A.RELEASE])
    assert letters == [(0, 2, 1, "Offset rejected by client."), (5, 5, 1, "Offset rejected by client.")]
    letters.clear()
    assert p.acquire("m", [(6, 9)], max_records=100) == [AcquiredRecords(6, 6, 2)]
    p.acknowledge("m", 6, 6, [A.RELEASE])  # its second delivery released: the limit of 2
    clock.advance(1000)  # 7-9's first lock expires: available again
    assert letters == [(6, 6, 2, "Offset delivery count exceeded the threshold.")]
    assert p.acquire("m", [(7, 9)], max_records=100) == [AcquiredRecords(7, 9, 2)]
    clock.advance(1000)
    assert letters[1:] == [(o, o, 2, "Offset delivery count exceeded the threshold.") for o in (7, 8, 9)]
    assert p.state_of(9) is None and p.start_offset == 10


def test_a_dead_letter_is_archiving_until_written_and_resumed_after_a_load():
    """Taken by the DLQ, a rejected record is ARCHIVING — persisted as 3, holding the start offset — until
    written; a share-partition loaded with ARCHIVING records hands them over again (Kafka's cause by count)."""
    letters: list[tuple[int, int, int, str]] = []
    p = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(1000, 2, 2000), FakeClock(),
                       dead_letter=lambda *letter: not letters.append(letter))
    p.load(0, [])
    p.acquire("m", [(0, 3)], max_records=100)
    p.acknowledge("m", 0, 3, [A.ACCEPT, A.REJECT, A.ACCEPT, A.REJECT])
    assert p.start_offset == 1 and p.state_of(1) == (S.ARCHIVING, 1) and p.state_of(3) == (S.ARCHIVING, 1)
    assert [(b.first_offset, b.last_offset, b.delivery_state) for b in p.take_dirty()[1]] == [
        (0, 0, 2), (1, 1, 3), (2, 2, 2), (3, 3, 3)]
    assert p.dead_letters_written(1, 1) and p.start_offset == 3
    assert not p.dead_letters_written(1, 1)
    reloaded = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(1000, 2, 2000), FakeClock(),
                              dead_letter=lambda *letter: not letters.append(letter))
    reloaded.load(3, [B(3, 3, S.ARCHIVING, 1), B(4, 4, S.ARCHIVING, 2)])
    letters.clear()
    reloaded.resume_dead_letters()
    assert letters == [(3, 3, 1, "Offset rejected by client."),
                       (4, 4, 2, "Offset delivery count exceeded the threshold.")]
    assert reloaded.start_offset == 3 and reloaded.dead_letters_written(3, 4) and reloaded.start_offset == 5
    gone = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(1000, 2, 2000), FakeClock(),
                          dead_letter=lambda *letter: False)  # the group's DLQ was removed meanwhile
    gone.load(3, [B(3, 4, S.ARCHIVING, 1)])
    gone.resume_dead_letters()
    assert gone.start_offset == 5 and gone.has_dirty()


def test_the_delivery_complete_count_is_the_records_done_at_or_above_the_written_start():
    """Kafka's SharePartition writes the number of acknowledged and archived records from the start offset it
    writes: 0 after a lock timeout released everything, the acknowledged ones before the start moved past them."""
    clock = FakeClock()
    p = SharePartition("g", "t", uuid.UUID(int=1), 0, SharePartitionConfig(1000, 5, 2000), clock)
    p.load(0, [])
    p.acquire("m1", [(0, 4)], 100)
    clock.advance(1000)  # the lock times out: all available again
    start, _ = p.take_dirty()
    assert (start, p.delivery_complete_count(start)) == (0, 0)
    p.acquire("m1", [(0, 4)], 100)
    p.acknowledge("m1", 0, 2, [A.ACCEPT])
    p.acknowledge("m1", 4, 4, [A.REJECT])
    start, _ = p.take_dirty()  # the start written is 0, the window's is 3 now
    assert (start, p.start_offset, p.delivery_complete_count(start)) == (0, 3, 4)
    start, _ = p.take_dirty()
    assert (start, p.delivery_complete_count(start)) == (3, 1)


def refusal(p, member, batches, renew_enabled=True) -> str:
    with pytest.raises(InvalidRecordStateError) as exc:
        p.acknowledge_batches(member, batches, renew_enabled)
    return str(exc.value)


def test_a_disabled_renew_is_refused_where_kafka_meets_it():
    """share.renew.acknowledge.enable=false: a RENEW of records the member holds is refused (nothing applies), but
    the checks of the batches before it and of its own records come first, as in Kafka 4.4's SharePartition."""
    p = sp()
    p.acquire("m1", [(0, 3)], 100)
    p.acquire("m2", [(4, 7)], 100)
    disabled = "Renewing acquisition locks is not enabled for the group."
    assert refusal(p, "m1", [(4, 7, [A.RENEW])], False) == "Member is not the owner of batch record"
    assert refusal(p, "m1", [(1, 1, [A.ACCEPT]), (4, 4, [A.RENEW])], False) == "Member is not the owner of batch record"
    assert refusal(p, "m1", [(0, 0, [A.ACCEPT]), (1, 1, [A.RENEW])], False) == disabled
    assert refusal(p, "m1", [(2, 2, [A.RENEW]), (5, 5, [A.ACCEPT])], False) == disabled
    assert refusal(p, "m1", [(0, 3, [A.RENEW])], False) == disabled
    assert p.state_of(0) == (S.ACQUIRED, 1) and not p.has_dirty()


def test_a_requests_batches_apply_all_or_none():
    """Kafka 4.4 checks a partition's batches in order against the state before the request and applies none when
    one is refused: an offset acknowledged twice is no longer acquired the second time."""
    p = sp()
    p.acquire("m1", [(0, 9)], 100)
    assert refusal(p, "m1", [(0, 1, [A.ACCEPT]), (1, 2, [A.RELEASE])]) == \
        "The offset cannot be acknowledged. The offset is not acquired."
    assert p.start_offset == 0 and p.state_of(0) == (S.ACQUIRED, 1) and not p.has_dirty()
    p.acknowledge_batches("m1", [(0, 1, [A.ACCEPT]), (2, 2, [A.RENEW]), (2, 3, [A.ACCEPT])])  # a RENEW holds on
    assert p.start_offset == 4


def test_refusals_are_worded_as_kafka_tracks_its_in_flight_batch():
    """Per batch while Kafka tracks the in-flight batch whole (released whole, another member's whole acquisition,
    even with per-offset types), per offset once part of it was acquired or acknowledged."""
    p = sp()
    p.acquire("m1", [(0, 9)], 100)
    assert refusal(p, "m2", [(3, 4, [A.ACCEPT, A.ACCEPT])]) == "Member is not the owner of batch record"
    p.acknowledge("m1", 0, 9, [A.RELEASE])
    assert refusal(p, "m1", [(3, 4, [A.ACCEPT, A.ACCEPT])]) == \
        "The batch cannot be acknowledged. The batch is not in the acquired state."
    p.acquire("m1", [(0, 9)], 100)
    p.acknowledge("m1", 0, 1, [A.ACCEPT])
    p.acknowledge("m1", 2, 9, [A.RELEASE])
    assert refusal(p, "m1", [(5, 5, [A.ACCEPT])]) == "The offset cannot be acknowledged. The offset is not acquired."
    q = sp()
    assert q.acquire("m1", [(0, 9)], 2, record_limit=True) == [AcquiredRecords(0, 1, 1)]
    assert q.acquire("m1", [(0, 9)], 2, record_limit=True) == [AcquiredRecords(2, 3, 1)]
    assert refusal(q, "m2", [(2, 3, [A.ACCEPT])]) == "Member is not the owner of offset"
    assert refusal(q, "m1", [(12, 12, [A.ACCEPT])]) == \
        "Batch record not found. The first offset in request is past acquired records."


def test_new_records_past_the_batch_size_are_cut_at_log_batch_boundaries():
    """Kafka 4.4's createBatches: batch-optimized acquisition of more new records than batch_size answers ranges of at
    least batch_size records, cut where a log batch starts, each an in-flight batch of its own; a log batch is
    never cut, and record-limit acquisition is not cut."""
    p = sp()
    batches = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    assert p.acquire("m1", batches, 10, batch_size=3) == [AcquiredRecords(0, 3, 1), AcquiredRecords(4, 7, 1),
                                                          AcquiredRecords(8, 9, 1)]
    assert refusal(p, "m2", [(2, 5, [A.ACCEPT])]) == "Member is not the owner of batch record"
    assert p.acquire("m1", [(10, 19)], 10, batch_size=3) == [AcquiredRecords(10, 19, 1)]
    assert sp().acquire("m1", batches, 10, record_limit=True, batch_size=3) == [AcquiredRecords(0, 9, 1)]


def test_records_delivered_often_are_redelivered_fewer_at_a_time():
    """Kafka 4.4 isolates a poison record: from half the delivery count limit on (3 of 5) a batch is redelivered
    halved for each delivery past it, and a record on its last delivery alone (seen against a 4.4 node)."""
    p = sp()
    seen = []
    got = p.acquire("m1", [(0, 9)], 10)
    while got:
        seen.append([(a.first_offset, a.last_offset, a.delivery_count) for a in got])
        for a in got:
            p.acknowledge("m1", a.first_offset, a.last_offset, [A.RELEASE])
        got = p.acquire("m1", [(0, 9)], 10)
    assert seen[:10] == [[(0, 9, 1)], [(0, 9, 2)], [(0, 9, 3)], [(0, 4, 4)], [(0, 0, 5)], [(1, 1, 5)], [(2, 2, 5)],
                         [(3, 3, 5)], [(4, 4, 5)], [(5, 9, 4)]]


def test_a_redelivery_answers_a_range_per_in_flight_batch():
    """Kafka 4.4 redelivers each in-flight batch as a range of its own, adjacent ones too."""
    p = sp()
    batches = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    p.acquire("m1", batches, 10, batch_size=3)
    p.acknowledge_batches("m1", [(0, 3, [A.RELEASE]), (4, 5, [A.RELEASE]), (6, 7, [A.RELEASE])])
    assert p.acquire("m1", batches, 10) == [AcquiredRecords(0, 3, 2), AcquiredRecords(4, 7, 2)]
