"""The core's own timers: when a booking begins, work ends, an overhead is over.

A heap of ``(time, kind, lease sequence, lease version, lease name)``: the order of
one instant is by kind (capacity is given back before anything new starts on it),
then by submission. A lease's timers are invalidated by bumping its version (see
:meth:`Timers.bump`); stale entries are skipped when they surface.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from enum import IntEnum

from .lease import LeaseState


class Timer(IntEnum):
    """Timer kinds; the value orders the timers of one instant."""

    VACATE = 0  # a stop/suspend/migrate overhead ended: the nodes are free
    DONE = 1  # the lease's work is finished
    STOP = 2  # a planned cancellation (preempted just in time) begins
    SUSPEND = 3  # a planned suspension (suspend-before-blocking, preemption) begins
    RUNNING = 4  # a resume overhead ended: the VMs run again
    START = 5  # a reservation begins


class Timers:
    __slots__ = ("_heap", "_leases")

    def __init__(self, leases: Mapping[str, LeaseState]) -> None:
        self._heap: list[tuple[float, int, int, int, str]] = []
        self._leases = leases

    def push(self, t: float, kind: Timer, st: LeaseState) -> None:
        heapq.heappush(self._heap, (t, kind, st.seq, st.version, st.name))

    def bump(self, st: LeaseState) -> None:
        """Invalidate the lease's timers. A migration's source is vacated on its own
        schedule, whatever happens to the lease meanwhile: its timer is renewed."""
        st.version += 1
        if st.departure is not None:
            self.push(st.departure.end, Timer.VACATE, st)

    def next_time(self) -> float | None:
        """When the earliest live timer is due."""
        heap, leases = self._heap, self._leases
        while heap:
            t, _, _, version, name = heap[0]
            if leases[name].version == version:
                return t
            heapq.heappop(heap)
        return None

    def pop(self, now: float) -> tuple[int, LeaseState] | None:
        """The next live timer due at exactly ``now`` (timers set while the instant's
        are handled come out too, in order), or ``None``."""
        heap, leases = self._heap, self._leases
        while heap and heap[0][0] == now:
            _, kind, _, version, name = heapq.heappop(heap)
            st = leases[name]
            if st.version == version:
                return kind, st  # a Timer value; compared as an int (it is one)
        return None
