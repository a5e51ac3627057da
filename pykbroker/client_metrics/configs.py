"""CLIENT_METRICS config resources (KIP-714 subscriptions), as Kafka 4.4's ClientMetricsConfigs.

A subscription is a named resource with three configs: ``metrics`` (metric name prefixes, ``*`` for all),
``interval.ms`` (how often matching clients push, 100 ms to one hour, default 5 minutes) and ``match``
(``<attribute>=<regex>`` pairs over the client's attributes; none matches every client).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pykbroker.topic_config import ConfigEntry, ConfigSource, ConfigType
from wire import ErrorCode

__all__ = ["ALL_SUBSCRIBED_METRICS", "CONFIG_NAMES", "ClientMetricsConfigError", "INTERVAL_MS_DEFAULT",
           "MATCH_ATTRIBUTES", "Subscription", "config_entries", "parse_list", "subscription", "validate"]

METRICS_CONFIG, INTERVAL_MS_CONFIG, MATCH_CONFIG = "metrics", "interval.ms", "match"
#: The configs in Kafka's ConfigDef order (DescribeConfigs answers them sorted by name).
CONFIG_NAMES = (METRICS_CONFIG, INTERVAL_MS_CONFIG, MATCH_CONFIG)
ALL_SUBSCRIBED_METRICS = "*"
INTERVAL_MS_DEFAULT = 5 * 60 * 1000
MIN_INTERVAL_MS, MAX_INTERVAL_MS = 100, 3_600_000
#: The client attributes a ``match`` pattern may name.
MATCH_ATTRIBUTES = frozenset(("client_instance_id", "client_id", "client_software_name", "client_software_version",
                              "client_source_address", "client_source_port"))
_TYPES = {METRICS_CONFIG: ConfigType.LIST, INTERVAL_MS_CONFIG: ConfigType.INT, MATCH_CONFIG: ConfigType.LIST}
_DOCS = {METRICS_CONFIG: "Telemetry metric name prefix list", INTERVAL_MS_CONFIG: "Metrics push interval in milliseconds",
         MATCH_CONFIG: "Client match criteria"}
_DEFAULTS = {METRICS_CONFIG: "", INTERVAL_MS_CONFIG: str(INTERVAL_MS_DEFAULT), MATCH_CONFIG: ""}
_INT32_MAX = 2**31 - 1


class ClientMetricsConfigError(Exception):
    """A subscription's configs are refused: ``code`` and Kafka's message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True)
class Subscription:
    """One parsed subscription."""

    name: str
    metrics: tuple[str, ...]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]


def parse_list(value: str) -> list[str]:
    """A LIST config's items as Java's ConfigDef parses them (blank: none; items trimmed)."""
    return [] if not value.strip() else [item.strip() for item in value.strip().split(",")]


def _parse_int(name: str, value: str) -> int:
    try:
        parsed = int(value.strip())
    except ValueError:
        raise ClientMetricsConfigError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                                       "Not a number of type INT") from None
    if not -2**31 <= parsed <= _INT32_MAX:
        raise ClientMetricsConfigError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: "
                                       "Not a number of type INT")
    return parsed


def parse_match(patterns: list[str]) -> dict[str, re.Pattern[str]]:
    """``attribute=regex`` items as a map (Kafka splits on every '=' and wants exactly two parts)."""
    parsed: dict[str, re.Pattern[str]] = {}
    for pattern in patterns:
        parts = pattern.split("=")
        while parts and parts[-1] == "":  # Java's String.split drops trailing empty strings
            parts.pop()
        if len(parts) != 2 or parts[0].strip() not in MATCH_ATTRIBUTES:
            raise ClientMetricsConfigError(ErrorCode.INVALID_CONFIG, f"Illegal client matching pattern: {pattern}")
        try:
            parsed[parts[0].strip()] = re.compile(parts[1].strip())
        except re.error:
            raise ClientMetricsConfigError(ErrorCode.INVALID_CONFIG,
                                           f"Illegal client matching pattern: {pattern}") from None
    return parsed


def validate(name: str, configs: Mapping[str, str]) -> None:
    """Kafka's ClientMetricsConfigs.validate: raises ClientMetricsConfigError for a refused set."""
    if not name:
        raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    for key in configs:
        if key not in _TYPES:
            raise ClientMetricsConfigError(ErrorCode.INVALID_REQUEST, f"Unknown client metrics configuration: {key}")
    if INTERVAL_MS_CONFIG in configs:
        interval = _parse_int(INTERVAL_MS_CONFIG, configs[INTERVAL_MS_CONFIG])
        if not MIN_INTERVAL_MS <= interval <= MAX_INTERVAL_MS:
            raise ClientMetricsConfigError(
                ErrorCode.INVALID_REQUEST, f"Invalid value {interval} for {INTERVAL_MS_CONFIG}, interval must be "
                f"between {MIN_INTERVAL_MS} and {MAX_INTERVAL_MS} (1 hour)")
    if MATCH_CONFIG in configs:
        parse_match(parse_list(configs[MATCH_CONFIG]))


def subscription(name: str, configs: Mapping[str, str]) -> Subscription:
    """A stored (so valid) subscription, parsed; missing configs take their defaults."""
    values = {**_DEFAULTS, **configs}
    return Subscription(name, tuple(parse_list(values[METRICS_CONFIG])), int(values[INTERVAL_MS_CONFIG]),
                        parse_match(parse_list(values[MATCH_CONFIG])))


def config_entries(stored: Mapping[str, str]) -> list[ConfigEntry]:
    """DescribeConfigs' entries of one subscription: its own values (CLIENT_METRICS_CONFIG) over the defaults."""
    entries = []
    for name in sorted(CONFIG_NAMES):
        synonyms: tuple[tuple[str, str | None, int], ...] = ()
        if name in stored:
            value, source = ",".join(parse_list(stored[name])) if _TYPES[name] == ConfigType.LIST else \
                str(int(stored[name])), ConfigSource.CLIENT_METRICS_CONFIG
            synonyms = ((name, value, source),)
        else:
            value, source = _DEFAULTS[name], ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(name, value, source, _TYPES[name], False, False, _DOCS[name], synonyms))
    return entries
