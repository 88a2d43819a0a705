"""The utility mode of seed 002 (DESIGN §2.7): a few private (dedicated) nodes and an
unlimited public pool of volatile nodes, scheduled in epochs.

* :mod:`.costs` — the unsatisfactory costs CUC, HUC, TUC and SLA compliance (002 §III-C);
* :mod:`.replicas` — the replica count k of 002 §IV;
* :mod:`.schemes` — the schemes declared in :mod:`leasehold.core.model`
  (:data:`~leasehold.core.model.UTILITY_SCHEMES`: rr, rrr, rrr-k; 002 Algorithm 2),
  carried out with one signature;
* :mod:`.epoch` — the epoch scheduler (002 Algorithm 1): admission, assignment,
  progress, checkpoints, failures, migrations.

Pure and deterministic: the public nodes' fates (delivered capacity, failures) are
drawn by the caller and given to :meth:`.epoch.EpochScheduler.end`.
"""

from .epoch import EpochScheduler, Fate, Job, JobState, Outcome, Placement, Plan, Settings

__all__ = ["EpochScheduler", "Fate", "Job", "JobState", "Outcome", "Placement", "Plan",
           "Settings"]
