"""Feature flags (KIP-584): what this broker supports, what is finalized, and how UpdateFeatures changes it.

One table for both modes: a single node and a cluster finalize the same levels, the levels a new Apache
Kafka 4.4 cluster finalizes (``kafka-features describe`` on Kafka 4.4.0: metadata.version 4.4-IV2 (33),
group.version 1, transaction.version 2, eligible.leader.replicas.version 1, share.version 2,
streams.version 1), less what is not built. Only what is implemented is claimed:
- group.version 1: consumer groups speak KIP-848;
- transaction.version 2: transactions speak KIP-890 part 2 (clients bump the epoch with every transaction);
- eligible.leader.replicas.version 1 (KIP-966);
- share.version 2: share groups (KIP-932) are on (level 1, Kafka 4.2+) with their dead-letter queues (level 2,
  KIP-1191, Kafka 4.4's default; ``pykbroker/share_dead_letters.py``);
- streams.version 1: Streams groups (KIP-1071) are on, as on Kafka 4.2+ (with "streams" in
  group.coordinator.rebalance.protocols); ``kafka-features disable --feature streams.version`` turns them off.
Like Kafka, ApiVersions v3 answers list only metadata.version as supported (older clients choke on the
rest); v4 lists every feature.

The finalized levels are cluster metadata (the embedded store's file, or ``/feature`` in ZooKeeper) and
change only through UpdateFeatures (``kafka-features upgrade|downgrade|disable``), validated as Kafka 4.4's
controller does: the level must be in the supported range, a lower level needs a downgrade type, a higher
one must not have one, a feature's dependencies must be finalized, and metadata.version refuses a
downgrade that crosses a version whose metadata changed. A feature set to 0 is no longer finalized.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wire import ErrorCode, java
from wire.messages.api_versions_response import FinalizedFeatureKey, SupportedFeatureKey

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
GROUP_VERSION = "group.version"
TRANSACTION_VERSION = "transaction.version"
SHARE_VERSION = "share.version"
STREAMS_VERSION = "streams.version"

# metadata.version feature level -> (Kafka release name, whether that version changed the metadata format).
METADATA_VERSIONS: dict[int, tuple[str, bool]] = {
    7: ("3.3-IV3", True), 8: ("3.4-IV0", True), 9: ("3.5-IV0", False), 10: ("3.5-IV1", False),
    11: ("3.5-IV2", True), 12: ("3.6-IV0", False), 13: ("3.6-IV1", True), 14: ("3.6-IV2", True),
    15: ("3.7-IV0", True), 16: ("3.7-IV1", False), 17: ("3.7-IV2", True), 18: ("3.7-IV3", False),
    19: ("3.7-IV4", False), 20: ("3.8-IV0", False), 21: ("3.9-IV0", False), 22: ("4.0-IV0", False),
    23: ("4.0-IV1", True), 24: ("4.0-IV2", False), 25: ("4.0-IV3", False), 26: ("4.1-IV0", False),
    27: ("4.1-IV1", False), 28: ("4.2-IV0", False), 29: ("4.2-IV1", False), 30: ("4.3-IV0", True),
    31: ("4.4-IV0", False), 32: ("4.4-IV1", True), 33: ("4.4-IV2", True), 34: ("4.5-IV0", False),
}
MINIMUM_METADATA_VERSION = 7
LATEST_PRODUCTION_METADATA_VERSION = 33  # 4.4-IV2, what Kafka 4.4 supports and finalizes
LATEST_TESTING_METADATA_VERSION = 34

SUPPORTED: dict[str, tuple[int, int]] = {
    "eligible.leader.replicas.version": (0, 1),
    GROUP_VERSION: (0, 1),
    KRAFT_VERSION: (0, 1),
    METADATA_VERSION: (MINIMUM_METADATA_VERSION, LATEST_PRODUCTION_METADATA_VERSION),  # 3.3-IV3 .. 4.4-IV2
    SHARE_VERSION: (0, 2),
    STREAMS_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
}
# What a new cluster finalizes (Kafka 4.4's defaults for metadata.version 4.4-IV2, less what is not built).
BOOTSTRAP_FINALIZED: dict[str, int] = {"eligible.leader.replicas.version": 1, GROUP_VERSION: 1,
                                       METADATA_VERSION: LATEST_PRODUCTION_METADATA_VERSION, SHARE_VERSION: 2,
                                       STREAMS_VERSION: 1, TRANSACTION_VERSION: 2}
# Every feature Kafka 4.4 knows (its Feature enum), with the features each level >= 1 depends on.
KNOWN_FEATURES: dict[str, dict[int, dict[str, int]]] = {
    KRAFT_VERSION: {}, TRANSACTION_VERSION: {}, GROUP_VERSION: {},
    "eligible.leader.replicas.version": {1: {METADATA_VERSION: 23}},
    SHARE_VERSION: {}, STREAMS_VERSION: {}, "test.feature.version": {},
}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3


def upgraded_levels(current: Mapping[str, int]) -> dict[str, int] | None:
    """The levels a cluster finalized by an earlier pykbroker moves to at start-up, or None if it needs none.

    A cluster this version created has metadata.version 4.4-IV2 (33) and can never go below it (33 changed
    the metadata format, so no downgrade crosses it); one below it (or with none, as an earlier pykbroker's
    ZooKeeper cluster) was made by an earlier version and gets every level of ``BOOTSTRAP_FINALIZED`` that it
    lacks, as ``kafka-features upgrade --release-version 4.4`` would; higher levels it chose are kept."""
    if current.get(METADATA_VERSION, 0) >= LATEST_PRODUCTION_METADATA_VERSION:
        return None
    upgraded = dict(current)
    for name, level in BOOTSTRAP_FINALIZED.items():
        upgraded[name] = max(level, current.get(name, 0))
    return upgraded


def supported_features(api_version: int) -> list[SupportedFeatureKey]:
    names = [METADATA_VERSION] if api_version < 4 else sorted(SUPPORTED)
    return [SupportedFeatureKey(name=n, min_version=SUPPORTED[n][0], max_version=SUPPORTED[n][1]) for n in names]


def finalized_features(levels: Mapping[str, int]) -> list[FinalizedFeatureKey]:
    return [FinalizedFeatureKey(name=n, min_version_level=level, max_version_level=level)
            for n, level in sorted(levels.items()) if level > 0]


@dataclass(frozen=True)
class FeatureUpdate:
    """One entry of an UpdateFeatures request."""

    name: str
    level: int
    upgrade_type: int  # UPGRADE, SAFE_DOWNGRADE or UNSAFE_DOWNGRADE (anything else is unknown)


class FeatureUpdateError(Exception):
    """An update Kafka's controller would refuse; ``code`` is the protocol error, the text its message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def apply_updates(current: Mapping[str, int], updates: list[FeatureUpdate], controller_id: int = 1) -> dict[str, int]:
    """The finalized levels after ``updates`` (all or nothing); raises FeatureUpdateError for the first bad one.

    Updates are checked in the order Kafka's controller visits them (its HashMap of feature names), so a
    request with several bad updates reports the same one as Kafka. ``controller_id`` is the node the
    messages name as "Local controller N" (a single node's id, a cluster's active controller).
    """
    by_name = {u.name: u for u in updates}
    proposed = dict(current)
    proposed.update({u.name: u.level for u in by_name.values()})
    result = dict(current)
    for name in _java_hash_map_order(list(by_name)):
        update = by_name[name]
        _check_update(update, current.get(name, 0), proposed, controller_id)
        if update.level > 0:
            result[name] = update.level
        else:
            result.pop(name, None)
    return result


