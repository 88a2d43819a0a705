"""The cost of the utility mode's engine (docs/volatile.md): CPU seconds per 1,000
simulated epochs with ``--jobs`` jobs in the round-robin queue (002 §V-A's size:
threshold 500, 100 private nodes, hazard 0.3 per 10-s epoch, capacity N(0.8, 0.2)
clipped to [0.3, 1]).

Every job arrives at 0 and is longer than the run, so the queue holds all of them
for the ``--epochs`` epochs. Per scheme (rr, rrr, rrr-k with ``--replicas``), in one
process: the CPU seconds (``process_time``) of the core alone (EpochScheduler.begin
and .end), of the draws (PublicDraws), and of both, each per 1,000 epochs, and the
ratio of each scheme's total to rr's. Best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import platform
import time

from leasehold.core.model import UTILITY_SCHEME_NAMES, Volatility, utility_scheme
from leasehold.core.utility import EpochScheduler, Job, Settings
from leasehold_emulator.sim.utility import PublicDraws

LAW = Volatility(failure_rate=0.3, recovery=120.0, epoch=10.0, capacity_mean=0.8,
                 capacity_sigma=0.2, capacity_min=0.3, capacity_max=1.0)


def run(scheme: str, jobs: int, epochs: int, private: int, replicas: int,
        seed: int) -> tuple[float, float]:
    """CPU seconds of the core and of the draws over ``epochs`` epochs."""
    settings = Settings(scheme=utility_scheme(scheme),
                        private_nodes=tuple(f"d-{i}" for i in range(private)),
                        public_pool="pub", epoch=LAW.epoch, window=100.0, threshold=jobs,
                        service_ratio=0.8, replicas=replicas, migration=1.0)
    work = 10.0 * epochs * 10  # never completes within the run
    arrivals = [Job(f"j{i}", 0.0, work) for i in range(jobs)]
    sched, draws = EpochScheduler(settings), PublicDraws(LAW, seed)
    core = drawn = 0.0
    for epoch in range(epochs):
        t0 = time.process_time()
        plan = sched.begin(epoch, arrivals if epoch == 0 else [])
        t1 = time.process_time()
        fates = draws(plan.public_nodes)
        t2 = time.process_time()
        sched.end(fates)
        t3 = time.process_time()
        core += (t1 - t0) + (t3 - t2)
        drawn += t2 - t1
    assert len(sched.queue) == jobs
    return core, drawn


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=1000)
    ap.add_argument("--private", type=int, default=100)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(f"# {platform.processor() or platform.machine()}, Python"
          f" {platform.python_version()}; {a.jobs} jobs, {a.private} private nodes,"
          f" {a.epochs} epochs, rrr-k with {a.replicas} replicas; best of {a.repeat}")
    print(f"{'scheme':8} {'core s/1k':>10} {'draws s/1k':>11} {'total s/1k':>11}"
          f" {'vs rr':>6}")
    base = None
    for scheme in UTILITY_SCHEME_NAMES:
        best = min((run(scheme, a.jobs, a.epochs, a.private, a.replicas, a.seed)
                    for _ in range(a.repeat)), key=sum)
        core, drawn = (x * 1000 / a.epochs for x in best)
        total = core + drawn
        base = base or total
        print(f"{scheme:8} {core:10.3f} {drawn:11.3f} {total:11.3f} {total / base:6.2f}")


if __name__ == "__main__":
    main()
