"""002 §IV's replica count: how many replicas keep at least one alive.

If a volatile node stays up 1/λ on average and is back after 1/μ, it is down a
share λ/(λ+μ) of the time, and k independent replicas are all down with probability
(λ/(λ+μ))^k. At least one is up with confidence α when that is at most 1 − α:

    k = log(1 − α) / (log λ − log(λ + μ))

(2.39 for 1/λ = 5 min, 1/μ = 2 min, α = 0.95). In mean times, λ/(λ+μ) is
recovery / (mean_up + recovery), which also reads the limits: a node that never
fails, or comes back at once, needs no second replica.
"""

from __future__ import annotations

import math

#: k is rounded up only past this much over a whole number: 2.0000000000000004,
#: a formula's rounding, is 2 replicas, not 3
_ROUNDING = 1e-9


def replica_count(mean_up: float, recovery: float, alpha: float) -> float:
    """k of 002 §IV, unrounded, for nodes up ``mean_up`` seconds on average (1/λ; may
    be infinite), down ``recovery`` seconds on average (1/μ), and confidence
    ``alpha`` that one replica is up."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha (confidence that one replica is up) must be in (0, 1),"
                         f" got {alpha:g}")
    if not mean_up > 0 or not recovery >= 0:
        raise ValueError(f"need mean_up > 0 and recovery >= 0, got {mean_up:g}, {recovery:g}")
    if math.isinf(mean_up) or recovery == 0:
        return 0.0
    down = recovery / (mean_up + recovery)  # λ / (λ + μ)
    if down >= 1.0:  # nodes down all the time, to a float's precision: no k will do
        return math.inf
    return math.log(1.0 - alpha) / math.log(down)


def replicas_needed(mean_up: float, recovery: float, alpha: float) -> int:
    """:func:`replica_count` rounded up, at least 1 (:class:`OverflowError` when it is
    infinite)."""
    k = replica_count(mean_up, recovery, alpha)
    return max(1, math.ceil(k - _ROUNDING))
