"""A step function of free capacity over time — the slot table's workhorse.

``free[i]`` units are free during ``[times[i], times[i+1])``; the last step is open
ended and ``times[0]`` is ``-inf``, so every instant falls in some step. Plain
Python lists, because the hot queries are short forward scans and the updates are
``bisect`` plus ``list.insert``. Equal neighbours are merged so the profile stays as
short as the bookings it reflects.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from math import inf


class Profile:
    __slots__ = ("free", "horizon", "times")

    def __init__(self, capacity: int) -> None:
        self.times: list[float] = [-inf]
        self.free: list[int] = [capacity]
        #: history before this instant was pruned on purpose
        self.horizon = -inf

    def at(self, t: float) -> int:
        return self.free[bisect_right(self.times, t) - 1]

    def _split(self, t: float) -> int:
        times = self.times
        i = bisect_right(times, t) - 1
        if times[i] == t:
            return i
        times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def add(self, start: float, end: float, delta: int) -> None:
        """Change the free capacity by ``delta`` over ``[start, end)``."""
        if start >= end:
            return
        i = self._split(start)
        j = self._split(end) if end != inf else len(self.times)
        free = self.free
        # one C-level pass: the pool-wide profiles of a large pool have thousands of
        # steps under a long booking
        free[i:j] = [f + delta for f in free[i:j]]
        times = self.times
        if j < len(times) and free[j] == free[j - 1]:
            del times[j], free[j]
        if i > 0 and free[i] == free[i - 1]:
            del times[i], free[i]

    def min_over(self, start: float, end: float) -> int:
        """The least free capacity anywhere in ``[start, end)`` (at ``start`` if empty)."""
        times = self.times
        i = bisect_right(times, start) - 1
        return min(self.free[i:max(i + 1, bisect_left(times, end))])

    def drops_below(self, amount: int, t: float) -> float:
        """The first instant from ``t`` on with less than ``amount`` free (``inf``:
        none; at or before ``t`` if it is short at ``t``)."""
        times, free = self.times, self.free
        i, n = bisect_right(times, t) - 1, len(times)
        while i < n and free[i] >= amount:
            i += 1
        return times[i] if i < n else inf

    def runs(self, amount: int, start: float, end: float) -> list[tuple[float, float]]:
        """The longest spans within ``[start, end)`` with ``amount`` free throughout,
        in order."""
        out: list[tuple[float, float]] = []
        if start >= end:
            return out
        times, free = self.times, self.free
        i, n = bisect_right(times, start) - 1, len(times)
        since: float | None = None
        while i < n and times[i] < end:
            if free[i] >= amount:
                if since is None:
                    since = max(times[i], start)
            elif since is not None:
                out.append((since, times[i]))
                since = None
            i += 1
        if since is not None:
            out.append((since, end))
        return out

    def free_since(self, amount: int, t: float) -> float:
        """Since when ``amount`` has been free without a break up to ``t``
        (``-inf``: always; ``t``: not just before ``t``)."""
        times, free = self.times, self.free
        i = bisect_left(times, t) - 1
        while i >= 0 and free[i] >= amount:
            i -= 1
        return times[i + 1] if i + 1 < len(times) and times[i + 1] < t else t

    def fit(
        self, amount: int, duration: float, earliest: float, latest_start: float = inf
    ) -> float | None:
        """Earliest ``T`` in ``[earliest, latest_start]`` with ``amount`` free
        throughout ``[T, T + duration)``."""
        if earliest > latest_start:
            return None
        times, free = self.times, self.free
        n = len(times)
        i = bisect_right(times, earliest) - 1
        cand = earliest
        while True:
            if free[i] < amount:
                i += 1
                if i == n:
                    return None
                cand = times[i]
                if cand > latest_start:
                    return None
                continue
            # the steps after i that begin inside the window: whether all have room
            # is decided in C (a window of a long lease spans hundreds of steps of a
            # busy pool's profile); only a window that fails is walked, to its first
            # step without room
            j = bisect_left(times, cand + duration, i + 1)
            if j <= i + 1 or min(free[i + 1:j]) >= amount:
                return cand
            i += 1
            while free[i] >= amount:
                i += 1

    def earlier_start(
        self, amount: int, earliest: float, start: float, length: float
    ) -> float | None:
        """For a booking of ``amount`` at ``[start, start + length)`` that is counted
        in this profile: its earliest start in ``[earliest, start)``, or ``None``.

        Once a window reaches ``start`` the rest of it lies in capacity the booking
        itself holds, so a start ``T`` qualifies as soon as
        ``[T, min(T + length, start))`` has ``amount`` free — no need to remove the
        booking to ask.
        """
        if earliest >= start:
            return None
        times, free = self.times, self.free
        n = len(times)
        i = bisect_right(times, earliest) - 1
        # the usual answer, decided in C: no step before the start has room at all
        if max(free[i:bisect_left(times, start)]) < amount:
            return None
        cand = earliest
        while True:
            if free[i] < amount:
                i += 1
                if i == n or times[i] >= start:
                    return None
                cand = times[i]
                continue
            i += 1
            end = cand + length
            if i == n or times[i] >= (end if end < start else start):
                return cand

    def window(self, amount: int, t: float) -> float:
        """How long from ``t`` at least ``amount`` stays free (0 if not at ``t``)."""
        times, free = self.times, self.free
        i = bisect_right(times, t) - 1
        if free[i] < amount:
            return 0.0
        for k in range(i + 1, len(times)):
            if free[k] < amount:
                return times[k] - t
        return inf

    def prune(self, now: float) -> None:
        """Drop the steps that ended before ``now``."""
        self.horizon = now
        i = bisect_right(self.times, now) - 1
        if i > 0:
            del self.times[:i]
            del self.free[:i]
            self.times[0] = -inf

    def mismatches(self, capacity: int, bookings: list[tuple[float, float, int]]) -> list[str]:
        """Where the profile disagrees with a recount of ``(start, end, amount)``
        bookings, from the pruning horizon on (for invariant checks)."""
        points = sorted({*self.times[1:], *(t for s, e, _ in bookings for t in (s, e) if t != inf)})
        out = []
        for p in [self.horizon, *points]:
            if p < self.horizon or p == -inf:
                continue
            have = self.at(p)
            want = capacity - sum(a for s, e, a in bookings if s <= p < e)
            if have != want:
                out.append(f"profile says {have} free at t={p}, bookings {want}")
            if have < 0:
                out.append(f"over capacity by {-have} at t={p}")
        return out
