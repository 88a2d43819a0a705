"""A minimal discrete-event engine: drives the core in virtual time.

Arrivals and the core's own timers are merged in time order; every arrival of one
instant is submitted before the core advances, so the core plans them together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from leasehold.core.model import Action, PoolSpec, Request, SchedulerConfig
from leasehold.core.scheduler import Scheduler


@dataclass(slots=True)
class SimResult:
    scheduler: Scheduler
    actions: list[Action] = field(default_factory=list)
    events: int = 0


def simulate(
    pools: Sequence[PoolSpec],
    config: SchedulerConfig,
    requests: Sequence[Request],
    *,
    keep_actions: bool = True,
    progress: Callable[[int, int], None] | None = None,
    on_step: Callable[[Scheduler, float, list[Action]], None] | None = None,
) -> SimResult:
    """Run ``requests`` (any order; sorted by submission, stable) to completion.

    ``progress(submitted, total)`` and ``on_step(scheduler, now, actions)`` are
    called after every step (for progress bars and for invariant checks).
    """
    arrivals = sorted(requests, key=lambda r: r.submitted)
    sched = Scheduler(pools, config)
    result = SimResult(sched)
    n, i = len(arrivals), 0
    while True:
        t_core = sched.next_event_time()
        if i < n:
            t = arrivals[i].submitted
            if t_core is not None and t_core < t:
                t = t_core
        elif t_core is not None:
            t = t_core
        else:
            break
        while i < n and arrivals[i].submitted == t:
            sched.submit(arrivals[i], t)
            i += 1
        actions = sched.advance(t)
        result.events += 1
        if keep_actions:
            result.actions.extend(actions)
        if progress is not None:
            progress(i, n)
        if on_step is not None:
            on_step(sched, t, actions)
    return result
