"""Per pool and node, what the running preemptable leases hold, kept as leases change.

A preemption decision on a large shared pool ranks the nodes by what all their
candidates would give back (:mod:`.preemption.focus`). Gathering every candidate
for that is one pass over every lease of the pool (24,000 on 5,000 nodes); most of
them are the pool's *running* preemptable leases, which are candidates whatever the
preemptor as long as none leaves by itself before it could vacate. This index keeps
their per-node sums as leases change, so that a decision only adds the queued
reservations in its window (:meth:`.victims.Victims.gather_summed`).

A lease is a *member* of its booking's pool when it is the lease of that name, holds
that booking in the pool's table, runs (:attr:`~.model.Phase.RUNNING`, not a queued
reservation) and is preemptable there. Per node: its members' cpu and memory, one
entry per VM; their overheads in whole microseconds (integers: the sum does not
depend on the order of addition); their number. Per pool: how many members preempt
with each (action, seconds to vacate), and the earliest end and latest start of
their bookings, which say whether the sums hold for a given window.

The index learns of changes through :func:`track_leases`: from its first read on,
every method of the lifecycle that is handed a lease marks it, and the marked leases
are looked at again before the index is read (the first read sums every pool from
scratch). A pool whose table is replaced (a shared pool switching
between counted and packed plans re-pins bookings) is summed again from scratch.
"""

from __future__ import annotations

import heapq
import inspect
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import wraps
from typing import Any

from .lease import LeaseState, PreemptCosts
from .model import Phase, PoolSpec
from .preemption.instance import to_micro
from .slots import Booking, SlotTable


def track_leases(obj: object, touched: dict[str, LeaseState]) -> None:
    """From now on, each public method of ``obj`` (the lifecycle) whose first argument
    is a lease (``st``) records it in ``touched`` once it returns (or raises). Every
    change of a lease's phase, booking or reservation is made by such a method, so
    none is missed however the lifecycle grows. Wrapped on this instance only, when
    the index is first read: a run that never reads it (no narrowed decision on a
    shared pool) pays nothing per transition (wrapping the class cost conservative
    backfilling 12% on Lublin99 100k)."""
    for name, fn in list(vars(type(obj)).items()):
        if name.startswith("_") or not inspect.isfunction(fn):
            continue
        params = list(inspect.signature(fn).parameters)
        if len(params) < 2 or params[1] != "st":
            continue

        def marked(bound: Callable[..., Any]) -> Callable[..., Any]:
            @wraps(bound)
            def call(st: LeaseState, *args: Any, **kwargs: Any) -> Any:
                try:
                    return bound(st, *args, **kwargs)
                finally:
                    touched[st.name] = st
            return call

        setattr(obj, name, marked(getattr(obj, name)))


@dataclass(slots=True)
class Member:
    booking: Booking
    #: (action, seconds from the order until it has vacated)
    key: tuple[str, float]
    #: overhead h(L) in whole microseconds
    micro: int
    #: (node, VMs on it), each node once
    spread: tuple[tuple[int, int], ...]
    serial: int


@dataclass
class PoolSums:
    """One pool's members and their per-node sums (lists indexed by node)."""

    table: object
    members: dict[str, Member] = field(default_factory=dict)
    cpu: list[int] = field(default_factory=list)
    mem: list[int] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    count: list[int] = field(default_factory=list)
    #: per node, its members' names
    on_node: list[dict[str, None]] = field(default_factory=list)
    keys: Counter[tuple[str, float]] = field(default_factory=Counter)
    #: (end, serial, name) and (-start, serial, name) of members' bookings; entries
    #: of members gone or changed stay until they reach the top
    ends: list[tuple[float, int, str]] = field(default_factory=list)
    starts: list[tuple[float, int, str]] = field(default_factory=list)

    def _grow(self, nodes: int) -> None:
        more = nodes - len(self.cpu)
        if more > 0:
            self.cpu += [0] * more
            self.mem += [0] * more
            self.cost += [0] * more
            self.count += [0] * more
            self.on_node += [{} for _ in range(more)]

    def add(self, name: str, m: Member) -> None:
        self.members[name] = m
        b = m.booking
        if m.spread:
            self._grow(max(n for n, _ in m.spread) + 1)
        c, mem = b.shape.cpu, b.shape.memory
        for node, k in m.spread:
            self.cpu[node] += k * c
            self.mem[node] += k * mem
            self.cost[node] += m.micro
            self.count[node] += 1
            self.on_node[node][name] = None
        self.keys[m.key] += 1
        heapq.heappush(self.ends, (b.end, m.serial, name))
        heapq.heappush(self.starts, (-b.start, m.serial, name))

    def remove(self, name: str) -> None:
        m = self.members.pop(name)
        b = m.booking
        c, mem = b.shape.cpu, b.shape.memory
        for node, k in m.spread:
            self.cpu[node] -= k * c
            self.mem[node] -= k * mem
            self.cost[node] -= m.micro
            self.count[node] -= 1
            del self.on_node[node][name]
        self.keys[m.key] -= 1
        if not self.keys[m.key]:
            del self.keys[m.key]

    def _top(self, heap: list[tuple[float, int, str]]) -> float | None:
        while heap:
            _, serial, name = heap[0]
            m = self.members.get(name)
            if m is not None and m.serial == serial:
                return heap[0][0]
            heapq.heappop(heap)
        return None

    def ending_by(self, x: float) -> list[str]:
        """The members whose booking ends at or before ``x``: a walk of the heap
        that stops below entries past ``x`` (each child ends no earlier than its
        parent), so it costs what it finds and the stale entries met."""
        self._compact()
        heap, members = self.ends, self.members
        out: list[str] = []
        todo = [0] if heap else []
        while todo:
            i = todo.pop()
            end, serial, name = heap[i]
            if end > x:
                continue
            m = members.get(name)
            if m is not None and m.serial == serial:
                out.append(name)
            todo.extend(j for j in (2 * i + 1, 2 * i + 2) if j < len(heap))
        return out

    def latest_start(self) -> float | None:
        top = self._top(self.starts)
        return None if top is None else -top

    def _compact(self) -> None:
        # stale entries otherwise pile up under long-lived ones
        if len(self.ends) > 2 * len(self.members) + 64:
            live = {(m.serial, n) for n, m in self.members.items()}
            self.ends = [e for e in self.ends if (e[1], e[2]) in live]
            self.starts = [e for e in self.starts if (e[1], e[2]) in live]
            heapq.heapify(self.ends)
            heapq.heapify(self.starts)


