"""The Java hash codes Kafka's telemetry answers depend on.

Kafka keeps a client's subscribed metrics in a ``java.util.HashSet``: the list GetTelemetrySubscriptions returns
and the text its subscription id is a CRC of (``[a, b]<interval>``) come in that set's iteration order, which
is the order of the hash buckets (``String.hashCode`` spread as HashMap does) and, within a bucket, insertion.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

__all__ = ["hash_set_order", "int32", "string_hash", "uuid_hash"]

_LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = 16


def int32(value: int) -> int:
    """``value`` as a Java int (two's complement, 32 bits)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return int32(h)


def uuid_hash(u: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the two halves XORed, then the two 32-bit halves of that XORed."""
    xor = (u.int >> 64) ^ (u.int & 0xFFFFFFFFFFFFFFFF)
    return int32((xor >> 32) ^ xor)


def hash_set_order(items: Iterable[str], capacity: int = _DEFAULT_CAPACITY) -> list[str]:
    """The iteration order of a ``HashSet<String>`` of ``capacity`` buckets after adding ``items`` in order."""
    unique = list(dict.fromkeys(items))
    while len(unique) > capacity * _LOAD_FACTOR:
        capacity *= 2
    mask = capacity - 1

    def bucket(item: str) -> int:
        h = string_hash(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return [item for _, _, item in sorted((bucket(item), i, item) for i, item in enumerate(unique))]
