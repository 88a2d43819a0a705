"""A step function of free capacity over time — the slot table's workhorse.

``free[i]`` units are free during ``[times[i], times[i+1])``; the last step is open
ended and ``times[0]`` is ``-inf``, so every instant falls in some step. Plain
Python lists, because the hot queries are short forward scans and the updates are
``bisect`` plus ``list.insert``. Equal neighbours are merged so the profile stays as
short as the bookings it reflects.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from math import inf


def lows_over(profiles: Iterable[Profile], start: float, end: float) -> list[int]:
    """Each profile's least free capacity anywhere in ``[start, end)``, as
    :meth:`Profile.min_over` says, in one pass: a preemption on a 5,000-node pool
    reads every node's cpu and memory profile, and a method call per profile was a
    third of what the reading cost."""
    out: list[int] = []
    append = out.append
    for p in profiles:
        times, free = p.times, p.free
        i = bisect_right(times, start) - 1
        j = bisect_left(times, end)
        append(min(free[i:j]) if j > i + 1 else free[i])
    return out


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


class BlockProfile:
    """The same step function as :class:`Profile` (the same steps, merged the same
    way), kept in blocks of consecutive steps, each with an amount added to all of
    its steps at once and its least and greatest free amount; and the blocks in
    groups of ``group``, each with the same three.

    For a profile with many steps under most changes: a large pool's aggregate free
    capacity has a step per booking end, and a lease that starts now spans most of
    them. :class:`Profile` rewrites every step under a change and takes a minimum over
    every step of a searched window (at 5,000 nodes, ~10,000 steps per booking, the
    greater part of building the preemption benchmark's state, quadratic in the
    nodes). Here a change or a window reads at most two blocks step by step, at most
    two groups block by block and the groups in between by their summaries:
    ``O(block + group + steps / (block * group))``, constant in practice. (With
    blocks alone, ``O(block + steps / block)``: the 5,000-node state's 24,000 steps
    were 143 blocks of ~170, and each change rewrote three summaries of the ~60
    blocks a lease that starts now spans, on average; the blocks' own passes, the
    larger part, favoured small blocks, the passes over blocks large ones.)

    Holds ``times[k]`` (sorted across blocks; ``-inf`` first) and ``free[k]``
    (stored; the free amount is ``free[k][i] + added[k] + gadded[k // group]``),
    ``low[k]`` and ``high[k]`` (the block's least and greatest free, but for its
    group's ``gadded``), ``firsts[k]`` (the block's first instant, for the bisect
    that finds it), and per group ``gadded``, ``glow`` and ``ghigh`` (the group's
    actual least and greatest free). Splitting, dropping or pruning blocks moves
    the groups' amounts into their blocks first and summarises the groups anew
    (``O(steps / block)``, once per ``block`` new steps at most)."""

    __slots__ = ("_added", "_block", "_firsts", "_free", "_gadded", "_ghigh", "_glow",
                 "_group", "_high", "_low", "_times", "horizon")

    def __init__(self, capacity: int, block: int = 32, group: int = 16) -> None:
        #: a block is split in two when it holds more than twice this many steps
        self._block = block
        self._group = group
        self._times: list[list[float]] = [[-inf]]
        self._free: list[list[int]] = [[capacity]]
        self._added: list[int] = [0]
        self._low: list[int] = [capacity]
        self._high: list[int] = [capacity]
        self._firsts: list[float] = [-inf]
        self._gadded: list[int] = [0]
        self._glow: list[int] = [capacity]
        self._ghigh: list[int] = [capacity]
        #: history before this instant was pruned on purpose
        self.horizon = -inf

    def steps(self) -> tuple[list[float], list[int]]:
        """Every step's start and free amount, in order (as :class:`Profile` holds
        them)."""
        group, gadded = self._group, self._gadded
        times = [t for block in self._times for t in block]
        free = [f + add + gadded[k // group]
                for k, (block, add) in enumerate(zip(self._free, self._added, strict=True))
                for f in block]
        return times, free

    def _locate(self, t: float) -> tuple[int, int]:
        """The block and position of the step ``t`` falls in."""
        k = bisect_right(self._firsts, t) - 1
        return k, bisect_right(self._times[k], t) - 1

    def _summarise_block(self, k: int) -> None:
        free, add = self._free[k], self._added[k]
        self._low[k] = min(free) + add
        self._high[k] = max(free) + add

    def _summarise_group(self, g: int) -> None:
        first, add = g * self._group, self._gadded[g]
        self._glow[g] = min(self._low[first:first + self._group]) + add
        self._ghigh[g] = max(self._high[first:first + self._group]) + add

    def _summarise(self, k: int) -> None:
        self._summarise_block(k)
        self._summarise_group(k // self._group)

    def _ungroup(self) -> None:
        """Move every group's amount into its blocks (before blocks move)."""
        group = self._group
        for g, add in enumerate(self._gadded):
            if add:
                span = slice(g * group, (g + 1) * group)
                for values in (self._added, self._low, self._high):
                    values[span] = [v + add for v in values[span]]

    def _regroup(self) -> None:
        """The groups of the blocks as they are now, each amount in its blocks."""
        group, low, high = self._group, self._low, self._high
        firsts = range(0, len(low), group)
        self._gadded = [0] * len(firsts)
        self._glow = [min(low[k:k + group]) for k in firsts]
        self._ghigh = [max(high[k:k + group]) for k in firsts]

    def at(self, t: float) -> int:
        k, i = self._locate(t)
        return self._free[k][i] + self._added[k] + self._gadded[k // self._group]

    def _split(self, t: float) -> None:
        """Make ``t`` the start of a step."""
        k, i = self._locate(t)
        times, free = self._times[k], self._free[k]
        if times[i] == t:
            return
        times.insert(i + 1, t)
        free.insert(i + 1, free[i])  # a copy of its neighbour: the summary holds
        if len(times) > 2 * self._block:
            self._ungroup()
            half = len(times) // 2
            self._times[k + 1:k + 1] = [times[half:]]
            self._free[k + 1:k + 1] = [free[half:]]
            del times[half:], free[half:]
            self._added.insert(k + 1, self._added[k])
            self._low.insert(k + 1, 0)
            self._high.insert(k + 1, 0)
            self._firsts.insert(k + 1, self._times[k + 1][0])
            self._summarise_block(k)
            self._summarise_block(k + 1)
            self._regroup()

    def _delete(self, k: int, i: int) -> None:
        """Remove step ``i`` of block ``k`` (merged into its predecessor)."""
        times, free = self._times[k], self._free[k]
        del times[i], free[i]
        if not times:
            self._ungroup()
            for blocks in (self._times, self._free, self._added, self._low, self._high,
                           self._firsts):
                del blocks[k]
            self._regroup()
            return
        if i == 0:
            self._firsts[k] = times[0]
        self._summarise(k)

    def _before(self, k: int, i: int) -> int:
        """The free amount of the step before step ``i`` of block ``k`` (not the
        first step)."""
        if i > 0:
            return self._free[k][i - 1] + self._added[k] + self._gadded[k // self._group]
        return self._free[k - 1][-1] + self._added[k - 1] + self._gadded[(k - 1) // self._group]

    def _add_blocks(self, a: int, b: int, delta: int) -> None:
        """Change blocks ``a`` to ``b - 1`` whole by ``delta``: the groups they fill
        by their summaries, the blocks of the (at most two) others each."""
        group = self._group
        ga, gb = -(-a // group), b // group  # the groups wholly inside
        parts: tuple[tuple[int, int], ...]
        if ga < gb:
            for values in (self._gadded, self._glow, self._ghigh):
                values[ga:gb] = [v + delta for v in values[ga:gb]]
            parts = ((a, ga * group), (gb * group, b))
        else:
            parts = ((a, b),)
        added, low, high = self._added, self._low, self._high
        for first, last in parts:
            if first < last:
                added[first:last] = [v + delta for v in added[first:last]]
                low[first:last] = [v + delta for v in low[first:last]]
                high[first:last] = [v + delta for v in high[first:last]]
                for g in range(first // group, (last - 1) // group + 1):
                    self._summarise_group(g)

    def add(self, start: float, end: float, delta: int) -> None:
        """Change the free capacity by ``delta`` over ``[start, end)``."""
        if start >= end:
            return
        self._split(start)
        if end != inf:
            self._split(end)
        ks, i = self._locate(start)
        if end == inf:
            ke, j = len(self._times) - 1, len(self._times[-1])
        else:
            ke, j = self._locate(end)
        frees = self._free
        if ks == ke:
            free = frees[ks]
            free[i:j] = [f + delta for f in free[i:j]]
            self._summarise(ks)
        else:
            free = frees[ks]
            free[i:] = [f + delta for f in free[i:]]
            self._summarise(ks)
            if ke > ks + 1:
                self._add_blocks(ks + 1, ke, delta)
            if j:
                free = frees[ke]
                free[:j] = [f + delta for f in free[:j]]
                self._summarise(ke)
        # the same merges as Profile.add: the step at ``end``, then the one at
        # ``start``, each into its predecessor when equal
        if end != inf and self.at(end) == self._before(ke, j):
            self._delete(ke, j)
        ks, i = self._locate(start)
        if (ks or i) and frees[ks][i] + self._added[ks] + self._gadded[ks // self._group] \
                == self._before(ks, i):
            self._delete(ks, i)

    def _next(self, k: int, i: int) -> tuple[int, int] | None:
        i += 1
        if i < len(self._times[k]):
            return k, i
        return (k + 1, 0) if k + 1 < len(self._times) else None

    def _first_with(self, k: int, i: int, amount: int) -> tuple[int, int] | None:
        """The first step from step ``i`` of block ``k`` on with ``amount`` free."""
        frees, added, high = self._free, self._added, self._high
        group, gadded, ghigh = self._group, self._gadded, self._ghigh
        while True:
            g = k // group
            if i == 0 and k == g * group and ghigh[g] < amount:
                k += group  # none in the whole group
            else:
                free, need = frees[k], amount - added[k] - gadded[g]
                if high[k] + gadded[g] >= amount:
                    for p in range(i, len(free)):
                        if free[p] >= need:
                            return k, p
                k += 1
            i = 0
            if k >= len(frees):
                return None

    def _first_short(self, k: int, i: int, amount: int) -> tuple[int, int]:
        """The first step from step ``i`` of block ``k`` on with less than ``amount``
        free (the caller knows there is one)."""
        frees, added, low = self._free, self._added, self._low
        group, gadded, glow = self._group, self._gadded, self._glow
        while True:
            g = k // group
            if i == 0 and k == g * group and glow[g] >= amount:
                k += group  # none in the whole group
            else:
                free, need = frees[k], amount - added[k] - gadded[g]
                if low[k] + gadded[g] < amount:
                    for p in range(i, len(free)):
                        if free[p] < need:
                            return k, p
                k += 1
            i = 0

    def _low_over(self, a: int, b: int) -> int:
        """The least free amount of blocks ``a`` to ``b - 1`` (``a < b``)."""
        group, low, gadded = self._group, self._low, self._gadded
        ga, gb = -(-a // group), b // group  # the groups wholly inside
        if ga >= gb:
            g, h = a // group, (b - 1) // group
            if g == h:
                return min(low[a:b]) + gadded[g]
            return min(min(low[a:h * group]) + gadded[g], min(low[h * group:b]) + gadded[h])
        least = min(self._glow[ga:gb])
        if a < ga * group:
            least = min(least, min(low[a:ga * group]) + gadded[ga - 1])
        if gb * group < b:
            least = min(least, min(low[gb * group:b]) + gadded[gb])
        return least

    def _low_from(self, k: int, i: int, end: float) -> int | None:
        """The least free amount of the steps from step ``i`` of block ``k`` on that
        begin before ``end`` (``None``: there are none)."""
        times, frees, added = self._times, self._free, self._added
        group, gadded = self._group, self._gadded
        # the last block with a step before ``end``
        ke = bisect_left(self._firsts, end) - 1
        if ke < k:
            return None
        if ke == k:
            j = bisect_left(times[k], end, i)
            return min(frees[k][i:j]) + added[k] + gadded[k // group] if j > i else None
        least = (min(frees[k][i:]) + added[k] + gadded[k // group]
                 if i < len(frees[k]) else inf)
        if ke > k + 1:
            least = min(least, self._low_over(k + 1, ke))
        j = bisect_left(times[ke], end)
        if j:
            least = min(least, min(frees[ke][:j]) + added[ke] + gadded[ke // group])
        return int(least)

    def fit(
        self, amount: int, duration: float, earliest: float, latest_start: float = inf
    ) -> float | None:
        """Earliest ``T`` in ``[earliest, latest_start]`` with ``amount`` free
        throughout ``[T, T + duration)`` (as :meth:`Profile.fit`)."""
        if earliest > latest_start:
            return None
        pos: tuple[int, int] | None = self._locate(earliest)
        cand = earliest
        while True:
            assert pos is not None
            found = self._first_with(*pos, amount)
            if found is None:
                return None
            if found != pos:
                cand = self._times[found[0]][found[1]]
                if cand > latest_start:
                    return None
            after = self._next(*found)
            if after is None:
                return cand
            least = self._low_from(*after, cand + duration)
            if least is None or least >= amount:
                return cand
            pos = self._first_short(*after, amount)

    def prune(self, now: float) -> None:
        """Drop the steps that ended before ``now``."""
        self.horizon = now
        k, i = self._locate(now)
        if k == 0 and i == 0:
            return
        if k:
            self._ungroup()
            for blocks in (self._times, self._free, self._added, self._low, self._high,
                           self._firsts):
                del blocks[:k]
        del self._times[0][:i], self._free[0][:i]
        self._times[0][0] = -inf
        self._firsts[0] = -inf
        if k:
            self._summarise_block(0)
            self._regroup()
        else:
            self._summarise(0)

    def mismatches(self, capacity: int, bookings: list[tuple[float, float, int]]) -> list[str]:
        """As :meth:`Profile.mismatches` (for invariant checks)."""
        plain = Profile(capacity)
        plain.times, plain.free = self.steps()
        plain.horizon = self.horizon
        return plain.mismatches(capacity, bookings)