def member(st: LeaseState, slots: SlotTable, pools: Mapping[str, PoolSpec],
           leases: Mapping[str, LeaseState], reserved: Mapping[str, None],
           costs: Callable[[LeaseState, str, Any], PreemptCosts], serial: int) -> Member | None:
    """What ``st`` adds to its pool's sums, or ``None`` if it is no member: the same
    tests, in the same terms, as :meth:`.victims.Victims.gather` applies to a
    running lease."""
    b = st.booking
    name = st.name
    if (b is None or leases.get(name) is not st or name in reserved
            or st.phase != Phase.RUNNING or b.pool not in slots.pools
            or b not in slots.pools[b.pool].bookings):
        return None
    got = costs(st, b.pool, pools[b.pool].overhead)
    if not got:
        return None
    spread: dict[int, int] = {}
    for node in b.nodes or ():
        spread[node] = spread.get(node, 0) + 1
    return Member(b, (got[0], got[1]), to_micro(got[2]), tuple(spread.items()),
                  serial)


class Index:
    """The :class:`PoolSums` of every pool, brought up to date when read."""

    def __init__(self, slots: SlotTable, pools: Mapping[str, PoolSpec],
                 leases: Mapping[str, LeaseState], reserved: Mapping[str, None],
                 watched: object,
                 costs: Callable[[LeaseState, str, Any], PreemptCosts]) -> None:
        self._slots, self._pools, self._leases, self._reserved = slots, pools, leases, reserved
        #: the lifecycle, whose transitions mark leases in ``_touched`` once watched
        self._watched: object | None = watched
        self._touched: dict[str, LeaseState] = {}
        self._costs = costs
        self._sums: dict[str, PoolSums] = {}
        #: which pool each member is summed in
        self._where: dict[str, str] = {}
        self._serial = 0

    def sums(self, pool_name: str) -> PoolSums:
        """The pool's sums, with every lease changed since the last read looked at again."""
        if self._watched is not None:  # the first read: watch from now on
            track_leases(self._watched, self._touched)
            self._watched = None
        table = getattr(self._slots.pools[pool_name], "table", self._slots.pools[pool_name])
        got = self._sums.get(pool_name)
        if got is None or got.table is not table:
            self._rescan(pool_name, table)
        touched = self._touched
        while touched:
            _, st = touched.popitem()
            self._refresh(st)
        return self._sums[pool_name]

    def _rescan(self, pool_name: str, table: object) -> None:
        for name in [n for n, p in self._where.items() if p == pool_name]:
            del self._where[name]
        self._sums[pool_name] = PoolSums(table)
        for st in self._leases.values():
            if st.booking is not None and st.booking.pool == pool_name:
                self._refresh(st)

    def _refresh(self, st: LeaseState) -> None:
        name = st.name
        was = self._where.pop(name, None)
        if was is not None:
            self._sums[was].remove(name)
        self._serial += 1
        m = member(st, self._slots, self._pools, self._leases, self._reserved, self._costs,
                   self._serial)
        if m is None:
            return
        sums = self._sums.get(m.booking.pool)
        if sums is None:  # a pool not read yet: summed whole when it is
            return
        sums.add(name, m)
        self._where[name] = m.booking.pool
