"""Preempting for a local request or an advance reservation, and enacting the
choice (DESIGN §2.4; 000 §2.1, §5, §6).

When a preemptor does not fit at ``t`` (its ready time, or its start), the scheduler

1. gathers the *preemptable* leases with a booking in the window, each with what
   preempting it means (:meth:`_victims`):

   * external ``BestEffortCancellable`` running → cancelled (``stopSeconds``);
   * external ``BestEffortSuspendable`` running → suspended (eq. 7), its remainder
     re-queued in submission order and resumed later;
   * external ``DeadlineMigratable`` running → migrated (eq. 8), only if a slot that
     ends by its deadline exists off the preemptor's window (later in this pool, or
     in another pool);
   * any of these three still queued with a reservation that has not started →
     re-planned (δ); a queued ``DeadlineMigratable`` only with a slot by its deadline.

   A running victim is stopped or suspended *just in time*: as late as lets it
   vacate by ``t`` (now, if that is already too late). One whose suspension would
   end after its booking does anyway is no candidate: it leaves sooner by itself.
2. builds one :class:`~.preemption.instance.Instance` per pool the preemptor may
   use, over ``[t, t + d + Δ)`` with ``Δ`` the longest vacate delay among them, and
   asks the configured policy (:mod:`.preemption`);
3. books tentative slots for the chosen deadline-bound victims, jointly; if one has
   no slot any more, it is not preemptable after all, and the decision is taken again
   without it;
4. enacts: victims are cancelled, suspended, migrated or re-planned, with their
   overheads as segments of their bookings; the preemptor is booked from
   ``t + Δ(C)``, when the last victim has vacated — the delay the decision records.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Callable
from dataclasses import dataclass, replace
from math import inf
from typing import TYPE_CHECKING

from . import overhead, preemption
from .model import Admit, Backfilling, LeaseType, Origin, OverheadParams, Phase, Request
from .preemption import focus
from .preemption import instance as problem
from .preemption.instance import Victim
from .slots import Booking, clip
from .state import Event, LeaseState, PreemptCosts

if TYPE_CHECKING:
    from .scheduler import Scheduler

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
#: key of a tentative slot held while checking deadline-bound victims jointly
HOLD = "#hold"


def _costs(req: Request, params: OverheadParams, action: str) -> tuple[float, float]:
    """(seconds from the order until the lease has vacated, overhead h(L))."""
    if action == "replan":
        return 0.0, overhead.replan_overhead(req, params)
    if action == "migrate":
        return overhead.migrate_leave_seconds(req, params), overhead.migrate_overhead(req, params)
    if action == "cancel":
        return params.stop_seconds, overhead.cancel_overhead(req, params)
    return overhead.suspend_seconds(req, params), overhead.suspend_overhead(req, params)


def _preempt_costs(req: Request, params: OverheadParams) -> PreemptCosts:
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
    pool: str
    start: float
    length: float


class EnactmentMixin:
    """Preemption half of :class:`~leasehold.core.scheduler.Scheduler`."""

    def _preempt(
        self: Scheduler, st: LeaseState, now: float, t: float
    ) -> tuple[preemption.Decision, bool]:
        """Try to place ``st`` at ``t`` by preempting; book it if that works.

        Returns the decision and whether ``st`` is now booked. If the chosen victims
        would vacate later than capacity frees up by itself, nobody is preempted and
        ``st`` is booked at that earlier time: waiting is then no slower."""
        req = st.req
        policy = preemption.get(self.config.policy)
        narrow = not preemption.sees_all(self.config.policy)
        excluded: set[str] = set()
        while True:
            pools = self._candidate_pools(st)
            instances, windows = [], []
            for name in pools:
                victims, end = self._victims(name, req, now, t, excluded)
                instances.append(problem.build(
                    self.slots.pools[name], req.shape, req.vms, t, end, victims, now, narrow))
                windows.append(end)
            choice = policy(instances, self.config)
            record = preemption.Decision(
                time=now, preemptor=req.name, policy=self.config.policy,
                candidate_sets=choice.candidate_sets, exact=choice.exact, chosen=(),
                overhead_seconds=0.0, vacate_seconds=0.0,
            )
            if not choice.members:
                return record, False
            inst = instances[choice.instance]
            chosen = [inst.candidates[i].victim for i in choice.members]
            start = max(t, max(v.vacate for v in chosen))
            if start > t:
                sooner = self._best_fit(st, t, start)
                if sooner is not None:
                    if st.phase == Phase.PENDING:
                        self._out.append(Admit(now, req.name))
                    self._book(st, *sooner, now)
                    return replace(record, vacate_seconds=sooner[1] - t), True
            slots, failed = self._hold_slots(chosen, now, inst.pool, windows[choice.instance])
            if failed is not None:
                excluded.add(failed)
                continue
            self._enact(st, now, t, inst.pool, chosen, slots)
            return replace(
                record, chosen=tuple(v.name for v in chosen),
                overhead_seconds=sum(v.overhead for v in chosen), vacate_seconds=start - t,
            ), True

    # ---- who can be preempted ---------------------------------------------------------
    def _victims(
        self: Scheduler, pool_name: str, req: Request, now: float, t: float, excluded: set[str]
    ) -> tuple[list[Victim], float]:
        """Preemptable leases with a booking in the preemptor's window, and the
        window's end: ``d`` after the latest of ``t`` and their vacate times."""
        pool = self.slots.pools[pool_name]
        victim = self._victim_maker(pool_name, now, t, excluded)
        victims: dict[str, Victim] = {}
        end = t + req.duration
        # bookings scanned in the table's order, not by name: a large pool has
        # thousands, and the instance orders the ones it keeps
        for name, b in pool.bookings.items():
            if b.start < end and b.end > t:
                v = victim(name, b)
                if v is not None:
                    victims[name] = v
        latest = max((v.vacate for v in victims.values()), default=t)
        if latest > t:
            # computed as the preemptor's booking end will be, max(t, vacate) + d,
            # so that no float rounding puts that end past the window's
            tail, end = end, latest + req.duration
            # queued reservations in the tail (the others were looked at above)
            for name, b in pool.bookings.items():
                if tail <= b.start < end:
                    v = victim(name, b)
                    if v is not None and not v.running:
                        victims[name] = v
        if len(victims) <= focus.NARROW_ABOVE:
            # each deadline-bound candidate needs somewhere to go (checked jointly
            # for the chosen ones later). On a large pool that search would cost
            # more than the decision: the joint check alone then weeds them out.
            deadline_bound = [v for v in victims.values()
                              if self.leases[v.name].req.type == LeaseType.DEADLINE_MIGRATABLE]
            for v in deadline_bound:
                if self._deadline_slot(self.leases[v.name], now, pool_name, end) is None:
                    del victims[v.name]
        return list(victims.values()), end

    def _victim_maker(
        self: Scheduler, pool_name: str, now: float, t: float, excluded: set[str]
    ) -> Callable[[str, Booking], Victim | None]:
        """What preempting a lease with a booking on the pool means, as a
        :class:`Victim` (``None``: not preemptable now). Made once per pool and
        decision: on a large pool it runs for thousands of leases, so it is kept
        plain (one memo lookup per lease, the named tuple made without keywords)."""
        params = self.pool_specs[pool_name].overhead
        leases, waiting, running = self.leases, self._waiting, Phase.RUNNING
        new = tuple.__new__

        def victim(name: str, booking: Booking) -> Victim | None:
            st = leases.get(name)  # None for a migration's source booking
            if st is None or name in excluded:
                return None
            memo = st.preempt_costs
            got = memo.get(pool_name)
            if got is None:
                got = memo[pool_name] = _preempt_costs(st.req, params)
            if not got:
                return None
            action, took, cost, replan = got
            if name in waiting:
                return new(Victim, (name, "replan", st.vms, replan, now, booking.start,
                                    st.req.submitted, st.seq))
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
                                st.seq))

        return victim

    def _deadline_slot(
        self: Scheduler, st: LeaseState, now: float, pool_name: str, window_end: float
    ) -> Slot | None:
        """The earliest slot ending by the lease's deadline that does not touch the
        preemptor's window: in its pool only from the window's end on."""
        req = st.req
        deadline = req.deadline if req.deadline is not None else inf
        best: Slot | None = None
        pools = [req.pool] if req.pool is not None else list(self.pool_specs)
        for name in pools:
            length = self._landing_length(st, now, name)
            earliest = max(now, window_end) if name == pool_name else now
            t = self.slots.pools[name].fit(req.vms, req.shape, length, earliest, deadline - length)
            if t is not None and (best is None or t < best.start):
                best = Slot(name, t, length)
        return best

    def _landing_length(self: Scheduler, st: LeaseState, now: float, pool: str) -> float:
        """Length of a deadline-bound victim's new booking: a migration's pipeline
        plus the work left, or a re-planned reservation's usual length."""
        if st.phase == Phase.RUNNING:
            params = self.slots.pool_of(st.name).spec.overhead
            left = st.remaining - (now - (st.running_since or now))
            return overhead.migrate_run_seconds(st.req, params) + left
        return self._length(st, pool)

    def _hold_slots(
        self: Scheduler, chosen: list[Victim], now: float, pool_name: str, window_end: float
    ) -> tuple[dict[str, Slot], str | None]:
        """Find slots for the chosen deadline-bound victims one after another, each
        holding its slot while the next is sought; release them all. Returns the
        slots, or the first victim left without one."""
        slots: dict[str, Slot] = {}
        failed = None
        for v in chosen:
            st = self.leases[v.name]
            if st.req.type != LeaseType.DEADLINE_MIGRATABLE:
                continue
            slot = self._deadline_slot(st, now, pool_name, window_end)
            if slot is None:
                failed = v.name
                break
            slots[v.name] = slot
            self.slots.book(slot.pool, Booking(v.name + HOLD, slot.start, slot.start + slot.length,
                                               st.req.vms, st.req.shape, None, ()))
        for name in slots:
            self.slots.unbook(name + HOLD)
        return slots, failed

    # ---- enactment ------------------------------------------------------------------------
    def _enact(
        self: Scheduler, st: LeaseState, now: float, t: float, pool_name: str,
        chosen: list[Victim], slots: dict[str, Slot],
    ) -> None:
        req = st.req
        reason = f"preempted by {req.name} (policy {self.config.policy})"
        for v in chosen:
            victim = self.leases[v.name]
            victim.preemptions += 1
            victim.preempted_by = req.name
            if v.action == "replan":
                self._replan(victim, now, slots.get(v.name))
            elif v.action == "migrate":
                slot = slots[v.name]
                self._migrate(victim, now, slot.pool, reason, slot.start)
            else:
                self._stop_by(victim, now, t, v, reason)
        start = max(t, max(v.vacate for v in chosen))
        pool = self.slots.pools[pool_name]
        if pool.fit(req.vms, req.shape, req.duration, start, start) != start:
            raise RuntimeError(  # the instance said it fits: the two models disagree
                f"slot table inconsistent: {req.name} does not fit at t={start} after preemption"
            )
        if st.phase == Phase.PENDING:
            self._out.append(Admit(now, req.name))
        self._book(st, pool_name, start, req.duration, now)
        self._released = True  # victims gave capacity back: others may move earlier

    def _replan(self: Scheduler, st: LeaseState, now: float, slot: Slot | None) -> None:
        """A queued reservation gives its slot up and is placed again."""
        self.slots.unbook(st.name)
        self._waiting.pop(st.name, None)
        self._bump(st)
        st.overhead += overhead.replan_overhead(st.req, self.pool_specs[st.pool].overhead)  # type: ignore[index]
        if self._head == st.name:
            self._head = None  # the EASY queue pass reserves for its head again
        if not st.resuming:
            st.pool = None  # it never ran: any pool will do
        if slot is not None:  # deadline-bound: its slot was checked jointly with the others
            self._book(st, slot.pool, slot.start, slot.length, now)
        elif self.config.backfilling == Backfilling.CONSERVATIVE:
            insort(self._new, st.name, key=lambda n: self.leases[n].seq)

    def _stop_by(self: Scheduler, st: LeaseState, now: float, t: float, v: Victim,
                 reason: str) -> None:
        """Cancel or suspend a running victim so that it vacates at ``v.vacate``:
        now, or later by a timer when there is time before ``t``."""
        suspend = v.action == "suspend"
        pool = self.slots.pool_of(st.name)
        took = (overhead.suspend_seconds(st.req, pool.spec.overhead) if suspend
                else pool.spec.overhead.stop_seconds)
        begin = max(now, t - took)  # as in _victim, so equal floats compare equal
        if begin <= now:
            if suspend:
                self._suspend(st, now, reason, planned=False)
            else:
                self._cancel(st, now, reason)
            return
        kind = "suspend" if suspend else "stop"
        booking = pool.bookings[st.name]
        body = tuple(s for s in booking.segments if s[0] not in ("suspend", "stop"))
        segments = clip((*body, (kind, begin, v.vacate)), begin)
        pool.truncate(st.name, v.vacate, segments)
        self._bump(st)
        if st.running_since is not None and st.running_since + st.actual_left <= begin:
            self._push(st.running_since + st.actual_left, Event.DONE, st)  # done before
        self._push(begin, Event.SUSPEND if suspend else Event.STOP, st)

