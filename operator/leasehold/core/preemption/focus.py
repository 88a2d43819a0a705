"""Large shared pools: narrow the candidates to the most promising nodes.

On a 1,000-node pool with thousands of running leases every one of them is a
candidate, and neither enumeration nor a greedy pass over all of them fits in a
decision's time. But the preemptor needs a handful of nodes: the sets worth looking
at free room on few nodes. :func:`narrow` ranks the nodes twice — by overhead per VM
of room gained if every candidate on the node went (cheap nodes), and by the number
of candidates per VM gained (nodes freed by few leases) — takes nodes from the top
of each ranking until each has twice the missing room, and keeps only the candidates
on those nodes. Every other node contributes its room as it is, a constant.

The sets found on the narrowed instance are candidate sets of the full one (the
removal of the same leases frees the same room), but not all of them: decisions on
a narrowed instance are marked ``exact: false``.
"""

from __future__ import annotations

from dataclasses import replace

from .instance import Instance, bin_room

#: instances with more candidates than this are narrowed
NARROW_ABOVE = 40
#: each ranking takes nodes until it has this many times the missing room
SLACK = 2


def narrow(inst: Instance) -> tuple[Instance, tuple[int, ...]]:
    """The narrowed instance, and for each of its candidates the index it has in
    ``inst`` (ascending: the name order is kept)."""
    cands, bins = inst.candidates, inst.bins
    base_rooms = [bin_room(b.free, b.demand) for b in bins]
    missing = inst.need - inst.base - sum(base_rooms)
    if missing <= 0:
        return inst, tuple(range(len(cands)))
    on_bin: list[list[int]] = [[] for _ in bins]
    for i, c in enumerate(cands):
        for p in c.parts:
            on_bin[p.bin].append(i)
    gain, cost = [], []
    for b, bin_ in enumerate(bins):
        arrays = [list(d) for d in bin_.free]
        for i in on_bin[b]:
            for p in cands[i].parts:
                if p.bin == b:
                    for arr, amount in zip(arrays, p.amount, strict=True):
                        for x in range(p.lo, p.hi):
                            arr[x] += amount
        gain.append(bin_room(arrays, bin_.demand) - base_rooms[b])
        cost.append(sum(cands[i].cost for i in on_bin[b]))
    useful = [b for b in range(len(bins)) if gain[b] > 0]
    chosen: set[int] = set()
    for key in (lambda b: (cost[b] / gain[b], b), lambda b: (len(on_bin[b]) / gain[b], b)):
        got = 0
        for b in sorted(useful, key=key):
            if got >= SLACK * missing:
                break
            chosen.add(b)
            got += gain[b]
    keep = sorted({i for b in chosen for i in on_bin[b]})
    touched = sorted({p.bin for i in keep for p in cands[i].parts})
    index = {b: k for k, b in enumerate(touched)}
    rest = sum(base_rooms[b] for b in range(len(bins)) if b not in index)
    narrowed = tuple(
        replace(cands[i], parts=tuple(replace(p, bin=index[p.bin]) for p in cands[i].parts))
        for i in keep
    )
    view = Instance(inst.pool, inst.need, inst.base + rest, tuple(bins[b] for b in touched),
                    narrowed, inst.now)
    return view, tuple(keep)
