"""Which __consumer_offsets partition holds a group: Kafka's ``Utils.abs(groupId.hashCode()) % n``.

``java_string_hash`` is Java's ``String.hashCode()``: 31-based polynomial over UTF-16 code units with
32-bit two's-complement overflow. Kafka's ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0.
"""

from __future__ import annotations

__all__ = ["GROUP_METADATA_TOPIC_NAME", "java_string_hash", "partition_for"]

GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` of ``s`` as a signed 32-bit int."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The __consumer_offsets partition of ``group_id``."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
