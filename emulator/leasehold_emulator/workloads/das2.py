"""The DAS-2 workload model (H. Li, D. Groep, L. Wolters, "Workload characteristics
of a multi-cluster supercomputer", JSSPP 2004), as seed 003 (§5.2.2, Table 2) uses
it for its multi-cluster experiments.

* inter-arrival times: Weibull with ``scale`` (seconds) and ``shape``;
* sizes: one node with probability ``p_one``, else two-stage log-uniform
  (:mod:`.jobs`: ``2^u``, ``u`` uniform on ``[low, med]`` with probability ``q``, else
  on ``[med, high]``; rounded first for a power of two, probability ``p_pow2``);
* runtimes: log-normal, ``log(seconds) ~ N(mu, sigma²)``.

The defaults are GridSim's published ones. :data:`PRESETS` adds seed 003's Table 2
(§5.2.2) as it prints it. Our text extraction scatters the table: its distributions
and values sit at text lines ~1374-1450, its size rows (``l``, ``m``, ``h``, ``q``)
at ~1494-1497, with the site names after them. Per cluster, ``p_one`` 0.3 and
``p_pow2`` 0.6; sizes ``(low, med, high, q)`` = (0.8, 2.5, 6, 0.9) for C64, (0.8, 3.5,
7, 0.9) for C128, (0.8, 4.5, 8, 0.9) for C256 (``high`` is the cluster's log2 size:
no job outgrows its cluster); log-normal ``mu`` 5.0 / 5.35 / 5.5 with ``sigma`` 1.7;
Weibull (2.0, 0.35) / (1.6, 0.35) / (1.2, 0.35) read as (scale, shape).

The Grid row (the external requests, sent to the gateway) gives ranges, the sweeps
of 003's Figs 5-8: ``2.5 <= med <= 3.5`` (:data:`GRID_MED`), ``3.0 <= mu <= 5.4``
(:data:`GRID_MU`), Weibull scale ``3.8 .. 7.0`` (:data:`GRID_SCALE`) with shape 0.5;
``low`` 0.8, ``high`` 6, ``q`` 0.9, ``p_one`` 0.2, ``p_pow2`` 0.5, ``sigma`` 1.7. The
``grid`` preset is §5.2.2's default point, where the other sweeps hold the external
requests: ``med`` 2.756, inside its range, gives 5 VMs on average (the exact mean of
this model; 003's own eq. 28 jumps from 3.4 to 5.4 at ``med`` 2.68 and never gives
5); ``mu`` = ln 420 - sigma²/2 = 4.595, inside its range, gives 420 s on average; the
scale 10/3 gives 0.15 requests a second. That scale is *outside* the printed 3.8 ..
7.0 read as a scale (0.13 .. 0.071 a second): the text's rate is taken over the
table's range, which our reading of α may not match.
Arrival times and runtimes are whole seconds (a runtime of at least 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .jobs import Job, expected_size, swf_text


@dataclass(frozen=True, slots=True)
class Das2:
    scale: float = 23.375
    shape: float = 0.522
    mu: float = 4.40
    sigma: float = 1.7
    p_one: float = 0.024
    p_pow2: float = 0.78
    low: float = 0.8
    med: float = 4.5
    high: float = 7.0
    q: float = 0.90

    def problems(self) -> list[str]:
        """What is wrong with these parameters, one line each."""
        out = []
        if not (self.scale > 0 and self.shape > 0):
            out.append(f"Weibull scale and shape must be > 0, got {self.scale}, {self.shape}")
        if self.sigma < 0:
            out.append(f"log-normal sigma must be >= 0, got {self.sigma}")
        if min(self.p_one, self.p_pow2) < 0 or self.p_one + self.p_pow2 > 1:
            out.append(f"p_one and p_pow2 must be >= 0 and sum to at most 1, got"
                       f" {self.p_one}, {self.p_pow2}")
        if not 0 <= self.q <= 1:
            out.append(f"q must be between 0 and 1, got {self.q}")
        if not 0 <= self.low <= self.med <= self.high:
            out.append(f"sizes need 0 <= low <= med <= high, got {self.low}, {self.med},"
                       f" {self.high}")
        return out

    def mean_interarrival(self) -> float:
        return self.scale * math.gamma(1 + 1 / self.shape)

    def mean_size(self) -> float:
        return expected_size(self.p_one, self.p_pow2, self.low, self.med, self.high, self.q)


def _cluster(med: float, high: float, mu: float, scale: float) -> Das2:
    """A row of 003 Table 2 for a cluster (local requests)."""
    return Das2(scale=scale, shape=0.35, mu=mu, sigma=1.7, p_one=0.3, p_pow2=0.6,
                low=0.8, med=med, high=high, q=0.9)


#: 003 Table 2's Grid row: the ranges its Figs 5-8 sweep (external requests)
GRID_MED = (2.5, 3.5)
GRID_MU = (3.0, 5.4)
GRID_SCALE = (3.8, 7.0)

PRESETS: dict[str, Das2] = {
    "gridsim": Das2(),
    "c64": _cluster(2.5, 6, 5.0, 2.0),
    "c128": _cluster(3.5, 7, 5.35, 1.6),
    "c256": _cluster(4.5, 8, 5.5, 1.2),
    # §5.2.2's default point inside the Grid row's ranges: 5 VMs, 420 s, 0.15 a second
    "grid": Das2(scale=1 / (0.15 * math.gamma(1 + 1 / 0.5)), shape=0.5,
                 mu=math.log(420) - 1.7**2 / 2, sigma=1.7, p_one=0.2, p_pow2=0.5,
                 low=0.8, med=2.756, high=6, q=0.9),
}


def generate(n: int, seed: int = 0, model: Das2 | None = None) -> list[Job]:
    """``n`` jobs of ``model`` (GridSim's defaults if none), from numpy's PCG64."""
    model = model or Das2()
    problems = model.problems()
    if n < 0:
        problems.insert(0, f"number of jobs must be >= 0, got {n}")
    if problems:
        raise ValueError("; ".join(problems))
    rng = np.random.default_rng(seed)
    arrivals = np.floor(np.cumsum(model.scale * rng.weibull(model.shape, n)))
    runtimes = np.maximum(1, np.floor(rng.lognormal(model.mu, model.sigma, n)))
    kind, stage, where = rng.random(n), rng.random(n), rng.random(n)
    lo = np.where(stage < model.q, model.low, model.med)
    hi = np.where(stage < model.q, model.med, model.high)
    u = lo + where * (hi - lo)
    pow2 = (kind >= model.p_one) & (kind < model.p_one + model.p_pow2)
    u = np.where(pow2, np.floor(u + 0.5), u)
    sizes = np.where(kind < model.p_one, 1, np.floor(np.exp2(u) + 0.5))
    return [Job(int(a), int(s), int(r)) for a, s, r in
            zip(arrivals.tolist(), sizes.tolist(), runtimes.tolist(), strict=True)]


def to_swf(jobs: list[Job], model: Das2 | None = None) -> str:
    """The jobs as SWF, in the same layout as the Lublin99 program's output."""
    model = model or Das2()
    return swf_text(jobs, [
        "; Version: 2",
        "; Note: DAS-2 workload model (Li, Groep, Wolters 2004), generated by leasehold",
        f"; MaxJobs: {len(jobs)}", f"; MaxRecords: {len(jobs)}",
        f"; MaxNodes: {round(2**model.high)}",
    ])
