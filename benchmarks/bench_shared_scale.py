"""CPU per lease of a shared pool at scale (issue 20): 1,000 nodes of 32 cores and
128 GiB in one shared pool, leases of mixed shapes (1-64 VMs of 1-16 cores, 4 GiB per
core; :mod:`leasehold_emulator.workloads.shapes`) at offered load 0.9, best-effort,
under EASY and conservative backfilling.

One trace is drawn for the largest count; each smaller count runs its first leases,
so that the counts differ in length only, not in draws. Each run (a lease count and
a backfilling mode) is a child process of its own: its CPU seconds are those of
``simulate`` alone (``time.process_time`` around it, the trace drawn before), its
peak memory the child's ``ru_maxrss``. The growth of CPU with the lease count is the
least-squares slope of log CPU on log leases over the counts run (1: linear).

    python benchmarks/bench_shared_scale.py [--leases 10000 25000 50000]
                                            [--nodes 1000] [--seed 1]
                                            [--modes easy conservative]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time

from leasehold.core.model import Backfilling, Phase, PoolSpec, SchedulerConfig
from leasehold.core.view import LeaseView
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.shapes import MixedShapes, generate, offered_load

CORES, MEMORY = 32, 128 * 1024  # per node: cores, MiB


def pool(nodes: int) -> PoolSpec:
    return PoolSpec("shared", nodes, CORES * 1000, MEMORY)


def run(leases: int, nodes: int, mode: str, seed: int, of: int) -> dict[str, float]:
    """One simulation of the first ``leases`` of ``of``, in this process: what the
    parent prints."""
    requests = generate(of, seed, MixedShapes(cores=nodes * CORES))[:leases]
    cfg = SchedulerConfig(policy="nop", backfilling=Backfilling(mode))
    t0 = time.process_time()
    result = simulate([pool(nodes)], cfg, requests, keep_actions=False)
    cpu = time.process_time() - t0
    states: list[LeaseView] = result.scheduler.leases()
    done = [st for st in states if st.phase == Phase.COMPLETED]
    waits = [st.first_start - st.request.submitted for st in done
             if st.first_start is not None]
    return {
        "cpu": cpu,
        "events": result.events,
        "done": len(done),
        "leases": len(states),
        "wait_min": sum(waits) / len(waits) / 60 if waits else math.nan,
        "load": offered_load(requests, nodes * CORES),
        "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def child(leases: int, nodes: int, mode: str, seed: int, of: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--leases", str(leases), str(of),
         "--nodes", str(nodes), "--modes", mode, "--seed", str(seed)],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log y on log x."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((x - mx) ** 2 for x in lx)
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / den if den else math.nan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leases", type=int, nargs="+", default=[10_000, 25_000, 50_000])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--modes", nargs="+", choices=("easy", "conservative"),
                    default=["easy", "conservative"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run(args.leases[0], args.nodes, args.modes[0], args.seed,
                             args.leases[-1])))
        return
    print(f"{datetime.date.today().isoformat()}; {platform.platform()};"
          f" {platform.python_implementation()} {platform.python_version()};"
          f" os.cpu_count()={os.cpu_count()}; {args.nodes} nodes of {CORES} cores and"
          f" {MEMORY // 1024} GiB, seed {args.seed}")
    print("\n| mode | leases | offered load | CPU s | CPU ms per lease | events | done |"
          " mean wait min | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in args.modes:
        cpus = []
        for n in args.leases:
            r = child(n, args.nodes, mode, args.seed, max(args.leases))
            cpus.append(r["cpu"])
            print(f"| {mode} | {n} | {r['load']:.3f} | {r['cpu']:.1f} |"
                  f" {1000 * r['cpu'] / n:.2f} | {r['events']} | {r['done']} |"
                  f" {r['wait_min']:.1f} | {r['maxrss_mib']:.0f} |", flush=True)
        if len(args.leases) > 1:
            print(f"| {mode}: log-log slope of CPU on leases | {slope(args.leases, cpus):.2f}"
                  " | | | | | | | |", flush=True)


if __name__ == "__main__":
    main()
