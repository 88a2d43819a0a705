"""The set policies (``mlip``, ``mov``, ``moml``: DESIGN §2.4, 000 §6): the best of
all minimal candidate sets by the policy's declared ranking
(:class:`~leasehold.core.model.PreemptionPolicy`).

A threshold policy (``moml``, 000 Algorithm 1) ranks only the sets whose overhead is
at most α: the median of the overheads of *all* candidate sets (for an even count
the mean of the two middle values, as :func:`statistics.median`), or a configured
percentile ("p25": linear interpolation between closest ranks, so "p50" is the
median) or a number of seconds. The frontier's histogram counts sets per overhead
value, so the median never needs the sets themselves.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from math import floor

from ..model import PreemptionPolicy, SchedulerConfig
from . import sweep
from .choice import NONE, Choice
from .instance import Instance, to_micro
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


def select(policy: PreemptionPolicy, front: Frontier, alpha: str | float = "median"
           ) -> Option | None:
    """The set ``policy`` chooses from ``front``: the least by its ranking, then by
    sorted lease names, then by pool order (``None``: there is none to choose)."""
    order = policy.order
    assert order is not None, f"{policy.name} is not a set policy"
    if not front.count:
        return None
    options = list(front.best.values())
    if policy.threshold:
        limit = alpha_micro(front, alpha)
        options = [o for o in options if o.cost <= limit]
    return min(options, key=lambda o: (*order((o.leases, o.vms, o.cost)), o.names, o.instance),
               default=None)


def decide(policy: PreemptionPolicy, instances: Sequence[Instance],
           config: SchedulerConfig) -> Choice:
    front = frontier(instances, keep=sweep.summary(policy))
    if not front.count:
        return NONE
    best = select(policy, front, config.alpha)
    if best is None:
        return Choice(-1, (), front.count, front.exact)
    return Choice(best.instance, best.members, front.count, front.exact)
