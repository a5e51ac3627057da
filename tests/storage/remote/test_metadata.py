"""Remote segment metadata: Kafka's state machine, the records and their replay."""

from __future__ import annotations

import uuid

import pytest

from storage.remote.metadata import (
    RemoteLogSegmentMetadata,
    RemoteLogSegmentState,
    RemotePartitionMetadata,
    decode_record,
    encode_partition_delete,
    encode_segment,
    encode_update,
)

S = RemoteLogSegmentState
TOPIC_ID = uuid.uuid4()


def segment(start: int, end: int, size: int = 100) -> RemoteLogSegmentMetadata:
    return RemoteLogSegmentMetadata(TOPIC_ID, "t", 0, uuid.uuid4(), start, end, 1000, 1, 5, size, ((0, start),))


@pytest.mark.parametrize("source, target, legal", [
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, True),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED, True),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, True),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED, True),
    (S.COPY_SEGMENT_FINISHED, S.COPY_SEGMENT_STARTED, False),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED, False),
    (S.DELETE_SEGMENT_FINISHED, S.COPY_SEGMENT_STARTED, False),
])
def test_transitions_are_kafkas(source, target, legal):
    assert source.can_transition_to(target) is legal


def replay(records: list[bytes]) -> RemotePartitionMetadata:
    meta = RemotePartitionMetadata(TOPIC_ID, 0)
    for r in records:
        meta.apply(decode_record(r))
    return meta


def test_only_finished_copies_are_readable_and_counted():
    a, b = segment(0, 99), segment(100, 199, size=50)
    meta = replay([encode_segment(a), encode_update(a, S.COPY_SEGMENT_FINISHED, 1, 6), encode_segment(b)])
    assert [m.segment_id for m in meta.copied()] == [a.segment_id]
    assert meta.highest_offset == 99 and meta.size_in_bytes == 100 and meta.log_start_offset == 0
    assert [m.segment_id for m in meta.unfinished()] == [b.segment_id]  # a dead leader's copy: cleaned, not counted
    assert meta.segment_for_offset(42) is not None and meta.segment_for_offset(150) is None


def test_deletion_and_illegal_moves():
    a = segment(0, 99)
    records = [encode_segment(a), encode_update(a, S.COPY_SEGMENT_FINISHED, 1, 6),
               encode_update(a, S.COPY_SEGMENT_FINISHED, 1, 7),  # a duplicate: ignored
               encode_update(a, S.DELETE_SEGMENT_STARTED, 1, 8)]
    meta = replay(records)
    assert meta.copied() == [] and meta.segments[a.segment_id].state is S.DELETE_SEGMENT_STARTED
    meta.apply(decode_record(encode_update(a, S.DELETE_SEGMENT_FINISHED, 1, 9)))
    assert meta.segments == {} and meta.highest_offset == -1 and meta.log_start_offset is None


def test_replay_is_deterministic():
    a, b = segment(0, 99), segment(100, 199)
    records = [encode_segment(a), encode_update(a, S.COPY_SEGMENT_FINISHED, 1, 6), encode_segment(b),
               encode_update(b, S.COPY_SEGMENT_FINISHED, 2, 7), encode_update(a, S.DELETE_SEGMENT_STARTED, 2, 8)]
    first, second = replay(records), replay(records)
    assert first.segments == second.segments
    assert first.log_start_offset == 100 and first.highest_offset == 199


def test_garbage_is_refused():
    with pytest.raises(ValueError):
        decode_record(b'{"type": "nonsense"}')


def test_a_record_applied_when_written_and_again_when_replayed_changes_nothing():
    a = segment(0, 99)
    records = [encode_segment(a), encode_update(a, S.COPY_SEGMENT_FINISHED, 1, 6),
               encode_update(a, S.DELETE_SEGMENT_STARTED, 1, 7), encode_update(a, S.DELETE_SEGMENT_FINISHED, 1, 8)]
    meta = replay(records)  # applied as written
    for r in records:  # the replay reaches them later
        meta.apply(decode_record(r))
    assert meta.segments == {} and meta.unfinished() == []  # the late first record does not bring it back
    b = segment(100, 199)
    written = replay([encode_segment(b), encode_update(b, S.COPY_SEGMENT_FINISHED, 1, 9)])
    written.apply(decode_record(encode_segment(b)))
    assert [m.segment_id for m in written.copied()] == [b.segment_id] and written.unfinished() == []


def test_records_are_kafkas_frame_and_messages():
    a = segment(0, 99)
    value = encode_segment(a)
    # Kafka's RemoteLogMetadataSerde: frame version 1, api key 0 (RemoteLogSegmentMetadataRecord), version 0.
    assert value[:3] == b"\x01\x00\x00"
    decoded = decode_record(value)
    assert (decoded["type"], decoded["topic"], decoded["topic_id"], decoded["segment_id"]) == \
        ("segment", "t", TOPIC_ID, a.segment_id)
    assert decoded["segment_leader_epochs"] == [(0, 0)] and decoded["txn_index_empty"] is True
    assert encode_update(a, S.COPY_SEGMENT_FINISHED, 1, 6)[:3] == b"\x01\x01\x00"
    partition_delete = encode_partition_delete("t", TOPIC_ID, 0, 1, 7)
    assert partition_delete[:3] == b"\x01\x02\x00"
    assert decode_record(partition_delete)["type"] == "partition_delete"
    with pytest.raises(ValueError):
        decode_record(value + b"x")  # trailing bytes

