"""CPU time of a simulation whose pool is volatile (issue 23 item 1): what a volatile
pool's failures cost, against the same workload on the pool not volatile.

One exclusive pool of 100 nodes; ``--jobs`` best-effort suspendable jobs of one VM
(64 MiB) with Poisson arrivals (mean gap ``--gap`` s) and exponential work (mean
1,000 s, plus 10), seed 1; the pool not volatile, then failing at 0.05 per 10-s
epoch with 60-s recoveries, then at 002's 0.3 with 120-s recoveries. Prints per
run the CPU seconds, the core's steps, the node failures, the leases completed, the
run's end, the work lost and whether the guard stopped the failures.

    python benchmarks/bench_volatile.py [--jobs 1000] [--gap 100]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from leasehold.core.model import LeaseType, PoolSpec, Request, SchedulerConfig, Shape, Volatility
from leasehold_emulator.sim.engine import simulate


def workload(n: int, gap: float, seed: int = 1) -> list[Request]:
    gen = np.random.default_rng(seed)
    at = np.cumsum(gen.exponential(gap, n))
    work = gen.exponential(1000.0, n) + 10
    return [Request(name=f"j{i}", type=LeaseType.BEST_EFFORT_SUSPENDABLE, vms=1,
                    shape=Shape(1000, 64), duration=float(round(w, 3)),
                    submitted=float(round(t, 3)))
            for i, (t, w) in enumerate(zip(at, work, strict=True))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--gap", type=float, default=100.0)
    args = parser.parse_args()
    reqs = workload(args.jobs, args.gap)
    pool = PoolSpec("spot", 100, 1000, 1024, exclusive=True)
    for label, law in [("not volatile", None), ("0.05/epoch, 60 s", Volatility(0.05, 60)),
                       ("0.3/epoch, 120 s (002)", Volatility(0.3, 120))]:
        spec = replace(pool, volatile=law)
        t0 = time.process_time()
        result = simulate([spec], SchedulerConfig(), reqs, keep_actions=False, seed=1)
        cpu = time.process_time() - t0
        views = result.scheduler.leases()
        print(f"{label:24} cpu {cpu:7.2f}s  steps {result.events:7d}  failures "
              f"{sum(log.failures for log in result.failures):7d}  completed "
              f"{sum(v.phase.value == 'Completed' for v in views)}  end {result.end:9.0f}s  "
              f"lost work {sum(v.lost_to_failures for v in views):8.0f}s  "
              f"guard {result.failures_stopped}")


if __name__ == "__main__":
    main()
