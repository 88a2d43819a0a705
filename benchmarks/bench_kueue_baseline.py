"""Kueue's scalability baseline, through leasehold's operator on the emulated cluster
(the controller issue's report; a comparison of shape, not a target).

Kueue's scheduler performance test: 15,000 workloads in 30 ClusterQueues of nominal
quota 20 CPU (600 CPU in all), at the rates of its ``generator.yaml``; the workload
description and Kueue's figures are in ``leasehold_emulator.workloads.kueue_baseline``
(shared with the simulator's version, bench_kueue_baseline_sim.py).

Here: 30 namespaces of external origin, 15,000 Leases of one VM each (small 1 cpu
for 0.2 s, medium 5 cpu for 0.5 s, large 20 cpu for 1 s, best-effort suspendable)
created at the same times (Kueue's: workload i of a set at (i + 1) x its
interval), on one emulated pool of 30 nodes of 20 cpu (600 CPU), at
time scale 1 (emulated seconds are real ones). leasehold has no quotas, cohorts or
priorities: every Lease is one tenant's best-effort request, scheduled first come
first served with backfilling. It prints, per class, the time from create to a
decided phase, to the core's start (Kueue's admission) and to the pods Running;
the wall time from the first create to the last Lease ended; the pool's usage
(CPU-seconds run over 600 x wall); the operator's API writes per Lease; both
processes' CPU and memory; and how far the creates fell behind their schedule
(where that is large, the emulated API server, not the operator, is the limit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from pathlib import Path
from statistics import mean
from typing import Any

from emulated_run import Cluster, Timeline, create, ours, pool, quantile, until
from leasehold_emulator.workloads.kueue_baseline import (
    CLASSES,
    KUEUE,
    KUEUE_LIMITS,
    MEMORY,
    NOMINAL_QUOTA,
    QUEUES,
    workloads,
)


def plan(scale: float) -> list[tuple[float, str, dict[str, Any]]]:
    """(seconds after the start, class, manifest) of every Lease, in time order;
    ``scale`` < 1 takes that share of each set's count (a smaller run)."""
    return [(w.at, w.kind.name, {
        "apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
        "metadata": {"name": w.name, "namespace": w.namespace},
        "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": f"{w.kind.runtime}s",
                 "resources": {"cpu": str(w.kind.cpu), "memory": f"{MEMORY}Mi"}}})
        for w in workloads(scale)]


