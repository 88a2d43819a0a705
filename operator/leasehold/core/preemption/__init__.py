"""Preemption: which external leases make room for a local request or reservation.

This is the seam the scheduler calls when a local or advance-reservation request
does not fit (DESIGN §2.4). Candidate-set enumeration and the MOV, MLIP and MOML
policies arrive with the preemption issue; until then every policy behaves as
``nop`` and chooses no set, and the scheduler records that decision and rejects.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Request


@dataclass(frozen=True, slots=True)
class PreemptionContext:
    """What a policy sees: the preemptor, where and when it wants to run, and who is there."""

    preemptor: Request
    pool: str
    start: float
    duration: float
    #: leases whose bookings overlap the preemptor's interval, sorted by name
    overlapping: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Decision:
    """The decision record of DESIGN §8."""

    time: float
    preemptor: str
    policy: str
    candidate_sets: int
    exact: bool
    chosen: tuple[str, ...]
    overhead_seconds: float
    vacate_seconds: float


def decide(ctx: PreemptionContext, policy: str, now: float) -> Decision:
    """Choose a set of leases to preempt for ``ctx.preemptor`` (currently: none)."""
    return Decision(
        time=now, preemptor=ctx.preemptor.name, policy=policy, candidate_sets=0,
        exact=True, chosen=(), overhead_seconds=0.0, vacate_seconds=0.0,
    )
