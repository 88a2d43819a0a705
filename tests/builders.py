"""Small builders shared by the tests."""

from __future__ import annotations

from leasehold.core.model import (
    Backfilling,
    LeaseType,
    Origin,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
)
from leasehold.core.scheduler import Scheduler
from leasehold.core.state import LeaseState
from leasehold_emulator.sim.engine import simulate

BES = LeaseType.BEST_EFFORT_SUSPENDABLE
BEC = LeaseType.BEST_EFFORT_CANCELLABLE
DM = LeaseType.DEADLINE_MIGRATABLE
DNP = LeaseType.DEADLINE_NON_PREEMPTABLE
AR = LeaseType.ADVANCE_RESERVATION


def req(
    name: str, vms: int = 1, duration: float = 10, at: float = 0, *, type: LeaseType = BES,
    cpu: int = 1000, memory: int = 512, runtime: float | None = None,
    deadline: float | None = None, start: float | None = None, ready: float | None = None,
    origin: Origin = Origin.EXTERNAL, pool: str | None = None,
) -> Request:
    return Request(
        name=name, type=type, vms=vms, shape=Shape(cpu, memory), duration=duration,
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


def run(pools: list[PoolSpec], requests: list[Request], cfg: SchedulerConfig | None = None,
        check=None) -> Scheduler:
    """Drive a scheduler to the end; ``check(sched, now, actions)`` runs after every step."""
    return simulate(pools, cfg or config(), requests, on_step=check).scheduler


def spans(sched: Scheduler) -> dict[str, tuple[float | None, float | None, str]]:
    """name -> (first start, end, phase)."""
    out = {}
    for name, st in sched.leases.items():
        out[name] = (st.first_start, st.end, st.phase.value)
    return out


def lease(sched: Scheduler, name: str) -> LeaseState:
    return sched.leases[name]


def drive(pools: list[PoolSpec], requests: list[Request], cfg: SchedulerConfig | None = None,
          inputs: list[tuple[float, str, str]] = (), check=None) -> Scheduler:
    """Like :func:`run`, plus shell reports: ``(time, "cancel" | "finished", lease)``."""
    sched = Scheduler(pools, cfg or config())
    events = sorted([(r.submitted, 0, "submit", r) for r in requests]
                    + [(t, 1, kind, name) for t, kind, name in inputs], key=lambda e: e[:2])
    i = 0
    while True:
        t_core = sched.next_event_time()
        t_in = events[i][0] if i < len(events) else None
        if t_core is None and t_in is None:
            return sched
        t = min(x for x in (t_core, t_in) if x is not None)
        while i < len(events) and events[i][0] == t:
            _, _, kind, arg = events[i]
            if kind == "submit":
                sched.submit(arg, t)
            elif kind == "cancel":
                sched.cancel(arg, t)
            else:
                sched.finished(arg, t)
            i += 1
        actions = sched.advance(t)
        if check is not None:
            check(sched, t, actions)
