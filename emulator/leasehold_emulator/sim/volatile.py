"""A volatile pool's nodes failing and coming back in the simulator (issue 23 item 1;
seed 002 §III-A, §V-A; DESIGN §2.7; docs/volatile.md, "In the simulator").

Each node of a pool with a ``volatile`` law alternates up and down: up for an
exponential time of mean ``mean_up`` (= epoch / failure_rate: a constant hazard of
``failure_rate`` per epoch), then down for an exponential time of mean ``recovery``
(002 §IV's 1/μ). Every node is up at time 0. The draws are numpy's, one stream per
node from the SeedSequence of ``(seed, crc32(pool name), node index)``: a pool's
failures depend only on the seed, its name and its law, not on the other pools, nor
on how far the others were drawn. They are drawn lazily (a few dozen per node at a
time), as the run reaches them, and given to the core as capacity changes (the
:class:`~leasehold.core.model.Capacity` a cluster would report: the pool's nodes
down); the core decides what becomes of the leases (:meth:`Lifecycle.lose`).

The stream never keeps a run going by itself (:class:`~leasehold.core.replay.Background`):
once no input and no timer is left, failures go on only while a lease waits that
some volatile pool could hold with all its nodes up (it waits for a recovery). A
guard (``until``: :func:`.engine.guard`) stops them, every failed node back for good,
in a run that could not end otherwise.
The delivered-capacity law (``capacity``) is not used here: outside the utility
mode a node that is up delivers its whole capacity.
"""

from __future__ import annotations

import heapq
import zlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from math import inf

import numpy as np

from leasehold.core.model import Capacity, Phase, PoolSpec, Shape
from leasehold.core.replay import Input
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots.pool import fit_in
from leasehold.core.view import LeaseView

#: draws per node at a time: failures are drawn as the run reaches them, in chunks
CHUNK = 32

#: event ranks at one instant: a scenario's own capacity change before the failures
_EXPLICIT, _NODE = 0, 1


@dataclass(slots=True)
class PoolLog:
    """What one volatile pool's nodes went through during the run."""

    pool: str
    nodes: int
    #: nodes that failed while up (fed to the core as down)
    failures: int = 0
    #: failed nodes that came back
    recoveries: int = 0
    #: (time, node index, up?) of every failure and recovery fed, in order
    events: list[tuple[float, int, bool]] = field(default_factory=list)

    def down_seconds(self, end: float) -> float:
        """Node-seconds down by failure until ``end`` (a node still down counts to it)."""
        since: dict[int, float] = {}
        total = 0.0
        for t, node, up in self.events:
            if t > end:
                break
            if up:
                total += t - since.pop(node)
            else:
                since[node] = t
        return total + sum(end - t for t in since.values() if t < end)


class _Node:
    """One node's alternating up and down times, drawn a chunk of pairs at a time."""

    __slots__ = ("down", "draws", "gen", "k", "scale")

    def __init__(self, seed: int, pool: str, index: int, mean_up: float, recovery: float
                 ) -> None:
        entropy = [seed, zlib.crc32(pool.encode()), index]
        self.gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
        self.scale = np.array([mean_up, recovery])
        self.draws: list[list[float]] = []
        self.k = CHUNK
        #: how long it stays down when it next fails
        self.down = 0.0

    def up(self) -> float:
        """How long it stays up from now (and, kept, how long it is down after)."""
        if self.k == CHUNK:
            # a mean past the floats' range (recoverySeconds: 1e308) is a time that
            # overflows to inf: never back, which is what such a law says
            with np.errstate(over="ignore"):
                draws = self.gen.standard_exponential((CHUNK, 2)) * self.scale
            self.draws = draws.tolist()
            self.k = 0
        up, self.down = self.draws[self.k]
        self.k += 1
        return float(up)


class _Pool:
    """A volatile pool: the scenario's view of it (its spec and the nodes it says are
    down, from its capacity changes) and the nodes failed by the law."""

    __slots__ = ("explicit", "failed", "log", "nodes", "sent", "spec")

    def __init__(self, spec: PoolSpec, size: int, seed: int) -> None:
        law = spec.volatile
        assert law is not None
        self.spec = spec
        self.explicit: frozenset[int] = frozenset()
        self.failed: set[int] = set()
        self.nodes = [_Node(seed, spec.name, i, law.mean_up, law.recovery)
                      for i in range(size)] if law.failure_rate > 0 else []
        self.log = PoolLog(spec.name, spec.nodes)
        self.sent: frozenset[int] = frozenset()

    def down(self) -> frozenset[int]:
        return self.explicit | {i for i in self.failed if i < self.spec.nodes}

    def up_by_scenario(self, i: int) -> bool:
        return i < self.spec.nodes and i not in self.explicit


