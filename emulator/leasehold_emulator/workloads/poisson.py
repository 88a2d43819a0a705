"""002 §V-A's workload: jobs arrive in a Poisson process, each with a random work
(seconds on a dedicated node; 100 epochs of 10 s on average in 002) and a bandwidth
B_j (002 §III-B: the share of a node's capacity its SLA asks for per unit time).

The rate is given as an offered *load* in Erlangs, arrival rate × mean work: the
number of jobs that would run at once if each had a dedicated node (the M/M/m/m
baseline's load, :mod:`..sim.erlang`). 002 leaves its load axis, its job-size law and
its B_j law unprinted; the choices here are the experiments' (docs/reproduction.md,
"002"): exponential work by default (``fixed`` and ``uniform`` on mean ± half for a
sensitivity run), B_j uniform on ``bandwidth`` (default a whole node).

Arrivals, works and bandwidths draw from three streams of the replication's seed
(numpy's SeedSequence), each read in job order: the k-th job's work and bandwidth are
the same whatever the load, and its arrival is the same unit-rate Poisson time scaled
by 1 / rate, so a load sweep moves the same jobs closer together (common random
numbers across grid points, as :mod:`.streams` does for 003).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from leasehold.core.model import LeaseType, Request, Shape

#: the laws of a job's work, each of mean ``mean_work``
WORK_LAWS = ("exponential", "fixed", "uniform")
#: arrivals drawn per batch (any size gives the same jobs: the streams are read in order)
BATCH = 4096


@dataclass(frozen=True, slots=True)
class PoissonJobs:
    """Poisson arrivals for ``span`` seconds at ``load`` Erlangs of jobs whose work
    (seconds on a dedicated node) follows ``work`` with mean ``mean_work``, and whose
    bandwidth is uniform on ``bandwidth`` (shares of a node, in (0, 1])."""

    load: float
    mean_work: float
    span: float
    work: Literal["exponential", "fixed", "uniform"] = "exponential"
    bandwidth: tuple[float, float] = (1.0, 1.0)

    def problems(self) -> list[str]:
        out = []
        if not self.load > 0:
            out.append(f"load must be > 0 Erlangs, got {self.load}")
        if not self.mean_work > 0:
            out.append(f"mean work must be > 0 seconds, got {self.mean_work}")
        if not self.span > 0:
            out.append(f"span must be > 0 seconds, got {self.span}")
        if self.work not in WORK_LAWS:
            out.append(f"work law {self.work!r} unknown; expected one of {', '.join(WORK_LAWS)}")
        low, high = self.bandwidth
        if not 0 < low <= high <= 1:
            out.append(f"bandwidth must be [low, high] with 0 < low <= high <= 1 (shares of a"
                       f" node), got [{low}, {high}]")
        return out

    @property
    def rate(self) -> float:
        """Arrivals per second."""
        return self.load / self.mean_work


@dataclass(frozen=True, slots=True)
class UtilityJob:
    #: seconds from the start
    arrival: float
    #: seconds on a dedicated node
    work: float
    #: B_j, a share of a node's capacity
    share: float


def poisson_jobs(model: PoissonJobs, seed: int) -> list[UtilityJob]:
    """The jobs arriving in ``[0, span]``; ValueError naming what is wrong with
    ``model``."""
    problems = model.problems()
    if problems:
        raise ValueError("; ".join(problems))
    arrivals_rng, work_rng, share_rng = (np.random.default_rng(s) for s in
                                         np.random.SeedSequence(seed).spawn(3))
    horizon = model.rate * model.span  # the span in unit-rate time
    times: list[float] = []
    clock = 0.0
    while clock <= horizon:
        batch = np.cumsum(arrivals_rng.standard_exponential(BATCH)) + clock
        clock = float(batch[-1])
        times += batch[batch <= horizon].tolist()
    n = len(times)
    if model.work == "exponential":
        works = work_rng.standard_exponential(n) * model.mean_work
    elif model.work == "uniform":
        works = work_rng.uniform(0.5, 1.5, n) * model.mean_work
    else:
        works = np.full(n, model.mean_work)
    low, high = model.bandwidth
    shares = share_rng.uniform(low, high, n) if high > low else np.full(n, high)
    return [UtilityJob(t / model.rate, float(w), float(s))
            for t, w, s in zip(times, works, shares, strict=True)]


def utility_requests(jobs: list[UtilityJob], cpu: int, memory: int) -> list[Request]:
    """The jobs as leases of one VM each (the utility mode's jobs, 002 §III): the
    duration is the work on a dedicated node, the cpu B_j's share of a node's ``cpu``
    (millicores), the memory a node's. Best-effort suspendable: a job is checkpointed
    and moved, never cancelled."""
    return [Request(name=f"job-{i:05d}", type=LeaseType.BEST_EFFORT_SUSPENDABLE, vms=1,
                    shape=Shape(max(1, round(cpu * j.share)), memory), duration=j.work,
                    submitted=j.arrival) for i, j in enumerate(jobs)]
