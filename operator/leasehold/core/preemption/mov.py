"""``mov``: the candidate set of least total overhead h(C) = Σ h(L) (000 eq. 9).

Ties: fewer leases, then lease names.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import SchedulerConfig
from .instance import Instance
from .mlip import choice
from .registry import NONE, Choice, register
from .sets import Frontier, Option, frontier


def select(front: Frontier) -> Option | None:
    return min(front.best.values(), key=lambda o: (o.cost, o.leases, o.names, o.instance),
               default=None)


@register("mov")
def mov(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    front = frontier(instances, mode="mov")
    return choice(front, select(front)) if front.count else NONE
