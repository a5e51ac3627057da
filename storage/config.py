"""Per-topic log configuration: Kafka's topic configs, their defaults and their validation.

Attribute names are Kafka's dotted names with underscores (``segment.bytes`` → ``segment_bytes``);
``LogConfig.from_properties`` takes the dotted names as strings, as CreateTopics / AlterConfigs carry
them, and refuses a bad value with a ``LogConfigError`` naming the property. Defaults are Apache Kafka
4.1's (storage LogConfig / ServerLogConfigs).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.errors import InvalidTopicConfigError, LogConfigError
from wire import TimestampType

__all__ = ["LogConfig", "LONG_MAX", "TOPIC_CONFIG_NAMES", "validate_remote_storage"]

LONG_MAX = (1 << 63) - 1
INT_MAX = (1 << 31) - 1
_LONG_MIN = -(1 << 63)
_INT_MIN = -(1 << 31)

CLEANUP_POLICY_COMPACT = "compact"
CLEANUP_POLICY_DELETE = "delete"
_COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The topic configs the log honours (frozen: a config change swaps in a new instance)."""

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    retention_bytes: int = -1
    retention_ms: int = 7 * 24 * 3600 * 1000
    max_message_bytes: int = 1024 * 1024 + 12
    file_delete_delay_ms: int = 60_000
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    cleanup_policy: tuple[str, ...] = (CLEANUP_POLICY_DELETE,)
    unclean_leader_election_enable: bool = False
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    preallocate: bool = False
    message_timestamp_type: str = "CreateTime"
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3600 * 1000
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    remote_storage_enable: bool = False
    local_retention_ms: int = -2
    local_retention_bytes: int = -2
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_copy_lag_ms: int = 0
    remote_copy_lag_bytes: int = 0
    max_decompressed_message_bytes: int = 2147483639
    errors_deadletterqueue_group_enable: bool = False
    # Kafka's testing-only override of segment.bytes (which must be >= 1 MiB): small segments in tests.
    internal_segment_bytes: int | None = field(default=None)

    # -- derived: computed once (the config is frozen), as every append reads them ------------------------
    compact: bool = field(init=False, repr=False, compare=False)
    # The roll size in bytes: internal.segment.bytes when set, else segment.bytes.
    segment_size: int = field(init=False, repr=False, compare=False)
    # segment.ms, capped by max.compaction.lag.ms on compacted topics (so dirty data gets rolled).
    max_segment_ms: int = field(init=False, repr=False, compare=False)
    timestamp_type: TimestampType = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compact = CLEANUP_POLICY_COMPACT in self.cleanup_policy
        derive = object.__setattr__  # (frozen)
        derive(self, "compact", compact)
        derive(self, "segment_size", self.internal_segment_bytes if self.internal_segment_bytes is not None
               else self.segment_bytes)
        derive(self, "max_segment_ms", min(self.max_compaction_lag_ms, self.segment_ms)
               if compact and self.max_compaction_lag_ms > 0 else self.segment_ms)
        derive(self, "timestamp_type", TimestampType.LOG_APPEND_TIME if self.message_timestamp_type == "LogAppendTime"
               else TimestampType.CREATE_TIME)

    @property
    def delete(self) -> bool:
        return CLEANUP_POLICY_DELETE in self.cleanup_policy

    @property
    def max_index_size(self) -> int:
        return self.segment_index_bytes

    @property
    def local_retention_ms_effective(self) -> int:
        """local.retention.ms, with -2 meaning retention.ms (what the local tier keeps of a tiered topic)."""
        return self.retention_ms if self.local_retention_ms == -2 else self.local_retention_ms

    @property
    def local_retention_bytes_effective(self) -> int:
        """local.retention.bytes, with -2 meaning retention.bytes."""
        return self.retention_bytes if self.local_retention_bytes == -2 else self.local_retention_bytes

    @property
    def remote_copy_lag_ms_effective(self) -> int:
        """remote.copy.lag.ms, with -1 meaning the effective local.retention.ms (KIP-1241)."""
        return self.local_retention_ms_effective if self.remote_copy_lag_ms == -1 else self.remote_copy_lag_ms

    @property
    def remote_copy_lag_bytes_effective(self) -> int:
        """remote.copy.lag.bytes, with -1 meaning the effective local.retention.bytes (KIP-1241)."""
        return self.local_retention_bytes_effective if self.remote_copy_lag_bytes == -1 else self.remote_copy_lag_bytes

    # -- parsing -------------------------------------------------------------------------------------
    @classmethod
    def from_properties(cls, props: Mapping[str, str], defaults: LogConfig | None = None) -> LogConfig:
        """A config from Kafka's dotted names (``{"segment.bytes": "1048576"}``) over ``defaults``.

        Raises LogConfigError for an unknown name, a value of the wrong type or out of Kafka's range, and
        for min.compaction.lag.ms > max.compaction.lag.ms.
        """
        base = defaults if defaults is not None else cls()
        changes: dict[str, Any] = {}
        for name, raw in props.items():
            spec = _SPECS.get(name)
            if spec is None:
                raise LogConfigError(name, raw, "unknown topic config name")
            attr, parse = spec
            changes[attr] = parse(name, raw)
        config = dataclasses.replace(base, **changes)
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
            raise LogConfigError("min.compaction.lag.ms", config.min_compaction_lag_ms,
                                 f"conflict topic config setting min.compaction.lag.ms "
                                 f"({config.min_compaction_lag_ms}) > max.compaction.lag.ms "
                                 f"({config.max_compaction_lag_ms})")
        return config

    def to_properties(self) -> dict[str, str]:
        """The dotted-name form of every config (what DescribeConfigs shows)."""
        out: dict[str, str] = {}
        for name, (attr, _) in _SPECS.items():
            value = getattr(self, attr)
            if value is None:
                continue
            if isinstance(value, bool):
                out[name] = "true" if value else "false"
            elif isinstance(value, tuple):
                out[name] = ",".join(value)
            else:
                out[name] = str(value)
        return out


