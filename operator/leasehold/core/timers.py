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


#: the timers that end a run (its work done, or a stop or a suspension beginning)
ENDS = frozenset({Timer.DONE, Timer.STOP, Timer.SUSPEND})

#: a timer: (time, kind, lease sequence, lease version, lease name)
Entry = tuple[float, int, int, int, str]


class Timers:
    __slots__ = ("_leases", "heap")

    def __init__(self, leases: Mapping[str, LeaseState]) -> None:
        #: the timers, a heap of :data:`Entry`. The scheduler pops the due ones itself
        #: (a call per timer would cost a simulation 1%)
        self.heap: list[Entry] = []
        self._leases = leases

    def push(self, t: float, kind: Timer, st: LeaseState) -> None:
        heapq.heappush(self.heap, (t, kind, st.seq, st.version, st.name))

    def bump(self, st: LeaseState) -> None:
        """Invalidate the lease's timers. A migration's source is vacated on its own
        schedule, whatever happens to the lease meanwhile: its timer is renewed."""
        st.version += 1
        if st.departure is not None:
            self.push(st.departure.end, Timer.VACATE, st)

    def next_time(self) -> float | None:
        """When the earliest live timer is due."""
        heap, leases = self.heap, self._leases
        while heap:
            t, _, _, version, name = heap[0]
            if leases[name].version == version:
                return t
            heapq.heappop(heap)
        return None

    def due_at(self, t: float, kinds: frozenset[int]) -> set[str]:
        """The leases with a live timer of one of ``kinds`` at ``t``, no later than the
        earliest live one (:meth:`next_time`): a walk down the heap, which stops below
        anything later."""
        heap, leases = self.heap, self._leases
        out: set[str] = set()
        stack = [0] if heap else []
        while stack:
            i = stack.pop()
            if i >= len(heap) or heap[i][0] > t:
                continue
            _, kind, _, version, name = heap[i]
            if kind in kinds and leases[name].version == version:
                out.add(name)
            stack += (2 * i + 1, 2 * i + 2)
        return out
