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
#: policies that must be shown every candidate of a large pool
_SEE_ALL: set[str] = set()


def register(name: str, sees_all: bool = False) -> Callable[[Policy], Policy]:
    """Register a policy. ``sees_all``: the scheduler must not narrow a large
    pool's candidates to promising nodes first (:mod:`.focus`) — the baselines,
    which mimic systems that look at every node, set it."""

    def add(fn: Policy) -> Policy:
        if name in _POLICIES:
            raise ValueError(f"preemption policy {name!r} registered twice")
        _POLICIES[name] = fn
        if sees_all:
            _SEE_ALL.add(name)
        return fn

    return add


def sees_all(name: str) -> bool:
    """Whether policy ``name`` must be shown every candidate."""
    get(name)
    return name in _SEE_ALL


def get(name: str) -> Policy:
    try:
        return _POLICIES[name]
    except KeyError:
        known = ", ".join(sorted(_POLICIES))
        raise ValueError(f"unknown preemption policy {name!r}; expected one of {known}") from None


def names() -> tuple[str, ...]:
    return tuple(sorted(_POLICIES))
