"""Group configs (KIP-848's GROUP config resource, type 32): Kafka 4.4's GroupConfig and its checks.

A group may override the settings of its protocol below; most default to a broker ``group.*`` property of the
same meaning (their synonym, which DescribeConfigs shows) and are bounded by the broker's ``group.*.min/max.*``
properties (Kafka's GroupConfig.validate, with its messages); the rest have a fixed default. Internal ones
(the assignor offload switches, Streams' warm-up settings) are accepted and stored, never described. Pure: the
stored overrides live in the metadata store (by group id, with the group's other metadata there); the
coordinator reads them through ``GroupConfigs.get`` when it times a member's session or tells it its heartbeat
interval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["GROUP_CONFIGS", "GroupConfigError", "GroupConfigDef", "defaults", "describe_order", "validate"]

INVALID_CONFIG = 40
BOOLEAN, STRING, INT, LONG, LIST = 1, 2, 3, 5, 7  # DescribeConfigs' config_type values


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
    broker_default: str | None  # the broker property whose value is the default (its synonym), or None
    fixed_default: str | None
    doc: str
    at_least: int | None = None  # ConfigDef's range validator (checked before the broker's bounds)
    internal: bool = False


def _d(name: str, config_type: int, broker_default: str | None, doc: str, *, fixed: str | None = None,
       at_least: int | None = None, internal: bool = False) -> GroupConfigDef:
    return GroupConfigDef(name, config_type, broker_default, fixed, doc, at_least, internal)


_SHARE_AUTO_OFFSET_RESET_DOC = (
    "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset the offset "
    "to the earliest offset</li><li>latest: automatically reset the offset to the latest offset</li><li>"
    "by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration from the current "
    "timestamp. &lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). Negative duration is not "
    "allowed.</li><li>anything else: throw exception to the share consumer.</li></ul>")
_SHARE_ISOLATION_LEVEL_DOC = (
    "Controls how to read records written transactionally. If set to \"read_committed\", the share group will only "
    "deliver transactional records which have been committed. If set to \"read_uncommitted\", the share group will "
    "return all messages, even transactional messages which have been aborted. Non-transactional records will be "
    "returned unconditionally in either mode.")

GROUP_CONFIGS: dict[str, GroupConfigDef] = {d.name: d for d in (
    _d("consumer.session.timeout.ms", INT, "group.consumer.session.timeout.ms",
       "The timeout to detect client failures when using the consumer group protocol.", at_least=1),
    _d("consumer.heartbeat.interval.ms", INT, "group.consumer.heartbeat.interval.ms",
       "The heartbeat interval given to the members of a consumer group.", at_least=1),
    _d("consumer.assignment.interval.ms", INT, "group.consumer.assignment.interval.ms",
       "The interval between assignment updates for a consumer group.", at_least=0),
    _d("consumer.assignor.offload.enable", BOOLEAN, "group.consumer.assignor.offload.enable",
       "Whether to offload consumer group assignment to a group coordinator background thread.", internal=True),
    _d("share.session.timeout.ms", INT, "group.share.session.timeout.ms",
       "The timeout to detect client failures when using the share group protocol.", at_least=1),
    _d("share.heartbeat.interval.ms", INT, "group.share.heartbeat.interval.ms",
       "The heartbeat interval given to the members of a share group.", at_least=1),
    _d("share.record.lock.duration.ms", INT, "group.share.record.lock.duration.ms",
       "The record acquisition lock duration in milliseconds for share groups.", at_least=1000),
    _d("share.delivery.count.limit", INT, "group.share.delivery.count.limit",
       "The maximum number of delivery attempts for a record delivered to a share group.", at_least=2),
    _d("share.partition.max.record.locks", INT, "group.share.partition.max.record.locks",
       "Share-group record lock limit per share-partition.", at_least=100),
    _d("share.auto.offset.reset", STRING, None, _SHARE_AUTO_OFFSET_RESET_DOC, fixed="latest"),
    _d("share.isolation.level", STRING, None, _SHARE_ISOLATION_LEVEL_DOC, fixed="read_uncommitted"),
    _d("share.renew.acknowledge.enable", BOOLEAN, None,
       "Whether the renew acknowledge type is enabled for the share group.", fixed="true"),
    _d("share.assignment.interval.ms", INT, "group.share.assignment.interval.ms",
       "The interval between assignment updates for a share group.", at_least=0),
    _d("share.assignor.offload.enable", BOOLEAN, "group.share.assignor.offload.enable",
       "Whether to offload share group assignment to a group coordinator background thread.", internal=True),
    _d("streams.session.timeout.ms", INT, "group.streams.session.timeout.ms",
       "The timeout to detect client failures when using the streams group protocol.", at_least=1),
    _d("streams.heartbeat.interval.ms", INT, "group.streams.heartbeat.interval.ms",
       "The heartbeat interval given to the members.", at_least=1),
    _d("streams.num.standby.replicas", INT, "group.streams.num.standby.replicas",
       "The number of standby replicas for each task.", at_least=0),
    _d("streams.initial.rebalance.delay.ms", INT, "group.streams.initial.rebalance.delay.ms",
       "The amount of time the group coordinator will wait for more streams clients to join a new group before "
       "performing the first rebalance. A longer delay means potentially fewer rebalances.", at_least=0),
    _d("streams.assignment.interval.ms", INT, "group.streams.assignment.interval.ms",
       "The interval between assignment updates for a streams group.", at_least=0),
    _d("streams.assignor.offload.enable", BOOLEAN, "group.streams.assignor.offload.enable",
       "Whether to offload streams group assignment to a group coordinator background thread.", internal=True),
    _d("streams.task.offset.interval.ms", INT, "group.streams.task.offset.interval.ms",
       "The interval in which the warmup task changelog offsets on a client are updated on the broker.",
       at_least=1, internal=True),
    _d("streams.num.warmup.replicas", INT, "group.streams.num.warmup.replicas",
       "The maximum number of warmup task replicas.", at_least=0, internal=True),
    _d("streams.rack.aware.assignment.tags", LIST, "group.streams.rack.aware.assignment.tags",
       "List of client tag keys used to distribute standby replicas across Kafka Streams instances. When "
       "configured, and the used broker-side assignor supports it, it will make a best-effort to distribute "
       "standby tasks over each client tag dimension."),
    _d("streams.acceptable.recovery.lag", LONG, "group.streams.acceptable.recovery.lag",
       "The maximum acceptable lag (number of offsets to catch up) for a client to be considered caught-up enough "
       "to receive an active task assignment.", at_least=0, internal=True),
    _d("streams.assignor.name", STRING, "group.streams.assignors",
       "The task assignor to use for this streams group, selected by short name from the assignors registered via "
       "the broker configuration group.streams.assignors. When unset, the group defaults to the first assignor "
       "configured in the broker's group.streams.assignors setting. Changing the assignor does not trigger a "
       "rebalance for the group; the new assignor takes effect on the next rebalance."),
    _d("errors.deadletterqueue.topic.name", STRING, None,
       "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the "
       "default), the group does not have a DLQ topic.", fixed=""),
    _d("errors.deadletterqueue.copy.record.enable", BOOLEAN, None,
       "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or "
       "just write a record containing the context information headers.", fixed="false"),
)}

# The order a Kafka 4.4 broker lists the non-internal ones in (its HashMap's), so DescribeConfigs answers alike.
_DESCRIBE_ORDER = ("consumer.session.timeout.ms", "streams.assignor.name", "consumer.assignment.interval.ms",
                   "errors.deadletterqueue.copy.record.enable", "share.auto.offset.reset",
                   "streams.rack.aware.assignment.tags", "share.renew.acknowledge.enable",
                   "streams.initial.rebalance.delay.ms", "share.session.timeout.ms", "streams.assignment.interval.ms",
                   "share.heartbeat.interval.ms", "streams.heartbeat.interval.ms", "share.delivery.count.limit",
                   "errors.deadletterqueue.topic.name", "consumer.heartbeat.interval.ms",
                   "share.record.lock.duration.ms", "share.assignment.interval.ms", "share.isolation.level",
                   "streams.session.timeout.ms", "share.partition.max.record.locks", "streams.num.standby.replicas")

# (group config, broker property of its lower bound or None, of its upper bound), in GroupConfig.validate's order.
_BOUNDS = (
    ("consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms",
     "group.consumer.max.heartbeat.interval.ms"),
    ("consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"),
    ("consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms",
     "group.consumer.max.assignment.interval.ms"),
    ("share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ("share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms",
     "group.share.max.record.lock.duration.ms"),
    ("share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    ("share.partition.max.record.locks", "group.share.min.partition.max.record.locks",
     "group.share.max.partition.max.record.locks"),
    ("share.assignment.interval.ms", "group.share.min.assignment.interval.ms",
     "group.share.max.assignment.interval.ms"),
    ("streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms",
     "group.streams.max.heartbeat.interval.ms"),
    ("streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"),
    ("streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms",
     "group.streams.max.assignment.interval.ms"),
    ("streams.num.standby.replicas", None, "group.streams.max.standby.replicas"),
)
_DURATION = re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", re.IGNORECASE)
_RANGES = {INT: (-2**31, 2**31 - 1), LONG: (-2**63, 2**63 - 1)}

BrokerLookup = Callable[[str], Any]  # a parsed broker property by Kafka name (Config.__getitem__)


def describe_order() -> tuple[str, ...]:
    return _DESCRIBE_ORDER


def _text(value: Any) -> str:
    """A parsed broker property as Kafka writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return "" if value is None else str(value)


