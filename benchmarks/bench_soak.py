"""The operator over a long, steady stream (the controller issue's soak benchmark):
10,000 Leases created at an even rate over 10 minutes on an emulated pool of 50
nodes; is the operator's cost flat in the number of Leases it has seen?

Leases of all types (5% local, which preempt), 1-2 VMs of 1 cpu, 2-9 emulated
minutes at time scale 60, so that the pool stays busy (~70%) without the queue
growing. As a batch user's cleanup would (or a TTL controller), each Lease is
deleted once it has ended, and the emulated API server's events expire after
``--event-ttl`` (60 s; kube-apiserver's is 1 h, longer than the run): what stays
constant is then what the cluster holds, and any growth is the operator's or the
API server's own.

Every minute it reads the operator's and the emulated cluster's CPU seconds and
resident memory from /proc, and prints a line. At the end: the operator's CPU in
the last minute against the first (target <= 1.2x), and the operator's and the
cluster's RSS at minute 10 against minute 3 (target <= 1.1x); and, as the scale
benchmark does, the lag from the core's start of a lease to its pods Running.

Beside the target, two figures tell more work from a slower machine (these are
shared, and their speed drifts from minute to minute): the operator's API writes
in each minute (its work), and the machine's speed: the median CPU milliseconds of
a fixed piece of memory-bound work (random reads in a heap of ~100 MB, as large
as the operator's and the cluster's), run once a second all minute long by a small
process beside them. A loop that fits the processor's cache, timed at each minute
mark, did not see the machine slow down when the operator and the cluster both
did. The operator's CPU per write, the probe's CPU, and the operator's CPU in the
probe's units, minute 10 against minute 1, are printed after the target's ratio;
they are context, not the target.

Two instruments tell more from less (``minute_profile.py``, outside the operator's
code): ``--counts DIR`` counts, at next to no cost, the operator's steps, the
leases its core holds at each, and its API requests, a file a minute, and prints
the steps and the leases held per step beside each minute; ``--profile DIR`` runs
it under cProfile, a profile a minute (counts of calls to compare; the profile
slows the operator, which then batches more inputs into each step).
``--timeout`` bounds the whole run; the temporary directory goes at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from emulated_run import (
    API,
    DECIDED,
    FINAL,
    Cluster,
    Timeline,
    create,
    ours,
    pool,
    quantile,
    until,
)
from leasehold.kube.client import KubeClient, KubeError
from procstat import kernel_side

TYPES = (["BestEffortSuspendable"] * 4 + ["BestEffortCancellable"] * 2
         + ["DeadlineMigratable"] * 2 + ["DeadlineNonPreemptable"])


def lease(i: int, rng: random.Random) -> dict[str, Any]:
    local = rng.random() < 0.05
    minutes = rng.randint(2, 9)
    kind = "DeadlineNonPreemptable" if local else rng.choice(TYPES)
    spec: dict[str, Any] = {"type": kind, "vms": rng.randint(1, 2), "duration": f"{minutes}m",
                            "resources": {"cpu": "1", "memory": "1Gi"}}
    if kind.startswith("Deadline"):
        spec["deadline"] = f"{minutes + rng.choice([10, 30, 120])}m"
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": f"soak-{i:05d}", "namespace": "owners" if local else "lab"},
            "spec": spec}


async def clean(client: KubeClient, timeline: Timeline, gone: set[str]) -> None:
    """Delete the Leases that have ended, once a second."""
    gate = asyncio.Semaphore(8)

    async def delete(key: str) -> None:
        namespace, name = key.split("/")
        async with gate:
            try:
                await client.delete(f"{API}/namespaces/{namespace}/leases/{name}")
            except KubeError as exc:
                if exc.code != 404:
                    raise
    while True:
        ended = [k for k, p in list(timeline.phase.items()) if p in FINAL and k not in gone]
        gone.update(ended)
        await asyncio.gather(*(delete(k) for k in ended))
        await asyncio.sleep(1)


async def main(args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.timeout
    rng = random.Random(args.seed)
    manifests = [lease(i, rng) for i in range(args.leases)]
    cluster = Cluster([pool("soak", args.nodes, 4)], args.time_scale, keep=args.keep,
                      options=("--event-ttl", f"{args.event_ttl:g}"),
                      profiles=Path(args.profile or args.counts) if args.profile or args.counts
                      else None, counts=bool(args.counts))
    tasks: list[asyncio.Task[None]] = []
    machine: Machine | None = None
    try:
        machine = Machine(cluster.data)
        await cluster.namespaces({"lab": "external", "owners": "local"})
        await cluster.start_operator("--policy", args.policy)
        if args.pin:
            assert cluster.operator is not None
            pin(cluster.operator.pid, 0)
            pin(cluster.emulator.pid, 1 % (os.cpu_count() or 1))
        timeline = Timeline()
        gone: set[str] = set()
        tasks += [asyncio.create_task(timeline.watch(cluster.client)),
                  asyncio.create_task(clean(cluster.client, timeline, gone))]
        seconds = args.minutes * 60
        interval = seconds / args.leases
        print(f"{args.leases} Leases over {args.minutes} min ({1 / interval:.1f}/s),"
              f" {args.nodes} nodes x 4 cpu, policy {args.policy}, time scale"
              f" {args.time_scale:g}", flush=True)
        print(f"  {'min':>3} {'created':>8} {'ended':>7} {'op CPU s':>9} {'op RSS MB':>10}"
              f" {'cl CPU s':>9} {'cl RSS MB':>10} {'op writes':>10} {'probe ms':>8}"
              f" {'op sys s':>8} {'op minflt':>9} {'op majflt':>8} {'cl sys s':>8}"
              f" {'cl majflt':>8}"
              + (f" {'op steps':>8} {'held':>8}" if args.counts else ""), flush=True)
        samples = [await sample(cluster, machine, timeline, gone, 0, None)]
        t0 = time.monotonic()
        gate = asyncio.Semaphore(8)
        pending: set[asyncio.Task[None]] = set()

        async def one(m: dict[str, Any]) -> None:
            async with gate:
                await create(cluster.client, m, timeline)
        minute = 1
        for i, m in enumerate(manifests):
            due = t0 + i * interval
            while time.monotonic() >= t0 + minute * 60:  # a sample at each minute mark
                samples.append(await sample(cluster, machine, timeline, gone, minute,
                                            samples[-1]))
                minute += 1
            if time.monotonic() > deadline:
                raise SystemExit("the time limit (--timeout) ran out while creating")
            await asyncio.sleep(max(due - time.monotonic(), 0))
            task = asyncio.create_task(one(m))
            pending.add(task)
            task.add_done_callback(pending.discard)
        await asyncio.gather(*pending)
        while minute <= args.minutes:
            await asyncio.sleep(max(t0 + minute * 60 - time.monotonic(), 0))
            samples.append(await sample(cluster, machine, timeline, gone, minute,
                                        samples[-1]))
            minute += 1
        keys = list(timeline.created)

        async def decided() -> tuple[int, int]:
            return sum(timeline.phase.get(k) in DECIDED or k in gone for k in keys), len(keys)
        await until(decided, deadline, "decided")
        figures = verdict(samples, args.minutes, timeline)
        print(f"  machine: {platform.node()}, {os.cpu_count()} cores, Python"
              f" {platform.python_version()}")
        if args.json:
            Path(args.json).write_text(json.dumps(figures, indent=1))
    finally:
        for task in tasks:
            task.cancel()
        if machine is not None:
            machine.close()
        await cluster.close()


#: the machine probe: random reads and writes in a heap of ~100 MB, one unit of
#: work a second, each unit's CPU seconds one line of its file
PROBE = """
import random, sys, time
heap = {i: [i, str(i), {"a": i}] for i in range(600_000)}
rng, out = random.Random(0), open(sys.argv[1], "a", buffering=1)
while True:
    start, total = time.thread_time(), 0
    for _ in range(20_000):
        item = heap[rng.randrange(600_000)]
        total += item[2]["a"]
        item[0] = total & 0xFFFF
    out.write(f"{time.thread_time() - start:.6f}\\n")
    time.sleep(1)
