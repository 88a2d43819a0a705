"""Candidate sets: the minimal sets of preemptable leases whose removal lets the
preemptor be placed (DESIGN §2.4), and what the set policies need to know of them.

Enumerating every minimal set is exponential in the worst case. :func:`frontier`
takes exclusive pools to the exact sweep of :mod:`.sweep`, narrows large shared
pools (:mod:`.focus`), and otherwise uses:

* exact — :func:`minimal_sets` walks the include/exclude tree of the candidates
  (largest first), cutting a branch as soon as even every undecided candidate would
  not free enough, and stopping at the first feasible set on each path (its
  supersets are not minimal). It gives up after ``budget`` tree nodes.
* sampled — :func:`sample_sets` builds minimal sets greedily from a fixed list of
  orders (cheapest first, largest first, newest first, ...). The decision is then
  marked ``exact: false``: α is the median of the sample, and the chosen set is the
  best of the sample, not necessarily of all sets.

Every set is given as the ascending tuple of its candidates' indices; since an
instance keeps its candidates sorted by name, comparing those tuples compares the
sorted name lists.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from . import focus, sweep
from .instance import Candidate, Evaluator, Instance, narrow

#: tree nodes the exact enumeration may visit per instance before it samples instead
DEFAULT_BUDGET = 20_000
#: the same for a narrowed large instance, already approximate (:mod:`.focus`)
NARROWED_BUDGET = 200
#: candidates of an instance the exact sweep is tried on; one of more is narrowed and
#: enumerated as any other pool's. A counted shared pool's instance has one
#: candidate per lease running or booked on the whole pool: a local wave on 500
#: nodes of 4 slots gave the sweep 1,100-1,800 candidates, and it took 0.8-4.6 CPU s
#: a decision to give up, or to finish (a narrowed enumeration: ~0.05 s)
SWEEP_UP_TO = 400
#: candidates beyond which the walk is not even tried (it recurses once per candidate)
MAX_DEPTH = 500


class _OverBudget(Exception):
    pass


def minimal_sets(inst: Instance, budget: int = DEFAULT_BUDGET) -> list[tuple[int, ...]] | None:
    """Every minimal candidate set of ``inst``, or ``None`` past ``budget`` nodes (or
    with more candidates than the walk may recurse: it recurses once per candidate)."""
    need, cands = inst.need, inst.candidates
    if len(cands) > MAX_DEPTH:
        return None
    every = Evaluator(inst)
    for i in range(len(cands)):
        every.add(i)
    if every.total < need:
        return []
    if inst.room(()) >= need:
        return [()]  # it fits already: the empty set is the only minimal one
    order = sorted(range(len(cands)), key=lambda i: (-cands[i].victim.vms, i))
    chosen = Evaluator(inst)
    picked: list[int] = []
    out: list[tuple[int, ...]] = []
    visits = 0

    def minimal() -> bool:
        # the last candidate added is what made the set feasible; test the others
        for j in picked[:-1]:
            chosen.remove(j)
            still = chosen.total >= need
            chosen.add(j)
            if still:
                return False
        return True

    def walk(k: int) -> None:
        nonlocal visits
        visits += 1
        if visits > budget:
            raise _OverBudget
        if chosen.total >= need:
            if minimal():
                out.append(tuple(sorted(picked)))
            return
        if k == len(order):
            return
        i = order[k]
        chosen.add(i)
        picked.append(i)
        walk(k + 1)
        picked.pop()
        chosen.remove(i)
        every.remove(i)
        if every.total >= need:
            walk(k + 1)
        every.add(i)

    try:
        walk(0)
    except _OverBudget:
        return None
    out.sort()
    return out


def minimize(inst: Instance, members: Iterable[int], drop_first: Sequence[int],
             ev: Evaluator | None = None) -> tuple[int, ...]:
    """Drop members of a feasible set, trying them in ``drop_first`` order, while
    the rest stays feasible: the result is minimal (feasibility is monotone, so a
    member that was needed when tried is still needed after later drops). ``ev``,
    if given, holds exactly ``members`` and is used up."""
    keep = set(members)
    if ev is None:
        ev = Evaluator(inst)
        for i in keep:
            ev.add(i)
    for i in drop_first:
        if i in keep:
            ev.remove(i)
            if ev.total >= inst.need:
                keep.discard(i)
            else:
                ev.add(i)
    return tuple(sorted(keep))


def take_until_fits(inst: Instance, order: Sequence[int]) -> tuple[list[int], Evaluator] | None:
    """Candidates taken in ``order`` until the preemptor fits (none if it fits
    already), with the evaluator holding them; ``None`` if even all do not do."""
    ev = Evaluator(inst)
    taken: list[int] = []
    for i in order:
        if ev.total >= inst.need:
            break
        ev.add(i)
        taken.append(i)
    if ev.total < inst.need:
        return None
    return taken, ev


def greedy(
    inst: Instance, order: Sequence[int], drop_first: Sequence[int]
) -> tuple[int, ...] | None:
    """Add candidates in ``order`` until the preemptor fits, then minimise."""
    found = take_until_fits(inst, order)
    return None if found is None else minimize(inst, found[0], drop_first, found[1])


#: a sort key of candidates: a number, then the name
SampleKey = Callable[[Candidate], tuple[float, str]]
#: the orders the sampler builds sets from: (add order, drop order) keys
_SAMPLE_ORDERS: tuple[tuple[SampleKey, SampleKey], ...] = (
    (lambda c: (c.cost, c.name), lambda c: (-c.cost, c.name)),  # cheapest in, dearest out
    (lambda c: (c.cost / c.victim.vms, c.name), lambda c: (-c.cost, c.name)),  # cheapest per VM
    (lambda c: (-c.victim.vms, c.name), lambda c: (c.victim.vms, c.name)),  # largest first
    (lambda c: (-c.victim.since, c.name), lambda c: (c.victim.since, c.name)),  # newest first
    (lambda c: (c.victim.seq, c.name), lambda c: (-c.victim.seq, c.name)),  # oldest first
    (lambda c: (0, c.name), lambda c: (0, c.name)),  # by name
)


def sample_sets(inst: Instance) -> list[tuple[int, ...]]:
    """A deterministic sample of minimal candidate sets (see the module doc)."""
    cands = inst.candidates
    idx = range(len(cands))
    found: set[tuple[int, ...]] = set()
    for add_key, drop_key in _SAMPLE_ORDERS:
        order = sorted(idx, key=lambda i: add_key(cands[i]))
        drop = sorted(idx, key=lambda i: drop_key(cands[i]))
        s = greedy(inst, order, drop)
        if s is None:
            return []  # not even all candidates together free enough
        found.add(s)
        # and with each member of that set left out in turn: neighbouring sets
        for skip in s:
            s2 = greedy(inst, [i for i in order if i != skip], drop)
            if s2 is not None:
                found.add(s2)
    return sorted(found)


# ---- what the set policies look at ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Option:
    """One candidate set with the numbers the policies compare."""

    instance: int
    members: tuple[int, ...]
    names: tuple[str, ...]
    vms: int
    cost: int  # total overhead, microseconds

    @property
    def leases(self) -> int:
        return len(self.members)


@dataclass(slots=True)
class Frontier:
    """All candidate sets of a decision, summarised: per (leases, VMs) the set of least
    overhead (then names), and how many sets have each total overhead. Every policy
    of DESIGN §2.4 is a function of these two (see the policy modules)."""

    best: dict[tuple[int, int], Option] = field(default_factory=dict)
    histogram: Counter[int] = field(default_factory=Counter)
    count: int = 0
    exact: bool = True

    def offer(self, opt: Option) -> None:
        """Keep ``opt`` if it is the best set so far of its (leases, VMs)."""
        key = (opt.leases, opt.vms)
        old = self.best.get(key)
        if old is None or (opt.cost, opt.names, opt.instance) < (old.cost, old.names, old.instance):
            self.best[key] = opt

    def add(self, opt: Option) -> None:
        """Count one more candidate set."""
        self.offer(opt)
        self.histogram[opt.cost] += 1
        self.count += 1


def option(inst: Instance, k: int, members: tuple[int, ...]) -> Option:
    cands = inst.candidates
    return Option(
        instance=k, members=members, names=tuple(cands[i].name for i in members),
        vms=sum(cands[i].victim.vms for i in members),
        cost=sum(cands[i].cost for i in members),
    )


def frontier(
    instances: Sequence[Instance], budget: int = DEFAULT_BUDGET,
    max_states: int = sweep.DEFAULT_STATES, keep: sweep.Summary = sweep.ALL,
) -> Frontier:
    """The frontier over every instance (one per pool the preemptor may use):
    exclusive pools by the sweep of :mod:`.sweep`, others by enumeration; either
    falls back to a sample past its budget."""
    out = Frontier()
    for k, inst in enumerate(instances):
        view, back = inst, None
        if inst.narrowed:
            out.exact = False
            budget = min(budget, NARROWED_BUDGET)
        if sweep.applies(inst) and len(inst.candidates) <= SWEEP_UP_TO:
            swept = sweep.frontier(inst, max_states, keep)
            if swept is not None:
                best, hist = swept
                for (_, vms), (cost, names, members) in best.items():
                    out.offer(Option(k, members, names, vms, cost))
                out.histogram.update(hist)
                out.count += sum(hist.values())
                continue
            sets = None  # the tree would be slower still: sample
        else:
            if len(inst.candidates) > focus.NARROW_ABOVE:
                view, back = narrow(inst)
                out.exact = False
                budget = min(budget, NARROWED_BUDGET)
            sets = minimal_sets(view, budget)
        if sets is None:
            out.exact = False
            sets = sample_sets(view)
        for members in sets:
            if members:  # the empty set means no preemption is needed: not a choice
                if back is not None:
                    members = tuple(back[i] for i in members)
                out.add(option(inst, k, members))
    return out
