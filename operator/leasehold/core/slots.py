"""The slot table: per-pool capacity over time (004 §3.1–3.2, DESIGN §2.2).

A *booking* is one lease's claim on a pool for ``[start, end)``: ``vms`` VMs of one
shape, split into labelled segments (``run``, ``resume``, ``suspend``, ``migrate``
...). Overheads are segments of the booking, so they hold capacity exactly like the
run itself, as Haizea schedules them.

Two pool kinds share one interface:

* :class:`ExclusivePool` — every VM takes a whole node (the papers' model). Future
  bookings are *counted* against a free-node profile and get concrete nodes only when
  they start. Counting is exact here: with whole-node VMs and fixed intervals, a
  count that never exceeds the pool at any instant can always be realised by giving
  each starting lease any of the nodes free at its start.
* :class:`SharedPool` — nodes with cpu and memory capacity hold several VMs; every
  booking is placed on concrete nodes when it is made, and capacity is checked per
  node and per resource at every instant of the window.

Node choice is deterministic: lowest node index first (exclusive), first fit by
node index, filling a node before moving on (shared).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from heapq import heappop, heappush
from math import inf

from .model import PoolSpec, Shape

#: labelled parts of a booking: (kind, start, end), e.g. ("resume", 0, 126.1)
Segments = tuple[tuple[str, float, float], ...]


@dataclass(slots=True)
class Booking:
    lease: str
    start: float
    end: float
    vms: int
    shape: Shape
    #: node index per VM (repeats allowed in shared pools); ``None`` while an
    #: exclusive-pool booking has not started.
    nodes: tuple[int, ...] | None
    segments: Segments


class PoolTable(ABC):
    """Interface of a pool's slot table (see the module docstring)."""

    spec: PoolSpec

    def __init__(self, spec: PoolSpec) -> None:
        self.spec = spec
        self.bookings: dict[str, Booking] = {}

    # -- queries -------------------------------------------------------------------
    @abstractmethod
    def max_vms(self, shape: Shape) -> int:
        """How many VMs of ``shape`` the empty pool holds at once."""
        ...

    @abstractmethod
    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        """Earliest ``T`` in ``[earliest, latest_start]`` with room for ``[T, T+duration)``."""
        ...

    def free_now(self, shape: Shape, t: float) -> float:
        """An upper bound on the VMs of ``shape`` that can start at ``t`` (cheap)."""
        return inf

    def move_earlier(self, lease: str, earliest: float) -> float | None:
        """Compression: the earliest start in ``[earliest, current start)`` for a
        booking, given every other booking. If there is one, the booking is removed
        (the caller books the lease again there) and the start returned; if not,
        nothing changes and ``None`` is returned."""
        old = self.unbook(lease)
        t = self.fit(old.vms, old.shape, old.end - old.start, earliest, old.start)
        if t is None or t >= old.start:
            self.book(old)
            return None
        return t

    @abstractmethod
    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        """How long from ``t`` the VMs fit without moving any booking (0 if not now)."""
        ...

    def overlapping(self, t: float, duration: float) -> list[str]:
        """Leases whose bookings overlap ``[t, t+duration)``: what blocks a placement there."""
        end = t + duration
        return sorted(b.lease for b in self.bookings.values() if b.start < end and b.end > t)

    # -- updates -------------------------------------------------------------------
    @abstractmethod
    def book(self, booking: Booking) -> None:
        ...

    @abstractmethod
    def unbook(self, lease: str) -> Booking:
        ...

    def rename(self, lease: str, key: str) -> None:
        b = self.bookings.pop(lease)
        b.lease = key
        self.bookings[key] = b

    @abstractmethod
    def occupy(self, lease: str, now: float) -> tuple[int, ...]:
        """The booking's lease starts now: give it concrete nodes."""
        ...

    @abstractmethod
    def prune(self, now: float) -> None:
        """Forget history before ``now`` (bookings that ended are already unbooked)."""

    def truncate(self, lease: str, end: float, segments: Segments) -> None:
        """Shorten a booking (early end, suspension): capacity after ``end`` is freed."""
        b = self.unbook(lease)
        b.end = end
        b.segments = segments
        self.book(b)

    # -- checking ------------------------------------------------------------------
    @abstractmethod
    def usage_violations(self) -> list[str]:
        """Every instant and node where bookings exceed capacity (empty when sound)."""
        ...


