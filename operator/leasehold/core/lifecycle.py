"""A lease's lifecycle: its transitions and the timers that drive them (DESIGN §2).

:class:`Lifecycle` owns the leases' state, their bookings and their timers, and is
the one place that changes them: every transition books, cuts or gives back slots,
sets the lease's timers and emits the action the shell carries out. What the
transitions of one instant did to the capacity is recorded in :class:`Changes`, for
the planner to act on (compression, the EASY queue) — no caller has to remember it.

It knows nothing of queues or policies: deciding *when* a transition happens is the
planner's and the preemptor's business; the scheduler wires the timers to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from heapq import heappush
from math import floor

from . import overhead
from .images import Images
from .lease import LeaseState, pace, shutdown_tail
from .model import (
    Action,
    Admit,
    Cancel,
    Complete,
    Fail,
    LeaseType,
    Lost,
    Migrate,
    Phase,
    PoolSpec,
    Reject,
    ReplicaLost,
    Request,
    Requeue,
    Reserve,
    Resume,
    SchedulerConfig,
    Start,
    Suspend,
    Unstart,
)
from .slots import Booking, Segments, SlotTable, clip
from .timers import Timer, Timers

# read once: on Python 3.11 an enum member read off its class costs a call
# (``EnumType.__getattr__``; docs/benchmarks.md, "easy2"), and :meth:`Lifecycle.start_plain`
# is on the EASY queue's path for every lease it starts
_RUNNING = Phase.RUNNING
_AR = LeaseType.ADVANCE_RESERVATION
_DONE = Timer.DONE


class Changes:
    """What the transitions since the last plan did to the capacity: set by the
    transitions, read and reset by the planner at every plan (one record, not one per
    plan: a simulation plans at every step)."""

    __slots__ = ("freed", "released")

    def __init__(self) -> None:
        #: capacity was given back ahead of a booking's end (a lease ended, was cut
        #: short or gave its reservation up): waiting reservations may move earlier
        self.released = False
        #: some booking left the table (its nodes are free): the EASY queue may move
        self.freed = False

    def take(self) -> tuple[bool, bool]:
        """(released, freed), and start afresh."""
        taken = self.released, self.freed
        self.released = self.freed = False
        return taken


class Lifecycle:
    def __init__(self, slots: SlotTable, pools: Mapping[str, PoolSpec],
                 config: SchedulerConfig, images: Images | None = None) -> None:
        self.slots = slots
        #: image deployment (DESIGN §2.6), when some pool deploys images: told of
        #: every booking, start and booking given back
        self.images = images
        self.pools = pools
        self.config = config
        #: every lease ever submitted, by name, in submission order
        self.leases: dict[str, LeaseState] = {}
        self.timers = Timers(self.leases)
        #: leases holding a booking that has not started yet
        self.reserved: dict[str, None] = {}
        #: the actions emitted, in order, since the scheduler last took them
        self.actions: list[Action] = []
        #: what the transitions did to the capacity since the last plan
        self.changes = Changes()
        self._node_names = {p.name: p.node_names() for p in pools.values()}
        #: the next submission sequence number
        self.seq = 0

    # ---- admission ------------------------------------------------------------------
    def accept(self, req: Request, now: float) -> LeaseState | None:
        """A new lease, in submission order; ``None`` (and a rejection) if its name is taken."""
        if req.name in self.leases:
            self.actions.append(
                Reject(now, req.name, f"a lease named {req.name!r} already exists", "spec"))
            return None
        st = LeaseState(req, self.seq, remaining=req.duration, actual_left=req.actual_runtime)
        self.seq += 1
        self.leases[req.name] = st
        return st

    def enqueue(self, st: LeaseState, now: float) -> None:
        """A best-effort lease is admitted to wait for a slot."""
        st.phase = Phase.QUEUED
        self.actions.append(Admit(now, st.name))

    def admit(self, st: LeaseState, now: float) -> None:
        """A guaranteed lease is admitted (it is about to be booked), unless it was before."""
        if st.phase == Phase.PENDING:
            self.actions.append(Admit(now, st.name))

    def reject(self, st: LeaseState, now: float, reason: str, cause: str = "capacity"
               ) -> None:
        st.phase = Phase.REJECTED
        st.reason = reason
        st.end = now
        self.timers.bump(st)
        self.actions.append(Reject(now, st.name, reason, cause))

    # ---- booking and starting -----------------------------------------------------------
    def book(
        self, st: LeaseState, pool: str, start: float, length: float, now: float,
        segments: Segments | None = None,
    ) -> bool:
        """Hold ``[start, start+length)`` on ``pool`` for the lease; start it if that is
        now. Returns whether it started."""
        end = start + length
        spec = self.pools[pool]
        st.pace = pace(st.req, spec)
        if segments is None and spec.vm is not None:
            segments = self._vm_segments(st, spec, start, end)
        if segments is None:
            if st.resuming:
                ran_from = start + length - st.remaining / st.pace
                segments = (("resume", start, ran_from), ("run", ran_from, end))
            else:
                segments = (("run", start, end),)
        req = st.req
        booking = Booking(st.name, pool, start, end, req.vms, req.shape, None, segments)
        self.slots.book(booking)
        st.booking = booking
        st.pool = pool
        if self.images is not None and req.image is not None:
            self.actions.extend(self.images.booked(req, st.resuming, pool, start, now))
        if start <= now:
            self.start(st, now)
            return True
        if not st.resuming:
            st.phase = Phase.SCHEDULED
        self.reserved[st.name] = None
        self.timers.bump(st)
        self.timers.push(start, Timer.START, st)
        self.actions.append(Reserve(now, st.name, start, end, pool))
        return False

    def start_plain(self, st: LeaseState, pool: str, length: float, now: float) -> None:
        """``book(st, pool, now, length, now)`` for a lease that is not resuming, on a
        pool without a VM model where no image is deployed: it is booked and started
        at once. The same state, timers and actions as :meth:`book` and
        :meth:`start`, without their branches for a reservation, a VM model, an image
        or a resume, and without their calls through the slot table: the EASY/FCFS
        queue starts most of its leases so (83 thousand on Lublin99 100k, issue 20:
        4-5% of EASY's run there; docs/benchmarks.md, "easy4")."""
        end = now + length
        req = st.req
        # pace(): without a VM model, the pool's speed (1.0 for an advance reservation)
        st.pace = speed = 1.0 if req.type is _AR else self.pools[pool].speed
        booking = Booking(st.name, pool, now, end, req.vms, req.shape, None, (("run", now, end),))
        table = self.slots.pools[pool]
        table.book(booking)
        st.booking = booking
        st.pool = pool
        names = self._node_names[pool]
        st.nodes = nodes = tuple([names[i] for i in table.occupy(booking, now)])
        st.copies = None
        self.reserved.pop(st.name, None)
        self.timers.bump(st)
        st.phase = _RUNNING
        self.actions.append(Start(now, st.name, nodes, None))
        if st.first_start is None:
            st.first_start = now
        st.running_since = now
        done = now + st.actual_left / speed
        heappush(self.timers.heap, (done if done < end else end, _DONE, st.seq, st.version,
                                    st.name))

    def start(self, st: LeaseState, now: float) -> None:
        """The lease's booking begins: bind it to nodes and run (or resume) it."""
        booking = st.booking
        assert booking is not None and st.pool is not None
        names = self._node_names[st.pool]
        bound = self.slots.occupy(booking, now)
        st.nodes = tuple([names[i] for i in bound])
        st.copies = None  # a fresh booking holds every copy
        if self.images is not None and st.req.image is not None and not st.resuming:
            # a resumed VM's disk comes back with its memory (the overhead model's)
            self.images.started(st.req, booking, st.pool, bound, now)
        self.reserved.pop(st.name, None)
        self.timers.bump(st)
        vm = self.pools[st.pool].vm
        if st.resuming:
            run_from = booking.segments[0][2]  # end of the resume segment
            if vm is not None:  # after the boot (and the resume or landing)
                run_from = _run_segment(booking.segments)[1]
            st.phase = Phase.RESUMING
            self.actions.append(Resume(now, st.name, st.nodes, run_from))
            self.timers.push(run_from, Timer.RUNNING, st)
            st.resuming = False
            st.landing = None
        else:
            # in VMs, the run begins once they have booted (the lease is Running
            # meanwhile, credited nothing before its run)
            run_from = now if vm is None else max(now, _run_segment(booking.segments)[1])
            st.phase = Phase.RUNNING
            self.actions.append(Start(now, st.name, st.nodes,
                                      None if vm is None else run_from))
        if st.first_start is None:
            st.first_start = run_from  # its run's start: an advance reservation's start
        st.running_since = run_from
        # the work never outlasts the booking (nor the run, before a shutdown),
        # whatever the float rounding
        done = run_from + st.actual_left / st.pace
        if vm is None:
            self.timers.push(min(done, booking.end), Timer.DONE, st)
            kind, at, _ = booking.segments[-1]
            if kind == "suspend":
                self.timers.push(at, Timer.SUSPEND, st)
            return
        # the run ends before the shutdown; before a planned suspension, the
        # suspension's timer ends it (the work is not done by then)
        cap = _run_segment(booking.segments)[2]
        for kind, at, _ in booking.segments:
            if kind == "suspend":
                self.timers.push(at, Timer.SUSPEND, st)
                cap = booking.end
        self.timers.push(min(done, cap), Timer.DONE, st)

    def running(self, st: LeaseState) -> None:
        """A resume or migration overhead is over: the VMs run again."""
        st.phase = Phase.RUNNING

    # ---- ending -----------------------------------------------------------------------
    def complete(self, st: LeaseState, now: float) -> None:
        """The lease's work is done. In VMs they shut down first, holding the nodes
        (never past the booking); the lease is Completed at once, its ``end`` the end
        of its work."""
        self._account(st, now)
        booking = st.booking
        assert booking is not None
        vm = self.pools[booking.pool].vm
        if vm is None:  # the usual way, kept short: nodes free at once
            self._give_back(booking, now)
            st.booking = None
            st.phase = Phase.COMPLETED
            st.end = now
            st.remaining = st.actual_left = 0.0
            self.timers.bump(st)
            self.actions.append(Complete(now, st.name))
            return
        tail = vm.shutdown
        down = min(now + tail, booking.end)
        if down > now:
            body = tuple(s for s in booking.segments if s[0] != "shutdown")
            self._cut(booking, down, clip((*body, ("shutdown", now, down)), now))
        else:
            self._give_back(booking, now)
            st.booking = None
        st.phase = Phase.COMPLETED
        st.end = now
        st.remaining = st.actual_left = 0.0
        self.timers.bump(st)
        if st.booking is not None:
            self.timers.push(down, Timer.VACATE, st)
        self.actions.append(Complete(now, st.name, down if tail else None))

    def suspend(self, st: LeaseState, now: float, reason: str, planned: bool) -> None:
        """Stop a running lease's VMs and write them out; it is re-queued once they
        vacate. A planned suspension is the booking's closing segment and ends with it."""
        booking = st.booking
        assert booking is not None
        params = self.pools[booking.pool].overhead
        law = self.pools[booking.pool].volatile
        if law is not None:  # until its VMs are written out, its last boundary holds
            st.checkpoint = epoch_checkpoint(st, now, law.epoch) or st.checkpoint
        self._account(st, now)
        vm = self.pools[booking.pool].vm
        if planned:
            vacated = booking.end
        else:
            took = overhead.suspend_seconds(st.req, params)
            if vm is not None:  # then the VMs shut down
                took += vm.shutdown
            vacated = now + took  # as the preemptor reckoned it (Victims)
            if vacated > booking.end:  # the caller must leave room for the overhead
                raise ValueError(f"suspending {st.name} at t={now} would outlast its booking")
        segments = (*(s for s in booking.segments if s[0] not in ("suspend", "shutdown")),
                    ("suspend", now, vacated))
        self._cut(booking, vacated, clip(segments, now))
        st.phase = Phase.SUSPENDING
        st.suspensions += 1
        st.overhead += overhead.suspend_overhead(st.req, params)
        if vm is not None:  # its VMs shut down now and boot again to resume
            st.overhead += vm.shutdown + vm.boot
        self.timers.bump(st)
        self.timers.push(vacated, Timer.VACATE, st)
        self.actions.append(Suspend(now, st.name, vacated, reason))

    def migrate(
        self, st: LeaseState, now: float, pool: str, reason: str, start: float | None = None
    ) -> None:
        """Move a running lease: its VMs are suspended one after another on the source
        nodes (which they leave once all are written out), copied, and resumed on the
        target, pipelined as in 000 eq. 8. The caller found the target slot
        (``start``, default now), so the migration never starts without somewhere to
        land. A target that starts later is a reservation: the lease waits, written
        out, and the pipeline's overhead opens its booking there. The source nodes
        stay the lease's *departure* until its VMs have left them."""
        req = st.req
        source = st.booking
        assert source is not None
        params = self.pools[source.pool].overhead
        self._account(st, now)
        at = now if start is None else start
        left_source = now + overhead.migrate_leave_seconds(req, params)
        pipeline = overhead.migrate_run_seconds(req, params)
        self._cut(source, left_source,
                  clip((*source.segments, ("migrate-out", now, left_source)), now))
        st.departure, st.booking = source, None
        st.phase = Phase.MIGRATING
        st.migrations += 1
        st.checkpoint = (st.remaining, st.actual_left)  # its VMs are copied out
        st.overhead += overhead.migrate_overhead(req, params)
        self.timers.bump(st)  # and the departure's VACATE timer at left_source
        running = at + pipeline
        # what it still owes is work: on the target it runs at the target's speed
        run = st.remaining / pace(req, self.pools[pool])
        if at > now:
            st.resuming = True
            st.landing = pipeline
            tail = shutdown_tail(req, self.pools[pool])
            later: Segments = (("migrate-in", at, running), ("run", running, running + run))
            if tail:
                later = (*later, ("shutdown", running + run, running + run + tail))
            self.book(st, pool, at, pipeline + run + tail, now, later)
            self.actions.append(Migrate(now, st.name, (), running, left_source))
            return
        end = running + run
        segs: Segments = (("migrate-in", now, running), ("run", running, end))
        tail = shutdown_tail(req, self.pools[pool])
        if tail:  # its VMs shut down on the target when they end
            segs = (*segs, ("shutdown", end, end + tail))
        target = Booking(st.name, pool, now, end + tail, req.vms, req.shape, None, segs)
        self.slots.book(target)
        st.booking = target
        st.pool = pool
        st.pace = pace(req, self.pools[pool])
        names = self._node_names[pool]
        st.nodes = tuple([names[i] for i in self.slots.occupy(target, now)])
        st.copies = None
        st.running_since = running
        self.timers.push(running, Timer.RUNNING, st)
        self.timers.push(running + st.actual_left / st.pace, Timer.DONE, st)
        self.actions.append(Migrate(now, st.name, st.nodes, running, left_source))

    def vacate(self, st: LeaseState, now: float) -> bool:
        """An overhead that held nodes is over: they are free. Returns whether the
        lease is to be queued again: suspended (its remainder), or re-queued to start
        over (phase ``Queued``)."""
        if st.departure is not None:  # a migration left its old nodes
            self._give_back(st.departure, now)
            st.departure = None
            return False
        if st.phase == Phase.QUEUED:  # re-queued (:meth:`requeue`): its VMs have stopped
            if st.booking is not None:
                self._give_back(st.booking, now)
                st.booking = None
            st.pool = None  # nothing saved anywhere: any pool will do
            self.timers.bump(st)
            return True
        if st.phase not in (Phase.SUSPENDING, Phase.CANCELLED, Phase.COMPLETED) \
                or st.booking is None:
            return False  # a departure's timer, renewed once too often
        self._give_back(st.booking, now)
        st.booking = None
        self.timers.bump(st)
        if st.phase != Phase.SUSPENDING:
            return False
        st.phase = Phase.SUSPENDED
        st.resuming = True
        st.checkpoint = (st.remaining, st.actual_left)  # its VMs are written out
        return True

    def cancel(self, st: LeaseState, now: float, reason: str) -> None:
        """Cancel a lease wherever it is; running VMs are stopped first."""
        booking = st.booking
        self.reserved.pop(st.name, None)
        phase = st.phase
        vacated = now
        st.phase = Phase.CANCELLED
        st.end = now
        st.reason = reason
        self.timers.bump(st)  # a departure's VACATE timer is renewed with it
        if booking is not None:
            if phase in (Phase.RUNNING, Phase.RESUMING):
                self._account(st, now)
                # stopping takes stopSeconds, but never past the booking: others may
                # hold the nodes from its end on
                spec = self.pools[booking.pool]
                stopped = min(now + (spec.overhead.stop_seconds + shutdown_tail(st.req, spec)),
                              booking.end)
                if stopped <= now:
                    self._give_back(booking, now)
                    st.booking = None
                else:
                    body = tuple(s for s in booking.segments if s[0] != "stop")
                    self._cut(booking, stopped, clip((*body, ("stop", now, stopped)), now))
                    self.timers.push(stopped, Timer.VACATE, st)
                    vacated = stopped
            elif phase == Phase.SUSPENDING:
                self.timers.push(booking.end, Timer.VACATE, st)  # it still has to finish
                vacated = booking.end
            else:  # reserved, or a migration's target: the departure vacates on its own
                self._give_back(booking, now)
                st.booking = None
        self.actions.append(Cancel(now, st.name, reason, vacated))

    def requeues(self, st: LeaseState) -> bool:
        """Whether giving way cancels and re-queues the lease rather than what its type
        says (no suspension, 004 NOVM-NOSR): a suspendable lease under ``suspension:
        none``. A cancellable lease is cancelled and a migratable one migrated either way."""
        return self.config.suspension == "none" \
            and st.req.type == LeaseType.BEST_EFFORT_SUSPENDABLE

    def requeue(self, st: LeaseState, now: float, reason: str) -> None:
        """No suspension: a running lease that gives way is cancelled and re-queued to
        run again from the start; the work its run did is lost. Its VMs stop as a
        cancelled lease's do (``stopSeconds``, never past its booking); it keeps the
        nodes until then and is placed again once they are free (:meth:`vacate`), in
        its original queue position (submission order, as a suspended remainder)."""
        booking = st.booking
        assert booking is not None
        req = st.req
        self._account(st, now)
        self.reserved.pop(st.name, None)
        lost = req.actual_runtime - st.actual_left
        spec = self.pools[booking.pool]
        stopped = min(now + (spec.overhead.stop_seconds + shutdown_tail(req, spec)), booking.end)
        if stopped > now:
            body = tuple(s for s in booking.segments if s[0] != "stop")
            self._cut(booking, stopped, clip((*body, ("stop", now, stopped)), now))
        else:  # gone at once: the preemptor may start now
            self._give_back(booking, now)
            st.booking = None
        st.requeues += 1
        st.lost_work += lost
        st.remaining, st.actual_left = req.duration, req.actual_runtime
        st.resuming = False
        st.landing = None
        st.checkpoint = None
        st.phase = Phase.QUEUED
        self.timers.bump(st)
        self.timers.push(stopped, Timer.VACATE, st)
        self.actions.append(Requeue(now, st.name, reason, stopped, lost))

    def fail(self, st: LeaseState, now: float, reason: str) -> None:
        """The lease cannot run (the shell says why: its pods were refused): it ends
        Failed, and whatever it holds is free at once, since it holds nothing real."""
        self._account(st, now)
        self.reserved.pop(st.name, None)
        for booking in (st.booking, st.departure):
            if booking is not None:
                self._give_back(booking, now)
        st.booking = st.departure = None
        st.phase = Phase.FAILED
        st.end = now
        st.reason = reason
        self.timers.bump(st)
        self.actions.append(Fail(now, st.name, reason))

    def lose(self, st: LeaseState, now: float, nodes: tuple[str, ...]) -> str:
        """Nodes the lease holds went down: its run is lost, and so is the work since
        its last checkpoint. What holds on is given back at once (nothing real holds
        it). By type: a cancellable lease is cancelled; a suspendable or migratable one
        goes back to its checkpoint (resuming from it, or starting over without one)
        and waits to be placed again; a non-preemptable one or a reservation starts
        over and is placed again first, Failed if no slot ends by its deadline.
        On a volatile pool a run checkpoints at every epoch boundary (its run's start
        plus whole epochs, :func:`epoch_checkpoint`). The work lost (what it had done
        past what it goes back to) is counted on the lease and said in the ``Lost``
        action. Returns what became of it: ``cancelled``, ``requeued`` or ``replanned``."""
        req = st.req
        saved = st.checkpoint
        if st.booking is not None and st.running_since is not None:
            law = self.pools[st.booking.pool].volatile
            if law is not None:
                saved = epoch_checkpoint(st, now, law.epoch) or saved
        self._account(st, now)
        self.reserved.pop(st.name, None)
        for booking in (st.booking, st.departure):
            if booking is not None:
                self._give_back(booking, now)
        st.booking = st.departure = None
        st.landing = None
        self.timers.bump(st)
        where = ", ".join(sorted(set(nodes)))
        st.losses += 1
        keeps = saved is not None and (req.type == LeaseType.BEST_EFFORT_SUSPENDABLE
                                       or req.type == LeaseType.DEADLINE_MIGRATABLE)
        back = saved[1] if keeps and saved is not None else req.actual_runtime
        lost = max(0.0, back - st.actual_left)
        st.lost_to_failures += lost
        if req.type == LeaseType.BEST_EFFORT_CANCELLABLE:
            reason = f"cancelled: its node {where} was lost"
            st.phase = Phase.CANCELLED
            st.end = now
            st.reason = reason
            self.actions.append(Lost(now, st.name, nodes, reason, lost))
            self.actions.append(Cancel(now, st.name, reason, now))  # nothing left to stop
            return "cancelled"
        if req.type.best_effort or req.type == LeaseType.DEADLINE_MIGRATABLE:
            st.checkpoint = saved
            if saved is not None:
                st.remaining, st.actual_left = saved
                st.resuming = True
                st.phase = Phase.SUSPENDED
            else:
                st.remaining, st.actual_left = req.duration, req.actual_runtime
                st.resuming = False
                st.phase = Phase.QUEUED
                st.pool = None  # nothing saved anywhere: any pool will do
            reason = (f"its node {where} was lost: queued again, from its last checkpoint"
                      if st.resuming else f"its node {where} was lost: queued again, to"
                                          " start over (no checkpoint)")
            self.actions.append(Lost(now, st.name, nodes, reason, lost))
            return "requeued"
        st.remaining, st.actual_left = req.duration, req.actual_runtime
        st.resuming = False
        st.phase = Phase.QUEUED
        st.pool = None
        reason = f"its node {where} was lost: placed again, to start over by its deadline"
        self.actions.append(Lost(now, st.name, nodes, reason, lost))
        return "replanned"

    def lose_copies(self, st: LeaseState, now: float, kept: list[int]) -> None:
        """Nodes under some copies of a lease with replicas went down, but every VM
        still has a copy up: the lease runs on, on the copies at positions ``kept`` of
        its booking; the others are dropped from the booking (their capacity given
        back: the pool's table is rebuilt around it) and not replaced."""
        booking = st.booking
        assert booking is not None and booking.nodes is not None
        names = self._node_names[booking.pool]
        slots = st.slots()
        gone = [k for k in range(booking.vms) if k not in set(kept)]
        lost = tuple(sorted({names[booking.nodes[k]] for k in gone}))
        booking.nodes = tuple([booking.nodes[k] for k in kept])
        booking.vms = len(kept)
        st.copies = tuple([slots[k] for k in kept])
        st.nodes = tuple([names[i] for i in booking.nodes])
        st.replicas_lost += len(gone)
        where = ", ".join(lost)
        self.actions.append(ReplicaLost(
            now, st.name, lost, st.nodes,
            f"lost {len(gone)} replica(s) on {where}: runs on, on its copies left",
            len(gone)))

    def let_go(self, st: LeaseState, now: float) -> None:
        """A lease that has ended but still held its nodes (its VMs stopping or
        shutting down) lost them: they are free at once; it stays as it ended."""
        if st.booking is not None:
            self._give_back(st.booking, now)
            st.booking = None
        self.timers.bump(st)

    def release(self, st: LeaseState, now: float) -> None:
        """A reservation that has not started is given up because its pool changed
        (nodes went down or came back): the lease is placed again, at no cost."""
        assert st.booking is not None
        self._give_back(st.booking, now)
        st.booking = None
        self.reserved.pop(st.name, None)
        self.timers.bump(st)
        if st.phase == Phase.SCHEDULED and st.req.type.best_effort:
            st.phase = Phase.QUEUED
        if not st.resuming:
            st.pool = None  # it never ran: any pool will do

    def unstart(self, st: LeaseState, now: float) -> None:
        """The lease's latest start never happened (its pods were never made: the
        shell was away): it waits again as it did before, with nothing credited for
        the run and nothing lost (a resume's or a migration's VMs are still written
        out). What it holds is given back at once."""
        booking = st.booking
        assert booking is not None
        st.running_since = None  # it did not run: nothing to credit
        self._give_back(booking, now)
        st.booking = None
        st.landing = None
        self.reserved.pop(st.name, None)
        self.timers.bump(st)
        self.actions.append(Unstart(now, st.name, "its pods were never made (the operator"
                                                  " was away): it waits to start again"))
        if st.checkpoint is not None:
            st.resuming = True
            st.phase = Phase.SUSPENDED
            return
        st.resuming = False
        st.phase = Phase.QUEUED
        st.pool = None
        if st.ran == 0:  # it has never run
            st.first_start = None
            st.nodes = ()

    def start_over(self, st: LeaseState) -> None:
        """A waiting lease's checkpoint is gone (its pool has no node left): it starts
        over, anywhere."""
        req = st.req
        st.checkpoint = None
        st.resuming = False
        st.landing = None
        st.remaining, st.actual_left = req.duration, req.actual_runtime
        st.pool = None
        if st.phase in (Phase.SUSPENDED, Phase.MIGRATING):
            st.phase = Phase.QUEUED
        self.timers.bump(st)

    def add_pool(self, spec: PoolSpec) -> None:
        """A pool is new or resized: its node names."""
        self._node_names[spec.name] = spec.node_names()

    # ---- preemption's transitions -------------------------------------------------------
    def unreserve(self, st: LeaseState, now: float) -> None:
        """A reservation that has not started is given up (preempted: it is placed
        again, at the cost of a rescheduling δ)."""
        assert st.booking is not None and st.pool is not None
        self._give_back(st.booking, now)
        st.booking = None
        self.reserved.pop(st.name, None)
        self.timers.bump(st)
        st.overhead += overhead.replan_overhead(st.req, self.pools[st.pool].overhead)
        if not st.resuming:
            st.pool = None  # it never ran: any pool will do

    def stop_at(self, st: LeaseState, now: float, begin: float, vacated: float,
                suspend: bool) -> None:
        """Plan a running lease's suspension (or cancellation) to begin at ``begin``
        and leave its nodes at ``vacated``: just in time for whoever needs them."""
        booking = st.booking
        assert booking is not None
        kind = "suspend" if suspend else "stop"
        body = tuple(s for s in booking.segments if s[0] not in ("suspend", "stop"))
        self._cut(booking, vacated, clip((*body, (kind, begin, vacated)), begin))
        self.timers.bump(st)
        if st.running_since is not None:
            done = st.running_since + st.actual_left / st.pace
            if done <= begin:
                self.timers.push(done, Timer.DONE, st)  # done before
        self.timers.push(begin, Timer.SUSPEND if suspend else Timer.STOP, st)

    def planned_reason(self, st: LeaseState, what: str) -> str:
        """Why a planned suspension or cancellation happens (its timer fired)."""
        if st.preempted_by is not None:
            return f"{what}: preempted by {st.preempted_by} (policy {self.config.policy})"
        return f"{what} before a reservation that blocks it"

    # ---- helpers ----------------------------------------------------------------------
    def _vm_segments(self, st: LeaseState, spec: PoolSpec, start: float, end: float
                     ) -> Segments:
        """A booking's segments on a pool with a VM model: the VMs boot, resume (when
        they do), run, and shut down; a migration landing (moved by compression) lands
        instead of booting and resuming (:meth:`Placement.length`)."""
        vm = spec.vm
        assert vm is not None
        out: list[tuple[str, float, float]] = []
        at = start
        if st.resuming and st.landing is not None:
            out.append(("migrate-in", at, at + st.landing))
            at += st.landing
        elif vm.boot:
            out.append(("boot", at, at + vm.boot))
            at += vm.boot
        if st.resuming and st.landing is None:
            resumed = at + overhead.resume_seconds(st.req, spec.overhead)
            out.append(("resume", at, resumed))
            at = resumed
        ran_to = end - vm.shutdown
        out.append(("run", at, ran_to))
        if vm.shutdown:
            out.append(("shutdown", ran_to, end))
        return tuple(out)

    def _account(self, st: LeaseState, now: float) -> None:
        """Credit the work done since the current run segment began: its wall seconds
        times the pace of the pool it ran on (set with its booking there)."""
        if st.running_since is not None and now > st.running_since:
            ran = now - st.running_since
            st.ran += ran
            work = ran * st.pace
            st.remaining = max(0.0, st.remaining - work)
            st.actual_left = max(0.0, st.actual_left - work)
        st.running_since = None

    def _give_back(self, booking: Booking, now: float) -> None:
        """The booking leaves the table."""
        self.slots.unbook(booking)
        if self.images is not None:
            self.images.given_back(booking.lease, booking.pool, booking, now)
        changes = self.changes
        changes.freed = True
        if booking.end > now:
            changes.released = True

    def _cut(self, booking: Booking, end: float, segments: Segments) -> None:
        """The booking ends at ``end`` instead (never later than it did)."""
        if booking.end > end:
            self.changes.released = True
        self.slots.truncate(booking, end, segments)


#: a run this close to a whole number of epochs has reached its boundary (float
#: rounding of times read off a clock must not lose a checkpoint taken just then)
_EPOCH_SLACK = 1e-9


def epoch_checkpoint(st: LeaseState, now: float, epoch: float) -> tuple[float, float] | None:
    """What a lease running on a volatile pool had saved at ``now``: its state at the
    last boundary of whole ``epoch`` seconds of its current run (from
    ``running_since``, after any boot, resume or landing), at its pace; ``None``
    before the first boundary (or before its run began). Computed when asked, from
    the run's start and pace: nothing is done per epoch. Taking a checkpoint costs
    nothing (002 leaves its cost out): no time, no capacity. Called before the run
    is accounted (``remaining`` is still what it owed when the run began)."""
    since = st.running_since
    if since is None or now <= since:
        return None
    epochs = floor((now - since) / epoch + _EPOCH_SLACK)
    if epochs < 1:
        return None
    done = epochs * epoch * st.pace
    return max(0.0, st.remaining - done), max(0.0, st.actual_left - done)


def _run_segment(segments: Segments) -> tuple[str, float, float]:
    """The booking's run segment."""
    for seg in segments:
        if seg[0] == "run":
            return seg
    raise ValueError(f"a booking without a run: {segments}")
