"""``java.util.HashMap``'s iteration order (and so ``HashSet``'s), exactly, for any size.

Kafka keeps, for instance, a client's subscribed metrics in a ``HashSet``: the list GetTelemetrySubscriptions returns
and the text its subscription id is a CRC of (``[a, b]<interval>``) come in that set's iteration order. A
``HashMap`` is a table of buckets (``String.hashCode`` spread as HashMap spreads it), each bucket a list in
insertion order until it holds more than 8 entries, when it becomes a red-black tree (its iteration order then is
the tree root first, each later entry placed right after its tree parent) or, while the table is smaller than
64, the table doubles instead; resizes split every bucket in order, and a tree of 6 entries or fewer becomes a
list again.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator

from wire.java._hashes import int32, spread, string_hash, table_size_for
from wire.java._red_black import TreeNode, insert

__all__ = ["JavaHashSet", "hash_set_capacity", "hash_set_order"]

_LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = 16
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64


def hash_set_capacity(size: int) -> int:
    """The table size of ``new HashSet<>(collection of size)`` on Java 17, the JVM of the Kafka judging this (Java
    17's HashSet(Collection) asks for max((int) (size / .75f) + 1, 16); Java 21's for HashMap.newHashMap(max(size,
    12)), which differs from 12 elements on)."""
    quotient = struct.unpack("f", struct.pack("f", size / _LOAD_FACTOR))[0]  # a float division in Java
    return table_size_for(max(int(quotient) + 1, _DEFAULT_CAPACITY))


class _Bin:
    """One bucket: its entries in iteration (``next``) order, and whether they form a tree (``root`` first)."""

    __slots__ = ("order", "tree")

    def __init__(self, order: list[TreeNode], tree: bool = False) -> None:
        self.order = order
        self.tree = tree


def _root_to_front(b: _Bin, root: TreeNode) -> None:
    """HashMap.TreeNode.moveRootToFront."""
    if b.order[0] is not root:
        b.order.remove(root)
        b.order.insert(0, root)


def _treeify(b: _Bin) -> None:
    """HashMap.TreeNode.treeify: a tree of the bin's entries inserted in its order; the root moves to the front."""
    root: TreeNode | None = None
    for x in b.order:
        root, _ = insert(root, x)
    b.tree = True
    assert root is not None
    _root_to_front(b, root)


class JavaHashSet:
    """A ``java.util.HashSet<String>`` (a ``HashMap``) of ``capacity`` initial buckets: ``add`` and iteration as
    Java's (see the module docstring)."""

    def __init__(self, capacity: int = _DEFAULT_CAPACITY) -> None:
        self._table: list[_Bin | None] = [None] * table_size_for(capacity)
        self._threshold = int(len(self._table) * _LOAD_FACTOR)
        self._size = 0

    def __iter__(self) -> Iterator[str]:
        return (n.key for b in self._table if b is not None for n in b.order)

    def __len__(self) -> int:
        return self._size

    def add(self, key: str) -> bool:
        h = int32(spread(string_hash(key)))
        n = len(self._table)
        i = h & (n - 1)
        b = self._table[i]
        if b is None:
            self._table[i] = _Bin([TreeNode(key, h)])
        elif b.tree:
            if not self._put_tree(b, key, h):
                return False
        else:
            if any(e.hash == h and e.key == key for e in b.order):
                return False
            b.order.append(TreeNode(key, h))
            if len(b.order) > _TREEIFY_THRESHOLD:
                if n < _MIN_TREEIFY_CAPACITY:
                    self._resize()
                else:
                    _treeify(b)
        self._size += 1
        if self._size > self._threshold:
            self._resize()
        return True

    def _put_tree(self, b: _Bin, key: str, h: int) -> bool:
        """HashMap.TreeNode.putTreeVal: False if present; else the entry goes into the tree and, in iteration
        order, right after its tree parent, and the (new) root moves to the front."""
        if any(e.hash == h and e.key == key for e in b.order):
            return False
        root = b.order[0]
        while root.parent is not None:
            root = root.parent
        x = TreeNode(key, h)
        root, parent = insert(root, x)
        assert parent is not None
        b.order.insert(b.order.index(parent) + 1, x)
        _root_to_front(b, root)
        return True

    def _resize(self) -> None:
        old = self._table
        n = len(old) * 2
        self._table = [None] * n
        self._threshold = int(n * _LOAD_FACTOR)
        bit = len(old)
        for j, b in enumerate(old):
            if b is None:
                continue
            lo = [e for e in b.order if not e.hash & bit]
            hi = [e for e in b.order if e.hash & bit]
            for index, part, other in ((j, lo, hi), (j + bit, hi, lo)):
                if not part:
                    continue
                if not b.tree or len(part) <= _UNTREEIFY_THRESHOLD:
                    self._table[index] = _Bin(part)
                else:
                    self._table[index] = moved = _Bin(part, tree=True)
                    if other:
                        _treeify(moved)


def hash_set_order(items: Iterable[str], capacity: int = _DEFAULT_CAPACITY) -> list[str]:
    """The iteration order of a ``HashSet<String>`` of ``capacity`` initial buckets after adding ``items`` in
    order."""
    s = JavaHashSet(capacity)
    for item in items:
        s.add(item)
    return list(s)
