"""Queue planning: admission, conservative and EASY backfilling, compression
(000 §7.2, 004 §3.2, DESIGN §2.3).

* ``conservative`` — every waiting lease holds a reservation, made at its earliest
  start when it is queued; a later lease takes an earlier hole only if no existing
  reservation moves.
* ``easy`` — only the queue head holds a reservation; any other lease may start now
  if it does not disturb a reservation.
* ``none`` — strict first come, first served: the reference baseline.

Guaranteed leases (deadline, advance reservation, local) always hold a reservation:
they are admitted only with a slot that ends by their deadline.

Compression: when capacity is given back early (a lease ends before its reservation
does, a lease is cancelled, a suspension frees the rest of a slot), every waiting
reservation is re-planned in submission order (as InterGrid's and pyss's
conservative backfilling do) at its earliest start no later than its current one.
Each move respects every other current reservation, so a lease's old slot is always
still free when its turn comes: nothing ever moves later.
"""

from __future__ import annotations

from bisect import insort
from math import inf
from typing import TYPE_CHECKING

from . import overhead, preemption
from .model import (
    Admit,
    Backfilling,
    LeaseType,
    Origin,
    Phase,
    Reject,
    Request,
    Reserve,
)
from .slots import Booking, Segments
from .state import Event, LeaseState

if TYPE_CHECKING:
    from .scheduler import Scheduler


def _describe(req: Request) -> str:
    cpu = f"{req.shape.cpu / 1000:g} cpu"
    return f"{req.vms} VM(s) of {cpu} and {req.shape.memory} MiB for {req.duration:g}s"


def _no_preemption(d: preemption.Decision) -> str:
    if d.policy == "nop":
        return "policy 'nop' never preempts"
    if not d.candidate_sets:
        return "preempting every preemptable lease would not free enough room either"
    return f"policy {d.policy!r} chose none of {d.candidate_sets} candidate sets"


