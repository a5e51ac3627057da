"""__consumer_offsets record formats: Kafka's bytes, both ways."""

from __future__ import annotations

import struct
import uuid

import pytest

from coordinator.group import records as rec
from coordinator.group.partitioner import partition_for
from wire import DecodeError
from wire.java import string_hash as java_string_hash


def _s(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def test_offset_commit_record_bytes():
    om = rec.OffsetAndMetadata(committed_offset=42, leader_epoch=7, metadata="m", commit_timestamp_ms=1000)
    key, value = rec.offset_commit_record("g", "t", 3, om).encode()
    assert key == struct.pack(">h", 1) + _s("g") + _s("t") + struct.pack(">i", 3)
    assert value == struct.pack(">h", 3) + struct.pack(">qi", 42, 7) + _s("m") + struct.pack(">q", 1000)
    back = rec.decode_record(key, value)
    assert rec.OffsetAndMetadata.from_record(5, back.value) == rec.OffsetAndMetadata(42, 7, "m", 1000, None, 5)


def test_offset_commit_with_expire_timestamp_is_written_at_v1():
    om = rec.OffsetAndMetadata(committed_offset=1, leader_epoch=None, metadata="", commit_timestamp_ms=10,
                               expire_timestamp_ms=99)
    _, value = rec.offset_commit_record("g", "t", 0, om).encode()
    assert value == struct.pack(">h", 1) + struct.pack(">q", 1) + _s("") + struct.pack(">qq", 10, 99)


def test_tombstone_and_legacy_key_type_0():
    key, value = rec.offset_commit_tombstone("g", "t", 1).encode()
    assert value is None
    legacy_key = struct.pack(">h", 0) + key[2:]
    legacy_value = struct.pack(">h", 0) + struct.pack(">q", 9) + _s("") + struct.pack(">q", 1)
    r = rec.decode_record(legacy_key, legacy_value)
    assert (r.key.group, r.key.topic, r.key.partition, r.value.offset) == ("g", "t", 1, 9)


def test_group_metadata_record_round_trip_and_layout():
    from wire.messages import GroupMetadataValue
    from wire.messages.group_metadata_value import MemberMetadata
    value = GroupMetadataValue(protocol_type="consumer", generation=2, protocol="range", leader="m1",
                               current_state_timestamp=123, members=[MemberMetadata(
                                   member_id="m1", group_instance_id=None, client_id="c", client_host="/h",
                                   rebalance_timeout=300, session_timeout=100, subscription=b"s", assignment=b"a")])
    key, data = rec.group_metadata_record("g", value).encode()
    assert key == struct.pack(">h", 2) + _s("g")
    assert data[:2] == struct.pack(">h", 3)
    assert data[2:].startswith(_s("consumer") + struct.pack(">i", 2) + _s("range") + _s("m1") + struct.pack(">q", 123))
    assert rec.decode_record(key, data).value == value


def test_consumer_group_records_round_trip():
    tid = uuid.UUID(int=5)
    records = [
        rec.consumer_group_epoch_record("g", 3, -17),
        rec.consumer_group_target_assignment_record("g", "m", {tid: frozenset({2, 0})}),
        rec.consumer_group_target_assignment_epoch_record("g", 3),
        rec.consumer_group_current_assignment_record("g", "m", 3, 2, 0, {tid: frozenset({0})}, {tid: frozenset({2})}),
        rec.consumer_group_regex_record("g", "a.*", {"ab", "aa"}, 0, 7),
        rec.consumer_group_epoch_tombstone("g"),
    ]
    for r in records:
        key, value = r.encode()
        assert key[:2] == struct.pack(">h", r.record_type)
        back = rec.decode_record(key, value)
        assert back.key == r.key and back.value == r.value
    target = rec.decode_record(*records[1].encode()).value
    assert [(tp.topic_id, tp.partitions) for tp in target.topic_partitions] == [(tid, [0, 2])]


def test_assignment_epochs_survive_a_replay():
    """KIP-1251: a member's current-assignment record keeps the epoch each partition was assigned at (Kafka 4.4's
    tagged AssignmentEpochs); a record written before them gives every partition the member epoch."""
    from coordinator.group.consumer_group import ConsumerGroupMember

    tid = uuid.uuid4()
    member = ConsumerGroupMember("m", member_epoch=5, assigned_partitions={tid: frozenset({0, 1})},
                                 assignment_epochs={(tid, 0): 2, (tid, 1): 5})
    key, value = member.current_assignment_record("g").encode()
    replayed = ConsumerGroupMember("m").updated_with_assignment(rec.decode_record(key, value).value)
    assert (replayed.assignment_epoch(tid, 0), replayed.assignment_epoch(tid, 1), replayed.assignment_epoch(tid, 2)) \
        == (2, 5, None)
    old = rec.consumer_group_current_assignment_record("g", "m", 4, 3, 0, {tid: frozenset({0})}, {})
    old.value.assigned_partitions[0].assignment_epochs = []  # as a Kafka 4.1 record has it
    key, value = old.encode()
    assert ConsumerGroupMember("m").updated_with_assignment(rec.decode_record(key, value).value).assignment_epoch(
        tid, 0) == 4


def test_unknown_record_types_and_garbage():
    with pytest.raises(rec.UnknownRecordTypeError):
        rec.decode_record(struct.pack(">h", 9) + _s("g"), None)  # 4.1's ShareGroupPartitionMetadata
    with pytest.raises(DecodeError):
        rec.decode_record(b"\x00", None)
    with pytest.raises(DecodeError):
        rec.decode_record(struct.pack(">h", 2), None)


def test_newer_value_versions_are_read_with_the_newest_known_schema():
    om = rec.OffsetAndMetadata(committed_offset=1, leader_epoch=2, metadata="x", commit_timestamp_ms=3)
    key, value = rec.offset_commit_record("g", "t", 0, om).encode()
    from wire.messages import OffsetCommitValue
    v4 = struct.pack(">h", 4) + OffsetCommitValue(offset=1, leader_epoch=2, metadata="x", commit_timestamp=3,
                                                  topic_id=uuid.UUID(int=9)).encode(4)
    assert rec.decode_record(key, v4).value.topic_id == uuid.UUID(int=9)
    # A future version is flexible like v4 (only tagged fields are added): read with the v4 schema.
    v9 = struct.pack(">h", 9) + v4[2:]
    assert rec.decode_record(key, v9).value.offset == 1


@pytest.mark.parametrize("text, expected", [
    ("", 0), ("hello", 99162322), ("polygenelubricants", -2**31), ("console-consumer-12345", None),
])
def test_java_string_hash(text, expected):
    h = java_string_hash(text)
    assert -2**31 <= h < 2**31
    if expected is not None:
        assert h == expected


def test_partition_for_matches_kafka():
    # Utils.abs(Integer.MIN_VALUE) is 0, not MIN_VALUE.
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50
    # Surrogate pairs hash as two UTF-16 code units, as in Java.
    assert java_string_hash("\U0001F600") == (0xD83D * 31 + 0xDE00)
