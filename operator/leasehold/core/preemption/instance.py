"""A preemption problem, abstracted from the slot table.

The preemptor needs ``need`` VMs of one shape on one pool throughout a window
``W = [t, t + d + Δ)`` (``Δ`` covers the longest vacate delay of any candidate, so
whichever set is chosen, the preemptor's real booking ``[t + Δ(C), t + Δ(C) + d)``
lies inside ``W``). The pool is split into *bins*:

* an exclusive pool (one VM per node), and a shared pool while it is counted (its
  bookings all of the preemptor's shape: :mod:`..slots.shared`), is one bin whose
  only dimension is the count of free slots (the slot table's free-slot profile);
* a shared pool that is packed has one bin per node that some candidate occupies,
  with two dimensions, free cpu and free memory, and one more per extended resource
  the preemptor needs (``nvidia.com/gpu``); nodes no candidate touches contribute a
  constant number of VMs (``base``).

Each bin has its own breakpoints (the instants in ``W`` where its free capacity or a
candidate's booking changes) and the free amount per dimension at each of them. A
candidate gives back, per bin, a fixed amount over a range of breakpoints: its
booking clipped to ``W``.

A bin holds ``min over dims of (least free amount over W) // per-VM demand`` VMs —
exactly what the slot table's ``fit`` computes for a fixed start — so a set ``C``
*lets the preemptor be placed* iff ``base + Σ_bins room(C) >= need``. Freeing more
never lowers any room, so feasibility is monotone: supersets of a feasible set are
feasible, and a candidate set is a feasible set none of whose proper subsets is.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from math import inf
from typing import NamedTuple

import numpy as np

from ..model import Shape
from ..profile import Profile, lows_over
from ..slots import Booking, CountedPool, PackedPool, PoolTable, SharedPool, fit_counts
from .focus import NARROW_ABOVE, kept, pick


@dataclass(frozen=True, slots=True)
class Part:
    """What a candidate gives back on one bin: ``amount`` per dimension over
    breakpoints ``[lo, hi)``."""

    bin: int
    lo: int
    hi: int
    amount: tuple[int, ...]


class Victim(NamedTuple):
    """A preemptable lease as the scheduler offers it to a policy. A named tuple:
    thousands are made per decision on a large pool, three times faster than a
    frozen dataclass."""

    name: str
    #: what preemption does to it: cancel, suspend, migrate (running) or replan (queued)
    action: str
    vms: int
    #: h(L) in seconds (000 §5)
    overhead: float
    #: when its capacity is free if it is chosen (absolute time)
    vacate: float
    #: when it started (running) or is reserved to start (queued)
    since: float
    #: submission time and order
    submitted: float
    seq: int
    #: the slot it holds (what it gives back when chosen)
    booking: Booking | None = None

    @property
    def running(self) -> bool:
        return self.action != "replan"


@dataclass(frozen=True, slots=True)
class Candidate:
    victim: Victim
    #: h(L) in whole microseconds: set overheads are sums, and integer sums are
    #: exact, so equal overheads compare equal whatever the order of addition
    cost: int
    parts: tuple[Part, ...]

    @property
    def name(self) -> str:
        return self.victim.name


@dataclass(frozen=True, slots=True)
class Bin:
    #: per dimension, the free amount at each breakpoint
    free: tuple[tuple[int, ...], ...]
    #: per dimension, what one VM of the preemptor takes (0: not limited by it)
    demand: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Instance:
    pool: str
    need: int
    #: VMs that fit on capacity no candidate touches
    base: int
    bins: tuple[Bin, ...]
    #: sorted by name: index order is name order
    candidates: tuple[Candidate, ...]
    #: when the decision is taken
    now: float = 0.0
    #: only the candidates on some nodes are here (:mod:`.focus`): the sets of this
    #: instance are candidate sets, but not all of them
    narrowed: bool = False

    def room(self, chosen: Iterable[int]) -> int:
        """How many of the preemptor's VMs fit once ``chosen`` (indices) are gone."""
        ev = Evaluator(self)
        for i in chosen:
            ev.add(i)
        return ev.total

    def feasible(self, chosen: Iterable[int]) -> bool:
        return self.room(chosen) >= self.need


def to_micro(seconds: float) -> int:
    return round(seconds * 1_000_000)


