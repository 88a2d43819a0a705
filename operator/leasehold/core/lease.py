"""One lease's state inside the core."""

from __future__ import annotations

from dataclasses import dataclass, field

from .model import LeaseType, Phase, PoolSpec, Request
from .slots import Booking

#: what preempting a lease means on one pool: (its action when running, seconds
#: that takes to vacate, its overhead, its overhead when queued), or ``()`` when it
#: is never preemptable
PreemptCosts = tuple[()] | tuple[str, float, float, float]


def pace(req: Request, pool: PoolSpec) -> float:
    """The work a second of ``req``'s run on ``pool`` does: the pool's speed, over
    ``1 + slowdown`` on a pool with a VM model (004 §4.4: a VM runs 5% slower). A
    request's ``duration`` and ``runtime`` (and a lease's ``remaining`` and
    ``actual_left``) are work, seconds at speed 1.0; on a pool of speed ``s`` they
    take ``work / s`` seconds (times ``1 + slowdown`` in VMs). An advance reservation
    is a window of wall time (its start and end are what its user asked for): its
    pace is 1.0 on any pool. docs/semantics.md, "Pool speed" and "VMs"."""
    if req.type is LeaseType.ADVANCE_RESERVATION:
        return 1.0
    vm = pool.vm
    if vm is None or not vm.slowdown:
        return pool.speed
    return pool.speed / (1 + vm.slowdown)


def span(req: Request, pool: PoolSpec, work: float) -> float:
    """How long a booking that starts ``req``'s VMs on ``pool`` afresh lasts to do
    ``work``: the run at its :func:`pace`, after the VMs' boot and before their
    shutdown (:func:`boot_lead`, :func:`shutdown_tail`; none without a VM model)."""
    run = work / pace(req, pool)
    vm = pool.vm
    if vm is None:
        return run
    return vm.boot + run + vm.shutdown


def boot_lead(req: Request, pool: PoolSpec) -> float:
    """Seconds from the beginning of a booking that starts or resumes ``req``'s VMs on
    ``pool`` until they run: their boot (the pool's ``vm.boot``; 0 without a VM
    model). Whatever must precede a VM (its image on its node, DESIGN §2.6) is there
    by the booking's beginning, this long before the run: an advance reservation's
    booking begins ``boot_lead`` before its ``start``. docs/semantics.md, "VMs"."""
    vm = pool.vm
    return 0.0 if vm is None else vm.boot


def shutdown_tail(req: Request, pool: PoolSpec) -> float:
    """Seconds ``req``'s VMs on ``pool`` hold their nodes after they end (a completion,
    a stop, a suspension): their shutdown (the pool's ``vm.shutdown``; 0 without)."""
    vm = pool.vm
    return 0.0 if vm is None else vm.shutdown


# eq=False: leases are compared by identity (queue membership must be cheap)
@dataclass(slots=True, eq=False)
class LeaseState:
    req: Request
    seq: int  # submission order: the queue order and the last tie-breaker
    name: str = ""
    vms: int = 0  # copied from the request: the EASY scan reads it for every queued lease
    #: the request's earliest start, copied (a property of the request: a call each
    #: time the EASY scan asks whether a queued lease may start now)
    earliest: float = 0.0
    phase: Phase = Phase.PENDING
    pool: str | None = None
    #: the pool a dispatch strategy sent it to (an external lease that named none):
    #: it is planned there only, as if it had named it (DESIGN §2.5)
    dispatched: str | None = None
    #: the slot it holds: where it runs, or is reserved to run
    booking: Booking | None = None
    #: the nodes a migration is leaving, held until its VMs are written out there
    departure: Booking | None = None
    #: planned work still owed (plans use this, never the actual runtime); work is
    #: seconds at speed 1.0, run seconds on a pool are work over its :func:`pace`
    remaining: float = 0.0
    #: real work still to go (simulations: ``runtime``); never planned with
    actual_left: float = 0.0
    #: when the current run segment began (after any resume overhead)
    running_since: float | None = None
    #: the work a run second does where it is booked: :func:`pace` of its booking's
    #: pool, set with the booking (not kept in snapshots: restored from the pool)
    pace: float = 1.0
    #: the next start is a resume of suspended VMs (a resume overhead comes first)
    resuming: bool = False
    #: run seconds actually executed so far, wall time on its nodes (utilization
    #: counts these; the work they did is each segment times its pool's pace)
    ran: float = 0.0
    first_start: float | None = None
    end: float | None = None
    nodes: tuple[str, ...] = ()
    #: the next start's overhead when it is not a plain resume (a migration landing)
    landing: float | None = None
    preemptions: int = 0
    #: the lease that preempted it last (for reasons and events)
    preempted_by: str | None = None
    suspensions: int = 0
    migrations: int = 0
    #: times it was cancelled and re-queued to start over (no suspension, 004
    #: NOVM-NOSR), and the work those runs had done, lost (seconds at speed 1.0)
    requeues: int = 0
    lost_work: float = 0.0
    #: times nodes it held went down under it (:meth:`Lifecycle.lose`), and the work
    #: those losses cost it (seconds at speed 1.0: what it had done past what it went
    #: back to)
    losses: int = 0
    lost_to_failures: float = 0.0
    overhead: float = 0.0
    #: a lease with replicas that lost some copies and runs on: the booked VMs
    #: (:func:`~.model.copy_of` numbers) its booking still holds, in its order;
    #: ``None``: all of them. ``replicas_lost``: copies lost so far, not replaced
    copies: tuple[int, ...] | None = None
    replicas_lost: int = 0
    #: the work saved when its VMs were last written out (a suspension or a
    #: migration; on a volatile pool, also every epoch boundary of its run, computed
    #: when its nodes are lost): (planned remaining, actual remaining), as work. A
    #: lease whose nodes are lost goes back to it; ``None``: nothing saved, it starts over
    checkpoint: tuple[float, float] | None = None
    reason: str | None = None
    #: bumped whenever the lease's timers change; stale timers are skipped
    version: int = 0
    #: per pool: what preempting it means there. It depends only on the request and
    #: the pool's parameters, and a decision on a large pool asks for thousands:
    #: computed once
    preempt_costs: dict[str, PreemptCosts] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.name = self.req.name
        self.vms = self.req.vms
        self.earliest = self.req.earliest

    def slots(self) -> tuple[int, ...]:
        """The booked VM (:func:`~.model.copy_of` number) at each position of its
        booking's nodes."""
        n = self.booking.vms if self.booking is not None else self.req.vms
        if self.copies is not None and len(self.copies) == n:
            return self.copies
        return tuple(range(n))

    @property
    def home(self) -> str | None:
        """The one pool it may use: the one it names, or the one it was sent to."""
        return self.req.pool if self.req.pool is not None else self.dispatched
