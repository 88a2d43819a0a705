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

import sys
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable
from heapq import heappop, heappush
from math import inf
from operator import attrgetter

from . import overhead
from .enactment import Preemptor
from .lease import LeaseState, pace
from .lifecycle import Lifecycle
from .model import Backfilling, LeaseType, Phase, PoolSpec, SchedulerConfig, Shape
from .placement import Fit, Placement, describe
from .preemption import Decision
from .profile import Profile
from .reason import At, Reason
from .slots import Segments, SlotTable
from .slots.counted import CountedPool


def _no_preemption(d: Decision) -> str:
    if d.policy == "nop":
        return "policy 'nop' never preempts"
    if not d.candidate_sets:
        return "preempting every preemptable lease would not free enough room either"
    return f"policy {d.policy!r} chose none of {d.candidate_sets} candidate sets"


def _by_seq(st: LeaseState) -> int:
    return st.seq


#: the sequence of a lease (in C: bisecting the queue and the size buckets by it)
_SEQ_OF = attrgetter("seq")
# Enum members read once, here: on Python 3.11 ``Phase.QUEUED`` goes through
# ``EnumType.__getattr__`` (about 0.13 µs, four times a plain class attribute, and
# never specialized), and the admission loop below asks several per arrival
#: the phases of a lease waiting in the EASY/FCFS queue
_WAITING = (Phase.QUEUED, Phase.SUSPENDED)
_QUEUED = Phase.QUEUED
_SUSPENDED = Phase.SUSPENDED
#: ``Phase.terminal``'s phases, and the lease types ``LeaseType.best_effort`` says
_TERMINAL = frozenset(p for p in Phase if p.terminal)
_BEST_EFFORT = frozenset(t for t in LeaseType if t.best_effort)
#: in ``Planner._firsts`` during a scan: no lease of the size left that the scan has
#: not passed over
_NONE = sys.maxsize
#: what the EASY scan found for a lease it blocked (its earliest start is later)
_BLOCKED: Fit = ("", inf, inf)
#: :meth:`Planner._ask`'s one plain pool: its name, free-node profile, speed, nodes,
#: the cpu and memory of a node, and its whole size (extended resources too)
_Plain = tuple[str, Profile, float, int, int, int, Shape]


