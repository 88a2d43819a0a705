"""Kueue's scheduler scalability baseline as leasehold workloads: one description for
the operator benchmark on the emulated cluster (benchmarks/bench_kueue_baseline.py)
and the simulator (benchmarks/bench_kueue_baseline_sim.py).

kubernetes-sigs/kueue ``test/performance/scheduler/configs/baseline/generator.yaml``:
5 cohorts of 6 ClusterQueues (30), each with nominal quota 20 CPU (600 in all) and a
borrowing limit of 100, each fed three workload sets:

=========  =====  ===================  ====  ==========  ========
class      count  creationIntervalMs   CPU   runtimeMs   priority
=========  =====  ===================  ====  ==========  ========
small      350    100                  1     200         50
medium     100    500                  5     500         100
large      50     1200                 20    1000        200
=========  =====  ===================  ====  ==========  ========

15,000 workloads. Kueue's generator (``runner/generator/generator.go``
``generateWlSet``) waits one interval *before* each create, so workload ``i`` of a set
(from 0) is created ``(i + 1) x interval`` after its set starts; every set of every
queue starts together. leasehold has no quotas, cohorts or priorities: each workload
is one external best-effort lease of one VM of the class's CPU, scheduled first come
first served with the configured backfilling.

Kueue has no nodes: it admits a workload when its ClusterQueue's quota (or what the
queue may borrow in its cohort) holds it. :func:`pools` offers three readings of the
600 CPU (:data:`LAYOUTS`):

- ``nodes``: 30 nodes of 20 CPU, as the operator benchmark runs it (pods must land on
  nodes there), so the two runs can be compared; a large workload needs a whole node.
- ``cohorts``: Kueue's quota structure: one pool per cohort of one node of 120 CPU
  (6 queues x 20 nominal, and a queue may borrow up to 100 more: the whole cohort),
  each queue's workloads confined to its cohort's pool.
- ``pooled``: one node of 600 CPU: any workload may use any free CPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import fmean
from typing import Literal

from leasehold.core.model import LeaseType, PoolSpec, Request, Shape
from leasehold.core.view import LeaseView

QUEUES = 30
COHORTS = 5
#: CPU of each ClusterQueue's nominal quota: 30 x 20 = 600 CPU in all
NOMINAL_QUOTA = 20
#: memory of one VM (MiB): Kueue's workloads ask for CPU only; any fixed amount that
#: never binds will do (the operator benchmark's nodes hold 80 GiB for 20 CPU)
MEMORY = 1024

#: Kueue's figures, ``configs/baseline/rangespec.yaml`` at kueue commit ff69552e
#: (2026-08-22; the file last changed in #11097, SchedulingEquivalenceHashing to beta):
#: the averages of 5 trial runs its comments give. Wall: the runner's command, seconds;
#: time to admission per class (creation to admission), mean seconds; cluster-queue
#: usage, percent (CPU-ms used over nominal quota x the queues' first-to-last event).
KUEUE = {"wall": 351.1164, "small": 215.468, "medium": 76.768, "large": 16.501, "usage": 55.9}
#: what #11097 changed: large 6,666 ms and usage 58.7% with the hashing disabled
KUEUE_WITHOUT_HASHING = {"large": 6.666, "usage": 58.7}
#: the limits the same file sets (a run fails beyond them)
KUEUE_LIMITS = {"wall": 425.0, "small": 260.0, "medium": 90.0, "large": 23.0, "usage": 50.0}


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    name: str
    #: workloads per queue
    count: int
    #: seconds between two creates in one queue
    every: float
    #: CPU of its one VM (Kueue: its one pod's request)
    cpu: int
    #: seconds it runs once started
    runtime: float
    #: Kueue's priority (leasehold has none; reported for the comparison)
    priority: int


CLASSES = (WorkloadClass("small", 350, 0.1, 1, 0.2, 50),
           WorkloadClass("medium", 100, 0.5, 5, 0.5, 100),
           WorkloadClass("large", 50, 1.2, 20, 1.0, 200))


@dataclass(frozen=True, slots=True)
class Workload:
    #: seconds after the generator starts
    at: float
    queue: int
    kind: WorkloadClass
    #: its index in its queue's set
    index: int

    @property
    def namespace(self) -> str:
        return f"cq-{self.queue:02d}"

    @property
    def name(self) -> str:
        """Unique within its namespace."""
        return f"{self.kind.name}-{self.index:03d}"


def workloads(scale: float = 1.0) -> list[Workload]:
    """Every workload in creation order: by time, then queue, then class (small,
    medium, large). ``scale`` < 1 keeps that share of each set's count (at least
    one), at the same rates: a shorter run of the same shape."""
    out = [Workload(round((i + 1) * c.every, 6), q, c, i)
           for q in range(QUEUES) for c in CLASSES
           for i in range(max(1, round(c.count * scale)))]
    # stable: ties keep the generation order (queue, class, index)
    return sorted(out, key=lambda w: (w.at, w.queue))


Layout = Literal["nodes", "cohorts", "pooled"]
LAYOUTS: tuple[Layout, ...] = ("nodes", "cohorts", "pooled")


def cohort(queue: int) -> int:
    """The cohort of a queue: queues 0-5 are in cohort 0, and so on (Kueue's generator
    makes each cohort's queue set in turn)."""
    return queue // (QUEUES // COHORTS)


def pools(layout: Layout) -> list[PoolSpec]:
    """The 600 CPU as ``layout`` reads them (module docstring)."""
    cpu = QUEUES * NOMINAL_QUOTA
    per_cpu = MEMORY  # memory never binds: one VM's worth per CPU
    if layout == "nodes":
        return [PoolSpec("kueue", QUEUES, NOMINAL_QUOTA * 1000, NOMINAL_QUOTA * per_cpu)]
    if layout == "cohorts":
        size = cpu // COHORTS
        return [PoolSpec(f"cohort-{c}", 1, size * 1000, size * per_cpu) for c in range(COHORTS)]
    return [PoolSpec("kueue", 1, cpu * 1000, cpu * per_cpu)]


def requests(scale: float = 1.0, layout: Layout = "nodes") -> list[Request]:
    """The workloads as the simulator's requests, named ``cq-NN/class-III``, in
    creation order; under ``cohorts`` each is bound to its cohort's pool."""
    return [Request(f"{w.namespace}/{w.name}", LeaseType.BEST_EFFORT_SUSPENDABLE, 1,
                    Shape(w.kind.cpu * 1000, MEMORY), w.kind.runtime, w.at,
                    pool=f"cohort-{cohort(w.queue)}" if layout == "cohorts" else None)
            for w in workloads(scale)]


@dataclass(frozen=True, slots=True)
class Figures:
    """A finished run's figures, as Kueue's checker reads its own (rangespec.yaml)."""

    #: seconds from the generator's start (0) to the last workload's end
    wall: float
    #: CPU-seconds run over the 600 CPU x ``wall``, percent
    usage: float
    #: per class: mean and 99th percentile of first start - creation (Kueue's time to
    #: admission: leasehold starts a lease when it admits it), seconds
    mean_start: dict[str, float]
    p99_start: dict[str, float]


def figures(leases: Iterable[LeaseView]) -> Figures:
    """The figures of a run of :func:`requests` (every lease must have started)."""
    leases = list(leases)
    waits: dict[str, list[float]] = {c.name: [] for c in CLASSES}
    end, used = 0.0, 0.0
    for s in leases:
        if s.first_start is None or s.end is None:
            raise ValueError(f"{s.name} never ran: a baseline run must run every workload")
        waits[s.name.split("/")[1].split("-")[0]].append(s.first_start - s.request.submitted)
        end = max(end, s.end)
        used += s.request.vms * s.request.shape.cpu / 1000 * s.ran
    return Figures(end, 100 * used / (QUEUES * NOMINAL_QUOTA * end) if end else 0.0,
                   {k: fmean(v) for k, v in waits.items() if v},
                   {k: _quantile(v, 0.99) for k, v in waits.items() if v})


def _quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile: the smallest value with at least ``q`` of them at or
    below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]