def _default(d: GroupConfigDef, broker: BrokerLookup) -> str:
    if d.broker_default is None:
        return d.fixed_default or ""
    value = _text(broker(d.broker_default))
    # streams.assignor.name: unset means the broker's first registered assignor
    return value.split(",")[0] if d.name == "streams.assignor.name" else value


def defaults(broker: BrokerLookup) -> dict[str, str]:
    """Every group config's default, from the broker's properties."""
    return {d.name: _default(d, broker) for d in GROUP_CONFIGS.values()}


def _typed(name: str, raw: str) -> int | str | bool | list[str]:
    d = GROUP_CONFIGS[name]
    if d.config_type == STRING:
        return raw.strip()
    if d.config_type == LIST:
        return [v.strip() for v in raw.split(",") if v.strip()]
    if d.config_type == BOOLEAN:
        if raw.strip().lower() not in ("true", "false"):
            raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Expected value to be either true "
                                   "or false")
        return raw.strip().lower() == "true"
    type_name = "INT" if d.config_type == INT else "LONG"
    try:
        value = int(raw.strip())
    except ValueError:
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type {type_name}") \
            from None
    lo, hi = _RANGES[d.config_type]
    if not lo <= value <= hi:
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Not a number of type {type_name}")
    if d.at_least is not None and value < d.at_least:
        raise GroupConfigError(f"Invalid value {raw} for configuration {name}: Value must be at least {d.at_least}")
    return value


