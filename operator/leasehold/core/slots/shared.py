"""Shared pools: several VMs per node, the kind every user of the operator gets.

A shared pool plans in one of two modes, by the shapes of its bookings:

* **counted** while its bookings (but :data:`.booking.DOWN`'s) are all of one VM
  shape ``S``: node ``i`` is ``fit_in(size_i, S)`` identical slots, and the pool
  is planned as :mod:`.counted` says — a free-slot profile, concrete nodes given
  only when a lease starts. Exact, and as fast as an exclusive pool;
* **packed** otherwise: :class:`.packed.PackedPool`, every booking pinned to nodes
  when it is made, cpu and memory checked per node at every instant.

Counted to packed, when a booking of another shape arrives or a query asks about
one (``fit``, ``free_window``, a preemption instance): the bookings that hold nodes
keep them, and every other one is pinned, greedily in order of start (then the
order they were booked), each to the fullest nodes with room throughout it, ties by
lowest index. Greedy by start always succeeds, for the reason counting is exact,
so no reservation moves. Packed to counted, at :meth:`SharedPool.prune` once the
bookings are of one shape again: the bookings that start after ``now`` have not
started, and lose their pins; the others keep their nodes.

A query about a shape the pool cannot hold at all (more VMs than its nodes take) is
answered without a switch, and so is a query for one start at which the counted VMs
leave too little cpu or memory in the pool as a whole, however they get their nodes
(:meth:`.counted.CountedPool.may_hold`): EASY asks its queued leases at every event
whether they fit now, and a switch there and back re-books the whole pool.
"""

from __future__ import annotations

from collections import Counter
from math import inf

from ..model import PoolSpec, Shape
from .booking import DOWN, Booking, Segments
from .counted import CountedPool
from .packed import PackedPool
from .pool import PoolTable, fit_in


