"""Counted pools: identical slots on a line, nodes bound when a lease starts.

Node ``i`` holds ``slots[i]`` VMs, and any VM the pool holds may take any free
slot. Future bookings are *counted* against a free-slot profile and get concrete
nodes only when they start (:meth:`CountedPool.occupy`). Counting is exact here:
bookings are fixed intervals, so a plan whose count never exceeds the pool's slots
at any instant can always be given nodes greedily as leases start (intervals on a
line: an interval graph is perfect) — the slots free at a start are free for the
whole booking, since every booking holding nodes then began no later.

Exclusive pools (:mod:`.exclusive`) are one slot per node, for every shape a node
holds; the shared pool (:mod:`.shared`) counts while its bookings are of one shape,
``fit_count(node size, shape)`` slots per node.

Node choice at a start: the fullest node that has a free slot first (so that whole
nodes stay free for other shapes), taking as many of its free slots as the booking
needs; ties by lowest node index. With one slot per node: the lowest free index.

Bookings given nodes when booked (started ones put back by a trial or a rebuilt
table, and the :data:`.booking.DOWN` booking that holds a pool's down nodes to the
end of time) hold their nodes at once; DOWN holds every slot of its nodes.
"""

from __future__ import annotations

from collections import Counter
from heapq import heapify, heappop, heappush
from math import inf

from ..model import PoolSpec, Shape
from ..profile import Profile
from .booking import DOWN, Booking, Segments
from .pool import PoolTable


