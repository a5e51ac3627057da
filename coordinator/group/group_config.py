"""Group configs (KIP-848's GROUP config resource, type 32): Kafka 4.1's GroupConfig and its checks.

A group may override ten settings of its protocol; each defaults to the broker's ``group.*`` property of
the same meaning and is bounded by the broker's ``group.*.min/max.*`` properties (Kafka's
GroupConfig.validateValues, in its order and with its messages). Pure: the stored overrides live in the
metadata store (by group id, with the group's other metadata there); the coordinator reads them through
``GroupConfigs.get`` when it times a member's session or tells it its heartbeat interval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GROUP_CONFIGS", "GroupConfigError", "GroupConfigDef", "defaults", "describe_order", "validate"]

INVALID_CONFIG = 40
INT, STRING = 3, 2  # DescribeConfigs' config_type values


class GroupConfigError(Exception):
    """A refused group config change: Kafka's error code (INVALID_CONFIG) and message."""

    def __init__(self, message: str, code: int = INVALID_CONFIG) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class GroupConfigDef:
    name: str
    config_type: int
    broker_default: str | None  # the broker property whose value is the default, or None (a fixed default)
    fixed_default: str | None
    doc: str


GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in (
    GroupConfigDef("consumer.session.timeout.ms", INT, "group.consumer.session.timeout.ms", None,
                   "The timeout to detect client failures when using the consumer group protocol."),
    GroupConfigDef("consumer.heartbeat.interval.ms", INT, "group.consumer.heartbeat.interval.ms", None,
                   "The heartbeat interval given to the members of a consumer group."),
    GroupConfigDef("share.session.timeout.ms", INT, "group.share.session.timeout.ms", None,
                   "The timeout to detect client failures when using the share group protocol."),
    GroupConfigDef("share.heartbeat.interval.ms", INT, "group.share.heartbeat.interval.ms", None,
                   "The heartbeat interval given to the members of a share group."),
    GroupConfigDef("share.record.lock.duration.ms", INT, "group.share.record.lock.duration.ms", None,
                   "The record acquisition lock duration in milliseconds for share groups."),
    GroupConfigDef("share.auto.offset.reset", STRING, None, "latest",
                   "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically "
                   "reset the offset to the earliest offset</li><li>latest: automatically reset the offset to the "
                   "latest offset</li><li>by_duration:&lt;duration&gt;: automatically reset the offset to a "
                   "configured duration from the current timestamp. &lt;duration&gt; must be specified in ISO8601 "
                   "format (PnDTnHnMn.nS). Negative duration is not allowed.</li><li>anything else: throw exception "
                   "to the share consumer.</li></ul>"),
    GroupConfigDef("share.isolation.level", STRING, None, "read_uncommitted",
                   "Controls how to read records written transactionally. If set to \"read_committed\", the share "
                   "group will only deliver transactional records which have been committed. If set to "
                   "\"read_uncommitted\", the share group will return all messages, even transactional messages "
                   "which have been aborted. Non-transactional records will be returned unconditionally in either "
                   "mode."),
    GroupConfigDef("streams.session.timeout.ms", INT, "group.streams.session.timeout.ms", None,
                   "The timeout to detect client failures when using the streams group protocol."),
    GroupConfigDef("streams.heartbeat.interval.ms", INT, "group.streams.heartbeat.interval.ms", None,
                   "The heartbeat interval given to the members."),
    GroupConfigDef("streams.num.standby.replicas", INT, "group.streams.num.standby.replicas", None,
                   "The number of standby replicas for each task."),
)}

# The order a Kafka 4.1 broker lists them in (its HashMap's), so DescribeConfigs answers alike.
_DESCRIBE_ORDER = ("consumer.session.timeout.ms", "streams.heartbeat.interval.ms", "share.auto.offset.reset",
                   "share.record.lock.duration.ms", "consumer.heartbeat.interval.ms", "share.session.timeout.ms",
                   "share.isolation.level", "streams.session.timeout.ms", "share.heartbeat.interval.ms",
                   "streams.num.standby.replicas")

# (group config, broker property of its lower bound, of its upper bound), in GroupConfig.validateValues' order.
_BOUNDS = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms"),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms",
     "group.streams.max.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
)
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)
_I32 = (-2**31, 2**31 - 1)

BrokerLookup = Callable[[str], Any]  # a parsed broker property by Kafka name (Config.__getitem__)


def describe_order() -> tuple[str, ...]:
    return _DESCRIBE_ORDER


def defaults(broker: BrokerLookup) -> dict[str, str]:
    """Every group config's default, from the broker's properties."""
    return {d.name: str(broker(d.broker_default)) if d.broker_default else d.fixed_default or ""
            for d in GROUP_CONFIGS.values()}


def _typed(name: str, raw: str) -> int | str:
    d = GROUP_CONFIGS[name]
    if d.config_type == STRING:
        return raw.strip()
    try:
        value = int(raw.strip())
    except ValueError:
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT") from None
    if not _I32[0] <= value <= _I32[1]:
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type INT")
    return value


def _check_choice(name: str, value: str) -> None:
    if name == "share.isolation.level" and value not in ("read_committed", "read_uncommitted"):
        raise GroupConfigError(f"Invalid value {value} for configuration {name}: String must be one of: "
                               "read_committed, read_uncommitted")
    if name == "share.auto.offset.reset" and value.lower() not in ("earliest", "latest") and not (
            value.lower().startswith("by_duration:") and _DURATION.fullmatch(value.split(":", 1)[1])
            and value.split(":", 1)[1] not in ("P", "PT")):
        raise GroupConfigError(
            f"Invalid value {value} for configuration {name}: Invalid value `{value}` for configuration {name}. The "
            "value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")


def validate(configs: Mapping[str, str], broker: BrokerLookup) -> None:
    """A group's whole new set of overrides, checked as Kafka's GroupConfig.validate does."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise GroupConfigError(f"Unknown group config name: {name}")
    values: dict[str, Any] = {n: _typed(n, v) for n, v in defaults(broker).items()}
    for name, raw in configs.items():
        values[name] = _typed(name, raw)
        if GROUP_CONFIGS[name].config_type == STRING:
            _check_choice(name, values[name])
    for name, low, high in _BOUNDS:
        if low is not None and values[name] < broker(low):
            raise GroupConfigError(f"{name} must be greater than or equal to {low}")
        if values[name] > broker(high):
            raise GroupConfigError(f"{name} must be less than or equal to {high}")
    for kind in ("consumer", "share", "streams"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            raise GroupConfigError(f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")


class GroupConfigs:
    """The overrides of every group (``stored``, by group id) over the broker's defaults, as the coordinator
    reads them."""

    def __init__(self, stored: Callable[[], Mapping[str, Mapping[str, str]]], broker: BrokerLookup) -> None:
        self._stored = stored
        self._broker = broker

    def get(self, group_id: str, name: str) -> int | str:
        raw = self._stored().get(group_id, {}).get(name)
        if raw is None:
            d = GROUP_CONFIGS[name]
            raw = str(self._broker(d.broker_default)) if d.broker_default else d.fixed_default or ""
        return _typed(name, raw)
