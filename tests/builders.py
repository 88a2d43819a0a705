"""Small builders shared by the tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import inf

from leasehold.core.model import (
    Action,
    Backfilling,
    Capacity,
    Deploy,
    LeaseType,
    Origin,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
    Start,
    extended_of,
)
from leasehold.core.replay import Input, replay, submissions
from leasehold.core.replay import run as run_inputs
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots import Booking, PackedPool
from leasehold.core.view import LeaseView

BES = LeaseType.BEST_EFFORT_SUSPENDABLE
BEC = LeaseType.BEST_EFFORT_CANCELLABLE
DM = LeaseType.DEADLINE_MIGRATABLE
DNP = LeaseType.DEADLINE_NON_PREEMPTABLE
AR = LeaseType.ADVANCE_RESERVATION

Check = Callable[[Scheduler, float, list[Action]], None]


def req(
    name: str, vms: int = 1, duration: float = 10, at: float = 0, *, type: LeaseType = BES,
    cpu: int = 1000, memory: int = 512, runtime: float | None = None,
    deadline: float | None = None, start: float | None = None, ready: float | None = None,
    origin: Origin = Origin.EXTERNAL, pool: str | None = None,
    extended: dict[str, int] | None = None,
) -> Request:
    return Request(
        name=name, type=type, vms=vms, shape=Shape(cpu, memory, extended_of(extended or {})),
        duration=duration,
        submitted=at, origin=origin, ready=ready, deadline=deadline, start=start,
        runtime=runtime, pool=pool,
    )


def exclusive(nodes: int = 4, name: str = "p") -> PoolSpec:
    return PoolSpec(name, nodes, 1000, 1024, exclusive=True)


def shared(nodes: int = 2, cpu: int = 4000, memory: int = 8192, name: str = "p") -> PoolSpec:
    return PoolSpec(name, nodes, cpu, memory)


def config(
    backfilling: str = "conservative", sbb: bool = False, policy: str = "moml",
    alpha: str | float = "median",
) -> SchedulerConfig:
    return SchedulerConfig(policy=policy, alpha=alpha, backfilling=Backfilling(backfilling),
                           suspend_before_blocking=sbb)


def run(pools: list[PoolSpec], requests: Sequence[Request], cfg: SchedulerConfig | None = None,
        check: Check | None = None) -> Scheduler:
    """Drive a scheduler to the end; ``check(sched, now, actions)`` runs after every step."""
    return drive(pools, requests, cfg, check=check)


def spans(sched: Scheduler) -> dict[str, tuple[float | None, float | None, str]]:
    """name -> (first start, end, phase)."""
    return {st.name: (st.first_start, st.end, st.phase.value) for st in sched.leases()}


def lease(sched: Scheduler, name: str) -> LeaseView:
    view = sched.lease(name)
    assert view is not None, f"no lease {name!r}"
    return view


def phase(sched: Scheduler, name: str) -> str:
    return lease(sched, name).phase.value


def down(pool: PoolSpec, *nodes: int) -> Capacity:
    """``pool`` with ``nodes`` (indexes) down: a capacity change's new state."""
    return Capacity(pool, frozenset(nodes))


def drive_changes(pools: list[PoolSpec], requests: Sequence[Request],
                  changes: Sequence[tuple[float, Capacity]]
                  ) -> tuple[Scheduler, list[Action]]:
    """The requests submitted and the capacity ``changes`` (time, new state) given,
    run to the end: the scheduler and every action."""
    sched = Scheduler(pools, config())
    inputs = [*submissions(requests), *(Input.capacity_change(c, t) for t, c in changes)]
    return sched, run_inputs(sched, inputs)


def drive(pools: list[PoolSpec], requests: Sequence[Request], cfg: SchedulerConfig | None = None,
          inputs: Sequence[tuple[float, str, str]] = (), check: Check | None = None
          ) -> Scheduler:
    """Like :func:`run`, plus shell reports: ``(time, "cancel" | "finished", lease)``;
    submissions come before the reports of their instant."""
    sched = Scheduler(pools, cfg or config())
    reports = [Input.cancel(name, t) if kind == "cancel" else Input.finished(name, t)
               for t, kind, name in inputs]
    for step in replay(sched, [*map(Input.submit, requests), *reports]):
        if check is not None:
            check(sched, step.time, step.actions)
    return sched


def packed_copy(spec: PoolSpec, bookings: Sequence[Booking]) -> PackedPool:
    """A fresh packed table holding copies of ``bookings`` on their nodes: what any
    history that ends with them must answer like."""
    fresh = PackedPool(spec)
    for b in bookings:
        fresh.book(Booking(b.lease, b.pool, b.start, b.end, b.vms, b.shape, b.nodes,
                           b.segments))
    return fresh


def deploys(acts: Sequence[Action], name: str) -> list[tuple[float, float]]:
    """The image transfers the shell was told of for lease ``name``, (start, until)."""
    return [(a.start, a.until) for a in acts if isinstance(a, Deploy) and a.lease == name]


def starts(acts: Sequence[Action]) -> dict[str, float]:
    """When each lease's VMs were started (its last Start)."""
    return {a.lease: a.time for a in acts if isinstance(a, Start)}


# ---- a packed pool's node choice, by brute force ---------------------------------------
def packed_room(spec: PoolSpec, held: Sequence[Booking], node: int, shape: Shape, x: int) -> int:
    """VMs of ``shape`` that fit on ``node`` (of its own size) at integer instant ``x``."""
    size = spec.sizes()[node]
    cpu = size.cpu - sum(b.shape.cpu * (b.nodes or ()).count(node)
                         for b in held if b.start <= x < b.end)
    mem = size.memory - sum(b.shape.memory * (b.nodes or ()).count(node)
                            for b in held if b.start <= x < b.end)
    return max(0, min(cpu // shape.cpu, mem // shape.memory))


def packed_rule(spec: PoolSpec, held: Sequence[Booking], vms: int, shape: Shape, start: int,
                end: int) -> tuple[int, ...]:
    """A packed pool's placement rule written out over every integer instant: the nodes
    with room throughout ``[start, end)``, those that have held a VM only since the
    latest instant first, then by index; each filled before the next."""
    first = min([b.start for b in held], default=start)
    ranked = []
    for node in range(spec.nodes):
        room = min(packed_room(spec, held, node, shape, x) for x in range(start, end))
        if room == 0:
            continue
        since = -inf
        for x in range(start - 1, first - 1, -1):
            if packed_room(spec, held, node, shape, x) == 0:
                since = x + 1
                break
        ranked.append((-since, node, room))
    picked: list[int] = []
    for _, node, room in sorted(ranked):
        picked.extend([node] * min(room, vms - len(picked)))
    return tuple(picked)
