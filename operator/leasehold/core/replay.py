"""The one driver: a scheduler fed a stream of timed inputs, in time order.

The simulator, the test builders, the operator's recovery and its live loop all
drive the core through :func:`replay`; they differ only in where the inputs and the
time come from. Because the core is deterministic, feeding it the same inputs at the
same times gives the same state, whichever shell does it: a restarted operator that
replays its journal arrives where the one that was killed had been.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from math import inf
from operator import itemgetter
from typing import NamedTuple, Protocol

from .model import Absence, Action, Capacity, Migrate, Request, Resume, Start
from .scheduler import CANCELLED, Scheduler
from .timers import ENDS

# Named tuples, made with tuple.__new__: a simulation makes one per request and per
# step, and a named tuple's own __new__ (or a frozen dataclass's __init__) is a Python
# call that costs more than what the driver does with it
_new = tuple.__new__


class Input(NamedTuple):
    """Something the core is told, at ``time``: a lease submitted, its work finished
    (seen by the shell), its cancellation or its failure (with the reason), a pool's
    capacity, or the shell's absence."""

    time: float
    kind: str  # "submit" | "finished" | "cancel" | "fail" | "capacity" | "absent"
    lease: str  # or the pool, for a capacity change
    request: Request | None = None
    reason: str = CANCELLED
    capacity: Capacity | None = None
    absence: Absence | None = None

    @classmethod
    def submit(cls, request: Request, time: float | None = None) -> Input:
        """``request`` submitted at ``time`` (default: its own submission time)."""
        at = request.submitted if time is None else time
        return _new(cls, (at, "submit", request.name, request, CANCELLED, None, None))

    @classmethod
    def finished(cls, lease: str, time: float) -> Input:
        return _new(cls, (time, "finished", lease, None, CANCELLED, None, None))

    @classmethod
    def cancel(cls, lease: str, time: float, reason: str = CANCELLED) -> Input:
        return _new(cls, (time, "cancel", lease, None, reason, None, None))

    @classmethod
    def fail(cls, lease: str, time: float, reason: str) -> Input:
        return _new(cls, (time, "fail", lease, None, reason, None, None))

    @classmethod
    def capacity_change(cls, change: Capacity, time: float) -> Input:
        """The pool's nodes from ``time`` on."""
        return _new(cls, (time, "capacity", change.pool.name, None, CANCELLED, change, None))

    @classmethod
    def absent(cls, absence: Absence, time: float) -> Input:
        """The shell away from ``time`` until ``absence.until``."""
        return _new(cls, (time, "absent", "", None, CANCELLED, None, absence))


class Step(NamedTuple):
    """One instant the core moved to: its time, the actions it took, and how many
    inputs it had been given by then."""

    time: float
    actions: list[Action]
    fed: int


def submissions(requests: Iterable[Request]) -> list[Input]:
    """Each request submitted at its own submission time."""
    return [_new(Input, (r.submitted, "submit", r.name, r, CANCELLED, None, None))
            for r in requests]


def feed(scheduler: Scheduler, item: Input) -> None:
    """Give the scheduler one input (at its time; :meth:`Scheduler.advance` applies it)."""
    if item.kind == "submit":
        assert item.request is not None
        scheduler.submit(item.request, item.time)
    elif item.kind == "finished":
        scheduler.finished(item.lease, item.time)
    elif item.kind == "cancel":
        scheduler.cancel(item.lease, item.time, item.reason)
    elif item.kind == "fail":
        scheduler.fail(item.lease, item.time, item.reason)
    elif item.kind == "capacity":
        assert item.capacity is not None
        scheduler.capacity(item.capacity, item.time)
    elif item.kind == "absent":
        assert item.absence is not None
        scheduler.absent(item.absence, item.time)
    else:
        raise ValueError(f"unknown input kind {item.kind!r}")


class Background(Protocol):
    """Inputs that go on by themselves, possibly for ever (a volatile pool's nodes
    failing and coming back, drawn by a simulator): merged with the others, but
    never keeping a run going on their own."""

    def next_time(self) -> float | None:
        """When its next input is due (``None``: never)."""

    def pop(self) -> Input:
        """Its next input (due at :meth:`next_time`)."""

    def wanted(self, scheduler: Scheduler) -> bool:
        """Whether its inputs may still change what the scheduler does, once nothing
        else is left (no input, no timer): a lease waits that they may let run."""


def replay(scheduler: Scheduler, inputs: Iterable[Input], until: float = inf,
           background: Background | None = None) -> Iterator[Step]:
    """Drive ``scheduler`` through ``inputs`` merged with its own timers, one instant
    at a time: every input of an instant is given before the core advances to it.

    Inputs are taken in time order; those of one instant keep the order given (the
    sort is stable). The steps end when nothing is left to do, or at ``until``: the
    core is then advanced to exactly ``until`` (a last step, if it moved).

    ``background`` inputs (in time order, after the others of their instant) are
    given while other inputs or timers are left, and after that only while
    :meth:`Background.wanted`: the run ends when nothing but they is left to happen."""
    if background is not None:
        return _replay_with(scheduler, inputs, until, background)
    return _replay(scheduler, inputs, until)


