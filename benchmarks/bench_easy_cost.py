"""CPU time of EASY against conservative backfilling on Lublin99 traces (issue 20).

The traces of the issue: ``leasehold workload lublin99 --jobs N --seed 1`` (the C
program's model, jobs of 1-128 nodes) with submit times halved, on one exclusive pool
of 128 nodes; 10,000 jobs come out at an offered load of 0.91 and 100,000 at 0.80.
Both modes run in this process on the same jobs, alternating, the order reversed
every other repetition (the machine's speed drifts between minutes: a mode always run
second would see a different machine); prints the best CPU seconds of each, their
ratio (EASY ÷ conservative), the median and range of the ratio of each repetition's
pair, the mean waits, and a digest of each mode's schedule (every lease's start, end
and nodes: the same digest before and after a change says it planned the same).

    python benchmarks/bench_easy_cost.py [--jobs 10000 100000] [--repeat N]
                                         [--profile easy|conservative]

``--profile MODE`` runs MODE once more under cProfile on the largest trace and prints
the 25 functions of most cumulative time.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import hashlib
import os
import platform
import pstats
import statistics
import tempfile
import time
from pathlib import Path

from leasehold.core.model import Backfilling, PoolSpec, Request, SchedulerConfig
from leasehold_emulator.sim.engine import SimResult, simulate
from leasehold_emulator.workloads import lublin99
from leasehold_emulator.workloads.swf import swf_requests

NODES = 128
MODES = ("easy", "conservative")


def lublin_jobs(n: int, seed: int = 1) -> list[Request]:
    """``leasehold workload lublin99 --jobs n --seed seed``, read as ``leasehold swf``
    reads it, submit times halved."""
    model = lublin99.PRESETS["program"]
    text = lublin99.to_swf(lublin99.generate(n, seed, model), model)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lublin.swf"
        path.write_text(text)
        jobs = swf_requests(path)
    return [dataclasses.replace(r, submitted=r.submitted / 2) for r in jobs]


def offered_load(jobs: list[Request], nodes: int) -> float:
    work = sum(r.vms * r.actual_runtime for r in jobs)
    span = max(r.submitted for r in jobs) - min(r.submitted for r in jobs)
    return work / (nodes * span)


def run(jobs: list[Request], mode: str) -> SimResult:
    pool = PoolSpec("lublin", NODES, 1000, 1024, exclusive=True)
    cfg = SchedulerConfig(backfilling=Backfilling(mode))
    return simulate([pool], cfg, jobs, keep_actions=False)


def mean_wait_min(result: SimResult, n: int) -> float:
    leases = result.scheduler.leases()
    return sum(s.first_start - s.request.submitted for s in leases) / n / 60


def schedule_digest(result: SimResult) -> str:
    """sha256 (first 16 hex digits) of every lease's name, first start, end and nodes,
    in submission order: what a change that must not alter schedules keeps."""
    h = hashlib.sha256()
    for st in result.scheduler.leases():  # in submission order
        h.update(f"{st.name} {st.first_start!r} {st.end!r} {','.join(st.nodes)}\n".encode())
    return h.hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", choices=MODES)
    args = ap.parse_args()
    print(f"# {platform.python_implementation()} {platform.python_version()} "
          f"{platform.machine()}, {NODES} nodes, best of {args.repeat}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'jobs':>8}{'load':>6}{'EASY s':>9}{'cons. s':>9}{'EASY/cons.':>12}"
          f"{'median (range)':>22}{'EASY wait':>12}{'cons. wait':>12}"
          f"  digests EASY / cons.")
    jobs: list[Request] = []
    for n in args.jobs:
        jobs = lublin_jobs(n)
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        waits: dict[str, float] = {}
        digests: dict[str, str] = {}
        for r in range(args.repeat):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                t0 = time.process_time()
                result = run(jobs, mode)
                times[mode].append(time.process_time() - t0)
                waits[mode] = mean_wait_min(result, len(jobs))
                digest = schedule_digest(result)
                if digests.setdefault(mode, digest) != digest:
                    raise SystemExit(f"{mode}: the schedule differs between repetitions")
        best = {mode: min(ts) for mode, ts in times.items()}
        ratios = [e / c for e, c in zip(times["easy"], times["conservative"], strict=True)]
        spread = (f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-"
                  f"{max(ratios):.3f})")
        print(f"{n:>8}{offered_load(jobs, NODES):>6.2f}{best['easy']:>9.3f}"
              f"{best['conservative']:>9.3f}{best['easy'] / best['conservative']:>12.3f}"
              f"{spread:>22}{waits['easy']:>11.2f}m{waits['conservative']:>11.2f}m"
              f"  {digests['easy']} / {digests['conservative']}")
        for mode in MODES:
            print(f"#   {mode}: " + " ".join(f"{t:.3f}" for t in times[mode]))
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(run, jobs, args.profile)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
