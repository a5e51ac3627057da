"""storage.log_validator: Kafka's LogValidator rules, per batch and per record (KIP-467)."""

from __future__ import annotations

import pytest

from storage import (
    InvalidRecordError,
    InvalidTimestampError,
    LogConfig,
    RecordTooLargeError,
    RecordValidationError,
)
from storage.errors import UnexpectedAppendOffsetError
from storage.log_validator import (
    analyze_and_validate,
    assign_offsets,
    check_follower_offsets,
    maybe_recompress,
    validate_records,
)
from storage.producer_state import AppendOrigin
from wire import CompressionType, Record, TimestampType, build_batch, decode_records, parse_batch_header

NOW = 1_700_000_000_000
HOUR = 3_600_000


def records(n: int, keyless: set[int] = frozenset(), deltas: dict[int, int] | None = None) -> list[Record]:
    return [Record(i, (deltas or {}).get(i, 0), None if i in keyless else b"k%d" % i, b"v") for i in range(n)]


def parsed(data: bytes, config: LogConfig | None = None, origin: str = AppendOrigin.CLIENT):
    return analyze_and_validate(bytearray(data), origin, config or LogConfig(), "t-0")


def validate(data: bytes, config: LogConfig, *, require_keys: bool = False, now: int = NOW) -> None:
    batches, buf = parsed(data, config)
    validate_records(buf, batches, config, "t-0", now, require_keys=require_keys)


def test_every_keyless_record_of_a_compacted_append_is_named():
    data = build_batch(records(20, {3, 17}), base_timestamp=NOW, compression=CompressionType.GZIP)
    with pytest.raises(RecordValidationError) as err:
        validate(data, LogConfig(cleanup_policy=("compact",)), require_keys=True)
    message = "Compacted topic cannot accept message without key in topic partition t-0"
    assert err.value.record_errors == [(3, message), (17, message)]
    assert err.value.error_code == 87 and isinstance(err.value, InvalidRecordError)
    assert str(err.value) == (
        "One or more records have been rejected due to 2 record errors in total, and only showing the first three "
        f"errors at most: [RecordError(batchIndex=3, message='{message}'), RecordError(batchIndex=17, "
        f"message='{message}')]")


def test_only_the_first_three_are_in_the_message_but_all_are_listed():
    with pytest.raises(RecordValidationError) as err:
        validate(build_batch(records(5, {0, 1, 2, 3, 4}), base_timestamp=NOW), LogConfig(), require_keys=True)
    assert [i for i, _ in err.value.record_errors] == [0, 1, 2, 3, 4]
    assert str(err.value).count("RecordError(") == 3


def test_timestamps_are_checked_per_record():
    config = LogConfig(message_timestamp_after_max_ms=HOUR)
    with pytest.raises(InvalidTimestampError) as err:
        validate(build_batch(records(4, deltas={2: 2 * HOUR}), base_timestamp=NOW), config)
    assert err.value.error_code == 32
    assert str(err.value) == "One or more records have been rejected due to invalid timestamp"
    bound = (1 << 63) - 1
    assert err.value.record_errors == [(2, f"Timestamp {NOW + 2 * HOUR} of message with offset 2 is out of range. "
                                           f"The timestamp should be within [{NOW - bound}, {NOW + HOUR}]")]


def test_a_before_bound_checks_records_below_the_base_timestamp():
    config = LogConfig(message_timestamp_before_max_ms=60_000)
    with pytest.raises(InvalidTimestampError) as err:
        validate(build_batch(records(3, deltas={0: -HOUR, 2: -HOUR}), base_timestamp=NOW), config)
    assert [i for i, _ in err.value.record_errors] == [0, 2]


def test_a_timestamp_error_wins_and_key_errors_are_listed_with_it():
    config = LogConfig(cleanup_policy=("compact",), message_timestamp_after_max_ms=HOUR)
    with pytest.raises(InvalidTimestampError) as err:
        validate(build_batch(records(4, {1}, {2: 2 * HOUR}), base_timestamp=NOW), config, require_keys=True)
    assert [i for i, _ in err.value.record_errors] == [1, 2]
    assert err.value.record_errors[0][1].startswith("Compacted topic cannot accept")


def test_log_append_time_from_a_producer():
    batch = build_batch(records(2), base_timestamp=NOW, timestamp_type=TimestampType.LOG_APPEND_TIME)
    validate(batch, LogConfig())  # a CreateTime topic checks the (max) timestamp instead
    with pytest.raises(InvalidTimestampError) as err:
        validate(batch, LogConfig(message_timestamp_type="LogAppendTime"))
    assert err.value.record_errors[1] == (1, f"Invalid timestamp type in message DefaultRecord(offset=1, "
                                             f"timestamp={NOW}, key=2 bytes, value=1 bytes). Producer should not set "
                                             f"timestamp type to LogAppendTime.")


def test_valid_batches_pass_and_a_log_append_time_topic_ignores_create_times():
    validate(build_batch(records(3), base_timestamp=NOW), LogConfig(cleanup_policy=("compact",)), require_keys=True)
    validate(build_batch(records(2, deltas={1: 5 * HOUR}), base_timestamp=NOW),
             LogConfig(message_timestamp_type="LogAppendTime"))


def test_structural_checks():
    data = build_batch(records(3), base_timestamp=NOW)
    batches, buf = parsed(data + data)
    assert [h.records_count for _, h in batches] == [3, 3]
    with pytest.raises(RecordTooLargeError):
        parsed(data, LogConfig(max_message_bytes=10))
    gz = build_batch(records(3), base_timestamp=NOW, compression=CompressionType.GZIP)
    with pytest.raises(InvalidRecordError, match="more than one batch"):
        parsed(gz + gz)
    with pytest.raises(InvalidRecordError, match="no batches"):
        parsed(b"")
    batches, buf = parsed(data + data[:30], origin=AppendOrigin.REPLICATION)  # a follower drops a partial tail
    assert len(batches) == 1 and bytes(buf) == data


def test_recompress_and_assign_offsets():
    config = LogConfig(compression_type="zstd")
    batches, buf = parsed(build_batch(records(3), base_timestamp=NOW), config)
    buf, batches = maybe_recompress(buf, batches, config)
    assert batches[0][1].attributes & 0x07 == CompressionType.ZSTD
    batches = assign_offsets(buf, batches, 40, 7, None)
    header = parse_batch_header(buf, 0)
    assert (header.base_offset, header.partition_leader_epoch) == (40, 7) == (batches[0][1].base_offset, 7)
    assert [r.key for r in decode_records(buf, 0)[1]] == [b"k0", b"k1", b"k2"]


def test_follower_offsets_must_follow_the_log_end():
    batches, _ = parsed(build_batch(records(3), base_offset=10, base_timestamp=NOW), origin=AppendOrigin.REPLICATION)
    assert check_follower_offsets(batches, 10, "t-0") == batches
    with pytest.raises(UnexpectedAppendOffsetError):
        check_follower_offsets(batches, 11, "t-0")
