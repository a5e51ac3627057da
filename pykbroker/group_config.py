"""Group configs (GROUP config resources, KIP-848/KIP-932): Kafka 4.2's GroupConfig names and checks.

Set with IncrementalAlterConfigs on resource type GROUP (``kafka-configs --entity-type groups``) and kept in
the metadata store; the share-group settings read them (``share.auto.offset.reset``, ``share.isolation.level``,
``share.record.lock.duration.ms``). Validation follows Kafka's GroupConfig: unknown names and bad values are
INVALID_CONFIG with Kafka's message; the timeouts must lie within the broker's min/max bounds.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["GROUP_CONFIG_NAMES", "GroupConfigError", "group_config_values", "validate_group_configs"]

GROUP = 32  # ConfigResource.Type.GROUP

_INT_AT_LEAST = {
    "consumer.session.timeout.ms": 1, "consumer.heartbeat.interval.ms": 1,
    "share.session.timeout.ms": 1, "share.heartbeat.interval.ms": 1, "share.record.lock.duration.ms": 1000,
    "streams.session.timeout.ms": 1, "streams.heartbeat.interval.ms": 1, "streams.num.standby.replicas": 0,
    "streams.initial.rebalance.delay.ms": 0,
}
GROUP_CONFIG_NAMES = frozenset(_INT_AT_LEAST) | {"share.auto.offset.reset", "share.isolation.level"}
# ISO-8601 durations as Java's Duration.parse reads them (PnDTnHnMn.nS), for by_duration:<duration>.
_DURATION = re.compile(r"-?P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?", re.IGNORECASE)


class GroupConfigError(ValueError):
    pass


def validate_group_configs(configs: dict[str, str], broker: Callable[[str], Any]) -> None:
    """Raise GroupConfigError (Kafka's message) unless ``configs`` are valid group configs."""
    for name in configs:
        if name not in GROUP_CONFIG_NAMES:
            raise GroupConfigError(f"Unknown group config name: {name}")
    for name, low in _INT_AT_LEAST.items():
        if name in configs:
            try:
                value = int(configs[name])
            except ValueError:
                raise GroupConfigError(f"Invalid value {configs[name]} for configuration {name}: "
                                       "Not a number of type INT") from None
            if value < low:
                raise GroupConfigError(f"Invalid value {value} for configuration {name}: Value must be at least {low}")
    if "share.record.lock.duration.ms" in configs:
        value = int(configs["share.record.lock.duration.ms"])
        if value < broker("group.share.min.record.lock.duration.ms"):
            raise GroupConfigError("share.record.lock.duration.ms must be greater than or equal to "
                                   "group.share.min.record.lock.duration.ms")
        if value > broker("group.share.max.record.lock.duration.ms"):
            raise GroupConfigError("share.record.lock.duration.ms must be less than or equal to "
                                   "group.share.max.record.lock.duration.ms")
    reset = configs.get("share.auto.offset.reset")
    if reset is not None:
        lowered = reset.lower()
        if lowered not in ("latest", "earliest") and not (
                lowered.startswith("by_duration:") and _DURATION.fullmatch(reset[len("by_duration:"):])):
            raise GroupConfigError(f"Invalid value {reset} for configuration share.auto.offset.reset: "
                                   "Invalid value `" + reset + "` for configuration share.auto.offset.reset. "
                                   "The value must be either 'earliest', 'latest' or of the format "
                                   "'by_duration:<PnDTnHnMn.nS.>'.")
    level = configs.get("share.isolation.level")
    if level is not None and level not in ("read_committed", "read_uncommitted"):
        raise GroupConfigError(f"Invalid value {level} for configuration share.isolation.level: "
                               "String must be one of: read_committed, read_uncommitted")


# Each group config's default: the broker property it defaults to, or a fixed value (Kafka's GroupConfig).
_DEFAULTS: dict[str, str] = {
    "consumer.session.timeout.ms": "group.consumer.session.timeout.ms",
    "consumer.heartbeat.interval.ms": "group.consumer.heartbeat.interval.ms",
    "share.session.timeout.ms": "group.share.session.timeout.ms",
    "share.heartbeat.interval.ms": "group.share.heartbeat.interval.ms",
    "share.record.lock.duration.ms": "group.share.record.lock.duration.ms",
}
_FIXED_DEFAULTS = {"share.auto.offset.reset": "latest", "share.isolation.level": "read_uncommitted",
                   "streams.session.timeout.ms": "45000", "streams.heartbeat.interval.ms": "5000",
                   "streams.num.standby.replicas": "0", "streams.initial.rebalance.delay.ms": "3000"}


def group_config_values(configs: dict[str, str], broker: Callable[[str], Any]) -> list[tuple[str, str, bool, bool]]:
    """(name, value, set for the group, is an INT) of every group config, sorted by name (DescribeConfigs)."""
    out = []
    for name in sorted(GROUP_CONFIG_NAMES):
        if name in configs:
            value, explicit = configs[name], True
        else:
            value = str(broker(_DEFAULTS[name])) if name in _DEFAULTS else _FIXED_DEFAULTS[name]
            explicit = False
        out.append((name, value, explicit, name in _INT_AT_LEAST))
    return out