class CountedPool(PoolTable):
    """A free-slot profile, and the slots the bookings that hold nodes take on each."""

    def __init__(self, spec: PoolSpec, shape: Shape | None, slots: list[int]) -> None:
        """``shape``: the one shape counted (``None``: every shape a node holds, one
        per node: an exclusive pool); ``slots``: VMs per node, by index."""
        super().__init__(spec)
        self.shape = shape
        self.slots = slots
        self.total = sum(slots)
        self.slots_free = Profile(self.total)
        #: slots taken on each node by the bookings that hold nodes
        self.used = [0] * len(slots)
        # what no slot of the counted shape can use, summed over the nodes
        sizes = spec.sizes() if shape is not None else []
        self._spare_cpu = sum(z.cpu - k * shape.cpu for z, k in zip(sizes, slots, strict=True)) \
            if shape is not None else 0
        self._spare_memory = sum(z.memory - k * shape.memory
                                 for z, k in zip(sizes, slots, strict=True)) \
            if shape is not None else 0
        #: the same for each extended resource some node has
        self._spare_extended = {
            name: sum(z.amount(name) - k * shape.amount(name)
                      for z, k in zip(sizes, slots, strict=True))
            for name in spec.extended_names()} if shape is not None else {}
        self._size = spec.size
        self._unit = all(k == 1 for k in slots)
        #: (free slots, node) of nodes with a free slot: a heap whose entries are
        #: stale once the node's free count changed (skipped when popped)
        self._open: list[tuple[int, int]] = [(k, i) for i, k in enumerate(slots) if k > 0]
        heapify(self._open)

    def holds(self, shape: Shape) -> bool:
        """Whether VMs of ``shape`` are counted here."""
        if self.shape is None:
            spec = self.spec  # asked at every fit: cpu and memory read inline
            return shape.cpu <= spec.cpu and shape.memory <= spec.memory \
                and (not shape.extended or shape.fits_in(self._size))
        return shape == self.shape

    def max_vms(self, shape: Shape) -> int:
        return self.total if self.holds(shape) else 0

    def free_now(self, shape: Shape, t: float) -> float:
        return self.slots_free.at(t)

    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        if vms > self.total or not self.holds(shape):
            return None
        return self.slots_free.fit(vms, duration, earliest, latest_start)

    def may_hold(self, vms: int, shape: Shape, start: float, duration: float) -> bool:
        """Whether the pool may hold ``vms`` VMs of another ``shape`` beside its
        bookings throughout ``[start, start + duration)``, however the bookings that
        have not started get their nodes: ``False`` only where, at some instant, the
        cpu or memory its counted VMs leave (free slots, plus what no slot can use)
        is short of theirs. A necessary condition, answered off the profile."""
        counted = self.shape
        if counted is None:
            return True
        low = self.slots_free.min_over(start, start + duration)
        cpu = low * counted.cpu + self._spare_cpu
        memory = low * counted.memory + self._spare_memory
        if vms * shape.cpu > cpu or vms * shape.memory > memory:
            return False
        spare = self._spare_extended
        return not shape.extended or all(
            vms * n <= low * counted.amount(name) + spare.get(name, 0)
            for name, n in shape.extended)

    def move_earlier(self, booking: Booking, earliest: float, length: float) -> float | None:
        # the profile answers without removing the booking first (see earlier_start)
        t = self.slots_free.earlier_start(booking.vms, earliest, booking.start, length)
        if t is not None:
            self.unbook(booking)
        return t

    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        return self.slots_free.window(vms, t) if self.holds(shape) else 0.0

    def _taken(self, booking: Booking) -> Counter[int]:
        """The slots a booking that holds nodes takes, per node."""
        assert booking.nodes is not None
        if booking.lease == DOWN:  # a down node is gone whole, whatever it would hold
            return Counter({i: self.slots[i] for i in booking.nodes})
        return Counter(booking.nodes)

    def _count(self, booking: Booking) -> int:
        """The slots a booking takes from the profile."""
        if booking.lease == DOWN and booking.nodes is not None:
            return sum(self.slots[i] for i in booking.nodes)
        return booking.vms

    def _hold(self, booking: Booking, sign: int) -> None:
        used, slots, heap = self.used, self.slots, self._open
        if booking.lease == DOWN:
            for i, n in self._taken(booking).items():
                used[i] += sign * n
                if used[i] < slots[i]:
                    heappush(heap, (slots[i] - used[i], i))
        else:
            # VM by VM (no Counter: every lease that starts or ends comes here); a
            # node of several VMs gets an entry per VM, all but its last stale
            for i in booking.nodes or ():
                u = used[i] = used[i] + sign
                if u < slots[i]:
                    heappush(heap, (slots[i] - u, i))
        if len(heap) > 2 * len(slots) + 64:  # stale entries: start afresh
            self._open = [(k - u, i) for i, (k, u) in enumerate(zip(slots, used, strict=True))
                          if u < k]
            heapify(self._open)

    def book(self, booking: Booking) -> None:
        self.bookings[booking] = None
        self.slots_free.add(booking.start, booking.end, -self._count(booking))
        if booking.nodes is not None:  # started (a rebuilt table, a trial) or DOWN
            self._hold(booking, +1)

    def unbook(self, booking: Booking) -> None:
        del self.bookings[booking]
        self.slots_free.add(booking.start, booking.end, self._count(booking))
        if booking.nodes is not None:
            self._hold(booking, -1)

    def truncate(self, booking: Booking, end: float, segments: Segments) -> None:
        # in place: the profile gives the tail back, the nodes stay held
        if end > booking.end:
            raise ValueError(f"cannot extend the booking of {booking.lease} past its end")
        self.slots_free.add(end, booking.end, self._count(booking))
        booking.end = end
        booking.segments = segments

    def occupy(self, booking: Booking, now: float) -> tuple[int, ...]:
        if booking.nodes is not None:
            return booking.nodes
        used, slots, heap = self.used, self.slots, self._open
        picked: list[int] = []
        need = booking.vms
        if self._unit:  # one slot a node (exclusive pools): the lowest free indices
            while need and heap:
                i = heappop(heap)[1]
                if not used[i]:  # else stale: taken since (by DOWN)
                    used[i] = 1
                    picked.append(i)
                    need -= 1
        while need:
            if not heap:  # the profile guarantees room; reaching here is a bug
                raise RuntimeError(
                    f"slot table inconsistent: no {booking.vms} free slots for "
                    f"{booking.lease} at {now}")
            free, i = heappop(heap)
            if free != slots[i] - used[i]:
                continue  # stale
            take = min(free, need)
            picked.extend([i] * take)
            need -= take
            used[i] += take
            if take < free:
                heappush(heap, (free - take, i))
        booking.nodes = tuple(picked)
        return booking.nodes

    def prune(self, now: float) -> None:
        self.slots_free.prune(now)

    def usage_violations(self) -> list[str]:
        name = self.spec.name
        counted = [(b.start, b.end, self._count(b)) for b in self.bookings]
        out = [f"{name}: {m}" for m in self.slots_free.mismatches(self.total, counted)]
        held: Counter[int] = Counter()
        for b in self.bookings:
            if b.nodes is not None:
                if b.lease != DOWN and len(b.nodes) != b.vms:
                    out.append(f"{name}: {b.lease} holds {len(b.nodes)} nodes for {b.vms} VMs")
                held.update(self._taken(b))
        for i, (k, u) in enumerate(zip(self.slots, self.used, strict=True)):
            if u != held[i]:
                out.append(f"{name}-{i}: {u} slots taken, its bookings hold {held[i]}")
            if u > k:
                out.append(f"{name}-{i}: {u} VMs on {k} slots")
        return out
