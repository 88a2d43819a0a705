"""Lease types for workloads that have none (000 §7.2: "Because Lublin workload does
not provide us the request types, we generated these types uniformly and assigned
them to the generated workloads").

Each job becomes a local request with probability ``local`` — a
``DeadlineNonPreemptable`` lease of the cluster's owners that wants its VMs at its
arrival (DESIGN §2.1) — and otherwise an external lease of one of the four external
types, drawn with the given weights. Deadlines follow one rule, which the papers do
not give: ``deadline = arrival + duration × U(slack)``, with ``slack`` (2, 5) by
default, so a deadline-bound lease can always wait at least once its own length.
One VM per node, as in the papers; its cpu and memory are the mix's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from random import Random

from leasehold.core.model import LeaseType, Origin, Request, Shape

from .jobs import Job

EXTERNAL = (
    LeaseType.BEST_EFFORT_CANCELLABLE,
    LeaseType.BEST_EFFORT_SUSPENDABLE,
    LeaseType.DEADLINE_MIGRATABLE,
    LeaseType.DEADLINE_NON_PREEMPTABLE,
)
DEADLINE_BOUND = (LeaseType.DEADLINE_MIGRATABLE, LeaseType.DEADLINE_NON_PREEMPTABLE)


@dataclass(frozen=True, slots=True)
class TypeMix:
    #: share of local requests
    local: float = 1 / 3
    #: relative weights of the external types (any non-negative numbers)
    cancellable: float = 1.0
    suspendable: float = 1.0
    migratable: float = 1.0
    nonpreemptable: float = 1.0
    #: a deadline-bound lease's deadline: arrival + duration × U(low, high)
    slack: tuple[float, float] = (2.0, 5.0)
    #: one VM's cpu (millicores) and memory (MiB): 000 §7.2 uses 1024 MB VMs
    cpu: int = 1000
    memory: int = 1024

    def problems(self) -> list[str]:
        """What is wrong with this mix, one line each (nothing: it is usable)."""
        out = []
        if not 0 <= self.local <= 1:
            out.append(f"local share must be between 0 and 1, got {self.local}")
        weights = self.weights()
        if any(w < 0 for w in weights):
            out.append(f"external type weights must be >= 0, got {list(weights)}")
        elif self.local < 1 and sum(weights) == 0:
            out.append("some requests are external but every external type has weight 0")
        low, high = self.slack
        if not 1 <= low <= high:
            out.append(f"slack must satisfy 1 <= low <= high, got {self.slack}")
        if self.cpu <= 0 or self.memory <= 0:
            out.append(f"cpu and memory must be > 0, got {self.cpu}, {self.memory}")
        return out

    def weights(self) -> tuple[float, float, float, float]:
        return (self.cancellable, self.suspendable, self.migratable, self.nonpreemptable)


def requests(jobs: Iterable[Job], mix: TypeMix | None = None, seed: int = 0
             ) -> list[Request]:
    """One lease per job, typed by ``mix`` with its own random stream (``seed``), so
    the same jobs can be typed differently without changing them. A runtime of 0
    becomes 1 s (as Haizea reads traces)."""
    mix = mix or TypeMix()
    problems = mix.problems()
    if problems:
        raise ValueError("; ".join(problems))
    rng, shape = Random(seed), Shape(mix.cpu, mix.memory)
    weights = mix.weights()
    out = []
    for i, job in enumerate(jobs):
        duration = float(max(job.runtime, 1))
        deadline = None
        if rng.random() < mix.local:
            kind, origin = LeaseType.DEADLINE_NON_PREEMPTABLE, Origin.LOCAL
        else:
            kind, origin = rng.choices(EXTERNAL, weights)[0], Origin.EXTERNAL
            if kind in DEADLINE_BOUND:
                deadline = job.arrival + duration * rng.uniform(*mix.slack)
        out.append(Request(name=f"j{i:05d}", type=kind, vms=job.nodes, shape=shape,
                           duration=duration, submitted=float(job.arrival), origin=origin,
                           deadline=deadline))
    return out
