"""The ``iceberg.*`` topic configs: names, defaults, documentation, parsing.

A topic is written into an Iceberg table when ``iceberg.mode`` is not ``disabled``. These configs are
stored with the topic's other configs (CreateTopics, AlterConfigs, ``kafka-configs.sh``), validated here
(INVALID_CONFIG with this module's message) and shown by DescribeConfigs; the log never sees them
(``split_topic_configs``). Redpanda's ``redpanda.iceberg.*`` names map onto them (README, "Iceberg").
This module imports nothing heavy: pyiceberg and pyarrow load only when a topic turns the mode on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ICEBERG_PREFIX", "ICEBERG_TOPIC_CONFIGS", "IcebergConfigError", "IcebergTopicConfig", "MODES",
           "PartitionField", "REGISTRY_MODES", "parse_mode", "parse_partition_spec", "parse_value_schema",
           "split_topic_configs"]

ICEBERG_PREFIX = "iceberg."
MODE_DISABLED = "disabled"
MODE_KEY_VALUE = "key_value"
MODE_VALUE_SCHEMA = "value_schema"
# Redpanda's name: values in Confluent's wire format, decoded with the schema registry's schema their id names.
MODE_VALUE_SCHEMA_ID_PREFIX = "value_schema_id_prefix"
# Redpanda's name: values WITHOUT the wire format's prefix, decoded with the latest schema of a subject
# (``value_schema_latest[:subject=<subject>][,protobuf_name=<message>]``; default subject ``<topic>-value``).
MODE_VALUE_SCHEMA_LATEST = "value_schema_latest"
MODES = (MODE_DISABLED, MODE_KEY_VALUE, MODE_VALUE_SCHEMA, MODE_VALUE_SCHEMA_ID_PREFIX, MODE_VALUE_SCHEMA_LATEST)
#: The modes whose value columns come from the schema registry's schemas.
REGISTRY_MODES = (MODE_VALUE_SCHEMA_ID_PREFIX, MODE_VALUE_SCHEMA_LATEST)
_LATEST_OPTIONS = ("subject", "protobuf_name")
#: The transforms ``iceberg.partition.spec`` accepts, and the columns each applies to.
_TRANSFORMS = {"hour": ("timestamp",), "day": ("timestamp",), "month": ("timestamp",), "year": ("timestamp",),
               "identity": ("partition",)}
#: JSON Schema ``type`` names ``iceberg.value.schema`` accepts, and the Iceberg type each column gets.
VALUE_TYPES = {"string": "string", "integer": "long", "number": "double", "boolean": "boolean",
               "object": "string", "array": "string"}


class IcebergConfigError(ValueError):
    """An invalid ``iceberg.*`` value; the message names the config and what it accepts."""


@dataclass(frozen=True)
class IcebergConfigDef:
    """One topic config: its DescribeConfigs type name (``ConfigType`` attribute), default and documentation."""

    type_name: str
    default: str
    doc: str


ICEBERG_TOPIC_CONFIGS: dict[str, IcebergConfigDef] = {
    "iceberg.mode": IcebergConfigDef(
        "STRING", MODE_DISABLED,
        "Write the topic into an Iceberg table: key_value (partition, offset, timestamp, key, value, headers "
        "columns), value_schema (JSON values decoded into the columns of iceberg.value.schema), "
        "value_schema_id_prefix (values Confluent's Avro, Protobuf or JSON Schema serializers wrote, decoded with "
        "the broker's schema registry into the fields of their schema; a new schema version adds columns), "
        "value_schema_latest[:subject=<subject>][,protobuf_name=<message>] (values without that prefix, decoded "
        "with the latest schema of the subject, by default <topic>-value; for Protobuf the message named, by "
        "default the file's first), or disabled."),
    "iceberg.commit.interval.ms": IcebergConfigDef(
        "LONG", "60000", "Longest time between a record becoming stable and its table commit (the table lag)."),
    "iceberg.target.file.size.bytes": IcebergConfigDef(
        "LONG", "134217728",
        "A partition commits as soon as this many record bytes wait (and never more at once): the data file size."),
    "iceberg.partition.spec": IcebergConfigDef(
        "STRING", "day(timestamp)",
        "The table's partition spec: comma-separated hour|day|month|year(timestamp), identity(partition); "
        "empty for none. Used when the table is created."),
    "iceberg.value.schema": IcebergConfigDef(
        "STRING", "",
        "value_schema mode: a JSON Schema object ({\"type\": \"object\", \"properties\": {name: {\"type\": "
        "string|integer|number|boolean|object|array}}}); a new property evolves the table."),
    "iceberg.compaction.min.files": IcebergConfigDef(
        "INT", "10", "Compact a table partition once it holds this many data files, together smaller than "
        "iceberg.target.file.size.bytes, into one (a background task, with progress lines); 0: never."),
    "iceberg.snapshot.max.age.ms": IcebergConfigDef(
        "LONG", "432000000", "Expire the table's snapshots older than this (the current one is always kept), a "
        "background task with a log line; Iceberg's history.expire.max-snapshot-age-ms."),
    "iceberg.orphan.file.min.age.ms": IcebergConfigDef(
        "LONG", "86400000", "Delete files in the table's data and metadata folders that no snapshot references "
        "(written but never committed, say before a kill -9, or only of expired snapshots) once this old; keep it "
        "well above the time a commit takes. A background task with a log line."),
    "iceberg.delete.table.on.topic.delete": IcebergConfigDef(
        "BOOLEAN", "false", "Drop the table (and its dead-letter table) when the topic is deleted."),
}


@dataclass(frozen=True)
class PartitionField:
    """One field of the table's partition spec: ``transform(column)``."""

    transform: str
    column: str


