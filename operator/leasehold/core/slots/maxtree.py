"""A max segment tree over indices 0..n-1: the first index from ``i`` whose value is at
least ``x``, in ``O(log n)`` however many indices before it fall short.

A packed pool keeps one per shape and searched start, over its nodes, holding when
each node's room for a VM runs out (a bound from above): the next node by index that
may hold a VM for a whole window is found without reading the nodes that cannot
(:meth:`leasehold.core.slots.packed.PackedPool.place`).
"""

from __future__ import annotations

from array import array
from math import inf


class MaxTree:
    """Values at indices ``0..n-1`` (``-inf`` beyond, never reported), the maximum of
    each aligned power-of-two range kept above them. A flat array of doubles (copied
    with one memcpy, one object to the garbage collector): ``t[1]`` is the root,
    ``t[k]``'s children ``t[2k]`` and ``t[2k+1]``, the leaves from ``t[width]`` on."""

    __slots__ = ("size", "t", "width")

    def __init__(self, values: list[float]) -> None:
        self.size = len(values)
        width = 1
        while width < max(self.size, 1):
            width *= 2
        self.width = width
        # built level by level, each in one comprehension (a tree over a 5,000-node
        # pool is made for every searched start that has no neighbour to copy)
        level = [*values, *([-inf] * (width - self.size))]
        levels = [level]
        while len(level) > 1:
            level = [a if a >= b else b for a, b in zip(level[::2], level[1::2], strict=True)]
            levels.append(level)
        t = array("d", [-inf])
        for level in reversed(levels):
            t.extend(level)
        self.t = t

    def copy(self) -> MaxTree:
        other = MaxTree.__new__(MaxTree)
        other.size, other.width, other.t = self.size, self.width, array("d", self.t)
        return other

    def __getitem__(self, i: int) -> float:
        return self.t[self.width + i]

    def set(self, i: int, value: float) -> None:
        t = self.t
        k = self.width + i
        if t[k] == value:
            return
        t[k] = value
        k >>= 1
        while k:
            a, b = t[2 * k], t[2 * k + 1]
            top = a if a >= b else b
            if t[k] == top:  # the ranges above hold the same maximum
                return
            t[k] = top
            k >>= 1

    def first_at_least(self, i: int, x: float) -> int | None:
        """The least index ``j >= i`` with ``value[j] >= x``; ``None`` if there is none."""
        if i >= self.size:
            return None
        t, width = self.t, self.width
        k = width + i
        if t[k] < x:
            # up until a right neighbour's range holds such a value (the ranges left
            # behind are all before or at ``i``)
            while True:
                if not k & 1 and t[k + 1] >= x:
                    k += 1
                    break
                k >>= 1
                if k <= 1:
                    return None
            # down to its leftmost such leaf
            while k < width:
                k *= 2
                if t[k] < x:
                    k += 1
        return k - width
