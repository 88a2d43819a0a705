"""The core alone through the scale benchmark's local wave (`bench_operator.py`):
5,000 external Leases on a shared pool of 500 nodes of 4 cpu, and, once the pool
has run for a while, 40 local deadline Leases at one instant, each preempting among
the ~800 leases running. Prints the CPU seconds of the wave's decisions, against
those of deciding the 5,000 externals in the same process (a ratio: the machines
are shared), and each decision's candidates and exactness.

    python benchmarks/bench_local_wave.py [--at SECONDS] [--policy moml]

The operator's step waits for the core, so a slow wave here is pods not started
there (the scale benchmark's lag of 20-30 s, traced to 35 CPU s of exact sweeps
over 1,100-1,800 candidates)."""

from __future__ import annotations

import argparse
import time
from collections import Counter

from bench_operator import leases
from leasehold.api.clock import Clock
from leasehold.api.resources import lease_spec
from leasehold.core.model import Origin, PoolSpec, SchedulerConfig
from leasehold.core.scheduler import Scheduler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--at", type=float, default=2400.0,
                        help="emulated seconds after the externals when the wave comes"
                             " (default: 2400, the benchmark's ~20 s at time scale 120)")
    parser.add_argument("--policy", default="moml")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    every = leases(5000, 40, args.seed)
    core = Scheduler([PoolSpec("bench", 500, 4000, 16384)],
                     SchedulerConfig(policy=args.policy))
    clock = Clock()
    cpu = time.process_time()
    for m in every[:5000]:
        core.submit(lease_spec(m, Origin.EXTERNAL, 0.0, clock).to_request(), 0.0)
    core.advance(0.0)
    externals = time.process_time() - cpu
    core.advance(args.at)
    cpu = time.process_time()
    for m in every[5000:]:
        core.submit(lease_spec(m, Origin.LOCAL, args.at, clock).to_request(), args.at)
    core.advance(args.at)
    wave = time.process_time() - cpu
    decisions = core.decisions
    print(f"5,000 externals decided: {externals:.2f} CPU s")
    print(f"40 locals at {args.at:g} s: {wave:.2f} CPU s ({wave / externals:.2f}x the"
          f" externals), {len(decisions)} preemption decisions,"
          f" exact: {Counter(d.exact for d in decisions)[True]}")


if __name__ == "__main__":
    main()