class BackfillMixin:
    """Planning half of :class:`~leasehold.core.scheduler.Scheduler`."""

    def _init_planning(self: Scheduler) -> None:
        #: best-effort leases waiting to start, in submission order
        self._queue: list[LeaseState] = []
        #: leases holding a reservation that has not started yet
        self._waiting: dict[str, None] = {}
        #: leases to admit or re-place at the next plan, in submission order
        self._new: list[str] = []
        #: the EASY/FCFS queue head that holds a reservation
        self._head: str | None = None
        #: capacity was given back ahead of its reservation since the last plan: compress
        self._released = False
        #: some lease left its nodes since the last plan: the EASY queue may move
        self._freed = False
        self._pool_list = list(self.slots.pools.values())

    # ---- queue bookkeeping --------------------------------------------------------
    def _accept(self: Scheduler, req: Request, now: float) -> None:
        if req.name in self.leases:
            self._out.append(Reject(now, req.name, f"a lease named {req.name!r} already exists"))
            return
        st = LeaseState(req, self._seq, remaining=req.duration, actual_left=req.actual_runtime)
        self._seq += 1
        self.leases[req.name] = st
        self._new.append(req.name)

    def _requeue(self: Scheduler, st: LeaseState) -> None:
        """A suspended remainder goes back in original submission order."""
        insort(self._new, st.name, key=lambda n: self.leases[n].seq)

    def _leave_queue(self: Scheduler, st: LeaseState) -> None:
        queue = self._queue
        if queue and st.req.type.best_effort:
            if queue[0] is st:  # usually the head starts
                del queue[0]
            elif st in queue:
                queue.remove(st)
        if self._head == st.name:
            self._head = None

    def _forget_new(self: Scheduler, st: LeaseState) -> None:
        if st.name in self._new:
            self._new.remove(st.name)

    # ---- one planning round ---------------------------------------------------------
    def _plan(self: Scheduler, now: float) -> None:
        for pool in self._pool_list:
            pool.prune(now)
        released, self._released = self._released, False
        freed, self._freed = self._freed or released, False
        if released and len(self._waiting) > (self._head is not None):
            self._compress(now)
        conservative = self.config.backfilling == Backfilling.CONSERVATIVE
        fresh: list[LeaseState] = []
        while self._new:  # a preemption may hand re-planned leases back
            new, self._new = self._new, []
            for name in new:
                st = self.leases[name]
                if st.phase.terminal:
                    continue
                if st.req.type.guaranteed:
                    self._admit_guaranteed(st, now)
                elif self._admit_best_effort(st, now) and conservative:
                    self._place(st, now)
                elif st.phase in (Phase.QUEUED, Phase.SUSPENDED):
                    fresh.append(st)
        if not conservative and self._queue:
            self._run_queue(now, freed, fresh)

    def _compress(self: Scheduler, now: float) -> None:
        slots, leases = self.slots, self.leases
        # the EASY/FCFS head is re-planned by the queue pass itself
        order = sorted(
            (n for n in self._waiting if n != self._head), key=lambda n: leases[n].seq
        )
        for name in order:
            st = leases[name]
            pool = slots.pool_of(name)
            old = pool.bookings[name]
            if old.start <= now:
                continue
            # the length is recomputed, not taken from the booking: start + (end -
            # start) can miss start + remaining by an ulp and let the work outlast it
            length = self._length(st, pool.spec.name)
            t = pool.move_earlier(name, max(now, st.req.earliest), length)
            if t is not None:
                self._book(st, pool.spec.name, t, length, now)

    # ---- admission ------------------------------------------------------------------
    def _candidate_pools(self: Scheduler, st: LeaseState) -> list[str]:
        if st.pool is not None:  # a suspended lease resumes where its memory image is
            return [st.pool]
        if st.req.pool is not None:
            return [st.req.pool] if st.req.pool in self.pool_specs else []
        return list(self.pool_specs)

    def _never_fits(self: Scheduler, st: LeaseState) -> str | None:
        """Why the lease could not run even on its empty pools, if it could not."""
        req = st.req
        pools = self._candidate_pools(st)
        if not pools:
            return f"pool {req.pool!r} does not exist"
        most = max(self.slots.pools[p].max_vms(req.shape) for p in pools)
        if most < req.vms:
            return (f"can never fit: needs {_describe(req)}, "
                    f"but the largest pool holds {most} such VMs")
        return None

    def _admit_best_effort(self: Scheduler, st: LeaseState, now: float) -> bool:
        """Queue a best-effort lease, or reject it if it can never fit."""
        if st.phase == Phase.SUSPENDED:
            if self.config.backfilling != Backfilling.CONSERVATIVE:
                insort(self._queue, st, key=lambda x: x.seq)
            return True
        if st.phase == Phase.QUEUED:  # re-planned after a preemption: admitted before
            return True
        reason = self._never_fits(st)
        if reason is not None:
            self._reject(st, now, reason)
            return False
        st.phase = Phase.QUEUED
        self._out.append(Admit(now, st.name))
        if self.config.backfilling != Backfilling.CONSERVATIVE:
            self._queue.append(st)  # the newest lease has the highest sequence
        return True

    def _admit_guaranteed(self: Scheduler, st: LeaseState, now: float) -> None:
        """Admit a deadline or reservation lease only with a slot that ends in time."""
        req = st.req
        if req.type == LeaseType.ADVANCE_RESERVATION:
            earliest = latest = req.start if req.start is not None else req.earliest
            if earliest < now:
                self._reject(st, now, f"its start t={earliest:g}s is already past (now t={now:g}s)")
                return
            deadline = earliest + req.duration
        else:
            earliest = max(now, req.earliest)
            deadline = req.deadline if req.deadline is not None else earliest + req.duration
            latest = deadline - st.remaining
        fit = self._best_fit(st, earliest, latest)
        if fit is None:
            self._refuse_guaranteed(st, now, earliest, deadline)
            return
        pool, t, length = fit
        if st.phase == Phase.PENDING:
            self._out.append(Admit(now, st.name))
        self._book(st, pool, t, length, now)

    def _refuse_guaranteed(
        self: Scheduler, st: LeaseState, now: float, earliest: float, deadline: float
    ) -> None:
        req = st.req
        reason = self._never_fits(st)
        if reason is not None:
            self._reject(st, now, reason)
            return
        may_preempt = req.origin == Origin.LOCAL or req.type == LeaseType.ADVANCE_RESERVATION
        decision = None
        if may_preempt:
            decision, placed = self._preempt(st, now, earliest)
            self.decisions.append(decision)
            if placed:
                return
        if req.type == LeaseType.ADVANCE_RESERVATION:
            msg = f"no room for {_describe(req)} at its start t={earliest:g}s"
        else:
            msg = (
                f"no slot for {_describe(req)} from t={earliest:g}s that ends by its "
                f"deadline t={deadline:g}s"
            )
        if decision is not None:
            msg += "; " + _no_preemption(decision)
        self._reject(st, now, msg)

    def _reject(self: Scheduler, st: LeaseState, now: float, reason: str) -> None:
        st.phase = Phase.REJECTED
        st.reason = reason
        st.end = now
        self._bump(st)
        self._out.append(Reject(now, st.name, reason))

    # ---- placement ------------------------------------------------------------------
    def _length(self: Scheduler, st: LeaseState, pool: str) -> float:
        if not st.resuming:
            return st.remaining
        if st.landing is not None:  # a migration lands: its pipeline, not a resume
            return st.remaining + st.landing
        return st.remaining + overhead.resume_seconds(st.req, self.pool_specs[pool].overhead)

    def _best_fit(
        self: Scheduler, st: LeaseState, earliest: float, latest: float = inf
    ) -> tuple[str, float, float] | None:
        """(pool, start, length) of the earliest slot over the lease's candidate pools;
        ties go to the pool listed first."""
        best: tuple[str, float, float] | None = None
        req = st.req
        for name in self._candidate_pools(st):
            length = self._length(st, name)
            t = self.slots.pools[name].fit(req.vms, req.shape, length, earliest, latest)
            if t is not None and (best is None or t < best[1]):
                best = (name, t, length)
        return best

    def _book(
        self: Scheduler, st: LeaseState, pool: str, start: float, length: float, now: float,
        segments: Segments | None = None,
    ) -> None:
        """Hold ``[start, start+length)`` for the lease; start it if that is now."""
        end = start + length
        if segments is None:
            if st.resuming:
                ran_from = start + length - st.remaining
                segments = (("resume", start, ran_from), ("run", ran_from, end))
            else:
                segments = (("run", start, end),)
        req = st.req
        self.slots.book(pool, Booking(st.name, start, end, req.vms, req.shape, None, segments))
        st.pool = pool
        if start <= now:
            self._start(st, now)
            return
        if not st.resuming:
            st.phase = Phase.SCHEDULED
        self._waiting[st.name] = None
        self._bump(st)
        self._push(start, Event.START, st)
        self._out.append(Reserve(now, st.name, start, end, pool))

    def _place(self: Scheduler, st: LeaseState, now: float) -> None:
        """Conservative: give a best-effort lease its earliest reservation."""
        earliest = max(now, st.req.earliest)
        fit = self._best_fit(st, earliest)
        assert fit is not None  # admission checked that it can fit in an empty pool
        pool, t, length = fit
        if t > now and earliest <= now and self._try_hole(st, now):
            return
        self._book(st, pool, t, length, now)

    def _try_hole(self: Scheduler, st: LeaseState, now: float) -> bool:
        """Suspend-before-blocking (Haizea): run a suspendable lease in the hole before
        the reservation that blocks it, suspending it in time for that reservation.

        Only worth it when the work done exceeds what suspending and resuming cost:
        the run part must be at least the suspend plus resume time.
        """
        if not self.config.suspend_before_blocking:
            return False
        req = st.req
        if req.type != LeaseType.BEST_EFFORT_SUSPENDABLE:
            return False
        for name in self._candidate_pools(st):
            pool = self.slots.pools[name]
            window = pool.free_window(req.vms, req.shape, now)
            if window == inf or window <= 0:
                continue
            params = pool.spec.overhead
            h_s = overhead.suspend_seconds(req, params)
            h_r = overhead.resume_seconds(req, params)
            lead = h_r if st.resuming else 0.0
            run = window - h_s - lead
            if run < h_s + h_r or run >= st.remaining:
                continue
            run_from, run_to = now + lead, now + lead + run
            segments: Segments = (
                *((("resume", now, run_from),) if st.resuming else ()),
                ("run", run_from, run_to),
                ("suspend", run_to, now + window),
            )
            self._book(st, name, now, window, now, segments)
            return True
        return False

    def _run_queue(self: Scheduler, now: float, released: bool, fresh: list[LeaseState]) -> None:
        """EASY and FCFS: start the head while it fits, reserve for the first that does
        not, then (EASY) start any later lease that fits now without moving a reservation."""
        queue = self._queue
        head_changed = bool(queue) and (queue[0].name != self._head or released)
        if head_changed:
            while queue:
                st = queue[0]
                earliest = max(now, st.req.earliest)
                booking = self.slots.booking(st.name)
                if booking is not None:  # the head already holds a reservation: compress it
                    table = self.slots.pool_of(st.name)
                    length = self._length(st, table.spec.name)
                    t = table.move_earlier(st.name, earliest, length)
                    if t is None:
                        break  # it cannot start earlier: the reservation stands
                    self._waiting.pop(st.name, None)
                    fit = (table.spec.name, t, length)
                else:
                    fit = self._best_fit(st, earliest)
                assert fit is not None
                pool, t, length = fit
                if booking is None and t > now and earliest <= now and self._try_hole(st, now):
                    continue  # it runs in the hole now; the next lease is the head
                self._book(st, pool, t, length, now)  # starting it removes it from the queue
                if t > now:
                    self._head = st.name
                    break
        if self.config.backfilling != Backfilling.EASY or len(queue) < 2:
            return
        pools = self._pool_list
        # cheap bound on what can start now: most candidates fail on size alone
        avail = max(p.free_now(queue[0].req.shape, now) for p in pools)
        if self.config.suspend_before_blocking:
            candidates = queue[1:] if head_changed else fresh
        elif head_changed:
            head = queue[0]
            candidates = [st for st in queue if st.vms <= avail and st is not head]
        else:
            candidates = [st for st in fresh if st.vms <= avail]
        waiting = self._waiting
        for st in candidates:
            req = st.req
            if req.earliest > now or st.phase not in (Phase.QUEUED, Phase.SUSPENDED):
                continue
            if st.name in waiting:  # a former head keeps its reservation
                continue
            fit = self._best_fit(st, now, now) if req.vms <= avail else None
            if fit is not None:
                self._book(st, fit[0], now, fit[2], now)
                avail = max(p.free_now(req.shape, now) for p in pools)
            else:
                self._try_hole(st, now)

