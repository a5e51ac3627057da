"""Which __consumer_offsets partition holds a group: Kafka's ``Utils.abs(groupId.hashCode()) % n``.

Kafka's ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0.
"""

from __future__ import annotations

from wire import java

__all__ = ["GROUP_METADATA_TOPIC_NAME", "partition_for"]

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"


def partition_for(group_id: str, num_partitions: int) -> int:
    """The __consumer_offsets partition of ``group_id``."""
    h = java.string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
