"""Leases of mixed VM shapes for shared pools of multi-core nodes (issue 20's scale
benchmark): each lease 1-64 VMs of 1-16 cores with memory proportional to cores.

* VMs and cores per VM: ``floor(2^u)``, ``u`` uniform on ``[0, log2(max + 1))``
  (log-uniform: small leases are common, large ones present);
* memory: ``memory_per_core`` MiB per core (4 GiB by default);
* requested time: log-uniform on ``[min_duration, max_duration]`` seconds, whole
  seconds; the run time a uniform fraction ``[min_runtime, 1]`` of it (early ends
  make a conservative plan compress, as real traces do);
* arrivals: a Poisson process whose rate gives the ``load`` asked for on a pool of
  ``cores`` cores: mean inter-arrival = E[VMs] E[cores] E[run time] / (load x cores),
  the expectations of the distributions above (the three are drawn independently).
  :func:`offered_load` measures what a drawn trace offers.

All leases are best-effort (``BestEffortSuspendable``, as SWF traces become) and
external. Drawn with numpy's PCG64 from ``seed``: the same seed, the same leases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from leasehold.core.model import LeaseType, Request, Shape


@dataclass(frozen=True, slots=True)
class MixedShapes:
    max_vms: int = 64
    max_cores: int = 16
    memory_per_core: int = 4096  # MiB
    min_duration: float = 300.0
    max_duration: float = 4 * 3600.0
    min_runtime: float = 0.3
    load: float = 0.9
    #: the pool the load is offered to: 1,000 nodes of 32 cores
    cores: int = 32_000


def _log_uniform_int_mean(top: int) -> float:
    """E[floor(2^u)], u uniform on [0, log2(top + 1)): P(k) = log2((k+1)/k) / log2(top+1)."""
    span = math.log2(top + 1)
    return sum(k * math.log2((k + 1) / k) for k in range(1, top + 1)) / span


def mean_interarrival(model: MixedShapes) -> float:
    """Seconds between arrivals for the model's offered load (see the module doc)."""
    lo, hi = model.min_duration, model.max_duration
    duration = (hi - lo) / math.log(hi / lo)  # mean of a log-uniform
    runtime = duration * (1 + model.min_runtime) / 2
    work = _log_uniform_int_mean(model.max_vms) * _log_uniform_int_mean(model.max_cores) * runtime
    return work / (model.load * model.cores)


def generate(count: int, seed: int, model: MixedShapes = MixedShapes()) -> list[Request]:
    """``count`` leases, in submission order (the first at time 0)."""
    rng = np.random.default_rng(seed)
    vms = np.floor(2 ** rng.uniform(0, math.log2(model.max_vms + 1), count)).astype(int)
    cores = np.floor(2 ** rng.uniform(0, math.log2(model.max_cores + 1), count)).astype(int)
    duration = np.round(np.exp(rng.uniform(math.log(model.min_duration),
                                           math.log(model.max_duration), count)))
    runtime = np.maximum(1.0, np.round(duration * rng.uniform(model.min_runtime, 1.0, count)))
    gaps = rng.exponential(mean_interarrival(model), count)
    gaps[0] = 0.0
    submitted = np.round(np.cumsum(gaps))
    return [
        Request(name=f"m{i:06d}", type=LeaseType.BEST_EFFORT_SUSPENDABLE,
                vms=int(vms[i]), shape=Shape(int(cores[i]) * 1000,
                                             int(cores[i]) * model.memory_per_core),
                duration=float(duration[i]), submitted=float(submitted[i]),
                runtime=float(runtime[i]))
        for i in range(count)
    ]


def offered_load(requests: list[Request], cores: int) -> float:
    """The trace's work (VM cores x run time) over ``cores`` x its span of arrivals."""
    work = sum(r.vms * r.shape.cpu / 1000 * r.actual_runtime for r in requests)
    span = requests[-1].submitted - requests[0].submitted
    return work / (cores * span) if span > 0 else math.inf
