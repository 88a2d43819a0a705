"""Exact candidate-set frontier for an exclusive pool, by a sweep over time.

In an exclusive pool the problem is a line: at each breakpoint ``x`` of the window
the chosen candidates active at ``x`` must give back at least the deficit
``D_x = need - free_x`` nodes, and each candidate is active over one range of
breakpoints. A set is minimal iff every member is *critical* somewhere: at some
``x`` in its range, the others active there would fall short without it.

The sweep walks the breakpoints in time order. Its state is what is chosen among the
candidates still active, with a flag "has been critical"; candidates that have ended
are summarised, not remembered. At each breakpoint, candidates that end there must
have been critical (else the branch is dropped), candidates that start there are
taken or not, the deficit is checked and the flags are updated. Different histories
that reach the same state are merged — what makes it fast where the include/exclude
tree of :func:`.sets.minimal_sets` visits them all. Three more things keep the
states few:

* interchangeable candidates (same range, nodes, VMs and overhead: e.g. many
  one-VM reservations re-planned at δ) form one class; the state counts how many
  of a class are chosen, since they are critical together or not at all;
* a state is dropped as soon as a chosen class can no longer become critical: at
  every deficit from here on, what is already chosen covers it without one of its
  members (more can only be added);
* breakpoints without a deficit or a start or end cost nothing.

Each state carries what the policies need of the sets that reach it (see
:class:`.sets.Frontier`): per (leases, VMs) the least overhead and, among equals,
the smallest sorted name list, and how many sets reach it per total overhead (a
class of ``m`` with ``k`` chosen counts ``C(m, k)`` times; its best set takes the
``k`` smallest names). Merging keeps both exact: partial sets that reach one state
get the same future additions, and for two sets of equal size, comparing their
sorted names with or without a common disjoint addition gives the same answer —
the first difference is the smallest element of their symmetric difference, which
with candidates indexed in name order is the lowest bit of the XOR of two masks.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from math import comb

from .instance import Instance

#: the best partial sets a state keeps, per slot (see :data:`MODES`):
#: (leases, VMs, overhead, members as a bit mask). Candidates are indexed in name
#: order, so of two sets of one size the one with the smaller sorted names is the
#: one holding the lowest bit of their symmetric difference.
Entry = tuple[int, int, int, int]
Best = dict[object, Entry]
#: what the future of a state depends on: the nodes the chosen candidates give back,
#: summed per end breakpoint ((end, nodes), ...), and the chosen classes that have
#: not been critical yet, as (end, nodes of one member), ...
Key = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]
#: state -> (best, histogram: total overhead -> number of partial sets)
States = dict[Key, tuple[Best, dict[int, int]]]
#: per (leases, VMs): (overhead, sorted names, member indices) of the best set
Frontier = dict[tuple[int, int], tuple[int, tuple[str, ...], tuple[int, ...]]]
#: a class of interchangeable candidates: (start, end, nodes, VMs, overhead, members)
Class = tuple[int, int, int, int, int, tuple[int, ...]]

#: states alive at once before the sweep gives up (the caller then samples)
DEFAULT_STATES = 20_000


def applies(inst: Instance) -> bool:
    """The sweep needs one bin with one dimension: an exclusive pool."""
    return len(inst.bins) == 1 and len(inst.bins[0].free) == 1 and inst.base == 0


#: What a state keeps, by what the policy asks (two partial sets in one state get
#: the same future additions, so their order under any of these keys never changes):
#: ``all`` — per (leases, VMs) the least overhead, and the overhead histogram;
#: ``moml`` — per number of leases the least overhead, and the histogram (for α);
#: ``mlip`` — one set: fewest leases, most VMs, least overhead; the count only;
#: ``mov`` — one set: least overhead, fewest leases; the count only.
#: Ties, always: smaller sorted names.
MODES: dict[str, tuple[Callable[[int, int], object], Callable[[Entry], tuple[int, ...]], bool]] = {
    "all": (lambda n, v: (n, v), lambda e: (e[2],), True),
    "moml": (lambda n, v: n, lambda e: (e[2],), True),
    "mlip": (lambda n, v: 0, lambda e: (e[0], -e[1], e[2]), False),
    "mov": (lambda n, v: 0, lambda e: (e[2], e[0]), False),
}


def _better(a: Entry, b: Entry, order: Callable[[Entry], tuple[int, ...]]) -> bool:
    ka, kb = order(a), order(b)
    if ka != kb:
        return ka < kb
    diff = a[3] ^ b[3]  # equal keys mean equal sizes: the smaller names win
    return bool(diff & -diff & a[3])


def _merge(into: States, key: Key, best: Best, hist: dict[int, int],
           order: Callable[[Entry], tuple[int, ...]]) -> None:
    old = into.get(key)
    if old is None:
        into[key] = (best.copy(), hist.copy())
        return
    old_best, old_hist = old
    for k, v in best.items():
        cur = old_best.get(k)
        if cur is None or _better(v, cur, order):
            old_best[k] = v
    for h, n in hist.items():
        old_hist[h] = old_hist.get(h, 0) + n


def _add(cover: tuple[tuple[int, int], ...], hi: int, nodes: int) -> tuple[tuple[int, int], ...]:
    merged = dict(cover)
    merged[hi] = merged.get(hi, 0) + nodes
    return tuple(sorted(merged.items()))


def _dead(key: Key, x: int, points: list[int], deficit: list[int],
          reach: list[int] | None) -> bool:
    """Whether no minimal set can come out of this state after breakpoint ``x``.

    * a chosen class that has not been critical yet can no longer be: at every
      later deficit in its range, what is chosen already covers it without one of
      its members (more can only be added);
    * with ``reach`` (per deficit point, all that classes starting after ``x`` could
      add there): some later deficit cannot be covered even by taking all of them.

    ``points`` are the breakpoints with a deficit, in order."""
    cover, waiting = key
    if not waiting and reach is None:
        return False
    first = bisect_right(points, x)
    later = points[first:]
    # least cover at each later deficit: what is chosen gives until it ends
    # (cover is sorted by end: a running total of what has ended by each point)
    least = []
    remaining = sum(nodes for _, nodes in cover)
    j, n_cover = 0, len(cover)
    for y in later:
        while j < n_cover and cover[j][0] <= y:
            remaining -= cover[j][1]
            j += 1
        least.append(remaining)
    if reach is not None:
        for n, y in enumerate(later):
            if least[n] + reach[first + n] < deficit[y]:
                return True
    for hi, w in waiting:
        for n, y in enumerate(later):
            if y >= hi:
                return True
            if least[n] - w < deficit[y]:
                break
        else:
            return True
    return False


def _classes(inst: Instance, deficit: list[int]) -> list[Class]:
    """Interchangeable candidates, grouped. Candidates never active at a deficit are
    never critical: left out."""
    groups: dict[tuple[int, int, int, int, int], list[int]] = {}
    for i, c in enumerate(inst.candidates):
        if not c.parts:
            continue
        p = c.parts[0]
        if any(deficit[x] > 0 for x in range(p.lo, p.hi)):
            groups.setdefault((p.lo, p.hi, p.amount[0], c.victim.vms, c.cost), []).append(i)
    return [(*k, tuple(m)) for k, m in sorted(groups.items())]


def _reach(classes: list[Class], points: list[int], width: int) -> list[list[int]]:
    """``reach[x][n]``: the most that classes starting after ``x`` can give back at
    deficit point ``n``."""
    out = [[0] * len(points) for _ in range(width)]
    for lo, hi, w, _, _, members in classes:
        most = w * len(members)
        for n, y in enumerate(points):
            if lo <= y < hi:
                for x in range(lo):
                    out[x][n] += most
    return out


def _take(
    best: Best, hist: dict[int, int], cls: Class, k: int, mode: str
) -> tuple[Best, dict[int, int]]:
    """The summaries after also taking ``k`` members of ``cls``: its ``k`` smallest
    names, ``C(m, k)`` ways."""
    slot, order, histogram = MODES[mode]
    _, _, _, vms, cost, members = cls
    add, mask = k * cost, sum(1 << i for i in members[:k])
    taken: Best = {}
    for n, v, h, chosen in best.values():
        entry = (n + k, v + k * vms, h + add, chosen | mask)
        key = slot(entry[0], entry[1])
        cur = taken.get(key)
        if cur is None or _better(entry, cur, order):
            taken[key] = entry
    ways = comb(len(members), k)
    if not histogram:  # the count is all that is kept: under one key
        return taken, {h: n * ways for h, n in hist.items()}
    return taken, {h + add: n * ways for h, n in hist.items()}


def frontier(
    inst: Instance, max_states: int = DEFAULT_STATES, mode: str = "all"
) -> tuple[Frontier, Counter[int]] | None:
    """The best sets (what ``mode`` keeps, see :data:`MODES`) and the overhead
    histogram — for ``mlip`` and ``mov`` only the count, under overhead 0 — over
    *all* minimal candidate sets of ``inst`` (none if the preemptor fits as it
    is), or ``None`` if more than ``max_states`` states were alive at once."""
    assert applies(inst)
    slot, order, _ = MODES[mode]
    free = inst.bins[0].free[0]
    deficit = [inst.need - f for f in free]
    if all(d <= 0 for d in deficit):
        return {}, Counter()
    classes = _classes(inst, deficit)
    points = [x for x, d in enumerate(deficit) if d > 0]
    reach = _reach(classes, points, len(free))
    starts: dict[int, list[int]] = {}
    ends: set[int] = set()
    for c, (lo, hi, *_) in enumerate(classes):
        starts.setdefault(lo, []).append(c)
        ends.add(hi)
    states: States = {((), ()): ({slot(0, 0): (0, 0, 0, 0)}, {0: 1})}
    for x in range(len(free)):
        if x in ends:  # what ends here stops covering; it must have been critical
            nxt: States = {}
            for (cover, waiting), (best, hist) in states.items():
                if all(hi > x for hi, _ in waiting):
                    key = (tuple(e for e in cover if e[0] > x), waiting)
                    _merge(nxt, key, best, hist, order)
            states = nxt
        # classes starting here: take none, one, ... or all of their members
        for c in starts.get(x, ()):
            cls = classes[c]
            hi, w = cls[1], cls[2]
            nxt = {}
            dead: dict[Key, bool] = {}  # many states grow into the same one
            for key, (best, hist) in states.items():
                _merge(nxt, key, best, hist, order)
                cover, waiting = key
                for k in range(1, len(cls[5]) + 1):
                    grown = (_add(cover, hi, k * w), tuple(sorted((*waiting, (hi, w)))))
                    hopeless = dead.get(grown)
                    if hopeless is None:
                        hopeless = dead[grown] = _dead(grown, x - 1, points, deficit, None)
                    if hopeless:
                        # a chosen member is not needed here or later, and taking
                        # more can only make that worse
                        break
                    _merge(nxt, grown, *_take(best, hist, cls, k, mode), order)
            states = nxt
            if len(states) > max_states:
                return None
        # the deficit here, who is critical for it, and which states are dead
        # (without a deficit or a start here, nothing changed since the last check)
        d = deficit[x]
        if d > 0 or x in starts:
            nxt = {}
            for (cover, waiting), (best, hist) in states.items():
                if d > 0:
                    total = sum(nodes for _, nodes in cover)
                    if total < d:
                        continue
                    waiting = tuple(e for e in waiting if total - e[1] >= d)
                if not _dead((cover, waiting), x, points, deficit, reach[x]):
                    _merge(nxt, (cover, waiting), best, hist, order)
            states = nxt
    best_all: Best = {}
    hist_all: Counter[int] = Counter()
    for (_, waiting), (best, hist) in states.items():
        if not waiting:
            for k, v in best.items():
                cur = best_all.get(k)
                if cur is None or _better(v, cur, order):
                    best_all[k] = v
            hist_all.update(hist)
    # with a deficit somewhere, the empty set never survives: only real sets remain
    out: Frontier = {}
    for n, v, h, mask in best_all.values():
        members = tuple(i for i in range(len(inst.candidates)) if mask >> i & 1)
        out[(n, v)] = (h, tuple(inst.candidates[i].name for i in members), members)
    return out, hist_all
