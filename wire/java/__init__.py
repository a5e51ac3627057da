"""Java's hash codes and the iteration order of Java's hash tables, which show through in Kafka's answers
(config synonyms, feature lists, SASL mechanism lists, client-metrics subscriptions) and data (group partitions,
znodes). Every order here is exact: each model replays the history of its table (its resizes, the trees of crowded
buckets, a ``ConcurrentHashMap``'s reversals), checked against Java 17's own tables (tests/wire/java_orders).

- ``string_hash``, ``uuid_hash``, ``int32``, ``spread``: Java's ``String.hashCode``, Kafka's ``Uuid.hashCode``;
- ``JavaHashSet`` / ``hash_set_order``, ``hash_set_capacity``: a ``HashMap``'s (``HashSet``'s) order after puts,
  for any size and initial capacity (``hash_set_capacity``: that of ``new HashSet<>(collection)``);
- ``JavaConcurrentHashMap`` / ``concurrent_hash_map_order``: a ``ConcurrentHashMap``'s (a ``Properties``'s) order,
  for any history of puts and removes;
- ``hash_map_order`` (``computeIfAbsent`` puts), ``timeline_order``/``timeline_table_size`` (Kafka's
  ``TimelineHashMap``) and ``PriorityQueue``: the orders Kafka's Streams task assignor shows. (``hash_map_order``
  keeps every bucket a list: exact while no bucket holds 9 keys, which the assignor's few processes and members
  never reach; ``hash_set_order`` is the exact order of puts.)
"""

from __future__ import annotations

from wire.java._assignor_orders import PriorityQueue, hash_map_order, timeline_order, timeline_table_size
from wire.java._concurrent_hash_map import JavaConcurrentHashMap, concurrent_hash_map_order
from wire.java._hash_map import JavaHashSet, hash_set_capacity, hash_set_order
from wire.java._hashes import int32, spread, string_hash, uuid_hash

__all__ = ["JavaConcurrentHashMap", "JavaHashSet", "PriorityQueue", "concurrent_hash_map_order", "hash_map_order",
           "hash_set_capacity", "hash_set_order", "int32", "spread", "string_hash", "timeline_order",
           "timeline_table_size", "uuid_hash"]