"""


def pin(pid: int, cpu: int) -> None:
    """Keep every thread of ``pid`` (threads it starts later inherit it) on ``cpu``."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), {cpu})


class Machine:
    """The probe's process, and the median of its units since the last reading."""

    def __init__(self, data: Path) -> None:
        self.path = data / "machine-probe.txt"
        self.path.touch()
        self.process = subprocess.Popen([sys.executable, "-c", PROBE, str(self.path)])
        self.read = 0

    def unit_cpu(self) -> float:
        lines = self.path.read_text().split()
        units, self.read = sorted(map(float, lines[self.read:])), len(lines)
        return units[len(units) // 2] if units else math.nan

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


async def sample(cluster: Cluster, machine: Machine, timeline: Timeline, gone: set[str],
                 minute: int, last: dict[str, float] | None) -> dict[str, float]:
    """The figures now; and, after the first, the minute's line printed."""
    now = cluster.usage()
    cluster.profile_mark()
    if cluster.counts:
        now.update(await operator_counts(cluster, minute))
    now["operator_writes"] = sum(ours(await cluster.writes(), Counter()).values())
    assert cluster.operator is not None
    for who, pid in (("operator", cluster.operator.pid), ("cluster", cluster.emulator.pid)):
        now[f"{who}_sys"], now[f"{who}_minflt"], now[f"{who}_majflt"] = kernel_side(pid)
    now["probe_cpu"] = machine.unit_cpu()
    if last is None:
        return now
    now["operator_cpu_minute"] = now["operator_cpu"] - last["operator_cpu"]
    now["cluster_cpu_minute"] = now["cluster_cpu"] - last["cluster_cpu"]
    now["operator_writes_minute"] = now["operator_writes"] - last["operator_writes"]
    for key in ("operator_sys", "operator_minflt", "operator_majflt", "cluster_sys",
                "cluster_majflt"):
        now[f"{key}_minute"] = now[key] - last[key]
    print(f"  {minute:3d} {len(timeline.created):8d} {len(gone):7d}"
          f" {now['operator_cpu_minute']:9.1f} {now['operator_rss']:10.0f}"
          f" {now['cluster_cpu_minute']:9.1f} {now['cluster_rss']:10.0f}"
          f" {now['operator_writes_minute']:10.0f} {now['probe_cpu'] * 1000:8.1f}"
          f" {now['operator_sys_minute']:8.1f} {now['operator_minflt_minute']:9.0f}"
          f" {now['operator_majflt_minute']:8.0f} {now['cluster_sys_minute']:8.1f}"
          f" {now['cluster_majflt_minute']:8.0f}"
          + (f" {now['operator_steps']:8.0f} {now['operator_held']:8.0f}" if cluster.counts
             else ""), flush=True)
    return now


async def operator_counts(cluster: Cluster, minute: int) -> dict[str, float]:
    """The operator's steps in the minute to now and the leases its core held at a
    step, on average (``--counts``), from the file it writes when told."""
    assert cluster.profiles is not None
    path = cluster.profiles / f"operator-{minute}.counts.json"
    for _ in range(100):
        if path.exists():
            break
        await asyncio.sleep(0.05)
    counts = json.loads(path.read_text())
    steps = counts.get("steps", 0)
    return {"operator_steps": steps,
            "operator_held": counts.get("core leases, summed over steps", 0) / max(steps, 1)}


def verdict(samples: list[dict[str, float]], minutes: int, timeline: Timeline
            ) -> dict[str, Any]:
    """The ratios against their targets, printed; the figures, returned."""
    first, last = samples[1], samples[minutes]
    third = samples[min(3, minutes)]
    cpu = last["operator_cpu_minute"] / first["operator_cpu_minute"]
    op_rss = last["operator_rss"] / third["operator_rss"]
    cl_rss = last["cluster_rss"] / third["cluster_rss"]
    lags = timeline.lags()

    def mark(ok: bool) -> str:
        return "met" if ok else "MISSED"
    print(f"  operator CPU, minute {minutes} / minute 1: {last['operator_cpu_minute']:.1f} /"
          f" {first['operator_cpu_minute']:.1f} s = {cpu:.2f}x (target <= 1.2x:"
          f" {mark(cpu <= 1.2)})")
    per_write = (last["operator_cpu_minute"] / max(last["operator_writes_minute"], 1)) \
        / (first["operator_cpu_minute"] / max(first["operator_writes_minute"], 1))
    probe = last["probe_cpu"] / first["probe_cpu"]
    print(f"    beside it: operator CPU per API write {per_write:.2f}x; the machine probe's"
          f" CPU {probe:.2f}x; the operator's CPU in the probe's units {cpu / probe:.2f}x")
    if "operator_steps" in first:
        print(f"    the operator's steps, minute {minutes} / minute 1: {last['operator_steps']:.0f}"
              f" / {first['operator_steps']:.0f}; leases its core held at a step, on average:"
              f" {last['operator_held']:.0f} / {first['operator_held']:.0f}")
    print(f"  operator RSS, minute {minutes} / minute 3: {last['operator_rss']:.0f} /"
          f" {third['operator_rss']:.0f} MB = {op_rss:.2f}x (target <= 1.1x:"
          f" {mark(op_rss <= 1.1)})")
    print(f"  cluster RSS, minute {minutes} / minute 3: {last['cluster_rss']:.0f} /"
          f" {third['cluster_rss']:.0f} MB = {cl_rss:.2f}x (target <= 1.1x:"
          f" {mark(cl_rss <= 1.1)})")
    print(f"  core start -> pods Running ({len(lags)} leases): p50 {quantile(lags, 0.5):.2f} s,"
          f" p99 {quantile(lags, 0.99):.2f} s")
    return {"samples": samples, "cpu_ratio": cpu, "cpu_per_write_ratio": per_write,
            "probe_ratio": probe, "operator_rss_ratio": op_rss,
            "cluster_rss_ratio": cl_rss, "lag_p50": quantile(lags, 0.5),
            "lag_p99": quantile(lags, 0.99)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=10_000)
    parser.add_argument("--minutes", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument("--event-ttl", type=float, default=60.0,
                        help="the emulated API server's event TTL, real seconds (default: 60)")
    parser.add_argument("--policy", default="moml")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float,
                        help="seconds for the whole run (default: the minutes and 5 more)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the temporary directory (logs, the cluster's data)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--pin", action="store_true",
                        help="the operator on CPU 0 and the emulated cluster on CPU 1,"
                             " so that where the scheduler puts them is no variable")
    parser.add_argument("--profile", metavar="DIR",
                        help="profile the operator's main thread (cProfile, which"
                             " slows it), one profile a minute into DIR"
                             " (operator-<minute>.prof; operator-0.prof: start-up)")
    parser.add_argument("--counts", metavar="DIR",
                        help="count the operator's steps, what they go over and its API"
                             " requests, a file a minute into DIR"
                             " (operator-<minute>.counts.json); costs next to nothing")
    arguments = parser.parse_args()
    if arguments.minutes < 3:
        parser.error("--minutes must be at least 3 (memory is compared with minute 3)")
    if arguments.profile and arguments.counts:
        parser.error("--profile and --counts: one or the other")
    if arguments.timeout is None:
        arguments.timeout = arguments.minutes * 60 + 300
    asyncio.run(main(arguments))