class Failures:
    """The failures and recoveries of every volatile pool's nodes, as the core's
    capacity inputs, in time order (a :class:`~leasehold.core.replay.Background`).

    ``capacity``: the scenario's own capacity changes; those of volatile pools are
    taken here (and must not be given to the core otherwise), so that what a pool
    reports down is what the scenario says plus what failed."""

    def __init__(self, pools: Sequence[PoolSpec], seed: int,
                 capacity: Sequence[tuple[float, Capacity]] = (), until: float = inf
                 ) -> None:
        #: the guard: no failure after it, and every failed node back at it
        self.until = until
        #: when the guard stopped the failures (``None``: it never had to), and why
        self.stopped: float | None = None
        self.because = "the guard: under this law some lease could not end"
        #: node failures given so far
        self.count = 0
        self._pools: dict[str, _Pool] = {}
        #: (time, rank, sequence, node, pool): the next event of every node, and the
        #: scenario's changes to come
        self._heap: list[tuple[float, int, int, int, str]] = []
        self._seq = 0
        self._changes: dict[int, Capacity] = {}
        #: the next inputs, drawn ahead (events that change nothing are skipped), and
        #: the failures and recoveries each one carries (logged once it is given)
        self._ready: deque[tuple[Input, _Pool, list[tuple[float, int, bool]]]] = deque()
        #: the leases, read once they are all submitted; those before ``_first`` ended
        self._views: list[LeaseView] = []
        self._first = 0
        self._dropped = False
        for spec in pools:
            if spec.volatile is None:
                continue
            size = max([spec.nodes, *(c.pool.nodes for _, c in capacity
                                      if c.pool.name == spec.name)])
            pool = self._pools[spec.name] = _Pool(spec, size, seed)
            for i, node in enumerate(pool.nodes):  # none fails at a hazard of 0
                self._push(node.up(), _NODE, spec.name, i)
        for t, change in capacity:
            if change.pool.name in self._pools:
                self._push(t, _EXPLICIT, change.pool.name, 0, change)

    @property
    def logs(self) -> list[PoolLog]:
        """Per volatile pool (in the cluster's order): what its nodes went through."""
        return [p.log for p in self._pools.values()]

    def takes(self, pool: str) -> bool:
        """Whether ``pool``'s capacity changes are this stream's to give."""
        return pool in self._pools

    def _push(self, t: float, rank: int, pool: str, node: int,
              change: Capacity | None = None) -> None:
        self._seq += 1
        if change is not None:
            self._changes[self._seq] = change
        heapq.heappush(self._heap, (t, rank, self._seq, node, pool))

    # ---- Background ---------------------------------------------------------------
    def next_time(self) -> float | None:
        ready = self._ready
        while not ready and self._heap:
            self._step()
        return ready[0][0].time if ready else None

    def pop(self) -> Input:
        self.next_time()
        out, pool, notes = self._ready.popleft()
        log = pool.log
        for note in notes:
            log.events.append(note)
            if note[2]:
                log.recoveries += 1
            else:
                log.failures += 1
                self.count += 1
        return out

    def stop(self, t: float, because: str) -> None:
        """Stop the failures at ``t`` (every failed node back then, for good), for
        ``because``: what was drawn past ``t`` never happens."""
        self.until = min(self.until, t)
        self.because = because
        kept = deque(item for item in self._ready if item[0].time <= t)
        self._dropped = len(kept) != len(self._ready)
        self._ready = kept

    def wanted(self, scheduler: Scheduler) -> bool:
        """Whether a lease that has not ended could run on some volatile pool with all
        the nodes the scenario has up there (a recovery may then let it run)."""
        if len(self._views) != len(scheduler.lifecycle.leases):
            self._views = scheduler.leases()
        leases = self._views
        for view in leases[self._first:]:
            if not view.phase.terminal:
                break
            self._first += 1
        for view in leases[self._first:]:
            if view.phase.terminal:
                continue
            req = view.request
            if view.phase == Phase.SUSPENDED and view.pool is not None:
                names = [view.pool]  # its VMs are written out there
            elif req.pool is not None or view.dispatched is not None:
                names = [req.pool or view.dispatched or ""]
            else:
                names = list(self._pools)
            for name in names:
                pool = self._pools.get(name)
                if pool is not None and _holds(pool, req.vms, req.shape):
                    return True
        return False

    # ---- the draws ------------------------------------------------------------------
    def _step(self) -> None:
        """The next event, and the input it makes (none when it changes nothing the
        core is told: a node the scenario has down failing or coming back)."""
        t, rank, seq, i, name = self._heap[0]
        if rank == _NODE and t > self.until:
            self._stop()
            return
        heapq.heappop(self._heap)
        pool = self._pools[name]
        if rank == _EXPLICIT:
            change = self._changes.pop(seq)
            pool.spec = change.pool
            pool.explicit = change.down
            self._send(pool, t, [], removed=change.removed, force=True)
            return
        node = pool.nodes[i]
        back = i in pool.failed
        if back:
            pool.failed.discard(i)
            self._push(t + node.up(), _NODE, name, i)
        else:  # fails
            pool.failed.add(i)
            self._push(t + node.down, _NODE, name, i)
        self._send(pool, t, [(t, i, back)] if pool.up_by_scenario(i) else [])

    def _stop(self) -> None:
        """The guard: failures stop at :attr:`until`, every failed node back then."""
        t = self.stopped = self.until
        self._heap = [e for e in self._heap if e[1] == _EXPLICIT]
        heapq.heapify(self._heap)
        for pool in self._pools.values():
            notes = [(t, i, True) for i in sorted(pool.failed) if pool.up_by_scenario(i)]
            pool.failed.clear()
            # inputs drawn past the stop were dropped: what the core was last told may
            # not be what was last sent
            self._send(pool, t, notes, force=self._dropped)

    def _send(self, pool: _Pool, t: float, notes: list[tuple[float, int, bool]],
              removed: bool = False, force: bool = False) -> None:
        down = pool.down()
        if down == pool.sent and not force:
            return
        pool.sent = down
        self._ready.append((Input.capacity_change(Capacity(pool.spec, down, removed), t),
                            pool, notes))


def _holds(pool: _Pool, vms: int, shape: Shape) -> bool:
    """Whether the nodes the scenario has up on the pool hold ``vms`` VMs at once."""
    spec = pool.spec
    sizes = spec.sizes()
    count = 0
    for i, size in enumerate(sizes):
        if i in pool.explicit:
            continue
        fits = fit_in(size, shape)
        count += min(fits, 1) if spec.exclusive else fits
        if count >= vms:
            return True
    return False

