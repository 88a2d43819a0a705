"""The side-by-side comparison leasehold exists for: every preemption policy on the
same workload, with what each costs the cluster and its users.

Workload: Lublin99's ``papers`` preset (3,000 requests in about two weeks, 4 VMs and
2 h on average; ``leasehold_emulator.workloads.lublin99``), typed by
``workloads.mix`` (a third local, the external ones spread evenly over the four
external types), on one exclusive pool of 32 one-core nodes with 1024 MB VMs and the
overhead defaults of 000 §7.2, conservative backfilling — the papers' setting.
``--load`` stretches or compresses the arrival times to another offered load. Each
policy runs the very same requests; the table gives, per
policy, the preemptions, the total overhead, the local and external rejection
rates, utilization (000 eq. 11), the best-effort makespan (eq. 13), how many
decisions chose a set and how many were exact, and the CPU time of the whole run.

    python benchmarks/compare_policies.py [--requests N] [--load L] [--local F]
                                          [--seeds S ...] [--backfilling MODE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from dataclasses import replace

from leasehold.core.model import POLICY_NAMES, Backfilling, PoolSpec, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.metrics import run_metrics
from leasehold_emulator.workloads.lublin99 import PAPERS, PAPERS_NODES, generate
from leasehold_emulator.workloads.mix import TypeMix, requests

POLICIES = POLICY_NAMES
COLUMNS = ("preemptions", "overhead h", "local rej %", "ext rej %", "util %",
           "BE makespan h", "decisions", "leases/dec", "overhead/dec s", "exact %", "CPU s")


def run(policy: str, pool: PoolSpec, requests: list, backfilling: str) -> dict[str, float]:
    cfg = SchedulerConfig(policy=policy, backfilling=Backfilling(backfilling))
    t0 = time.process_time()
    result = simulate([pool], cfg, requests)
    cpu = time.process_time() - t0
    m = run_metrics(result.scheduler.leases(), [pool])
    chose = [d for d in result.scheduler.decisions if d.chosen]
    return {
        "preemptions": m["preemptions"],
        "overhead h": m["overheadSeconds"] / 3600,
        "local rej %": 100 * m["localRejectionRate"],
        "ext rej %": 100 * m["externalRejectionRate"],
        "util %": 100 * m["utilization"],
        "BE makespan h": m["makespanBestEffort"] / 3600,
        "decisions": len(chose),
        # what a policy optimises, decision by decision (000 eq. 9, 10)
        "leases/dec": statistics.fmean(len(d.chosen) for d in chose) if chose else 0.0,
        "overhead/dec s": statistics.fmean(d.overhead_seconds for d in chose) if chose else 0.0,
        "exact %": 100 * statistics.fmean(d.exact for d in chose) if chose else 100.0,
        "CPU s": cpu,
    }


def offered_load(reqs: list) -> float:
    """Requested VM-seconds over the node-seconds until the last arrival."""
    return sum(r.vms * r.duration for r in reqs) / (PAPERS_NODES * reqs[-1].submitted)


def workload(n: int, seed: int, local: float, load: float | None) -> list:
    reqs = requests(generate(n, seed, PAPERS), TypeMix(local=local), seed)
    if load is None:
        return reqs
    stretch = offered_load(reqs) / load
    return [replace(r, submitted=r.submitted * stretch,
                    deadline=None if r.deadline is None
                    else r.submitted * stretch + (r.deadline - r.submitted)) for r in reqs]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--load", type=float,
                    help="offered load to stretch arrivals to (default: the preset's, about 2.6)")
    ap.add_argument("--local", type=float, default=1 / 3, help="share of local requests")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--backfilling", default="conservative")
    args = ap.parse_args()
    pool = PoolSpec("rp", PAPERS_NODES, 1000, 1024, exclusive=True)
    print(f"# {datetime.date.today()} {platform.machine()} {platform.python_version()} "
          f"cpus={os.cpu_count()}  {args.requests} requests, local {args.local:.0%}, seeds"
          f" {args.seeds}, {args.backfilling} backfilling\n")
    rows: dict[str, list[dict[str, float]]] = {p: [] for p in POLICIES}
    for seed in args.seeds:
        reqs = workload(args.requests, seed, args.local, args.load)
        load = offered_load(reqs)
        for policy in POLICIES:
            rows[policy].append(run(policy, pool, reqs, args.backfilling))
        print(f"  seed {seed}: offered load {load:.2f}, every policy done", flush=True)
    print("\n| policy | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    for policy in POLICIES:
        means = {c: statistics.fmean(r[c] for r in rows[policy]) for c in COLUMNS}
        cells = [f"{means[c]:.2f}" if c in ("overhead h", "BE makespan h", "leases/dec")
                 else f"{means[c]:.1f}" for c in COLUMNS]
        print(f"| {policy} | " + " | ".join(cells) + " |")
    print("\nmeans over seeds; overhead and makespan in hours")


if __name__ == "__main__":
    main()
