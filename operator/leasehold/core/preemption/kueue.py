"""``kueue``: Kueue's classical preemption, as a baseline (kubernetes-sigs/kueue,
``pkg/scheduler/preemption``: ``CandidatesOrdering``, ``classicalPreemptions``,
``fillBackWorkloads``).

Candidates are ordered as Kueue orders workloads of equal priority: most recently
admitted first (a queued reservation was never admitted, so it counts as admitted
now, as Kueue does for a missing condition), then name (Kueue: UID). They are removed
in that order until the preemptor fits; then every target but the last is tried
back, newest-removed first, and stays only if the preemptor no longer fits without
it. Overhead plays no part.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import SchedulerConfig
from .choice import NONE, Choice
from .instance import Instance
from .sets import take_until_fits


def remove_then_fill_back(inst: Instance, order: Sequence[int]) -> tuple[int, ...] | None:
    found = take_until_fits(inst, order)
    if found is None:
        return None
    targets, ev = found
    for i in reversed(targets[:-1]):
        ev.remove(i)
        if ev.total >= inst.need:
            targets.remove(i)  # it fits without preempting this one
        else:
            ev.add(i)
    return tuple(sorted(targets))


def decide(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    for k, inst in enumerate(instances):  # pools in order: the first that works
        cands = inst.candidates
        order = sorted(range(len(cands)),
                       key=lambda i: (-min(cands[i].victim.since, inst.now), cands[i].name))
        members = remove_then_fill_back(inst, order)
        if members:
            return Choice(k, members, 1, True)
    return NONE
