"""VM images (004 §3.1–3.2, DESIGN §2.6): transfers booked on each pool's repository
link, per-node caches, and when a lease's image is on its nodes.

* :mod:`.link` — a repository link and the transfers booked on it (FIFO as early as
  possible for best-effort leases, EDF as late as possible for reservations);
* :mod:`.cache` — one node's cache: reference counts, LRU eviction;
* :mod:`.depot` — one pool's link, caches and the references its leases hold.

:class:`Images` is the seam the rest of the core uses: :class:`~..placement.Placement`
asks it when a lease's VMs may start (its window), :class:`~..lifecycle.Lifecycle`
tells it of bookings, starts and bookings given back. Pools without ``images`` and
leases without an ``image`` never reach it: the core plans them as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import inf

from ..model import Deploy, LeaseType, PoolSpec, Request
from ..reason import At, Lasting, Reason
from .cache import NodeCache
from .depot import Depot
from .link import Link, Transfer

__all__ = ["Depot", "Images", "Link", "NodeCache", "Transfer"]


class Images:
    """The depots of the pools that deploy images, by pool name."""

    def __init__(self, pools: Iterable[PoolSpec]) -> None:
        self.depots: dict[str, Depot] = {}
        #: the last instant planned (transfers are booked from it on)
        self.now = -inf
        for spec in pools:
            self.pool_changed(spec)

    def pool_changed(self, spec: PoolSpec) -> None:
        """A pool was added or changed: its depot follows (it keeps its caches and
        bookings; a pool that no longer deploys images drops its depot)."""
        if spec.images is None:
            self.depots.pop(spec.name, None)
        elif spec.name in self.depots:
            self.depots[spec.name].resize(spec)
        else:
            self.depots[spec.name] = Depot(spec)

    def advance(self, now: float) -> None:
        """Time moved to ``now``: the multicast transfers over by then are cached."""
        self.now = now
        for depot in self.depots.values():
            depot.deliver(now)
            depot.link.prune(now)

    # ---- placement's questions -------------------------------------------------------
    def window(self, req: Request, resuming: bool, pool: str, lo: float, hi: float
               ) -> tuple[float, float] | None:
        """Where in ``[lo, hi]`` the lease's booking on ``pool`` may start, given its
        image: no earlier than the image can be on its nodes. A best-effort lease
        asked to start by ``hi`` may start once its image is there (``hi`` moves
        with it); an advance reservation (``lo == hi``, its start) gets no window if
        its transfer cannot end by then (:meth:`late` says why)."""
        depot = self.depots.get(pool)
        if depot is None or req.image is None:
            return lo, hi
        now = self.now
        if req.type is LeaseType.ADVANCE_RESERVATION and lo == hi:
            if depot.needs_transfer(req, resuming) or req.name in depot.transfers:
                return (lo, hi) if depot.in_time(req, lo, now) else None
            return lo, hi
        ready = depot.ready(req, resuming, now)
        if ready <= lo:
            return lo, hi
        if req.type.best_effort:
            return ready, max(hi, ready)
        return (ready, hi) if ready <= hi else None

    def ready(self, req: Request, resuming: bool, pool: str, earliest: float) -> float:
        """The earliest the lease's booking on ``pool`` may start from ``earliest``."""
        depot = self.depots.get(pool)
        if depot is None or req.image is None:
            return earliest
        return max(earliest, depot.ready(req, resuming, self.now))

    def late(self, req: Request, resuming: bool, pools: Iterable[str], start: float
             ) -> Reason | None:
        """Why an advance reservation cannot be admitted at ``start`` for its image
        alone, when on every one of ``pools`` its transfer cannot end by then;
        ``None`` if on some pool it can (or needs none)."""
        worst: Reason | None = None
        for pool in pools:  # none: nothing to say of its image
            depot = self.depots.get(pool)
            if depot is None or req.image is None:
                return None
            if not (depot.needs_transfer(req, resuming) or req.name in depot.transfers):
                return None
            if depot.in_time(req, start, self.now):
                return None
            length = depot.length(req)
            if start - self.now < length:
                why = Reason(", and only ", Lasting(max(0.0, start - self.now)),
                             " are left before it")
            else:
                why = Reason(", and the repository link's other transfers leave no gap"
                             " that long before it")
            worst = Reason(
                f"its image {req.image!r} ({req.image_mb:g} MB) cannot reach its nodes on"
                f" pool {pool} by its start ", At(start), ": the transfer takes ",
                Lasting(length), f" at {depot.images.bandwidth:g} MB/s", why)
        return worst

    # ---- the lifecycle's news --------------------------------------------------------
    def booked(self, req: Request, resuming: bool, pool: str, start: float, now: float
               ) -> list[Deploy]:
        """The lease was booked on ``pool`` from ``start``: its transfer is booked
        or ridden on (moving other reservations' transfers earlier if EDF needs
        to); returns what the shell is told of the transfers booked, ridden on or
        moved: one Deploy per lease each serves."""
        depot = self.depots.get(pool)
        if depot is None or req.image is None:
            return []
        return [Deploy(now, lease, pool, tr.image, tr.start, tr.end)
                for lease, tr in depot.booked(req, resuming, start, now)]

    def started(self, req: Request, booking: object, pool: str, nodes: tuple[int, ...],
                now: float) -> None:
        depot = self.depots.get(pool)
        if depot is not None:
            depot.started(req, booking, nodes, now)

    def given_back(self, lease: str, pool: str, booking: object, now: float) -> None:
        depot = self.depots.get(pool)
        if depot is not None:
            depot.given_back(lease, booking, now)

    # ---- what the shells read --------------------------------------------------------
    def transfers(self, lease: str) -> list[tuple[str, Transfer]]:
        """The lease's transfers (pool, transfer), in booking order by pool."""
        return [(name, tr) for name, depot in self.depots.items()
                for tr in depot.log.get(lease, ())]

    def violations(self) -> list[str]:
        """Every overlap on a link, over-full cache and start without its image (empty
        when sound): for invariant checks."""
        out: list[str] = []
        for name, depot in self.depots.items():
            out += [f"{name}: {v}" for v in depot.link.overlaps()]
            out += [f"{name}: {v}" for v in depot.violations]
            for i, cache in enumerate(depot.caches):
                if cache.used > cache.capacity + 1e-9:
                    out.append(f"{name}: node {i}'s cache holds {cache.used:g} MB of"
                               f" {cache.capacity:g}")
        return out