async def main(args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.timeout
    work = plan(args.scale)
    cluster = Cluster([pool("kueue", QUEUES, NOMINAL_QUOTA, "80Gi")], 1.0, keep=args.keep)
    watching: asyncio.Task[None] | None = None
    try:
        await cluster.namespaces({f"cq-{q:02d}": "external" for q in range(QUEUES)})
        await cluster.start_operator("--policy", args.policy)
        timeline = Timeline()
        watching = asyncio.create_task(timeline.watch(cluster.client))
        use0, writes0 = cluster.usage(), await cluster.writes()
        print(f"{len(work)} Leases in {QUEUES} namespaces on {QUEUES} nodes x 20 cpu,"
              f" policy {args.policy}, time scale 1", flush=True)
        gate = asyncio.Semaphore(args.concurrency)
        behind: list[float] = []
        t0 = time.monotonic()
        wall0 = time.time()

        async def one(at: float, manifest: dict[str, Any]) -> None:
            async with gate:
                behind.append(time.monotonic() - t0 - at)
                await create(cluster.client, manifest, timeline)
        tasks = []
        for at, _, manifest in work:
            await asyncio.sleep(max(t0 + at - time.monotonic(), 0))
            tasks.append(asyncio.create_task(one(at, manifest)))
        await asyncio.gather(*tasks)
        created = time.monotonic() - t0
        keys = [f"{m['metadata']['namespace']}/{m['metadata']['name']}" for _, _, m in work]

        async def ended() -> tuple[int, int]:
            return sum(timeline.phase.get(k) in ("Completed", "Cancelled", "Rejected",
                                                 "Failed") for k in keys), len(keys)
        await until(ended, deadline, "ended")
        wall = time.time() - wall0
        use, writes = cluster.usage(), await cluster.writes()
        classes = {k: c for k, (_, c, _) in zip(keys, work, strict=True)}
        figures = report(work, keys, classes, timeline, wall, created, behind)
        mine = sum(ours(writes, writes0).values())
        every = sum(writes.values()) - sum(writes0.values())
        print(f"  API writes: the operator's {mine} ({mine / len(keys):.2f} per Lease),"
              f" all clients' {every / wall:.0f}/s")
        print(f"  operator: CPU {use['operator_cpu'] - use0['operator_cpu']:.1f} s, RSS peak"
              f" {use['operator_peak_rss']:.0f} MB; emulated cluster: CPU"
              f" {use['cluster_cpu'] - use0['cluster_cpu']:.1f} s, RSS peak"
              f" {use['cluster_peak_rss']:.0f} MB (of {wall:.0f} s on"
              f" {os.cpu_count()} cores)")
        print(f"  machine: {platform.node()}, {os.cpu_count()} cores, Python"
              f" {platform.python_version()}")
        figures.update({"writes_per_lease": mine / len(keys), "writes_per_second": every / wall,
                        "operator_cpu": use["operator_cpu"] - use0["operator_cpu"],
                        "cluster_cpu": use["cluster_cpu"] - use0["cluster_cpu"],
                        "operator_peak_rss_mb": use["operator_peak_rss"],
                        "cluster_peak_rss_mb": use["cluster_peak_rss"]})
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
    finally:
        if watching is not None:
            watching.cancel()
        await cluster.close()


def report(work: list[tuple[float, str, dict[str, Any]]], keys: list[str],
           classes: dict[str, str], timeline: Timeline, wall: float, created: float,
           behind: list[float]) -> dict[str, Any]:
    """The per-class table beside Kueue's figures, printed; the figures, returned."""
    cpu_seconds = sum(float(m["spec"]["resources"]["cpu"]) * float(m["spec"]["duration"][:-1])
                      for _, _, m in work)
    usage = 100 * cpu_seconds / (QUEUES * NOMINAL_QUOTA * wall)
    print(f"  creates: the last {created:.1f} s after the first (scheduled"
          f" {work[-1][0]:.1f} s); behind schedule p50 {quantile(behind, 0.5):.2f} s, max"
          f" {max(behind):.2f} s")
    print(f"  wall, first create to all ended: {wall:.1f} s (Kueue {KUEUE['wall']:.0f} s,"
          f" limit {KUEUE_LIMITS['wall']:.0f} s); pool usage {usage:.1f}% (Kueue's cluster"
          f" queues {KUEUE['usage']}%)")
    print(f"  {'class':8} {'n':>6} {'to decided':>22} {'to started (admitted)':>24}"
          f" {'to Running':>22} {'Kueue admission':>16}")
    out: dict[str, Any] = {"wall": wall, "usage_percent": usage, "classes": {}}
    for c in CLASSES:
        mine = [k for k in keys if classes[k] == c.name]

        def since(times: dict[str, float], mine: list[str] = mine) -> list[float]:
            return [times[k] - timeline.created[k] for k in mine
                    if k in times and k in timeline.created]
        row = {"decided": since(timeline.decided), "started": since(timeline.started),
               "running": since(timeline.running)}

        def cell(values: list[float]) -> str:
            return (f"mean {mean(values):6.1f} p99 {quantile(values, 0.99):6.1f}" if values
                    else "-")
        print(f"  {c.name:8} {len(mine):6d} {cell(row['decided']):>22}"
              f" {cell(row['started']):>24} {cell(row['running']):>22}"
              f" {KUEUE[c.name]:>14.1f} s")
        out["classes"][c.name] = {k: (mean(v) if v else None) for k, v in row.items()}
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="share of each set's count to create (default: 1, the 15,000)")
    parser.add_argument("--policy", default="moml")
    parser.add_argument("--concurrency", type=int, default=64,
                        help="creates in flight at most (default: 64)")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds for the whole run (default: 1800)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (logs, the cluster's data)")
    parser.add_argument("--json", help="also write the figures here")
    asyncio.run(main(parser.parse_args()))
