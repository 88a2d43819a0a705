"""Large shared pools: narrow the candidates to the most promising nodes.

On a 1,000-node pool with thousands of running leases every one of them is a
candidate, and neither enumeration nor a greedy pass over all of them fits in a
decision's time. But the preemptor needs a handful of nodes: the sets worth looking
at free room on few nodes. :func:`pick` ranks the nodes twice — by overhead per VM
of room gained if every candidate on the node went (cheap nodes), and by the number
of candidates per VM gained (nodes freed by few leases) — takes nodes from the top
of each ranking until each has twice the missing room, and keeps only the candidates
on those nodes. Every other node contributes its room as it is, a constant.

It runs at two places:

* :func:`narrow`, on an instance, with the exact room each node would gain;
* :func:`leasehold.core.preemption.instance.build`, on the slot table itself, before
  any bin is made (1,000 bins cost more than the whole decision may). The gain is
  then estimated as if every candidate's usage on the node fell at the node's
  busiest instant of the window, which can only overstate it; the instance built
  from the chosen nodes is exact.

The sets found on a narrowed instance are candidate sets of the full one (the
removal of the same leases frees the same room), but not all of them: decisions on
a narrowed instance are marked ``exact: false``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .instance import Instance

#: instances with more candidates than this are narrowed
NARROW_ABOVE = 40
#: each ranking takes nodes until it has this many times the missing room
SLACK = 2


def pick(gain: Sequence[int], cost: Sequence[int], count: Sequence[int],
         missing: int) -> set[int]:
    """The nodes to keep, given per node (by index) the room all its candidates
    would free (``gain``), their summed overhead and their number. Ties go to the
    lower node. Vectorised: on the slot table it ranks a thousand nodes."""
    gains = np.asarray(gain, dtype=np.int64)
    useful = np.flatnonzero(gains > 0)
    g = gains[useful]
    chosen: set[int] = set()
    for weight in (cost, count):
        ratio = np.asarray(weight, dtype=np.int64)[useful] / g
        order = np.lexsort((useful, ratio))  # by ratio, then by node
        # take nodes while those taken before free less than the slack asks
        before = np.cumsum(g[order]) - g[order]
        chosen.update(useful[order[before < SLACK * missing]].tolist())
    return chosen


def narrow(inst: Instance) -> tuple[Instance, tuple[int, ...]]:
    """The narrowed instance, and for each of its candidates the index it has in
    ``inst`` (ascending: the name order is kept)."""
    from .instance import Instance, bin_room  # instance builds with pick(): no cycle

    cands, bins = inst.candidates, inst.bins
    base_rooms = [bin_room(b.free, b.demand) for b in bins]
    missing = inst.need - inst.base - sum(base_rooms)
    if missing <= 0:
        return inst, tuple(range(len(cands)))
    on_bin: list[list[int]] = [[] for _ in bins]
    for i, c in enumerate(cands):
        for p in c.parts:
            on_bin[p.bin].append(i)
    gain, cost, count = [0] * len(bins), [0] * len(bins), [0] * len(bins)
    for b, bin_ in enumerate(bins):
        arrays = [list(d) for d in bin_.free]
        for i in on_bin[b]:
            for p in cands[i].parts:
                if p.bin == b:
                    for arr, amount in zip(arrays, p.amount, strict=True):
                        for x in range(p.lo, p.hi):
                            arr[x] += amount
        gain[b] = bin_room(arrays, bin_.demand) - base_rooms[b]
        cost[b] = sum(cands[i].cost for i in on_bin[b])
        count[b] = len(on_bin[b])
    keep = kept(pick(gain, cost, count, missing), on_bin)
    touched = sorted({p.bin for i in keep for p in cands[i].parts})
    index = {b: k for k, b in enumerate(touched)}
    rest = sum(base_rooms[b] for b in range(len(bins)) if b not in index)
    narrowed = tuple(
        replace(cands[i], parts=tuple(replace(p, bin=index[p.bin]) for p in cands[i].parts))
        for i in keep
    )
    view = Instance(inst.pool, inst.need, inst.base + rest, tuple(bins[b] for b in touched),
                    narrowed, inst.now, inst.narrowed)
    return view, tuple(keep)


def kept(nodes: set[int], on_node: Mapping[int, Sequence[int]] | Sequence[Sequence[int]]
         ) -> tuple[int, ...]:
    """The candidates on ``nodes``, ascending."""
    return tuple(sorted({i for n in nodes for i in on_node[n]}))
