"""Topic and broker configs as DescribeConfigs / CreateTopics show them, and topic config validation.

The values and their parsing live in ``storage.LogConfig`` (topic configs) and ``pykbroker.config``
(broker properties); this module adds what the admin APIs need on top: each topic config's type, its
broker synonyms (``retention.ms`` <- ``log.retention.ms`` <- ``log.retention.minutes`` <-
``log.retention.hours``), where an effective value comes from, and Kafka's error messages.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pykbroker.config import CONFIG_DEFS, Config
from pykbroker.iceberg.config import ICEBERG_TOPIC_CONFIGS, iceberg_config_error, split_topic_configs
from pykbroker.kafka_broker_configs import KAFKA_BROKER_CONFIGS
from storage import LogConfig
from storage.config import validate_remote_storage
from storage.errors import LogConfigError

__all__ = ["ConfigEntry", "ConfigSource", "ConfigType", "TOPIC_CONFIGS", "broker_config_entries", "config_synonyms",
           "static_layers", "topic_config_entries", "topic_config_error"]


class ConfigSource:
    """DescribeConfigs' config_source values."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigType:
    """DescribeConfigs' config_type values (v3+)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True)
class TopicConfigDef:
    """A topic config: its type, the broker properties it falls back to (first wins), its documentation."""

    config_type: int
    synonyms: tuple[str, ...]
    doc: str


_T = ConfigType
TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    "cleanup.policy": TopicConfigDef(_T.LIST, ("log.cleanup.policy",),
                                     "Retention policy of old segments: delete, compact, or both."),
    "compression.gzip.level": TopicConfigDef(_T.INT, ("compression.gzip.level",), "Gzip level when compression.type=gzip."),
    "compression.lz4.level": TopicConfigDef(_T.INT, ("compression.lz4.level",), "Lz4 level when compression.type=lz4."),
    "compression.type": TopicConfigDef(_T.STRING, ("compression.type",),
                                       "Final compression of the topic's batches; 'producer' keeps the producer's."),
    "compression.zstd.level": TopicConfigDef(_T.INT, ("compression.zstd.level",), "Zstd level when compression.type=zstd."),
    "delete.retention.ms": TopicConfigDef(_T.LONG, ("log.cleaner.delete.retention.ms",),
                                          "How long tombstones are kept on compacted topics."),
    "file.delete.delay.ms": TopicConfigDef(_T.LONG, ("log.segment.delete.delay.ms",),
                                           "Time to wait before deleting a file from the filesystem."),
    "flush.messages": TopicConfigDef(_T.LONG, ("log.flush.interval.messages",),
                                     "Records appended before the log is fsynced."),
    "errors.deadletterqueue.group.enable": TopicConfigDef(
        _T.BOOLEAN, (), "Whether share groups may use this topic as their dead-letter queue (KIP-1191)."),
    "flush.ms": TopicConfigDef(_T.LONG, ("log.flush.interval.ms",), "Time after which the log is fsynced."),
    "follower.replication.throttled.replicas": TopicConfigDef(
        _T.LIST, ("follower.replication.throttled.replicas",), "Replicas throttled on the follower side."),
    "index.interval.bytes": TopicConfigDef(_T.INT, ("log.index.interval.bytes",),
                                           "Bytes between offset index entries."),
    "leader.replication.throttled.replicas": TopicConfigDef(
        _T.LIST, ("leader.replication.throttled.replicas",), "Replicas throttled on the leader side."),
    "local.retention.bytes": TopicConfigDef(_T.LONG, ("log.local.retention.bytes",),
                                            "Local size limit with tiered storage (-2: retention.bytes)."),
    "local.retention.ms": TopicConfigDef(_T.LONG, ("log.local.retention.ms",),
                                         "Local time limit with tiered storage (-2: retention.ms)."),
    "max.compaction.lag.ms": TopicConfigDef(_T.LONG, ("log.cleaner.max.compaction.lag.ms",),
                                            "Longest time a record stays uncompacted."),
    "max.decompressed.message.bytes": TopicConfigDef(
        _T.INT, ("max.decompressed.message.bytes",), "Largest decompressed size of a single record."),
    "max.message.bytes": TopicConfigDef(_T.INT, ("message.max.bytes",), "Largest record batch size allowed."),
    "message.timestamp.after.max.ms": TopicConfigDef(
        _T.LONG, ("log.message.timestamp.after.max.ms",), "Largest allowed timestamp ahead of the broker's clock."),
    "message.timestamp.before.max.ms": TopicConfigDef(
        _T.LONG, ("log.message.timestamp.before.max.ms",), "Largest allowed timestamp behind the broker's clock."),
    "message.timestamp.type": TopicConfigDef(_T.STRING, ("log.message.timestamp.type",),
                                             "CreateTime or LogAppendTime."),
    "min.cleanable.dirty.ratio": TopicConfigDef(_T.DOUBLE, ("log.cleaner.min.cleanable.ratio",),
                                                "Dirty ratio above which the log is compacted."),
    "min.compaction.lag.ms": TopicConfigDef(_T.LONG, ("log.cleaner.min.compaction.lag.ms",),
                                            "Shortest time a record stays uncompacted."),
    "min.insync.replicas": TopicConfigDef(_T.INT, ("min.insync.replicas",),
                                          "Minimum ISR size for acks=all produces."),
    "preallocate": TopicConfigDef(_T.BOOLEAN, ("log.preallocate",), "Preallocate segment files."),
    "remote.log.copy.disable": TopicConfigDef(_T.BOOLEAN, (), "Stop copying segments to remote storage."),
    "remote.log.delete.on.disable": TopicConfigDef(_T.BOOLEAN, (), "Delete remote data when tiering is disabled."),
    "remote.copy.lag.bytes": TopicConfigDef(_T.LONG, ("log.remote.copy.lag.bytes",),
                                            "Bytes behind the log end before a closed segment is copied (KIP-1241)."),
    "remote.copy.lag.ms": TopicConfigDef(_T.LONG, ("log.remote.copy.lag.ms",),
                                         "Age of a closed segment before it is copied to remote storage (KIP-1241)."),
    "remote.storage.enable": TopicConfigDef(_T.BOOLEAN, (), "Tiered storage for this topic."),
    "retention.bytes": TopicConfigDef(_T.LONG, ("log.retention.bytes",), "Largest partition size before deletion."),
    "retention.ms": TopicConfigDef(_T.LONG, ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
                                   "Longest time a segment is kept before deletion."),
    "segment.bytes": TopicConfigDef(_T.INT, ("log.segment.bytes",), "Segment file size."),
    "segment.index.bytes": TopicConfigDef(_T.INT, ("log.index.size.max.bytes",), "Offset index file size."),
    "segment.jitter.ms": TopicConfigDef(_T.LONG, ("log.roll.jitter.ms", "log.roll.jitter.hours"),
                                        "Random jitter subtracted from segment.ms."),
    "segment.ms": TopicConfigDef(_T.LONG, ("log.roll.ms", "log.roll.hours"), "Time after which a segment rolls."),
    "unclean.leader.election.enable": TopicConfigDef(
        _T.BOOLEAN, ("unclean.leader.election.enable",), "Allow out-of-ISR replicas to become leader."),
}

# pykbroker's own: the topic written into an Iceberg table (pykbroker.iceberg); the log never sees them.
TOPIC_CONFIGS.update({name: TopicConfigDef(getattr(_T, spec.type_name), (), spec.doc)
                      for name, spec in ICEBERG_TOPIC_CONFIGS.items()})
_ICEBERG_DEFAULTS = {name: spec.default for name, spec in ICEBERG_TOPIC_CONFIGS.items()}

_BROKER_DEFS = {d.name: d for d in CONFIG_DEFS}
_SENSITIVE_WORDS = ("password", "secret", "sasl.jaas", "ssl.keystore.key", "ssl.keystore.certificate.chain",
                    "ssl.truststore.certificates")


@dataclass(frozen=True)
class ConfigEntry:
    """One described config; ``synonyms`` are (name, value, source), most specific first."""

    name: str
    value: str | None
    source: int
    config_type: int
    read_only: bool
    sensitive: bool
    documentation: str | None
    synonyms: tuple[tuple[str, str | None, int], ...]


def topic_config_error(configs: Mapping[str, str | None], *, defaults: LogConfig | None = None,
                       remote_storage_system_enable: bool = False,
                       existing: Mapping[str, str] | None = None) -> str | None:
    """Kafka's INVALID_CONFIG message for a set of topic configs, or None when they are valid.

    ``defaults`` (the broker's topic defaults): the tiered storage rules are checked on the configs over them, as
    Kafka's broker does, with ``existing`` the topic's configs before an alteration.
    """
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        return "Null value not supported for topic configs: " + ",".join(nulls)
    for name in configs:
        if name not in TOPIC_CONFIGS and name != "internal.segment.bytes":
            return f"Unknown topic config name: {name}"
    log_configs, iceberg = split_topic_configs(configs)  # type: ignore[arg-type]
    try:
        LogConfig.from_properties(log_configs)
        if defaults is not None:
            was_remote = (existing or {}).get("remote.storage.enable", "false").strip().lower() == "true"
            validate_remote_storage(LogConfig.from_properties(log_configs, defaults=defaults),
                                    system_enabled=remote_storage_system_enable, was_remote_enabled=was_remote)
    except LogConfigError as exc:
        return str(exc)
    return iceberg_config_error(iceberg)


Layers = Sequence[tuple[Mapping[str, str], int]]


def static_layers(config: Config) -> Layers:
    """The layers of a broker without dynamic configs: its properties, then the defaults."""
    return [(described_static(config.explicit), ConfigSource.STATIC_BROKER_CONFIG),
            (described_defaults(), ConfigSource.DEFAULT_CONFIG)]


def described_static(explicit: Mapping[str, str]) -> dict[str, str]:
    """The STATIC_BROKER_CONFIG layer: the properties given, with ``broker.id`` and ``node.id`` each set to the
    other where only one is given (as Kafka's KafkaConfig fills in the synonym before describing it)."""
    static = dict(explicit)
    for name, other in (("broker.id", "node.id"), ("node.id", "broker.id")):
        if name not in static and other in static:
            static[name] = static[other]
    return static


def described_defaults() -> dict[str, str]:
    """The DEFAULT_CONFIG layer: every default but those of names Kafka defines without one (node.id and
    log.dirs; pykbroker's are its single-node conveniences, which Kafka would not show)."""
    return {d.name: d.default for d in CONFIG_DEFS if d.default is not None and not (
        d.name in KAFKA_BROKER_CONFIGS and KAFKA_BROKER_CONFIGS[d.name].default is None)}


def config_synonyms(layers: Layers, names: Sequence[str], name: str) -> list[tuple[str, str | None, int]]:
    """ConfigHelper.configSynonyms: every layer's value of every synonym (layer by layer), from ``name`` on."""
    found: list[tuple[str, str | None, int]] = [(n, values[n], source) for values, source in layers for n in names
                                                if n in values]
    while found and found[0][0] != name:
        found.pop(0)
    return found


def topic_config_entries(layers: Layers | Config, topic_configs: Mapping[str, str], defaults: Mapping[str, str]
                         ) -> list[ConfigEntry]:
    """Every topic config with its effective value and source; ``defaults`` are the broker-level values.

    Synonyms are built as Kafka's ConfigHelper builds them: the topic's own value, then each broker
    synonym of each broker layer (this broker's dynamic configs, the cluster's dynamic defaults, the
    static properties, the defaults), and then everything before the first entry named after the main
    broker property is dropped. So ``retention.ms`` shows no synonyms unless ``log.retention.ms``
    itself is set (``log.retention.hours``' default 168 goes), and the source of a config with no
    synonyms left is DEFAULT_CONFIG.
    """
    if isinstance(layers, Config):
        layers = static_layers(layers)
    entries = []
    # Kafka has no iceberg.* configs: they are described (all of them) only for a topic that sets one.
    iceberg = any(name in _ICEBERG_DEFAULTS for name in topic_configs)
    for name, spec in sorted(TOPIC_CONFIGS.items()):
        if name in _ICEBERG_DEFAULTS and not iceberg:
            continue
        synonyms = config_synonyms(layers, spec.synonyms, spec.synonyms[0]) if spec.synonyms else []
        if name in topic_configs:
            synonyms.insert(0, (name, topic_configs[name], ConfigSource.TOPIC_CONFIG))
        value = topic_configs[name] if name in topic_configs else defaults.get(name, _ICEBERG_DEFAULTS.get(name))
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(name, value, source, spec.config_type, False, False, spec.doc,
                                   tuple(synonyms)))
    return entries


def broker_config_entries(layers: Layers | Config, dynamic: Callable[[str], bool] = lambda name: False,
                          synonyms_of: Callable[[str], Sequence[str]] = lambda name: [name],
                          type_of: Callable[[str], int | None] = lambda name: None) -> list[ConfigEntry]:
    """Every broker property we know with its effective value; read-only unless ``dynamic`` says otherwise,
    typed by ``type_of`` where it knows (else guessed from the default)."""
    if isinstance(layers, Config):
        layers = static_layers(layers)
    entries = []
    for d in sorted(CONFIG_DEFS, key=lambda d: d.name):
        if d.name.startswith("zookeeper."):
            continue  # ZooKeeper is how pykbroker's brokers agree, never shown: a Kafka 4.4 broker has no such names
        kafka_key = KAFKA_BROKER_CONFIGS.get(d.name)
        sensitive = any(word in d.name for word in _SENSITIVE_WORDS) or (
            kafka_key is not None and kafka_key.type == "PASSWORD")
        synonyms = config_synonyms(layers, synonyms_of(d.name), d.name)
        if (kafka_key is None or kafka_key.internal) and all(
                source == ConfigSource.DEFAULT_CONFIG for _, _, source in synonyms):
            continue  # Kafka describes an internal config, or a name it does not define, only where it is set
        if kafka_key is None:  # from Kafka's originals (super.users): of unknown type, so hidden
            sensitive = True
        value = None if sensitive else (synonyms[0][1] if synonyms else d.default)
        if sensitive:
            synonyms = [(n, None, s) for n, _, s in synonyms]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        config_type = type_of(d.name) or (getattr(ConfigType, kafka_key.type) if kafka_key is not None
                                          else ConfigType.UNKNOWN)
        entries.append(ConfigEntry(d.name, value, source, config_type, not dynamic(d.name), sensitive, d.doc,
                                   tuple(synonyms)))
    known = {d.name for d in CONFIG_DEFS}
    # Dynamic-only properties (the broker quotas: replication throttle rates, the log-dir copy rate) where a layer
    # sets them, as Kafka 4.4 describes them (its QuotaConfig definitions: typed, not sensitive, dynamic).
    for name in sorted({n for values, _ in layers for n in values if n not in known and dynamic(n) and type_of(n)}):
        synonyms = config_synonyms(layers, synonyms_of(name), name)
        entries.append(ConfigEntry(name, synonyms[0][1] if synonyms else None, synonyms[0][2] if synonyms
                                   else ConfigSource.DEFAULT_CONFIG, type_of(name) or ConfigType.UNKNOWN, False,
                                   False, None, tuple(synonyms)))
    # Listener-prefixed properties set in some layer: Kafka describes them from its originals, read-only (they are
    # not among AllDynamicConfigs), typed and synonymed as the property they override.
    for name in sorted({n for values, _ in layers for n in values if n.startswith("listener.name.") and n not in known}):
        base = name.split(".", 3)[3] if name.count(".") >= 3 else name
        kafka_key = KAFKA_BROKER_CONFIGS.get(base)
        sensitive = kafka_key is None or kafka_key.type == "PASSWORD"
        synonyms = config_synonyms(layers, synonyms_of(name), name)
        value = None if sensitive else (synonyms[0][1] if synonyms else None)
        if sensitive:
            synonyms = [(n, None, s) for n, _, s in synonyms]
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        config_type = getattr(ConfigType, kafka_key.type) if kafka_key is not None else ConfigType.PASSWORD
        entries.append(ConfigEntry(name, value, source, config_type, True, sensitive, None, tuple(synonyms)))
    return entries
