"""``mlip``: the candidate set with the fewest leases (000 eq. 10).

Ties: more VMs freed, then lower overhead (what a largest-first search finds, and
what 000 Table III shows), then lease names.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import SchedulerConfig
from .instance import Instance
from .registry import NONE, Choice, register
from .sets import Frontier, Option, frontier


def select(front: Frontier) -> Option | None:
    return min(front.best.values(), key=lambda o: (o.leases, -o.vms, o.cost, o.names, o.instance),
               default=None)


def choice(front: Frontier, best: Option | None) -> Choice:
    if best is None:
        return Choice(-1, (), front.count, front.exact)
    return Choice(best.instance, best.members, front.count, front.exact)


@register("mlip")
def mlip(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    front = frontier(instances, mode="mlip")
    return choice(front, select(front)) if front.count else NONE
