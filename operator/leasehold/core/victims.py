"""Who can be preempted, and what it costs (DESIGN §2.4; 000 §2.1, §5).

When a preemptor does not fit at ``t`` (its ready time, or its start), the
*preemptable* leases with a booking in its window are gathered, each with what
preempting it means:

* external ``BestEffortCancellable`` running → cancelled (``stopSeconds``);
* external ``BestEffortSuspendable`` running → suspended (eq. 7), its remainder
  re-queued in submission order and resumed later; under ``suspension: none``
  cancelled and re-queued (``requeue``: ``stopSeconds``, plus δ), to start over;
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

from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from dataclasses import dataclass
from math import inf
from typing import overload

from . import overhead
from .lease import LeaseState, PreemptCosts, pace, span
from .model import LeaseType, Origin, OverheadParams, Phase, PoolSpec, Request, VmModel
from .placement import Placement
from .preemptable import Index, Member
from .preemption import focus
from .preemption.instance import NodeSums, Victim, to_micro
from .slots import Booking, PackedPool, SharedPool, SlotTable

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


def action_costs(req: Request, params: OverheadParams, action: str,
           vm: VmModel | None = None) -> tuple[float, float]:
    """(seconds from the order until the lease has vacated, overhead h(L)). On a pool
    with a VM model a stop or a suspension ends with the VMs' shutdown (held), and a
    suspended lease boots again when it resumes: both count in h(L)."""
    if action == "replan":
        return 0.0, overhead.replan_overhead(req, params)
    if action == "migrate":
        return overhead.migrate_leave_seconds(req, params), overhead.migrate_overhead(req, params)
    if action in ("cancel", "requeue"):
        took, cost = params.stop_seconds, overhead.cancel_overhead(req, params)
        if action == "requeue":  # it is placed again: a rescheduling too
            cost += params.reschedule_seconds
    else:
        took = overhead.suspend_seconds(req, params)
        cost = overhead.suspend_overhead(req, params)
        if vm is not None:
            cost += vm.boot
    if vm is not None:
        took += vm.shutdown
        cost += vm.shutdown
    return took, cost


def preempt_costs(req: Request, params: OverheadParams, suspension: str = "all",
                  vm: VmModel | None = None) -> PreemptCosts:
    """What preempting ``req`` on a pool of ``params`` (and ``vm``) means: its action
    when running, the seconds that takes to vacate, its overhead, and the overhead of
    re-planning it when queued (empty: never preemptable). Under ``suspension``
    ``none`` a suspendable lease is cancelled and re-queued (``requeue``) instead."""
    if req.origin != Origin.EXTERNAL or req.type not in PREEMPTABLE:
        return ()
    action = _RUNNING_ACTION[req.type]
    if action == "suspend" and suspension == "none":
        action = "requeue"
    took, cost = action_costs(req, params, action, vm)
    return action, took, cost, action_costs(req, params, "replan")[1]


def costs_on(st: LeaseState, pool_name: str, params: OverheadParams, suspension: str = "all",
             vm: VmModel | None = None) -> PreemptCosts:
    """:func:`preempt_costs` of the lease on the pool, kept on the lease (its request
    does not change, nor does the scheduler's configuration). The gathering's hot
    loops do the same lookup written out."""
    memo = st.preempt_costs
    got = memo.get(pool_name)
    if got is None:
        got = memo[pool_name] = preempt_costs(st.req, params, suspension, vm)
    return got


class _Later(Sequence[Victim]):
    """Every victim, made (by :meth:`Victims.gather`) only when first looked at;
    its length is known before."""

    def __init__(self, size: int, make: Callable[[], list[Victim]]) -> None:
        self._size = size
        self._make = make
        self._made: list[Victim] | None = None

    def _all(self) -> list[Victim]:
        if self._made is None:
            self._made = self._make()
            assert len(self._made) == self._size, "the index and the gathering disagree"
        return self._made

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, i: int) -> Victim: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Victim]: ...
    def __getitem__(self, i: int | slice) -> Victim | Sequence[Victim]:
        return self._all()[i]

    def __iter__(self) -> Iterator[Victim]:
        return iter(self._all())


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
                 placement: Placement, watched: object | None = None,
                 suspension: str = "all") -> None:
        self.slots = slots
        #: the scheduler's :attr:`~.model.SchedulerConfig.suspension`
        self.suspension = suspension
        self.pools = pools
        self._leases = leases
        self._reserved = reserved
        self._placement = placement
        #: the running preemptable leases' per-node sums, kept as the transitions of
        #: the ``watched`` lifecycle change the leases (none without it)
        self.index = (None if watched is None
                      else Index(slots, pools, leases, reserved, watched, self.costs_on))

    def costs_on(self, st: LeaseState, pool_name: str, params: OverheadParams) -> PreemptCosts:
        """:func:`costs_on` under this scheduler's suspension, on the pool's VM model."""
        return costs_on(st, pool_name, params, self.suspension, self.pools[pool_name].vm)

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
        # the preemptor's booking there: its work at the pool's speed (a new lease),
        # in VMs with their boot and shutdown
        d = span(req, self.pools[pool_name], req.duration)
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
                got = memo[pool_name] = preempt_costs(st.req, params, self.suspension,
                                                      self.pools[pool_name].vm)
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

    def gather_summed(
        self, pool_name: str, req: Request, now: float, t: float,
        excluded: Set[str] = frozenset(),
    ) -> tuple[Sequence[Victim], float, NodeSums | None]:
        """:meth:`gather` for a narrowed :func:`~.preemption.instance.build`: the same
        victims and window end, and on a packed shared pool with more victims than
        :data:`.focus.NARROW_ABOVE` their :class:`NodeSums`, read off the index of
        running preemptable leases (:mod:`.preemptable`) plus the queued reservations
        in the window. The victims are then made only as asked for: those on the
        nodes the ranking keeps (``NodeSums.on``), all of them (as :meth:`gather`
        makes them) only if the build needs every one. ``None`` sums, and the
        victims made at once, where the index does not hold for the window (a
        member would leave by itself before it could vacate, or starts after
        ``t + d``), with ``excluded`` leases, or with few victims."""
        got = self._from_index(pool_name, req, now, t, excluded)
        if got is not None:
            return got
        victims, end = self.gather(pool_name, req, now, t, excluded)
        return victims, end, None

    def _from_index(
        self, pool_name: str, req: Request, now: float, t: float, excluded: Set[str],
    ) -> tuple[Sequence[Victim], float, NodeSums] | None:
        pool = self.slots.pools[pool_name]
        if (self.index is None or excluded or not isinstance(pool, SharedPool)
                or not isinstance(pool.table, PackedPool)):
            return None
        nodes = pool.spec.nodes
        index = self.index.sums(pool_name)
        if len(index.cpu) > nodes:
            return None
        d = span(req, self.pools[pool_name], req.duration)
        last_start = index.latest_start()
        if last_start is not None and last_start >= t + d:
            return None

        def vacate_of(key: tuple[str, float]) -> float:
            # as the gathering computes it: max(now, t - took) + took, a migration now
            action, took = key
            late = t - took
            return (now if action == "migrate" or late < now else late) + took

        vacates = {key: vacate_of(key) for key in index.keys}
        # members that end by ``t`` or leave by themselves before they could vacate
        # are no victims: only those ending by ``t`` or the latest vacate time can be
        # (a migration vacates ``took`` after now, which may be before ``t``)
        gone: dict[str, Member] = {}
        for name in index.ending_by(max([t, *vacates.values()])):
            m = index.members[name]
            if m.booking.end <= t or vacates[m.key] >= m.booking.end:
                gone[name] = m
        left = Counter(index.keys)
        left.subtract(m.key for m in gone.values())
        latest = t
        for key, n in left.items():
            if n > 0 and vacates[key] > latest:
                latest = vacates[key]
        # the queued reservations: those starting in [t, t + d) first, as the
        # gathering meets them; then the window's tail
        leases, reserved, bookings = self._leases, self._reserved, pool.bookings
        params = self.pools[pool_name].overhead
        # each with its re-planning overhead: its victim is made only if its node is
        # kept (thousands are queued in the window of a 5,000-node pool; making each
        # one's was a third of the gathering). The costs' memo is read here as the
        # victims' maker reads it
        main: list[tuple[Booking, float]] = []
        later: list[tuple[Booking, float]] = []
        for name in reserved:
            st = leases.get(name)
            if st is None or name in excluded:
                continue
            b = st.booking
            if b is None or b.pool != pool_name or b not in bookings:
                continue
            got = st.preempt_costs.get(pool_name)
            if got is None:
                got = self.costs_on(st, pool_name, params)
            if not got:
                continue
            if b.start >= t + d:
                later.append((b, got[3]))
            elif b.end > t:
                main.append((b, got[3]))
        if main and now > latest:
            latest = now
        end = t + d
        if latest > t:
            end = latest + d
            main += [(b, seconds) for b, seconds in later if b.start < end]
        size = len(index.members) - len(gone) + len(main)
        if size <= focus.NARROW_ABOVE:
            return None
        victim = self._victim_maker(pool_name, now, t, excluded)
        cpu, mem, cost, count = (list(index.cpu), list(index.mem), list(index.cost),
                                 list(index.count))
        grow = nodes - len(cpu)
        for xs in (cpu, mem, cost, count):
            xs += [0] * grow
        for m in gone.values():
            c, mm = m.booking.shape.cpu, m.booking.shape.memory
            for node, k in m.spread:
                cpu[node] -= k * c
                mem[node] -= k * mm
                cost[node] -= m.micro
                count[node] -= 1
        for b, seconds in main:
            c, mm, h = b.shape.cpu, b.shape.memory, to_micro(seconds)
            held = b.nodes or ()
            for node in held:  # one entry per VM
                cpu[node] += c
                mem[node] += mm
            for node in set(held):
                cost[node] += h
                count[node] += 1
        on_node = index.on_node

        def on(chosen: set[int]) -> list[Victim]:
            # the queued ones on the kept nodes, found by one pass over them (the
            # ranking keeps a handful of nodes, once a decision)
            out: dict[str, Victim] = {}
            for b, _ in main:
                if not chosen.isdisjoint(b.nodes or ()):
                    made = victim(b)
                    assert made is not None  # every one passed the same checks
                    out[b.lease] = made
            for node in chosen:
                if node < len(on_node):
                    for name in on_node[node]:
                        if name not in out and name not in gone:
                            made = victim(leases[name].booking)  # type: ignore[arg-type]
                            assert made is not None
                            out[name] = made
            return list(out.values())

        everyone = _Later(size,
                          lambda: self.gather(pool_name, req, now, t, excluded)[0])
        return everyone, end, NodeSums(cpu, mem, cost, count, on)

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
                got = memo[pool_name] = preempt_costs(st.req, params, self.suspension,
                                                      self.pools[pool_name].vm)
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
