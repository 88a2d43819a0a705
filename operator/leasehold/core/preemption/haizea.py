"""``haizea``: Haizea 1.0's preemption of best-effort leases for a reservation, as a
baseline (borjasotomayor/haizea: ``GreedyMapper.map``, ``PolicyManager.sort_leases``,
the ``ar-preempts-everything`` policy and its aging factor).

Every lease with a reservation in the window is a candidate unless it was submitted
seven days or more ago (its preemptability score is then -1). Candidates are sorted
by score, youngest first, and victims are popped from the end of that list — the
oldest submission first — one at a time until the preemptor fits. No victim is given
back afterwards, even one that turns out to be unnecessary.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import SchedulerConfig
from .choice import NONE, Choice
from .instance import Instance
from .sets import take_until_fits

#: Haizea's aging factor gives leases this old a score of -1: never preempted
MAX_AGE = 7 * 24 * 3600.0


def oldest_first(inst: Instance) -> tuple[int, ...] | None:
    cands = inst.candidates
    eligible = [i for i in range(len(cands)) if inst.now - cands[i].victim.submitted < MAX_AGE]
    eligible.sort(key=lambda i: (cands[i].victim.submitted, cands[i].victim.seq))
    found = take_until_fits(inst, eligible)
    return None if found is None else tuple(sorted(found[0]))


def decide(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    for k, inst in enumerate(instances):
        members = oldest_first(inst)
        if members:
            return Choice(k, members, 1, True)
    return NONE