def _check_update(update: FeatureUpdate, current: int, proposed: dict[str, int], controller_id: int) -> None:
    name, level = update.name, update.level

    def invalid(message: str) -> FeatureUpdateError:
        return FeatureUpdateError(ErrorCode.INVALID_UPDATE_VERSION,
                                  f"Invalid update version {level} for feature {name}. {message}")

    if update.upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        raise invalid("The controller does not support the given upgrade type.")
    if level < 0:
        raise invalid("A feature version cannot be less than 0.")
    lo, hi = SUPPORTED.get(name, (0, 0))
    if not lo <= level <= hi:
        raise invalid(f"Local controller {controller_id} does not support this feature." if hi == 0
                      else f"Local controller {controller_id} only supports versions {lo}-{hi}")
    if level < current and update.upgrade_type == UPGRADE:
        raise invalid("Can't downgrade the version of this feature without setting the upgrade type to either "
                      "safe or unsafe downgrade.")
    if level > current and update.upgrade_type != UPGRADE:
        raise invalid("Can't downgrade to a newer version.")
    if name == METADATA_VERSION:
        _check_metadata_version(level, current, update.upgrade_type == UNSAFE_DOWNGRADE)
    elif name == KRAFT_VERSION:
        if level < current:  # Kafka upgrades its quorum to dynamic voters (kraft.version 1) but never back
            raise invalid("Can't downgrade the version of this feature.")
    else:
        if name not in KNOWN_FEATURES:
            raise invalid(f"Feature {name} not found.")
        mv = proposed.get(METADATA_VERSION)
        if level >= 1 and (mv is None or mv < MINIMUM_METADATA_VERSION):
            raise invalid(f"{name} could not be set to {level} because it depends on metadata.version="
                          f"{MINIMUM_METADATA_VERSION} ({METADATA_VERSIONS[MINIMUM_METADATA_VERSION][0]})")
        for dependency, needed in KNOWN_FEATURES[name].get(level, {}).items():
            have = proposed.get(dependency)
            if have is None or have < needed:
                raise invalid(f"{name} could not be set to {level} because it depends on {dependency} level {needed}")


def _check_metadata_version(level: int, current: int, unsafe: bool) -> None:
    if level not in METADATA_VERSIONS:
        raise FeatureUpdateError(ErrorCode.INVALID_UPDATE_VERSION, f"Invalid metadata.version {level}. Valid "
                                 f"versions are from {MINIMUM_METADATA_VERSION} to {LATEST_TESTING_METADATA_VERSION}.")
    if level < current and _metadata_changed_between(level, current):
        reason = ("Unsafe metadata downgrade is not supported in this version." if unsafe else
                  "Refusing to perform the requested downgrade because it might delete metadata information.")
        raise FeatureUpdateError(ErrorCode.INVALID_UPDATE_VERSION,
                                 f"Unsupported metadata.version downgrade from {current} to {level}. {reason}")


def _metadata_changed_between(low: int, high: int) -> bool:
    """True when a metadata.version in (low, high] changed the metadata format (a lossy downgrade)."""
    return any(METADATA_VERSIONS[v][1] for v in range(low + 1, high + 1))


def _java_hash_map_order(names: list[str]) -> list[str]:
    """``names`` in the iteration order of a java.util.HashMap they were put into (in list order)."""
    return java.hash_set_order(names)  # a HashMap's keys iterate as a HashSet's (one is inside the other)