class Planner:
    # Slots, not an instance dict: on Python 3.11 an instance's attributes live in
    # the class's shared keys only up to 29 of them (the 30th turns its dict into a
    # plain one), and the planner had 30. With a plain dict every ``self.x`` in the
    # EASY paths was a hinted dict lookup and every ``self._m(...)`` an
    # unspecialized method load (``dis.dis(..., adaptive=True)`` shows
    # LOAD_ATTR_WITH_HINT and LOAD_METHOD_ADAPTIVE); slots are read at a fixed offset
    __slots__ = (
        "_arrivals",
        "_blocked",
        "_buckets",
        "_changes",
        "_conservative",
        "_early_ends",
        "_easy",
        "_firsts",
        "_free_now",
        "_given_back",
        "_head_given_back",
        "_holes",
        "_new",
        "_nodes_free",
        "_one_bound",
        "_one_exclusive",
        "_plain",
        "_pools",
        "_remember",
        "_seqs",
        "_sizes",
        "_wakeups",
        "config",
        "direct_asks",
        "head",
        "index_scan",
        "lifecycle",
        "parked",
        "placement",
        "preemptor",
        "queue",
        "slots",
    )

    def __init__(self, config: SchedulerConfig, slots: SlotTable, lifecycle: Lifecycle,
                 placement: Placement, preemptor: Preemptor) -> None:
        #: whether the EASY scan after a lease's end takes its candidates from the size
        #: buckets (the usual way) or filters the whole queue (the plain way: the same
        #: leases in the same order, slower; tests compare the two)
        self.index_scan = True
        #: whether, on one plain pool, the EASY/FCFS queue's asks go to its free-node
        #: profile directly (the usual way, :meth:`_ask`) or through
        #: ``Placement.best_fit``, the leases it starts now are booked and started in
        #: one step (``Lifecycle.start_plain``) or through ``Lifecycle.book``, and
        #: admission (every mode) checks the pool's size itself or asks
        #: ``Placement.never_fits`` (the plain ways: the same answers; tests compare)
        self.direct_asks = True
        self.config = config
        self.slots = slots
        self.lifecycle = lifecycle
        self.placement = placement
        self.preemptor = preemptor
        self._conservative = config.backfilling == Backfilling.CONSERVATIVE
        self._easy = config.backfilling == Backfilling.EASY
        #: suspend-before-blocking: a best-effort lease may run in a hole (asked often);
        #: never without suspension (a lease runs only where it can finish)
        self._holes = config.suspend_before_blocking and config.suspension != "none"
        #: best-effort leases waiting to start (EASY and FCFS), in submission order
        self.queue: list[LeaseState] = []
        #: their sequences, aligned with :attr:`queue`: a lease leaving it is found by
        #: bisecting these (EASY starts leases from deep in a long queue; comparing
        #: them one by one cost more than the rest of the scan, and bisecting the
        #: leases by a key function still cost a call per probe)
        self._seqs: list[int] = []
        #: the same leases but those in :attr:`_blocked`, by size: the EASY scan after
        #: capacity is freed visits only those no larger than what is free now, in
        #: submission order (the queue holds a hundred leases on a busy pool, of which
        #: a handful are that small and not blocked). ``_buckets[n]``: the leases of
        #: n VMs in submission order; ``_sizes``: the sizes that have a bucket,
        #: ascending; ``_firsts``: the sequence of each one's first lease, aligned with
        #: ``_sizes``. The first lease no larger than ``n`` in submission order is then
        #: the first of the bucket whose sequence is the least of
        #: ``_firsts[:bisect_right(_sizes, n)]``: one ``min`` over the sizes, in C.
        #: No bucket is empty (but during a scan, which removes those it empties when
        #: it ends): kept, they filled ``_sizes`` with every size ever queued (80 on
        #: Lublin99), and that ``min``, at every lease's end, was EASY's costliest line
        self._buckets: dict[int, list[LeaseState]] = {}
        self._sizes: list[int] = []
        self._firsts: list[int] = []
        #: EASY/FCFS: the leases admitted in this plan, not yet in :attr:`queue`: the
        #: queue pass asks each first (most either start at once or are blocked at
        #: once, and then never enter the size buckets), and puts in the queue those
        #: that wait. Empty between plans.
        self._arrivals: list[LeaseState] = []
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
        self._nodes_free = self._free_nodes()
        self._plain = self._plain_pool()
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
        self._nodes_free = self._free_nodes()
        self._plain = self._plain_pool()
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

    def restore_queue(self, leases: Iterable[LeaseState]) -> None:
        """The EASY/FCFS queue of a restored core (:mod:`.snapshot`), in submission
        order; none of them is blocked."""
        self.queue = list(leases)
        self._seqs = [st.seq for st in self.queue]
        self._blocked.clear()
        self._wakeups.clear()
        self._reindex()

    def _enqueue(self, st: LeaseState, index: bool = True) -> None:
        """Into the EASY/FCFS queue, in submission order; ``index``: and into its
        size's bucket (not a lease blocked as it joins)."""
        seqs, seq = self._seqs, st.seq
        if not seqs or seqs[-1] < seq:
            self.queue.append(st)  # the newest lease has the highest sequence
            seqs.append(seq)
            if index:
                bucket = self._buckets.get(st.vms)
                if bucket:  # the newest of its size too (as _index would find)
                    bucket.append(st)
                    return
        else:
            i = bisect_right(seqs, seq)
            self.queue.insert(i, st)
            seqs.insert(i, seq)
        if index:
            self._index(st)

    def _leave_queue(self, st: LeaseState) -> None:
        queue = self.queue
        if queue:
            if queue[0] is st:  # usually the head starts
                i = 0
            else:
                i = bisect_left(self._seqs, st.seq)  # found by its sequence
                if i == len(queue) or queue[i] is not st:
                    i = -1  # not queued (a guaranteed lease, or one never admitted)
            if i >= 0:
                del queue[i], self._seqs[i]
                if self._blocked.pop(st.name, None) is None:
                    self._unindex(st)
        if self.head == st.name:
            self.head = None

    def _may_block(self) -> bool:
        """Whether the EASY scan keeps :attr:`_blocked`: on exclusive pools, whose fit
        is a count over time, so a lease that does not fit now is asked for its
        earliest start instead (one query either way) and not asked again before it.
        Not with holes, where a lease that does not fit now may take a hole, nor
        where images are deployed: there a lease's earliest start also waits on the
        repository link, which moves with every transfer booked."""
        return not self._holes and all(p.spec.exclusive and p.spec.images is None
                                       for p in self._pools)

    def _index(self, st: LeaseState) -> None:
        """Into its size's bucket, in submission order."""
        vms = st.vms
        bucket = self._buckets.get(vms)
        if bucket is None:
            self._buckets[vms] = [st]
            j = bisect_left(self._sizes, vms)
            self._sizes.insert(j, vms)
            self._firsts.insert(j, st.seq)
            return
        if bucket[-1].seq < st.seq:
            bucket.append(st)  # the newest lease has the highest sequence
            return
        insort(bucket, st, key=_SEQ_OF)
        if bucket[0] is st:
            self._firsts[bisect_left(self._sizes, vms)] = st.seq

    def _unindex(self, st: LeaseState) -> None:
        """Out of its size's bucket, if it is there."""
        vms = st.vms
        bucket = self._buckets.get(vms)
        if not bucket:
            return
        if bucket[0] is st:
            del bucket[0]
            j = bisect_left(self._sizes, vms)
            if bucket:
                self._firsts[j] = bucket[0].seq
            else:  # no empty bucket is kept
                del self._sizes[j], self._firsts[j], self._buckets[vms]
        elif bucket[-1] is st:
            del bucket[-1]
        else:
            i = bisect_left(bucket, st.seq, key=_SEQ_OF)
            if i < len(bucket) and bucket[i] is st:
                del bucket[i]

    def _reindex(self) -> None:
        """Every queued lease into the buckets (none is blocked)."""
        buckets: dict[int, list[LeaseState]] = {}
        for st in self.queue:  # in submission order
            bucket = buckets.get(st.vms)
            if bucket is None:
                buckets[st.vms] = [st]
            else:
                bucket.append(st)
        self._buckets = buckets
        self._sizes = sorted(buckets)
        self._firsts = [buckets[n][0].seq for n in self._sizes]

    def _unblock(self) -> None:
        """Capacity may have been given back: no queued lease is blocked any more."""
        self._given_back += 1
        if self._blocked:
            self._blocked.clear()
            self._wakeups.clear()
            self._reindex()

    def _wake(self, now: float) -> None:
        """The leases blocked until ``now`` back into the buckets."""
        blocked, wakeups = self._blocked, self._wakeups
        while wakeups and wakeups[0][0] <= now:
            t, _, st = heappop(wakeups)
            if blocked.get(st.name) == t:
                del blocked[st.name]
                self._index(st)

    def _book(self, st: LeaseState, pool: str, start: float, length: float, now: float,
              segments: Segments | None = None) -> None:
        if self.lifecycle.book(st, pool, start, length, now, segments):
            self._leave_queue(st)

    # ---- one planning round ---------------------------------------------------------
    def plan(self, now: float) -> None:
        for pool in self._pools:
            pool.prune(now)
        images = self.placement.images
        if images is not None:
            images.advance(now)
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
                if st.phase in _TERMINAL:
                    continue
                if st.req.type not in _BEST_EFFORT:  # guaranteed
                    self._admit_guaranteed(st, now)
                elif self._admit_best_effort(st, now) and self._conservative:
                    self._place(st, now)
                elif st.phase in _WAITING:
                    fresh.append(st)
        if self._conservative:
            return
        arrivals = self._arrivals
        if not arrivals:
            if self.queue:
                self._run_queue(now, freed, fresh)
            return
        # leases admitted in this plan: when they are the only news (no suspended
        # lease back, nothing given back in this plan), each is asked before it joins
        # the queue; else they join it and the queue is run. Written out here rather
        # than in a method of its own: one call fewer at every arrival (EASY's share
        # of the Lublin99 100k trace's cost, issue 20; docs/benchmarks.md, "easy3")
        self._arrivals = []
        queue = self.queue
        if not self._holes and self.index_scan and len(arrivals) == len(fresh) \
                and not self._changes.released:
            if not queue:
                if len(arrivals) == 1:
                    self._arrive_as_head(arrivals[0], now)
                    return
            elif self._easy and not freed and queue[0].name == self.head:
                self._arrive_behind(arrivals, now)
                return
        for st in arrivals:
            self._enqueue(st)
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
            earliest = self.placement.ready(st, old.pool, max(now, st.req.earliest))
            t = pool.move_earlier(old, earliest, length)
            if t is not None:
                self._book(st, old.pool, t, length, now)

    # ---- admission ------------------------------------------------------------------
    def _admit_best_effort(self, st: LeaseState, now: float) -> bool:
        """Queue a best-effort lease, or reject it if it can never fit."""
        if st.phase == _SUSPENDED:
            if not self._conservative:
                self._enqueue(st)
            return True
        if st.phase == _QUEUED:  # re-planned after a preemption: admitted before
            return True
        plain = self._plain
        req = st.req
        shape = req.shape
        # on one plain pool, what ``never_fits`` finds for a lease that names no pool
        # is whether the pool holds it (as :meth:`_ask` checks): asked here at every
        # arrival, in every mode, and ``never_fits`` reached that through the
        # candidate pools and each one's ``max_vms`` (6% of EASY's Lublin99 run)
        if plain is None or not self.direct_asks or req.pool is not None \
                or st.dispatched is not None or st.pool is not None \
                or req.vms > plain[3] or shape.cpu > plain[4] or shape.memory > plain[5] \
                or (shape.extended and not shape.fits_in(plain[6])):
            reason = self.placement.never_fits(st)
            if reason is not None:
                self.lifecycle.reject(st, now, reason)
                return False
        self.lifecycle.enqueue(st, now)
        if not self._conservative:
            self._arrivals.append(st)  # the queue pass asks it, then queues it if it waits
        return True

    def _admit_guaranteed(self, st: LeaseState, now: float) -> None:
        """Admit a deadline or reservation lease only with a slot that ends in time."""
        req = st.req
        # a deadline lease's latest start is per pool (its speed): the deadline says it
        latest = inf
        # an advance reservation's bounds are its run's: its VMs boot before them and
        # shut down after (per pool: Placement.best_fit)
        anchored = req.type == LeaseType.ADVANCE_RESERVATION
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
        fit = self.placement.best_fit(st, earliest, latest, deadline, anchored, now)
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
        if req.type == LeaseType.ADVANCE_RESERVATION:
            # no preemption brings an image sooner (DESIGN §2.6)
            late = self.placement.late_image(st, earliest)
            if late is not None:
                self._fail_or_reject(st, now, late)
                return
        decision = None
        if req.may_preempt:
            if req.type != LeaseType.ADVANCE_RESERVATION:
                # no sooner than its image can be on its nodes, wherever it goes
                earliest = max((self.placement.ready(st, p, earliest)
                                for p in self.placement.candidate_pools(st)), default=earliest)
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
        self._fail_or_reject(st, now, msg)

    def _fail_or_reject(self, st: LeaseState, now: float, msg: Reason) -> None:
        """A guaranteed lease gets no slot: rejected, or Failed if admitted before."""
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
            # the hole begins once its image can be on its nodes (004 §3.2: the
            # later of the image's and the nodes' times), now when it needs none
            at = self.placement.ready(st, name, now)
            pool = self.slots.pools[name]
            window = pool.free_window(req.vms, req.shape, at)
            if window == inf or window <= 0:
                continue
            params = pool.spec.overhead
            h_s = overhead.suspend_seconds(req, params)
            h_r = overhead.resume_seconds(req, params)
            vm = pool.spec.vm
            if vm is not None:
                hole = self._vm_hole(st, pool.spec, at, window, h_s, h_r)
                if hole is None:
                    continue
                self._book(st, name, at, window, now, hole)
                return True
            lead = h_r if st.resuming else 0.0
            run = window - h_s - lead
            if run < h_s + h_r or run >= st.remaining / pace(req, pool.spec):
                continue
            run_from, run_to = at + lead, at + lead + run
            segments: Segments = (
                *((("resume", at, run_from),) if st.resuming else ()),
                ("run", run_from, run_to),
                ("suspend", run_to, at + window),
            )
            self._book(st, name, at, window, now, segments)
            return True
        return False

    @staticmethod
    def _vm_hole(st: LeaseState, spec: PoolSpec, at: float, window: float, h_s: float,
                 h_r: float) -> Segments | None:
        """:meth:`_try_hole`'s booking on a pool with a VM model, from ``at``: the
        VMs boot (and resume), run, are suspended and shut down, all in the window;
        ``None`` when the run would not pay for the suspend and resume, or would
        finish anyway."""
        vm = spec.vm
        assert vm is not None
        lead = vm.boot + (h_r if st.resuming else 0.0)
        run = window - h_s - vm.shutdown - lead
        if run < h_s + h_r or run >= st.remaining / pace(st.req, spec):
            return None
        booted, run_from = at + vm.boot, at + lead
        run_to = run_from + run
        suspended = run_to + h_s
        out: list[tuple[str, float, float]] = []
        if vm.boot:
            out.append(("boot", at, booted))
        if st.resuming:
            out.append(("resume", booted, run_from))
        out += [("run", run_from, run_to), ("suspend", run_to, suspended)]
        if vm.shutdown:
            out.append(("shutdown", suspended, at + window))
        return tuple(out)

    def _run_queue(self, now: float, released: bool, fresh: list[LeaseState]) -> None:
        """EASY and FCFS: start the head while it fits, reserve for the first that does
        not, then (EASY) start any later lease that fits now without moving a reservation.

        Asked at every plan with a queue (at every lease's arrival and end), so its
        usual paths are kept short: an end where the head's reservation stands and
        nothing small enough waits, and an arrival (:meth:`_arrive_as_head`,
        :meth:`_arrive_behind`)."""
        if self._changes.released:  # capacity given back during this plan (preemption)
            self._unblock()
        queue = self.queue
        avail: float
        head = queue[0]  # plan() asks with a queue
        head_changed = released or head.name != self.head
        if head_changed:
            # the usual case at a lease's end: the head's reservation stands, as
            # nothing was given back since it was placed at its earliest
            if head.booking is None or self._head_given_back != self._given_back \
                    or head.name != self.head:
                self._run_head(now)
            if not self._easy or len(queue) < 2:
                return
            if not self._holes and self.index_scan:
                # the queued leases no larger than what is free and not blocked, from
                # the buckets: the same leases, in the same order, as filtering the
                # whole queue. Most ends free too few nodes for any: answered here
                wakeups = self._wakeups
                if wakeups and wakeups[0][0] <= now:
                    self._wake(now)
                prof = self._nodes_free
                if prof is not None:
                    avail = prof.free[bisect_right(prof.times, now) - 1]
                else:
                    avail = self._free_now(queue[0].req.shape, now) if self._one_bound else inf
                j = bisect_right(self._sizes, avail)
                if j:
                    seq = min(self._firsts[:j])
                    if seq != _NONE:
                        self._scan_index(now, avail, seq)
                return
        elif not fresh:
            return  # nothing freed and nothing new: what did not fit still does not
        elif not self._easy or len(queue) < 2:
            return
        # cheap bound on what can start now: most candidates fail on size alone
        prof = self._nodes_free
        if prof is not None:
            avail = prof.free[bisect_right(prof.times, now) - 1]
        else:
            avail = self._free_now(queue[0].req.shape, now) if self._one_bound else inf
        pending: list[tuple[int, int, LeaseState]]
        if head_changed:  # the plain way, or with holes
            pending = [(st.vms, st.seq, st) for st in reversed(queue[1:])
                       if self._holes or st.vms <= avail]
        elif self._holes:
            pending = [(st.vms, st.seq, st) for st in reversed(fresh)]
        elif len(fresh) == 1:
            st = fresh[0]  # one arrival: most are larger than what is free
            if st.vms > avail:
                return
            pending = [(st.vms, st.seq, st)]
        else:
            pending = [(st.vms, st.seq, st) for st in reversed(fresh) if st.vms <= avail]
        # the candidates, last first (taken with pop())
        block = self._remember and self._early_ends < 0.5
        while pending:
            _, seq, st = pending.pop()
            if self._start_now(st, seq, now, avail, block) and pending:
                was = avail
                avail = self._less(avail, st, now)
                if avail < was and self._remember:
                    # what is left of the scan, without the leases now too large
                    pending = [c for c in pending if c[0] <= avail]

    def _arrive_as_head(self, st: LeaseState, now: float) -> None:
        """A lease arriving to an empty queue: what :meth:`_run_head` does with it as
        the head (it starts if it fits now, or holds a reservation at its earliest
        start), without entering the queue if it starts."""
        fit = self._ask(st, max(now, st.earliest))
        if fit is not None and fit[1] <= now:  # it starts
            if self._plain is not None and self.direct_asks and not st.resuming:
                self.lifecycle.start_plain(st, fit[0], fit[2], now)
            else:
                self.lifecycle.book(st, fit[0], fit[1], fit[2], now)
            return
        self._enqueue(st)
        if fit is not None:  # else too large while nodes are down: it waits for them
            self._book(st, *fit, now)
            self.head = st.name
            self._head_given_back = self._given_back

    def _arrive_behind(self, arrivals: list[LeaseState], now: float) -> None:
        """EASY, nothing freed, the head's reservation standing: each arrival, in
        submission order, starts if it fits now without moving a reservation (as
        :meth:`_start_now` asks it), is blocked until its earliest start, or joins
        the queue. A lease that starts never enters the queue, one blocked never
        enters the size buckets."""
        avail: float
        prof = self._nodes_free
        if prof is not None:
            avail = prof.free[bisect_right(prof.times, now) - 1]
        else:
            avail = self._free_now(self.queue[0].req.shape, now) if self._one_bound else inf
        block = self._remember and self._early_ends < 0.5
        # the leases it starts are booked and started at once (Lifecycle.start_plain)
        plain = self._plain is not None and self.direct_asks
        queue, seqs, buckets = self.queue, self._seqs, self._buckets
        for st in arrivals:
            vms, seq = st.vms, st.seq
            req = st.req
            if vms > avail or st.earliest > now or (
                    not self._one_bound and vms > self._free_now(req.shape, now)):
                if seqs[-1] < seq:  # the newest lease (as _enqueue and _index find)
                    queue.append(st)
                    seqs.append(seq)
                    bucket = buckets.get(vms)
                    if bucket:
                        bucket.append(st)
                    else:
                        self._index(st)
                else:
                    self._enqueue(st)
                continue
            if block:
                found = self._ask(st, now)
                if found is None or found[1] > now:
                    t = inf if found is None else found[1]
                    self._enqueue(st, index=False)
                    self._blocked[st.name] = t
                    heappush(self._wakeups, (t, seq, st))
                    continue
            else:
                found = self._ask(st, now, now)
                if found is None:
                    self._enqueue(st)
                    continue
            # booked from found[1], which is now (as _start_now books it)
            if plain and not st.resuming:
                self.lifecycle.start_plain(st, found[0], found[2], now)
            elif not self.lifecycle.book(st, found[0], found[1], found[2], now):
                self._enqueue(st)  # booked from later: it waits queued, as after _start_now
            avail = avail - vms if self._one_exclusive else self._less(avail, st, now)

    def _run_head(self, now: float) -> None:
        """Start the queue's head while it fits; reserve for the first that does not
        (or move its reservation earlier)."""
        queue = self.queue
        while queue:
            st = queue[0]
            booking = st.booking
            if booking is not None and self._head_given_back == self._given_back \
                    and st.name == self.head:
                break  # nothing given back since it was placed at its earliest
            earliest = max(now, st.earliest)
            fit: Fit | None
            if booking is not None:  # the head already holds a reservation: compress it
                table = self.slots.pools[booking.pool]
                length = self.placement.length(st, booking.pool)
                t = table.move_earlier(booking, self.placement.ready(st, booking.pool, earliest),
                                       length)
                if t is None:
                    self._head_given_back = self._given_back
                    break  # it cannot start earlier: the reservation stands
                self._unblock()  # its old slot is given back
                fit = (booking.pool, t, length)
            else:
                fit = self._ask(st, earliest)
            if fit is None:
                break  # too large while nodes are down: the head waits for them
            pool, t, length = fit
            if self._holes and booking is None and t > now and earliest <= now \
                    and self._try_hole(st, now):
                if st.booking is None or st.booking.start <= now:
                    continue  # it runs in the hole now; the next lease is the head
                # its hole begins once its image is there: it holds the head's
                # reservation meanwhile, as a head waiting for its image does
                self.head = st.name
                self._head_given_back = self._given_back
                break
            self._book(st, pool, t, length, now)  # starting it removes it from the queue
            if t > now:
                self.head = st.name
                self._head_given_back = self._given_back
                break

    def _scan_index(self, now: float, avail: float, seq: int) -> None:
        """EASY: start each lease of the buckets no larger than ``avail``, in
        submission order, that fits now without moving a reservation (what
        :meth:`_start_now` asks, written out here: the scan knows where each lease
        sits in its bucket, and that it is neither blocked nor too large). ``seq``:
        the first one's sequence (the caller looked)."""
        # most scans ask one lease: nothing is bound to a local for the loop's sake
        sizes, firsts, buckets = self._sizes, self._firsts, self._buckets
        # asking a lease its earliest start walks the plan further than asking whether
        # it fits now: worth it only where blocks last, i.e. where capacity is seldom
        # given back early (leases that end when their requests say, as Lublin99's
        # do). Where most leases end early (SDSC), each end unblocks everything.
        block = self._remember and self._early_ends < 0.5
        # the leases it starts are booked and started at once (Lifecycle.start_plain)
        plain = self._plain is not None and self.direct_asks
        #: per size, how many of its bucket's first leases this scan passed over
        #: (they stay queued): its entry in ``_firsts`` is the next one's meanwhile
        passed: dict[int, int] = {}
        #: the sizes whose buckets this scan emptied: their entries stay (``_NONE``)
        #: until it ends, so that ``i`` keeps indexing a lease's size
        emptied: list[int] = []
        while True:
            i = firsts.index(seq)
            vms = sizes[i]
            bucket = buckets[vms]
            k = passed.get(vms, 0) if passed else 0
            st = bucket[k]
            req = st.req
            # the head, and a former head, keep their reservations
            if st is self.queue[0] or st.earliest > now or st.phase not in _WAITING \
                    or st.name in self.lifecycle.reserved \
                    or (not self._one_bound and vms > self._free_now(req.shape, now)):
                found = None
            elif block:
                found = self._ask(st, now)
                if found is None or found[1] > now:
                    t = inf if found is None else found[1]
                    self._blocked[st.name] = t
                    heappush(self._wakeups, (t, seq, st))
                    found = _BLOCKED  # out of the buckets until it wakes
            else:
                found = self._ask(st, now, now)
            if found is not None and found is not _BLOCKED:
                # booked from found[1], which is now (as _start_now books it)
                if plain and not st.resuming:
                    self.lifecycle.start_plain(st, found[0], found[2], now)
                    started = True
                else:
                    started = self.lifecycle.book(st, found[0], found[1], found[2], now)
                if started:
                    q = bisect_left(self._seqs, seq)  # it started: out of the queue
                    del self.queue[q], self._seqs[q], bucket[k]
                    if not bucket:
                        emptied.append(vms)
                else:  # booked from later: it stays queued, as after _start_now
                    found = None
                avail = avail - vms if self._one_exclusive else self._less(avail, st, now)
            elif found is not None:
                del bucket[k]  # blocked
                if not bucket:
                    emptied.append(vms)
            if found is None:
                k += 1  # passed over: the next of its size stands for it
                passed[vms] = k
            # only this lease's bucket changed, so ``i`` still indexes its size
            firsts[i] = bucket[k].seq if k < len(bucket) else _NONE
            j = bisect_right(sizes, avail)
            if not j:
                break
            seq = min(firsts[:j])
            if seq == _NONE:
                break  # every lease small enough was asked
        for vms in passed:  # (a bucket passed over is not empty)
            firsts[bisect_left(sizes, vms)] = buckets[vms][0].seq
        for vms in emptied:
            j = bisect_left(sizes, vms)
            del sizes[j], firsts[j], buckets[vms]

    def _less(self, avail: float, st: LeaseState, now: float) -> float:
        """``avail`` after ``st`` started at ``now``."""
        if self._one_exclusive:
            # on one exclusive pool the lease takes exactly its VMs' nodes
            return avail - st.req.vms
        if self._one_bound:
            return self._free_now(st.req.shape, now)
        return avail

    def _start_now(self, st: LeaseState, seq: int, now: float, avail: float,
                   block: bool) -> bool:
        """EASY: start ``st`` (of sequence ``seq``) if it fits now without moving a
        reservation; whether it started. ``avail``: a bound on the VMs that can start
        now; ``block``: if it does not fit, block it until its earliest start."""
        req = st.req
        # the head, and a former head, keep their reservations
        if st is self.queue[0] or st.earliest > now or st.phase not in _WAITING \
                or st.name in self.lifecycle.reserved:
            return False
        if req.vms > avail or (
                not self._one_bound and req.vms > self._free_now(req.shape, now)):
            if self._holes:
                self._try_hole(st, now)
            return False
        if block:
            found = self._ask(st, now)
            if found is None or found[1] > now:
                t = inf if found is None else found[1]
                self._blocked[st.name] = t
                heappush(self._wakeups, (t, seq, st))
                self._unindex(st)
                return False
        else:
            found = self._ask(st, now, now)
        if found is not None:
            # found[1] is now, but for a lease whose image is still on its way: it
            # starts once the image is there (DESIGN §2.6)
            if self.lifecycle.book(st, found[0], found[1], found[2], now):  # it starts
                self._leave_queue(st)
            return True
        if self._holes:
            self._try_hole(st, now)
        return False

    def _free_nodes(self) -> Profile | None:
        """On one exclusive pool, its free-node profile: what is free at an instant
        for any shape is read off it (:meth:`.Profile.at`, written out where asked:
        every plan asks, and a call cost as much as the lookup)."""
        pool = self._pools[0] if self._one_exclusive else None
        if isinstance(pool, CountedPool) and type(pool.slots_free) is Profile:
            return pool.slots_free
        return None

    def _plain_pool(self) -> _Plain | None:
        """On one exclusive pool without a VM model, where no pool deploys images:
        what :meth:`_ask` needs to answer off the pool's free-node profile."""
        prof = self._nodes_free
        table = self._pools[0]
        if prof is None or not isinstance(table, CountedPool) \
                or self.placement.images is not None:
            return None
        spec = self.placement.pools[table.spec.name]  # what Placement.length reads
        if spec.vm is not None:
            return None
        return (spec.name, prof, spec.speed, table.total, table.spec.cpu, table.spec.memory,
                table.spec.size)

    def _ask(self, st: LeaseState, earliest: float, latest: float = inf) -> Fit | None:
        """``placement.best_fit(st, earliest, latest)`` for a best-effort lease of the
        EASY/FCFS queue.

        EASY asks at most arrivals and at many ends (118k asks on Lublin99 100k), and
        ``best_fit`` reaches its one profile query through seven more calls (the
        candidate pools, the lease's home, the booking's length and pace, the pool's
        fit and its shape check). On one plain pool (:meth:`_plain_pool`), for a
        lease that names no pool and is not resuming, each of those has one answer,
        known beforehand, so the profile is asked directly; any other lease goes
        through ``best_fit``. With one pool, a lease's pool, if it has one, is that
        one, as ``candidate_pools`` would say."""
        plain = self._plain
        req = st.req
        if plain is None or st.resuming or req.pool is not None or st.dispatched is not None \
                or not self.direct_asks:
            return self.placement.best_fit(st, earliest, latest)
        name, prof, speed, total, cpu, memory, size = plain
        vms, shape = req.vms, req.shape
        if vms > total or shape.cpu > cpu or shape.memory > memory \
                or (shape.extended and not shape.fits_in(size)):
            return None  # the pool can never hold it (CountedPool.fit)
        length = st.remaining / speed  # Placement.length: a best-effort lease's pace
        t = prof.fit(vms, length, earliest, latest)
        return None if t is None else (name, t, length)

    def _free_max(self, shape: Shape, now: float) -> float:
        """A cheap upper bound on the VMs of ``shape`` that can start now."""
        return max(p.free_now(shape, now) for p in self._pools)
