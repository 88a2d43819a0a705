"""Who can be preempted, and what it costs (DESIGN §2.4; 000 §2.1, §5).

When a preemptor does not fit at ``t`` (its ready time, or its start), the
*preemptable* leases with a booking in its window are gathered, each with what
preempting it means:

* external ``BestEffortCancellable`` running → cancelled (``stopSeconds``);
* external ``BestEffortSuspendable`` running → suspended (eq. 7), its remainder
  re-queued in submission order and resumed later;
* external ``DeadlineMigratable`` running → migrated (eq. 8), only if a slot that
  ends by its deadline exists off the preemptor's window (later in this pool, or in
  another pool);
* any of these three still queued with a reservation that has not started →
  re-planned (δ); a queued ``DeadlineMigratable`` only with a slot by its deadline.

A running victim is stopped or suspended *just in time*: as late as lets it vacate
by ``t`` (now, if that is already too late). One whose suspension would end after
its booking does anyway is no candidate: it leaves sooner by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass
from math import inf

from . import overhead
from .lease import LeaseState, PreemptCosts, pace
from .model import LeaseType, Origin, OverheadParams, Phase, PoolSpec, Request
from .placement import Placement
from .preemption import focus
from .preemption.instance import Victim
from .slots import Booking, SlotTable

PREEMPTABLE = (
    LeaseType.BEST_EFFORT_CANCELLABLE,
    LeaseType.BEST_EFFORT_SUSPENDABLE,
    LeaseType.DEADLINE_MIGRATABLE,
)
_RUNNING_ACTION = {
    LeaseType.BEST_EFFORT_CANCELLABLE: "cancel",
    LeaseType.BEST_EFFORT_SUSPENDABLE: "suspend",
    LeaseType.DEADLINE_MIGRATABLE: "migrate",
}


def _costs(req: Request, params: OverheadParams, action: str) -> tuple[float, float]:
    """(seconds from the order until the lease has vacated, overhead h(L))."""
    if action == "replan":
        return 0.0, overhead.replan_overhead(req, params)
    if action == "migrate":
        return overhead.migrate_leave_seconds(req, params), overhead.migrate_overhead(req, params)
    if action == "cancel":
        return params.stop_seconds, overhead.cancel_overhead(req, params)
    return overhead.suspend_seconds(req, params), overhead.suspend_overhead(req, params)


def preempt_costs(req: Request, params: OverheadParams) -> PreemptCosts:
    """What preempting ``req`` on a pool of ``params`` means: its action when
    running, the seconds that takes to vacate, its overhead, and the overhead of
    re-planning it when queued (empty: never preemptable)."""
    if req.origin != Origin.EXTERNAL or req.type not in PREEMPTABLE:
        return ()
    action = _RUNNING_ACTION[req.type]
    took, cost = _costs(req, params, action)
    return action, took, cost, _costs(req, params, "replan")[1]


@dataclass(frozen=True, slots=True)
class Slot:
    """Where a deadline-bound victim goes: ``[start, start + length)`` on ``pool``."""

    pool: str
    start: float
    length: float


class Victims:
    """Gathers the preemptable leases of a pool for a preemptor (read-only)."""

    def __init__(self, slots: SlotTable, pools: Mapping[str, PoolSpec],
                 leases: Mapping[str, LeaseState], reserved: Mapping[str, None],
                 placement: Placement) -> None:
        self.slots = slots
        self.pools = pools
        self._leases = leases
        self._reserved = reserved
        self._placement = placement

    def gather(
        self, pool_name: str, req: Request, now: float, t: float,
        excluded: Set[str] = frozenset(),
    ) -> tuple[list[Victim], float]:
        """Preemptable leases with a booking in the preemptor's window on
        ``pool_name``, and the window's end: ``d`` after the latest of ``t`` and their
        vacate times. ``excluded`` leases are left out."""
        pool = self.slots.pools[pool_name]
        victim = self._victim_maker(pool_name, now, t, excluded)
        params = self.pools[pool_name].overhead
        leases, reserved, running = self._leases, self._reserved, Phase.RUNNING
        new = tuple.__new__
        victims: list[Victim] = []
        #: bookings that start after the window as first drawn: only they can be
        #: in its tail
        later: list[Booking] = []
        # the preemptor's booking there: its work at the pool's speed (a new lease)
        d = req.duration / pace(req, self.pools[pool_name])
        end = t + d
        latest = t
        # bookings scanned in the table's order, not by name: a large pool has
        # thousands, and the instance orders the ones it keeps. The body of
        # ``victim`` is written out here: on a 5,000-node pool it runs for 24,000
        # leases per decision, and the call was a fifth of the gathering
        for b in pool.bookings:
            if b.start >= end:
                later.append(b)
                continue
            if b.end <= t:
                continue
            name = b.lease
            st = leases.get(name)
            if st is None or st.booking is not b or name in excluded:
                continue
            memo = st.preempt_costs
            got = memo.get(pool_name)
            if got is None:
                got = memo[pool_name] = preempt_costs(st.req, params)
            if not got:
                continue
            if name in reserved:
                victims.append(new(Victim, (name, "replan", st.vms, got[3], now, b.start,
                                            st.req.submitted, st.seq, b)))
                if now > latest:
                    latest = now
                continue
            if st.phase != running:
                continue
            action, took = got[0], got[1]
            late = t - took
            vacate = (now if action == "migrate" or late < now else late) + took
            if vacate >= b.end:
                continue
            since = st.first_start if st.first_start is not None else b.start
            victims.append(new(Victim, (name, action, st.vms, got[2], vacate, since,
                                        st.req.submitted, st.seq, b)))
            if vacate > latest:
                latest = vacate
        if latest > t:
            # computed as the preemptor's booking end will be, max(t, vacate) + d,
            # so that no float rounding puts that end past the window's
            end = latest + d
            # queued reservations in the tail, [t + d, end) (the others were looked
            # at above)
            for b in later:
                if b.start < end:
                    v = victim(b)
                    if v is not None and not v.running:
                        victims.append(v)
        if len(victims) <= focus.NARROW_ABOVE:
            # each deadline-bound candidate needs somewhere to go (checked jointly
            # for the chosen ones later). On a large pool that search would cost
            # more than the decision: the joint check alone then weeds them out.
            victims = [v for v in victims
                       if leases[v.name].req.type != LeaseType.DEADLINE_MIGRATABLE
                       or self.deadline_slot(leases[v.name], now, pool_name, end) is not None]
        return victims, end

    def _victim_maker(
        self, pool_name: str, now: float, t: float, excluded: Set[str]
    ) -> Callable[[Booking], Victim | None]:
        """What preempting the holder of a booking on the pool means, as a
        :class:`Victim` (``None``: not preemptable now). Made once per pool and
        decision: on a large pool it runs for thousands of leases, so it is kept
        plain (one memo lookup per lease, the named tuple made without keywords)."""
        params = self.pools[pool_name].overhead
        leases, reserved, running = self._leases, self._reserved, Phase.RUNNING
        new = tuple.__new__

        def victim(booking: Booking) -> Victim | None:
            name = booking.lease
            st = leases.get(name)
            # a migration's departure, a trial's slot, down nodes: not what a lease
            # holds now
            if st is None or st.booking is not booking or name in excluded:
                return None
            memo = st.preempt_costs
            got = memo.get(pool_name)
            if got is None:
                got = memo[pool_name] = preempt_costs(st.req, params)
            if not got:
                return None
            action, took, cost, replan = got
            if name in reserved:
                return new(Victim, (name, "replan", st.vms, replan, now, booking.start,
                                    st.req.submitted, st.seq, booking))
            if st.phase != running:
                return None  # resuming, suspending or migrating: not preemptable right now
            # a migration starts at once (its new slot was found for now); the others
            # just in time, as late as lets them vacate by t: max(now, t - took) + took
            late = t - took
            vacate = (now if action == "migrate" or late < now else late) + took
            if vacate >= booking.end:
                return None  # it leaves by itself no later
            since = st.first_start if st.first_start is not None else booking.start
            return new(Victim, (name, action, st.vms, cost, vacate, since, st.req.submitted,
                                st.seq, booking))

        return victim

    def deadline_slot(
        self, st: LeaseState, now: float, pool_name: str, window_end: float
    ) -> Slot | None:
        """The earliest slot ending by the lease's deadline that does not touch the
        preemptor's window: in its pool only from the window's end on."""
        req = st.req
        deadline = req.deadline if req.deadline is not None else inf
        best: Slot | None = None
        home = st.home
        pools = [home] if home is not None else list(self.pools)
        for name in pools:
            length = self.landing_length(st, now, name)
            earliest = max(now, window_end) if name == pool_name else now
            t = self.slots.pools[name].fit(req.vms, req.shape, length, earliest, deadline - length)
            if t is not None and (best is None or t < best.start):
                best = Slot(name, t, length)
        return best

    def landing_length(self, st: LeaseState, now: float, pool: str) -> float:
        """Length of a deadline-bound victim's new booking: a migration's pipeline
        plus the work left, or a re-planned reservation's usual length."""
        if st.phase == Phase.RUNNING:
            assert st.booking is not None
            source = self.pools[st.booking.pool]
            # work left: what it owed minus what it did since its run began, there
            done = (now - (st.running_since or now)) * pace(st.req, source)
            left = (st.remaining - done) / pace(st.req, self.pools[pool])
            return overhead.migrate_run_seconds(st.req, source.overhead) + left
        return self._placement.length(st, pool)
