"""Dynamic broker configs as Kafka 4.4's DynamicBrokerConfig has them: which broker configs may change at
runtime, Kafka's checks and messages for a change, and the effective config they make.

Layers, lowest first: the static properties (``Config``), the cluster-wide dynamic defaults (BROKER resource
``""``), this broker's dynamic configs (BROKER resource ``"<node.id>"``). A layer's value of ``log.retention.ms``
replaces the lower layers' ``log.retention.minutes`` / ``log.retention.hours`` too (Kafka's overrideProps). The
dynamic layers live in the metadata store; this module holds no I/O. Names that are neither Kafka broker configs
nor broker quotas are custom configs: Kafka accepts and stores them, and so do we.

Listener, SSL and SASL configs are per-broker, as in Kafka: stored and described, with Kafka's checks
(DynamicListenerConfig.validateReconfiguration: a change touching a listener-reconfigurable name is refused
while a listener's own ``listener.name.<name>.`` configs differ from those it was started with, the
reloadable keystore and truststore configs excepted). Applied here: a listener-prefixed keystore or
truststore of an SSL listener is reloaded (``pykbroker.security``); the other SASL and SSL settings, like
Kafka's for existing listeners, take effect when the broker restarts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pykbroker.broker_config_names import STATIC_BROKER_CONFIG_NAMES
from pykbroker.config import CONFIG_DEFS, REQUIREMENT_FAILED, Config, ConfigError, is_listener_property
from pykbroker.security.listeners import protocol_map
from pykbroker.security.tls import server_ssl_context
from pykbroker.topic_config import ConfigEntry, ConfigSource, ConfigType, described_defaults, described_static
from wire import java

__all__ = ["DynamicBrokerConfig", "DynamicConfigError", "DYNAMIC_CONFIGS", "broker_config_synonyms",
           "is_kafka_config", "validate", "apply_incremental", "java_set", "default_broker_config_entries"]

INVALID_REQUEST = 42
INVALID_CONFIG = 40
MIN_INSYNC_REPLICAS = "min.insync.replicas"
MAX_VALUE_SIZE = 32767  # Kafka's ConfigRecord keeps a value in a 16-bit-length string


class DynamicConfigError(Exception):
    """A refused change: Kafka's error code and message."""

    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- Kafka's types and validators ---------------------------------------------------------------------
_T = ConfigType
_INT_RANGE = {_T.INT: (-2**31, 2**31 - 1), _T.SHORT: (-2**15, 2**15 - 1), _T.LONG: (-2**63, 2**63 - 1)}
_TYPE_NAME = {_T.INT: "INT", _T.SHORT: "SHORT", _T.LONG: "LONG", _T.DOUBLE: "DOUBLE"}


def _invalid(name: str, value: object, why: str) -> DynamicConfigError:
    return DynamicConfigError(INVALID_REQUEST, f"Invalid value {value} for configuration {name}: {why}")


def _java(n: int | float) -> str:
    return repr(float(n)) if isinstance(n, float) else str(n)


def _parse(name: str, config_type: int, raw: str) -> object:
    """ConfigDef.parseType: the typed value, or Kafka's message for a value of the wrong type."""
    s = raw.strip()
    if config_type == _T.BOOLEAN:
        if s.lower() not in ("true", "false"):
            raise _invalid(name, raw, "Expected value to be either true or false")
        return s.lower() == "true"
    if config_type in _INT_RANGE:
        lo, hi = _INT_RANGE[config_type]
        try:
            n = int(s)
        except ValueError:
            n = None
        if n is None or not lo <= n <= hi:
            raise _invalid(name, raw, f"Not a number of type {_TYPE_NAME[config_type]}")
        return n
    if config_type == _T.DOUBLE:
        try:
            return float(s)
        except ValueError:
            raise _invalid(name, raw, "Not a number of type DOUBLE") from None
    if config_type == _T.LIST:
        return [p.strip() for p in s.split(",")] if s else []
    return s


Check = Callable[[str, object], None]


def _at_least(lo: int | float) -> Check:
    def check(name: str, v: object) -> None:
        if v < lo:  # type: ignore[operator]
            raise _invalid(name, _java(v), f"Value must be at least {lo}")  # type: ignore[arg-type]
    return check


