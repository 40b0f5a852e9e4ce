"""`java.util.HashMap<Long, V>` iteration order, as the interval join's caches have it in Flink.

Flink's heap state backend keeps a MapState as a plain `java.util.HashMap`, and the released
interval join (TimeIntervalJoin) walks its time → rows caches with that map's iterator: which
bucket it joins, pads and expires first, and which "earliest remaining time" its cleanup finds,
follow the map's iteration order. That order is deterministic: buckets by
`(h ^ h >>> 16) & (capacity − 1)` with `h = Long.hashCode(t)`, each bucket in chain order, the
capacity doubling past 0.75 load (chains split in order), and a bucket of more than 8 entries in
a table of at least 64 turned into a red-black tree whose root moves to the front of its chain.
`JavaLongMap` repeats those steps (JDK 17's HashMap) for puts, iterator removals and `clear`;
the keys double as node identities, so the whole state is plain lists and dicts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

V = TypeVar("V")

_INITIAL_CAPACITY = 16
_TREEIFY = 8
_UNTREEIFY = 6
_MIN_TREEIFY_CAPACITY = 64


def spread_hash(key: int) -> int:
    """`HashMap.hash(Long key)`: `h ^ (h >>> 16)` of `Long.hashCode`, as a signed 32-bit int."""
    unsigned = key & 0xFFFFFFFFFFFFFFFF
    h = (unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


class _Tree:
    """One treeified bucket: parent/left/right links and colours, keyed by the entries' keys."""

    __slots__ = ("left", "parent", "red", "right")

    def __init__(self) -> None:
        self.parent: dict[int, int | None] = {}
        self.left: dict[int, int | None] = {}
        self.right: dict[int, int | None] = {}
        self.red: dict[int, bool] = {}

    def root_of(self, node: int) -> int:
        while (up := self.parent[node]) is not None:
            node = up
        return node

    def rotate_left(self, root: int, p: int) -> int:
        r = self.right[p]
        if r is None:
            return root
        rl = self.right[p] = self.left[r]
        if rl is not None:
            self.parent[rl] = p
        pp = self.parent[r] = self.parent[p]
        if pp is None:
            root = r
            self.red[r] = False
        elif self.left[pp] == p:
            self.left[pp] = r
        else:
            self.right[pp] = r
        self.left[r] = p
        self.parent[p] = r
        return root

    def rotate_right(self, root: int, p: int) -> int:
        lft = self.left[p]
        if lft is None:
            return root
        lr = self.left[p] = self.right[lft]
        if lr is not None:
            self.parent[lr] = p
        pp = self.parent[lft] = self.parent[p]
        if pp is None:
            root = lft
            self.red[lft] = False
        elif self.right[pp] == p:
            self.right[pp] = lft
        else:
            self.left[pp] = lft
        self.right[lft] = p
        self.parent[p] = lft
        return root

    def balance_insertion(self, root: int, x: int) -> int:
        red, parent, left, right = self.red, self.parent, self.left, self.right
        red[x] = True
        while True:
            xp = parent[x]
            if xp is None:
                red[x] = False
                return x
            xpp = parent[xp]
            if not red[xp] or xpp is None:
                return root
            xppl = left[xpp]
            if xp == xppl:
                xppr = right[xpp]
                if xppr is not None and red[xppr]:
                    red[xppr] = red[xp] = False
                    red[xpp] = True
                    x = xpp
                    continue
                if x == right[xp]:
                    x = xp
                    root = self.rotate_left(root, x)
                    xp = parent[x]
                    xpp = None if xp is None else parent[xp]
                if xp is not None:
                    red[xp] = False
                    if xpp is not None:
                        red[xpp] = True
                        root = self.rotate_right(root, xpp)
            else:
                if xppl is not None and red[xppl]:
                    red[xppl] = red[xp] = False
                    red[xpp] = True
                    x = xpp
                    continue
                if x == left[xp]:
                    x = xp
                    root = self.rotate_right(root, x)
                    xp = parent[x]
                    xpp = None if xp is None else parent[xp]
                if xp is not None:
                    red[xp] = False
                    if xpp is not None:
                        red[xpp] = True
                        root = self.rotate_left(root, xpp)

    def balance_deletion(self, root: int, x: int | None) -> int:
        red, parent, left, right = self.red, self.parent, self.left, self.right
        while True:
            if x is None or x == root:
                return root
            xp = parent[x]
            if xp is None:
                red[x] = False
                return x
            if red[x]:
                red[x] = False
                return root
            if left[xp] == x:
                xpr = right[xp]
                if xpr is not None and red[xpr]:
                    red[xpr] = False
                    red[xp] = True
                    root = self.rotate_left(root, xp)
                    xp = parent[x]
                    xpr = None if xp is None else right[xp]
                if xpr is None:
                    x = xp
                    continue
                sl, sr = left[xpr], right[xpr]
                if (sr is None or not red[sr]) and (sl is None or not red[sl]):
                    red[xpr] = True
                    x = xp
                    continue
                if sr is None or not red[sr]:
                    if sl is not None:
                        red[sl] = False
                    red[xpr] = True
                    root = self.rotate_right(root, xpr)
                    xp = parent[x]
                    xpr = None if xp is None else right[xp]
                if xpr is not None:
                    red[xpr] = False if xp is None else red[xp]
                    sr = right[xpr]
                    if sr is not None:
                        red[sr] = False
                if xp is not None:
                    red[xp] = False
                    root = self.rotate_left(root, xp)
                x = root
            else:
                xpl = left[xp]
                if xpl is not None and red[xpl]:
                    red[xpl] = False
                    red[xp] = True
                    root = self.rotate_right(root, xp)
                    xp = parent[x]
                    xpl = None if xp is None else left[xp]
                if xpl is None:
                    x = xp
                    continue
                sl, sr = left[xpl], right[xpl]
                if (sl is None or not red[sl]) and (sr is None or not red[sr]):
                    red[xpl] = True
                    x = xp
                    continue
                if sl is None or not red[sl]:
                    if sr is not None:
                        red[sr] = False
                    red[xpl] = True
                    root = self.rotate_left(root, xpl)
                    xp = parent[x]
                    xpl = None if xp is None else left[xp]
                if xpl is not None:
                    red[xpl] = False if xp is None else red[xp]
                    sl = left[xpl]
                    if sl is not None:
                        red[sl] = False
                if xp is not None:
                    red[xp] = False
                    root = self.rotate_right(root, xp)
                x = root


