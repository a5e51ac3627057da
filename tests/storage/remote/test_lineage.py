"""Remote segments against a leader-epoch lineage: which ones a read uses, which count, where copying goes on
(the cases Kafka's RemoteLogManager checks, and an unclean election's diverged copy)."""

from __future__ import annotations

import uuid

from storage.remote import lineage
from storage.remote.metadata import RemoteLogSegmentMetadata, RemoteLogSegmentState

TOPIC_ID = uuid.uuid4()


def seg(start: int, end: int, *epochs: tuple[int, int]) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(TOPIC_ID, "t", 0, uuid.uuid4(), start, end, 0, 1, 0, 100, tuple(epochs),
                                    RemoteLogSegmentState.COPY_SEGMENT_FINISHED)


LINEAGE = [(0, 0), (1, 10), (2, 20), (3, 30), (4, 40), (5, 50), (7, 70)]
LOG_END = 90


def within(m: RemoteLogSegmentMetadata, epochs=LINEAGE, log_end: int = LOG_END) -> bool:
    return lineage.is_within_leader_epochs(m, log_end, lineage.filtered_epochs(epochs))


def test_segments_on_the_lineage_are_within_it():
    assert within(seg(15, 35, (1, 15), (2, 20), (3, 30)))
    assert within(seg(15, 19, (1, 15)))
    assert within(seg(0, 5, (0, 0)))
    assert within(seg(70, 75, (7, 70)))
    assert within(seg(15, 29, (1, 15), (2, 20)))  # ends where epoch 2 ends


def test_segments_off_the_lineage_are_not():
    assert not within(seg(55, 85, (5, 55), (6, 60), (7, 70)))  # epoch 6 is not the lineage's
    assert not within(seg(15, 45, (1, 15), (2, 20), (4, 40)))  # the lineage's epoch 3 is missing
    assert not within(seg(15, 95, *LINEAGE))  # past the log end
    assert not within(seg(15, 90, *LINEAGE))  # at the log end
    assert not within(seg(5, 25, (1, 5), (2, 20)))  # epoch 1 starts earlier than on the lineage
    assert not within(seg(15, 35, (1, 15), (2, 20)))  # epoch 2 goes on past its end on the lineage


def test_an_overlapping_copy_of_a_previous_leader_is_within_a_truncated_lineage():
    cache = [(7, 51), (9, 100)]
    assert within(seg(14, 150, (5, 14), (7, 15), (9, 100)), cache, 210)
    assert not within(seg(2, 7, (2, 5), (3, 6)), cache, 210)


def test_empty_epochs_are_filtered():
    assert lineage.filtered_epochs([(0, 0), (1, 10), (2, 10), (3, 20)]) == [(0, 0), (2, 10), (3, 20)]


# An unclean election: the old leader copied [0, 99] and [100, 199] in epoch 0; the new leader's log has epoch
# 0 up to 149 only, and its epoch 1 from 150 (different records from there on).
OLD_1, OLD_2 = seg(0, 99, (0, 0)), seg(100, 199, (0, 100))
NEW = seg(120, 179, (0, 120), (1, 150))
CACHE = [(0, 0), (1, 150)]


def test_a_diverged_copy_is_not_within_the_new_lineage_and_its_records_past_the_divergence_are_not_read():
    assert within(OLD_1, CACHE, 300) and not within(OLD_2, CACHE, 300) and within(NEW, CACHE, 300)
    # Offset 110 (epoch 0 on both lineages): the old copy holds the same records.
    assert lineage.segment_for_offset([OLD_1, OLD_2], CACHE, 110) is OLD_2
    assert lineage.epoch_end(CACHE, 110, 300) == 150  # a read of it stops before the divergence
    # Offset 160 is epoch 1: never the old leader's copy.
    assert lineage.segment_for_offset([OLD_1, OLD_2], CACHE, 160) is None
    assert lineage.segment_for_offset([OLD_1, OLD_2, NEW], CACHE, 160) is NEW
    assert lineage.segment_for_offset([OLD_1, OLD_2, NEW], CACHE, 130) is NEW  # the one starting last
    assert lineage.next_segment_after([OLD_1, OLD_2, NEW], CACHE, 99) is OLD_2
    # A cache without the early epochs (kept across restarts only since this check exists): still readable.
    assert lineage.segment_for_offset([OLD_1, OLD_2, NEW], [(1, 150)], 50) is OLD_1


def test_copying_goes_on_from_the_lineage_s_highest_copied_offset():
    # Only the old copies: epoch 0 ends at 149 on the lineage, so copying goes on from 150, not 200.
    assert lineage.highest_remote_offset([OLD_1, OLD_2], CACHE, 300) == (149, 0)
    assert lineage.highest_remote_offset([OLD_1, OLD_2, NEW], CACHE, 300) == (179, 1)
    assert lineage.highest_remote_offset([OLD_1], CACHE, 300) == (99, 0)
    assert lineage.highest_remote_offset([], CACHE, 300) == (-1, -1)
    assert lineage.log_start_offset([OLD_2, NEW], CACHE) == 100
    assert lineage.log_start_offset([NEW], [(1, 150)]) == 120


def test_segments_whose_epochs_all_precede_the_lineage_are_unreferenced():
    assert lineage.is_below_earliest_epoch(OLD_2, [(1, 200)])
    assert not lineage.is_below_earliest_epoch(NEW, [(1, 200)])
    assert not lineage.is_below_earliest_epoch(OLD_2, [])


def test_a_cache_that_lost_its_early_epochs_gets_them_back_from_the_remote_segments():
    """A log written before the epochs below its local segments were kept across restarts: its cache starts at
    the local log start (1000, in epoch 2). Its remote segments' epochs put back what is missing, so the early
    segments are on the lineage again (counted and expired by retention)."""
    segments = [seg(0, 299, (0, 0)), seg(300, 599, (0, 300), (1, 450)), seg(600, 999, (1, 600), (2, 800))]
    truncated = [(2, 1000), (3, 1500)]
    early = lineage.early_epochs(segments, truncated, 0)
    assert early == [(0, 0), (1, 450), (2, 800)]
    restored = [(0, 0), (1, 450), (2, 800), (3, 1500)]
    assert not any(within(m, truncated, 2000) for m in segments[:2])
    assert all(within(m, restored, 2000) for m in segments)
    assert lineage.log_start_offset(segments, truncated) == 600  # the old log start would skip two segments
    assert lineage.log_start_offset(segments, restored) == 0
    # From a checkpointed log start offset on; none when the cache reaches back to it (or is empty).
    assert lineage.early_epochs(segments, truncated, 350) == [(0, 350), (1, 450), (2, 800)]
    assert lineage.early_epochs(segments, truncated, 500) == [(1, 500), (2, 800)]
    assert lineage.early_epochs(segments, restored, 0) == []
    assert lineage.early_epochs(segments, [], 0) == []
    # A copy whose epoch would not start after the previous one's (a diverged lineage's) is left out.
    assert lineage.early_epochs([seg(0, 99, (0, 0), (1, 50)), seg(40, 99, (0, 40))], [(2, 100)], 0) \
        == [(0, 0), (1, 50)]
