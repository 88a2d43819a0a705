"""The lease scheduler: a sans-I/O state machine (DESIGN §2).

Inputs are queued with the time they happen (:meth:`Scheduler.submit`,
:meth:`Scheduler.finished`, :meth:`Scheduler.cancel`); :meth:`Scheduler.advance`
then runs every internal timer up to ``now``, applies the inputs, plans, and returns
the actions the shell must carry out. All events of one instant are handled
together before planning, so simultaneous arrivals and completions give one plan.

Determinism: nothing iterates a set or a dict in hash order; the event heap orders
by (time, event kind, submission sequence), and queues and compression go by
submission sequence.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from math import inf

from . import overhead
from .backfill import BackfillMixin
from .enactment import EnactmentMixin
from .model import (
    Action,
    Cancel,
    Complete,
    Migrate,
    Phase,
    PoolSpec,
    Request,
    Resume,
    SchedulerConfig,
    Start,
    Suspend,
)
from .preemption import Decision
from .slots import Booking, SlotTable, clip
from .state import Event, LeaseState

#: key of a migrating lease's booking on the nodes it is leaving
SOURCE = "#migrating-from"


class Scheduler(BackfillMixin, EnactmentMixin):
    def __init__(self, pools: Sequence[PoolSpec], config: SchedulerConfig | None = None) -> None:
        if not pools:
            raise ValueError("a cluster needs at least one pool")
        self.config = config or SchedulerConfig()
        self.pool_specs: dict[str, PoolSpec] = {p.name: p for p in pools}
        self.slots = SlotTable(pools)
        self._node_names = {p.name: p.node_names() for p in pools}
        self.leases: dict[str, LeaseState] = {}
        self.decisions: list[Decision] = []
        self.now = -inf
        self._heap: list[tuple[float, int, int, int, str]] = []
        self._inputs: list[tuple[str, str, Request | str | None]] = []
        self._input_time = -inf
        self._seq = 0
        self._out: list[Action] = []
        self._init_planning()

    # ---- inputs -----------------------------------------------------------------
    def submit(self, req: Request, now: float) -> None:
        self._queue_input(now, "submit", req.name, req)

    def finished(self, lease: str, now: float) -> None:
        """The shell saw the lease's work end (pods succeeded) before its reservation did."""
        self._queue_input(now, "finished", lease, None)

    def cancel(self, lease: str, now: float, reason: str = "cancelled by its owner") -> None:
        self._queue_input(now, "cancel", lease, reason)

    def _queue_input(self, now: float, kind: str, lease: str, arg: Request | str | None) -> None:
        if now < self.now or (self._inputs and now != self._input_time):
            raise ValueError(
                f"input at t={now} out of order: the scheduler is at t={self.now}; "
                "call advance() before moving on"
            )
        self._input_time = now
        self._inputs.append((kind, lease, arg))

    # ---- the clock ----------------------------------------------------------------
    def next_event_time(self) -> float | None:
        """When :meth:`advance` next has something to do on its own."""
        heap = self._heap
        while heap:
            t, _, _, version, name = heap[0]
            if self.leases[name].version == version:
                return t
            heapq.heappop(heap)
        return None

    def advance(self, now: float) -> list[Action]:
        """Run everything up to and including ``now``; return the actions taken."""
        if now < self.now:
            raise ValueError(f"time runs forward: advance({now}) after t={self.now}")
        self._out = []
        while True:
            t = self.next_event_time()
            t_in = self._input_time if self._inputs else None
            if t is not None and t <= now:
                step = t if t_in is None or t <= t_in else t_in
            elif t_in is not None and t_in <= now:
                step = t_in
            else:
                break
            self.now = step
            if t == step:
                self._run_timers(step)
            if t_in == step:
                self._apply_inputs(step)
            self._plan(step)
        self.now = now
        return self._out

    def _push(self, t: float, kind: Event, st: LeaseState) -> None:
        heapq.heappush(self._heap, (t, kind, st.seq, st.version, st.name))

    def _run_timers(self, now: float) -> None:
        heap, leases = self._heap, self.leases
        while heap and heap[0][0] == now:
            _, kind, _, version, name = heapq.heappop(heap)
            st = leases[name]
            if st.version != version:
                continue
            if kind == Event.VACATE:
                self._vacate(st, now)
            elif kind == Event.DONE:
                self._complete(st, now)
            elif kind == Event.SUSPEND:
                self._suspend(st, now, self._planned_reason(st, "suspended"), planned=True)
            elif kind == Event.STOP:
                self._cancel(st, now, self._planned_reason(st, "cancelled"))
            elif kind == Event.RUNNING:
                st.phase = Phase.RUNNING
            else:
                self._start(st, now)

    def _planned_reason(self, st: LeaseState, what: str) -> str:
        if st.preempted_by is not None:
            return f"{what}: preempted by {st.preempted_by} (policy {self.config.policy})"
        return f"{what} before a reservation that blocks it"

    def _apply_inputs(self, now: float) -> None:
        inputs, self._inputs = self._inputs, []
        for kind, name, arg in inputs:
            st = self.leases.get(name)
            if kind == "submit":
                assert isinstance(arg, Request)
                self._accept(arg, now)
            elif st is None or st.phase.terminal:
                continue  # a report about a lease we no longer track changes nothing
            elif kind == "finished":
                if st.phase in (Phase.RUNNING, Phase.RESUMING):
                    self._complete(st, now)
            else:
                self._cancel(st, now, str(arg))

    # ---- lifecycle transitions ------------------------------------------------------
    def _bump(self, st: LeaseState) -> None:
        """Invalidate the lease's timers. A migration's source is vacated on its own
        schedule, whatever happens to the lease meanwhile: its timer is renewed."""
        st.version += 1
        if st.migrations:  # cheap test first: most leases never migrate
            source = self.slots.booking(st.name + SOURCE)
            if source is not None:
                self._push(source.end, Event.VACATE, st)

    def _start(self, st: LeaseState, now: float) -> None:
        """The lease's booking begins: bind it to nodes and run (or resume) it."""
        pool = self.slots.pools[st.pool]  # type: ignore[index]
        names = self._node_names[st.pool]  # type: ignore[index]
        st.nodes = tuple([names[i] for i in pool.occupy(st.name, now)])
        self._waiting.pop(st.name, None)
        self._leave_queue(st)
        self._bump(st)
        booking = pool.bookings[st.name]
        if st.resuming:
            run_from = booking.segments[0][2]  # end of the resume segment
            st.phase = Phase.RESUMING
            self._out.append(Resume(now, st.name, st.nodes, run_from))
            self._push(run_from, Event.RUNNING, st)
            st.resuming = False
            st.landing = None
        else:
            run_from = now
            st.phase = Phase.RUNNING
            self._out.append(Start(now, st.name, st.nodes))
        if st.first_start is None:
            st.first_start = now
        st.running_since = run_from
        # the work never outlasts the booking, whatever the float rounding
        self._push(min(run_from + st.actual_left, booking.end), Event.DONE, st)
        kind, at, _ = booking.segments[-1]
        if kind == "suspend":
            self._push(at, Event.SUSPEND, st)

    def _account(self, st: LeaseState, now: float) -> None:
        """Credit the work done since the current run segment began."""
        if st.running_since is not None and now > st.running_since:
            ran = now - st.running_since
            st.ran += ran
            st.remaining = max(0.0, st.remaining - ran)
            st.actual_left = max(0.0, st.actual_left - ran)
        st.running_since = None

    def _complete(self, st: LeaseState, now: float) -> None:
        self._account(st, now)
        booking = self.slots.unbook(st.name)
        if booking.end > now:
            self._released = True
        self._freed = True
        st.phase = Phase.COMPLETED
        st.end = now
        st.remaining = st.actual_left = 0.0
        self._bump(st)
        self._out.append(Complete(now, st.name))

    def _suspend(self, st: LeaseState, now: float, reason: str, planned: bool) -> None:
        """Stop a running lease's VMs and write them out; it is re-queued once they
        vacate. A planned suspension is the booking's closing segment and ends with it."""
        pool = self.slots.pool_of(st.name)
        params = pool.spec.overhead
        self._account(st, now)
        booking = pool.bookings[st.name]
        if planned:
            vacated = booking.end
        else:
            vacated = now + overhead.suspend_seconds(st.req, params)
            if vacated > booking.end:  # the caller must leave room for the overhead
                raise ValueError(f"suspending {st.name} at t={now} would outlast its booking")
        if booking.end > vacated:
            self._released = True
        segments = (*(s for s in booking.segments if s[0] != "suspend"), ("suspend", now, vacated))
        pool.truncate(st.name, vacated, clip(segments, now))
        st.phase = Phase.SUSPENDING
        st.suspensions += 1
        st.overhead += overhead.suspend_overhead(st.req, params)
        self._bump(st)
        self._push(vacated, Event.VACATE, st)
        self._out.append(Suspend(now, st.name, vacated, reason))

    def _migrate(
        self, st: LeaseState, now: float, pool: str, reason: str, start: float | None = None
    ) -> None:
        """Move a running lease: its VMs are suspended one after another on the source
        nodes (which they leave once all are written out), copied, and resumed on the
        target, pipelined as in 000 eq. 8. The caller found the target slot
        (``start``, default now), so the migration never starts without somewhere to
        land. A target that starts later is a reservation: the lease waits, written
        out, and the pipeline's overhead opens its booking there."""
        req = st.req
        source = self.slots.pool_of(st.name)
        params = source.spec.overhead
        self._account(st, now)
        at = now if start is None else start
        left_source = now + overhead.migrate_leave_seconds(req, params)
        pipeline = overhead.migrate_run_seconds(req, params)
        booking = source.bookings[st.name]
        if booking.end > left_source:
            self._released = True
        segments = clip((*booking.segments, ("migrate-out", now, left_source)), now)
        source.truncate(st.name, left_source, segments)
        self.slots.rename(st.name, st.name + SOURCE)
        st.phase = Phase.MIGRATING
        st.migrations += 1
        st.overhead += overhead.migrate_overhead(req, params)
        self._bump(st)  # and the source's VACATE timer at left_source
        running = at + pipeline
        if at > now:
            st.resuming = True
            st.landing = pipeline
            self._book(st, pool, at, pipeline + st.remaining, now,
                       (("migrate-in", at, running), ("run", running, running + st.remaining)))
            self._out.append(Migrate(now, st.name, (), running))
            return
        end = running + st.remaining
        target = Booking(st.name, now, end, req.vms, req.shape, None,
                         (("migrate-in", now, running), ("run", running, end)))
        self.slots.book(pool, target)
        st.pool = pool
        names = self._node_names[pool]
        st.nodes = tuple([names[i] for i in self.slots.pools[pool].occupy(st.name, now)])
        st.running_since = running
        self._push(running, Event.RUNNING, st)
        self._push(running + st.actual_left, Event.DONE, st)
        self._out.append(Migrate(now, st.name, st.nodes, running))

    def _vacate(self, st: LeaseState, now: float) -> None:
        source = st.name + SOURCE
        if source in self.slots.where:  # a migration left its old nodes
            self.slots.unbook(source)
            self._freed = True
            return
        if st.phase not in (Phase.SUSPENDING, Phase.CANCELLED) or st.name not in self.slots.where:
            return  # a migration's source timer, renewed once too often
        self.slots.unbook(st.name)
        self._freed = True
        self._bump(st)
        if st.phase == Phase.SUSPENDING:
            st.phase = Phase.SUSPENDED
            st.resuming = True
            self._requeue(st)

    def _cancel(self, st: LeaseState, now: float, reason: str) -> None:
        """Cancel a lease wherever it is; running VMs are stopped first."""
        booking = self.slots.booking(st.name)
        self._waiting.pop(st.name, None)
        self._leave_queue(st)
        self._forget_new(st)
        phase = st.phase
        st.phase = Phase.CANCELLED
        st.end = now
        st.reason = reason
        self._bump(st)
        if booking is not None:
            if phase in (Phase.RUNNING, Phase.RESUMING):
                self._account(st, now)
                pool = self.slots.pool_of(st.name)
                # stopping takes stopSeconds, but never past the booking: others may
                # hold the nodes from its end on
                stopped = min(now + pool.spec.overhead.stop_seconds, booking.end)
                if booking.end > stopped:
                    self._released = True
                if stopped <= now:
                    self.slots.unbook(st.name)
                    self._freed = True
                else:
                    body = tuple(s for s in booking.segments if s[0] != "stop")
                    segments = (*body, ("stop", now, stopped))
                    pool.truncate(st.name, stopped, clip(segments, now))
                    self._push(stopped, Event.VACATE, st)
            elif phase == Phase.SUSPENDING:
                self._push(booking.end, Event.VACATE, st)  # the suspension still has to finish
            elif phase == Phase.MIGRATING:
                self.slots.unbook(st.name)  # the target; the source still has to be vacated
                self._released = True
                source = self.slots.booking(st.name + SOURCE)
                if source is not None:
                    self._push(source.end, Event.VACATE, st)
            else:
                self.slots.unbook(st.name)
                self._released = True
        self._out.append(Cancel(now, st.name, reason))

