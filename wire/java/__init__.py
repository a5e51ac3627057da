"""Java's hash codes and the iteration order of Java's hash tables, which show through in Kafka's answers
(config synonyms, feature lists, SASL mechanism lists, client-metrics subscriptions) and data (group partitions,
znodes).

- ``string_hash``, ``uuid_hash``, ``int32``, ``spread``: Java's ``String.hashCode``, Kafka's ``Uuid.hashCode``;
- ``iteration_order`` and the ``*_table_size`` functions: the bucket order of a table of the size its constructor
  gives it, ``(h ^ (h >>> 16)) & (table size - 1)``, insertion order within a bucket. It is exact while no bucket
  holds 9 keys and, for a ``ConcurrentHashMap``, no resize split a bucket of several keys;
- ``JavaHashSet`` / ``hash_set_order``: a ``HashMap``'s (``HashSet``'s) order exactly, for any size (its trees
  of crowded buckets, its resizes);
- ``JavaConcurrentHashMap``: a ``ConcurrentHashMap``'s order exactly, for any history of puts and removes;
- ``hash_map_order`` (``computeIfAbsent`` puts), ``timeline_order``/``timeline_table_size`` (Kafka's
  ``TimelineHashMap``) and ``PriorityQueue``: the orders Kafka's Streams task assignor shows.
"""

from __future__ import annotations

from collections.abc import Iterable

from wire.java._assignor_orders import PriorityQueue, hash_map_order, timeline_order, timeline_table_size
from wire.java._concurrent_hash_map import JavaConcurrentHashMap
from wire.java._hash_map import JavaHashSet, hash_set_capacity, hash_set_order
from wire.java._hashes import int32, spread, string_hash, uuid_hash

__all__ = ["JavaConcurrentHashMap", "JavaHashSet", "PriorityQueue", "concurrent_table_size", "grown_table_size",
           "hash_map_order", "hash_set_capacity", "hash_set_order", "int32", "iteration_order",
           "presized_table_size", "spread", "string_hash", "timeline_order", "timeline_table_size", "uuid_hash"]

_DEFAULT_CAPACITY = 16


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
