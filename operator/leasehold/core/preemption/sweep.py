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

from bisect import bisect_left, bisect_right
from collections import Counter
from math import comb

from .instance import Instance

#: per (leases, VMs): (overhead, members as a bit mask) of the best set. Candidates
#: are indexed in name order, so for two sets of one size the one with the smaller
#: sorted names is the one holding the lowest bit of their symmetric difference.
Best = dict[tuple[int, int], tuple[int, int]]
#: the chosen classes still active: (class, how many of its members, "has been critical")
Key = tuple[tuple[int, int, bool], ...]
#: state -> (best, histogram: total overhead -> number of partial sets)
States = dict[Key, tuple[Best, dict[int, int]]]

#: states alive at once before the sweep gives up (the caller then samples)
DEFAULT_STATES = 20_000


def applies(inst: Instance) -> bool:
    """The sweep needs one bin with one dimension: an exclusive pool."""
    return len(inst.bins) == 1 and len(inst.bins[0].free) == 1 and inst.base == 0


def _better(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Lower overhead, then (equal sizes) smaller sorted names."""
    if a[0] != b[0]:
        return a[0] < b[0]
    diff = a[1] ^ b[1]
    return bool(diff & -diff & a[1])


def _merge(into: States, key: Key, best: Best, hist: dict[int, int]) -> None:
    old = into.get(key)
    if old is None:
        into[key] = (best.copy(), hist.copy())
        return
    old_best, old_hist = old
    for k, v in best.items():
        cur = old_best.get(k)
        if cur is None or _better(v, cur):
            old_best[k] = v
    for h, n in hist.items():
        old_hist[h] = old_hist.get(h, 0) + n


def _doomed(key: Key, x: int, span: list[tuple[int, int, int]], points: list[int],
            deficit: list[int]) -> bool:
    """Whether a chosen class that has not yet been critical can no longer be: at
    every later deficit in its range, the chosen candidates still active there
    already cover the deficit without one of its members (more can only be added).
    ``points`` are the breakpoints with a deficit, in order."""
    waiting = [c for c, _, flag in key if not flag]
    if not waiting:
        return False
    first = bisect_right(points, x)
    last = max(span[c][1] for c in waiting)
    later = points[first:bisect_left(points, last, first)]
    if not later:
        return True
    # least cover at each later deficit: what the chosen candidates give until they end
    cover = [0] * len(later)
    for c, k, _ in key:
        hi, w = span[c][1], k * span[c][2]
        for n, y in enumerate(later):
            if y >= hi:
                break
            cover[n] += w
    for c in waiting:
        hi, w = span[c][1], span[c][2]
        for n, y in enumerate(later):
            if y >= hi:
                return True
            if cover[n] - w < deficit[y]:
                break
        else:
            return True
    return False


def _classes(
    inst: Instance, deficit: list[int]
) -> list[tuple[int, int, int, int, int, tuple[int, ...]]]:
    """Interchangeable candidates, grouped: (lo, hi, amount, VMs, cost, members by
    name). Candidates never active at a deficit are never critical: left out."""
    groups: dict[tuple[int, int, int, int, int], list[int]] = {}
    for i, c in enumerate(inst.candidates):
        if not c.parts:
            continue
        p = c.parts[0]
        if any(deficit[x] > 0 for x in range(p.lo, p.hi)):
            groups.setdefault((p.lo, p.hi, p.amount[0], c.victim.vms, c.cost), []).append(i)
    return [(*k, tuple(m)) for k, m in sorted(groups.items())]


#: per (leases, VMs): (overhead, sorted names, member indices) of the best set
Frontier = dict[tuple[int, int], tuple[int, tuple[str, ...], tuple[int, ...]]]


def frontier(
    inst: Instance, max_states: int = DEFAULT_STATES
) -> tuple[Frontier, Counter[int]] | None:
    """Best set per (leases, VMs) and the overhead histogram over *all* minimal
    candidate sets of ``inst`` (none if the preemptor fits as it is), or ``None``
    if more than ``max_states`` states were alive at once.

    Candidates with the same range, amount, VMs and overhead are interchangeable:
    the state counts how many of each class are chosen (they are critical together
    or not at all), the histogram multiplies by the number of ways to pick them, and
    the best set of a class count takes its members with the smallest names."""
    assert applies(inst)
    free = inst.bins[0].free[0]
    deficit = [inst.need - f for f in free]
    if all(d <= 0 for d in deficit):
        return {}, Counter()
    classes = _classes(inst, deficit)
    points = [x for x, d in enumerate(deficit) if d > 0]
    span = [(lo, hi, w) for lo, hi, w, *_ in classes]
    starts: dict[int, list[int]] = {}
    ends: set[int] = set()
    for c, (lo, hi, *_) in enumerate(classes):
        starts.setdefault(lo, []).append(c)
        ends.add(hi)
    states: States = {(): ({(0, 0): (0, 0)}, {0: 1})}
    for x in range(len(free)):
        if x in ends:  # classes ending here must have been critical
            nxt: States = {}
            for key, (best, hist) in states.items():
                if all(flag or span[c][1] > x for c, _, flag in key):
                    _merge(nxt, tuple(e for e in key if span[e[0]][1] > x), best, hist)
            states = nxt
        # classes starting here: take none, one, ... or all of their members
        for c in starts.get(x, ()):
            _, _, _, vms, cost, members = classes[c]
            nxt = {}
            for key, (best, hist) in states.items():
                _merge(nxt, key, best, hist)
                for k in range(1, len(members) + 1):
                    add, mask = k * cost, sum(1 << i for i in members[:k])
                    taken: Best = {}
                    for (n, v), (h, chosen) in best.items():
                        entry = (h + add, chosen | mask)
                        cur = taken.get((n + k, v + k * vms))
                        if cur is None or _better(entry, cur):
                            taken[(n + k, v + k * vms)] = entry
                    grown = tuple(sorted((*key, (c, k, False))))
                    if _doomed(grown, x - 1, span, points, deficit):
                        # a chosen member is not needed here or later, and taking
                        # more can only make that worse
                        continue
                    ways = comb(len(members), k)
                    shifted = {h + add: n * ways for h, n in hist.items()}
                    _merge(nxt, grown, taken, shifted)
            states = nxt
            if len(states) > max_states:
                return None
        # the deficit here, who is critical for it, and who never can be (without a
        # deficit here, nothing changes: the last check already looked from here on)
        d = deficit[x]
        if d > 0:
            nxt = {}
            for key, (best, hist) in states.items():
                total = sum(k * span[c][2] for c, k, _ in key)
                if total < d:
                    continue
                key = tuple((c, k, flag or total - span[c][2] < d) for c, k, flag in key)
                if not _doomed(key, x, span, points, deficit):
                    _merge(nxt, key, best, hist)
            states = nxt
    best_all: Best = {}
    hist_all: Counter[int] = Counter()
    for key, (best, hist) in states.items():
        if all(flag for _, _, flag in key):
            for k, v in best.items():
                cur = best_all.get(k)
                if cur is None or _better(v, cur):
                    best_all[k] = v
            hist_all.update(hist)
    # with a deficit somewhere, the empty set never survives: only real sets remain
    out: Frontier = {}
    for k, (h, mask) in best_all.items():
        members = tuple(i for i in range(len(inst.candidates)) if mask >> i & 1)
        out[k] = (h, tuple(inst.candidates[i].name for i in members), members)
    return out, hist_all
