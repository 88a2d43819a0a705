"""Kueue's scalability baseline in leasehold's simulator: per class mean time to start,
wall and utilization per backfilling mode, beside Kueue's own figures.

The workload and Kueue's figures: leasehold_emulator.workloads.kueue_baseline (shared
with bench_kueue_baseline.py, which runs it through the operator on the emulated
cluster in real time). 15,000 workloads in 30 queues at the rates of Kueue's
``configs/baseline/generator.yaml``, each one lease of one VM, on 600 CPU read three
ways (``--layout``): ``nodes`` 30 nodes of 20 CPU (the operator benchmark's pool),
``cohorts`` 5 pools of one 120-CPU node, each queue confined to its cohort's (Kueue's
quota structure: nominal 20 and borrowing up to 100 within a cohort of 6 queues),
``pooled`` one node of 600 CPU.

What is compared: the simulator starts a lease the instant the core decides, so its
figures are those of the scheduling policy alone; Kueue's include its scheduler's
throughput (one admission cycle after another under a steady stream of creates) and
its priorities (large 200, medium 100, small 50), which leasehold does not have.
Kueue's wall is its runner command's; here it is the generator's start (0) to the
last end. Usage: CPU-seconds run over 600 CPU x the wall (Kueue's: over the cluster
queues' first to last event).

    python benchmarks/bench_kueue_baseline_sim.py [--scale S] [--layout L ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import asdict
from pathlib import Path

from leasehold.core.model import Backfilling, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.kueue_baseline import (
    CLASSES,
    KUEUE,
    KUEUE_LIMITS,
    KUEUE_WITHOUT_HASHING,
    LAYOUTS,
    figures,
    pools,
    requests,
)

MODES = (Backfilling.NONE, Backfilling.EASY, Backfilling.CONSERVATIVE)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0,
                    help="share of each set's count (default: 1, the 15,000)")
    ap.add_argument("--layout", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    print(f"Kueue baseline in the leasehold simulator, scale {args.scale}; machine"
          f" {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    head = "".join(f" {c.name + ' mean (p99)':>20}" for c in CLASSES)
    print(f"{'layout':<8} {'mode':<13} {'wall':>7} {'usage':>6}{head} {'sim CPU s':>9}")
    print(f"{'Kueue':<8} {'(rangespec)':<13} {KUEUE['wall']:>6.1f}s {KUEUE['usage']:>5.1f}%"
          + "".join(f" {KUEUE[c.name]:>19.1f}s" for c in CLASSES)
          + f"   limits: wall {KUEUE_LIMITS['wall']:.0f} s, usage >= {KUEUE_LIMITS['usage']:.0f}%,"
          + "".join(f" {c.name} {KUEUE_LIMITS[c.name]:.0f} s" for c in CLASSES)
          + f"; large {KUEUE_WITHOUT_HASHING['large']} s and usage"
          f" {KUEUE_WITHOUT_HASHING['usage']}% without SchedulingEquivalenceHashing")
    rows = []
    for layout in args.layout:
        reqs = requests(args.scale, layout)
        for mode in MODES:
            t0 = time.process_time()
            result = simulate(pools(layout), SchedulerConfig(backfilling=mode), reqs,
                              keep_actions=False)
            cpu = time.process_time() - t0
            got = figures(result.scheduler.leases())
            rows.append({"layout": layout, "backfilling": str(mode), "leases": len(reqs),
                         "simulate_cpu": cpu, **asdict(got)})
            cells = "".join(f" {got.mean_start[c.name]:>10.2f}s ({got.p99_start[c.name]:>5.1f}s)"
                            for c in CLASSES)
            print(f"{layout:<8} {mode!s:<13} {got.wall:>6.1f}s {got.usage:>5.1f}%{cells}"
                  f" {cpu:>9.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"scale": args.scale, "runs": rows}, indent=1))


if __name__ == "__main__":
    main()
