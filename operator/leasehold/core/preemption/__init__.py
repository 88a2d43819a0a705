"""Preemption: which external leases make room for a local request or reservation
(DESIGN §2.4; 000 §2.1, §5, §6).

* :mod:`.instance` — the problem, abstracted from the slot table;
* :mod:`.sets` and :mod:`.sweep` — minimal candidate sets, exact or sampled, and
  their frontier; :mod:`.focus` — narrowing a large shared pool;
* :mod:`.policies` — the policies declared in :mod:`leasehold.core.model`, carried
  out: the set policies by their ranking (:mod:`.set_policy`), the baselines
  ``kueue``, ``kube-scheduler`` and ``haizea`` by their own modules.

The scheduler (:mod:`leasehold.core.victims`, :mod:`leasehold.core.enactment`)
gathers the preemptable leases, builds the instances, asks the configured policy,
and enacts the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from .choice import NONE, Choice
from .policies import decide

__all__ = ["NONE", "Choice", "Decision", "decide"]


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
