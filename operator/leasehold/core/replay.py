"""The one driver: a scheduler fed a stream of timed inputs, in time order.

The simulator, the test builders, the operator's recovery and its live loop all
drive the core through :func:`replay`; they differ only in where the inputs and the
time come from. Because the core is deterministic, feeding it the same inputs at the
same times gives the same state, whichever shell does it: a restarted operator that
replays its journal arrives where the one that was killed had been.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from math import inf

from .model import Action, Request
from .scheduler import Scheduler


@dataclass(frozen=True, slots=True)
class Input:
    """Something the core is told, at ``time``: a lease submitted, its work finished
    (seen by the shell), or its cancellation (with the reason)."""

    time: float
    kind: str  # "submit" | "finished" | "cancel"
    lease: str
    request: Request | None = None
    reason: str = "cancelled by its owner"

    @staticmethod
    def submit(request: Request, time: float | None = None) -> Input:
        """``request`` submitted at ``time`` (default: its own submission time)."""
        return Input(request.submitted if time is None else time, "submit", request.name,
                     request)

    @staticmethod
    def finished(lease: str, time: float) -> Input:
        return Input(time, "finished", lease)

    @staticmethod
    def cancel(lease: str, time: float, reason: str = "cancelled by its owner") -> Input:
        return Input(time, "cancel", lease, reason=reason)


@dataclass(frozen=True, slots=True)
class Step:
    """One instant the core moved to: its time, the actions it took, and how many
    inputs it had been given by then."""

    time: float
    actions: list[Action]
    fed: int


def feed(scheduler: Scheduler, item: Input) -> None:
    """Give the scheduler one input (at its time; :meth:`Scheduler.advance` applies it)."""
    if item.kind == "submit":
        assert item.request is not None
        scheduler.submit(item.request, item.time)
    elif item.kind == "finished":
        scheduler.finished(item.lease, item.time)
    elif item.kind == "cancel":
        scheduler.cancel(item.lease, item.time, item.reason)
    else:
        raise ValueError(f"unknown input kind {item.kind!r}")


def replay(scheduler: Scheduler, inputs: Iterable[Input], until: float = inf
           ) -> Iterator[Step]:
    """Drive ``scheduler`` through ``inputs`` merged with its own timers, one instant
    at a time: every input of an instant is given before the core advances to it.

    Inputs are taken in time order; those of one instant keep the order given (the
    sort is stable). The steps end when nothing is left to do, or at ``until``: the
    core is then advanced to exactly ``until`` (a last step, if it moved)."""
    pending = sorted(inputs, key=lambda x: x.time)
    i, n = 0, len(pending)
    while True:
        t_core = scheduler.next_event_time()
        if i < n:
            t = pending[i].time
            if t_core is not None and t_core < t:
                t = t_core
        elif t_core is not None:
            t = t_core
        else:
            break
        if t > until:
            break
        while i < n and pending[i].time == t:
            feed(scheduler, pending[i])
            i += 1
        yield Step(t, scheduler.advance(t), i)
    if until != inf and scheduler.now < until:
        yield Step(until, scheduler.advance(until), i)


def run(scheduler: Scheduler, inputs: Iterable[Input], until: float = inf) -> list[Action]:
    """:func:`replay` to the end (or ``until``); every action taken, in order."""
    return [a for step in replay(scheduler, inputs, until) for a in step.actions]