@dataclass(frozen=True)
class IcebergTopicConfig:
    """A topic's parsed ``iceberg.*`` configs (defaults filled in)."""

    mode: str = MODE_DISABLED
    commit_interval_ms: int = 60_000
    target_file_size_bytes: int = 134_217_728
    partition_spec: tuple[PartitionField, ...] = (PartitionField("day", "timestamp"),)
    value_schema: tuple[tuple[str, str], ...] = ()
    compaction_min_files: int = 10
    snapshot_max_age_ms: int = 432_000_000
    orphan_file_min_age_ms: int = 86_400_000
    delete_table_on_topic_delete: bool = False
    latest_subject: str = ""  # value_schema_latest: the subject ("" = <topic>-value)
    protobuf_name: str = ""  # value_schema_latest: the Protobuf message ("" = the file's first)

    @property
    def enabled(self) -> bool:
        return self.mode != MODE_DISABLED

    @property
    def decodes_with_registry(self) -> bool:
        """Whether the value columns come from the schema registry (value_schema_id_prefix, value_schema_latest)."""
        return self.mode in REGISTRY_MODES

    def subject(self, topic: str) -> str:
        """value_schema_latest's subject for ``topic``: the one configured, else Confluent's ``<topic>-value``."""
        return self.latest_subject or f"{topic}-value"

    @classmethod
    def from_topic_configs(cls, configs: Mapping[str, str]) -> IcebergTopicConfig:
        """Parse the ``iceberg.*`` entries of a topic's configs; IcebergConfigError names a bad one."""
        values = {name: configs.get(name, spec.default) for name, spec in ICEBERG_TOPIC_CONFIGS.items()}
        for name in configs:
            if name.startswith(ICEBERG_PREFIX) and name not in ICEBERG_TOPIC_CONFIGS:
                raise IcebergConfigError(f"Unknown topic config name: {name}")
        mode, options = parse_mode(values["iceberg.mode"])
        if mode not in MODES:
            raise IcebergConfigError(f"Invalid value {mode} for configuration iceberg.mode: String must be one of: "
                                     + ", ".join(MODES))
        schema = parse_value_schema(values["iceberg.value.schema"])
        if mode == MODE_VALUE_SCHEMA and not schema:
            raise IcebergConfigError("iceberg.mode=value_schema needs iceberg.value.schema (a JSON Schema object "
                                     "with properties)")
        return cls(mode=mode,
                   commit_interval_ms=_long("iceberg.commit.interval.ms", values["iceberg.commit.interval.ms"], 1),
                   target_file_size_bytes=_long("iceberg.target.file.size.bytes",
                                                values["iceberg.target.file.size.bytes"], 1),
                   partition_spec=parse_partition_spec(values["iceberg.partition.spec"]),
                   value_schema=schema,
                   compaction_min_files=_long("iceberg.compaction.min.files", values["iceberg.compaction.min.files"],
                                              0, 1 << 31),
                   snapshot_max_age_ms=_long("iceberg.snapshot.max.age.ms", values["iceberg.snapshot.max.age.ms"], 1),
                   orphan_file_min_age_ms=_long("iceberg.orphan.file.min.age.ms",
                                                values["iceberg.orphan.file.min.age.ms"], 1),
                   delete_table_on_topic_delete=_bool("iceberg.delete.table.on.topic.delete",
                                                      values["iceberg.delete.table.on.topic.delete"]),
                   latest_subject=options.get("subject", ""), protobuf_name=options.get("protobuf_name", ""))


def parse_mode(raw: str) -> tuple[str, dict[str, str]]:
    """(mode, options) of ``iceberg.mode``: Redpanda's ``value_schema_latest:subject=s,protobuf_name=m`` form."""
    mode, sep, rest = raw.strip().partition(":")
    mode = mode.strip()
    if not sep:
        return mode, {}
    if mode != MODE_VALUE_SCHEMA_LATEST:
        raise IcebergConfigError(f"Invalid value {raw} for configuration iceberg.mode: only value_schema_latest "
                                 "takes options (value_schema_latest:subject=<subject>,protobuf_name=<message>)")
    options: dict[str, str] = {}
    for part in rest.split(","):
        name, eq, value = part.partition("=")
        name, value = name.strip(), value.strip()
        if not eq or name not in _LATEST_OPTIONS or not value or name in options:
            raise IcebergConfigError(f"Invalid value {raw} for configuration iceberg.mode: {part.strip()!r} is not "
                                     "one of subject=<subject>, protobuf_name=<message> (each at most once)")
        options[name] = value
    return mode, options


