"""Exact candidate-set frontier for an exclusive pool, by a sweep over time.

In an exclusive pool the problem is a line: at each breakpoint ``x`` of the window
the chosen candidates active at ``x`` must give back at least the deficit
``D_x = need - free_x`` nodes, and each candidate is active over one range of
breakpoints. A set is minimal iff every member is *critical* somewhere: at some
``x`` in its range, the others active there would fall short without it.

Only breakpoints with a deficit matter, and of a run of them where no candidate
starts or ends only the largest deficit does: the sweep walks those *points* (see
:func:`_line`), in time order or backwards. Its state is what the future depends
on, and nothing else:

* the *cover*: what the chosen candidates give back at each point still ahead,
  capped at the deficit plus the most one candidate active there gives back — past
  that the point is covered and nobody can be critical there, whatever is added —
  packed into one integer (:class:`_Packed`);
* the chosen classes that still have to be critical, each by the end of its range:
  of two, one ending no later and of no more nodes than the other, only that one
  (a shortfall that makes it critical makes the other critical too, before both
  ends), so the list is short and histories that differ only there merge.

At each point the classes starting there are taken (none, one, ... all of their
members), the deficit is checked, what it makes critical is struck off, what had to
be critical by now must have been, and the walk moves on. Different histories that
reach the same state are merged — what makes it fast where the include/exclude
tree of :func:`.sets.minimal_sets` visits them all. Three more things keep the
states few:

* interchangeable candidates (same range, nodes, VMs and overhead: e.g. many
  one-VM reservations re-planned at δ) form one class; the state counts how many
  of a class are chosen, since they are critical together or not at all;
* a state is dropped as soon as a chosen class can no longer become critical: at
  every point from here on, what is already chosen covers it without one of its
  members (more can only be added); or when some point ahead cannot be covered
  even by all the classes still to come;
* the sweep runs backwards when fewer classes end at the last point than start at
  the first: running leases all start at the window's start, and what is chosen
  at the first point of the walk is remembered to its end.

Each state carries what the policies need of the sets that reach it (see
:class:`.sets.Frontier`): per (leases, VMs) the least overhead and, among equals,
the smallest sorted name list, and how many sets reach it per total overhead (a
class of ``m`` with ``k`` chosen counts ``C(m, k)`` times; its best set takes the
``k`` smallest names). Merging keeps both exact: partial sets that reach one state
get the same future additions, and for two sets of equal size, comparing their
sorted names with or without a common disjoint addition gives the same answer —
the first difference is the smallest element of their symmetric difference, which
with candidates indexed in name order is the lowest bit of the XOR of two masks.
For the same reason a state's summaries need not be rewritten when it takes
members: what taking adds to every set of a summary is kept beside it as a shift
(:data:`Shift`), composed with the next, and applied only where two states meet
or at the end — most states never meet another.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from math import comb
from typing import Any

from ..model import PreemptionPolicy
from .instance import Instance

#: the best partial sets a state keeps, per slot (see :class:`Summary`):
#: (leases, VMs, overhead, members as a bit mask). Candidates are indexed in name
#: order, so of two sets of one size the one with the smaller sorted names is the
#: one holding the lowest bit of their symmetric difference.
Entry = tuple[int, int, int, int]
Best = dict[object, Entry]
#: chosen classes that have not been critical yet: (point they must be by, nodes
#: of one member), none implied by another (see :func:`_pending`): by point
#: ascending, nodes descending
Waiting = tuple[tuple[int, int], ...]
#: what the future of a state depends on: the cover (see :class:`_Line`) and what
#: is waiting to be critical
Key = tuple[int, Waiting]
#: what taking members adds to every partial set of a summary, not yet applied:
#: (leases, VMs, overhead, members as a bit mask, ways to choose them)
Shift = tuple[int, int, int, int, int]
#: state -> [best, histogram: total overhead -> number of partial sets, whether
#: the two are this state's own (else shared with another state: copy to change),
#: the shift still to apply to both (None: none)]. A list, not a class: the sweep
#: makes and merges hundreds of thousands of them
States = dict[Key, list[Any]]
#: per (leases, VMs): (overhead, sorted names, member indices) of the best set
Frontier = dict[tuple[int, int], tuple[int, tuple[str, ...], tuple[int, ...]]]
#: a class of interchangeable candidates: (start, end, nodes, VMs, overhead, members)
Class = tuple[int, int, int, int, int, tuple[int, ...]]

#: states alive at once before the sweep gives up (the caller then samples)
DEFAULT_STATES = 20_000
#: summary entries (best sets and histogram bins, over all states alive at once)
#: before the sweep gives up. The state bound alone does not bound memory: with
#: overheads of many distinct values each state's histogram has a bin per distinct
#: total, and 20,000 states of tens of thousands of bins each took over 20 GB
#: (003-duration at 900 s, a queue of thousands of leases)
DEFAULT_ENTRIES = 2_000_000


class _TooLarge(Exception):
    """The summaries outgrew their budget: the sweep gives up."""


def applies(inst: Instance) -> bool:
    """The sweep needs one bin with one dimension: an exclusive pool."""
    return len(inst.bins) == 1 and len(inst.bins[0].free) == 1 and inst.base == 0


@dataclass(frozen=True, slots=True)
class Summary:
    """What a state keeps of the partial sets that reach it, by what the policy asks
    (two partial sets in one state get the same future additions, so their order
    under any ranking never changes): per ``slot(leases, VMs)`` the best set by
    ``order`` (ties, always: smaller sorted names), and, with ``histogram``, how many
    sets reach it per total overhead (else only how many, under overhead 0)."""

    slot: Callable[[int, int], object]
    order: Callable[[Entry], tuple[int, ...]]
    histogram: bool


#: everything the policies could ask: per (leases, VMs) the least overhead, and the
#: overhead histogram (the frontier of :class:`.sets.Frontier`)
ALL = Summary(lambda n, v: (n, v), lambda e: (e[2],), True)
#: a threshold policy (MOML): per number of leases the least overhead, and the
#: histogram, for α
_THRESHOLD = Summary(lambda n, v: n, lambda e: (e[2],), True)


def summary(policy: PreemptionPolicy) -> Summary:
    """What the sweep keeps for a set policy: the best set by its ranking and the
    count — or, for a threshold policy, what α and the ranking among the sets under
    it need."""
    if policy.threshold:
        return _THRESHOLD
    order = policy.order
    assert order is not None, f"{policy.name} is not a set policy"
    return Summary(lambda n, v: 0, order, False)


def _better(a: Entry, b: Entry, order: Callable[[Entry], tuple[int, ...]]) -> bool:
    ka, kb = order(a), order(b)
    if ka != kb:
        return ka < kb
    diff = a[3] ^ b[3]  # equal keys mean equal sizes: the smaller names win
    return bool(diff & -diff & a[3])


def _apply(best: Best, hist: dict[int, int], shift: Shift, keep: Summary
           ) -> tuple[Best, dict[int, int]]:
    """The summaries with ``shift`` applied: every partial set gains the same
    members, so the best of a slot stays the best (uniform additions keep every
    ranking, and a common disjoint mask keeps the name order); counts multiply."""
    slot, order = keep.slot, keep.order
    dn, dv, dh, dmask, ways = shift
    out: Best = {}
    for n, v, h, chosen in best.values():
        entry = (n + dn, v + dv, h + dh, chosen | dmask)
        key = slot(entry[0], entry[1])
        cur = out.get(key)
        if cur is None or _better(entry, cur, order):
            out[key] = entry
    if not keep.histogram:  # the count is all that is kept: under one key
        return out, {h: n * ways for h, n in hist.items()}
    return out, {h + dh: n * ways for h, n in hist.items()}


def _merge(into: States, key: Key, best: Best, hist: dict[int, int], shift: Shift | None,
           keep: Summary) -> None:
    """Fold ``best`` and ``hist`` (``shift`` still to apply) into state ``key`` of
    ``into``. Summaries are shared between states, and shifts left pending, until
    two states meet: only then are they applied, and one copy owned. Most states
    never meet another, so most shifts are never applied but composed."""
    old = into.get(key)
    if old is None:
        into[key] = [best, hist, False, shift]
        return
    old_best, old_hist, owned, old_shift = old
    if old_shift is not None:
        old_best, old_hist = _apply(old_best, old_hist, old_shift, keep)
    elif not owned:
        old_best, old_hist = old_best.copy(), old_hist.copy()
    old[:] = old_best, old_hist, True, None
    if shift is not None:
        best, hist = _apply(best, hist, shift, keep)
    order = keep.order
    for k, v in best.items():
        cur = old_best.get(k)
        if cur is None or _better(v, cur, order):
            old_best[k] = v
    for h, n in hist.items():
        old_hist[h] = old_hist.get(h, 0) + n


def _taking(shift: Shift | None, cls: Class, k: int, masks: list[int]) -> Shift:
    """``shift`` followed by taking ``k`` members of ``cls`` (``masks[k]``: its
    ``k`` smallest names), ``C(m, k)`` ways."""
    _, _, _, vms, cost, members = cls
    ways = comb(len(members), k)
    if shift is None:
        return k, k * vms, k * cost, masks[k], ways
    dn, dv, dh, dmask, w = shift
    return dn + k, dv + k * vms, dh + k * cost, dmask | masks[k], w * ways


@dataclass(frozen=True, slots=True)
class _Line:
    """The instance on the axis the sweep walks: only breakpoints with a deficit,
    in sweep order (time order or its reverse), and every cover as one packed int.

    A cover ``g`` holds, per remaining point ``y`` (point ``p`` in the lowest field
    while the sweep is at ``p``), what the chosen candidates give back there, capped
    at ``cap[y] = D[y] + (most nodes of one candidate active at y)``: past that,
    ``y`` is covered and nobody active there can be critical for it, whatever is
    added, so histories that differ only above the cap merge. Fields are ``bits``
    wide with a guard bit on top, which lets one subtraction compare every field
    at once (SWAR) without borrows crossing fields."""

    deficit: tuple[int, ...]
    classes: tuple[Class, ...]
    bits: int

    @property
    def points(self) -> int:
        return len(self.deficit)


def _line(inst: Instance, deficit: list[int]) -> _Line:
    """Candidates never active at a deficit are never critical: left out.
    Interchangeable candidates (same range on the axis, nodes, VMs, overhead) form
    one class. The sweep runs backwards when that makes fewer classes start at its
    first point: everything chosen there is remembered to the end, while choices
    spread over the walk let earlier ones be forgotten as they stop covering."""
    points = [x for x, d in enumerate(deficit) if d > 0]
    n = len(points)
    groups: dict[tuple[int, int, int, int, int], list[int]] = {}
    for i, c in enumerate(inst.candidates):
        if not c.parts:
            continue
        p = c.parts[0]
        a, b = bisect_left(points, p.lo), bisect_left(points, p.hi)
        if a < b:
            groups.setdefault((a, b, p.amount[0], c.victim.vms, c.cost), []).append(i)
    # between two points where no class starts or ends, every cover is the same:
    # one point of the largest deficit stands for them all
    cuts = sorted({0, n, *(a for a, *_ in groups), *(b for _, b, *_ in groups)})
    at = {x: j for j, x in enumerate(cuts)}
    deficits = [max(deficit[x] for x in points[lo:hi]) for lo, hi in pairwise(cuts)]
    groups = {(at[a], at[b], w, v, h): m for (a, b, w, v, h), m in groups.items()}
    n = len(deficits)
    forward = sum(a == 0 for a, *_ in groups) <= sum(b == n for _, b, *_ in groups)
    if not forward:
        deficits.reverse()
        groups = {(n - b, n - a, w, v, h): m for (a, b, w, v, h), m in groups.items()}
    classes = tuple((*k, tuple(m)) for k, m in sorted(groups.items()))
    widest = max((w for _, _, w, *_ in classes), default=0)
    most = max((w * len(m) for _, _, w, _, _, m in classes), default=0)
    top = max(deficits) + widest
    return _Line(tuple(deficits), classes, max(top + most, 2 * top).bit_length() + 1)


class _Packed:
    """Per point ``p``: the constants the sweep compares a cover with, as packed
    ints over the points from ``p`` on."""

    def __init__(self, line: _Line) -> None:
        n, bits, d = line.points, line.bits, line.deficit
        self.bits, self.low = bits, (1 << bits) - 1

        def pack(values: list[int]) -> int:
            return sum(v << (bits * j) for j, v in enumerate(values))

        def from_each(whole: int) -> list[int]:
            return [whole >> (bits * p) for p in range(n + 1)]

        widest = [0] * n
        by_start: dict[int, list[Class]] = {}
        for cls in line.classes:
            a, b, w = cls[0], cls[1], cls[2]
            by_start.setdefault(a, []).append(cls)
            for y in range(a, b):
                widest[y] = max(widest[y], w)
        self.deficit = from_each(pack(list(d)))
        self.cap = from_each(pack([d[y] + widest[y] for y in range(n)]))
        self.guards = from_each(pack([1 << (bits - 1)] * n))
        # what the classes starting at p or later can give back at each point from
        # p on; compared only with the deficit, so capped there to fit the field
        self.reach = [0] * (n + 1)
        most = [0] * n
        for p in range(n - 1, -1, -1):
            for a, b, w, _, _, members in by_start.get(p, ()):
                for y in range(a, b):
                    most[y] += w * len(members)
            self.reach[p] = pack([min(most[y], d[y]) for y in range(p, n)])
        self._ones = [pack([1] * r) for r in range(n + 1)]
        self._tests: dict[tuple[int, int, int], tuple[int, int]] = {}

    def add(self, g: int, p: int, b: int, amount: int) -> int:
        """``g`` plus ``amount`` on points ``[p, b)``, capped."""
        g += amount * self._ones[b - p]
        cap, guards = self.cap[p], self.guards[p]
        fits = (((cap | guards) - g) & guards) >> (self.bits - 1)  # 1 where g <= cap
        keep = fits * self.low
        return (g & keep) | (cap & ~keep)

    def can_be_critical(self, g: int, p: int, b: int, w: int) -> bool:
        """Whether at some point of ``[p, b)`` the cover less ``w`` falls short."""
        test = self._tests.get((p, b, w))
        if test is None:
            r = b - p
            span = self._ones[r]
            guards = self.guards[p] & (span << (self.bits - 1))
            wanted = (self.deficit[p] & (span * self.low)) + w * span
            test = self._tests[(p, b, w)] = (guards, wanted)
        guards, wanted = test
        return ((g | guards) - wanted) & guards != guards


def _pending(waiting: Waiting, b: int, w: int) -> Waiting:
    """Add a chosen class of ``w`` nodes a member that still has to be critical
    before point ``b``. Every waiting class is active from the current point to its
    own deadline, so of two with deadlines ``b1 <= b2`` and nodes ``w1 <= w2`` the
    second is critical wherever the first is (a shortfall without ``w1`` is one
    without ``w2``), at a point before both deadlines: only the first is kept. The
    tuple stays sorted by deadline, nodes falling: fewer distinct states merge."""
    out = []
    for e in waiting:
        if e[0] <= b and e[1] <= w:
            return waiting  # the new one is critical whenever e is
        if not (e[0] >= b and e[1] >= w):  # else e is critical whenever the new one is
            out.append(e)
    out.append((b, w))
    out.sort()
    return tuple(out)


def frontier(
    inst: Instance, max_states: int = DEFAULT_STATES, keep: Summary = ALL,
    max_entries: int = DEFAULT_ENTRIES,
) -> tuple[Frontier, Counter[int]] | None:
    """The best sets (what ``keep`` keeps, see :class:`Summary`) and the overhead
    histogram — without one, only the count, under overhead 0 — over *all* minimal
    candidate sets of ``inst`` (none if the preemptor fits as it is), or ``None`` if
    more than ``max_states`` states, or more than ``max_entries`` summary entries
    (a state's best sets plus its histogram's bins, summed over the states being
    made; a summary shared by two states counts twice), were alive at once."""
    try:
        return _frontier(inst, max_states, keep, max_entries)
    except _TooLarge:
        return None


def _frontier(
    inst: Instance, max_states: int, keep: Summary, max_entries: int
) -> tuple[Frontier, Counter[int]] | None:
    assert applies(inst)
    slot, order = keep.slot, keep.order
    deficit = [inst.need - f for f in inst.bins[0].free[0]]
    if all(d <= 0 for d in deficit):
        return {}, Counter()
    line = _line(inst, deficit)
    packed = _Packed(line)
    starts: dict[int, list[Class]] = {}
    for cls in line.classes:
        starts.setdefault(cls[0], []).append(cls)
    states: States = {(0, ()): [{slot(0, 0): (0, 0, 0, 0)}, {0: 1}, True, None]}
    add, critical = packed.add, packed.can_be_critical
    low, bits = packed.low, line.bits

    # the entries of the states being made (``nxt`` or ``settled``: one at a time);
    # a States dict only grows while it is made, so checking as it grows gives up
    # exactly when checking at the end would, before the memory is taken
    entries = [0]

    def put(into: States, key: Key, best: Best, hist: dict[int, int],
            shift: Shift | None) -> None:
        old = into.get(key)
        if old is None:  # by far the most common case: no call
            into[key] = [best, hist, False, shift]
            entries[0] += len(best) + len(hist)
        else:
            size = len(old[0]) + len(old[1])
            _merge(into, key, best, hist, shift, keep)
            entries[0] += len(old[0]) + len(old[1]) - size
        if entries[0] > max_entries:
            raise _TooLarge

    for p, d in enumerate(line.deficit):
        # the deficit here, who is critical for it, what must have been by now;
        # then the walk moves on and the states that cannot end well are dropped.
        # Done as each state of the last class here is made (no dict in between)
        q = p + 1
        guards, ahead, reach = packed.guards[q], packed.deficit[q], packed.reach[q]
        settled: States = {}
        entries[0] = 0

        def settle(g: int, waiting: Waiting, best: Best, hist: dict[int, int],
                   shift: Shift | None, d: int = d, q: int = q, guards: int = guards,
                   ahead: int = ahead, reach: int = reach, settled: States = settled) -> None:
            slack = (g & low) - d
            if slack < 0:
                return
            if waiting:
                # those critical here are struck off: the ones of more nodes than
                # the slack, a prefix (nodes fall along the antichain)
                i = 0
                while i < len(waiting) and waiting[i][1] > slack:
                    i += 1
                if i:
                    waiting = waiting[i:]
                if waiting and waiting[0][0] == q:
                    return
            g >>= bits
            # every point ahead can still be covered by the classes still to come
            # (one SWAR comparison: a field borrows its guard bit where it falls short)
            if ((g + reach) | guards) - ahead & guards != guards:
                return
            for e in waiting:
                if not critical(g, q, e[0], e[1]):
                    return
            put(settled, (g, waiting), best, hist, shift)

        here = starts.get(p, ())
        if not here:
            for (g, waiting), (best, hist, _, shift) in states.items():
                settle(g, waiting, best, hist, shift)
        # classes starting here: take none, one, ... or all of their members
        for j, cls in enumerate(here):
            b, w, members = cls[1], cls[2], cls[5]
            final = j == len(here) - 1
            masks = [0]
            for i in members:
                masks.append(masks[-1] | 1 << i)
            nxt: States = {}
            entries[0] = 0
            for (g, waiting), (best, hist, _, shift) in states.items():
                if final:
                    settle(g, waiting, best, hist, shift)
                else:
                    put(nxt, (g, waiting), best, hist, shift)
                for k in range(1, len(members) + 1):
                    g = add(g, p, b, w)
                    grown = _pending(waiting, b, w)
                    # a chosen member that is not needed here or later makes the
                    # set not minimal, and taking more can only make that worse
                    for e in grown:
                        if not critical(g, p, e[0], e[1]):
                            break
                    else:
                        taken = _taking(shift, cls, k, masks)
                        if final:
                            settle(g, grown, best, hist, taken)
                        else:
                            put(nxt, (g, grown), best, hist, taken)
                        continue
                    break
            if not final:
                states = nxt
                if len(states) > max_states:
                    return None
        states = settled
        if len(states) > max_states:
            return None
    best_all: Best = {}
    hist_all: Counter[int] = Counter()
    for (_, waiting), (best, hist, _, shift) in states.items():
        if not waiting:
            if shift is not None:
                best, hist = _apply(best, hist, shift, keep)
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
