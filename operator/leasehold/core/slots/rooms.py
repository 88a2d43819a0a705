"""Where a shared pool's nodes hold VMs of one shape, over time: per node, the spans
in which it holds one VM, two, ... (its *levels*), and all nodes at once as a matrix
for the two questions a compression asks of thousands of reservations in a row:

- which nodes hold a VM throughout a window of a given length that starts in a
  given range (:meth:`Rooms.holding`);
- from when in a range the nodes together hold so many VMs throughout such a window
  (:meth:`Rooms.first`): a sweep over every node's levels, where the exact search
  tries start after start, each a pass over the nodes with room there.

Each is one numpy pass over the matrix. After the scale benchmark's local wave a
compression asked the first of 3,000 reservations, with about 250 nodes given
capacity back each, of which about 3 had such a window; asked node by node in
Python that took 2.6 s of CPU. The second spares the searches that cannot succeed
(most of a compression's, on a fragmented pool), which tried a dozen starts each.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from math import inf

import numpy as np

from ..model import Shape
from ..profile import Profile
from .pool import fit_count

#: a node's spans of room for one VM, as two sorted lists: starts and ends
Runs = tuple[list[float], list[float]]
#: a span in which a node holds ``level`` VMs or more: (start, end, level)
Level = tuple[float, float, int]

#: added to each span's last start (its end minus the window's length), so that
#: rounding in that subtraction never leaves out a start the exact search would take
#: (which tests ``start + length <= end``): the sweep may say a start an ulp too
#: early, never too late, and the exact search goes on from it
_SLACK = 1e-6


def levels(cpu: Profile, memory: Profile, shape: Shape, top: int, now: float
           ) -> list[Level]:
    """The longest spans from ``now`` on in which a node with these free ``cpu`` and
    ``memory`` profiles holds ``level`` VMs of ``shape`` or more, for each level up
    to ``top``: ``(start, end, level)``, in no order. One walk over both profiles'
    steps."""
    ct, cf, mt, mf = cpu.times, cpu.free, memory.times, memory.free
    i, j = bisect_right(ct, now) - 1, bisect_right(mt, now) - 1
    t, nc, nm = now, len(ct), len(mt)
    opened: list[float] = []  # the start of each level held at ``t``, lowest first
    out: list[Level] = []
    c, m = shape.cpu, shape.memory
    # fit_count written out where both are positive: this loop runs for every node
    # changed since a shape's last sweep, for each shape (a third of the scale
    # benchmark's CPU under EASY, half of it in the calls)
    plain = c > 0 and m > 0
    while True:
        if plain:
            fc, fm = cf[i], mf[j]
            k = 0 if fc < 0 or fm < 0 else min(fc // c, fm // m, top)
        else:
            k = min(fit_count(cf[i], mf[j], shape), top)
        while len(opened) < k:
            opened.append(t)
        while len(opened) > k:
            out.append((opened.pop(), t, len(opened) + 1))
        a = ct[i + 1] if i + 1 < nc else inf
        b = mt[j + 1] if j + 1 < nm else inf
        t = a if a < b else b
        if t == inf:
            break
        if a == t:
            i += 1
        if b == t:
            j += 1
    while opened:
        out.append((opened.pop(), inf, len(opened) + 1))
    return out


class Rooms:
    """The levels of every node for one shape, each node's kept until its bookings
    change (:meth:`forget`) and found again, by ``find``, when next asked for.
    ``complete``: ``find`` gives every level a node can reach (else only some, and
    :meth:`first` cannot rule anything out)."""

    def __init__(self, nodes: int, find: Callable[[int], list[Level]],
                 complete: bool = True) -> None:
        self._find = find
        self._complete = complete
        self._levels: dict[int, list[Level]] = {}
        self._runs: dict[int, Runs] = {}
        # row ``n``: node ``n``'s levels' spans, padded with empty ones (+inf, -inf)
        self._starts = np.full((nodes, 1), inf)
        self._ends = np.full((nodes, 1), -inf)
        self._stale: set[int] = set(range(nodes))

    def forget(self, node: int) -> None:
        """The node's bookings changed: its levels are found again when needed."""
        self._levels.pop(node, None)
        self._runs.pop(node, None)
        self._stale.add(node)

    def forget_all(self, nodes: Iterable[int]) -> None:
        """:meth:`forget` each of ``nodes`` (one call for a booking's nodes)."""
        levels, runs, stale = self._levels, self._runs, self._stale
        for node in nodes:
            levels.pop(node, None)
            runs.pop(node, None)
            stale.add(node)

    def _of(self, node: int) -> list[Level]:
        got = self._levels.get(node)
        if got is None:
            got = self._levels[node] = self._find(node)
        return got

    def runs(self, node: int) -> Runs:
        """The spans in which the node holds one VM or more, in order."""
        got = self._runs.get(node)
        if got is None:
            ones = sorted((x, y) for x, y, level in self._of(node) if level == 1)
            got = self._runs[node] = ([x for x, _ in ones], [y for _, y in ones])
        return got

    def holding(self, earliest: float, latest: float, length: float) -> list[int]:
        """The nodes, in index order, that hold a VM throughout some
        ``[t, t + length)`` with ``t`` in ``[earliest, latest]``: a span of room
        ``[x, y)`` with ``min(y, latest + length) - max(x, earliest) >= length``
        (which every such window also meets). The spans of higher levels lie
        within those of one VM, so all can be asked at once."""
        self._refresh()
        low = np.maximum(self._starts, earliest)
        high = np.minimum(self._ends, latest + length)
        return np.flatnonzero(((high - low) >= length).any(axis=1)).tolist()

    def first(self, vms: int, earliest: float, latest: float, length: float) -> float | None:
        """No ``t`` in ``[earliest, latest]`` before the returned one has the nodes
        hold ``vms`` VMs throughout ``[t, t + length)`` (None: no ``t`` at all).
        Each node's level at ``t`` counts its VMs, and the levels' spans that
        contain such a window, ``[x, y - length]``, are swept in one pass."""
        if not self._complete:
            return earliest if earliest <= latest else None
        self._refresh()
        low = np.maximum(self._starts, earliest)
        high = np.minimum(self._ends - length + _SLACK, latest)
        fits = low <= high
        starts, ends = np.sort(low[fits]), np.sort(high[fits])
        if starts.size < vms:
            return None
        # VMs held at each span's start: the spans begun by then, less those ended
        held = np.searchsorted(starts, starts, "right") - np.searchsorted(ends, starts, "left")
        hit = np.flatnonzero(held >= vms)
        return float(starts[hit[0]]) if hit.size else None

    def _refresh(self) -> None:
        if not self._stale:
            return
        width = self._starts.shape[1]
        rows = {node: self._of(node) for node in self._stale}
        need = max(len(spans) for spans in rows.values())
        if need > width:
            width = max(need, 2 * width)
            pad = width - self._starts.shape[1]
            self._starts = np.pad(self._starts, ((0, 0), (0, pad)), constant_values=inf)
            self._ends = np.pad(self._ends, ((0, 0), (0, pad)), constant_values=-inf)
        for node, spans in rows.items():
            n = len(spans)
            self._starts[node, :n] = [x for x, _, _ in spans]
            self._starts[node, n:] = inf
            self._ends[node, :n] = [y for _, y, _ in spans]
            self._ends[node, n:] = -inf
        self._stale.clear()
