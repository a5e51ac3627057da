"""The Java hash codes Kafka's telemetry answers depend on.

Kafka keeps a client's subscribed metrics in a ``java.util.HashSet``: the list GetTelemetrySubscriptions returns
and the text its subscription id is a CRC of (``[a, b]<interval>``) come in that set's iteration order.
``JavaHashSet`` reproduces it exactly for any size: a ``HashMap``'s table of buckets (``String.hashCode`` spread
as HashMap spreads it), each bucket a list in insertion order until it holds more than 8 entries, when it
becomes a red-black tree (its iteration order then is the tree root first, each later entry placed right after
its tree parent) or, while the table is smaller than 64, the table doubles instead; resizes split every
bucket in order, and a tree of 6 entries or fewer becomes a list again.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Iterator

__all__ = ["JavaHashSet", "hash_set_capacity", "hash_set_order", "int32", "string_hash", "uuid_hash"]

_LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = 16
_MAXIMUM_CAPACITY = 1 << 30
_TREEIFY_THRESHOLD = 8
_UNTREEIFY_THRESHOLD = 6
_MIN_TREEIFY_CAPACITY = 64


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


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the power of two at or above ``capacity``."""
    n = 1
    while n < capacity:
        n <<= 1
    return min(n, _MAXIMUM_CAPACITY)


def hash_set_capacity(size: int) -> int:
    """The table size of ``new HashSet<>(collection of size)`` on Java 17, the JVM of the Kafka judging this (Java
    17's HashSet(Collection) asks for max((int) (size / .75f) + 1, 16); Java 21's for HashMap.newHashMap(max(size,
    12)), which differs from 12 elements on)."""
    quotient = struct.unpack("f", struct.pack("f", size / _LOAD_FACTOR))[0]  # a float division in Java
    return _table_size_for(max(int(quotient) + 1, _DEFAULT_CAPACITY))


class _Node:
    __slots__ = ("key", "hash", "left", "right", "parent", "red")

    def __init__(self, key: str, hash_: int) -> None:
        self.key, self.hash = key, hash_
        self.left: _Node | None = None
        self.right: _Node | None = None
        self.parent: _Node | None = None
        self.red = False


class _Bin:
    """One bucket: its entries in iteration (``next``) order, and whether they form a tree (``root`` first)."""

    __slots__ = ("order", "tree")

    def __init__(self, order: list[_Node], tree: bool = False) -> None:
        self.order = order
        self.tree = tree


def _direction(h: int, key: str, p: _Node) -> int:
    """HashMap's tree order: by spread hash (a Java int), then String.compareTo (UTF-16 code units)."""
    if p.hash > h:
        return -1
    if p.hash < h:
        return 1
    a, b = key.encode("utf-16-be"), p.key.encode("utf-16-be")
    return -1 if a < b else 1 if a > b else 0


def _rotate_left(root: _Node, p: _Node) -> _Node:
    r = p.right
    if r is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root: _Node, p: _Node) -> _Node:
    left = p.left
    if left is not None:
        lr = p.left = left.right
        if lr is not None:
            lr.parent = p
        pp = left.parent = p.parent
        if pp is None:
            root = left
            left.red = False
        elif pp.right is p:
            pp.right = left
        else:
            pp.left = left
        left.right = p
        p.parent = left
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    """HashMap.TreeNode.balanceInsertion: the red-black fix-up after inserting ``x``; the new root."""
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.right:
                x = xp
                root = _rotate_left(root, x)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = xp.red = False
                xpp.red = True
                x = xpp
                continue
            if x is xp.left:
                x = xp
                root = _rotate_right(root, x)
                xp = x.parent
                xpp = xp.parent if xp is not None else None
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate_left(root, xpp)


def _root_to_front(b: _Bin, root: _Node) -> None:
    """HashMap.TreeNode.moveRootToFront."""
    if b.order[0] is not root:
        b.order.remove(root)
        b.order.insert(0, root)


def _treeify(b: _Bin) -> None:
    """HashMap.TreeNode.treeify: a tree of the bin's entries inserted in its order; the root moves to the front."""
    root: _Node | None = None
    for x in b.order:
        x.left = x.right = None
        if root is None:
            x.parent, x.red, root = None, False, x
            continue
        p = root
        while True:
            d = _direction(x.hash, x.key, p)
            nxt = p.left if d <= 0 else p.right
            if nxt is None:
                x.parent = p
                if d <= 0:
                    p.left = x
                else:
                    p.right = x
                root = _balance_insertion(root, x)
                break
            p = nxt
    b.tree = True
    assert root is not None
    _root_to_front(b, root)


class JavaHashSet:
    """A ``java.util.HashSet<String>`` (a ``HashMap``) of ``capacity`` initial buckets: ``add`` and iteration as
    Java's (see the module docstring)."""

    def __init__(self, capacity: int = _DEFAULT_CAPACITY) -> None:
        self._table: list[_Bin | None] = [None] * _table_size_for(capacity)
        self._threshold = int(len(self._table) * _LOAD_FACTOR)
        self._size = 0

    def __iter__(self) -> Iterator[str]:
        return (n.key for b in self._table if b is not None for n in b.order)

    def __len__(self) -> int:
        return self._size

    def add(self, key: str) -> bool:
        h = string_hash(key)
        h = int32(h ^ ((h & 0xFFFFFFFF) >> 16))
        n = len(self._table)
        i = h & (n - 1)
        b = self._table[i]
        if b is None:
            self._table[i] = _Bin([_Node(key, h)])
        elif b.tree:
            if not self._put_tree(b, key, h):
                return False
        else:
            if any(e.hash == h and e.key == key for e in b.order):
                return False
            b.order.append(_Node(key, h))
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
        p = root
        while True:
            d = _direction(h, key, p)
            nxt = p.left if d <= 0 else p.right
            if nxt is None:
                x = _Node(key, h)
                x.parent = p
                if d <= 0:
                    p.left = x
                else:
                    p.right = x
                b.order.insert(b.order.index(p) + 1, x)
                _root_to_front(b, _balance_insertion(root, x))
                return True
            p = nxt

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
