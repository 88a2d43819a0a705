"""The utility mode of seed 002 in the simulator (DESIGN §2.7; docs/volatile.md).

:func:`simulate_utility` runs a scenario with a ``config.utility`` block: its leases
are the jobs (one VM each; ``runtime``, else ``duration``, is the work on a private
node; cpu as a share of a private node's is B_j), the ``private`` pool's nodes the
private nodes, the pool with a ``volatile`` block the public pool. The core's epoch
scheduler (:mod:`leasehold.core.utility`) makes every decision; this module draws
what the public nodes do each epoch (:class:`PublicDraws`, seeded by
``config.seed``) and measures 002's metrics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from leasehold.core.model import Volatility, utility_scheme
from leasehold.core.utility import EpochScheduler, Fate, Job, JobState, Settings
from leasehold.core.utility.replicas import replicas_needed

if TYPE_CHECKING:
    from leasehold.api.scenario import Scenario

#: an arrival is in the epoch that begins at or after it, to this much
_EPS = 1e-9


class PublicDraws:
    """What the public nodes do in an epoch, drawn from the pool's law with one
    numpy Generator seeded once: per node, in the order asked, the share of a
    private node's capacity it delivers (normal of the law's mean and sigma, clipped
    to [min, max]) and whether it fails (hazard ``failure_rate`` per epoch: within
    one epoch with probability 1 − e^−rate) and when (the exponential law's time
    given that it fails within the epoch, as a fraction of the epoch)."""

    def __init__(self, law: Volatility, seed: int) -> None:
        self.law = law
        self.rng = np.random.default_rng(seed)

    def __call__(self, nodes: Sequence[str]) -> dict[str, Fate]:
        n = len(nodes)
        if n == 0:
            return {}
        law, rng = self.law, self.rng
        # always drawn, whatever the law: one law's stream is another's, node for node
        shares = np.clip(rng.normal(law.capacity_mean, law.capacity_sigma, n),
                         law.capacity_min, law.capacity_max)
        u, v = rng.random(n), rng.random(n)
        rate = law.failure_rate
        p = -math.expm1(-rate)  # 1 − e^−rate
        fails = u < p
        # the inverse of the exponential's distribution, truncated to one epoch
        at = -np.log1p(-v * p) / rate if rate > 0 else np.zeros(n)
        return {node: Fate(float(shares[i]), float(min(at[i], 1 - 1e-12)) if fails[i]
                           else None) for i, node in enumerate(nodes)}


@dataclass(slots=True)
class UtilityResult:
    """A run: 002's metrics, one row per job (in arrival order), the replicas k used
    and the epochs run."""

    metrics: dict[str, float]
    jobs: list[dict[str, Any]]
    replicas: int
    epochs: int
    settings: Settings


def utility_parts(scenario: Scenario) -> tuple[Settings, Volatility, list[Job]]:
    """The core's settings, the public pool's law and the jobs of a scenario with a
    ``config.utility`` block (validated: one private and one public pool)."""
    u = scenario.config.utility
    if u is None:
        raise ValueError("the scenario has no config.utility block")
    pools = {p.name: p for p in scenario.pool_specs()}
    private = pools[u.private]
    (public,) = [p for p in pools.values() if p.volatile is not None]
    law = public.volatile
    assert law is not None
    replicas = u.replicas if u.replicas is not None else replicas_needed(
        law.mean_up, law.recovery, u.alpha)
    settings = Settings(
        scheme=utility_scheme(u.scheme),
        private_nodes=tuple(f"{private.name}-{i}" for i in range(private.nodes)),
        public_pool=public.name, epoch=law.epoch, window=u.window, threshold=u.threshold,
        service_ratio=u.service_ratio, replicas=replicas, migration=u.migration_seconds)
    jobs = [Job(name=r.name, arrival=r.submitted, work=r.actual_runtime,
                share=r.shape.cpu / private.cpu, priority=u.priority)
            for r in scenario.requests()]
    return settings, law, jobs


def simulate_utility(scenario: Scenario, *,
                     progress: Callable[[int, int], None] | None = None) -> UtilityResult:
    """Run a scenario's utility mode (``config.utility``) to the end, its draws
    seeded by ``config.seed``. ``progress(finished, total)`` after every epoch."""
    settings, law, jobs = utility_parts(scenario)
    return run_utility(settings, law, jobs, seed=scenario.config.seed, progress=progress)


def run_utility(settings: Settings, law: Volatility, jobs: Sequence[Job], *, seed: int = 0,
                progress: Callable[[int, int], None] | None = None) -> UtilityResult:
    """:func:`simulate_utility` from its parts: every job arrives, is admitted or
    refused, and runs until it completes."""
    sched = EpochScheduler(settings)
    draws = PublicDraws(law, seed)
    pending = sorted(jobs, key=lambda j: (j.arrival, j.name))
    total, i, epoch, ran = len(pending), 0, -1, 0
    while i < total or not sched.idle:
        epoch += 1
        if sched.idle:  # nothing runs until the next arrival's epoch
            epoch = max(epoch, math.ceil(pending[i].arrival / settings.epoch - _EPS))
        start = epoch * settings.epoch
        arrivals = []
        while i < total and pending[i].arrival <= start + _EPS:
            arrivals.append(pending[i])
            i += 1
        plan = sched.begin(epoch, arrivals)
        sched.end(draws(plan.public_nodes))
        ran += 1
        if progress is not None:
            progress(len(sched.finished) + len(sched.refused), total)
    return UtilityResult(metrics(sched.finished, sched.refused), rows(sched, pending),
                         settings.k, ran, settings)


def metrics(finished: Mapping[str, JobState], refused: Sequence[Job]) -> dict[str, float]:
    """002's metrics (§V-B; docs/volatile.md says each one):

    * ``throughput``: jobs completed per hour, from the first arrival to the last end;
    * ``penalty_per_work``: what the jobs fell short of their SLA (ρ·B·T per window,
      less what they received), per unit of work done, both in resource-seconds;
    * ``elongation``: mean (end − arrival) / work on a private node;
    * ``preemptive_migrations_per_job``, ``failure_migrations_per_job``: per job
      completed;
    * ``completed``, ``refused``: jobs.
    """
    done = list(finished.values())
    arrivals = [st.job.arrival for st in done] + [j.arrival for j in refused]
    ends = [st.end for st in done if st.end is not None]
    span = max(ends) - min(arrivals) if ends else 0.0
    n = len(done)
    work = sum(st.job.work * st.job.share for st in done)
    return {
        "throughput": n / span * 3600 if span > 0 else 0.0,
        "penalty_per_work": (sum(st.shortfall * st.job.share for st in done) / work
                             if work > 0 else 0.0),
        "elongation": (sum((st.end - st.job.arrival) / st.job.work for st in done
                           if st.end is not None) / n if n else 0.0),
        "preemptive_migrations_per_job": (sum(st.preemptive_migrations for st in done) / n
                                          if n else 0.0),
        "failure_migrations_per_job": (sum(st.failure_migrations for st in done) / n
                                       if n else 0.0),
        "completed": float(n),
        "refused": float(len(refused)),
        "compliance": (sum(st.compliant_windows for st in done)
                       / max(1, sum(st.windows for st in done))),
    }


def rows(sched: EpochScheduler, jobs: Sequence[Job]) -> list[dict[str, Any]]:
    """One row per job, in arrival order (then name)."""
    refused = {j.name for j in sched.refused}
    out: list[dict[str, Any]] = []
    for job in jobs:
        base = {"name": job.name, "arrival": job.arrival, "work": job.work,
                "share": job.share}
        if job.name in refused:
            out.append({**base, "phase": "Refused", "admitted": None, "end": None,
                        "elongation": None, "preemptiveMigrations": 0,
                        "failureMigrations": 0, "windows": 0, "compliantWindows": 0,
                        "shortfall": 0.0, "privateEpochs": 0, "publicEpochs": 0})
            continue
        st = sched.state(job.name)
        end = st.end
        out.append({**base, "phase": "Completed" if end is not None else "Running",
                    "admitted": st.admitted, "end": end,
                    "elongation": None if end is None else (end - job.arrival) / job.work,
                    "preemptiveMigrations": st.preemptive_migrations,
                    "failureMigrations": st.failure_migrations, "windows": st.windows,
                    "compliantWindows": st.compliant_windows,
                    "shortfall": st.shortfall * job.share,
                    "privateEpochs": st.private_epochs, "publicEpochs": st.public_epochs})
    return out


# ---- output of `leasehold simulate` -------------------------------------------------


def _round(x: Any) -> Any:
    return round(x, 6) if isinstance(x, float) else x


def utility_document(result: UtilityResult) -> dict[str, Any]:
    """The JSON document of ``leasehold simulate`` in the utility mode: DESIGN §8's
    keys (``leases``: one row per job; ``decisions``: none, the mode preempts
    nothing; ``metrics``) and ``mode``, ``replicas``, ``epochs``."""
    return {
        "mode": "utility",
        "scheme": result.settings.scheme.name,
        "replicas": result.replicas,
        "epochs": result.epochs,
        "leases": [{k: _round(v) for k, v in row.items()} for row in result.jobs],
        "decisions": [],
        "metrics": {k: _round(v) for k, v in result.metrics.items()},
    }


def utility_table(doc: dict[str, Any]) -> str:
    """The document as a table: one row per job, then the metrics."""
    head = ["JOB", "PHASE", "ARRIVAL", "END", "WORK", "SHARE", "ELONGATION", "PREEMPTIVE",
            "FAILURE", "WINDOWS OK"]

    def num(x: Any, fmt: str = "g") -> str:
        return "-" if x is None else format(x, fmt)

    rows = [[r["name"], r["phase"], num(r["arrival"]), num(r["end"]), num(r["work"]),
             num(r["share"]), num(r["elongation"], ".3f"), str(r["preemptiveMigrations"]),
             str(r["failureMigrations"]), f"{r['compliantWindows']}/{r['windows']}"]
            for r in doc["leases"]]
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
             for line in [head, *rows]]
    m = doc["metrics"]
    lines += [
        "",
        f"utility mode: scheme {doc['scheme']}, {doc['replicas']} replicas on public nodes"
        f" (rrr-k), {doc['epochs']} epochs",
        f"completed {m['completed']:g}  refused {m['refused']:g}  throughput"
        f" {m['throughput']:.2f} jobs/h  elongation {m['elongation']:.3f}",
        f"penalty per unit of work {m['penalty_per_work']:.4f}  compliant windows"
        f" {m['compliance']:.1%}  migrations per job: preemptive"
        f" {m['preemptive_migrations_per_job']:.2f}, failure"
        f" {m['failure_migrations_per_job']:.2f}",
    ]
    return "\n".join(lines) + "\n"
