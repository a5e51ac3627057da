"""Java's ``String.hashCode`` and the iteration order of Java's hash tables, which show through in Kafka's
answers (config synonyms, feature lists, SASL mechanism lists) and data (group partitions, znodes).

A ``java.util.HashMap``/``HashSet``/``ConcurrentHashMap`` of strings iterates bucket by bucket, a bucket
being ``(h ^ (h >>> 16)) & (table size - 1)`` and holding its keys in insertion order; only the table size
differs with how the table was built, hence the three ``*_table_size`` functions.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["string_hash", "iteration_order", "grown_table_size", "presized_table_size",
           "concurrent_table_size"]

_DEFAULT_CAPACITY = 16


def string_hash(s: str) -> int:
    """``String.hashCode()``: the 31-based polynomial over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def spread(h: int) -> int:
    """``h ^ (h >>> 16)`` of a (signed or unsigned) 32-bit hash, as an unsigned 32-bit int."""
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def iteration_order(names: Iterable[str], table_size: int) -> list[str]:
    """``names`` (duplicates dropped) in the order a Java hash table of ``table_size`` buckets iterates them."""
    unique = list(dict.fromkeys(names))
    return sorted(unique, key=lambda name: spread(string_hash(name)) & (table_size - 1))  # stable in a bucket


def grown_table_size(n: int) -> int:
    """A ``HashMap``/``HashSet`` filled by ``n`` puts: it doubles once its size exceeds 0.75 of the table."""
    size = _DEFAULT_CAPACITY
    while n > size * 3 // 4:
        size *= 2
    return size


def presized_table_size(n: int) -> int:
    """``new HashSet<>(collection)`` of ``n`` elements: the power of two at least ``max(n / 0.75 + 1, 16)``."""
    size = _DEFAULT_CAPACITY
    while size < max(int(n / 0.75) + 1, _DEFAULT_CAPACITY):
        size *= 2
    return size


def concurrent_table_size(n: int) -> int:
    """A ``ConcurrentHashMap`` (as inside ``java.util.Properties``) filled by ``n`` puts: it doubles once its
    size reaches 0.75 of the table."""
    size = _DEFAULT_CAPACITY
    while n >= size * 3 // 4:
        size *= 2
    return size
