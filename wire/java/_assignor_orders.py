"""Orders of Java's and Kafka's own collections that show through in Kafka's Streams task assignor: a
``HashMap`` filled by ``computeIfAbsent``, Kafka's ``TimelineHashMap`` and ``java.util.PriorityQueue``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from wire.java._hash_map import hash_set_order
from wire.java._hashes import spread, string_hash

T = TypeVar("T")

_DEFAULT_CAPACITY = 16


def hash_map_order(keys: Iterable[str], initial_capacity: int = _DEFAULT_CAPACITY,
                   compute_if_absent: bool = False) -> list[str]:
    """``keys`` (duplicates dropped) in the order ``new HashMap<>(initial_capacity)`` iterates them after a
    ``put`` of each (exactly: ``hash_set_order``), or a ``computeIfAbsent``: that one puts a new key at the head of
    its bucket, not its tail, and grows the table before an insertion (once the size exceeds 0.75 of it), not
    after. The ``computeIfAbsent`` order keeps every bucket a list, exact while no bucket reaches 8 keys (Java then
    makes it a tree, or grows a table under 64 buckets): Kafka's assignor computes one entry per process of a
    Streams group, whose ids (random UUIDs) would need 8 of one bucket."""
    if not compute_if_absent:
        return hash_set_order(keys, initial_capacity)
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
        if count > len(table) * 3 // 4:
            table = grow()
        h = spread(string_hash(key))
        table[h & (len(table) - 1)].insert(0, (h, key))
        count += 1
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
