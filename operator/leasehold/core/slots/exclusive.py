"""Exclusive pools: every VM takes a whole node (the papers' model).

Future bookings are *counted* against a free-node profile and get concrete nodes
only when they start. Counting is exact here: with whole-node VMs and fixed
intervals, a count that never exceeds the pool at any instant can always be realised
by giving each starting lease any of the nodes free at its start. Node choice:
lowest free node index first.
"""

from __future__ import annotations

from heapq import heapify, heappop, heappush
from math import inf

from ..model import PoolSpec, Shape
from ..profile import Profile
from .booking import Booking, Segments
from .pool import PoolTable


class ExclusivePool(PoolTable):
    """Whole-node VMs: a free-node-count profile plus the booking on each node."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        self.nodes_free = Profile(spec.nodes)
        self.owner: list[Booking | None] = [None] * spec.nodes
        self._idle: list[int] = list(range(spec.nodes))  # heap of unowned nodes

    def _holds(self, shape: Shape) -> bool:
        return shape.cpu <= self.spec.cpu and shape.memory <= self.spec.memory

    def max_vms(self, shape: Shape) -> int:
        return self.spec.nodes if self._holds(shape) else 0

    def free_now(self, shape: Shape, t: float) -> float:
        return self.nodes_free.at(t)

    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        spec = self.spec  # _holds, inlined: asked for every fit
        if vms > spec.nodes or shape.cpu > spec.cpu or shape.memory > spec.memory:
            return None
        return self.nodes_free.fit(vms, duration, earliest, latest_start)

    def move_earlier(self, booking: Booking, earliest: float, length: float) -> float | None:
        # the profile answers without removing the booking first (see earlier_start)
        t = self.nodes_free.earlier_start(booking.vms, earliest, booking.start, length)
        if t is not None:
            self.unbook(booking)
        return t

    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        return self.nodes_free.window(vms, t) if self._holds(shape) else 0.0

    def book(self, booking: Booking) -> None:
        self.bookings[booking] = None
        self.nodes_free.add(booking.start, booking.end, -booking.vms)
        if booking.nodes is not None:  # a started booking back (a rebuilt table, a trial)
            owner, idle = self.owner, self._idle
            for i in booking.nodes:
                owner[i] = booking
            taken = set(booking.nodes)
            idle[:] = [i for i in idle if i not in taken]
            heapify(idle)

    def unbook(self, booking: Booking) -> None:
        del self.bookings[booking]
        self.nodes_free.add(booking.start, booking.end, booking.vms)
        if booking.nodes is not None:
            owner, idle = self.owner, self._idle
            for i in booking.nodes:
                owner[i] = None
                heappush(idle, i)

    def truncate(self, booking: Booking, end: float, segments: Segments) -> None:
        # in place: the node-count profile gives the tail back, the nodes stay
        if end > booking.end:
            raise ValueError(f"cannot extend the booking of {booking.lease} past its end")
        self.nodes_free.add(end, booking.end, booking.vms)
        booking.end = end
        booking.segments = segments

    def occupy(self, booking: Booking, now: float) -> tuple[int, ...]:
        if booking.nodes is not None:
            return booking.nodes
        owner, idle = self.owner, self._idle
        if len(idle) < booking.vms:  # the profile guarantees room; reaching here is a bug
            raise RuntimeError(
                f"slot table inconsistent: no {booking.vms} free nodes for {booking.lease}"
                f" at {now}")
        picked = [heappop(idle) for _ in range(booking.vms)]
        for i in picked:
            owner[i] = booking
        booking.nodes = tuple(picked)
        return booking.nodes

    def prune(self, now: float) -> None:
        self.nodes_free.prune(now)

    def usage_violations(self) -> list[str]:
        counted = [(b.start, b.end, b.vms) for b in self.bookings]
        out = [f"{self.spec.name}: {m}"
               for m in self.nodes_free.mismatches(self.spec.nodes, counted)]
        for b in self.bookings:
            held = sum(o is b for o in self.owner)
            if held != (0 if b.nodes is None else b.vms):
                out.append(f"{self.spec.name}: node ownership of {b.lease} inconsistent")
        if any(o is not None and o not in self.bookings for o in self.owner):
            out.append(f"{self.spec.name}: a node is owned by a booking no longer held")
        return out
