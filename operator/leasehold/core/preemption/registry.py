"""Preemption policies as small registered strategies with one signature.

A policy gets the preemption problem of every pool the preemptor may use
(:class:`~.instance.Instance`, candidates sorted by name) and the scheduler
configuration, and returns a :class:`Choice`: which instance, which candidates (by
index), how many candidate sets it weighed and whether that count is exact. It never
touches the slot table: the scheduler enacts the choice.

Like Kueue's preemption strategies and Volcano's plugins, policies register
themselves by name when their module is imported (:mod:`leasehold.core.preemption`
imports them all); the registry is filled once at import and never changes after.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model import SchedulerConfig
from .instance import Instance


@dataclass(frozen=True, slots=True)
class Choice:
    #: index of the chosen instance (pool); -1 with no members
    instance: int
    #: chosen candidates, ascending indices into that instance's candidates
    members: tuple[int, ...]
    #: candidate sets the policy weighed (sampled sets when not exact)
    candidate_sets: int
    exact: bool


NONE = Choice(-1, (), 0, True)

Policy = Callable[[Sequence[Instance], SchedulerConfig], Choice]

_POLICIES: dict[str, Policy] = {}


def register(name: str) -> Callable[[Policy], Policy]:
    def add(fn: Policy) -> Policy:
        if name in _POLICIES:
            raise ValueError(f"preemption policy {name!r} registered twice")
        _POLICIES[name] = fn
        return fn

    return add


def get(name: str) -> Policy:
    try:
        return _POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(_POLICIES))
        raise ValueError(f"unknown preemption policy {name!r}; expected one of {known}") from None


def names() -> tuple[str, ...]:
    return tuple(sorted(_POLICIES))