def _check_choice(name: str, value: str, broker: BrokerLookup) -> None:
    if name == "share.isolation.level" and value not in ("read_committed", "read_uncommitted"):
        raise GroupConfigError(f"Invalid value {value} for configuration {name}: String must be one of: "
                               "read_committed, read_uncommitted")
    if name == "share.auto.offset.reset" and value.lower() not in ("earliest", "latest") and not (
            value.lower().startswith("by_duration:") and _DURATION.fullmatch(value.split(":", 1)[1])
            and value.split(":", 1)[1] not in ("P", "PT")):
        raise GroupConfigError(
            f"Invalid value {value} for configuration {name}: Invalid value `{value}` for configuration {name}. The "
            "value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.")
    if name == "streams.assignor.name":
        registered = [a for a in _text(broker("group.streams.assignors")).split(",") if a]
        if value not in registered:
            raise GroupConfigError(f"{name} '{value}' is not a registered task assignor. Registered assignors are: "
                                   f"[{', '.join(registered)}].")


def validate(configs: Mapping[str, str], broker: BrokerLookup) -> None:
    """A group's whole new set of overrides, checked as Kafka 4.4's GroupConfig.validate does."""
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise GroupConfigError(f"Unknown group config name: {name}")
    values: dict[str, Any] = {n: _typed(n, v) for n, v in defaults(broker).items()}
    for name, raw in configs.items():
        values[name] = _typed(name, raw)
        if GROUP_CONFIGS[name].config_type == STRING and name in configs:
            _check_choice(name, values[name], broker)
    for name, low, high in _BOUNDS:
        lo = None if low is None else broker(low)
        hi = broker(high)
        if lo is not None and not lo <= values[name] <= hi:
            raise GroupConfigError(f"{name} must be in the range {lo} to {hi} inclusive.")
        if lo is None and values[name] > hi:
            raise GroupConfigError(f"{name} must be less than or equal to {hi}")
    for kind in ("consumer", "share", "streams"):
        if values[f"{kind}.session.timeout.ms"] <= values[f"{kind}.heartbeat.interval.ms"]:
            raise GroupConfigError(f"{kind}.session.timeout.ms must be greater than {kind}.heartbeat.interval.ms")


class GroupConfigs:
    """The overrides of every group (``stored``, by group id) over the broker's defaults, as the coordinator
    reads them."""

    def __init__(self, stored: Callable[[], Mapping[str, Mapping[str, str]]], broker: BrokerLookup) -> None:
        self._stored = stored
        self._broker = broker

    def get(self, group_id: str, name: str) -> int | str | list[str]:
        raw = self._stored().get(group_id, {}).get(name)
        if raw is None:
            raw = _default(GROUP_CONFIGS[name], self._broker)
        return _typed(name, raw)

    def get_int(self, group_id: str, name: str) -> int:
        """An INT or LONG group config (a session timeout, an interval)."""
        value = self.get(group_id, name)
        assert isinstance(value, int), f"{name} is not a number"
        return value
