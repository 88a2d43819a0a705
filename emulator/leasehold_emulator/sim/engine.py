"""The simulator's engine: the core driven in virtual time by :func:`leasehold.core.replay.replay`.

Arrivals and the core's own timers are merged in time order; every arrival of one
instant is submitted before the core advances, so the core plans them together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from leasehold.core.model import Action, Capacity, PoolSpec, Request, SchedulerConfig
from leasehold.core.replay import Input, replay, submissions
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
    capacity: Sequence[tuple[float, Capacity]] = (),
) -> SimResult:
    """Run ``requests`` (any order; sorted by submission, stable) to completion.

    ``progress(submitted, total)`` and ``on_step(scheduler, now, actions)`` are
    called after every step (for progress bars and for invariant checks).
    ``capacity``: what the cluster went through, ``(time, change)`` (a scenario's
    ``cluster.capacity``); changes come after the submissions of their instant.
    """
    sched = Scheduler(pools, config)
    result = SimResult(sched)
    n = len(requests) + len(capacity)
    inputs = submissions(requests)
    if capacity:
        inputs += [Input.capacity_change(c, t) for t, c in capacity]
    for step in replay(sched, inputs):
        result.events += 1
        if keep_actions:
            result.actions.extend(step.actions)
        if progress is not None:
            progress(step.fed, n)
        if on_step is not None:
            on_step(sched, step.time, step.actions)
    return result
