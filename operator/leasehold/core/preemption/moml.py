"""``moml``: minimum overhead, minimum leases (000 §6.3, Algorithm 1).

α is the median of the overheads of *all* candidate sets (for an even count the mean
of the two middle values, as :func:`statistics.median`), or a configured percentile
("p25": linear interpolation between closest ranks, so "p50" is the median) or a
number of seconds. Among the sets whose overhead is at most α: fewest leases, then
lower overhead, then lease names. The frontier's histogram counts sets per overhead
value, so the median never needs the sets themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from math import floor

from ..model import SchedulerConfig
from .instance import Instance, to_micro
from .mlip import choice
from .registry import NONE, Choice, register
from .sets import Frontier, Option, frontier


def quantile(histogram: Counter[int], q: float) -> float:
    """The ``q`` quantile of the multiset ``histogram`` (value -> count), linear
    interpolation between closest ranks (numpy's default; q=0.5 is the median)."""
    total = sum(histogram.values())
    if total == 0:
        raise ValueError("quantile of no values")
    pos = (total - 1) * q
    lo_rank = floor(pos)
    frac = pos - lo_rank
    lo = hi = None
    seen = 0
    for value in sorted(histogram):
        seen += histogram[value]
        if lo is None and seen > lo_rank:
            lo = value
        if seen > lo_rank + 1 or (seen > lo_rank and frac == 0):
            hi = value
            break
    assert lo is not None and hi is not None
    return lo + (hi - lo) * frac


def alpha_micro(front: Frontier, alpha: str | float) -> float:
    """α in microseconds for this frontier."""
    if isinstance(alpha, (int, float)):
        return to_micro(float(alpha))
    if alpha == "median":
        return quantile(front.histogram, 0.5)
    if alpha.startswith("p"):
        return quantile(front.histogram, float(alpha[1:]) / 100)
    raise ValueError(f"alpha {alpha!r}: expected median, pNN or seconds")


def select(front: Frontier, alpha: str | float) -> Option | None:
    if not front.count:
        return None
    limit = alpha_micro(front, alpha)
    return min((o for o in front.best.values() if o.cost <= limit),
               key=lambda o: (o.leases, o.cost, o.names, o.instance), default=None)


@register("moml")
def moml(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    front = frontier(instances, mode="moml")
    return choice(front, select(front, config.alpha)) if front.count else NONE
