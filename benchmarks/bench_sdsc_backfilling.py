"""CPU time of simulating the SDSC Blue 30-day trace (5,108 jobs, 144 nodes).

Prints, per backfilling mode, the best CPU seconds over several repetitions, jobs
per CPU-second, the mean wait, and the ratio to a bare textbook EASY loop run in the
same process (a scheduler that knows nothing of leases: the floor to aim at).
CPU time, not wall time, and a same-process baseline, because machines are shared.

    python benchmarks/bench_sdsc_backfilling.py [--repeat N] [--trace PATH] [--nodes N]
                                                [--shared]

Also the overloaded Lublin99 trace of the simulator issue:
``--trace benchmarks/data/lublin99-256n-10k.swf --nodes 256``.

``--shared`` also runs the trace once on a shared pool (per-node cpu/memory
packing) of the same 144 one-core nodes: the general path, much slower.
"""

from __future__ import annotations

import argparse
import heapq
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from leasehold.core.model import Backfilling, PoolSpec, Request, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.swf import swf_requests

T = TypeVar("T")
TRACE = Path(__file__).resolve().parents[2] / "shared/data/SDSC-BLUE-haizea-30days.swf.gz"
NODES = 144


def bare_easy(jobs: list[Request], nodes: int) -> float:
    """Textbook EASY on processor counts, all events of an instant together.
    Returns the mean wait in seconds."""
    arrivals = sorted(jobs, key=lambda r: r.submitted)
    running: list[tuple[float, float, int]] = []  # (actual end, requested end, size)
    queue: list[Request] = []
    free, i, waits = nodes, 0, 0.0
    n = len(arrivals)
    while i < n or running:
        t = min(arrivals[i].submitted if i < n else float("inf"),
                running[0][0] if running else float("inf"))
        while running and running[0][0] == t:
            free += heapq.heappop(running)[2]
        while i < n and arrivals[i].submitted == t:
            queue.append(arrivals[i])
            i += 1
        while queue and queue[0].vms <= free:
            job = queue.pop(0)
            free -= job.vms
            waits += t - job.submitted
            heapq.heappush(running, (t + job.actual_runtime, t + job.duration, job.vms))
        if not queue:
            continue
        head = queue[0]
        avail, shadow = free, t
        for _, req_end, size in sorted(running, key=lambda x: x[1]):
            avail += size
            shadow = req_end
            if avail >= head.vms:
                break
        extra = avail - head.vms
        for job in list(queue[1:]):
            if job.vms > free:
                continue
            if t + job.duration <= shadow or job.vms <= extra:
                if job.vms <= extra and t + job.duration > shadow:
                    extra -= job.vms
                queue.remove(job)
                free -= job.vms
                waits += t - job.submitted
                heapq.heappush(running, (t + job.actual_runtime, t + job.duration, job.vms))
    return waits / len(jobs)


def best_cpu(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    assert out is not None
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace", type=Path, default=TRACE)
    ap.add_argument("--nodes", type=int, default=NODES, help=f"default {NODES}")
    ap.add_argument("--shared", action="store_true", help="also time a shared pool (slow)")
    args = ap.parse_args()
    jobs = swf_requests(args.trace)
    pool = PoolSpec("blue", args.nodes, 1000, 1024, exclusive=True)
    print(f"{platform.node()} {platform.machine()} {platform.python_implementation()} "
          f"{platform.python_version()}; {len(jobs)} jobs, best of {args.repeat}")
    base_cpu, base_wait = best_cpu(lambda: bare_easy(jobs, args.nodes), args.repeat)
    print(f"{'scheduler':<26}{'CPU s':>8}{'jobs/s':>10}{'mean wait':>11}{'x bare':>8}")
    print(f"{'bare EASY loop':<26}{base_cpu:>8.3f}{len(jobs) / base_cpu:>10.0f}"
          f"{base_wait / 60:>10.2f}m{1:>8.1f}")
    for mode in ("none", "easy", "conservative"):
        cfg = SchedulerConfig(backfilling=Backfilling(mode))
        cpu, result = best_cpu(lambda cfg=cfg: simulate([pool], cfg, jobs, keep_actions=False),
                               args.repeat)
        leases = result.scheduler.leases()
        wait = sum(s.first_start - s.request.submitted for s in leases) / len(jobs)
        print(f"{'leasehold ' + mode:<26}{cpu:>8.3f}{len(jobs) / cpu:>10.0f}"
              f"{wait / 60:>10.2f}m{cpu / base_cpu:>8.1f}")
    if args.shared:
        shared = PoolSpec("blue", args.nodes, 1000, 1024, exclusive=False)
        for mode in ("easy", "conservative"):
            cfg = SchedulerConfig(backfilling=Backfilling(mode))
            cpu, result = best_cpu(
                lambda cfg=cfg: simulate([shared], cfg, jobs, keep_actions=False), 1)
            leases = result.scheduler.leases()
            wait = sum(s.first_start - s.request.submitted for s in leases) / len(jobs)
            print(f"{'leasehold ' + mode + ' (shared)':<26}{cpu:>8.3f}{len(jobs) / cpu:>10.0f}"
                  f"{wait / 60:>10.2f}m{cpu / base_cpu:>8.1f}")


if __name__ == "__main__":
    main()
