"""Known, accepted differences between pykbroker and Apache Kafka 4.4, each with its reason.

A difference found by the differential tests fails unless its ``(scenario, observation key)`` is here; one
that only a cluster shows (a scenario's cluster mode: 3 pykbroker brokers judged by a 3-node Kafka 4.4 KRaft
cluster) is listed as ``("cluster:<scenario>", key)``: the ZooKeeper-only facts a client can see.
Keep the list short and the reasons honest.
"""

from __future__ import annotations

ALLOWED: dict[tuple[str, str], str] = {
    # Feature levels (replication.metadata.features): Kafka 4.4 finalizes share.version 2 (share-group dead-letter
    # queues, KIP-1191), which is not built, so pykbroker supports and finalizes share.version 1.
    **{("api_versions", f"{kind}.share.version"): "Not built: Kafka 4.4's share.version 2 (KIP-1191 DLQ) is "
       "neither supported nor finalized." for kind in ("supported", "finalized")},
    **{("api_versions_bytes", f"v{version} {kind} features order"): "The order of ApiVersions' features "
       "(replication/metadata/features.py, issue 31, lists them by name; Kafka in its map's order); the features "
       "themselves are compared." for version in (3, 4, 5) for kind in ("supported", "finalized")},
    **{("broker_config_definitions", name): "Ours alone: the embedded store's cluster id (Kafka keeps it in "
       "meta.properties) and ZooKeeper mode's connection settings (Kafka 3.9's names; 4.x has no ZooKeeper mode)."
       for name in ("cluster.id", "zookeeper.connect", "zookeeper.connection.timeout.ms",
                    "zookeeper.session.timeout.ms")},
    ("cluster:registrations", "unregister controller 1"): "Whether node 1 is the active controller (which "
    "cannot unregister itself) changes from run to run on both clusters; one node, where it always is, judges it.",
    ("broker_config_definitions", "group.share.enable"): "Kafka 4.1-4.3's internal switch for share groups, gone in "
    "4.4; still accepted so that their configs start.",
}


def allowed(mode: str, scenario: str, key: str) -> bool:
    """Whether a difference of ``scenario``'s observation ``key`` in ``mode`` ("single" or "cluster") is accepted."""
    return (scenario, key) in ALLOWED or (mode == "cluster" and (f"cluster:{scenario}", key) in ALLOWED)
