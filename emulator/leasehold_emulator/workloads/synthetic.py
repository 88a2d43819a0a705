"""A Lublin-*like* workload with the request-type mix of 000 §7.2 — a stopgap.

The simulator issue brings the real Lublin99 generator; until then the preemption
benchmarks and the policy comparison need a workload with the papers' shape: about
4 VMs and 2 hours per request on average, Poisson arrivals, power-of-two sizes,
one third local requests and the external ones split evenly over the four external
types (000 §7.2 assigns types "uniformly"). What is *not* Lublin about it: sizes are
drawn from a fixed table, durations are log-normal and independent of size, and
there is no daily cycle.

Deadline rule (000 does not give one): ``deadline = ready + duration × U(2, 5)``.
Local requests are ``DeadlineNonPreemptable`` without a deadline: they want their
VMs at arrival (DESIGN §2.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp, log
from random import Random

from leasehold.core.model import LeaseType, Origin, Request, Shape

#: VMs per request and their probabilities: mean 4.36
SIZES = ((1, 0.30), (2, 0.25), (4, 0.25), (8, 0.12), (16, 0.06), (32, 0.02))
EXTERNAL_TYPES = (
    LeaseType.BEST_EFFORT_CANCELLABLE,
    LeaseType.BEST_EFFORT_SUSPENDABLE,
    LeaseType.DEADLINE_MIGRATABLE,
    LeaseType.DEADLINE_NON_PREEMPTABLE,
)


@dataclass(frozen=True, slots=True)
class Mix:
    requests: int = 1000
    #: the largest request; sizes above it are clipped
    nodes: int = 32
    #: offered load: requested VM-seconds over available node-seconds
    load: float = 1.2
    mean_duration: float = 7200.0
    #: log-normal shape of the durations
    sigma: float = 1.0
    max_duration: float = 36 * 3600.0
    local: float = 1 / 3
    memory: int = 1024
    cpu: int = 1000


def mean_vms(nodes: int) -> float:
    return sum(min(v, nodes) * p for v, p in SIZES)


def lublin_like(mix: Mix, seed: int = 0) -> list[Request]:
    rng = Random(seed)
    mu = log(mix.mean_duration) - mix.sigma**2 / 2  # so the mean is mean_duration
    # requested VM-seconds per second of arrivals = load * nodes
    rate = mix.load * mix.nodes / (mean_vms(mix.nodes) * mix.mean_duration)
    sizes, weights = zip(*SIZES, strict=True)
    t = 0.0
    out = []
    for i in range(mix.requests):
        t += rng.expovariate(rate)
        vms = min(rng.choices(sizes, weights)[0], mix.nodes)
        duration = min(mix.max_duration, round(exp(rng.gauss(mu, mix.sigma))))
        duration = max(60.0, float(duration))
        arrival = round(t, 3)
        if rng.random() < mix.local:
            kind, origin, deadline = LeaseType.DEADLINE_NON_PREEMPTABLE, Origin.LOCAL, None
        else:
            kind, origin = rng.choice(EXTERNAL_TYPES), Origin.EXTERNAL
            deadline = None
            if kind in (LeaseType.DEADLINE_MIGRATABLE, LeaseType.DEADLINE_NON_PREEMPTABLE):
                deadline = round(arrival + duration * rng.uniform(2, 5), 3)
        out.append(Request(
            name=f"r{i:05d}", type=kind, vms=vms, shape=Shape(mix.cpu, mix.memory),
            duration=duration, submitted=arrival, origin=origin, deadline=deadline,
        ))
    return out
