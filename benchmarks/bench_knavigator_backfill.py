"""NVIDIA knavigator's backfill test 1.2 ("greedy backfill efficiency") in the simulator:
turnaround and CPU occupancy per backfilling mode, on knavigator's 10, 35 and 100 nodes.

The workload (leasehold_emulator.workloads.knavigator): per node of 100 CPU, 2 jobs of
60 CPU for 4 min, 8 of 30 CPU for 60 s and 24 of 10 CPU for 20 s, all submitted at
once (A's, then B's, then C's); the best schedule keeps every CPU busy for 480 s.
knavigator's figures are the turnaround (first pod scheduled to last pod completed)
and the average CPU occupancy over it: CPU-seconds run / (CPU x turnaround).

Prints, per size and mode: turnaround, occupancy (and its steps over time, as
knavigator's dashboard plots it), mean wait per job kind, and the CPU
seconds of the simulation in this process (scenario parsing apart); with 100 nodes,
for the committed scenario, also the CPU (user + sys) of a whole `leasehold simulate` process.
CPU time, not wall, because the machine is shared; the figures of one run vary by a
few percent with the machine's load.

    python benchmarks/bench_knavigator_backfill.py [--nodes N ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from statistics import fmean
from typing import Any

from leasehold.api.scenario import parse_scenario
from leasehold.core.model import Backfilling
from leasehold.core.view import LeaseView
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.knavigator import (
    KINDS,
    NODE_CPU,
    SIZES,
    backfill_performance_yaml,
    work_seconds,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "scenarios" / "knavigator-backfill-performance.yaml"
MODES = (Backfilling.NONE, Backfilling.EASY, Backfilling.CONSERVATIVE)


def occupancy_steps(leases: list[LeaseView], cpu: float) -> list[tuple[float, float, float]]:
    """(from, to, share of ``cpu`` in use) over the run, merging equal neighbours:
    what knavigator's occupancy gauge shows over time. Every lease runs once, from its
    first start to its end (no preemption in this workload)."""
    delta: dict[float, float] = {}
    for s in leases:
        if s.first_start is not None and s.end is not None:
            c = s.request.vms * s.request.shape.cpu / 1000
            delta[s.first_start] = delta.get(s.first_start, 0.0) + c
            delta[s.end] = delta.get(s.end, 0.0) - c
    out: list[tuple[float, float, float]] = []
    used = 0.0
    times = sorted(delta)
    for a, b in itertools.pairwise(times):
        used += delta[a]
        if out and out[-1][2] == used / cpu:
            out[-1] = (out[-1][0], b, out[-1][2])
        else:
            out.append((a, b, used / cpu))
    return out


def one(nodes: int, mode: Backfilling) -> dict[str, Any]:
    t0 = time.process_time()
    sc = parse_scenario(backfill_performance_yaml(nodes))
    parsed = time.process_time()
    result = simulate(sc.pool_specs(), sc.scheduler_config(backfilling=mode), sc.requests(),
                      keep_actions=False)
    cpu = time.process_time() - parsed
    leases = result.scheduler.leases()
    first = min(s.first_start for s in leases if s.first_start is not None)
    last = max(s.end for s in leases if s.end is not None)
    used = sum(s.request.shape.cpu / 1000 * s.ran for s in leases)
    assert round(used) == work_seconds(nodes), "every job runs its whole duration"
    waits = {k.name: fmean(s.first_start - s.request.submitted for s in leases
                           if s.name.startswith(k.name + "-") and s.first_start is not None)
             for k in KINDS}
    return {"nodes": nodes, "backfilling": str(mode), "leases": len(leases),
            "turnaround": last - first, "occupancy": used / (nodes * NODE_CPU * (last - first)),
            "mean_wait": waits, "over_time": occupancy_steps(leases, nodes * NODE_CPU),
            "parse_cpu": parsed - t0, "simulate_cpu": cpu}


def whole_process(mode: Backfilling) -> float:
    """CPU (user + sys) of `leasehold simulate SCENARIO --backfilling MODE` in a child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-m", "leasehold.cli", "simulate", str(SCENARIO),
                    "--backfilling", str(mode), "-o", "json"], check=True,
                   stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=list(SIZES),
                    help="cluster sizes (default: knavigator's 10 35 100)")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    print(f"knavigator backfill test 1.2 (leasehold simulator, shared pool); machine"
          f" {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"{'nodes':>5} {'jobs':>5} {'mode':<13} {'turnaround':>10} {'occupancy':>9}"
          f" {'wait A':>7} {'wait B':>7} {'wait C':>7} {'sim CPU s':>9} {'parse CPU s':>11}")
    rows = []
    for nodes in args.nodes:
        for mode in MODES:
            r = one(nodes, mode)
            rows.append(r)
            w = r["mean_wait"]
            print(f"{nodes:>5} {r['leases']:>5} {r['backfilling']:<13} {r['turnaround']:>9.0f}s"
                  f" {100 * r['occupancy']:>8.1f}% {w['a']:>6.0f}s {w['b']:>6.0f}s"
                  f" {w['c']:>6.0f}s {r['simulate_cpu']:>9.2f} {r['parse_cpu']:>11.2f}",
                  flush=True)
            print("      occupancy over time: " + ", ".join(
                f"{a:.0f}-{b:.0f} s {100 * u:.0f}%" for a, b, u in r["over_time"]))
    # the committed scenario is the 100-node one
    processes = {str(m): whole_process(m) for m in MODES} if 100 in args.nodes else {}
    if processes:
        print(f"`leasehold simulate {SCENARIO.relative_to(ROOT)}`, whole process CPU"
              " (user + sys):" + "".join(f" {m} {s:.2f} s;" for m, s in processes.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": rows, "process_cpu": processes},
                                              indent=1))


if __name__ == "__main__":
    main()
