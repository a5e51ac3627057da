import pytest

from storage.config import LONG_MAX, LogConfig, validate_remote_storage
from storage.errors import LogConfigError
from wire import TimestampType


def test_kafka_defaults():
    c = LogConfig()
    assert c.segment_bytes == 1073741824
    assert c.segment_ms == 604800000
    assert c.segment_index_bytes == 10485760
    assert c.index_interval_bytes == 4096
    assert c.retention_ms == 604800000 and c.retention_bytes == -1
    assert c.cleanup_policy == ("delete",) and c.delete and not c.compact
    assert c.min_cleanable_dirty_ratio == 0.5
    assert c.delete_retention_ms == 86400000
    assert c.flush_messages == LONG_MAX and c.flush_ms == LONG_MAX
    assert c.max_message_bytes == 1048588
    assert c.file_delete_delay_ms == 60000
    assert c.message_timestamp_type == "CreateTime"
    assert c.message_timestamp_after_max_ms == 3600000
    assert c.timestamp_type is TimestampType.CREATE_TIME


def test_from_properties_uses_dotted_names():
    c = LogConfig.from_properties({"segment.bytes": "1048576", "cleanup.policy": "compact,delete",
                                   "min.cleanable.dirty.ratio": "0.1", "message.timestamp.type": "LogAppendTime",
                                   "unclean.leader.election.enable": "TRUE"})
    assert c.segment_bytes == 1048576 and c.segment_size == 1048576
    assert c.compact and c.delete
    assert c.min_cleanable_dirty_ratio == 0.1
    assert c.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert c.unclean_leader_election_enable is True
    assert LogConfig.from_properties(c.to_properties()) == c


@pytest.mark.parametrize("name,value", [
    ("segment.bytes", "1000"), ("segment.bytes", "abc"), ("segment.ms", "0"), ("retention.ms", "-2"),
    ("min.cleanable.dirty.ratio", "1.5"), ("cleanup.policy", "forever"), ("message.timestamp.type", "Now"),
    ("compression.type", "brotli"), ("unclean.leader.election.enable", "yes"), ("segment.index.bytes", "3"),
    ("no.such.config", "1"), ("max.message.bytes", str(1 << 40)),
])
def test_invalid_values_name_the_property(name, value):
    with pytest.raises(LogConfigError) as err:
        LogConfig.from_properties({name: value})
    assert name in str(err.value)


@pytest.mark.parametrize("name,value,reason", [
    ("retention.ms", "x", "Not a number of type LONG"), ("segment.bytes", "1_048_576", "Not a number of type INT"),
    ("max.message.bytes", str(1 << 40), "Not a number of type INT"),
    ("min.cleanable.dirty.ratio", "nan", "Not a number of type DOUBLE"),
])
def test_unparsable_numbers_read_as_in_kafka(name, value, reason):
    with pytest.raises(LogConfigError) as err:
        LogConfig.from_properties({name: value})
    assert str(err.value) == f"Invalid value {value} for configuration {name}: {reason}"


def test_min_lag_above_max_lag_is_refused():
    with pytest.raises(LogConfigError, match="min.compaction.lag.ms"):
        LogConfig.from_properties({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"})


def test_internal_segment_bytes_overrides_for_tests():
    c = LogConfig.from_properties({"internal.segment.bytes": "4096"})
    assert c.segment_size == 4096
    assert LogConfig(segment_ms=1000, max_compaction_lag_ms=100, cleanup_policy=("compact",)).max_segment_ms == 100


# -- tiered storage (Kafka 4.4's LogConfig.validateTopicLogConfigValues) -------------------------------------

def _tiered_error(props: dict[str, str], *, system: bool = True, was: bool = False) -> str | None:
    try:
        validate_remote_storage(LogConfig.from_properties(props), system_enabled=system, was_remote_enabled=was)
    except LogConfigError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("props, system, was, expected", [
    ({"remote.storage.enable": "true"}, True, False, None),
    ({"remote.storage.enable": "true"}, False, False,
     "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."),
    ({"remote.storage.enable": "true", "cleanup.policy": "compact"}, True, False,
     "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list."),
    ({"remote.storage.enable": "true", "cleanup.policy": "delete,compact"}, True, False,
     "Remote log storage only supports topics with cleanup.policy=delete or cleanup.policy being an empty list."),
    ({"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "-1"}, True, False,
     "Invalid value -1 for configuration local.retention.bytes: Value must not be -1 as retention.bytes value is "
     "set as 100."),
    ({"remote.storage.enable": "true", "retention.bytes": "100", "local.retention.bytes": "200"}, True, False,
     "Invalid value 200 for configuration local.retention.bytes: Value must not be more than retention.bytes "
     "property value: 100"),
    ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "2000"}, True, False,
     "Invalid value 2000 for configuration local.retention.ms: Value must not be more than retention.ms property "
     "value: 1000"),
    ({"remote.storage.enable": "true", "remote.log.copy.disable": "true", "retention.ms": "1000",
      "local.retention.ms": "500"}, True, False,
     "When `remote.log.copy.disable` is set to true, the `local.retention.ms` and `retention.ms` must be set to "
     "the identical value because there will be no more logs copied to the remote storage."),
    ({"remote.storage.enable": "true", "retention.ms": "1000", "remote.copy.lag.ms": "1001"}, True, False,
     "Invalid value 1001 for configuration remote.copy.lag.ms: Value must not exceed local.retention.ms "
     "(effective value: 1000)"),
    ({"remote.storage.enable": "true", "retention.ms": "1000", "local.retention.ms": "900",
      "remote.copy.lag.ms": "-1"}, True, False, None),
    ({"remote.storage.enable": "false"}, True, True,
     "It is invalid to disable remote storage without deleting remote data. If you want to keep the remote data "
     "and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. If you want to "
     "disable remote storage and delete all remote data, please set "
     "`remote.storage.enable=false,remote.log.delete.on.disable=true`."),
    ({"remote.storage.enable": "false", "remote.log.delete.on.disable": "true"}, True, True, None),
    ({"remote.storage.enable": "false"}, False, False, None),
])
def test_tiered_storage_rules_are_kafkas(props, system, was, expected):
    assert _tiered_error(props, system=system, was=was) == expected


def test_copy_lag_below_minus_one_is_refused():
    with pytest.raises(LogConfigError, match="remote.copy.lag.bytes"):
        LogConfig.from_properties({"remote.copy.lag.bytes": "-2"})


def test_effective_local_retention_and_copy_lag():
    c = LogConfig.from_properties({"retention.ms": "5000", "retention.bytes": "100", "remote.copy.lag.ms": "-1",
                                   "remote.copy.lag.bytes": "-1", "local.retention.bytes": "50"})
    assert (c.local_retention_ms_effective, c.local_retention_bytes_effective) == (5000, 50)
    assert (c.remote_copy_lag_ms_effective, c.remote_copy_lag_bytes_effective) == (5000, 50)
