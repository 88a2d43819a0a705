"""CPU time of the core with pool speeds (issue 21 item 4): what dividing run time by
a pool's speed costs a simulation.

The workload of the golden ``papers-exclusive`` cases: Lublin99's ``papers`` preset,
3,000 jobs, typed by the default mix (a third local), seed 1, on 32 exclusive nodes,
conservative backfilling, policies ``moml`` and ``mlip``; then the same jobs on two
pools of 16 nodes of speeds 1.0 and 1.5. Prints the best CPU seconds of each run.
To compare with a tree from before speeds, run it with that tree's sources first on
the path (``PYTHONPATH=<tree>/operator:<tree>/emulator``; the two-pool runs then
need ``PoolSpec.speed``, which fdb68ee has).

    python benchmarks/bench_pool_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import time

from leasehold.core.model import PoolSpec, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.lublin99 import PRESETS, generate
from leasehold_emulator.workloads.mix import TypeMix, requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    reqs = requests(generate(3000, 1, PRESETS["papers"]), TypeMix(), 1)
    # the papers' jobs fit 32 nodes: on pools of 16, the larger are left to be refused
    setups = {
        "32 nodes, speed 1": [PoolSpec("rp", 32, 1000, 1024, exclusive=True)],
        "2 x 16 nodes, speeds 1, 1.5": [PoolSpec("a", 16, 1000, 1024, exclusive=True),
                                        PoolSpec("b", 16, 1000, 1024, exclusive=True,
                                                 speed=1.5)],
    }
    for name, pools in setups.items():
        for policy in ("moml", "mlip"):
            best = float("inf")
            for _ in range(args.repeat):
                t = time.process_time()
                simulate(pools, SchedulerConfig(policy=policy), reqs, keep_actions=False)
                best = min(best, time.process_time() - t)
            print(f"{name:28} {policy:5} {best:.3f} CPU s")


if __name__ == "__main__":
    main()
