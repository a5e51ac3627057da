"""Known, accepted differences between pykbroker and Apache Kafka 4.1, each with its reason.

A difference found by the differential tests fails unless its ``(scenario, observation key)`` is here.
Keep the list short and the reasons honest.
"""

from __future__ import annotations

ALLOWED: dict[tuple[str, str], str] = {
    ("api_versions", "supported.eligible.leader.replicas.version"):
        "No eligible leader replicas (KIP-966 ELR) on a single node yet.",
    ("api_versions", "finalized.eligible.leader.replicas.version"):
        "No eligible leader replicas (KIP-966 ELR) on a single node yet, so the feature is not finalized.",
    ("api_versions", "supported.share.version"): "Share groups (KIP-932) are not implemented.",
    ("topic_configs", "min.insync.replicas"):
        "Kafka 4.1 enables ELR (KIP-966) on new clusters, and its controller then writes a cluster-level "
        "min.insync.replicas (source DYNAMIC_DEFAULT_BROKER_CONFIG); pykbroker has no ELR and no dynamic "
        "broker configs, so the value (1) comes from the static default.",
    ("topic_configs", "min.insync.replicas.synonyms"):
        "The extra DYNAMIC_DEFAULT_BROKER_CONFIG synonym is the cluster-level default written when ELR "
        "(KIP-966) is enabled; see min.insync.replicas.",
    ("admin_misc", "broker configs"):
        "Kafka reports its dynamically updatable broker configs (compression.type, log.segment.bytes, ...) as "
        "read_only=false and the ELR-written cluster default of min.insync.replicas; pykbroker has no dynamic "
        "broker configs yet, so all are read-only static or default values (names, values and types match).",
}