# -- value parsers (Kafka's ConfigDef types and validators) ------------------------------------------------


# What Java's Integer.parseInt / Long.parseLong and Double.parseDouble accept (Python's int() and float()
# also take underscores, non-ASCII digits and "inf"/"nan", which Kafka refuses).
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[fFdD]?)")


def _integer(lo: int, hi: int, type_lo: int, type_hi: int, type_name: str) -> Callable[[str, str], int]:
    def parse(name: str, raw: str) -> int:
        text = str(raw).strip()
        value = int(text, 10) if _JAVA_INTEGER.fullmatch(text) else None
        if value is None or not type_lo <= value <= type_hi:  # Java's parse fails on overflow too
            raise LogConfigError(name, raw, f"Not a number of type {type_name}")
        if not lo <= value <= hi:
            bound = f"Value must be at least {lo}" if hi == type_hi else f"Value must be in [{lo}, {hi}]"
            raise LogConfigError(name, raw, bound)
        return value
    return parse


def _int(lo: int = _INT_MIN, hi: int = INT_MAX) -> Callable[[str, str], int]:
    return _integer(lo, hi, _INT_MIN, INT_MAX, "INT")


def _long(lo: int = _LONG_MIN, hi: int = LONG_MAX) -> Callable[[str, str], int]:
    return _integer(lo, hi, _LONG_MIN, LONG_MAX, "LONG")


def _double(lo: float, hi: float) -> Callable[[str, str], float]:
    def parse(name: str, raw: str) -> float:
        text = str(raw).strip()
        if not _JAVA_DOUBLE.fullmatch(text):
            raise LogConfigError(name, raw, "Not a number of type DOUBLE")
        value = float(text.rstrip("fFdD").replace("Infinity", "inf"))
        if not lo <= value <= hi:
            raise LogConfigError(name, raw, f"Value must be in [{lo}, {hi}]")
        return value
    return parse


def _bool(name: str, raw: str) -> bool:
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise LogConfigError(name, raw, "Expected value to be either true or false")
    return text == "true"


def _one_of(*options: str, case_sensitive: bool = True) -> Callable[[str, str], str]:
    def parse(name: str, raw: str) -> str:
        text = str(raw).strip()
        for option in options:
            if text == option or (not case_sensitive and text.lower() == option.lower()):
                return option
        raise LogConfigError(name, raw, f"String must be one of: {', '.join(options)}")
    return parse


def _policy(name: str, raw: str) -> tuple[str, ...]:
    items = tuple(p.strip().lower() for p in str(raw).split(",") if p.strip())
    for item in items:
        if item not in (CLEANUP_POLICY_COMPACT, CLEANUP_POLICY_DELETE):
            raise LogConfigError(name, raw, "String must be one of: compact, delete")
    return items


def _list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in str(raw).split(",") if p.strip())


