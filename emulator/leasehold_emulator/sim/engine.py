"""The simulator's engine: the core driven in virtual time by :func:`leasehold.core.replay.replay`.

Arrivals and the core's own timers are merged in time order; every arrival of one
instant is submitted before the core advances, so the core plans them together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from leasehold.core.model import (
    Action,
    Cancel,
    Capacity,
    Complete,
    Fail,
    PoolSpec,
    Reject,
    Request,
    SchedulerConfig,
)
from leasehold.core.replay import Input, replay, submissions
from leasehold.core.scheduler import Scheduler

from .volatile import Failures, PoolLog


@dataclass(slots=True)
class SimResult:
    scheduler: Scheduler
    actions: list[Action] = field(default_factory=list)
    events: int = 0
    #: per volatile pool, its nodes' failures and recoveries (none without one)
    failures: list[PoolLog] = field(default_factory=list)
    #: the time of the last step (when the run ended)
    end: float = 0.0
    #: when the guard stopped the volatile pools' failures (``None``: it never had to)
    failures_stopped: float | None = None
    #: why they stopped (the guard, or failures with no lease ending)
    failures_stopped_because: str = ""


#: the guard on failures, in times the work submitted (:func:`guard`)
GUARD = 100
#: node failures with no lease ending after which they stop (:func:`simulate`): about
#: 5 CPU-s of a run that would not end otherwise
STALL = 20_000
#: the actions that end a lease
_ENDS = (Complete, Cancel, Reject, Fail)


def guard(requests: Sequence[Request], capacity: Sequence[tuple[float, Capacity]] = ()
          ) -> float:
    """When a volatile pool's failures stop (every failed node back, for good): after
    the last request may start and the last capacity change, :data:`GUARD` times the
    work of every request. Under a law that leaves too few nodes up, for too short,
    for some lease to get through its resume and an epoch, it would never end; a run
    whose leases can end ends long before."""
    last = max([0.0, *(r.earliest for r in requests), *(t for t, _ in capacity)])
    return last + GUARD * sum(r.duration for r in requests)


def simulate(
    pools: Sequence[PoolSpec],
    config: SchedulerConfig,
    requests: Sequence[Request],
    *,
    keep_actions: bool = True,
    progress: Callable[[int, int], None] | None = None,
    on_step: Callable[[Scheduler, float, list[Action]], None] | None = None,
    capacity: Sequence[tuple[float, Capacity]] = (),
    seed: int = 0,
    stall: int = STALL,
) -> SimResult:
    """Run ``requests`` (any order; sorted by submission, stable) to completion.

    ``progress(submitted, total)`` and ``on_step(scheduler, now, actions)`` are
    called after every step (for progress bars and for invariant checks).
    ``capacity``: what the cluster went through, ``(time, change)`` (a scenario's
    ``cluster.capacity``); changes come after the submissions of their instant.
    The nodes of a volatile pool fail and come back by its law, drawn from ``seed``
    (:class:`.volatile.Failures`), until every lease has ended, or until the guard
    (:func:`guard`), or until ``stall`` node failures have come with no lease ending.
    """
    sched = Scheduler(pools, config)
    result = SimResult(sched)
    failures = Failures(pools, seed, capacity, guard(requests, capacity))
    volatile = bool(failures.logs)  # read once: the loop below runs every step
    if volatile:
        result.failures = failures.logs
        capacity = [(t, c) for t, c in capacity if not failures.takes(c.pool.name)]
    n = len(requests) + len(capacity)
    inputs = submissions(requests)
    if capacity:
        inputs += [Input.capacity_change(c, t) for t, c in capacity]
    # failures counted at the last lease's end: when ``stall`` more come before the next
    # one ends, the law is one under which the leases left make no headway (the time
    # guard may lie billions of failures away), and the failures stop now
    ended_at = 0
    for step in replay(sched, inputs, background=failures if volatile else None):
        result.events += 1
        if volatile and failures.stopped is None:
            if any(isinstance(a, _ENDS) for a in step.actions):
                ended_at = failures.count
            elif failures.count - ended_at >= stall:
                failures.stop(step.time, f"{stall} node failures came and no lease ended")
        result.end = step.time
        if keep_actions:
            result.actions.extend(step.actions)
        if progress is not None:
            progress(step.fed, n)
        if on_step is not None:
            on_step(sched, step.time, step.actions)
    # the guard is drawn ahead, as any failure: it stopped them only in a run that
    # reached it (one that ended before would have seen none of the failures after)
    stopped = failures.stopped
    result.failures_stopped = stopped if stopped is not None and stopped < result.end else None
    result.failures_stopped_because = failures.because
    return result
