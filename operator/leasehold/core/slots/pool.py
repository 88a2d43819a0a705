"""What every pool's slot table answers and does (see :mod:`.exclusive`, :mod:`.shared`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from math import inf

import numpy as np

from ..model import PoolSpec, Shape
from .booking import Booking, Segments
from .statement import Statement


def fit_count(cpu: int, memory: int, shape: Shape) -> int:
    """How many VMs of ``shape`` fit in ``cpu`` millicores and ``memory`` MiB: the
    least, over the resources (:data:`~leasehold.core.model.RESOURCES`), of the free
    amount over one VM's. The one place this arithmetic is written (extended
    resources: :func:`fit_extended`; over arrays, in numpy: :func:`fit_counts`,
    checked against this one by a property test). Plain ints, not a
    :class:`Shape`, as the hot paths read them off per-resource profiles (building a
    Shape per node and step would cost them)."""
    if cpu < 0 or memory < 0:
        return 0
    by_cpu = cpu // shape.cpu if shape.cpu > 0 else 1 << 30
    by_mem = memory // shape.memory if shape.memory > 0 else 1 << 30
    return min(by_cpu, by_mem)


def fit_counts(cpu: np.ndarray, memory: np.ndarray, shape: Shape) -> np.ndarray:
    """:func:`fit_count` of each pair of ``cpu`` and ``memory`` (integer arrays of one
    length) at once: a preemption on a 5,000-node pool asks it of every node, twice
    (the room each has, and what it would have with its candidates gone)."""
    big = np.int64(1 << 30)
    by_cpu = cpu // shape.cpu if shape.cpu > 0 else np.full_like(cpu, big)
    by_mem = memory // shape.memory if shape.memory > 0 else np.full_like(memory, big)
    return np.where((cpu < 0) | (memory < 0), 0, np.minimum(by_cpu, by_mem))


def fit_extended(most: int, free: Callable[[str], int], shape: Shape) -> int:
    """``most`` (what cpu and memory allow, :func:`fit_count`) capped by each of the
    shape's extended resources: ``free(name)`` over one VM's count. Called only for a
    shape that has some, so the cpu-and-memory path pays nothing for them."""
    for name, n in shape.extended:
        have = free(name)
        k = have // n if have > 0 else 0
        if k < most:
            most = k
    return most


def fit_in(size: Shape, shape: Shape) -> int:
    """How many VMs of ``shape`` an empty node of ``size`` holds."""
    most = fit_count(size.cpu, size.memory, shape)
    return fit_extended(most, size.amount, shape) if shape.extended else most


class PoolTable(ABC):
    """One pool's capacity over time, and the bookings that hold it. Bookings are
    kept in the order they were (last) booked: the order the preemption gathering
    scans them in."""

    spec: PoolSpec

    def __init__(self, spec: PoolSpec) -> None:
        self.spec = spec
        self.bookings: dict[Booking, None] = {}
        self._max: dict[Shape, int] = {}  # max_vms, per shape

    # -- queries -------------------------------------------------------------------
    def max_vms(self, shape: Shape) -> int:
        """How many VMs of ``shape`` the empty pool holds at once, node by node
        (asked at every fit: kept per shape)."""
        most = self._max.get(shape)
        if most is None:
            most = self._max[shape] = sum(n * fit_in(size, shape)
                                          for size, n in self.spec.distinct())
        return most

    @abstractmethod
    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        """Earliest ``T`` in ``[earliest, latest_start]`` with room for ``[T, T+duration)``."""

    def free_now(self, shape: Shape, t: float) -> float:
        """An upper bound on the VMs of ``shape`` that can start at ``t`` (cheap)."""
        return inf

    def move_earlier(self, booking: Booking, earliest: float, length: float) -> float | None:
        """Compression: the earliest start in ``[earliest, current start)`` for
        ``booking`` with ``length`` (at most its current one), given every other
        booking. If there is one, the booking is removed (the caller books the lease
        again there) and the start returned; if not, nothing changes and ``None``
        is returned."""
        with Statement(self) as trial:
            trial.unbook(booking)
            t = self.fit(booking.vms, booking.shape, length, earliest, booking.start)
            if t is None or t >= booking.start:
                return None  # the trial is discarded: the booking stays where it was
            trial.commit()
            return t

    @abstractmethod
    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        """How long from ``t`` the VMs fit without moving any booking (0 if not now)."""

    # -- updates -------------------------------------------------------------------
    @abstractmethod
    def book(self, booking: Booking) -> None:
        ...

    @abstractmethod
    def unbook(self, booking: Booking) -> None:
        ...

    @abstractmethod
    def occupy(self, booking: Booking, now: float) -> tuple[int, ...]:
        """The booking's lease starts now: give it concrete nodes."""

    @abstractmethod
    def prune(self, now: float) -> None:
        """Forget history before ``now`` (bookings that ended are already unbooked)."""

    def truncate(self, booking: Booking, end: float, segments: Segments) -> None:
        """Shorten a booking (early end, suspension): capacity after ``end`` is freed.
        Never lengthens one: the capacity after its end may be reserved by others."""
        if end > booking.end:
            raise ValueError(f"cannot extend the booking of {booking.lease} past its end")
        self.unbook(booking)
        booking.end = end
        booking.segments = segments
        self.book(booking)

    # -- checking ------------------------------------------------------------------
    @abstractmethod
    def usage_violations(self) -> list[str]:
        """Every instant and node where bookings exceed capacity (empty when sound)."""
