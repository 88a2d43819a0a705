"""Carrying out the declared preemption policies
(:data:`~leasehold.core.model.PREEMPTION_POLICIES`), with one signature.

A policy gets the preemption problem of every pool the preemptor may use
(:class:`~.instance.Instance`, candidates sorted by name) and the scheduler
configuration, and returns a :class:`~.choice.Choice`: which instance, which
candidates (by index), how many candidate sets it weighed and whether that count is
exact. It never touches the slot table: the scheduler enacts the choice.

Set policies are carried out alike, by their declared ranking (:mod:`.set_policy`);
each baseline has its own module, attached to its declaration here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..model import (
    HAIZEA,
    KUBE_SCHEDULER,
    KUEUE,
    NOP,
    PREEMPTION_POLICIES,
    PreemptionPolicy,
    SchedulerConfig,
)
from . import haizea, kube_scheduler, kueue, set_policy
from .choice import NONE, Choice
from .instance import Instance

Decide = Callable[[Sequence[Instance], SchedulerConfig], Choice]


def _never(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    return NONE


_BASELINES: dict[PreemptionPolicy, Decide] = {
    NOP: _never,
    KUEUE: kueue.decide,
    KUBE_SCHEDULER: kube_scheduler.decide,
    HAIZEA: haizea.decide,
}
_missing = [p.name for p in PREEMPTION_POLICIES if p.order is None and p not in _BASELINES]
if _missing:  # a declared baseline nobody carries out: fail at import, not at a decision
    raise ImportError(f"preemption policies declared without an implementation: {_missing}")


def decide(policy: PreemptionPolicy, instances: Sequence[Instance],
           config: SchedulerConfig) -> Choice:
    """What ``policy`` chooses among ``instances``."""
    if policy.order is not None:
        return set_policy.decide(policy, instances, config)
    return _BASELINES[policy](instances, config)
