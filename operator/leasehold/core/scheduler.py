"""The lease scheduler: a sans-I/O state machine (DESIGN §2), composed of parts.

* :class:`~.lifecycle.Lifecycle` — the leases, their bookings, transitions and timers;
* :class:`~.placement.Placement` — candidate pools and the earliest slot (read-only);
* :class:`~.victims.Victims` and :class:`~.enactment.Preemptor` — who may be
  preempted, the policy's choice, and its enactment;
* :class:`~.planning.Planner` — admission, queues, backfilling and compression;
* :class:`~.dispatch.Dispatcher` — the pool an external lease that names none is
  sent to, at its submission (DESIGN §2.5; none under the default ``earliest``);

over the :class:`~.slots.SlotTable`. :class:`Scheduler` wires them and keeps time.

Inputs are queued with the time they happen (:meth:`Scheduler.submit`,
:meth:`Scheduler.finished`, :meth:`Scheduler.cancel`, :meth:`Scheduler.fail`);
:meth:`Scheduler.advance` then runs every timer up to ``now``, applies the inputs,
plans, and returns the actions the shell must carry out. All events of one instant
are handled together before planning, so simultaneous arrivals and completions give
one plan.
:func:`leasehold.core.replay.replay` drives it through a stream of timed inputs.

Determinism: nothing iterates a set or a dict in hash order; timers are ordered by
(time, kind, submission sequence), and queues and compression go by submission
sequence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from heapq import heapify, heappop
from math import inf

from .dispatch import Dispatcher
from .enactment import Preemptor
from .images import Images, Transfer
from .lease import LeaseState
from .lifecycle import Lifecycle
from .model import (
    Absence,
    Action,
    Capacity,
    Dispatch,
    Phase,
    PoolSpec,
    Request,
    SchedulerConfig,
)
from .placement import Placement
from .planning import Planner
from .preemption import Decision
from .slots import DOWN, Booking, SlotTable
from .timers import Timer
from .victims import Victims
from .view import LeaseView

#: the phases in which a lease may be on nodes
_HOLDING = frozenset((Phase.RUNNING, Phase.RESUMING, Phase.MIGRATING))

#: an input waiting for its instant: (kind, lease or pool, the request, the reason
#: or the capacity)
_Input = tuple[str, str, Request | str | Capacity | Absence | None]


#: a cancellation's reason when none is given
CANCELLED = "cancelled by its owner"


class Scheduler:
    def __init__(self, pools: Sequence[PoolSpec], config: SchedulerConfig | None = None) -> None:
        if not pools:
            raise ValueError("a cluster needs at least one pool")
        self.config = config or SchedulerConfig()
        #: sends external leases that name no pool to one (DESIGN §2.5); a
        #: configuration naming no strategy is refused here
        self.dispatcher = Dispatcher(self.config)
        #: the pools by name, in the cluster's order (the tie-breaker between pools)
        self.pools: Mapping[str, PoolSpec] = {p.name: p for p in pools}
        self.slots = SlotTable(pools)
        #: image deployment (DESIGN §2.6): only when some pool deploys images, so
        #: that the others plan exactly as before
        self.images = Images(pools) if any(p.images is not None for p in pools) else None
        self.lifecycle = Lifecycle(self.slots, self.pools, self.config, self.images)
        self.placement = Placement(self.slots, self.pools, self.images)
        self.victims = Victims(self.slots, self.pools, self.lifecycle.leases,
                               self.lifecycle.reserved, self.placement, self.lifecycle,
                               self.config.suspension)
        self.preemptor = Preemptor(self.config, self.slots, self.pools, self.lifecycle,
                                   self.placement, self.victims)
        self.planner = Planner(self.config, self.slots, self.lifecycle, self.placement,
                               self.preemptor)
        #: ``next_event_time()``: when :meth:`advance` next has something to do on its
        #: own (the earliest timer, or the end of a hold), or ``None``. The timers' own
        #: method but during a hold: drivers ask it once per step
        self.next_event_time: Callable[[], float | None] = self.lifecycle.timers.next_time
        #: the time of the last :meth:`advance`
        self.now = -inf
        self._inputs: list[_Input] = []
        self._input_time = -inf
        #: the pools removed: what is written out there is lost
        self.dead: set[str] = set()
        #: an :class:`~.model.Absence` holds every start until this instant
        self.hold_until = -inf
        #: the hold's end has yet to come (the leases due meanwhile placed again)
        self._holding = False

    # ---- inputs -----------------------------------------------------------------
    def submit(self, req: Request, now: float) -> None:
        self._queue_input(now, "submit", req.name, req)

    def finished(self, lease: str, now: float) -> None:
        """The shell saw the lease's work end (pods succeeded) before its reservation did."""
        self._queue_input(now, "finished", lease, None)

    def cancel(self, lease: str, now: float, reason: str = CANCELLED) -> None:
        self._queue_input(now, "cancel", lease, reason)

    def fail(self, lease: str, now: float, reason: str) -> None:
        """The shell could not run the lease (e.g. the cluster refused its pods)."""
        self._queue_input(now, "fail", lease, reason)

    def capacity(self, change: Capacity, now: float) -> None:
        """A pool's nodes from ``now`` on (:class:`~.model.Capacity`)."""
        self._queue_input(now, "capacity", change.pool.name, change)

    def absent(self, absence: Absence, now: float) -> None:
        """The shell was away from ``now`` until ``absence.until`` (:class:`~.model.Absence`)."""
        self._queue_input(now, "absent", "", absence)

    def _queue_input(self, now: float, kind: str, lease: str,
                     arg: Request | str | Capacity | Absence | None) -> None:
        if now < self.now or (self._inputs and now != self._input_time):
            raise ValueError(
                f"input at t={now} out of order: the scheduler is at t={self.now}; "
                "call advance() before moving on"
            )
        self._input_time = now
        self._inputs.append((kind, lease, arg))

    # ---- the clock ----------------------------------------------------------------
    def advance(self, now: float) -> list[Action]:
        """Run everything up to and including ``now``; return the actions taken."""
        if now < self.now:
            raise ValueError(f"time runs forward: advance({now}) after t={self.now}")
        lifecycle = self.lifecycle
        out = lifecycle.actions = []
        timers = lifecycle.timers
        while True:
            t = timers.next_time()
            t_in = self._input_time if self._inputs else None
            if t is not None and t <= now:
                step = t if t_in is None or t <= t_in else t_in
            elif t_in is not None and t_in <= now:
                step = t_in
            else:
                step = None
            if self._holding and self.hold_until <= now \
                    and (step is None or self.hold_until < step):
                step = self.hold_until  # the end of a hold is an instant of its own
            if step is None:
                break
            self.now = step
            if t == step:
                self._run_timers(step)
            absences, moved = self._apply_inputs(step) if t_in == step else ((), False)
            if self._holding:
                if step < self.hold_until:
                    for absence in absences:
                        self._absent(absence, step)
                    continue  # nobody to make anything start: nothing is planned
                self._end_hold(step)
            if absences:
                # an absence closes its instant: what else happened then is planned
                # first, as the shell that was there did before it stopped (its
                # successor gives the absence at that instant, once it was planned)
                if t == step or moved:
                    self.planner.plan(step)
                for absence in absences:
                    self._absent(absence, step)
                if self._holding:
                    continue
            self.planner.plan(step)
        self.now = now
        return out

    def _run_timers(self, now: float) -> None:
        """Every live timer due at ``now``, in heap order: those set while the instant's
        are handled come out too, in their place."""
        lifecycle, planner = self.lifecycle, self.planner
        heap, leases = lifecycle.timers.heap, lifecycle.leases
        while heap and heap[0][0] == now:
            _, kind, _, version, name = heappop(heap)
            st = leases[name]
            if st.version != version:
                continue  # stale: the lease's timers changed since it was set
            if kind == Timer.VACATE:
                if lifecycle.vacate(st, now):
                    if st.phase == Phase.QUEUED:  # re-queued to start over
                        planner.replan(st)
                        continue
                    if st.pool in self.dead:  # written out on a pool that is gone
                        lifecycle.start_over(st)
                    planner.requeue(st)
            elif kind == Timer.DONE:
                lifecycle.complete(st, now)
            elif kind == Timer.SUSPEND:
                lifecycle.suspend(st, now, lifecycle.planned_reason(st, "suspended"),
                                  planned=True)
            elif kind == Timer.STOP:
                if lifecycle.requeues(st):
                    lifecycle.requeue(st, now, lifecycle.planned_reason(st, "re-queued"))
                else:
                    self._cancel(st, now, lifecycle.planned_reason(st, "cancelled"))
            elif kind == Timer.RUNNING:
                lifecycle.running(st)
            elif now < self.hold_until:
                continue  # nobody to start it: placed again when the hold ends
            else:
                lifecycle.start(st, now)
                planner.started(st)

    def _apply_inputs(self, now: float) -> tuple[list[Absence], bool]:
        """The instant's inputs, but its absences: those are returned (with whether
        any other input was applied), for :meth:`advance` to give after the plan."""
        inputs, self._inputs = self._inputs, []
        leases = self.lifecycle.leases
        absences: list[Absence] = []
        for kind, name, arg in inputs:
            if kind == "submit":
                assert isinstance(arg, Request)
                st = self.lifecycle.accept(arg, now)
                if st is not None:
                    self._dispatch(st, now)
                    self.planner.accept(st)
                continue
            if kind == "capacity":
                assert isinstance(arg, Capacity)
                self._capacity(arg, now)
                continue
            if kind == "absent":
                assert isinstance(arg, Absence)
                absences.append(arg)
                continue
            st = leases.get(name)
            if st is None or st.phase.terminal:
                continue  # a report about a lease we no longer track changes nothing
            if kind == "finished":
                if st.phase in (Phase.RUNNING, Phase.RESUMING):
                    self.lifecycle.complete(st, now)
            elif kind == "fail":
                self.planner.drop(st)
                self.lifecycle.fail(st, now, str(arg))
            else:
                self._cancel(st, now, str(arg))
        return absences, len(absences) < len(inputs)

    def _dispatch(self, st: LeaseState, now: float) -> None:
        """An external lease that names no pool is sent to one by the dispatch
        strategy (DESIGN §2.5), at its submission, in submission order; the strategy
        sees the pools in the cluster's order but those removed, and which of them
        could hold the lease when empty."""
        dispatcher = self.dispatcher
        if not dispatcher.active:
            return
        req = st.req
        pools = [p for p in self.pools.values() if p.name not in self.dead]
        fits = [self.slots.pools[p.name].max_vms(req.shape) >= req.vms for p in pools]
        verdict = dispatcher.submitted(req, now, pools, fits)
        if verdict is not None:
            st.dispatched = verdict.pool
            self.lifecycle.actions.append(Dispatch(now, st.name, verdict.pool,
                                                   dispatcher.strategy.name, verdict.reason))

    def _capacity(self, change: Capacity, now: float) -> None:
        """A pool's nodes changed. The leases running on nodes that went down are lost
        (:meth:`Lifecycle.lose`: by type, cancelled, queued again from their checkpoint,
        or placed again first); every reservation that has not started and may use the
        pool is given up and placed again, in submission order (a reservation may then
        move later, as capacity went down; only here); the pool's table is rebuilt
        around the leases still running on it. The index space never shrinks: missing
        indices are down."""
        spec, down = change.pool, set(change.down)
        lifecycle, planner = self.lifecycle, self.planner
        name = spec.name
        old = self.pools.get(name)
        pools = self.pools
        assert isinstance(pools, dict)
        if spec.images is not None and self.images is None:
            # the first pool that deploys images: the parts that ask are told of it
            self.images = self.lifecycle.images = self.placement.images = Images(())
        if old is None:
            pools[name] = spec
            self.slots.add(spec)
            self.placement.pools_changed()
        else:
            if spec.nodes < old.nodes:
                down.update(range(spec.nodes, old.nodes))
                spec = replace(spec, nodes=old.nodes)
        # a node of another size (or the pool's kind changed): what runs there cannot
        # stay. Compared node by node, so that in a pool of mixed sizes only the
        # nodes whose size changed are hit
        reshaped = _resized(old, spec)
        names = spec.node_names()
        leases = lifecycle.leases
        lost: dict[str, tuple[LeaseState, list[str]]] = {}
        moved: dict[str, LeaseState] = {}
        for b in list(self.slots.pools[name].bookings):
            st = leases.get(b.lease)
            if st is None:
                continue  # the nodes that were down
            if b is st.booking and st.name in lifecycle.reserved:
                moved[st.name] = st
                continue
            hit = [names[i] for i in (b.nodes or ()) if i in reshaped or i in down]
            if hit and st.phase.terminal:  # ended, its VMs stopping or shutting down
                lifecycle.let_go(st, now)
            elif hit:
                kept = _copies_left(st, b, reshaped, down)
                if kept is not None:
                    lifecycle.lose_copies(st, now, kept)
                else:
                    lost.setdefault(st.name, (st, []))[1].extend(hit)
        # reservations elsewhere that may use this pool are placed again too: a pool
        # added or nodes back may give them an earlier slot
        for other in list(lifecycle.reserved):
            st = leases[other]
            could = st.pool == name if st.resuming else st.home in (None, name)
            if st.name not in moved and st.booking is not None and could:
                moved[st.name] = st
        for st in moved.values():
            if st.name not in lost:
                lifecycle.release(st, now)
        outcomes = [(st, lifecycle.lose(st, now, tuple(nodes)))
                    for st, nodes in sorted(lost.values(), key=lambda x: x[0].seq)]
        # a pool removed took the VMs written out there with it: their leases
        # (waiting, or lost just now) start over
        stranded: list[LeaseState] = []
        if change.removed:
            self.dead.add(name)
            for st in leases.values():
                if st.pool == name and st.resuming and st.booking is None \
                        and not st.phase.terminal:
                    lifecycle.start_over(st)
                    if st.name not in lost:
                        stranded.append(st)
        else:
            self.dead.discard(name)
        keep = [b for b in self.slots.pools[name].bookings if b.lease in leases]
        self.slots.rebuild(spec, frozenset(down), now, keep)
        if self.images is not None:
            self.images.pool_changed(spec)
        pools[name] = spec
        lifecycle.add_pool(spec)
        planner.pools_changed()
        for st in sorted([*moved.values(), *(x for x in stranded if x.name not in moved)],
                         key=lambda x: x.seq):
            if st.name not in lost:
                planner.replan(st)
        # non-preemptable leases and reservations first, latest submitted first so
        # that the earliest ends up in front
        for st, outcome in reversed(outcomes):
            if outcome == "replanned":
                planner.replan(st, first=True)
        for st, outcome in outcomes:
            if outcome == "requeued":
                planner.replan(st)
            elif outcome == "cancelled":
                planner.drop(st)

    def _absent(self, absence: Absence, now: float) -> None:
        """The idle leases go back to waiting; starts are held until ``until``."""
        lifecycle, leases = self.lifecycle, self.lifecycle.leases
        idle = sorted((leases[n] for n in dict.fromkeys(absence.idle) if n in leases),
                      key=lambda st: st.seq)
        idle = [st for st in idle if st.booking is not None and (
            st.phase in (Phase.RUNNING, Phase.RESUMING)
            or (st.phase == Phase.MIGRATING and not st.resuming))]
        for st in idle:
            lifecycle.unstart(st, now)
        self._replan(idle)
        if absence.until > now:
            self.hold_until = max(self.hold_until, absence.until)
            self._holding = True
            self.next_event_time = self._next_or_hold_end

    def _next_or_hold_end(self) -> float | None:
        t = self.lifecycle.timers.next_time()
        return self.hold_until if t is None or self.hold_until < t else t

    def _end_hold(self, now: float) -> None:
        """The shell is back: the reservations due while it was away are placed again."""
        self._holding = False
        self.next_event_time = self.lifecycle.timers.next_time
        lifecycle = self.lifecycle
        due = [lifecycle.leases[n] for n in lifecycle.reserved]
        due = sorted((st for st in due if st.booking is not None and st.booking.start < now),
                     key=lambda st: st.seq)
        for st in due:
            lifecycle.release(st, now)
        self._replan(due)

    def _replan(self, leases: list[LeaseState]) -> None:
        """Leases (in submission order) placed again at the next plan: the guaranteed
        ones first, the earliest submitted in front."""
        for st in reversed(leases):
            if st.req.type.guaranteed:
                self.planner.replan(st, first=True)
        for st in leases:
            if not st.req.type.guaranteed:
                self.planner.replan(st)

    def _cancel(self, st: LeaseState, now: float, reason: str) -> None:
        self.planner.drop(st)
        self.lifecycle.cancel(st, now, reason)

    def down(self, pool: str) -> frozenset[int]:
        """The pool's nodes that are down now."""
        table = self.slots.pools.get(pool)
        if table is None:
            return frozenset()
        return frozenset(i for b in table.bookings if b.lease == DOWN for i in (b.nodes or ()))

    def holding(self) -> bool:
        """Whether an :class:`~.model.Absence` holds starts (its end not reached yet)."""
        return self._holding

    def pending_inputs(self) -> bool:
        """Whether inputs wait for the next :meth:`advance`."""
        return bool(self._inputs)

    def forget(self) -> list[str]:
        """Drop the leases that have ended and hold nothing (no booking, no timer to
        come), and the decisions taken so far: nothing the core decides from now on
        depends on them. For a long-lived shell (the operator), whose memory must
        not grow with every lease ever seen; the simulator keeps them for its report.
        Returns the names dropped (a new lease may take one again)."""
        lc = self.lifecycle
        leases, heap = lc.leases, lc.timers.heap
        live = {e[4] for e in heap if leases[e[4]].version == e[3]}
        gone = [name for name, st in leases.items()
                if st.phase.terminal and st.booking is None and st.departure is None
                and name not in live]
        if gone:
            dropped = set(gone)
            for name in gone:
                del leases[name]
            heap[:] = [e for e in heap if e[4] not in dropped]
            heapify(heap)
            self.planner.parked = [st for st in self.planner.parked
                                   if st.name not in dropped]
        self.preemptor.decisions.clear()
        return gone

    # ---- what the shells read -------------------------------------------------------
    def lease(self, name: str) -> LeaseView | None:
        """The lease called ``name``, read-only; ``None`` if it was never submitted."""
        st = self.lifecycle.leases.get(name)
        return None if st is None else LeaseView(st)

    def leases(self) -> list[LeaseView]:
        """Every lease submitted, in submission order, read-only."""
        return [LeaseView(st) for st in self.lifecycle.leases.values()]

    def placed(self) -> list[LeaseView]:
        """The leases on nodes now (:attr:`LeaseView.placed` not empty), in
        submission order: what a shell's pods must match, read without a view of
        every lease (a shell reads it at every step)."""
        views = (LeaseView(st) for st in self.lifecycle.leases.values() if st.phase in _HOLDING)
        return [v for v in views if v.placed]

    @property
    def decisions(self) -> Sequence[Decision]:
        """Every preemption decision taken, in order (DESIGN §8)."""
        return self.preemptor.decisions

    def usage_violations(self) -> list[str]:
        """Every instant and node where the plan over-commits capacity, and every
        overlap on an image repository's link, over-full image cache and start
        before its image (empty when sound): for invariant checks."""
        out = self.slots.usage_violations()
        if self.images is not None:
            out += self.images.violations()
        return out

    def transfers(self, lease: str) -> list[tuple[str, Transfer]]:
        """The image transfers booked for the lease and not given back before they
        began, as (pool, transfer), in booking order (DESIGN §2.6)."""
        return [] if self.images is None else self.images.transfers(lease)


def _copies_left(st: LeaseState, b: Booking, reshaped: frozenset[int],
                 down: set[int]) -> list[int] | None:
    """The positions of ``b``'s nodes that are still up, when the lease has replicas,
    runs on ``b`` alone (not migrating, not writing out) and every VM of it keeps a
    copy there; ``None``: it is lost as a whole (:meth:`Lifecycle.lose`)."""
    req = st.req
    if req.replicas <= 1 or b is not st.booking or st.departure is not None \
            or st.phase != Phase.RUNNING or b.nodes is None:
        return None
    slots = st.slots()
    kept = [k for k, i in enumerate(b.nodes) if i not in reshaped and i not in down]
    covered = {slots[k] % req.originals for k in kept}
    return kept if len(covered) == req.originals else None


def _resized(old: PoolSpec | None, new: PoolSpec) -> frozenset[int]:
    """The node indices of both specs whose capacity differs (all of them when the
    pool's kind changed)."""
    if old is None:
        return frozenset()
    if old.exclusive != new.exclusive:
        return frozenset(range(max(old.nodes, new.nodes)))
    before, after = old.sizes(), new.sizes()
    return frozenset(i for i in range(min(len(before), len(after))) if before[i] != after[i])
