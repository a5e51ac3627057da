"""Java's hash codes as Kafka's data structures see them: ``String.hashCode``, Kafka's ``Uuid.hashCode`` and
the spreading and table sizing its hash tables share."""

from __future__ import annotations

import uuid

MAXIMUM_CAPACITY = 1 << 30


def int32(value: int) -> int:
    """``value`` as a Java int (two's complement, 32 bits)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def string_hash(s: str) -> int:
    """``String.hashCode()``: the 31-based polynomial over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return int32(h)


def uuid_hash(u: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode``: the two halves XORed, then the two 32-bit halves of that XORed."""
    xor = (u.int >> 64) ^ (u.int & 0xFFFFFFFFFFFFFFFF)
    return int32((xor >> 32) ^ xor)


def spread(h: int) -> int:
    """``h ^ (h >>> 16)`` of a (signed or unsigned) 32-bit hash, as an unsigned 32-bit int."""
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def table_size_for(capacity: int) -> int:
    """``tableSizeFor``: the power of two at or above ``capacity`` (at most 2^30)."""
    n = 1
    while n < capacity:
        n <<= 1
    return min(n, MAXIMUM_CAPACITY)