class Evaluator:
    """Incremental room: add or remove candidates, read ``total``. The policies'
    inner loop: kept plain."""

    __slots__ = ("_arrays", "_demands", "_rooms", "inst", "total")

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self._arrays = [[list(dim) for dim in b.free] for b in inst.bins]
        self._demands = [b.demand for b in inst.bins]
        self._rooms = [bin_room(arrs, b.demand)
                       for arrs, b in zip(self._arrays, inst.bins, strict=True)]
        self.total = inst.base + sum(self._rooms)

    def _apply(self, i: int, sign: int) -> None:
        arrays, rooms, demands = self._arrays, self._rooms, self._demands
        total = self.total
        for part in self.inst.candidates[i].parts:
            b, lo, hi = part.bin, part.lo, part.hi
            room = 1 << 62  # bin_room, inlined: each dimension right after its update
            for arr, amount, per_vm in zip(arrays[b], part.amount, demands[b], strict=True):
                if amount:
                    delta = sign * amount
                    for x in range(lo, hi):
                        arr[x] += delta
                if per_vm > 0:
                    low = min(arr)
                    r = low // per_vm if low > 0 else 0
                    if r < room:
                        room = r
            total += room - rooms[b]
            rooms[b] = room
        self.total = total

    def add(self, i: int) -> None:
        self._apply(i, +1)

    def remove(self, i: int) -> None:
        self._apply(i, -1)


def _narrow_one_bin(inst: Instance) -> tuple[Instance, tuple[int, ...]]:
    """A counted pool's instance is one bin: narrowing by bins would keep every
    candidate (a whole pool's leases). Its candidates instead, as many as make room
    and at least ``NARROW_TO``: by overhead per VM, then those free through the whole
    window first (the only ones that make room alone), then by name. On the scale
    benchmark's local wave (500 nodes of 4 slots, 1,100-1,800 candidates), against
    sampling the whole instance: 22-23 of the 40 locals started at once under each
    policy (8-21 before), overhead 37-44 s (39-19,603 s), 0.8 CPU s (2.6); whole
    window first instead: worse under all three."""
    cands = inst.candidates
    ev = Evaluator(inst)
    keep: list[int] = []
    for i in sorted(range(len(cands)), key=one_bin_rank(inst)):
        if ev.total >= inst.need and len(keep) >= NARROW_TO:
            break
        ev.add(i)
        keep.append(i)
    keep.sort()  # the name order is kept
    view = Instance(inst.pool, inst.need, inst.base, inst.bins,
                    tuple(cands[i] for i in keep), inst.now, inst.narrowed)
    return view, tuple(keep)


def one_bin_rank(inst: Instance) -> Callable[[int], tuple[float, bool, str]]:
    """The order in which a one-bin instance's narrowing keeps candidates, as a sort
    key over their indices: overhead per VM, then those free through the whole
    window first, then name."""
    cands, span = inst.candidates, len(inst.bins[0].free[0])

    def rank(i: int) -> tuple[float, bool, str]:
        c = cands[i]
        whole = any(p.lo == 0 and p.hi == span for p in c.parts)
        return c.cost / max(c.victim.vms, 1), not whole, c.name
    return rank


#: candidates a one-bin instance is narrowed to, past those that make room
NARROW_TO = 40


