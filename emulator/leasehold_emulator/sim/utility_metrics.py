"""002's metrics (§V-B) of a utility-mode run, measured in the steady state.

The engine (:mod:`.utility`) measures a whole run, from the first arrival to the last
end: the system filling up at the start and draining at the end are in it, and its
throughput, divided by a span that includes the drain, is below the admitted rate that
002's Fig. 1 and the M/M/m/m baselines (:mod:`.erlang`) speak of. A reproduction
measures what a long-running utility does instead, from the engine's per-job rows:

* the *cohort*: the jobs arriving in ``[warmup, span]`` (``span``: when arrivals stop;
  every cohort job is run to its end);
* ``throughput``: completions within ``[warmup, span]`` per hour (in the steady state,
  the admitted arrival rate);
* ``elongation``: the cohort's mean of (end − arrival) / work on a dedicated node
  (002 Fig. 3), and ``elongationOfSums``, Σ (end − arrival) / Σ work, which short jobs
  do not dominate (a job of 1 s that waits for its epoch's start is elongated 5×);
* ``penaltyPerWork``: the cohort's shortfall from its SLA (ρ·B·T per window, less
  what it got: the engine's ``shortfall``) over its work, both in resource-seconds
  (work × B_j) (002 Fig. 2);
* ``preemptiveMigrationsPerJob``, ``failureMigrationsPerJob`` (Figs. 4, 5), per
  completed cohort job;
* ``refusedRate``: the cohort's share refused by the threshold; ``compliance``: its
  share of compliant SLA windows;
* ``jobsInSystem``: admitted jobs in the system on average over ``[warmup, span]``
  (from arrival to end): 002's "number of jobs in the system" (Fig. 4's RR spike at
  twice the private nodes);
* ``completed``, ``refused``: the cohort's counts.

A measure over no job is nan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

#: the results' metric columns of a utility-mode experiment, in this order
METRICS_002 = ("throughput", "penaltyPerWork", "elongation", "elongationOfSums",
               "preemptiveMigrationsPerJob", "failureMigrationsPerJob", "refusedRate",
               "compliance", "jobsInSystem", "completed", "refused")


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def steady_metrics(jobs: Sequence[Mapping[str, Any]], warmup: float, span: float
                   ) -> dict[str, float]:
    """:data:`METRICS_002` of a finished run's per-job rows (the engine's, refused
    jobs with ``end`` None); ValueError when an admitted job has not ended."""
    unfinished = [j["name"] for j in jobs if j["end"] is None and j["phase"] != "Refused"]
    if unfinished:
        raise ValueError(f"job {unfinished[0]} has not ended ({len(unfinished)} such):"
                         f" a run is measured once every job has ended")
    window = span - warmup
    cohort = [j for j in jobs if warmup <= j["arrival"] <= span]
    done = [j for j in cohort if j["end"] is not None]
    admitted = [j for j in jobs if j["end"] is not None]
    in_window = sum(max(0.0, min(j["end"], span) - max(j["arrival"], warmup))
                    for j in admitted)
    return {
        "throughput": _ratio(sum(warmup <= j["end"] <= span for j in admitted) * 3600, window),
        "penaltyPerWork": _ratio(sum(j["shortfall"] for j in done),
                                 sum(j["work"] * j["share"] for j in done)),
        "elongation": fmean((j["end"] - j["arrival"]) / j["work"] for j in done)
        if done else math.nan,
        "elongationOfSums": _ratio(sum(j["end"] - j["arrival"] for j in done),
                                   sum(j["work"] for j in done)),
        "preemptiveMigrationsPerJob": _ratio(sum(j["preemptiveMigrations"] for j in done),
                                             len(done)),
        "failureMigrationsPerJob": _ratio(sum(j["failureMigrations"] for j in done), len(done)),
        "refusedRate": _ratio(len(cohort) - len(done), len(cohort)),
        "compliance": _ratio(sum(j["compliantWindows"] for j in done),
                             sum(j["windows"] for j in done)),
        "jobsInSystem": _ratio(in_window, window),
        "completed": float(len(done)),
        "refused": float(len(cohort) - len(done)),
    }
