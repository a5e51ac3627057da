"""Broker configuration: Kafka's property names, one table of definitions and defaults, one typed Config.

A property file in Kafka's ``server.properties`` format plus ``--override key=value`` pairs become a
``Config``. Unknown names and invalid values fail at start with an error naming the property. Kafka
properties that have no effect here (thread counts, socket buffers, KRaft quorum settings) are accepted
and listed by ``Config.inert`` so a real Kafka ``server.properties`` still starts.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykbroker import java_properties
from pykbroker.kafka_broker_configs import KAFKA_BROKER_CONFIGS

__all__ = ["Config", "ConfigDef", "ConfigError", "Listener", "CONFIG_DEFS", "is_listener_property",
           "is_remote_storage_property", "parse_properties"]


class ConfigError(ValueError):
    """A property is unknown or has an invalid value; the message names the property."""


#: Kafka's words when a ``require`` of KafkaConfig fails (the message an invalid dynamic update is answered with).
REQUIREMENT_FAILED = "requirement failed: "


def cordoned_log_dirs_error(cordoned: list[str], log_dirs: tuple[str, ...]) -> str | None:
    """KafkaConfig.validateCordonedLogDirs (KIP-1066): ``*`` alone, or entries of log.dirs; Kafka's message, or
    None when valid."""
    if "*" in cordoned:
        if len(cordoned) != 1:
            return REQUIREMENT_FAILED + "When cordoned.log.dirs is set to *, it must not contain other values"
        return None
    if missing := [d for d in cordoned if d not in log_dirs]:
        return (REQUIREMENT_FAILED + "All entries in cordoned.log.dirs must be present in log.dirs or log.dir. "
                "Missing entries : " + ", ".join(missing))
    return None


@dataclass(frozen=True)
class Listener:
    """One ``NAME://host:port`` entry of ``listeners`` / ``advertised.listeners``."""

    name: str
    host: str
    port: int

    @classmethod
    def parse_list(cls, prop: str, value: str) -> tuple[Listener, ...]:
        out = []
        for item in filter(None, (s.strip() for s in value.split(","))):
            m = re.fullmatch(r"([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:]*):(\d+)", item)
            if not m:
                raise ConfigError(f"{prop}: '{item}' is not of the form NAME://host:port")
            host = m.group(2).strip("[]")
            port = int(m.group(3))
            if not 0 <= port <= 65535:
                raise ConfigError(f"{prop}: port {port} is out of range")
            out.append(cls(m.group(1).upper(), host, port))
        return tuple(out)


def _bool(prop: str, v: str) -> bool:
    s = v.strip().lower()
    if s in ("true", "false"):
        return s == "true"
    raise ConfigError(f"{prop}: expected true or false, got '{v}'")


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[str, str], int]:
    def parse(prop: str, v: str) -> int:
        try:
            n = int(v.strip())
        except ValueError:
            raise ConfigError(f"{prop}: expected an integer, got '{v}'") from None
        if lo is not None and n < lo:
            raise ConfigError(f"{prop}: {n} is below the minimum {lo}")
        if hi is not None and n > hi:
            raise ConfigError(f"{prop}: {n} is above the maximum {hi}")
        return n

    return parse


def _float(lo: float | None = None, hi: float | None = None) -> Callable[[str, str], float]:
    def parse(prop: str, v: str) -> float:
        try:
            n = float(v.strip())
        except ValueError:
            raise ConfigError(f"{prop}: expected a number, got '{v}'") from None
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            raise ConfigError(f"{prop}: {n} is outside [{lo}, {hi}]")
        return n

    return parse

def _authorizer_class(prop: str, v: str) -> str:
    name = v.strip()
    if name and name not in _AUTHORIZER_CLASS_NAMES:
        raise ConfigError(f"{prop}: class {name} cannot be found (served: "
                          f"{', '.join(sorted(_AUTHORIZER_CLASS_NAMES))})")
    return name


