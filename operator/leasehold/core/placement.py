"""Where a lease can go: its candidate pools, the length of its next booking, and the
earliest slot over those pools (DESIGN §2.2). Read-only: booking is the lifecycle's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import inf

from . import overhead
from .images import Images
from .lease import LeaseState, boot_lead, pace, shutdown_tail
from .model import PoolSpec, Request
from .reason import Lasting, Reason
from .slots import SlotTable

#: a slot found for a lease: (pool, start, length)
Fit = tuple[str, float, float]


def describe(req: Request) -> Reason:
    """A request's size in a user's words, for reasons."""
    return Reason(f"{req.vms} VM(s) of {req.shape.describe()} for ", Lasting(req.duration))


class Placement:
    def __init__(self, slots: SlotTable, pools: Mapping[str, PoolSpec],
                 images: Images | None = None) -> None:
        self.slots = slots
        self.pools = pools
        self._every = tuple(pools)
        #: image deployment (DESIGN §2.6), when some pool deploys images: a lease's
        #: VMs start no earlier than its image can be on their nodes
        self.images = images

    def pools_changed(self) -> None:
        """A pool was added: every lease that names none may use it."""
        self._every = tuple(self.pools)

    def candidate_pools(self, st: LeaseState) -> Sequence[str]:
        """The pools the lease may use, in the cluster's order (the tie-breaker)."""
        if st.pool is not None:  # a suspended lease resumes where its memory image is
            return (st.pool,)
        home = st.home
        if home is not None:
            return (home,) if home in self.pools else ()
        return self._every

    def never_fits(self, st: LeaseState) -> Reason | None:
        """Why the lease could not run even on its empty pools, if it could not."""
        req = st.req
        pools = self.candidate_pools(st)
        if not pools:
            return Reason(f"pool {req.pool!r} does not exist")
        most = max(self.slots.pools[p].max_vms(req.shape) for p in pools)
        if most == 0 and req.shape.extended:
            have = {name for p in pools for name in self.pools[p].extended_names()}
            lacking = [name for name, _ in req.shape.extended if name not in have]
            if lacking:
                return Reason("can never fit: asks for ", " and ".join(lacking),
                              ", which no node of its pools has")
        if most == 0:  # no node holds one: say how large the largest are
            largest = [size for p in pools for size in self.pools[p].largest_nodes()]
            sizes = " or ".join(dict.fromkeys(
                s.describe() for s in largest
                if not any(o != s and s.fits_in(o) for o in largest)))
            return Reason("can never fit: needs ", describe(req),
                          f", but no node holds one such VM (the largest have {sizes})")
        if most < req.vms:
            return Reason("can never fit: needs ", describe(req),
                          f", but the largest pool holds {most} such VMs")
        return None

    def length(self, st: LeaseState, pool: str) -> float:
        """How long the lease's next booking on ``pool`` lasts: the work it still owes
        at the pool's speed (:func:`pace`), after the overhead of resuming (or of
        landing, for a migration), which is a data transfer and does not scale. On a
        pool with a VM model its VMs boot first (not when a migration lands: 000's
        pipeline resumes them) and shut down last (:func:`span`)."""
        spec = self.pools[pool]
        run = st.remaining / pace(st.req, spec)
        vm = spec.vm
        if vm is None:  # asked for every query: the bare path kept short
            if not st.resuming:
                return run
            if st.landing is not None:  # a migration lands: its pipeline, not a resume
                return run + st.landing
            return run + overhead.resume_seconds(st.req, spec.overhead)
        if not st.resuming:
            return vm.boot + run + vm.shutdown  # as span()
        if st.landing is not None:
            return run + st.landing + vm.shutdown
        return vm.boot + run + overhead.resume_seconds(st.req, spec.overhead) + vm.shutdown

    def best_fit(self, st: LeaseState, earliest: float, latest: float = inf,
                 deadline: float = inf, anchored: bool = False,
                 floor: float = -inf) -> Fit | None:
        """(pool, start, length) of the earliest slot over the lease's candidate pools,
        starting in ``[earliest, latest]`` and ending by ``deadline`` (each pool has
        its speed, hence its own latest start); ties go to the pool listed first.
        ``anchored``: the bounds are the run's, not the booking's (an advance
        reservation's window): on each pool the booking begins its VMs' boot earlier,
        never before ``floor``, and may end their shutdown later."""
        best: Fit | None = None
        req = st.req
        images = self.images if req.image is not None else None
        for name in self.candidate_pools(st):
            length = self.length(st, name)
            lo, hi, d = earliest, latest, deadline
            if anchored:
                spec = self.pools[name]
                lead = boot_lead(req, spec)
                lo, hi = max(lo - lead, floor), hi - lead
                d += shutdown_tail(req, spec)
            hi = min(hi, d - length)
            if images is not None:  # the image must be on its nodes when the booking begins
                window = images.window(req, st.resuming, name, lo, hi)
                if window is None:
                    continue  # its image cannot be there in time
                lo, hi = window
            t = self.slots.pools[name].fit(req.vms, req.shape, length, lo, hi)
            if t is not None and (best is None or t < best[1]):
                best = (name, t, length)
        return best

    def ready(self, st: LeaseState, pool: str, earliest: float) -> float:
        """The earliest from ``earliest`` the lease's booking on ``pool`` may start,
        as its image allows (DESIGN §2.6): ``earliest`` but on pools that deploy
        images."""
        if self.images is None or st.req.image is None:
            return earliest
        return self.images.ready(st.req, st.resuming, pool, earliest)

    def late_image(self, st: LeaseState, start: float) -> Reason | None:
        """Why an advance reservation cannot have its image on its nodes by ``start``
        on any of its pools; ``None`` if it can (or needs no transfer)."""
        if self.images is None or st.req.image is None:
            return None
        req = st.req
        # the pools that could hold it at all: the others say nothing of its image
        pools = [p for p in self.candidate_pools(st)
                 if self.slots.pools[p].max_vms(req.shape) >= req.vms]
        return self.images.late(req, st.resuming, pools, start)

    def image_by(self, st: LeaseState, pool: str, t: float) -> bool:
        """Whether the lease's image can be on its nodes on ``pool`` by ``t`` (an
        advance reservation's: with every other reservation's transfer in time)."""
        if self.images is None or st.req.image is None:
            return True
        return self.images.window(st.req, st.resuming, pool, t, t) is not None
