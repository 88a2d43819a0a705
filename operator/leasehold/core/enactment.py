"""Preempting for a local request or an advance reservation, and enacting the
choice (DESIGN §2.4; 000 §2.1, §5, §6).

When a preemptor does not fit at ``t`` (its ready time, or its start), the preemptor

1. gathers the preemptable leases of every pool it may use (:mod:`.victims`);
2. builds one :class:`~.preemption.instance.Instance` per pool, over
   ``[t, t + d + Δ)`` with ``Δ`` the longest vacate delay among them, and asks the
   configured policy (:mod:`.preemption`);
3. holds tentative slots for the chosen deadline-bound victims, jointly, in a trial
   that is then discarded (:class:`~.slots.Statement`); if one has no slot any
   more, it is not preemptable after all, and the decision is taken again without it;
4. enacts: victims are cancelled, suspended, migrated or re-planned, with their
   overheads as segments of their bookings; the preemptor is booked from
   ``t + Δ(C)``, when the last victim has vacated — the delay the decision records.

If the chosen victims would vacate later than capacity frees up by itself, nobody is
preempted and the preemptor is booked at that earlier time: waiting is then no slower.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from math import inf

from .lease import LeaseState, boot_lead, shutdown_tail, span
from .lifecycle import Lifecycle
from .model import LeaseType, PoolSpec, SchedulerConfig, preemption_policy
from .placement import Fit, Placement
from .preemption import Decision, decide
from .preemption import instance as problem
from .preemption.instance import Victim
from .slots import Booking, SlotTable
from .victims import Slot, Victims, action_costs


@dataclass(slots=True)
class Outcome:
    """What a preemption attempt did."""

    decision: Decision
    #: the preemptor is booked (preempting, or at an earlier slot found on the way)
    placed: bool
    #: victims whose reservation was given up and that must be placed again by the
    #: planner, in the order they were preempted
    replanned: list[LeaseState] = field(default_factory=list)


class Preemptor:
    def __init__(self, config: SchedulerConfig, slots: SlotTable, pools: Mapping[str, PoolSpec],
                 lifecycle: Lifecycle, placement: Placement, victims: Victims) -> None:
        self.config = config
        self.policy = preemption_policy(config.policy)
        self.slots = slots
        self.pools = pools
        self.lifecycle = lifecycle
        self.placement = placement
        self.victims = victims
        #: every decision taken, in order (DESIGN §8)
        self.decisions: list[Decision] = []

    def preempt(self, st: LeaseState, now: float, t: float) -> Outcome:
        """Try to place ``st`` at ``t`` by preempting; book it if that works. The
        decision is recorded either way."""
        outcome = self._preempt(st, now, t)
        self.decisions.append(outcome.decision)
        return outcome

    def _preempt(self, st: LeaseState, now: float, t: float) -> Outcome:
        req = st.req
        narrow = not self.policy.sees_all
        excluded: set[str] = set()
        # where its work over the pool's speed cannot end by its deadline even if it
        # started at t, no preemption can help it: those pools are not asked
        deadline = req.deadline if req.deadline is not None else inf
        # where the preemptor's booking begins on each pool: an advance reservation's
        # VMs boot before its start and shut down after its end (Placement.best_fit,
        # anchored); too late to boot there, no preemption helps either; nor where its
        # image cannot be on its nodes when its booking begins (DESIGN §2.6)
        anchored = req.type == LeaseType.ADVANCE_RESERVATION
        begins: dict[str, float] = {}
        for name in self.placement.candidate_pools(st):
            if not anchored:
                if t <= deadline - self.placement.length(st, name):
                    begins[name] = t
                continue
            spec = self.pools[name]
            at = t - boot_lead(req, spec)
            if now <= at <= deadline + shutdown_tail(req, spec) - self.placement.length(
                    st, name):
                begins[name] = at
        pools = [name for name, at in begins.items() if self.placement.image_by(st, name, at)]
        while True:
            instances, windows = [], []
            for name in pools:
                # a narrowed build ranks the nodes on sums the index keeps
                victims: Sequence[Victim]
                sums = None
                tp = begins[name]
                if narrow:
                    victims, end, sums = self.victims.gather_summed(name, req, now, tp, excluded)
                else:
                    victims, end = self.victims.gather(name, req, now, tp, excluded)
                instances.append(problem.build(
                    self.slots.pools[name], req.shape, req.vms, tp, end, victims, now, narrow,
                    sums))
                windows.append(end)
            choice = decide(self.policy, instances, self.config)
            record = Decision(
                time=now, preemptor=req.name, policy=self.config.policy,
                candidate_sets=choice.candidate_sets, exact=choice.exact, chosen=(),
                overhead_seconds=0.0, vacate_seconds=0.0,
            )
            if not choice.members:
                return Outcome(record, False)
            inst = instances[choice.instance]
            t = begins[inst.pool]
            chosen = [inst.candidates[i].victim for i in choice.members]
            start = max(t, max(v.vacate for v in chosen))
            if start > t:
                sooner: Fit | None
                if anchored:  # on this pool, whose boot lead t has
                    length = self.placement.length(st, inst.pool)
                    found = self.slots.pools[inst.pool].fit(req.vms, req.shape, length, t,
                                                            start)
                    sooner = None if found is None else (inst.pool, found, length)
                else:
                    sooner = self.placement.best_fit(st, t, start)
                if sooner is not None:
                    self.lifecycle.admit(st, now)
                    self.lifecycle.book(st, *sooner, now)
                    return Outcome(replace(record, vacate_seconds=sooner[1] - t), True)
            slots, failed = self._hold_slots(chosen, now, inst.pool, windows[choice.instance])
            if failed is not None:
                excluded.add(failed)
                continue
            replanned = self._enact(st, now, t, inst.pool, chosen, slots)
            return Outcome(replace(
                record, chosen=tuple(v.name for v in chosen),
                overhead_seconds=sum(v.overhead for v in chosen), vacate_seconds=start - t,
            ), True, replanned)

    def _hold_slots(
        self, chosen: list[Victim], now: float, pool_name: str, window_end: float
    ) -> tuple[dict[str, Slot], str | None]:
        """Find slots for the chosen deadline-bound victims one after another, each
        holding its slot while the next is sought, in a trial that is discarded.
        Returns the slots, or the first victim left without one."""
        slots: dict[str, Slot] = {}
        leases = self.lifecycle.leases
        with self.slots.statement() as trial:
            for v in chosen:
                st = leases[v.name]
                if st.req.type != LeaseType.DEADLINE_MIGRATABLE:
                    continue
                slot = self.victims.deadline_slot(st, now, pool_name, window_end)
                if slot is None or not self.placement.image_by(st, slot.pool, slot.start):
                    return slots, v.name  # (or its image would come too late there)
                slots[v.name] = slot
                trial.book(Booking(v.name, slot.pool, slot.start, slot.start + slot.length,
                                   st.req.vms, st.req.shape, None, ()))
        return slots, None

    # ---- enactment ------------------------------------------------------------------------
    def _enact(
        self, st: LeaseState, now: float, t: float, pool_name: str,
        chosen: list[Victim], slots: dict[str, Slot],
    ) -> list[LeaseState]:
        req = st.req
        lifecycle = self.lifecycle
        reason = f"preempted by {req.name} (policy {self.config.policy})"
        replanned: list[LeaseState] = []
        for v in chosen:
            victim = lifecycle.leases[v.name]
            victim.preemptions += 1
            victim.preempted_by = req.name
            if v.action == "replan":
                lifecycle.unreserve(victim, now)
                slot = slots.get(v.name)
                if slot is not None:  # deadline-bound: its slot was checked jointly
                    lifecycle.book(victim, slot.pool, slot.start, slot.length, now)
                else:
                    replanned.append(victim)
            elif v.action == "migrate":
                slot = slots[v.name]
                lifecycle.migrate(victim, now, slot.pool, reason, slot.start)
            else:
                self._stop_by(victim, now, t, v, reason)
        start = max(t, max(v.vacate for v in chosen))
        pool = self.slots.pools[pool_name]
        length = span(req, self.pools[pool_name], req.duration)  # as the victims' window
        if pool.fit(req.vms, req.shape, length, start, start) != start:
            raise RuntimeError(  # the instance said it fits: the two models disagree
                f"slot table inconsistent: {req.name} does not fit at t={start} after preemption"
            )
        lifecycle.admit(st, now)
        lifecycle.book(st, pool_name, start, length, now)
        return replanned

    def _stop_by(self, st: LeaseState, now: float, t: float, v: Victim, reason: str) -> None:
        """Cancel, re-queue or suspend a running victim so that it vacates at
        ``v.vacate``: now, or later by a timer when there is time before ``t``."""
        suspend = v.action == "suspend"
        assert st.booking is not None
        spec = self.pools[st.booking.pool]
        took = action_costs(st.req, spec.overhead, v.action, spec.vm)[0]
        begin = max(now, t - took)  # as in the gathering, so equal floats compare equal
        if begin > now:
            self.lifecycle.stop_at(st, now, begin, v.vacate, suspend)
        elif suspend:
            self.lifecycle.suspend(st, now, reason, planned=False)
        elif v.action == "requeue":
            self.lifecycle.requeue(st, now, reason.replace("preempted", "re-queued", 1))
        else:
            self.lifecycle.cancel(st, now, reason)