_SPECS: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "segment.bytes": ("segment_bytes", _int(1024 * 1024)),
    "segment.ms": ("segment_ms", _long(1)),
    "segment.jitter.ms": ("segment_jitter_ms", _long(0)),
    "segment.index.bytes": ("segment_index_bytes", _int(4)),
    "index.interval.bytes": ("index_interval_bytes", _int(0)),
    "flush.messages": ("flush_messages", _long(1)),
    "flush.ms": ("flush_ms", _long(0)),
    "retention.bytes": ("retention_bytes", _long()),
    "retention.ms": ("retention_ms", _long(-1)),
    "max.message.bytes": ("max_message_bytes", _int(0)),
    "file.delete.delay.ms": ("file_delete_delay_ms", _long(0)),
    "delete.retention.ms": ("delete_retention_ms", _long(0)),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _long(0)),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _long(1)),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _double(0.0, 1.0)),
    "cleanup.policy": ("cleanup_policy", _policy),
    "unclean.leader.election.enable": ("unclean_leader_election_enable", _bool),
    "min.insync.replicas": ("min_insync_replicas", _int(1)),
    "compression.type": ("compression_type", _one_of(*_COMPRESSION_TYPES, case_sensitive=False)),
    "compression.gzip.level": ("compression_gzip_level", _int(-1, 9)),
    "compression.lz4.level": ("compression_lz4_level", _int(1, 17)),
    "compression.zstd.level": ("compression_zstd_level", _int(-131072, 22)),
    "preallocate": ("preallocate", _bool),
    "message.timestamp.type": ("message_timestamp_type", _one_of(*_TIMESTAMP_TYPES)),
    "message.timestamp.before.max.ms": ("message_timestamp_before_max_ms", _long(0)),
    "message.timestamp.after.max.ms": ("message_timestamp_after_max_ms", _long(0)),
    "leader.replication.throttled.replicas": ("leader_replication_throttled_replicas", _list),
    "follower.replication.throttled.replicas": ("follower_replication_throttled_replicas", _list),
    "remote.storage.enable": ("remote_storage_enable", _bool),
    "local.retention.ms": ("local_retention_ms", _long(-2)),
    "local.retention.bytes": ("local_retention_bytes", _long(-2)),
    "remote.log.copy.disable": ("remote_log_copy_disable", _bool),
    "remote.log.delete.on.disable": ("remote_log_delete_on_disable", _bool),
    "remote.copy.lag.ms": ("remote_copy_lag_ms", _long(-1)),
    "remote.copy.lag.bytes": ("remote_copy_lag_bytes", _long(-1)),
    "max.decompressed.message.bytes": ("max_decompressed_message_bytes", _int(1, 2147483639)),
    "errors.deadletterqueue.group.enable": ("errors_deadletterqueue_group_enable", _bool),
    "internal.segment.bytes": ("internal_segment_bytes", _int(1)),
}

TOPIC_CONFIG_NAMES: tuple[str, ...] = tuple(sorted(_SPECS))


def validate_remote_storage(config: LogConfig, *, system_enabled: bool, was_remote_enabled: bool) -> None:
    """Kafka 4.4's LogConfig.validateTopicLogConfigValues for tiered storage (its checks, order and words).

    ``config`` is the topic's configs over the broker's defaults; ``was_remote_enabled`` whether the topic had
    remote.storage.enable=true before this change. Raises LogConfigError (INVALID_CONFIG).
    """
    if not config.remote_storage_enable:
        if was_remote_enabled and not config.remote_log_delete_on_disable:
            raise InvalidTopicConfigError(
                "It is invalid to disable remote storage without deleting remote data. If you want to keep the "
                "remote data and turn to read only, please set `remote.storage.enable=true,"
                "remote.log.copy.disable=true`. If you want to disable remote storage and delete all remote data, "
                "please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.")
        return
    if not system_enabled:
        raise InvalidTopicConfigError("Tiered Storage functionality is disabled in the broker. Topic cannot be "
                                      "configured with remote log storage.")
    if config.cleanup_policy and config.cleanup_policy != (CLEANUP_POLICY_DELETE,):
        raise InvalidTopicConfigError("Remote log storage only supports topics with cleanup.policy=delete or "
                                      "cleanup.policy being an empty list.")
    for kind, total, local in (("bytes", config.retention_bytes, config.local_retention_bytes),
                               ("ms", config.retention_ms, config.local_retention_ms)):
        if total > -1 and local != -2:
            if local == -1:
                raise LogConfigError(f"local.retention.{kind}", local,
                                     f"Value must not be -1 as retention.{kind} value is set as {total}.")
            if local > total:
                raise LogConfigError(f"local.retention.{kind}", local,
                                     f"Value must not be more than retention.{kind} property value: {total}")
    if config.remote_log_copy_disable:
        for kind, total, local in (("bytes", config.retention_bytes, config.local_retention_bytes),
                                   ("ms", config.retention_ms, config.local_retention_ms)):
            if local != -2 and local != total:
                raise InvalidTopicConfigError(
                    f"When `remote.log.copy.disable` is set to true, the `local.retention.{kind}` and "
                    f"`retention.{kind}` must be set to the identical value because there will be no more logs "
                    "copied to the remote storage.")
    for kind, lag, local in (("ms", config.remote_copy_lag_ms, config.local_retention_ms_effective),
                             ("bytes", config.remote_copy_lag_bytes, config.local_retention_bytes_effective)):
        if lag > 0 and local >= 0 and lag > local:
            raise LogConfigError(f"remote.copy.lag.{kind}", lag,
                                 f"Value must not exceed local.retention.{kind} (effective value: {local})")