# pykbroker.security.authorizer.AUTHORIZER_CLASS_NAMES (not imported: config must not import the security package)
_AUTHORIZER_CLASS_NAMES = frozenset({"org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                                     "kafka.security.authorizer.AclAuthorizer"})



def _str(prop: str, v: str) -> str:
    return v.strip()


def _list(prop: str, v: str) -> tuple[str, ...]:
    return tuple(s.strip() for s in v.split(",") if s.strip())


def _connection_overrides(text: str) -> dict[str, int]:
    """max.connections.per.ip.overrides ("host:count,..."), by IP address (host names are resolved once)."""
    out: dict[str, int] = {}
    for item in (s.strip() for s in text.split(",") if s.strip()):
        host, sep, count = item.rpartition(":")
        try:
            limit = int(count)
        except ValueError:
            limit = -1
        if not sep or not host or limit < 0:
            raise ConfigError(f"max.connections.per.ip.overrides: '{item}' is not of the form host:count")
        try:
            address = str(ipaddress.ip_address(host.strip("[]")))
        except ValueError:
            try:
                address = socket.gethostbyname(host)
            except OSError:
                raise ConfigError(f"max.connections.per.ip.overrides: unknown host '{host}'") from None
        out[address] = limit
    return out


def _registry_url(prop: str, v: str) -> str | None:
    """console.schema.registry.url: unset, or an http(s)://host[:port][/path] URL of a Confluent-compatible registry."""
    from urllib.parse import urlsplit

    value = v.strip()
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{prop}: '{value}' is not an http:// or https:// URL of a schema registry "
                          "(e.g. http://127.0.0.1:8081)")
    return value.rstrip("/")


def _schema_registry_listeners(prop: str, v: str) -> str | None:
    from pykbroker.metrics.http import parse_host_port

    if not v.strip():
        return None
    for entry in v.split(","):
        try:
            parse_host_port(prop, entry.strip().removeprefix("https://"))
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
    return v.strip()


def _console_listener(prop: str, v: str) -> str | None:
    from pykbroker.metrics.http import parse_host_port

    if not v.strip():
        return None
    try:
        parse_host_port(prop, v.strip().removeprefix("https://"))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return v.strip()


def _choice(*options: str) -> Callable[[str, str], str]:
    def parse(prop: str, v: str) -> str:
        s = v.strip()
        if s not in options:
            raise ConfigError(f"{prop}: '{s}' is not one of {', '.join(options)}")
        return s

    return parse


def _listeners(prop: str, v: str) -> tuple[Listener, ...]:
    return Listener.parse_list(prop, v)


@dataclass(frozen=True)
class ConfigDef:
    """One broker property: its name, parser, default (as Kafka writes it) and documentation."""

    name: str
    parse: Callable[[str, str], Any]
    default: str | None
    doc: str
    inert: bool = False  # accepted for compatibility with Kafka's server.properties, no effect here

    @property
    def is_list(self) -> bool:
        """Declared a LIST by Kafka (log.dirs and the listeners hold lists too, but Kafka declares them STRING)."""
        return self.parse is _list and self.name not in ("log.dirs", "log.dir")


_MAX = 2**63 - 1
_I32 = 2**31 - 1

CONFIG_DEFS: tuple[ConfigDef, ...] = (
    # -- identity and listeners ------------------------------------------------------------------
    ConfigDef("node.id", _int(0, _I32), "1", "The node id of this broker."),
    ConfigDef("broker.id", _int(-1, _I32), "-1", "Legacy name of node.id; used when node.id is not set."),
    ConfigDef("listeners", _listeners, "PLAINTEXT://localhost:9092",
              "Comma-separated NAME://host:port addresses to listen on; port 0 picks a free port."),
    ConfigDef("advertised.listeners", _listeners, None,
              "Addresses given to clients in Metadata; defaults to listeners."),
    ConfigDef("broker.rack", _str, None, "The rack of this broker."),
    ConfigDef("replica.selector.class", _str, None,
              "The replica selector for consumers' fetches (KIP-392): org.apache.kafka.common.replica."
              "RackAwareReplicaSelector lets consumers read from a replica in their rack; unset: the leader."),
    ConfigDef("cluster.id", _str, None, "Cluster id to use when the data directory is new (default: random)."),
    ConfigDef("log.dirs", _list, "/tmp/kafka-logs", "Directories where partition logs are kept."),
    ConfigDef("log.dir", _list, "/tmp/kafka-logs", "Legacy single log directory; log.dirs wins."),
    ConfigDef("cordoned.log.dirs", _list, "",
              "Log dirs that take no new partitions (KIP-1066), each one of log.dirs, or * for all of them."),
    # -- topics --------------------------------------------------------------------------------------
    ConfigDef("num.partitions", _int(1, _I32), "1", "Default number of partitions of a new topic."),
    ConfigDef("default.replication.factor", _int(1, 32767), "1", "Default replication factor of a new topic."),
    ConfigDef("auto.create.topics.enable", _bool, "true", "Create a topic when Metadata asks for an unknown one."),
    ConfigDef("delete.topic.enable", _bool, "true", "Allow DeleteTopics."),
    ConfigDef("min.insync.replicas", _int(1, _I32), "1", "Minimum ISR size to accept acks=all produces."),
    ConfigDef("compression.gzip.level", _int(-1, 9), "-1", "Gzip level of topics with compression.type=gzip."),
    ConfigDef("compression.lz4.level", _int(1, 17), "9", "Lz4 level of topics with compression.type=lz4."),
    ConfigDef("compression.zstd.level", _int(-131072, 22), "3", "Zstd level of topics with compression.type=zstd."),
    ConfigDef("log.preallocate", _bool, "false", "Preallocate new segment files.", inert=True),
    ConfigDef("log.local.retention.ms", _int(-2, _MAX), "-2",
              "Local retention time with tiered storage (-2: log.retention.ms)."),
    ConfigDef("log.local.retention.bytes", _int(-2, _MAX), "-2",
              "Local retention size with tiered storage (-2: log.retention.bytes)."),
    # -- tiered storage (KIP-405; pykbroker.remote_storage_config has the rsm.config.* backend settings) ---------
    ConfigDef("remote.log.storage.system.enable", _bool, "false",
              "Tiered storage on this broker: topics may set remote.storage.enable=true."),
    ConfigDef("log.remote.copy.lag.ms", _int(-1, _MAX), "0",
              "How old a closed segment must be before it is copied (KIP-1241; -1: local retention, 0: at once)."),
    ConfigDef("log.remote.copy.lag.bytes", _int(-1, _MAX), "-1",
              "How far behind the log end a closed segment must be before it is copied (-1: local retention)."),
    ConfigDef("remote.log.manager.task.interval.ms", _int(1, _MAX), "30000",
              "How often each partition leader looks for segments to copy and remote segments to expire."),
    ConfigDef("remote.log.manager.copy.max.bytes.per.second", _int(1, _MAX), str(_MAX),
              "Upper bound of the bytes per second this broker copies to remote storage."),
    ConfigDef("remote.log.manager.fetch.max.bytes.per.second", _int(1, _MAX), str(_MAX),
              "Upper bound of the bytes per second this broker reads from remote storage."),
    ConfigDef("remote.log.manager.copy.quota.window.num", _int(1, _I32), "11",
              "Samples kept to measure the remote copy byte rate."),
    ConfigDef("remote.log.manager.copy.quota.window.size.seconds", _int(1, _I32), "1",
              "Time span of each remote copy quota sample."),
    ConfigDef("remote.log.manager.fetch.quota.window.num", _int(1, _I32), "11",
              "Samples kept to measure the remote fetch byte rate."),
    ConfigDef("remote.log.manager.fetch.quota.window.size.seconds", _int(1, _I32), "1",
              "Time span of each remote fetch quota sample."),
    ConfigDef("remote.log.manager.copier.thread.pool.size", _int(1, _I32), "10",
              "Segments copied at the same time (threads of the copy)."),
    ConfigDef("follower.fetch.last.tiered.offset.enable", _bool, "false",
              "An empty follower of a tiered topic starts after the leader's last tiered offset (KIP-1023), not at its "
              "local log start."),
    ConfigDef("remote.log.index.file.cache.total.size.bytes", _int(1, _MAX), "1073741824",
              "Size bound of the cache of fetched remote chunks and indexes."),
    ConfigDef("remote.log.storage.manager.class.name", _str, None,
              "The remote storage backend: org.apache.kafka.server.log.remote.storage.LocalTieredStorage "
              "(a directory, rsm.config.dir) or pykbroker.remote.S3RemoteStorageManager (rsm.config.s3.*)."),
    ConfigDef("message.max.bytes", _int(0, _I32), "1048588", "Largest record batch size allowed."),
    ConfigDef("compression.type", _choice("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
              "producer", "Final compression type of topics."),
    ConfigDef("log.message.timestamp.type", _choice("CreateTime", "LogAppendTime"), "CreateTime",
              "Whether record timestamps are the producer's or the broker's."),
    ConfigDef("log.message.timestamp.before.max.ms", _int(0, _MAX), str(_MAX),
              "Largest allowed gap of a record timestamp before the broker's time."),
    ConfigDef("log.message.timestamp.after.max.ms", _int(0, _MAX), "3600000",
              "Largest allowed gap of a record timestamp after the broker's time."),
    # -- log -----------------------------------------------------------------------------------------
    ConfigDef("log.segment.bytes", _int(1048576, _I32), "1073741824", "Segment file size."),
    ConfigDef("log.roll.ms", _int(1, _MAX), None, "Roll a segment after this many ms (wins over hours)."),
    ConfigDef("log.roll.hours", _int(1, _I32), "168", "Roll a segment after this many hours."),
    ConfigDef("log.roll.jitter.ms", _int(0, _MAX), None, "Random jitter subtracted from the roll time (wins over hours)."),
    ConfigDef("log.roll.jitter.hours", _int(0, _I32), "0", "Random jitter subtracted from the roll time, in hours."),
    ConfigDef("log.index.size.max.bytes", _int(4, _I32), "10485760", "Maximum size of an offset index."),
    ConfigDef("log.index.interval.bytes", _int(0, _I32), "4096", "Bytes between offset index entries."),
    ConfigDef("log.retention.ms", _int(-1, _MAX), None, "Retention time in ms (wins over minutes/hours)."),
    ConfigDef("log.retention.minutes", _int(-1, _I32), None, "Retention time in minutes."),
    ConfigDef("log.retention.hours", _int(-1, _I32), "168", "Retention time in hours."),
    ConfigDef("log.retention.bytes", _int(-1, _MAX), "-1", "Retention size per partition."),
    ConfigDef("log.retention.check.interval.ms", _int(1, _MAX), "300000", "How often retention is checked."),
    ConfigDef("log.initial.task.delay.ms", _int(0, _MAX), "30000",
              "Delay before the first retention check, flush check and offset checkpoints after start."),
    ConfigDef("log.cleanup.policy", _list, "delete", "delete, compact or both."),
    ConfigDef("log.cleaner.enable", _bool, "true", "Run the log cleaner for compacted topics."),
    ConfigDef("log.cleaner.threads", _int(0, 64), "1", "Log cleaner threads."),
    ConfigDef("log.cleaner.backoff.ms", _int(0, _MAX), "15000", "Sleep of an idle cleaner."),
    ConfigDef("log.cleaner.min.cleanable.ratio", _float(0.0, 1.0), "0.5", "Dirty ratio that triggers cleaning."),
    ConfigDef("log.cleaner.min.compaction.lag.ms", _int(0, _MAX), "0", "Minimum age before compaction."),
    ConfigDef("log.cleaner.max.compaction.lag.ms", _int(1, _MAX), str(_MAX), "Maximum age before compaction."),
    ConfigDef("log.cleaner.delete.retention.ms", _int(0, _MAX), "86400000", "How long tombstones are kept."),
    ConfigDef("log.cleaner.dedupe.buffer.size", _int(0, _MAX), "134217728", "Memory for the cleaner's key map."),
    ConfigDef("log.flush.interval.messages", _int(1, _MAX), str(_MAX), "fsync after this many messages."),
    ConfigDef("log.flush.interval.ms", _int(0, _MAX), None, "fsync after this many ms."),
    ConfigDef("log.flush.scheduler.interval.ms", _int(0, _MAX), str(_MAX), "How often flush.ms is checked."),
    ConfigDef("log.flush.offset.checkpoint.interval.ms", _int(0, _I32), "60000", "Recovery-point checkpoint interval."),
    ConfigDef("log.flush.start.offset.checkpoint.interval.ms", _int(0, _I32), "60000",
              "Log-start-offset checkpoint interval."),
    ConfigDef("log.segment.delete.delay.ms", _int(0, _MAX), "60000", "Delay before a deleted segment is removed."),
    ConfigDef("replica.high.watermark.checkpoint.interval.ms", _int(1, _MAX), "5000", "High-watermark checkpoint interval."),
    ConfigDef("num.recovery.threads.per.data.dir", _int(1, _I32), "2", "Threads for log recovery at start."),
    # -- requests ------------------------------------------------------------------------------------
    ConfigDef("socket.request.max.bytes", _int(1, _I32), "104857600", "Largest request frame accepted."),
    ConfigDef("fetch.max.bytes", _int(1024, _I32), "57671680",
              "Most bytes a consumer's Fetch or ShareFetch is answered (the request's max_bytes caps it too)."),
    ConfigDef("connections.max.idle.ms", _int(-1, _MAX), "600000", "Close connections idle this long."),
    # pykbroker's own (Kafka has JMX instead): Prometheus metrics and a read-only console page over HTTP.
    ConfigDef("metrics.port", _int(-1, 65535), "-1",
              "Serve Prometheus metrics (Kafka's JMX names) at http://0.0.0.0:<port>/metrics; -1: off, 0: any port."),
    ConfigDef("metrics.client.telemetry.enable", _bool, "false",
              "Receive the metrics clients push (KIP-714) and serve them on metrics.port's /metrics with their client "
              "labels; advertises GetTelemetrySubscriptions and PushTelemetry (Kafka: a ClientTelemetry plugin). "
              "Needs metrics.port."),
    ConfigDef("telemetry.max.bytes", _int(1, _I32), "1048576",
              "The largest metrics payload a client may push (KIP-714), compressed or not."),
    ConfigDef("console.listener", _console_listener, None,
              "Serve the console at http://host:port/ (e.g. 127.0.0.1:8080; https://host:port with the broker-wide "
              "ssl.keystore.*); unset: off."),
    ConfigDef("console.write.actions.enable", _bool, "false",
              "Let the console change things (produce, topics, configs, group offsets, ACLs, users), each logged "
              "with the principal; false: the console only reads."),
    ConfigDef("console.schema.registry.url", _registry_url, None,
              "A Confluent-compatible schema registry (http(s)://host:port; http(s)://user:password@host:port for "
              "HTTP basic authentication) whose schemas the console decodes Avro, "
              "Protobuf and JSON Schema values with; unset: the broker's own registry when schema.registry.listeners "
              "is set, else none (values are shown as bytes with their schema id)."),
    # Confluent's Schema Registry API served by the broker (pykbroker.schema_registry), as Redpanda's
    # schema_registry.schema_registry_api; the topic is Confluent's kafkastore.topic.
    ConfigDef("schema.registry.listeners", _schema_registry_listeners, None,
              "Serve a Confluent-compatible schema registry at http://host:port (comma-separated for several, e.g. "
              "http://0.0.0.0:8081, Confluent's and Redpanda's port; https://host:port with the broker-wide "
              "ssl.keystore.*); schemas live in schema.registry.topic, so every broker of a cluster serves the same "
              "registry; unset: off."),
    ConfigDef("schema.registry.authentication.method", _choice("NONE", "BASIC"), "NONE",
              "BASIC: every registry request needs HTTP basic authentication with a SCRAM user of the broker "
              "(kafka-configs.sh --alter --entity-type users; principal User:<name>), else 401 (Confluent's "
              "authentication.method); NONE: requests are User:ANONYMOUS."),
    ConfigDef("schema.registry.authorization.enable", _bool, "false",
              "Authorize registry requests with the broker's ACLs (authorizer.class.name): a subject <topic>-value "
              "or <topic>-key as its topic (reading needs DESCRIBE, registering WRITE, deleting DELETE, its config "
              "ALTER_CONFIGS; the global config ALTER_CONFIGS on the cluster), else 403 (Redpanda's "
              "schema_registry_enable_authorization)."),
    ConfigDef("schema.registry.topic", _str, "_schemas",
              "The compacted topic holding the registry's schemas, ids and configs in Confluent's record format "
              "(Confluent's kafkastore.topic)."),
    # pykbroker's own: where topics with iceberg.mode set are written as Iceberg tables (pykbroker.iceberg).
    ConfigDef("iceberg.catalog.type", _choice("sql", "rest"), "sql",
              "The Iceberg catalog: sql (SQLAlchemy: SQLite by default, the JDBC catalog's tables) or rest."),
    ConfigDef("iceberg.catalog.uri", _str, "",
              "The catalog's address: a SQLAlchemy URL for sql (default sqlite:///<first log dir>/iceberg/"
              "catalog.db), the REST endpoint for rest."),
    ConfigDef("iceberg.warehouse", _str, "",
              "Where data and metadata files go: file://<dir> (default <first log dir>/iceberg/warehouse) or "
              "s3://<bucket>/<path> (iceberg.s3.*)."),
    ConfigDef("iceberg.catalog.namespace", _str, "kafka", "The namespace holding one table per topic."),
    ConfigDef("iceberg.s3.endpoint", _str, "",
              "An S3-compatible server for an s3:// iceberg.warehouse (e.g. http://127.0.0.1:7070); empty: AWS."),
    ConfigDef("iceberg.s3.region", _str, "", "The region of an s3:// iceberg.warehouse (empty: us-east-1)."),
    ConfigDef("iceberg.s3.access.key.id", _str, "",
              "The access key of an s3:// iceberg.warehouse (empty: the AWS environment's credentials)."),
    ConfigDef("iceberg.s3.secret.access.key", _str, "",
              "The secret key of an s3:// iceberg.warehouse; never logged or described."),
    ConfigDef("iceberg.s3.path.style.access", _bool, "true",
              "Address buckets as endpoint/bucket (most S3-compatible servers) rather than bucket.endpoint."),
    ConfigDef("max.connections.per.ip", _int(0, _I32), "2147483647",
              "Connections one address may hold; more are closed as they arrive."),
    ConfigDef("max.incremental.fetch.session.cache.slots", _int(0, _I32), "1000",
              "Incremental fetch sessions (KIP-227) kept; the least recently used is evicted beyond."),
    ConfigDef("max.connections.per.ip.overrides", _str, "",
              "Per address or host name limits instead of max.connections.per.ip, as host:count,..."),
    ConfigDef("max.connections", _int(0, _I32), "2147483647",
              "Open connections allowed in the broker (listener.name.X.max.connections per listener); new ones "
              "wait to be accepted."),
    ConfigDef("max.connection.creation.rate", _int(0, _I32), "2147483647",
              "New connections accepted per second (per listener with listener.name.X.); faster ones wait."),
    ConfigDef("queued.max.requests", _int(1, _I32), "500",
              "Requests read but not yet being handled, across connections, before connections stop being read."),
    ConfigDef("queued.max.request.bytes", _int(-1, _MAX), "-1",
              "Bytes of requests in memory (read, not yet answered) before no more are read; -1: no limit."),
    # -- security (pykbroker.security; each may be set per listener as listener.name.<name>.<property>) --------
    ConfigDef("listener.security.protocol.map", _list,
              "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
              "Listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)."),
    ConfigDef("sasl.enabled.mechanisms", _list, "GSSAPI", "SASL mechanisms served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512."),
    ConfigDef("sasl.jaas.config", _str, None,
              "Ignored by brokers, as in Kafka: set listener.name.<name>.<mechanism>.sasl.jaas.config."),
    ConfigDef("sasl.server.max.receive.size", _int(1, _I32), "524288", "Largest frame before authentication."),
    ConfigDef("connection.failed.authentication.delay.ms", _int(0, _I32), "100",
              "How long a failed SASL authentication waits before it is answered and its connection closed."),
    ConfigDef("connections.max.reauth.ms", _int(0, _MAX), "0",
              "SASL session lifetime given to clients (KIP-368); 0: sessions do not expire."),
    ConfigDef("ssl.keystore.type", _choice("JKS", "PKCS12", "PEM"), "JKS", "PEM or PKCS12 (JKS is not readable here)."),
    ConfigDef("ssl.keystore.location", _str, None, "Key store file: the broker's key and certificate chain."),
    ConfigDef("ssl.keystore.password", _str, None, "Password of the key store file."),
    ConfigDef("ssl.keystore.key", _str, None, "PEM private key, inline (ssl.keystore.type=PEM)."),
    ConfigDef("ssl.keystore.certificate.chain", _str, None, "PEM certificate chain, inline (ssl.keystore.type=PEM)."),
    ConfigDef("ssl.key.password", _str, None, "Password of the private key."),
    ConfigDef("ssl.truststore.type", _choice("JKS", "PKCS12", "PEM"), "JKS", "PEM or PKCS12 (JKS is not readable here)."),
    ConfigDef("ssl.truststore.location", _str, None, "Trust store file: the CAs that sign client certificates."),
    ConfigDef("ssl.truststore.password", _str, None, "Password of the trust store file."),
    ConfigDef("ssl.truststore.certificates", _str, None, "PEM trusted certificates, inline (ssl.truststore.type=PEM)."),
    ConfigDef("ssl.client.auth", _choice("required", "requested", "none"), "none", "Whether clients present certificates."),
    ConfigDef("ssl.enabled.protocols", _list, "TLSv1.2,TLSv1.3", "TLS versions accepted."),
    ConfigDef("ssl.cipher.suites", _list, "", "TLS 1.2 cipher suites (OpenSSL names); empty: the defaults."),
    ConfigDef("ssl.principal.mapping.rules", _str, "DEFAULT",
              "Principal of a client certificate: only DEFAULT (the distinguished name) is served."),
    # -- authorization (pykbroker.security.authorizer) and delegation tokens --------------------------------
    ConfigDef("authorizer.class.name", _authorizer_class, "",
              "org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer) "
              "enforces ACLs; empty: no authorizer, every client may do anything."),
    ConfigDef("super.users", _str, None, "Principals allowed everything, as User:a;User:b."),
    ConfigDef("allow.everyone.if.no.acl.found", _bool, "false", "Allow actions on resources that have no ACL."),
    ConfigDef("delegation.token.secret.key", _str, None,
              "Secret that signs delegation tokens; unset, delegation tokens are disabled."),
    ConfigDef("delegation.token.max.lifetime.ms", _int(1, _MAX), "604800000", "Longest a token can be renewed for."),
    ConfigDef("delegation.token.expiry.time.ms", _int(1, _MAX), "86400000", "Validity of a token until renewed."),
    ConfigDef("delegation.token.expiry.check.interval.ms", _int(1, _MAX), "3600000",
              "How often expired tokens are removed."),
    ConfigDef("request.timeout.ms", _int(0, _I32), "30000", "Broker-side request timeout."),
    # -- groups and offsets --------------------------------------------------------------------------
    ConfigDef("offsets.topic.num.partitions", _int(1, _I32), "50", "Partitions of __consumer_offsets."),
    ConfigDef("offsets.topic.replication.factor", _int(1, 32767), "3", "Replication factor of __consumer_offsets."),
    ConfigDef("offsets.topic.segment.bytes", _int(1, _I32), "104857600", "Segment size of __consumer_offsets."),
    ConfigDef("offsets.commit.timeout.ms", _int(1, _I32), "5000",
              "An offset commit waits this long for the whole ISR of its __consumer_offsets partition."),
    ConfigDef("offsets.retention.minutes", _int(1, _I32), "10080", "How long committed offsets of empty groups are kept."),
    ConfigDef("offsets.retention.check.interval.ms", _int(1, _MAX), "600000", "How often offsets expire."),
    ConfigDef("offset.metadata.max.bytes", _int(0, _I32), "4096", "Largest offset commit metadata string."),
    ConfigDef("group.initial.rebalance.delay.ms", _int(0, _I32), "3000", "Delay of the first rebalance of a group."),
    ConfigDef("group.min.session.timeout.ms", _int(0, _I32), "6000", "Smallest session timeout allowed."),
    ConfigDef("group.max.session.timeout.ms", _int(0, _I32), "1800000", "Largest session timeout allowed."),
    ConfigDef("group.max.size", _int(1, _I32), str(_I32), "Largest number of members of a classic group."),
    ConfigDef("group.coordinator.rebalance.protocols", _list, "classic,consumer,streams",
              "Group protocols served (consumer also needs group.version 1, streams needs streams.version 1)."),
    ConfigDef("group.consumer.session.timeout.ms", _int(1, _I32), "45000", "Session timeout of consumer groups."),
    ConfigDef("group.consumer.heartbeat.interval.ms", _int(1, _I32), "5000", "Heartbeat interval of consumer groups."),
    ConfigDef("group.consumer.min.session.timeout.ms", _int(1, _I32), "45000",
              "Smallest consumer.session.timeout.ms a group config may set."),
    ConfigDef("group.consumer.max.session.timeout.ms", _int(1, _I32), "60000",
              "Largest consumer.session.timeout.ms a group config may set."),
    ConfigDef("group.consumer.min.heartbeat.interval.ms", _int(1, _I32), "5000",
              "Smallest consumer.heartbeat.interval.ms a group config may set."),
    ConfigDef("group.consumer.max.heartbeat.interval.ms", _int(1, _I32), "15000",
              "Largest consumer.heartbeat.interval.ms a group config may set."),
    ConfigDef("group.consumer.max.size", _int(1, _I32), str(_I32), "Largest consumer group."),
    ConfigDef("group.consumer.assignors", _list, "uniform,range", "Server-side assignors."),
    ConfigDef("group.streams.session.timeout.ms", _int(1, _I32), "45000",
              "Session timeout of streams group members (removed when they do not heartbeat within it)."),
    ConfigDef("group.streams.heartbeat.interval.ms", _int(1, _I32), "5000",
              "Heartbeat interval given to streams group members."),
    ConfigDef("group.streams.num.standby.replicas", _int(0, _I32), "0",
              "Standby copies of each stateful task the streams group assignor places on other processes."),
    ConfigDef("group.streams.acceptable.recovery.lag", _int(0, 2**63 - 1), "10000",
              "Largest changelog lag for which a streams member counts as caught up on a task (told to members)."),
    ConfigDef("group.streams.task.offset.interval.ms", _int(1, _I32), "60000",
              "How often streams members report their task changelog offsets (told to members)."),
    ConfigDef("group.streams.initial.rebalance.delay.ms", _int(0, _I32), "3000",
              "How long a new streams group waits for more members before its first assignment."),
    ConfigDef("group.streams.assignment.interval.ms", _int(0, _I32), "1000",
              "Shortest time between two task assignments of a streams group."),
    ConfigDef("group.streams.num.warmup.replicas", _int(0, _I32), "2",
              "Most warm-up tasks a streams group has at once (moving a stateful task to a caught-up member)."),
    ConfigDef("group.streams.rack.aware.assignment.tags", _list, "",
              "Client tag keys the streams assignor spreads standby tasks over (members lacking one are told)."),
    ConfigDef("group.streams.topology.description.store.enable", _bool, "false",
              "Keep the topology descriptions streams members push (KIP-1331) in __consumer_offsets, pykbroker's "
              "built-in store: serves StreamsGroupTopologyDescriptionUpdate and StreamsGroupDescribe's description "
              "(Kafka: group.streams.topology.description.plugin.class, a Java plugin)."),
    # -- share groups (KIP-932) ----------------------------------------------------------------------
    ConfigDef("group.share.enable", _bool, "false",
              "Serve share groups even while the share.version feature is not finalized (Kafka's internal switch)."),
    ConfigDef("group.share.record.lock.duration.ms", _int(1000, 3_600_000), "30000",
              "How long a share consumer holds acquired records before they go back to the others."),
    ConfigDef("group.share.min.record.lock.duration.ms", _int(1000, 30_000), "15000",
              "Smallest share.record.lock.duration.ms a group may set."),
    ConfigDef("group.share.max.record.lock.duration.ms", _int(30_000, 3_600_000), "60000",
              "Largest share.record.lock.duration.ms a group may set."),
    ConfigDef("group.share.delivery.count.limit", _int(2, 10), "5",
              "Deliveries of a record before it is archived (a poison record)."),
    ConfigDef("group.share.partition.max.record.locks", _int(100, 10_000), "2000",
              "In-flight records per share-partition."),
    ConfigDef("group.share.session.timeout.ms", _int(1, _I32), "45000", "Session timeout of share group members."),
    ConfigDef("group.share.heartbeat.interval.ms", _int(1, _I32), "5000", "Heartbeat interval of share groups."),
    ConfigDef("group.share.max.size", _int(1, 1000), "200", "Largest share group."),
    ConfigDef("group.share.initialize.retry.interval.ms", _int(1, _I32), "30000",
              "How long a share-partition may stay initializing before a heartbeat asks for it again."),
    ConfigDef("group.share.max.share.sessions", _int(1, _I32), "2000", "Share sessions a broker keeps."),
    ConfigDef("share.coordinator.state.topic.num.partitions", _int(1, _I32), "50",
              "Partitions of __share_group_state."),
    ConfigDef("share.coordinator.state.topic.segment.bytes", _int(1, _I32), "104857600",
              "Segment size of __share_group_state."),
    ConfigDef("share.coordinator.state.topic.replication.factor", _int(1, 32767), "3",
              "Replication factor of __share_group_state (a cluster's)."),
    ConfigDef("share.coordinator.state.topic.min.isr", _int(1, 32767), "2",
              "min.insync.replicas of __share_group_state (a cluster's)."),
    ConfigDef("share.coordinator.snapshot.update.records.per.snapshot", _int(0, 500), "500",
              "ShareUpdate records written for a share-partition before the next ShareSnapshot."),
    # -- transactions --------------------------------------------------------------------------------
    ConfigDef("transaction.state.log.num.partitions", _int(1, _I32), "50", "Partitions of __transaction_state."),
    ConfigDef("transaction.state.log.replication.factor", _int(1, 32767), "3", "Replication factor of __transaction_state."),
    ConfigDef("transaction.state.log.min.isr", _int(1, _I32), "2", "min.insync.replicas of __transaction_state."),
    ConfigDef("transaction.state.log.segment.bytes", _int(1, _I32), "104857600", "Segment size of __transaction_state."),
    ConfigDef("transaction.max.timeout.ms", _int(1, _I32), "900000", "Largest transaction timeout allowed."),
    ConfigDef("transaction.abort.timed.out.transaction.cleanup.interval.ms", _int(1, _I32), "10000",
              "How often expired transactions are aborted."),
    ConfigDef("transactional.id.expiration.ms", _int(1, _I32), "604800000", "Expiry of idle transactional ids."),
    ConfigDef("transaction.remove.expired.transaction.cleanup.interval.ms", _int(1, _I32), "3600000",
              "How often expired transactional ids are removed."),
    ConfigDef("transaction.partition.verification.enable", _bool, "true",
              "Refuse transactional writes to partitions not added to the ongoing transaction (KIP-890)."),
    ConfigDef("quota.window.num", _int(1, _I32), "11", "Samples kept to measure a client's byte rate."),
    ConfigDef("quota.window.size.seconds", _int(1, _I32), "1", "Time span of each quota sample."),
    ConfigDef("replication.quota.window.num", _int(1, _I32), "11", "Samples kept to measure a replication throttle."),
    ConfigDef("replication.quota.window.size.seconds", _int(1, _I32), "1", "Time span of each replication throttle sample."),
    ConfigDef("producer.id.expiration.ms", _int(1, _I32), "86400000", "Expiry of idle producer ids."),
    # -- cluster (ZooKeeper mode) --------------------------------------------------------------------
    ConfigDef("zookeeper.connect", _str, None, "ZooKeeper connect string; unset means the embedded single-node store."),
    # 9 s, not Kafka 3.9's 18 s: a dead broker's session expiry is what moves its leaderships, so this is the
    # pace of failure detection, and a Kafka 4.4 KRaft cluster fences a silent broker after 9 s
    # (broker.session.timeout.ms).
    ConfigDef("zookeeper.session.timeout.ms", _int(1, _I32), "9000",
              "ZooKeeper session timeout: a broker silent this long is dead to the cluster (its leaderships move)."),
    ConfigDef("zookeeper.connection.timeout.ms", _int(1, _I32), None,
              "Wait for the first ZooKeeper connection (unset: zookeeper.session.timeout.ms)."),
    ConfigDef("replica.lag.time.max.ms", _int(1, _MAX), "30000", "Drop a follower from the ISR after this lag."),
    ConfigDef("replica.fetch.max.bytes", _int(0, _I32), "1048576", "Bytes a follower fetches per partition."),
    ConfigDef("replica.fetch.wait.max.ms", _int(0, _I32), "500", "Long-poll time of follower fetches."),
    ConfigDef("num.replica.fetchers", _int(1, _I32), "1", "Replica fetcher tasks per source broker."),
    ConfigDef("replica.fetch.min.bytes", _int(1, _I32), "1", "Bytes a follower's fetch waits for."),
    ConfigDef("replica.fetch.response.max.bytes", _int(0, _I32), "10485760", "Bytes of one follower fetch answer."),
    ConfigDef("replica.fetch.backoff.ms", _int(0, _I32), "1000", "A follower's pause after a failed fetch."),
    ConfigDef("replica.socket.timeout.ms", _int(1, _I32), "30000", "Timeout of a follower's fetch requests."),
    ConfigDef("inter.broker.listener.name", _str, None,
              "The listener brokers use to reach each other (default: the first listener)."),
    ConfigDef("unclean.leader.election.enable", _bool, "false", "Allow out-of-sync replicas to become leader."),
    ConfigDef("controlled.shutdown.enable", _bool, "true", "Move leadership away before shutting down."),
    # ZooKeeper mode's (Kafka 3.9): how often a broker tries to hand its partitions over before stopping anyway.
    ConfigDef("controlled.shutdown.max.retries", _int(0, _I32), "3", "Hand-over attempts before stopping anyway."),
    ConfigDef("controlled.shutdown.retry.backoff.ms", _int(0, _MAX), "5000", "Pause between hand-over attempts."),
    ConfigDef("auto.leader.rebalance.enable", _bool, "true",
              "The controller moves leadership back to preferred replicas when brokers lead too few of theirs."),
    ConfigDef("leader.imbalance.check.interval.seconds", _int(1, _MAX), "300", "How often the controller checks."),
    ConfigDef("leader.imbalance.per.broker.percentage", _int(0, _I32), "10",
              "The share of its preferred partitions a broker may not lead before leadership moves back."),
)


def _kafka_parser(kafka_type: str) -> Callable[[str, str], Any]:
    """A parser that checks a value as Kafka's ConfigDef.Type does (ranges and validators are not checked)."""
    return {"BOOLEAN": _bool, "INT": _int(-2**31, _I32), "SHORT": _int(-2**15, 2**15 - 1), "LONG": _int(-2**63, _MAX),
            "DOUBLE": _float(), "LIST": _list}.get(kafka_type, _str)


# Every other property Kafka 4.4's broker defines (pykbroker.kafka_broker_configs, generated from its jars):
# accepted, checked by type, and reported once at start as having no effect here.
_SERVED = frozenset(d.name for d in CONFIG_DEFS)
CONFIG_DEFS += tuple(
    ConfigDef(name, _kafka_parser(key.type), key.default, "Accepted for compatibility with Kafka; no effect in pykbroker.",
              inert=True)
    for name, key in KAFKA_BROKER_CONFIGS.items() if name not in _SERVED)

_BY_NAME: dict[str, ConfigDef] = {d.name: d for d in CONFIG_DEFS}


# Per-mechanism properties a listener prefix may carry besides the ordinary ones.
_MECHANISM_PROPERTY = re.compile(r"[a-z0-9-]+\.(sasl\.jaas\.config|connections\.max\.reauth\.ms)")


def is_known_property(key: str) -> bool:
    """A property pykbroker accepts (Kafka's name, or a listener-prefixed one)."""
    return key in _BY_NAME or is_listener_property(key) or is_remote_storage_property(key)


# Kafka passes properties under these prefixes to the RemoteStorageManager / RemoteLogMetadataManager as they are.
REMOTE_STORAGE_PREFIXES = ("rsm.config.", "rlmm.config.")


def is_remote_storage_property(key: str) -> bool:
    """``rsm.config.<name>`` / ``rlmm.config.<name>``: a setting of the remote storage backend (may be secret)."""
    return key.startswith(REMOTE_STORAGE_PREFIXES) and len(key) > len("rsm.config.")


def is_listener_property(key: str) -> bool:
    """``listener.name.<name>.<property>``: a known property, or a SASL mechanism's JAAS / reauth setting."""
    m = re.fullmatch(r"listener\.name\.[A-Za-z0-9_]+\.(.+)", key)
    return m is not None and (m.group(1) in _BY_NAME or _MECHANISM_PROPERTY.fullmatch(m.group(1)) is not None)


def parse_properties(text: str) -> dict[str, str]:
    """Java-properties text as Kafka reads it (pykbroker.java_properties), values trimmed as Kafka's
    ConfigDef trims them."""
    try:
        return {k: v.strip() for k, v in java_properties.loads(text).items()}
    except java_properties.PropertiesError as exc:
        raise ConfigError(str(exc)) from None


class Config:
    """Typed view of the broker properties. ``config["log.dirs"]`` gives the parsed value by Kafka name."""

    def __init__(self, props: Mapping[str, str] | None = None) -> None:
        given = dict(props or {})
        unknown = sorted(k for k in given if k not in _BY_NAME and not is_listener_property(k)
                         and not is_remote_storage_property(k))
        if unknown:
            raise ConfigError(
                f"unknown property '{unknown[0]}'"
                + (f" (and {len(unknown) - 1} more: {', '.join(unknown[1:])})" if len(unknown) > 1 else "")
                + "; see `pykbroker --help-config` for the supported names"
            )
        self.explicit: dict[str, str] = {k: v for k, v in given.items() if k in _BY_NAME}
        # rsm.config.* / rlmm.config.*: the backend's own settings (credentials among them: never logged).
        self.remote_storage_properties: dict[str, str] = {k: v for k, v in given.items()
                                                          if is_remote_storage_property(k)}
        # listener.name.<name>.<property> entries, by lower-case listener name (Kafka's prefix): raw text.
        self.listener_properties: dict[str, dict[str, str]] = {}
        for k, v in given.items():
            if k not in _BY_NAME and not is_remote_storage_property(k):
                name, prop = k[len("listener.name."):].split(".", 1)
                self.listener_properties.setdefault(name.lower(), {})[prop] = v
        self._values: dict[str, Any] = {}
        for d in CONFIG_DEFS:
            raw = given.get(d.name, d.default)
            self._values[d.name] = None if raw is None else d.parse(d.name, raw)
        self._derive()

    @classmethod
    def load(cls, path: str | Path | None = None, overrides: Iterable[str] = ()) -> Config:
        """Properties file (optional) then ``key=value`` overrides, as ``kafka-server-start.sh --override``."""
        props: dict[str, str] = {}
        if path is not None:
            try:
                props.update(parse_properties(Path(path).read_text()))
            except OSError as exc:
                raise ConfigError(f"cannot read properties file {path}: {exc.strerror}") from None
        for item in overrides:
            if "=" not in item:
                raise ConfigError(f"--override '{item}' is not of the form key=value")
            k, v = item.split("=", 1)
            props[k.strip()] = v.strip()
        return cls(props)

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    @property
    def inert(self) -> list[str]:
        """Explicitly set properties that have no effect in pykbroker."""
        return sorted(k for k in self.explicit if _BY_NAME[k].inert)

    def is_default(self, name: str) -> bool:
        return name not in self.explicit

    def listener_value(self, listener_name: str, name: str) -> Any:
        """``name`` as ``listener.name.<listener_name>.<name>`` sets it, else the broker-wide value."""
        raw = self.listener_properties.get(listener_name.lower(), {}).get(name)
        if raw is None:
            return self._values[name]
        return _BY_NAME[name].parse(f"listener.name.{listener_name.lower()}.{name}", raw)

    def _derive(self) -> None:
        v = self._values
        node_id = v["node.id"] if "node.id" in self.explicit or v["broker.id"] < 0 else v["broker.id"]
        self.node_id: int = node_id
        self.listeners: tuple[Listener, ...] = v["listeners"]
        if not self.listeners:
            raise ConfigError("listeners: at least one listener is required")
        self.advertised_listeners: tuple[Listener, ...] = v["advertised.listeners"] or self.listeners
        self.rack: str | None = v["broker.rack"]
        dirs = v["log.dirs"] if "log.dirs" in self.explicit or "log.dir" not in self.explicit else v["log.dir"]
        self.log_dirs: tuple[str, ...] = tuple(dirs)
        if not self.log_dirs:
            raise ConfigError("log.dirs: at least one directory is required")
        cordoned = list(v["cordoned.log.dirs"])
        if (problem := cordoned_log_dirs_error(cordoned, self.log_dirs)) is not None:
            raise ConfigError(problem)
        self.cordoned_log_dirs: tuple[str, ...] = self.log_dirs if "*" in cordoned else tuple(cordoned)
        if v["metrics.client.telemetry.enable"] and v["metrics.port"] < 0:
            raise ConfigError("metrics.client.telemetry.enable: the pushed client metrics are served on the metrics "
                              "endpoint; set metrics.port too")
        self.socket_request_max_bytes: int = v["socket.request.max.bytes"]
        self.fetch_max_bytes: int = v["fetch.max.bytes"]
        if 0 < v["queued.max.request.bytes"] < self.socket_request_max_bytes:
            raise ConfigError("queued.max.request.bytes must be larger or equal to socket.request.max.bytes")  # Kafka's
        self.max_connections_per_ip_overrides = _connection_overrides(v["max.connections.per.ip.overrides"])
        if v["max.connections.per.ip"] == 0 and not self.max_connections_per_ip_overrides:
            raise ConfigError("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides "
                              "property is set.")  # Kafka's own words
        self.num_partitions: int = v["num.partitions"]
        self.default_replication_factor: int = v["default.replication.factor"]
        self.auto_create_topics_enable: bool = v["auto.create.topics.enable"]
        self.message_max_bytes: int = v["message.max.bytes"]
        self.zookeeper_connect: str | None = v["zookeeper.connect"]
        self.zookeeper_session_timeout_ms: int = v["zookeeper.session.timeout.ms"]
        # Kafka: "If not set, the value in zookeeper.session.timeout.ms is used"
        self.zookeeper_connection_timeout_ms: int = (v["zookeeper.connection.timeout.ms"]
                                                     if v["zookeeper.connection.timeout.ms"] is not None
                                                     else self.zookeeper_session_timeout_ms)
        if v["log.retention.ms"] is not None:
            self.log_retention_ms: int = v["log.retention.ms"]
        elif v["log.retention.minutes"] is not None:
            self.log_retention_ms = v["log.retention.minutes"] * 60_000
        else:
            self.log_retention_ms = v["log.retention.hours"] * 3_600_000
        self.log_roll_ms: int = v["log.roll.ms"] if v["log.roll.ms"] is not None else v["log.roll.hours"] * 3_600_000

    def topic_defaults(self) -> dict[str, str]:
        """Broker-level defaults of topic configs, by topic config name (Kafka's synonyms)."""
        v = self._values
        flush_ms = v["log.flush.interval.ms"]
        return {
            "cleanup.policy": ",".join(v["log.cleanup.policy"]),
            "compression.type": v["compression.type"],
            "compression.gzip.level": str(v["compression.gzip.level"]),
            "compression.lz4.level": str(v["compression.lz4.level"]),
            "compression.zstd.level": str(v["compression.zstd.level"]),
            "local.retention.bytes": str(v["log.local.retention.bytes"]),
            "local.retention.ms": str(v["log.local.retention.ms"]),
            "remote.copy.lag.ms": str(v["log.remote.copy.lag.ms"]),
            "remote.copy.lag.bytes": str(v["log.remote.copy.lag.bytes"]),
            "preallocate": str(v["log.preallocate"]).lower(),
            "delete.retention.ms": str(v["log.cleaner.delete.retention.ms"]),
            "file.delete.delay.ms": str(v["log.segment.delete.delay.ms"]),
            "flush.messages": str(v["log.flush.interval.messages"]),
            "flush.ms": str(flush_ms if flush_ms is not None else _MAX),
            "index.interval.bytes": str(v["log.index.interval.bytes"]),
            "max.compaction.lag.ms": str(v["log.cleaner.max.compaction.lag.ms"]),
            "max.message.bytes": str(v["message.max.bytes"]),
            "message.timestamp.type": v["log.message.timestamp.type"],
            "message.timestamp.before.max.ms": str(v["log.message.timestamp.before.max.ms"]),
            "message.timestamp.after.max.ms": str(v["log.message.timestamp.after.max.ms"]),
            "min.cleanable.dirty.ratio": str(v["log.cleaner.min.cleanable.ratio"]),
            "min.compaction.lag.ms": str(v["log.cleaner.min.compaction.lag.ms"]),
            "min.insync.replicas": str(v["min.insync.replicas"]),
            "retention.bytes": str(v["log.retention.bytes"]),
            "retention.ms": str(self.log_retention_ms),
            "segment.bytes": str(v["log.segment.bytes"]),
            "segment.index.bytes": str(v["log.index.size.max.bytes"]),
            "segment.ms": str(self.log_roll_ms),
            "segment.jitter.ms": str(v["log.roll.jitter.ms"] if v["log.roll.jitter.ms"] is not None
                                     else v["log.roll.jitter.hours"] * 3_600_000),
            "unclean.leader.election.enable": str(v["unclean.leader.election.enable"]).lower(),
        }

    @staticmethod
    def help_text() -> str:
        lines = []
        for d in CONFIG_DEFS:
            tag = " (no effect)" if d.inert else ""
            lines.append(f"{d.name} = {d.default if d.default is not None else ''}{tag}\n    {d.doc}")
        return "\n".join(lines)