def split_topic_configs(configs: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the log's configs, the ``iceberg.*`` ones) of a topic's configs."""
    log_configs: dict[str, str] = {}
    iceberg: dict[str, str] = {}
    for name, value in configs.items():
        (iceberg if name.startswith(ICEBERG_PREFIX) else log_configs)[name] = value
    return log_configs, iceberg


def _long(name: str, raw: str, lo: int, hi: int = 1 << 63) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        raise IcebergConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type LONG") from None
    if value < lo:
        raise IcebergConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {lo}")
    if value >= hi:
        raise IcebergConfigError(f"Invalid value {value} for configuration {name}: Value must be no more than {hi - 1}")
    return value


def _bool(name: str, raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise IcebergConfigError(f"Invalid value {raw} for configuration {name}: Expected value to be either true "
                                 "or false")
    return text == "true"


def parse_partition_spec(raw: str) -> tuple[PartitionField, ...]:
    """``"day(timestamp)"`` or Redpanda's ``"(hour(timestamp), identity(partition))"`` as fields; ``""``: none."""
    text = raw.strip()
    if text.startswith("(") and text.endswith(")") and (text.count("(") > 1 or text == "()"):
        text = text[1:-1].strip()
    fields: list[PartitionField] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        transform, sep, rest = part.partition("(")
        transform = transform.strip().lower()
        column = rest.rstrip(")").strip() if sep and rest.endswith(")") else ""
        if transform not in _TRANSFORMS or column not in _TRANSFORMS[transform]:
            raise IcebergConfigError(
                f"Invalid value {raw} for configuration iceberg.partition.spec: {part!r} is not one of "
                + ", ".join(f"{t}({c})" for t, cs in _TRANSFORMS.items() for c in cs))
        if any(f.column == column for f in fields):
            raise IcebergConfigError(f"Invalid value {raw} for configuration iceberg.partition.spec: "
                                     f"{column} is partitioned twice")
        fields.append(PartitionField(transform, column))
    return tuple(fields)


def parse_value_schema(raw: str) -> tuple[tuple[str, str], ...]:
    """A JSON Schema object's properties as (name, JSON type) pairs in declaration order; ``""``: none."""
    if not raw.strip():
        return ()
    bad = ("Invalid value for configuration iceberg.value.schema: expected a JSON Schema object such as "
           '{"type": "object", "properties": {"id": {"type": "integer"}}}')
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise IcebergConfigError(f"{bad} ({exc})") from None
    if not isinstance(doc, dict) or doc.get("type", "object") != "object" \
            or not isinstance(doc.get("properties"), dict) or not doc["properties"]:
        raise IcebergConfigError(bad)
    fields = []
    for name, prop in doc["properties"].items():
        json_type = prop.get("type") if isinstance(prop, dict) else None
        if isinstance(json_type, list):  # ["string", "null"]: nullable, as every column is
            json_type = next((t for t in json_type if t != "null"), None)
        if json_type not in VALUE_TYPES:
            raise IcebergConfigError(f"Invalid value for configuration iceberg.value.schema: property {name!r} has "
                                     f"type {json_type!r}; use one of " + ", ".join(VALUE_TYPES))
        if name in _RESERVED_COLUMNS:
            raise IcebergConfigError(f"Invalid value for configuration iceberg.value.schema: property {name!r} "
                                     "clashes with a column of every table (" + ", ".join(_RESERVED_COLUMNS) + ")")
        fields.append((name, json_type))
    return tuple(fields)


#: Columns every table has besides the value's: the record's coordinates.
_RESERVED_COLUMNS = ("partition", "offset", "timestamp", "key", "headers")


def iceberg_config_error(configs: Mapping[str, str]) -> str | None:
    """The INVALID_CONFIG message for a topic's ``iceberg.*`` configs, or None when they are valid."""
    try:
        IcebergTopicConfig.from_topic_configs(configs)
    except IcebergConfigError as exc:
        return str(exc)
    return None


def help_text() -> str:
    """The ``--help-config`` section of the ``iceberg.*`` topic configs."""
    lines = ["", "# Topic configs (CreateTopics, kafka-configs.sh --entity-type topics): topics as Iceberg tables"]
    for name, spec in ICEBERG_TOPIC_CONFIGS.items():
        lines.append(f"{name} = {spec.default}\n    {spec.doc}")
    return "\n".join(lines)
