"""``java.util.concurrent.ConcurrentHashMap``'s iteration order, exactly, for any number of puts and removes (as
Java 17 does them, single-threaded: the JVM of the Kafka judging pykbroker).

Kafka's ClientMetricsManager keeps the client-metrics subscriptions in one: which of them a client matches first,
and so the order of its metrics, follow it. The order is a history, not a function of the keys; how it differs
from a ``HashMap``'s:
- the hash is ``(h ^ (h >>> 16)) & 0x7fffffff``; the table (16 buckets at the first put) doubles as soon as the
  size *reaches* 3/4 of it, and never shrinks;
- a resize moves a list bucket as Java's ``transfer`` does: its longest tail of entries bound for one half stays
  in order, the entries before it are pushed in front of their half one by one, so they come out reversed;
- a put that walks 8 or more entries of a list bucket (a 9th key, or a value replaced at position 8 or later)
  turns it into a tree bucket or, while the table of n buckets is smaller than 64, asks ``tryPresize(2 n)``,
  which doubles the table until 3/4 of it reaches 4 n (n = 16: to 128 buckets);
- a tree bucket iterates in its list order, the order it had as a list, each later key put in front; a removal
  turns it back into a list when the tree (before the removal) lacks its root's right child, its root's left
  child or that child's left child;
- a resize splits a tree bucket in order; a half of 6 entries or fewer is a list again.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from wire.java import _red_black as rb
from wire.java._hashes import MAXIMUM_CAPACITY, spread, string_hash, table_size_for

__all__ = ["JavaConcurrentHashMap", "concurrent_hash_map_order"]

_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64
_HASH_BITS = 0x7FFFFFFF


class _Bin:
    """One bucket: its entries in iteration (``next``) order and, for a tree bucket (TreeBin), its tree's root."""

    __slots__ = ("order", "root", "tree")

    def __init__(self, order: list[rb.TreeNode], tree: bool = False) -> None:
        self.order = order
        self.tree = tree
        self.root: rb.TreeNode | None = None
        if tree:  # new TreeBin(first): a tree of the entries inserted in list order, the list unchanged
            for x in order:
                self.root, _ = rb.insert(self.root, x)


def _fresh(nodes: list[rb.TreeNode]) -> list[rb.TreeNode]:
    """New nodes for ``nodes`` (a resize or untreeify copies them: old tree links must not leak into new bins)."""
    return [rb.TreeNode(n.key, n.hash) for n in nodes]


class JavaConcurrentHashMap:
    """The keys of a ``new ConcurrentHashMap<String, V>()``: ``put``, ``remove`` and iteration as Java's (see the
    module docstring). Values are the caller's to keep."""

    def __init__(self) -> None:
        self._table: list[_Bin | None] = []
        self._size_ctl = 0  # the size at which the table doubles (Java's sizeCtl at rest)
        self._size = 0

    def __iter__(self) -> Iterator[str]:
        return (n.key for b in self._table if b is not None for n in b.order)

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str) or not self._table:
            return False
        b = self._table[self._hash(key) & (len(self._table) - 1)]
        return b is not None and any(e.key == key for e in b.order)

    @staticmethod
    def _hash(key: str) -> int:
        return spread(string_hash(key)) & _HASH_BITS

    def put(self, key: str) -> bool:
        """``put(key, value)``: True if ``key`` is new (a present key keeps its place, but see treeifyBin)."""
        if not self._table:
            self._table = [None] * _DEFAULT_CAPACITY
            self._size_ctl = _DEFAULT_CAPACITY - (_DEFAULT_CAPACITY >> 2)
        h = self._hash(key)
        i = h & (len(self._table) - 1)
        b = self._table[i]
        if b is None:
            self._table[i] = _Bin([rb.TreeNode(key, h)])
            bin_count = 0
        elif b.tree:
            if any(e.hash == h and e.key == key for e in b.order):
                return False
            x = rb.TreeNode(key, h)
            b.root, _ = rb.insert(b.root, x)
            b.order.insert(0, x)  # putTreeVal: the new entry becomes ``first``
            bin_count = 2
        else:
            found = next((k for k, e in enumerate(b.order) if e.hash == h and e.key == key), None)
            if found is None:
                bin_count = len(b.order)  # the entries walked before appending
                b.order.append(rb.TreeNode(key, h))
            else:
                bin_count = found + 1
            if bin_count >= _TREEIFY_THRESHOLD:
                self._treeify_bin(i)
            if found is not None:
                return False
        self._size += 1
        while self._size >= self._size_ctl and len(self._table) < MAXIMUM_CAPACITY:  # addCount
            self._transfer()
        return True

    def remove(self, key: str) -> bool:
        """``remove(key)``: True if it was there. The table keeps its size."""
        if not self._table:
            return False
        i = self._hash(key) & (len(self._table) - 1)
        b = self._table[i]
        p = next((e for e in b.order if e.key == key), None) if b is not None else None
        if b is None or p is None:
            return False
        b.order.remove(p)
        self._size -= 1
        if not b.order:
            self._table[i] = None
        elif b.tree:
            r = b.root
            if r is None or r.right is None or r.left is None or r.left.left is None:  # too small: untreeify
                self._table[i] = _Bin(_fresh(b.order))
            else:
                b.root = rb.remove(r, p)
        return True

    def _treeify_bin(self, i: int) -> None:
        n = len(self._table)
        if n < _MIN_TREEIFY_CAPACITY:
            self._try_presize(n << 1)
            return
        b = self._table[i]
        if b is not None and not b.tree:
            self._table[i] = _Bin(_fresh(b.order), tree=True)

    def _try_presize(self, size: int) -> None:
        c = MAXIMUM_CAPACITY if size >= MAXIMUM_CAPACITY >> 1 else table_size_for(size + (size >> 1) + 1)
        while c > self._size_ctl and len(self._table) < MAXIMUM_CAPACITY:
            self._transfer()

    def _transfer(self) -> None:
        """Double the table, splitting each bucket as ``transfer`` does."""
        old = self._table
        n = len(old)
        table: list[_Bin | None] = [None] * (n << 1)
        self._table = table
        for i, b in enumerate(old):
            if b is None:
                continue
            if not b.tree:
                order = b.order
                last_run, run_bit = 0, order[0].hash & n
                for k in range(1, len(order)):
                    if order[k].hash & n != run_bit:
                        run_bit, last_run = order[k].hash & n, k
                tail = order[last_run:]
                lo = tail if run_bit == 0 else []
                hi = tail if run_bit else []
                for p in order[:last_run]:  # each pushed in front of its half
                    if p.hash & n:
                        hi = [p, *hi]
                    else:
                        lo = [p, *lo]
                table[i] = _Bin(lo) if lo else None
                table[i + n] = _Bin(hi) if hi else None
                continue
            lo = [e for e in b.order if not e.hash & n]
            hi = [e for e in b.order if e.hash & n]
            for index, part, other in ((i, lo, hi), (i + n, hi, lo)):
                if not part:
                    table[index] = None
                elif len(part) <= _UNTREEIFY_THRESHOLD:
                    table[index] = _Bin(_fresh(part))
                else:
                    table[index] = _Bin(_fresh(part), tree=True) if other else b
        self._size_ctl = (n << 1) - (n >> 1)


def concurrent_hash_map_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a ``new ConcurrentHashMap<>()`` (or a ``java.util.Properties``, whose map is a
    ``ConcurrentHashMap`` of the same 16 buckets) after a ``put`` of each of ``keys`` in order."""
    m = JavaConcurrentHashMap()
    for key in keys:
        m.put(key)
    return list(m)