def _between(lo: int | float, hi: int | float) -> Check:
    def check(name: str, v: object) -> None:
        _at_least(lo)(name, v)
        if v > hi:  # type: ignore[operator]
            raise _invalid(name, _java(v), f"Value must be no more than {hi}")  # type: ignore[arg-type]
    return check


def _one_of(*options: str) -> Check:
    def check(name: str, v: object) -> None:
        for item in (v if isinstance(v, list) else [v]):
            if item not in options:
                raise _invalid(name, item, "String must be one of: " + ", ".join(options))
    return check


def _gzip_level(name: str, v: object) -> None:
    if v > 9 or (v < 1 and v != -1):  # type: ignore[operator]
        raise _invalid(name, v, "Value must be between 1 and 9 or equal to -1")


@dataclass(frozen=True)
class DynamicConfigDef:
    """One dynamically updatable broker config: its Kafka type, check, and whether it is per-broker only."""

    config_type: int
    check: Check | None = None
    per_broker: bool = False
    kafka_config: bool = True  # False: a broker quota, validated but not one of KafkaConfig's names
    default: str | None = None  # the ConfigDef default of a LIST, which APPEND and SUBTRACT start from


def _d(config_type: int, check: Check | None = None, **kw) -> DynamicConfigDef:
    return DynamicConfigDef(config_type, check, **kw)


def _listener(config_type: int, check: Check | None = None, default: str | None = None) -> DynamicConfigDef:
    return DynamicConfigDef(config_type, check, per_broker=True, default=default)


_B, _S, _I, _SH, _L, _D, _LI, _C, _P = (_T.BOOLEAN, _T.STRING, _T.INT, _T.SHORT, _T.LONG, _T.DOUBLE, _T.LIST,
                                        _T.CLASS, _T.PASSWORD)

