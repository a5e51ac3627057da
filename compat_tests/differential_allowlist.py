"""Known, accepted differences between pykbroker and Apache Kafka 4.1, each with its reason.

A difference found by the differential tests fails unless its ``(scenario, observation key)`` is here; one
that only a cluster shows (a scenario's cluster mode: 3 pykbroker brokers judged by a 3-node Kafka 4.4 KRaft
cluster) is listed as ``("cluster:<scenario>", key)``: the ZooKeeper-only facts a client can see.
Keep the list short and the reasons honest.
"""

from __future__ import annotations

ALLOWED: dict[tuple[str, str], str] = {
    # Feature levels (replication.metadata.features): Kafka 4.4 finalizes share.version 2 (share-group dead-letter queues,
    # KIP-1191) and streams.version 1 (Streams groups, KIP-1071); neither is built, so neither is claimed.
    **{("api_versions", f"{kind}.{name}"): "Not built: Kafka 4.4's share.version 2 (KIP-1191 DLQ) and "
       "streams.version 1 (KIP-1071 Streams groups) are neither supported nor finalized."
       for kind in ("supported", "finalized") for name in ("share.version", "streams.version")},
    # Share groups are served at Kafka 4.2's versions, where KIP-932 is released (4.1's are its preview):
    # ShareFetch and ShareAcknowledge v2 (KIP-1206 acquire mode, KIP-1222 renew) and DescribeShareGroupOffsets
    # v1 (KIP-1226 lag) are what 4.2 brokers and the 4.2 Java client use.
    ("api_versions", "api.78"): "ShareFetch v1-2 as Kafka 4.2 (4.1: v1).",
    ("api_versions", "api.79"): "ShareAcknowledge v1-2 as Kafka 4.2 (4.1: v1).",
    ("api_versions", "api.90"): "DescribeShareGroupOffsets v0-1 as Kafka 4.2 (4.1: v0).",
    ("api_versions", "api.85"): "WriteShareGroupState v0-1 as Kafka 4.2 (4.1: v0; v1 adds DeliveryCompleteCount).",
    ("api_versions", "api.87"): "ReadShareGroupStateSummary v0-1 as Kafka 4.2 (4.1: v0).",
    **{("broker_config_definitions", name): "Ours alone: the embedded store's cluster id (Kafka keeps it in "
       "meta.properties) and ZooKeeper mode's connection settings (Kafka 3.9's names; 4.1 has no ZooKeeper mode)."
       for name in ("cluster.id", "zookeeper.connect", "zookeeper.connection.timeout.ms",
                    "zookeeper.session.timeout.ms")},
}


def allowed(mode: str, scenario: str, key: str) -> bool:
    """Whether a difference of ``scenario``'s observation ``key`` in ``mode`` ("single" or "cluster") is accepted."""
    return (scenario, key) in ALLOWED or (mode == "cluster" and (f"cluster:{scenario}", key) in ALLOWED)
