"""Preemption: which external leases make room for a local request or reservation
(DESIGN §2.4; 000 §2.1, §5, §6).

* :mod:`.instance` — the problem, abstracted from the slot table;
* :mod:`.sets` — minimal candidate sets, exact or sampled, and their frontier;
* one module per policy, registered by name in :mod:`.registry`: ``nop``, ``mlip``,
  ``mov``, ``moml`` and the baselines ``kueue``, ``kube-scheduler``, ``haizea``.

The scheduler (:mod:`leasehold.core.enactment`) gathers the preemptable leases,
builds the instances, asks the configured policy, and enacts the choice.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import haizea, kube_scheduler, kueue, mlip, moml, mov, nop  # noqa: F401  (register)
from .registry import Choice, get, names, sees_all

__all__ = ["Choice", "Decision", "get", "names", "sees_all"]


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