# SslConfigs.RECONFIGURABLE_CONFIGS: per listener only (listener.name.<listener>.<config>)
SECURITY_CONFIGS: tuple[str, ...] = (
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.truststore.certificates")

# DynamicBrokerConfig.AllDynamicConfigs, plus the broker quotas DynamicConfig.Broker also accepts.
DYNAMIC_CONFIGS: dict[str, DynamicConfigDef] = {
    # LogCleaner
    "log.cleaner.threads": _d(_I, _at_least(0)),
    "log.cleaner.dedupe.buffer.size": _d(_L),
    "log.cleaner.io.buffer.load.factor": _d(_D),
    "log.cleaner.io.buffer.size": _d(_I, _at_least(0)),
    "message.max.bytes": _d(_I, _at_least(0)),
    "log.cleaner.io.max.bytes.per.second": _d(_D),
    "log.cleaner.backoff.ms": _d(_L, _at_least(0)),
    # DynamicLogConfig: the broker synonyms of topic configs
    "log.segment.bytes": _d(_I, _at_least(1024 * 1024)),
    "log.roll.ms": _d(_L),
    "log.roll.jitter.ms": _d(_L),
    "log.index.size.max.bytes": _d(_I, _at_least(4)),
    "log.flush.interval.messages": _d(_L, _at_least(1)),
    "log.flush.interval.ms": _d(_L),
    "log.retention.bytes": _d(_L),
    "log.retention.ms": _d(_L),
    "log.index.interval.bytes": _d(_I, _at_least(0)),
    "log.cleaner.delete.retention.ms": _d(_L, _at_least(0)),
    "log.cleaner.min.compaction.lag.ms": _d(_L, _at_least(0)),
    "log.cleaner.max.compaction.lag.ms": _d(_L, _at_least(1)),
    "log.segment.delete.delay.ms": _d(_L, _at_least(0)),
    "log.cleaner.min.cleanable.ratio": _d(_D, _between(0, 1)),
    "log.cleanup.policy": _d(_LI, _one_of("compact", "delete"), default="delete"),
    "unclean.leader.election.enable": _d(_B),
    "min.insync.replicas": _d(_I, _at_least(1)),
    "compression.type": _d(_S, _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "compression.gzip.level": _d(_I, _gzip_level),
    "compression.lz4.level": _d(_I, _between(1, 17)),
    "compression.zstd.level": _d(_I, _between(-131072, 22)),
    "log.preallocate": _d(_B),
    "log.message.timestamp.type": _d(_S, _one_of("CreateTime", "LogAppendTime")),
    "log.message.timestamp.before.max.ms": _d(_L, _at_least(0)),
    "log.message.timestamp.after.max.ms": _d(_L, _at_least(0)),
    "log.local.retention.ms": _d(_L, _at_least(-2)),
    "log.local.retention.bytes": _d(_L, _at_least(-2)),
    "log.remote.copy.lag.ms": _d(_L, _at_least(-1)),
    "log.remote.copy.lag.bytes": _d(_L, _at_least(-1)),
    # DynamicThreadPool, metrics, SocketServer
    "num.io.threads": _d(_I, _at_least(1)),
    "num.replica.fetchers": _d(_I),
    "num.recovery.threads.per.data.dir": _d(_I, _at_least(1)),
    "background.threads": _d(_I, _at_least(1)),
    "metric.reporters": _d(_LI, default="org.apache.kafka.common.metrics.JmxReporter"),
    "max.connections.per.ip": _d(_I, _at_least(0)),
    "max.connections.per.ip.overrides": _d(_S),
    "max.connections": _d(_I, _at_least(0)),
    "max.connection.creation.rate": _d(_I, _at_least(0)),
    "num.network.threads": _d(_I, _at_least(1)),
    # producer state
    "producer.id.expiration.ms": _d(_I, _at_least(1)),
    "transaction.partition.verification.enable": _d(_B),
    # tiered storage
    "remote.log.index.file.cache.total.size.bytes": _d(_L, _at_least(1)),
    "remote.fetch.max.wait.ms": _d(_I, _at_least(1)),
    "remote.log.manager.copy.max.bytes.per.second": _d(_L, _at_least(1)),
    "remote.log.manager.fetch.max.bytes.per.second": _d(_L, _at_least(1)),
    "remote.list.offsets.request.timeout.ms": _d(_L, _at_least(1)),
    "remote.log.manager.copier.thread.pool.size": _d(_I, _at_least(1)),
    "remote.log.manager.expiration.thread.pool.size": _d(_I, _at_least(1)),
    "remote.log.reader.threads": _d(_I, _at_least(1)),
    # Kafka 4.2-4.4's additions (cordoned.log.dirs, KIP-1066, takes effect at once: broker._apply_broker_configs)
    "config.providers": _d(_LI, default=""),
    "cordoned.log.dirs": _d(_LI, per_broker=True, default=""),
    "errors.deadletterqueue.auto.create.topics.enable": _d(_B),
    "errors.deadletterqueue.topic.name.prefix": _d(_S),
    "follower.fetch.last.tiered.offset.enable": _d(_B),
    "group.consumer.assignment.interval.ms": _d(_I, _at_least(0)),
    "group.share.assignment.interval.ms": _d(_I, _at_least(0)),
    "group.streams.assignment.interval.ms": _d(_I, _at_least(0)),
    "group.coordinator.cached.buffer.max.bytes": _d(_I),
    "share.coordinator.cached.buffer.max.bytes": _d(_I),
    "max.decompressed.message.bytes": _d(_I, _between(1, 2147483639)),
    "remote.log.manager.follower.thread.pool.size": _d(_I, _at_least(1)),
    # DynamicListenerConfig: per broker
    "listeners": _listener(_LI),
    "listener.security.protocol.map": _listener(_S),
    "principal.builder.class": _listener(_C),
    "ssl.protocol": _listener(_S),
    "ssl.provider": _listener(_S),
    "ssl.cipher.suites": _listener(_LI, default=""),
    "ssl.enabled.protocols": _listener(_LI, default="TLSv1.2,TLSv1.3"),
    **{name: _listener(_P if "password" in name or name in (
        "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates") else _S)
       for name in SECURITY_CONFIGS},
    "ssl.keymanager.algorithm": _listener(_S),
    "ssl.trustmanager.algorithm": _listener(_S),
    "ssl.endpoint.identification.algorithm": _listener(_S),
    "ssl.secure.random.implementation": _listener(_S),
    "ssl.client.auth": _listener(_S, _one_of("required", "requested", "none")),
    "ssl.engine.factory.class": _listener(_C),
    "sasl.mechanism.inter.broker.protocol": _listener(_S),
    "sasl.jaas.config": _listener(_P),
    "sasl.enabled.mechanisms": _listener(_LI, default="GSSAPI"),
    "sasl.kerberos.service.name": _listener(_S),
    "sasl.kerberos.kinit.cmd": _listener(_S),
    "sasl.kerberos.ticket.renew.window.factor": _listener(_D),
    "sasl.kerberos.ticket.renew.jitter": _listener(_D),
    "sasl.kerberos.min.time.before.relogin": _listener(_L),
    "sasl.kerberos.principal.to.local.rules": _listener(_LI, default="DEFAULT"),
    "sasl.login.refresh.window.factor": _listener(_D),
    "sasl.login.refresh.window.jitter": _listener(_D),
    "sasl.login.refresh.min.period.seconds": _listener(_SH),
    "sasl.login.refresh.buffer.seconds": _listener(_SH),
    # QuotaConfig.brokerQuotaConfigs: KafkaConfig's own since Kafka 4.x (typed LONG, not sensitive, described)
    "leader.replication.throttled.rate": _d(_L, _at_least(0)),
    "follower.replication.throttled.rate": _d(_L, _at_least(0)),
    "replica.alter.log.dirs.io.max.bytes.per.second": _d(_L, _at_least(0)),
}

_LISTENER_CONFIG = re.compile(r"listener\.name\.[^.]*\.(.*)")
_CLUSTER_LEVEL_LISTENER_CONFIGS = frozenset(("max.connections", "max.connection.creation.rate",
                                             "num.network.threads"))
_STATIC_TYPES = {d.name: d for d in CONFIG_DEFS}
# DynamicListenerConfig.ReconfigurableConfigs: a change of one of these runs its validateReconfiguration.
LISTENER_RECONFIGURABLE_CONFIGS = frozenset((
    "listeners", "listener.security.protocol.map", "principal.builder.class", "num.network.threads",
    "max.connections", "max.connection.creation.rate", "ssl.protocol", "ssl.provider", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
    "ssl.client.auth", "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config",
    "sasl.enabled.mechanisms", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
    "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds"))
# SocketServer's and DataPlaneAcceptor's ListenerReconfigurableConfigs: a listener may change these itself.
_LISTENER_OWN_RECONFIGURABLE = frozenset(("max.connections", "max.connection.creation.rate", "num.network.threads"))


def is_dynamic(name: str) -> bool:
    """In Kafka's AllDynamicConfigs (DescribeConfigs reports these with read_only=false)."""
    spec = DYNAMIC_CONFIGS.get(name)
    return spec is not None and spec.kafka_config


def is_kafka_config(name: str) -> bool:
    """One of KafkaConfig's names (APPEND and SUBTRACT know only these)."""
    return name in STATIC_BROKER_CONFIG_NAMES or is_dynamic(name)


def config_type_of(name: str) -> int | None:
    """The Kafka type of a dynamic config; None for custom configs and quotas (Kafka reports UNKNOWN)."""
    spec = DYNAMIC_CONFIGS.get(name)
    return spec.config_type if spec is not None and spec.kafka_config else None


def broker_config_synonyms(name: str) -> list[str]:
    """DynamicBrokerConfig.brokerConfigSynonyms: the names a value of ``name`` may come from, first wins."""
    for group in (("log.roll.ms", "log.roll.hours"), ("log.roll.jitter.ms", "log.roll.jitter.hours"),
                  ("log.retention.ms", "log.retention.minutes", "log.retention.hours")):
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    m = _LISTENER_CONFIG.fullmatch(name)
    if m:
        return [name, m.group(1)]
    return [name]


def java_properties_order(names: Iterable[str]) -> list[str]:
    """The order a java.util.Properties (a ConcurrentHashMap) iterates ``names`` in, which Kafka's messages show."""
    return java.concurrent_hash_map_order(names)


def java_set(names: Iterable[str]) -> str:
    """A Java set's toString, in the order Kafka built it (Kafka 4.4's DynamicBrokerConfig is Java's)."""
    return f"[{', '.join(names)}]"


# -- checks -------------------------------------------------------------------------------------------
def _check_types(props: Mapping[str, str]) -> None:
    """DynamicConfig.Broker.validate: dynamic names are typed and checked (listener prefixes stripped)."""
    for key, raw in props.items():
        m = _LISTENER_CONFIG.fullmatch(key)
        name = m.group(1) if m else key
        spec = DYNAMIC_CONFIGS.get(name)
        if spec is None:
            continue  # custom configs are allowed
        value = _parse(name, spec.config_type, raw)
        if spec.check is not None:
            spec.check(name, value)


def valid_subset(props: Mapping[str, str], per_broker: bool) -> dict[str, str]:
    """DynamicBrokerConfig.fromPersistentProps: what of a stored set applies (the invalid rest is ignored)."""
    out = {}
    for key, value in props.items():
        if key in STATIC_BROKER_CONFIG_NAMES or key in SECURITY_CONFIGS:
            continue
        if not per_broker and _per_broker_names([key]):
            continue
        try:
            _check_types({key: value})
        except DynamicConfigError:
            continue
        out[key] = value
    return out


def _per_broker_names(names: Iterable[str]) -> list[str]:
    out = []
    for name in names:
        m = _LISTENER_CONFIG.fullmatch(name)
        spec = DYNAMIC_CONFIGS.get(name)
        if (spec is not None and spec.per_broker and name not in _CLUSTER_LEVEL_LISTENER_CONFIGS) or \
                (m is not None and m.group(1) not in _CLUSTER_LEVEL_LISTENER_CONFIGS):
            out.append(name)
    return out


def validate(props: Mapping[str, str], per_broker: bool) -> None:
    """DynamicBrokerConfig.validateConfigs for the whole new set of one resource, then what pykbroker can apply."""
    order = java_properties_order(props)
    static = [k for k in order if k in STATIC_BROKER_CONFIG_NAMES]
    if static:
        raise DynamicConfigError(INVALID_REQUEST, "Cannot update these configs dynamically: " + java_set(static))
    security = [k for k in order if k in SECURITY_CONFIGS]
    if security:
        raise DynamicConfigError(INVALID_REQUEST, "These security configs can be dynamically updated only "
                                 "per-listener using the listener prefix: " + java_set(security))
    _check_types({k: props[k] for k in order})
    per_broker_only = _per_broker_names(order)
    if per_broker_only and not per_broker:
        raise DynamicConfigError(INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id "
                                 "must be specified: " + java_set(per_broker_only))
    if "listeners" in props:  # KRaft brokers cannot add or remove listeners at runtime either
        raise DynamicConfigError(INVALID_REQUEST, "Invalid dynamic configuration")


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def apply_incremental(current: Mapping[str, str], ops: list[tuple[str, int, str | None]]) -> dict[str, str]:
    """ConfigAdminManager.prepareIncrementalConfigs: the resource's configs after ``ops``."""
    for _, op, _ in ops:
        if op not in (SET, DELETE, APPEND, SUBTRACT):
            raise DynamicConfigError(INVALID_REQUEST, f"Unknown operations type {op}")
    props = dict(current)
    for name, op, value in ops:
        if op == SET:
            props[name] = value  # type: ignore[assignment]
        elif op == DELETE:
            props.pop(name, None)
        else:
            if not is_kafka_config(name):
                raise DynamicConfigError(INVALID_CONFIG, f"Unknown config name: {name}")  # Kafka 4.4's words
            if _kafka_type(name) != _T.LIST:
                verb = "append" if op == APPEND else "subtract"
                raise DynamicConfigError(INVALID_CONFIG, f"Config value {verb} is not allowed for config key: {name}")
            start = props.get(name, _list_default(name))
            given = (value or "").split(",")
            if op == APPEND:
                old = [v for v in start.split(",")] if start else []
                props[name] = ",".join(old + [v for v in given if v not in old])
            else:
                old = start.split(",")
                for v in given:
                    if v in old:
                        old.remove(v)
                props[name] = ",".join(old)
    return props


def _kafka_type(name: str) -> int | None:
    spec = DYNAMIC_CONFIGS.get(name)
    if spec is not None:
        return spec.config_type
    d = _STATIC_TYPES.get(name)
    return _T.LIST if d is not None and d.is_list else None


def _list_default(name: str) -> str:
    spec = DYNAMIC_CONFIGS.get(name)
    if spec is not None and spec.default is not None:
        return spec.default
    d = _STATIC_TYPES.get(name)
    return (d.default or "") if d is not None else ""


def controller_check(resource_name: str, old: Mapping[str, str], new: Mapping[str, str],
                     explicit: Iterable[str], elr_enabled: bool) -> None:
    """The controller's checks (ConfigurationControlManager.validateAlterConfig): value sizes, and with ELR
    enabled, min.insync.replicas stays cluster-wide."""
    explicit = list(explicit)
    touched = set(explicit) | {k for k in old if k not in new}
    if elr_enabled and MIN_INSYNC_REPLICAS in touched:
        if resource_name:
            raise DynamicConfigError(INVALID_CONFIG, "Broker-level min.insync.replicas cannot be altered while ELR "
                                     "is enabled.")
        if MIN_INSYNC_REPLICAS not in new:
            raise DynamicConfigError(INVALID_CONFIG, "Cluster-level min.insync.replicas cannot be removed while ELR "
                                     "is enabled.")
    for name in explicit:
        if len(new.get(name) or "") > MAX_VALUE_SIZE:
            raise DynamicConfigError(INVALID_CONFIG, "The configuration value cannot be added because it exceeds "
                                     f"the maximum value size of {MAX_VALUE_SIZE} bytes.")


# -- the effective config ------------------------------------------------------------------------------
def _override(props: dict[str, str], overrides: Mapping[str, str]) -> None:
    """DynamicBrokerConfig.overrideProps: a layer's value also hides the lower layers' synonyms."""
    for key, value in overrides.items():
        m = _LISTENER_CONFIG.fullmatch(key)
        for synonym in ([key] if m else broker_config_synonyms(key)):
            props.pop(synonym, None)
        props[key] = value


class DynamicBrokerConfig:
    """The static config with the cluster default and per-broker dynamic layers on top.

    ``default`` and ``per_broker`` are the stored configs of the BROKER resources ``""`` and ``"<node.id>"``;
    ``current`` is the effective ``Config``. Rebuilt on every change (from the event loop only).
    """

    def __init__(self, static: Config, default: Mapping[str, str], per_broker: Mapping[str, str]) -> None:
        self.static = static
        self.update(default, per_broker)

    def update(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> None:
        self.default = valid_subset(default, per_broker=False)
        self.per_broker = valid_subset(per_broker, per_broker=True)
        self.current = self.merged(self.default, self.per_broker)

    def merged(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> Config:
        """The effective Config with these layers; ConfigError when pykbroker cannot take a value."""
        props = dict(self.static.explicit)
        for listener, values in self.static.listener_properties.items():
            props.update({f"listener.name.{listener}.{k}": v for k, v in values.items()})
        _override(props, {k: v for k, v in default.items() if k in _STATIC_TYPES})
        _override(props, {k: v for k, v in per_broker.items() if k in _STATIC_TYPES or is_listener_property(k)})
        return Config(props)

    def check_applicable(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> None:
        """processReconfiguration's validation: the new layers must make a config this broker can run with."""
        self._check_listeners(self.effective_props(default, per_broker))
        try:
            config = self.merged(valid_subset(default, False), valid_subset(per_broker, True))
        except ConfigError as exc:  # a failed require of KafkaConfig (cordoned.log.dirs) keeps its own words
            text = str(exc) if str(exc).startswith(REQUIREMENT_FAILED) else "Invalid dynamic configuration"
            raise DynamicConfigError(INVALID_REQUEST, text) from None
        for listener in self.reloaded_listeners(config):
            try:
                server_ssl_context(config, listener.name, protocol_map(config)[listener.name])
            except ConfigError as exc:
                raise DynamicConfigError(INVALID_REQUEST, "Invalid value org.apache.kafka.common.config."
                                         "ConfigException: Validation of dynamic config update of SSLFactory "
                                         f"failed: {exc} for configuration Invalid dynamic configuration") from None
        retention_ms, local_ms = config.log_retention_ms, config["log.local.retention.ms"]
        retention_bytes, local_bytes = config["log.retention.bytes"], config["log.local.retention.bytes"]
        if (retention_ms != -1 and local_ms != -2 and (local_ms == -1 or local_ms > retention_ms)) or \
                (retention_bytes > -1 and local_bytes != -2 and (local_bytes == -1 or local_bytes > retention_bytes)):
            raise DynamicConfigError(INVALID_REQUEST, "Invalid dynamic configuration")
        # KIP-1241: a copy lag may not exceed the local retention it resolves against.
        effective_ms = retention_ms if local_ms == -2 else local_ms
        effective_bytes = retention_bytes if local_bytes == -2 else local_bytes
        lag_ms, lag_bytes = config["log.remote.copy.lag.ms"], config["log.remote.copy.lag.bytes"]
        if (lag_ms > 0 and effective_ms >= 0 and lag_ms > effective_ms) or \
                (lag_bytes > 0 and effective_bytes >= 0 and lag_bytes > effective_bytes):
            raise DynamicConfigError(INVALID_REQUEST, "Invalid dynamic configuration")

    def reloaded_listeners(self, new: Config, old: Config | None = None) -> list:
        """The SSL and SASL_SSL listeners whose key or trust store configs ``new`` changes from ``old`` (default:
        the current config); Kafka's SslFactory reloads these."""
        old = old or self.current
        protocols = protocol_map(new)
        return [lst for lst in self.static.listeners if protocols.get(lst.name) in ("SSL", "SASL_SSL") and any(
            new.listener_value(lst.name, name) != old.listener_value(lst.name, name) for name in SECURITY_CONFIGS)]

    def effective_props(self, default: Mapping[str, str], per_broker: Mapping[str, str]) -> dict[str, str]:
        """Every property of the broker as text (static, then these dynamic layers), listener-prefixed ones too."""
        props = dict(self.static.explicit)
        for listener, values in self.static.listener_properties.items():
            props.update({f"listener.name.{listener}.{k}": v for k, v in values.items()})
        _override(props, valid_subset(default, False))
        _override(props, valid_subset(per_broker, True))
        return props

    def _check_listeners(self, new: Mapping[str, str]) -> None:
        """DynamicListenerConfig.validateReconfiguration, run when a change touches one of its names: an existing
        listener's immutable prefixed configs must be those it started with (Kafka compares with the config
        the broker was started with), and its security protocol must stay."""
        current = self.effective_props(self.default, self.per_broker)
        if not any(current.get(k) != v for k, v in new.items() if k in LISTENER_RECONFIGURABLE_CONFIGS):
            return
        started = self.effective_props({}, {})

        def immutable(props: Mapping[str, str], prefix: str) -> dict[str, str]:
            return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix) and k[len(prefix):]
                    not in SECURITY_CONFIGS and k[len(prefix):] not in _LISTENER_OWN_RECONFIGURABLE}

        def protocol(props: Mapping[str, str], listener: str) -> str | None:
            text = props.get("listener.security.protocol.map", self.static["listener.security.protocol.map"])
            pairs = (item.split(":", 1) for item in (text if isinstance(text, str) else ",".join(text)).split(","))
            return {k.strip().upper(): v.strip().upper() for k, v in (p for p in pairs if len(p) == 2)}.get(listener)

        for listener in self.static.listeners:
            prefix = f"listener.name.{listener.name.lower()}."
            why = None
            if immutable(new, prefix) != immutable(started, prefix):
                why = (f"Configs cannot be updated dynamically for existing listener ListenerName({listener.name}), "
                       "restart broker or create a new listener for update")
            elif protocol(new, listener.name) != protocol(started, listener.name):
                why = f"Security protocol cannot be updated for existing listener ListenerName({listener.name})"
            if why is not None:
                raise DynamicConfigError(INVALID_REQUEST, "Invalid value org.apache.kafka.common.config."
                                         f"ConfigException: {why} for configuration Invalid dynamic configuration")

    def layers(self) -> list[tuple[Mapping[str, str], int]]:
        """(values, source) from the most to the least specific, as DescribeConfigs lists synonyms."""
        defaults = described_defaults()
        static = described_static(self.static.explicit)
        for listener, values in self.static.listener_properties.items():
            static.update({f"listener.name.{listener}.{k}": v for k, v in values.items()})
        return [(self.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                (self.default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                (static, ConfigSource.STATIC_BROKER_CONFIG),
                (defaults, ConfigSource.DEFAULT_CONFIG)]


def default_broker_config_entries(dynamic: DynamicBrokerConfig) -> list[ConfigEntry]:
    """DescribeConfigs of BROKER "": the cluster-wide dynamic defaults, with only that layer as synonyms."""
    entries = []
    for name, value in sorted(dynamic.default.items()):
        config_type = config_type_of(name)
        sensitive = config_type is None or config_type == _T.PASSWORD  # Kafka's maybeSensitive
        shown = None if sensitive else value
        synonyms = [(n, None if sensitive else dynamic.default[n], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
                    for n in broker_config_synonyms(name) if n in dynamic.default]
        while synonyms and synonyms[0][0] != name:
            synonyms.pop(0)
        source = synonyms[0][2] if synonyms else ConfigSource.DEFAULT_CONFIG
        doc = _STATIC_TYPES[name].doc if name in _STATIC_TYPES else None
        entries.append(ConfigEntry(name, shown, source, config_type if config_type is not None else _T.UNKNOWN,
                                   not is_dynamic(name), sensitive, doc, tuple(synonyms)))
    return entries
