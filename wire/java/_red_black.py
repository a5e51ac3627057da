"""The red-black trees a Java hash table turns a crowded bucket into (``HashMap.TreeNode``,
``ConcurrentHashMap.TreeBin``: the same algorithms, adapted from CLR). Keys are strings, ordered by their stored
hash, then by ``String.compareTo``; the shape decides where HashMap iterates a new entry and when a
ConcurrentHashMap bucket turns back into a list after a removal.
"""

from __future__ import annotations

__all__ = ["TreeNode", "insert", "remove"]


class TreeNode:
    __slots__ = ("key", "hash", "left", "right", "parent", "red")

    def __init__(self, key: str, hash_: int) -> None:
        self.key, self.hash = key, hash_
        self.left: TreeNode | None = None
        self.right: TreeNode | None = None
        self.parent: TreeNode | None = None
        self.red = False


def _direction(h: int, key: str, p: TreeNode) -> int:
    """The tree order: by stored hash (a Java int), then String.compareTo (UTF-16 code units)."""
    if p.hash > h:
        return -1
    if p.hash < h:
        return 1
    a, b = key.encode("utf-16-be"), p.key.encode("utf-16-be")
    return -1 if a < b else 1 if a > b else 0


def insert(root: TreeNode | None, x: TreeNode) -> tuple[TreeNode, TreeNode | None]:
    """``x`` (not in the tree) hung where the tree search ends and the tree rebalanced: the new root, and the node
    ``x`` was hung below (None: ``x`` is the first), which rotations may since have moved."""
    x.left = x.right = x.parent = None
    if root is None:
        x.red = False
        return x, None
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
            return _balance_insertion(root, x), p
        p = nxt


def _rotate_left(root: TreeNode, p: TreeNode) -> TreeNode:
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


def _rotate_right(root: TreeNode, p: TreeNode) -> TreeNode:
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


def _balance_insertion(root: TreeNode, x: TreeNode) -> TreeNode:
    """balanceInsertion: the red-black fix-up after inserting ``x``; the new root."""
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


def _balance_deletion(root: TreeNode, x: TreeNode | None) -> TreeNode:
    """balanceDeletion: the red-black fix-up after removing a node replaced by ``x``; the new root."""
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        if xp.left is x:
            xpr = xp.right
            if xpr is not None and xpr.red:
                xpr.red = False
                xp.red = True
                root = _rotate_left(root, xp)
                xp = x.parent
                xpr = xp.right if xp is not None else None
            if xpr is None:
                x = xp
                continue
            sl, sr = xpr.left, xpr.right
            if (sr is None or not sr.red) and (sl is None or not sl.red):
                xpr.red = True
                x = xp
                continue
            if sr is None or not sr.red:
                if sl is not None:
                    sl.red = False
                xpr.red = True
                root = _rotate_right(root, xpr)
                xp = x.parent
                xpr = xp.right if xp is not None else None
            if xpr is not None:
                xpr.red = False if xp is None else xp.red
                sr = xpr.right
                if sr is not None:
                    sr.red = False
            if xp is not None:
                xp.red = False
                root = _rotate_left(root, xp)
            x = root
        else:  # symmetric
            xpl = xp.left
            if xpl is not None and xpl.red:
                xpl.red = False
                xp.red = True
                root = _rotate_right(root, xp)
                xp = x.parent
                xpl = xp.left if xp is not None else None
            if xpl is None:
                x = xp
                continue
            sl, sr = xpl.left, xpl.right
            if (sl is None or not sl.red) and (sr is None or not sr.red):
                xpl.red = True
                x = xp
                continue
            if sl is None or not sl.red:
                if sr is not None:
                    sr.red = False
                xpl.red = True
                root = _rotate_left(root, xpl)
                xp = x.parent
                xpl = xp.left if xp is not None else None
            if xpl is not None:
                xpl.red = False if xp is None else xp.red
                sl = xpl.left
                if sl is not None:
                    sl.red = False
            if xp is not None:
                xp.red = False
                root = _rotate_right(root, xp)
            x = root


def remove(root: TreeNode, p: TreeNode) -> TreeNode:
    """``p`` taken out of the tree of ``root`` as the tables' removeTreeNode does it (a node with two children
    swaps tree places with its successor); the new root."""
    r = root
    pl, pr = p.left, p.right
    if pl is not None and pr is not None:
        s = pr
        while s.left is not None:  # the successor
            s = s.left
        s.red, p.red = p.red, s.red
        sr, pp = s.right, p.parent
        if s is pr:  # p was s's direct parent
            p.parent = s
            s.right = p
        else:
            sp = s.parent
            p.parent = sp
            if sp is not None:
                if s is sp.left:
                    sp.left = p
                else:
                    sp.right = p
            s.right = pr
            pr.parent = s
        p.left = None
        p.right = sr
        if sr is not None:
            sr.parent = p
        s.left = pl
        pl.parent = s
        s.parent = pp
        if pp is None:
            r = s
        elif p is pp.left:
            pp.left = s
        else:
            pp.right = s
        replacement = sr if sr is not None else p
    else:
        replacement = pl if pl is not None else pr if pr is not None else p
    if replacement is not p:
        pp = replacement.parent = p.parent
        if pp is None:
            r = replacement
        elif p is pp.left:
            pp.left = replacement
        else:
            pp.right = replacement
        p.left = p.right = p.parent = None
    r = r if p.red else _balance_deletion(r, replacement)
    if p is replacement:  # detach
        pp = p.parent
        if pp is not None:
            if p is pp.left:
                pp.left = None
            elif p is pp.right:
                pp.right = None
            p.parent = None
    return r
