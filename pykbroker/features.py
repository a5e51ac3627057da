"""Feature flags (KIP-584) as ApiVersions v3+ reports them: what this broker supports, what is finalized.

Only what is implemented is claimed. Consumer groups speak KIP-848, so group.version 1 is finalized;
transactions speak KIP-890 part 2, so transaction.version 2 is finalized as on a new Kafka 4.1 cluster
(clients then bump the epoch with every transaction); there are no eligible leader replicas or share
groups. Like Kafka 4.1, v3 answers list only metadata.version as supported (older clients choke on the
rest); v4 lists every feature.
"""

from __future__ import annotations

from wire.messages.api_versions_response import FinalizedFeatureKey, SupportedFeatureKey

METADATA_VERSION = ("metadata.version", 7, 27)  # 3.3-IV3 .. 4.1-IV1, as Kafka 4.1
SUPPORTED: tuple[tuple[str, int, int], ...] = (
    ("group.version", 0, 1),
    ("kraft.version", 0, 1),
    METADATA_VERSION,
    ("transaction.version", 0, 2),
)
FINALIZED: tuple[tuple[str, int], ...] = (("group.version", 1), ("metadata.version", 27), ("transaction.version", 2))
# Kafka reports the metadata log offset at which features were last changed; ours never change.
FINALIZED_EPOCH = 1


def supported_features(api_version: int) -> list[SupportedFeatureKey]:
    chosen = (METADATA_VERSION,) if api_version < 4 else SUPPORTED
    return [SupportedFeatureKey(name=n, min_version=lo, max_version=hi) for n, lo, hi in chosen]


def finalized_features() -> list[FinalizedFeatureKey]:
    return [FinalizedFeatureKey(name=n, min_version_level=level, max_version_level=level) for n, level in FINALIZED]
