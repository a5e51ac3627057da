"""Known, accepted differences between pykbroker and Apache Kafka 4.1, each with its reason.

A difference found by the differential tests fails unless its ``(scenario, observation key)`` is here.
Keep the list short and the reasons honest.
"""

from __future__ import annotations

ALLOWED: dict[tuple[str, str], str] = {
    ("api_versions", "supported.share.version"): "Share groups (KIP-932) are not implemented.",
    ("disk_full", "metadata offline partition"): "Kafka's controller moves leadership off an offline log dir "
    "(leader -1, ISR empty, epoch + 1, replica offline); pykbroker keeps the partition's state and answers "
    "KAFKA_STORAGE_ERROR to its produces and fetches.",
}
