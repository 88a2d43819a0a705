"""All pools of the cluster."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from math import inf

from ..model import PoolSpec, Shape
from .booking import DOWN, Booking, Segments
from .exclusive import ExclusivePool
from .pool import PoolTable
from .shared import SharedPool
from .statement import Statement


def make_pool(spec: PoolSpec) -> PoolTable:
    return ExclusivePool(spec) if spec.exclusive else SharedPool(spec)


class SlotTable:
    """Every pool's table; a booking names its pool."""

    def __init__(self, pools: Iterable[PoolSpec]) -> None:
        self.pools: dict[str, PoolTable] = {p.name: make_pool(p) for p in pools}

    def book(self, booking: Booking) -> None:
        self.pools[booking.pool].book(booking)

    def unbook(self, booking: Booking) -> None:
        self.pools[booking.pool].unbook(booking)

    def truncate(self, booking: Booking, end: float, segments: Segments) -> None:
        self.pools[booking.pool].truncate(booking, end, segments)

    def occupy(self, booking: Booking, now: float) -> tuple[int, ...]:
        return self.pools[booking.pool].occupy(booking, now)

    def add(self, spec: PoolSpec) -> None:
        """A pool that was not there: empty, after the others."""
        self.pools[spec.name] = make_pool(spec)

    def rebuild(self, spec: PoolSpec, down: frozenset[int], now: float,
                keep: Iterable[Booking]) -> list[Booking]:
        """The pool as ``spec`` says from ``now`` on, its ``down`` nodes held whole
        to the end of time by bookings of :data:`DOWN` (returned: one per node size
        among them, by their lowest node index, each a VM of that size per node),
        and the ``keep`` bookings (started ones, on nodes that are up) on their
        nodes again. Its other bookings must have left it first. Rebuilt, not
        patched: a pool's profiles assume a fixed capacity, and capacity changes
        are rare."""
        table = make_pool(spec)
        self.pools[spec.name] = table
        for booking in keep:
            table.book(booking)
        if not down:
            return []
        sizes = spec.sizes()
        by_size: dict[Shape, list[int]] = {}
        for node in sorted(down):
            by_size.setdefault(sizes[node], []).append(node)
        held = [Booking(DOWN, spec.name, now, inf, len(nodes), size, tuple(nodes),
                        (("down", now, inf),))
                for size, nodes in sorted(by_size.items(), key=lambda x: x[1][0])]
        for booking in held:
            table.book(booking)
        return held

    def statement(self) -> Statement:
        """A trial: bookings made through it are undone unless committed."""
        return Statement(self)

    def bookings(self) -> Iterator[Booking]:
        """Every booking held, pool by pool."""
        for pool in self.pools.values():
            yield from pool.bookings

    def usage_violations(self) -> list[str]:
        return [v for p in self.pools.values() for v in p.usage_violations()]
