"""Java's ``String.hashCode`` and the iteration order of Java's hash tables, which show through in Kafka's
answers (config synonyms, feature lists, SASL mechanism lists) and data (group partitions, znodes), and Java's
``PriorityQueue``, whose order among equal elements shows through in Kafka's Streams task assignor.

A ``java.util.HashMap``/``HashSet``/``ConcurrentHashMap`` of strings iterates bucket by bucket, a bucket
being ``(h ^ (h >>> 16)) & (table size - 1)`` and holding its keys in insertion order; only the table size
differs with how the table was built, hence the three ``*_table_size`` functions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

__all__ = ["string_hash", "iteration_order", "grown_table_size", "presized_table_size",
           "concurrent_table_size", "hash_map_order", "timeline_order", "timeline_table_size", "PriorityQueue"]

T = TypeVar("T")

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


def hash_map_order(keys: Iterable[str], initial_capacity: int = _DEFAULT_CAPACITY,
                   compute_if_absent: bool = False) -> list[str]:
    """``keys`` (duplicates dropped) in the order ``new HashMap<>(initial_capacity)`` iterates them after a
    ``put`` of each, or a ``computeIfAbsent``: that one puts a new key at the head of its bucket, not its tail,
    and grows the table before an insertion (once the size exceeds 0.75 of it), not after."""
    size = 1
    while size < initial_capacity:
        size *= 2
    table: list[list[tuple[int, str]]] = [[] for _ in range(size)]
    count = 0

    def grow() -> list[list[tuple[int, str]]]:
        bit = len(table)
        grown: list[list[tuple[int, str]]] = [[] for _ in range(2 * bit)]
        for j, bucket in enumerate(table):  # each bucket splits in order
            for entry in bucket:
                grown[j + bit if entry[0] & bit else j].append(entry)
        return grown

    for key in dict.fromkeys(keys):
        if compute_if_absent and count > len(table) * 3 // 4:
            table = grow()
        h = spread(string_hash(key))
        bucket = table[h & (len(table) - 1)]
        if compute_if_absent:
            bucket.insert(0, (h, key))
        else:
            bucket.append((h, key))
        count += 1
        if not compute_if_absent and count > len(table) * 3 // 4:
            table = grow()
    return [key for bucket in table for _, key in bucket]


_FIBONACCI = -7046029254386353131 & 0xFFFFFFFFFFFFFFFF  # Kafka's BaseHashTable multiplier, as unsigned


def timeline_table_size(size: int, table: int = 2) -> int:
    """A ``TimelineHashMap``'s slots after growing from ``table`` to hold ``size`` entries: it doubles before an
    insertion that would fill it past 0.75, and never shrinks."""
    while size * 0.75 > table:
        table *= 2
    return table


def timeline_order(keys: Iterable[str], table_size: int) -> list[str]:
    """``keys``, inserted in this order, as Kafka's ``TimelineHashMap`` (``org.apache.kafka.timeline``) of
    ``table_size`` slots iterates them: slot by slot, a slot being the top bits of the key's hash times a
    Fibonacci constant, each slot newest first."""
    bits = table_size.bit_length() - 1

    def slot(key: str) -> int:
        return ((string_hash(key) * _FIBONACCI) & 0xFFFFFFFFFFFFFFFF) >> (64 - bits) if bits else 0
    return [k for _, k in sorted(enumerate(dict.fromkeys(keys)), key=lambda e: (slot(e[1]), -e[0]))]


class PriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator: the same binary heap, so equal elements leave in Java's
    order. ``compare(a, b)`` is negative, zero or positive as Java's ``Comparator.compare``."""

    def __init__(self, compare: Callable[[T, T], int]) -> None:
        self._compare = compare
        self._queue: list[T] = []

    def __len__(self) -> int:
        return len(self._queue)

    def offer(self, x: T) -> None:
        """``offer``/``add``: sift ``x`` up from the end."""
        q, k = self._queue, len(self._queue)
        q.append(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            if self._compare(x, e) >= 0:
                break
            q[k] = e
            k = parent
        q[k] = x

    def poll(self) -> T | None:
        """``poll``: the head, the last element sifted down from the root in its place."""
        q = self._queue
        if not q:
            return None
        head, x = q[0], q.pop()
        n = len(q)
        if n:
            k, half = 0, n >> 1
            while k < half:
                child = 2 * k + 1
                c = q[child]
                right = child + 1
                if right < n and self._compare(c, q[right]) > 0:
                    child = right
                    c = q[child]
                if self._compare(x, c) <= 0:
                    break
                q[k] = c
                k = child
            q[k] = x
        return head