class SharedPool(PoolTable):
    """The shared pool: a :class:`.counted.CountedPool` or a :class:`.packed.PackedPool`
    (``table``), switched between as the bookings' shapes say. ``bookings`` is the
    table's own (so the booking order survives a switch: a switch books them again
    in that order)."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        self.sizes = spec.sizes()
        #: the shapes of the bookings held (but DOWN's), with how many of each
        self._shapes: Counter[Shape] = Counter()
        #: the latest instant the pool was told of (prune, occupy); -inf: none yet
        self._now = -inf
        #: a booking given nodes that may not have started was counted (only a table
        #: restored from a snapshot before its first prune): the next prune re-counts
        self._recount = False
        self.table: CountedPool | PackedPool = self._counted(None)
        self.bookings = self.table.bookings

    # -- modes ---------------------------------------------------------------------
    @property
    def counted(self) -> bool:
        return isinstance(self.table, CountedPool)

    def _counted(self, shape: Shape | None) -> CountedPool:
        """An empty counted table for ``shape`` (``None``: none yet, no slots)."""
        slots = [0 if shape is None else fit_in(s, shape) for s in self.sizes]
        return CountedPool(self.spec, shape, slots)

    def _rebook(self, table: CountedPool | PackedPool) -> None:
        for b in self.bookings:
            table.book(b)
        self.table = table
        self.bookings = table.bookings

    def table_for(self, shape: Shape) -> CountedPool | PackedPool:
        """The table that answers for ``shape``: the counted one when it counts that
        shape (re-counted for it when the pool holds no other), else the packed one
        (switched to)."""
        table = self.table
        if isinstance(table, CountedPool) and table.shape != shape:
            if self._shapes:
                self._to_packed()
            else:
                self._rebook(self._counted(shape))
        return self.table

    def _to_packed(self) -> None:
        """Pin every booking that holds no nodes, greedily by start."""
        packed = PackedPool(self.spec)
        order = list(self.bookings)
        for b in order:
            if b.nodes is not None:
                packed.book(b)
        waiting = sorted((b for b in order if b.nodes is None), key=lambda b: b.start)
        for b in waiting:
            b.nodes = _fullest_first(packed, b)
            packed.book(b)
        # booked again in the pool's order, which the preemption gathering scans
        packed.bookings.clear()
        packed.bookings.update(dict.fromkeys(order))
        self.table = packed
        self.bookings = packed.bookings

    def _to_counted(self, now: float) -> None:
        """Count the bookings again; those that start after ``now`` lose their pins."""
        shape = next(iter(self._shapes), None)
        for b in self.bookings:
            if b.nodes is not None and b.start > now and b.lease != DOWN:
                b.nodes = None
        self._rebook(self._counted(shape))

    # -- queries -------------------------------------------------------------------
    def free_now(self, shape: Shape, t: float) -> float:
        table = self.table
        if isinstance(table, CountedPool) and table.shape == shape:
            return table.free_now(shape, t)
        return inf

    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        # more VMs than the pool ever holds: no switch for a question answered so
        if vms > self.max_vms(shape):
            return None
        table = self.table
        if isinstance(table, CountedPool) and table.shape != shape and self._shapes \
                and latest_start <= earliest \
                and not table.may_hold(vms, shape, earliest, duration):
            # nor for one start that the counted VMs leave too little cpu or memory
            # for, whatever nodes they get: EASY asks a queued lease of another shape
            # at every event whether it fits now, and each switch there and back at
            # the next prune re-books the whole pool
            return None
        return self.table_for(shape).fit(vms, shape, duration, earliest, latest_start)

    def move_earlier(self, booking: Booking, earliest: float, length: float) -> float | None:
        t = self.table.move_earlier(booking, earliest, length)
        if t is not None:  # the table took the booking out
            self._forget(booking.shape)
        return t

    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        if vms > self.max_vms(shape):
            return 0.0
        return self.table_for(shape).free_window(vms, shape, t)

    # -- updates -------------------------------------------------------------------
    def book(self, booking: Booking) -> None:
        if booking.lease != DOWN:
            table = self.table_for(booking.shape)
            if isinstance(table, CountedPool) and booking.nodes is not None \
                    and booking.start > self._now:
                if self._now == -inf:
                    self._recount = True  # restored: started or not, the prune says
                else:
                    self._to_packed()  # pinned ahead of its start: kept so
            self._shapes[booking.shape] += 1
        self.table.book(booking)

    def unbook(self, booking: Booking) -> None:
        self.table.unbook(booking)
        if booking.lease != DOWN:
            self._forget(booking.shape)

    def _forget(self, shape: Shape) -> None:
        self._shapes[shape] -= 1
        if not self._shapes[shape]:
            del self._shapes[shape]

    def truncate(self, booking: Booking, end: float, segments: Segments) -> None:
        self.table.truncate(booking, end, segments)

    def occupy(self, booking: Booking, now: float) -> tuple[int, ...]:
        self._now = max(self._now, now)
        return self.table.occupy(booking, now)

    def prune(self, now: float) -> None:
        self._now = max(self._now, now)
        if len(self._shapes) <= 1 and (not self.counted or self._recount):
            self._to_counted(now)
        self._recount = False
        self.table.prune(now)

    def usage_violations(self) -> list[str]:
        out = self.table.usage_violations()
        shapes = Counter(b.shape for b in self.bookings if b.lease != DOWN)
        if +shapes != +self._shapes:
            out.append(f"{self.spec.name}: shapes held {dict(shapes)}, "
                       f"counted as {dict(self._shapes)}")
        table = self.table
        if isinstance(table, CountedPool) and len(shapes) > 1:
            out.append(f"{self.spec.name}: counted with {len(shapes)} shapes")
        return out


def _fullest_first(packed: PackedPool, b: Booking) -> tuple[int, ...]:
    """Nodes for ``b`` on ``packed``: those with room throughout it, the fullest at
    its start first (fewest VMs of its shape free), then by index."""
    start, end, shape = b.start, b.end, b.shape
    order = []
    for node in range(packed.spec.nodes):
        room = packed.room(node, shape, start, end)
        if room > 0:
            at = packed.room(node, shape, start, start)
            order.append((at, node, room))
    order.sort()
    picked: list[int] = []
    for _, node, room in order:
        picked.extend([node] * min(room, b.vms - len(picked)))
        if len(picked) == b.vms:
            return tuple(picked)
    raise RuntimeError(f"slot table inconsistent: no room to pin {b.lease} at {start}")
