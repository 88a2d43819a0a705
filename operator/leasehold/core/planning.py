"""Queue planning: admission, conservative and EASY backfilling, compression
(000 §7.2, 004 §3.2, DESIGN §2.3).

* ``conservative`` — every waiting lease holds a reservation, made at its earliest
  start when it is queued; a later lease takes an earlier hole only if no existing
  reservation moves.
* ``easy`` — only the queue head holds a reservation; any other lease may start now
  if it does not disturb a reservation.
* ``none`` — strict first come, first served: the reference baseline.

Guaranteed leases (deadline, advance reservation, local) always hold a reservation:
they are admitted only with a slot that ends by their deadline, preempting if they
may (:mod:`.enactment`).

Compression: when capacity is given back early (a lease ends before its reservation
does, a lease is cancelled, a suspension frees the rest of a slot), every waiting
reservation is re-planned in submission order (as InterGrid's and pyss's
conservative backfilling do) at its earliest start no later than its current one.
Each move respects every other current reservation, so a lease's old slot is always
still free when its turn comes: nothing ever moves later.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from heapq import heappop, heappush
from math import inf
from operator import attrgetter, itemgetter

from . import overhead
from .enactment import Preemptor
from .lease import LeaseState, pace
from .lifecycle import Lifecycle
from .model import Backfilling, LeaseType, Phase, SchedulerConfig, Shape
from .placement import Fit, Placement, describe
from .preemption import Decision
from .reason import At, Reason
from .slots import Segments, SlotTable


def _no_preemption(d: Decision) -> str:
    if d.policy == "nop":
        return "policy 'nop' never preempts"
    if not d.candidate_sets:
        return "preempting every preemptable lease would not free enough room either"
    return f"policy {d.policy!r} chose none of {d.candidate_sets} candidate sets"


def _by_seq(st: LeaseState) -> int:
    return st.seq


#: the sequence of a ``Planner._by_size`` entry, and of a lease (both in C)
_SEQ = itemgetter(1)
_SEQ_OF = attrgetter("seq")


class Planner:
    def __init__(self, config: SchedulerConfig, slots: SlotTable, lifecycle: Lifecycle,
                 placement: Placement, preemptor: Preemptor) -> None:
        self.config = config
        self.slots = slots
        self.lifecycle = lifecycle
        self.placement = placement
        self.preemptor = preemptor
        self._conservative = config.backfilling == Backfilling.CONSERVATIVE
        self._easy = config.backfilling == Backfilling.EASY
        #: suspend-before-blocking: a best-effort lease may run in a hole (asked often)
        self._holes = config.suspend_before_blocking
        #: best-effort leases waiting to start (EASY and FCFS), in submission order
        self.queue: list[LeaseState] = []
        #: the same leases but those in :attr:`_blocked`, as (vms, seq, lease), by
        #: size: the EASY scan after capacity is freed visits only those no larger than
        #: what is free now (the queue holds a hundred leases on a busy pool, of which
        #: a handful are that small and not blocked)
        self._by_size: list[tuple[int, int, LeaseState]] = []
        #: the EASY/FCFS queue head that holds a reservation
        self.head: str | None = None
        #: leases to admit or place again at the next plan, in submission order
        self._new: list[LeaseState] = []
        #: admitted leases no pool can hold while some of its nodes are down: placed
        #: again when capacity changes
        self.parked: list[LeaseState] = []
        self._pools = list(slots.pools.values())
        self._changes = lifecycle.changes
        self._remember = self._may_block()
        self._one_exclusive = len(self._pools) == 1 and self._pools[0].spec.exclusive
        self._free_now = self._pools[0].free_now if len(self._pools) == 1 else self._free_max
        #: what is free now for the head's shape bounds every queued lease: on
        #: exclusive pools a VM takes a node whatever its shape; a shared pool's bound
        #: holds for that shape alone (a counted pool of 60-cpu VMs with none free may
        #: still take a 30-cpu one), so each lease is bounded by its own shape
        self._one_bound = all(p.spec.exclusive for p in self._pools)
        #: EASY on exclusive pools: queued leases that did not fit at some instant, by
        #: name, and the earliest start they had then. Until capacity is given back
        #: anywhere (a lease ends or is cut short before its booking's end, a
        #: reservation moves earlier or is given up, the pools change) the free
        #: capacity at every later instant can only shrink, so none of them can start
        #: before that start: the queue scans at each lease's end skip them. Emptied
        #: (:meth:`_unblock`) whenever capacity may have been given back; it only saves
        #: queries that would fail, so it changes no schedule (and a restored core,
        #: which starts without it, plans the same).
        self._blocked: dict[str, float] = {}
        #: the blocked leases as a heap of (start, seq, lease), to wake them at their
        #: start; an entry whose lease is no longer blocked at that start is stale
        self._wakeups: list[tuple[float, int, LeaseState]] = []
        #: how many times capacity may have been given back (:meth:`_unblock`), and
        #: that count when the EASY head's reservation was last made at, or moved to,
        #: its earliest start: while the two agree it cannot move earlier (the same
        #: argument as for :attr:`_blocked`), and the scans do not ask
        self._given_back = 0
        self._head_given_back = -1
        #: a moving average of whether a lease's end gave capacity back early (1) or
        #: not (0): the EASY scan blocks leases only while it is low (_run_queue)
        self._early_ends = 0.0

    def pools_changed(self) -> None:
        """Capacity changed (a pool added, resized, nodes down or up): the tables are
        new, and the parked leases are placed again."""
        self._pools = list(self.slots.pools.values())
        self._remember = self._may_block()
        self._one_exclusive = len(self._pools) == 1 and self._pools[0].spec.exclusive
        self._free_now = self._pools[0].free_now if len(self._pools) == 1 else self._free_max
        #: what is free now for the head's shape bounds every queued lease: on
        #: exclusive pools a VM takes a node whatever its shape; a shared pool's bound
        #: holds for that shape alone (a counted pool of 60-cpu VMs with none free may
        #: still take a 30-cpu one), so each lease is bounded by its own shape
        self._one_bound = all(p.spec.exclusive for p in self._pools)
        self._unblock()
        for st in self.parked:
            if not st.phase.terminal:
                insort(self._new, st, key=_by_seq)
        self.parked = []

    def replan(self, st: LeaseState, first: bool = False) -> None:
        """A lease whose slot is gone (its nodes lost, or its reservation on a pool
        that changed) is placed again at the next plan; ``first``: before the others."""
        self._unblock()
        self._leave_queue(st)
        if st in self._new:
            self._new.remove(st)
        if first:
            self._new.insert(0, st)
        else:
            insort(self._new, st, key=_by_seq)
        if not self._conservative and st.phase == Phase.QUEUED and st.req.type.best_effort:
            self._enqueue(st)  # admitted before: it waits in the queue

    # ---- what the scheduler tells it ------------------------------------------------
    def accept(self, st: LeaseState) -> None:
        """A new lease: admitted (or not) at the next plan."""
        self._new.append(st)  # the newest lease has the highest sequence

    def requeue(self, st: LeaseState) -> None:
        """A suspended remainder goes back in original submission order."""
        insort(self._new, st, key=_by_seq)

    def started(self, st: LeaseState) -> None:
        """The lease's reservation began: it waits no more."""
        self._leave_queue(st)

    def drop(self, st: LeaseState) -> None:
        """The lease is cancelled: it is no longer planned."""
        self._leave_queue(st)
        if st in self._new:
            self._new.remove(st)
        if st in self.parked:
            self.parked.remove(st)

    def _enqueue(self, st: LeaseState) -> None:
        """Into the EASY/FCFS queue, in submission order."""
        queue = self.queue
        if not queue or queue[-1].seq < st.seq:
            queue.append(st)  # the newest lease has the highest sequence
        else:
            insort(queue, st, key=_by_seq)
        insort(self._by_size, (st.vms, st.seq, st))

    def _leave_queue(self, st: LeaseState) -> None:
        queue = self.queue
        if queue:
            if queue[0] is st:  # usually the head starts
                del queue[0]
                i = 0
            else:
                # found by its sequence (the queue is in submission order): EASY starts
                # leases from deep in a long queue, and comparing them one by one with
                # ``in`` and ``remove`` cost more than the rest of the scan
                i = bisect_left(queue, st.seq, key=_SEQ_OF)
                if i == len(queue) or queue[i] is not st:
                    i = -1  # not queued (a guaranteed lease, or one never admitted)
                else:
                    del queue[i]
            if i >= 0 and self._blocked.pop(st.name, None) is None:
                self._unindex(st)
        if self.head == st.name:
            self.head = None

    def _may_block(self) -> bool:
        """Whether the EASY scan keeps :attr:`_blocked`: on exclusive pools, whose fit
        is a count over time, so a lease that does not fit now is asked for its
        earliest start instead (one query either way) and not asked again before it.
        Not with holes, where a lease that does not fit now may take a hole."""
        return not self._holes and all(p.spec.exclusive for p in self._pools)

    def _unindex(self, st: LeaseState) -> None:
        by_size = self._by_size
        i = bisect_left(by_size, (st.vms, st.seq))
        if i < len(by_size) and by_size[i][2] is st:
            del by_size[i]

    def _unblock(self) -> None:
        """Capacity may have been given back: no queued lease is blocked any more."""
        self._given_back += 1
        if self._blocked:
            self._blocked.clear()
            self._wakeups.clear()
            self._by_size = sorted((st.vms, st.seq, st) for st in self.queue)

    def _by_size_index(self, now: float) -> list[tuple[int, int, LeaseState]]:
        """:attr:`_by_size` at ``now``: the leases blocked until then are back in it.
        Rebuilt if the queue was filled from outside (a snapshot restores it with
        ``queue.extend``): every change the planner makes keeps the two consistent."""
        blocked, wakeups = self._blocked, self._wakeups
        while wakeups and wakeups[0][0] <= now:
            t, seq, st = heappop(wakeups)
            if blocked.get(st.name) == t:
                del blocked[st.name]
                insort(self._by_size, (st.vms, seq, st))
        if len(self._by_size) + len(blocked) != len(self.queue):
            blocked.clear()
            wakeups.clear()
            self._by_size = sorted((st.vms, st.seq, st) for st in self.queue)
        return self._by_size

    def _book(self, st: LeaseState, pool: str, start: float, length: float, now: float,
              segments: Segments | None = None) -> None:
        if self.lifecycle.book(st, pool, start, length, now, segments):
            self._leave_queue(st)

    # ---- one planning round ---------------------------------------------------------
    def plan(self, now: float) -> None:
        for pool in self._pools:
            pool.prune(now)
        released, freed = self._changes.take()
        if freed:  # how often capacity comes back early, over the last 20 or so ends
            self._early_ends += ((1.0 if released else 0.0) - self._early_ends) / 16
        freed = freed or released
        if released:
            self._unblock()
        if released and len(self.lifecycle.reserved) > (self.head is not None):
            self._compress(now)
        fresh: list[LeaseState] = []
        while self._new:  # a preemption may hand re-planned leases back
            new, self._new = self._new, []
            for st in new:
                if st.phase.terminal:
                    continue
                if st.req.type.guaranteed:
                    self._admit_guaranteed(st, now)
                elif self._admit_best_effort(st, now) and self._conservative:
                    self._place(st, now)
                elif st.phase in (Phase.QUEUED, Phase.SUSPENDED):
                    fresh.append(st)
        if not self._conservative and self.queue:
            self._run_queue(now, freed, fresh)

    def _compress(self, now: float) -> None:
        leases = self.lifecycle.leases
        # the EASY/FCFS head is re-planned by the queue pass itself
        order = sorted((leases[n] for n in self.lifecycle.reserved if n != self.head),
                       key=_by_seq)
        for st in order:
            old = st.booking
            assert old is not None
            if old.start <= now:
                continue
            pool = self.slots.pools[old.pool]
            # the length is recomputed, not taken from the booking: start + (end -
            # start) can miss start + remaining by an ulp and let the work outlast it
            length = self.placement.length(st, old.pool)
            t = pool.move_earlier(old, max(now, st.req.earliest), length)
            if t is not None:
                self._book(st, old.pool, t, length, now)

    # ---- admission ------------------------------------------------------------------
    def _admit_best_effort(self, st: LeaseState, now: float) -> bool:
        """Queue a best-effort lease, or reject it if it can never fit."""
        if st.phase == Phase.SUSPENDED:
            if not self._conservative:
                self._enqueue(st)
            return True
        if st.phase == Phase.QUEUED:  # re-planned after a preemption: admitted before
            return True
        reason = self.placement.never_fits(st)
        if reason is not None:
            self.lifecycle.reject(st, now, reason)
            return False
        self.lifecycle.enqueue(st, now)
        if not self._conservative:
            self._enqueue(st)
        return True

    def _admit_guaranteed(self, st: LeaseState, now: float) -> None:
        """Admit a deadline or reservation lease only with a slot that ends in time."""
        req = st.req
        # a deadline lease's latest start is per pool (its speed): the deadline says it
        latest = inf
        if req.type == LeaseType.ADVANCE_RESERVATION and st.phase != Phase.PENDING:
            # placed again (its nodes were lost): from now, still ending by its end
            start = req.start if req.start is not None else req.earliest
            earliest, deadline = max(now, start), start + req.duration
            latest = deadline - st.remaining
        elif req.type == LeaseType.ADVANCE_RESERVATION:
            earliest = latest = req.start if req.start is not None else req.earliest
            if earliest < now:
                self.lifecycle.reject(
                    st, now, Reason("its start ", At(earliest), " is already past (now ",
                                    At(now), ")"), "deadline")
                return
            deadline = earliest + req.duration
        else:
            earliest = max(now, req.earliest)
            deadline = req.deadline if req.deadline is not None else earliest + req.duration
        fit = self.placement.best_fit(st, earliest, latest, deadline)
        if fit is None:
            self._refuse_guaranteed(st, now, earliest, deadline)
            return
        self.lifecycle.admit(st, now)
        self._book(st, *fit, now)

    def _refuse_guaranteed(self, st: LeaseState, now: float, earliest: float,
                           deadline: float) -> None:
        req = st.req
        reason = self.placement.never_fits(st)
        if reason is not None:
            self.lifecycle.reject(st, now, reason)
            return
        decision = None
        if req.may_preempt:
            outcome = self.preemptor.preempt(st, now, earliest)
            for victim in outcome.replanned:
                if self.head == victim.name:
                    self.head = None  # the EASY queue pass reserves for its head again
                if self._conservative:
                    insort(self._new, victim, key=_by_seq)
            if outcome.placed:
                return
            decision = outcome.decision
        if req.type == LeaseType.ADVANCE_RESERVATION:
            msg = Reason("no room for ", describe(req), " at its start ", At(earliest))
        else:
            msg = Reason("no slot for ", describe(req), " from ", At(earliest),
                         " that ends by its deadline ", At(deadline))
        if decision is not None:
            msg = Reason(msg, "; " + _no_preemption(decision))
        if st.phase != Phase.PENDING:  # admitted before: the capacity it had is lost
            self.lifecycle.fail(st, now, Reason("the slot it held was lost (nodes down, or"
                                                " the operator away when it was due), and ",
                                                msg))
            return
        self.lifecycle.reject(st, now, msg, "deadline")

    # ---- placement ------------------------------------------------------------------
    def _place(self, st: LeaseState, now: float) -> None:
        """Conservative: give a best-effort lease its earliest reservation."""
        earliest = max(now, st.req.earliest)
        fit = self.placement.best_fit(st, earliest)
        if fit is None:  # admitted for the whole pool, some of whose nodes are down
            self.parked.append(st)
            return
        pool, t, length = fit
        if self._holes and t > now and earliest <= now and self._try_hole(st, now):
            return
        self._book(st, pool, t, length, now)

    def _try_hole(self, st: LeaseState, now: float) -> bool:
        """Suspend-before-blocking (Haizea; only when configured): run a suspendable
        lease in the hole before the reservation that blocks it, suspending it in time
        for that reservation.

        Only worth it when the work done exceeds what suspending and resuming cost:
        the run part must be at least the suspend plus resume time.
        """
        req = st.req
        if req.type != LeaseType.BEST_EFFORT_SUSPENDABLE:
            return False
        for name in self.placement.candidate_pools(st):
            pool = self.slots.pools[name]
            window = pool.free_window(req.vms, req.shape, now)
            if window == inf or window <= 0:
                continue
            params = pool.spec.overhead
            h_s = overhead.suspend_seconds(req, params)
            h_r = overhead.resume_seconds(req, params)
            lead = h_r if st.resuming else 0.0
            run = window - h_s - lead
            if run < h_s + h_r or run >= st.remaining / pace(req, pool.spec):
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

    def _run_queue(self, now: float, released: bool, fresh: list[LeaseState]) -> None:
        """EASY and FCFS: start the head while it fits, reserve for the first that does
        not, then (EASY) start any later lease that fits now without moving a reservation."""
        queue = self.queue
        if self._changes.released:  # capacity given back during this plan (preemption)
            self._unblock()
        head_changed = queue[0].name != self.head or released  # plan() asks with a queue
        if head_changed:
            while queue:
                st = queue[0]
                booking = st.booking
                if booking is not None and self._head_given_back == self._given_back \
                        and st.name == self.head:
                    break  # nothing given back since it was placed at its earliest
                earliest = max(now, st.req.earliest)
                fit: Fit | None
                if booking is not None:  # the head already holds a reservation: compress it
                    table = self.slots.pools[booking.pool]
                    length = self.placement.length(st, booking.pool)
                    t = table.move_earlier(booking, earliest, length)
                    if t is None:
                        self._head_given_back = self._given_back
                        break  # it cannot start earlier: the reservation stands
                    self._unblock()  # its old slot is given back
                    fit = (booking.pool, t, length)
                else:
                    fit = self.placement.best_fit(st, earliest)
                if fit is None:
                    break  # too large while nodes are down: the head waits for them
                pool, t, length = fit
                if self._holes and booking is None and t > now and earliest <= now \
                        and self._try_hole(st, now):
                    continue  # it runs in the hole now; the next lease is the head
                self._book(st, pool, t, length, now)  # starting it removes it from the queue
                if t > now:
                    self.head = st.name
                    self._head_given_back = self._given_back
                    break
        if not self._easy or len(queue) < 2:
            return
        if not head_changed and not fresh:
            return  # nothing freed and nothing new: what did not fit still does not
        # cheap bound on what can start now: most candidates fail on size alone
        avail = self._free_now(queue[0].req.shape, now) if self._one_bound else inf
        head = queue[0]
        indexed = head_changed and not self._holes
        # the candidates as (vms, seq, lease): last first (taken with pop()), or, from
        # the index, in no order until more than the first is needed (a scan rarely
        # gets past its first candidate, and sorting them all cost more than the rest)
        pending: list[tuple[int, int, LeaseState]]
        unsorted = indexed
        if indexed:
            # the queued leases no larger than avail and not blocked, from the index:
            # the same leases, in the same order, as filtering the whole queue
            pending = self._small(avail, now)
        else:
            pending = [(st.vms, st.seq, st)
                       for st in reversed(queue[1:] if head_changed else fresh)
                       if self._holes or st.vms <= avail]
        reserved = self.lifecycle.reserved
        remember = self._remember
        # asking a lease its earliest start walks the plan further than asking whether
        # it fits now: worth it only where blocks last, i.e. where capacity is seldom
        # given back early (leases that end when their requests say, as Lublin99's
        # do). Where most leases end early (SDSC), each end unblocks everything.
        block = remember and self._early_ends < 0.5
        first = True
        while pending:
            if not unsorted:
                _, seq, st = pending.pop()
            elif first:
                entry = min(pending, key=_SEQ)
                pending.remove(entry)
                _, seq, st = entry
                first = False
            else:
                pending.sort(key=_SEQ, reverse=True)
                unsorted = False
                _, seq, st = pending.pop()
            if st is head:
                continue
            req = st.req
            if req.earliest > now or st.phase not in (Phase.QUEUED, Phase.SUSPENDED):
                continue
            if st.name in reserved:  # a former head keeps its reservation
                continue
            if req.vms > avail or (
                    not self._one_bound and req.vms > self._free_now(req.shape, now)):
                if self._holes:
                    self._try_hole(st, now)
                continue
            if block:
                found = self.placement.best_fit(st, now)
                if found is None or found[1] > now:
                    t = inf if found is None else found[1]
                    self._blocked[st.name] = t
                    heappush(self._wakeups, (t, seq, st))
                    self._unindex(st)
                    continue
            else:
                found = self.placement.best_fit(st, now, now)
            if found is not None:
                self._book(st, found[0], now, found[2], now)
                if not pending:
                    break  # the last candidate: no need to know what is left
                was = avail
                # on one exclusive pool the lease just started takes exactly its VMs'
                # nodes from what is free now
                if self._one_exclusive:
                    avail -= req.vms
                elif self._one_bound:
                    avail = self._free_now(req.shape, now)
                if avail < was and remember:
                    # what is left of the scan, without the leases now too large (a
                    # start often takes the last free nodes: then none is left; the
                    # index's smallest lease says so at once). Filtering keeps the
                    # order, sorted or not
                    by_size = self._by_size
                    if indexed and (not by_size or by_size[0][0] > avail):
                        pending = []
                    else:
                        pending = [c for c in pending if c[0] <= avail]
            elif self._holes:
                self._try_hole(st, now)

    def _small(self, avail: float, now: float) -> list[tuple[int, int, LeaseState]]:
        """The indexed (not blocked) leases no larger than ``avail``, in no particular
        order."""
        wakeups = self._wakeups
        if (wakeups and wakeups[0][0] <= now) \
                or len(self._by_size) + len(self._blocked) != len(self.queue):
            self._by_size_index(now)
        by_size = self._by_size
        if not by_size or by_size[0][0] > avail:
            return []  # often: the start just made took the last free nodes
        return by_size[:bisect_right(by_size, (avail, inf))]

    def _free_max(self, shape: Shape, now: float) -> float:
        """A cheap upper bound on the VMs of ``shape`` that can start now."""
        return max(p.free_now(shape, now) for p in self._pools)