def bin_room(arrays: Sequence[Sequence[int]], demand: tuple[int, ...]) -> int:
    room = 1 << 62
    for arr, per_vm in zip(arrays, demand, strict=True):
        if per_vm > 0:
            low = min(arr)
            room = min(room, low // per_vm if low > 0 else 0)
    return room


# ---- narrowing a large instance ---------------------------------------------------------
def narrow(inst: Instance) -> tuple[Instance, tuple[int, ...]]:
    """The narrowed instance, and for each of its candidates the index it has in
    ``inst`` (ascending: the name order is kept)."""
    cands, bins = inst.candidates, inst.bins
    base_rooms = [bin_room(b.free, b.demand) for b in bins]
    missing = inst.need - inst.base - sum(base_rooms)
    if missing <= 0:
        return inst, tuple(range(len(cands)))
    if len(bins) == 1:
        return _narrow_one_bin(inst)
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


# ---- building an instance from a pool's slot table -------------------------------------
def build(
    pool: PoolTable, shape: Shape, need: int, start: float, end: float,
    victims: Sequence[Victim], now: float, narrow: bool = False,
    sums: NodeSums | None = None,
) -> Instance:
    """The instance for placing ``need`` VMs of ``shape`` on ``pool`` over
    ``[start, end)`` by preempting some of ``victims`` (each must have a booking).
    With ``narrow``, a shared pool with many victims keeps only those on the most
    promising nodes (:mod:`.focus`), before any bin is made. The nodes are ranked
    on estimates that may overstate what they free: if all the kept victims
    together would not make room, the full instance is built after all (and the
    policy narrows it on exact figures), so narrowing never loses a preemption.
    ``sums``, if given, are the :class:`NodeSums` of ``victims`` on the packed
    table, kept by the gathering (:meth:`..victims.Victims.gather_summed`) so that
    the narrowed build need not go through every victim."""
    if isinstance(pool, SharedPool):
        # counted (one shape: the preemptor's) is one bin of free slots, as exact as
        # an exclusive pool's; otherwise the packed table, node by node
        pool = pool.table_for(shape)
    if isinstance(pool, CountedPool):
        if not pool.holds(shape):
            return Instance(pool.spec.name, need, 0, (), (), now)
        victims = _by_name(victims)
        bin_, parts = _exclusive_bin(pool.slots_free, start, end,
                                     [_booking(v) for v in victims])
        cands = tuple(
            Candidate(v, to_micro(v.overhead), (p,)) for v, p in zip(victims, parts, strict=True)
        )
        return Instance(pool.spec.name, need, 0, (bin_,), cands, now)
    assert isinstance(pool, PackedPool)
    inst = _shared_instance(pool, shape, need, start, end, victims, narrow, sums)
    if inst.narrowed and not inst.feasible(range(len(inst.candidates))):
        inst = _shared_instance(pool, shape, need, start, end, victims, False)
    return replace(inst, now=now)


def _booking(v: Victim) -> Booking:
    assert v.booking is not None, f"victim {v.name} offered without its booking"
    return v.booking


def _by_name(victims: Iterable[Victim]) -> list[Victim]:
    """Candidates are indexed in name order (the policies' last tie-breaker)."""
    return sorted(victims, key=lambda v: v.name)


def _breakpoints(prof_times: list[float], start: float, end: float,
                 extra: Iterable[float]) -> list[float]:
    lo = bisect_right(prof_times, start)
    hi = bisect_left(prof_times, end)
    inside = {x for x in extra if start < x < end}
    return sorted({start, *prof_times[lo:hi], *inside})


def _span(points: list[float], s: float, e: float) -> tuple[int, int]:
    """Breakpoint range covered by a booking ``[s, e)`` (points include both ends
    when they fall inside the window)."""
    lo = max(0, bisect_right(points, s) - 1)
    hi = bisect_left(points, e) if e != inf else len(points)
    return lo, hi


def _exclusive_bin(
    nodes_free: Profile, start: float, end: float, bookings: list[Booking]
) -> tuple[Bin, list[Part]]:
    points = _breakpoints(nodes_free.times, start, end,
                          (x for b in bookings for x in (b.start, b.end)))
    free = tuple(nodes_free.at(x) for x in points)
    parts = []
    for b in bookings:
        lo, hi = _span(points, b.start, b.end)
        parts.append(Part(0, lo, hi, (b.vms,)))
    return Bin((free,), (1,)), parts


def _shared_instance(
    pool: PackedPool, shape: Shape, need: int, start: float, end: float,
    victims: Sequence[Victim], narrow: bool, sums: NodeSums | None = None,
) -> Instance:
    rooms: np.ndarray | None = None
    narrowed = False
    # the node ranking estimates from cpu and memory alone: a preemptor that needs
    # extended resources (rare, and on few nodes) is given every candidate
    if narrow and len(victims) > NARROW_ABOVE and not shape.extended:
        # each node's least free cpu and memory over the window, and the room that
        # leaves: arrays, as every node of the pool is read
        lows = (np.asarray(lows_over(pool.node_cpu, start, end), dtype=np.int64),
                np.asarray(lows_over(pool.node_mem, start, end), dtype=np.int64))
        rooms = fit_counts(*lows, shape)
        missing = need - int(rooms.sum())
        narrowed = missing > 0
        if narrowed:
            # only the kept ones are sorted: on a large pool they are a handful
            if sums is None or len(sums.cpu) != pool.spec.nodes:
                sums = node_sums(pool.spec.nodes, victims)
            victims = _promising(shape, lows, rooms, sums, missing)
    victims = _by_name(victims)
    bookings = [_booking(v) for v in victims]
    on_node = _on_node(bookings)
    touched = sorted(on_node)
    index = {node: k for k, node in enumerate(touched)}
    bins: list[Bin] = []
    parts: list[list[Part]] = [[] for _ in victims]
    # a dimension per extended resource the preemptor needs: a candidate that holds
    # none of it gives none back there, so it frees no room on a node short of it
    # (a set must free every resource the preemptor lacks)
    names = [name for name, _ in shape.extended]
    demand = (shape.cpu, shape.memory, *(n for _, n in shape.extended))
    for node in touched:
        cpu, mem = pool.node_cpu[node], pool.node_mem[node]
        profs = [cpu, mem, *(_extended_profile(pool, name, node) for name in names)]
        mine = [bookings[i] for i in on_node[node]]
        points = _breakpoints(sorted({*cpu.times, *mem.times, *(
            t for p in profs[2:] for t in p.times)}), start, end,
            (x for b in mine for x in (b.start, b.end)))
        bins.append(Bin(tuple(tuple(p.at(x) for x in points) for p in profs), demand))
        for i in on_node[node]:
            b = bookings[i]
            count = (b.nodes or ()).count(node)
            lo, hi = _span(points, b.start, b.end)
            amount: tuple[int, ...] = (count * b.shape.cpu, count * b.shape.memory)
            if names:
                amount += tuple(count * b.shape.amount(name) for name in names)
            parts[i].append(Part(index[node], lo, hi, amount))
    if rooms is not None:
        base = int(rooms.sum()) - int(rooms[touched].sum())
    else:
        base = sum(pool.room(node, shape, start, end)
                   for node in range(pool.spec.nodes) if node not in index)
    cands = tuple(
        Candidate(v, to_micro(v.overhead), tuple(p)) for v, p in zip(victims, parts, strict=True)
    )
    return Instance(pool.spec.name, need, base, tuple(bins), cands, narrowed=narrowed)


def _extended_profile(pool: PackedPool, name: str, node: int) -> Profile:
    """The node's free profile of extended resource ``name`` (none: nothing free)."""
    own = pool.node_extended.get(name)
    return Profile(0) if own is None else own[node]


def _on_node(bookings: Sequence[Booking]) -> dict[int, list[int]]:
    """Per node, the bookings (indices, ascending) with VMs on it."""
    on_node: dict[int, list[int]] = {}
    for i, b in enumerate(bookings):
        for node in set(b.nodes or ()):
            on_node.setdefault(node, []).append(i)
    return on_node


@dataclass(frozen=True, slots=True)
class NodeSums:
    """Per node of a packed pool (lists indexed by node), what all the candidates
    would give back: cpu and memory, one entry per VM; overheads h(L) in whole
    microseconds (integers, so the sum does not depend on the order the candidates
    come in); how many candidates hold a VM there. What :func:`.focus.pick` ranks
    the nodes on. ``on`` gives the candidates on some nodes."""

    cpu: Sequence[int]
    mem: Sequence[int]
    cost: Sequence[int]
    count: Sequence[int]
    on: Callable[[set[int]], list[Victim]]


def node_sums(nodes: int, victims: Sequence[Victim]) -> NodeSums:
    """The :class:`NodeSums` of ``victims`` on a pool of ``nodes`` nodes: one pass
    over thousands of victims on a large pool, kept plain (numpy's conversions cost
    more than this loop here)."""
    on_node: list[list[int]] = [[] for _ in range(nodes)]
    cpu, mem, cost = [0] * nodes, [0] * nodes, [0] * nodes
    for i, v in enumerate(victims):
        b = v.booking
        assert b is not None
        h, c, m = to_micro(v.overhead), b.shape.cpu, b.shape.memory
        for node in b.nodes or ():  # one entry per VM
            mine = on_node[node]
            if not mine or mine[-1] != i:
                mine.append(i)
                cost[node] += h
            cpu[node] += c
            mem[node] += m

    def on(chosen: set[int]) -> list[Victim]:
        return [victims[i] for i in kept(chosen, on_node)]

    return NodeSums(cpu, mem, cost, list(map(len, on_node)), on)


def _promising(
    shape: Shape, lows: tuple[np.ndarray, np.ndarray], rooms: np.ndarray, sums: NodeSums,
    missing: int,
) -> list[Victim]:
    """The victims on the nodes :func:`.focus.pick` keeps, ranked on the slot
    table. The room a node would gain is estimated from its least free cpu and
    memory over the window (``lows``, per node) plus all its candidates give back
    (``sums``): as if they all ran at its busiest instant."""
    count = sums.count
    freed = fit_counts(np.asarray(sums.cpu, dtype=np.int64) + lows[0],
                       np.asarray(sums.mem, dtype=np.int64) + lows[1], shape)
    gain = np.where(np.asarray(count, dtype=np.int64) > 0, freed - rooms, 0)
    return sums.on(pick(gain, sums.cost, count, missing))
