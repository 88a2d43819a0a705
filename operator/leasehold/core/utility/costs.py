"""002 §III-C's dissatisfaction metric: how far a job is behind its SLA.

The SLA of job j asks for a share B_j per unit of time; over a monitoring window of
T seconds the provider is compliant when the job received V_j ≥ ρ·B_j·T. Within the
window, after n epochs the job has received V_jn and is owed n·B_j (B_j per epoch):

* the unsatisfactory factor l_jn = 1 − V_jn / (n·B_j) while V_jn ≤ n·B_j, else 0;
* the current unsatisfactory cost CUC_j = a_j^l − 1, in [0, a_j − 1] ⊆ [0, 1] for
  the static priority a_j ∈ (1, 2];
* the historic cost HUC_j, updated at the end of each window: − 1 (floored at 0)
  when compliant, + 1 when not;
* the total TUC_j = CUC_j + HUC_j, by which the ranked schemes share private nodes.

The functions take amounts in any one unit (resource-seconds, or seconds of a
dedicated node): only their ratios matter.
"""

from __future__ import annotations


def unsatisfactory_factor(received: float, epochs: int, per_epoch: float) -> float:
    """l_jn: the share of what is owed after ``epochs`` epochs (``per_epoch`` each,
    002's B_j) that ``received`` (V_jn) falls short of; 0 when nothing is owed."""
    owed = epochs * per_epoch
    if owed <= 0 or received > owed:
        return 0.0
    return 1.0 - received / owed


def current_cost(priority: float, factor: float) -> float:
    """CUC_j = a^l − 1 for the priority a ∈ (1, 2] and the unsatisfactory factor l."""
    if not 1.0 < priority <= 2.0:
        raise ValueError(f"priority (002's a_i) must be in (1, 2], got {priority:g}")
    return float(priority ** factor - 1.0)


def historic_cost(huc: int, compliant: bool) -> int:
    """HUC_j after a window: one less (not below 0) if it was compliant, one more if
    not."""
    return max(huc - 1, 0) if compliant else huc + 1


def total_cost(cuc: float, huc: int) -> float:
    """TUC_j = CUC_j + HUC_j."""
    return cuc + huc


def compliant(received: float, ratio: float, share: float, window: float) -> bool:
    """Whether a window in which the job received ``received`` meets its SLA:
    V_j ≥ ρ·B_j·T (``ratio`` ρ, ``share`` B_j per second, ``window`` T seconds)."""
    return received >= ratio * share * window