def _replay(scheduler: Scheduler, inputs: Iterable[Input], until: float) -> Iterator[Step]:
    pending = sorted(inputs, key=itemgetter(0))  # by time: C-level, for thousands
    times = [x.time for x in pending]
    i, n = 0, len(pending)
    advance, submit = scheduler.advance, scheduler.submit
    while True:
        t_core = scheduler.next_event_time()  # read each time: a hold changes it
        if i < n:
            t = times[i]
            if t_core is not None and t_core < t:
                t = t_core
        elif t_core is not None:
            t = t_core
        else:
            break
        if t > until:
            break
        while i < n and times[i] == t:
            item = pending[i]
            request = item.request
            if request is not None:  # a submission: most inputs, by far
                submit(request, t)
            else:
                feed(scheduler, item)
            i += 1
        yield _new(Step, (t, advance(t), i))
    if until != inf and scheduler.now < until:
        yield Step(until, scheduler.advance(until), i)


def _replay_with(scheduler: Scheduler, inputs: Iterable[Input], until: float,
                 background: Background) -> Iterator[Step]:
    """:func:`_replay` with a background (kept apart: the plain loop is the hot one)."""
    pending = sorted(inputs, key=itemgetter(0))
    i, n = 0, len(pending)
    while True:
        t_core = scheduler.next_event_time()
        t = inf
        if i < n:
            t = pending[i].time
        if t_core is not None and t_core < t:
            t = t_core
        t_bg = background.next_time()
        if t_bg is not None and t_bg <= t and (t < inf or background.wanted(scheduler)):
            t = t_bg
        if t == inf or t > until:
            break
        while i < n and pending[i].time == t:
            feed(scheduler, pending[i])
            i += 1
        while background.next_time() == t:
            feed(scheduler, background.pop())
        yield _new(Step, (t, scheduler.advance(t), i))
    if until != inf and scheduler.now < until:
        yield Step(until, scheduler.advance(until), i)


def run(scheduler: Scheduler, inputs: Iterable[Input], until: float = inf) -> list[Action]:
    """:func:`replay` to the end (or ``until``); every action taken, in order."""
    return [a for step in replay(scheduler, inputs, until) for a in step.actions]


def run_live(scheduler: Scheduler, inputs: Iterable[Input], until: float,
             unmade: Collection[str] = ()) -> tuple[list[Action], list[Input]]:
    """:func:`run` to ``until`` as a live shell may: never into an instant that may
    end a run whose pods are not made. A live shell makes a start's pods once the call
    returns, and a lease whose run began and ended (or was suspended, or lost its
    nodes) inside one call would have run in the core without ever having pods. So
    the call stops just before the first instant with a timer that ends a run begun
    in it, or one of the ``unmade`` runs (begun in an earlier call, their pods not
    made yet: the shell holds the core's clock for them), or with an input that may
    (a submission that may preempt, a capacity change, a report about it). Runs that
    go on past ``until`` do not stop it: a shell behind by less than a run catches up
    in one call. Returns the actions taken and the inputs not given yet (in time
    order), for the next call; calls that carry them on arrive where one :func:`run`
    does."""
    pending = sorted(inputs, key=itemgetter(0))
    actions: list[Action] = []
    begun = set(unmade)  # and the leases whose run began in this call
    if stops(scheduler, pending, begun, until):
        return actions, pending
    fed = 0
    for step in replay(scheduler, pending, until):
        actions += step.actions
        fed = step.fed
        begun.update(a.lease for a in step.actions
                     if isinstance(a, Start | Resume) or (isinstance(a, Migrate) and a.nodes))
        if stops(scheduler, pending, begun, until, fed):
            break
    return actions, pending[fed:]


def stops(scheduler: Scheduler, pending: Sequence[Input], runs: Collection[str],
          until: float, fed: int = 0) -> bool:
    """Whether the scheduler's next instant (up to ``until``) may end one of the
    ``runs``: by a timer of theirs, or an input (``pending[fed:]``, in time order,
    the inputs not given yet)."""
    if not runs:
        return False
    timer = scheduler.next_event_time()
    told = pending[fed].time if fed < len(pending) else None
    t = min(x for x in (timer, told, inf) if x is not None)
    if t > until:
        return False
    if timer == t and not scheduler.lifecycle.timers.due_at(t, ENDS).isdisjoint(runs):
        return True
    if told != t:
        return False
    for i in range(fed, len(pending)):
        if pending[i].time != t:
            break
        if _may_end(pending[i], runs):
            return True
    return False


def _may_end(item: Input, runs: Collection[str]) -> bool:
    """Whether the input may end one of the ``runs``."""
    if item.request is not None:
        return item.request.may_preempt
    return item.kind in ("capacity", "absent") or item.lease in runs