def _direction(key: int, other: int) -> int:
    """Tree order: by spread hash (signed), then `Long.compareTo`."""
    h, ph = spread_hash(key), spread_hash(other)
    if ph != h:
        return -1 if ph > h else 1
    return -1 if key < other else 1


class JavaLongMap(Generic[V]):
    """A `HashMap<Long, V>` with Java's iteration order; keys are Python ints in the long range."""

    __slots__ = ("_bins", "_threshold", "_trees", "_values")

    def __init__(self) -> None:
        self._values: dict[int, V] = {}
        self._bins: list[list[int]] = []
        """The table: for each index, the bucket's keys in chain order (empty until the first put)."""
        self._trees: dict[int, _Tree] = {}
        """Treeified buckets by table index."""
        self._threshold = 0

    # ---- the Map interface the interval join uses -------------------------------------------------

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __getitem__(self, key: int) -> V:
        return self._values[key]

    def get(self, key: int, default: V | None = None) -> V | None:
        return self._values.get(key, default)

    def __iter__(self) -> Iterator[int]:
        """Keys in Java's iteration order (a snapshot: removing the current key is safe)."""
        return iter([k for bucket in self._bins for k in bucket])

    def keys(self) -> list[int]:
        return list(self)

    def values(self) -> list[V]:
        return [self._values[k] for k in self]

    def items(self) -> list[tuple[int, V]]:
        return [(k, self._values[k]) for k in self]

    def put(self, key: int, value: V) -> None:
        """`HashMap.put`: a new key joins its bucket's chain (or tree); an old key keeps its place."""
        if key in self._values:
            self._values[key] = value
            return
        if not self._bins:
            self._resize()
        index = spread_hash(key) & (len(self._bins) - 1)
        bucket = self._bins[index]
        self._values[key] = value
        if index in self._trees:
            self._tree_put(index, key)
        else:
            bucket.append(key)
            if len(bucket) > _TREEIFY:
                self._treeify_bin(index)
        if len(self._values) > self._threshold:
            self._resize()

    def setdefault(self, key: int, default: V) -> V:
        if key not in self._values:
            self.put(key, default)
        return self._values[key]

    def remove(self, key: int) -> None:
        """Remove through an iterator (`HashIterator.remove`: a tree bucket keeps its root's place)."""
        del self._values[key]
        index = spread_hash(key) & (len(self._bins) - 1)
        if index in self._trees:
            self._tree_remove(index, key)
        else:
            self._bins[index].remove(key)

    def clear(self) -> None:
        """Flink's `MapState.clear()` drops the map; the next put starts a new one (capacity 16)."""
        self._values = {}
        self._bins = []
        self._trees = {}
        self._threshold = 0

    # ---- table growth and treeification -----------------------------------------------------------

    def _resize(self) -> None:
        old = self._bins
        if not old:
            self._bins = [[] for _ in range(_INITIAL_CAPACITY)]
            self._threshold = _INITIAL_CAPACITY * 3 // 4
            return
        bit = len(old)
        bins: list[list[int]] = [[] for _ in range(2 * bit)]
        trees: dict[int, _Tree] = {}
        for j, bucket in enumerate(old):
            if not bucket:
                continue
            tree = self._trees.get(j)
            if len(bucket) == 1:
                # A lone node moves as it is, even a tree node (checked before the tree case).
                target = spread_hash(bucket[0]) & (2 * bit - 1)
                bins[target] = [bucket[0]]
                if tree is not None:
                    trees[target] = tree
                continue
            lo = [k for k in bucket if not spread_hash(k) & bit]
            hi = [k for k in bucket if spread_hash(k) & bit]
            bins[j], bins[j + bit] = lo, hi
            if tree is None:
                continue
            for index, part, rest in ((j, lo, hi), (j + bit, hi, lo)):
                if len(part) > _UNTREEIFY:
                    # Kept as a tree: rebuilt (root to the front) unless all nodes stayed together.
                    trees[index] = self._treeify(bins, index) if rest else tree
        self._bins, self._trees = bins, trees
        self._threshold *= 2

    def _treeify_bin(self, index: int) -> None:
        if len(self._bins) < _MIN_TREEIFY_CAPACITY:
            self._resize()
        else:
            self._trees[index] = self._treeify(self._bins, index)

    def _treeify(self, bins: list[list[int]], index: int) -> _Tree:
        """`TreeNode.treeify`: insert the chain in order into a red-black tree, root to the front."""
        tree = _Tree()
        root: int | None = None
        for x in bins[index]:
            tree.left[x] = tree.right[x] = None
            if root is None:
                tree.parent[x] = None
                tree.red[x] = False
                root = x
                continue
            p = root
            while True:
                d = _direction(x, p)
                child = tree.left[p] if d <= 0 else tree.right[p]
                if child is None:
                    tree.parent[x] = p
                    if d <= 0:
                        tree.left[p] = x
                    else:
                        tree.right[p] = x
                    root = tree.balance_insertion(root, x)
                    break
                p = child
        assert root is not None
        self._move_to_front(bins[index], root)
        return tree

    def _tree_put(self, index: int, key: int) -> None:
        """`putTreeVal`: the new node hangs under its tree parent and follows it in the chain."""
        tree = self._trees[index]
        chain = self._bins[index]
        root = tree.root_of(chain[0])
        p = root
        while True:
            d = _direction(key, p)
            child = tree.left[p] if d <= 0 else tree.right[p]
            if child is None:
                break
            p = child
        tree.left[key] = tree.right[key] = None
        tree.parent[key] = p
        if d <= 0:
            tree.left[p] = key
        else:
            tree.right[p] = key
        chain.insert(chain.index(p) + 1, key)
        self._move_to_front(chain, tree.balance_insertion(root, key))

    @staticmethod
    def _move_to_front(chain: list[int], root: int) -> None:
        if chain[0] != root:
            chain.remove(root)
            chain.insert(0, root)

    def _tree_remove(self, index: int, p: int) -> None:
        """`removeTreeNode(movable = false)`: unlink from the chain, then delete from the tree."""
        tree = self._trees[index]
        chain = self._bins[index]
        chain.remove(p)
        if not chain:
            del self._trees[index]
            return
        root = tree.root_of(chain[0])
        parent, left, right, red = tree.parent, tree.left, tree.right, tree.red
        pl, pr = left[p], right[p]
        if pl is not None and pr is not None:
            s = pr
            while (sl := left[s]) is not None:
                s = sl
            red[s], red[p] = red[p], red[s]
            sr = right[s]
            pp = parent[p]
            if s == pr:
                parent[p] = s
                right[s] = p
            else:
                sp = parent[s]
                parent[p] = sp
                if sp is not None:
                    if s == left[sp]:
                        left[sp] = p
                    else:
                        right[sp] = p
                right[s] = pr
                parent[pr] = s
            left[p] = None
            right[p] = sr
            if sr is not None:
                parent[sr] = p
            left[s] = pl
            parent[pl] = s
            parent[s] = pp
            if pp is None:
                root = s
            elif p == left[pp]:
                left[pp] = s
            else:
                right[pp] = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement != p:
            pp = parent[replacement] = parent[p]
            if pp is None:
                root = replacement
                red[replacement] = False
            elif p == left[pp]:
                left[pp] = replacement
            else:
                right[pp] = replacement
            left[p] = right[p] = parent[p] = None
        if not red[p]:
            tree.balance_deletion(root, replacement)
        if replacement == p:
            pp = parent[p]
            parent[p] = None
            if pp is not None:
                if p == left[pp]:
                    left[pp] = None
                elif p == right[pp]:
                    right[pp] = None
        for links in (parent, left, right, red):
            del links[p]