def _fit_count(cpu: int, memory: int, shape: Shape) -> int:
    """How many VMs of ``shape`` fit in ``cpu`` millicores and ``memory`` MiB."""
    if cpu < 0 or memory < 0:
        return 0
    by_cpu = cpu // shape.cpu if shape.cpu > 0 else 1 << 30
    by_mem = memory // shape.memory if shape.memory > 0 else 1 << 30
    return min(by_cpu, by_mem)


def _vms_per_node(spec: PoolSpec, shape: Shape) -> int:
    return _fit_count(spec.cpu, spec.memory, shape)


class ExclusivePool(PoolTable):
    """Whole-node VMs: a free-node-count profile plus an owner per node."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        # free[i] nodes are free during [times[i], times[i+1]); the last segment is open.
        self.times: list[float] = [-inf]
        self.free: list[int] = [spec.nodes]
        self.owner: list[str | None] = [None] * spec.nodes
        self._idle: list[int] = list(range(spec.nodes))  # heap of unowned nodes
        self._horizon = -inf  # history before this was pruned

    def _holds(self, shape: Shape) -> bool:
        return shape.cpu <= self.spec.cpu and shape.memory <= self.spec.memory

    def max_vms(self, shape: Shape) -> int:
        return self.spec.nodes if self._holds(shape) else 0

    def free_now(self, shape: Shape, t: float) -> float:
        return self.free[bisect_right(self.times, t) - 1]

    def move_earlier(self, lease: str, earliest: float) -> float | None:
        # Without touching the profile: once the window reaches the booking's own
        # start, the rest of it lies inside capacity the booking itself holds, so a
        # start T qualifies as soon as [T, min(T + length, start)) has the nodes.
        b = self.bookings[lease]
        start, vms = b.start, b.vms
        length = b.end - start
        if earliest >= start:
            return None
        times, free = self.times, self.free
        n = len(times)
        i = bisect_right(times, earliest) - 1
        # usual case, decided in C: no segment before the start has room at all
        if max(free[i:bisect_left(times, start)]) < vms:
            return None
        cand = earliest
        while True:
            if free[i] < vms:
                i += 1
                if i == n or times[i] >= start:
                    return None
                cand = times[i]
                continue
            i += 1
            end = cand + length
            if i == n or times[i] >= (end if end < start else start):
                break
        self.unbook(lease)
        return cand

    def _split(self, t: float) -> int:
        times = self.times
        i = bisect_right(times, t) - 1
        if times[i] == t:
            return i
        times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def _add(self, start: float, end: float, delta: int) -> None:
        i = self._split(start)
        j = self._split(end) if end != inf else len(self.times)
        free = self.free
        for k in range(i, j):
            free[k] += delta
        # merge equal neighbours at both edges so the profile stays short
        times = self.times
        if j < len(times) and free[j] == free[j - 1]:
            del times[j], free[j]
        if i > 0 and free[i] == free[i - 1]:
            del times[i], free[i]

    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        if vms > self.spec.nodes or not self._holds(shape):
            return None
        times, free = self.times, self.free
        n = len(times)
        i = bisect_right(times, earliest) - 1
        cand = earliest
        while True:
            if free[i] < vms:
                i += 1
                if i == n:
                    return None
                cand = times[i]
                if cand > latest_start:
                    return None
                continue
            i += 1
            if i == n or times[i] >= cand + duration:
                return cand

    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        if not self._holds(shape):
            return 0.0
        times, free = self.times, self.free
        i = bisect_right(times, t) - 1
        if free[i] < vms:
            return 0.0
        for k in range(i + 1, len(times)):
            if free[k] < vms:
                return times[k] - t
        return inf

    def book(self, booking: Booking) -> None:
        self.bookings[booking.lease] = booking
        self._add(booking.start, booking.end, -booking.vms)

    def unbook(self, lease: str) -> Booking:
        b = self.bookings.pop(lease)
        self._add(b.start, b.end, b.vms)
        if b.nodes is not None:
            owner, idle = self.owner, self._idle
            for i in b.nodes:
                owner[i] = None
                heappush(idle, i)
        return b

    def truncate(self, lease: str, end: float, segments: Segments) -> None:
        b = self.bookings[lease]
        if end < b.end:
            self._add(end, b.end, b.vms)
        elif end > b.end:
            self._add(b.end, end, -b.vms)
        b.end = end
        b.segments = segments

    def rename(self, lease: str, key: str) -> None:
        super().rename(lease, key)
        for i in self.bookings[key].nodes or ():
            self.owner[i] = key

    def occupy(self, lease: str, now: float) -> tuple[int, ...]:
        b = self.bookings[lease]
        if b.nodes is not None:
            return b.nodes
        owner, idle = self.owner, self._idle
        if len(idle) < b.vms:  # the profile guarantees room; reaching here is a bug
            raise RuntimeError(
                f"slot table inconsistent: no {b.vms} free nodes for {lease} at {now}"
            )
        picked = [heappop(idle) for _ in range(b.vms)]
        for i in picked:
            owner[i] = lease
        b.nodes = tuple(picked)
        return b.nodes

    def prune(self, now: float) -> None:
        self._horizon = now
        i = bisect_right(self.times, now) - 1
        if i > 0:
            del self.times[:i]
            del self.free[:i]
            # keep the -inf sentinel so bisect never falls off the left edge
            self.times[0] = -inf

    def usage_violations(self) -> list[str]:
        out = [
            f"{self.spec.name}: {-f} nodes over capacity from t={t}"
            for t, f in zip(self.times, self.free, strict=True) if f < 0
        ]
        # the profile must equal a recount of the bookings at every boundary
        # from the pruning horizon on (the past is forgotten on purpose)
        points = sorted({*self.times[1:], *(t for b in self.bookings.values()
                                            for t in (b.start, b.end) if t != inf)})
        for p in [self._horizon, *points]:
            if p < self._horizon or p == -inf:
                continue
            have = self.free[bisect_right(self.times, p) - 1]
            want = self.spec.nodes - sum(
                b.vms for b in self.bookings.values() if b.start <= p < b.end
            )
            if have != want:
                out.append(
                    f"{self.spec.name}: profile says {have} free at t={p}, bookings {want}"
                )
        held = [o for o in self.owner if o is not None]
        for lease in sorted(set(held)):
            b = self.bookings.get(lease)
            if b is None or b.nodes is None or held.count(lease) != b.vms:
                out.append(f"{self.spec.name}: node ownership of {lease} inconsistent")
        return out


@dataclass(slots=True)
class _NodeSlot:
    start: float
    end: float
    cpu: int
    memory: int
    lease: str


class SharedPool(PoolTable):
    """Nodes with cpu/memory capacity holding several VMs; bookings on concrete nodes."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        self.per_node: list[list[_NodeSlot]] = [[] for _ in range(spec.nodes)]
        self._ends: list[float] = []  # sorted booking ends: candidate start times

    def max_vms(self, shape: Shape) -> int:
        return self.spec.nodes * _vms_per_node(self.spec, shape)

    def _room(self, node: int, shape: Shape, start: float, end: float) -> int:
        """VMs of ``shape`` that fit on ``node`` throughout ``[start, end)``."""
        slots = [s for s in self.per_node[node] if s.start < end and s.end > start]
        cap_cpu, cap_mem = self.spec.cpu, self.spec.memory
        if not slots:
            return _vms_per_node(self.spec, shape)
        # usage only rises at a slot start (or at the window start)
        points = sorted({start, *(s.start for s in slots if s.start > start)})
        best = 1 << 30
        for p in points:
            cpu = mem = 0
            for s in slots:
                if s.start <= p < s.end:
                    cpu += s.cpu
                    mem += s.memory
            room = _fit_count(cap_cpu - cpu, cap_mem - mem, shape)
            best = min(best, room)
            if best == 0:
                break
        return best

    def _candidates(self, earliest: float) -> Iterator[float]:
        yield earliest
        ends = self._ends
        last = earliest
        for t in ends[bisect_right(ends, earliest):]:
            if t != last:
                last = t
                yield t

    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        if vms > self.max_vms(shape):
            return None
        for t in self._candidates(earliest):
            if t > latest_start:
                return None
            total = 0
            for node in range(self.spec.nodes):
                total += self._room(node, shape, t, t + duration)
                if total >= vms:
                    return t
        return None

    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        if self.fit(vms, shape, 0.0, t, t) is None:
            return 0.0
        # the window can only end where some booking starts; the VMs must keep
        # their nodes, so test the whole span [t, q) up to the boundary after it
        slots = [s for per in self.per_node for s in per]
        bounds = sorted({x for s in slots for x in (s.start, s.end) if t < x < inf})
        for k, p in enumerate(bounds):
            if not any(s.start == p for s in slots):
                continue
            q = bounds[k + 1] if k + 1 < len(bounds) else p + 1
            if self.fit(vms, shape, q - t, t, t) is None:
                return p - t
        return inf

    def place(self, vms: int, shape: Shape, start: float, end: float) -> tuple[int, ...]:
        """Concrete nodes for a booking that :meth:`fit` said is feasible."""
        picked: list[int] = []
        for node in range(self.spec.nodes):
            room = self._room(node, shape, start, end)
            take = min(room, vms - len(picked))
            picked.extend([node] * take)
            if len(picked) == vms:
                return tuple(picked)
        raise RuntimeError(f"slot table inconsistent: no room for {vms} VMs at {start}")

    def book(self, booking: Booking) -> None:
        if booking.nodes is None:
            booking.nodes = self.place(booking.vms, booking.shape, booking.start, booking.end)
        self.bookings[booking.lease] = booking
        for node in booking.nodes:
            self.per_node[node].append(
                _NodeSlot(booking.start, booking.end, booking.shape.cpu, booking.shape.memory,
                          booking.lease)
            )
        if booking.end != inf:
            insort(self._ends, booking.end)

    def unbook(self, lease: str) -> Booking:
        b = self.bookings.pop(lease)
        for node in set(b.nodes or ()):
            self.per_node[node] = [s for s in self.per_node[node] if s.lease != lease]
        if b.end != inf:
            i = bisect_left(self._ends, b.end)
            if i < len(self._ends) and self._ends[i] == b.end:  # may have been pruned
                del self._ends[i]
        return b

    def rename(self, lease: str, key: str) -> None:
        super().rename(lease, key)
        for slots in self.per_node:
            for s in slots:
                if s.lease == lease:
                    s.lease = key

    def occupy(self, lease: str, now: float) -> tuple[int, ...]:
        nodes = self.bookings[lease].nodes
        assert nodes is not None  # shared bookings are always placed
        return nodes

    def prune(self, now: float) -> None:
        i = bisect_right(self._ends, now)
        if i:
            del self._ends[:i]

    def usage_violations(self) -> list[str]:
        out = []
        for node, slots in enumerate(self.per_node):
            for p in sorted({s.start for s in slots}):
                cpu = sum(s.cpu for s in slots if s.start <= p < s.end)
                mem = sum(s.memory for s in slots if s.start <= p < s.end)
                if cpu > self.spec.cpu or mem > self.spec.memory:
                    out.append(
                        f"{self.spec.name}-{node}: cpu {cpu}/{self.spec.cpu} "
                        f"mem {mem}/{self.spec.memory} at t={p}"
                    )
        return out


def make_pool(spec: PoolSpec) -> PoolTable:
    return ExclusivePool(spec) if spec.exclusive else SharedPool(spec)


class SlotTable:
    """All pools, and which pool holds each lease's booking."""

    def __init__(self, pools: Iterable[PoolSpec]) -> None:
        self.pools: dict[str, PoolTable] = {p.name: make_pool(p) for p in pools}
        self.where: dict[str, str] = {}

    def pool_of(self, lease: str) -> PoolTable:
        return self.pools[self.where[lease]]

    def booking(self, lease: str) -> Booking | None:
        pool = self.where.get(lease)
        return None if pool is None else self.pools[pool].bookings[lease]

    def book(self, pool: str, booking: Booking) -> None:
        self.pools[pool].book(booking)
        self.where[booking.lease] = pool

    def unbook(self, lease: str) -> Booking:
        return self.pools[self.where.pop(lease)].unbook(lease)

    def rename(self, lease: str, key: str) -> None:
        """Keep a booking under another key (a migrating lease's source nodes)."""
        pool = self.where.pop(lease)
        self.pools[pool].rename(lease, key)
        self.where[key] = pool

    def usage_violations(self) -> list[str]:
        return [v for p in self.pools.values() for v in p.usage_violations()]
