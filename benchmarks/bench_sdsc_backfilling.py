"""CPU time of simulating the SDSC Blue 30-day trace (5,108 jobs, 144 nodes).

Prints, per backfilling mode, the best CPU seconds over several repetitions, jobs
per CPU-second, the mean wait, and the ratio to a bare textbook EASY loop run in the
same process (a scheduler that knows nothing of leases: the floor to aim at).
CPU time, not wall time, and a same-process baseline, because machines are shared.

    python benchmarks/bench_sdsc_backfilling.py [--repeat N] [--trace PATH] [--nodes N]
                                                [--shared]

Also the overloaded Lublin99 trace of the simulator issue:
``--trace benchmarks/data/lublin99-256n-10k.swf --nodes 256``.

``--shared`` also runs the trace on shared pools: the same 144 one-core nodes, and
36 nodes of 4 cores (the same capacity; a job of n nodes is n one-core VMs). Both
hold VMs of one shape, so the shared pool counts slots as the exclusive pool counts
nodes (issue 20): the mean wait is the exclusive pool's on 144 nodes, and within 2%
of it on 36x4 (node identity changes only which nodes a job lands on there, and
nothing else). It then times the whole ``leasehold simulate`` process (YAML/JSON
loading, start-up and all: user + sys CPU of a child, from ``os.wait4``) on the
trace as a scenario, for the exclusive pool and for each shared one, in the same
run, each the best of ``--repeat`` (at most 3).

``--pyss DIR`` also runs pyss (github.com/dinesh121991/pyss) on the same jobs, in
a child ``python -O`` (its asserts check the whole CPU profile at every event, so
without ``-O`` it is O(n) slower and the comparison meaningless). pyss is Python
2.4 and not part of this project; DIR is the ``src`` directory of a Python 3 copy
made outside it (docs/benchmarks.md says how). Each mode runs once, repeated up to
``--repeat`` times while a run takes under 10 CPU s.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import subprocess
import sys
import tempfile
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


# Run inside pyss's src directory: the same jobs, pyss's own simulator loop, CPU
# time of the simulation only (the trace is parsed before the clock starts, as
# this script does for leasehold), mean wait over every job.
PYSS_DRIVER = """
import json, sys, time
from base.prototype import _job_inputs_to_jobs
from base.workload_parser import parse_lines
from schedulers.conservative_scheduler import ConservativeScheduler
from schedulers.easy_scheduler import EasyBackfillScheduler
from schedulers.fcfs_scheduler import FcfsScheduler
from schedulers.simulator import Simulator
if __debug__:
    sys.exit("pyss must run under python -O: its asserts are O(n) per event")
path, nodes, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cls = {"none": FcfsScheduler, "easy": EasyBackfillScheduler,
       "conservative": ConservativeScheduler}[mode]
with open(path) as f:
    jobs = list(_job_inputs_to_jobs(parse_lines(f), nodes))
t0 = time.process_time()
sim = Simulator(jobs, nodes, cls(nodes))
sim.run()
cpu = time.process_time() - t0
done = sim.terminated_jobs
print(json.dumps({"cpu": cpu, "done": len(done),
                  "wait": sum(j.start_to_run_at_time - j.submit_time for j in done) / len(done)}))
"""


def write_pyss_swf(jobs: list[Request], path: Path) -> None:
    """The jobs as pyss reads them: size in fields 5 and 8, the requested time in
    field 9 (so both simulators see the same estimates), whole seconds."""
    with path.open("w") as f:
        for i, r in enumerate(jobs, 1):
            f.write(f"{i} {round(r.submitted)} -1 {round(r.actual_runtime)} {r.vms} -1 -1 "
                    f"{r.vms} {round(r.duration)} -1 1 -1 -1 -1 0 -1 -1 -1\n")


def run_pyss(src: Path, swf: Path, nodes: int, mode: str) -> tuple[float, float]:
    """CPU seconds and mean wait (seconds) of one pyss run under ``python -O``."""
    out = subprocess.run(
        [sys.executable, "-O", "-c", PYSS_DRIVER, str(swf), str(nodes), mode],
        cwd=src, env={**os.environ, "PYTHONPATH": str(src)},
        capture_output=True, text=True, check=True,
    )
    got = json.loads(out.stdout.splitlines()[-1])
    return float(got["cpu"]), float(got["wait"])


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
    ap.add_argument("--shared", action="store_true",
                    help="also time shared pools (Nx1 and N/4x4) and whole simulate processes")
    ap.add_argument("--pyss", type=Path, metavar="DIR",
                    help="also time pyss (a Python 3 copy's src directory) under python -O")
    args = ap.parse_args()
    jobs = swf_requests(args.trace)
    pool = PoolSpec("blue", args.nodes, 1000, 1024, exclusive=True)
    print(f"{platform.node()} {platform.machine()} {platform.python_implementation()} "
          f"{platform.python_version()}; {len(jobs)} jobs, best of {args.repeat}")
    base_cpu, base_wait = best_cpu(lambda: bare_easy(jobs, args.nodes), args.repeat)
    print(f"{'scheduler':<26}{'CPU s':>8}{'jobs/s':>10}{'mean wait':>11}{'x bare':>8}")
    print(f"{'bare EASY loop':<26}{base_cpu:>8.3f}{len(jobs) / base_cpu:>10.0f}"
          f"{base_wait / 60:>10.2f}m{1:>8.1f}")
    cpus: dict[str, float] = {}
    for mode in ("none", "easy", "conservative"):
        cfg = SchedulerConfig(backfilling=Backfilling(mode))
        cpu, result = best_cpu(lambda cfg=cfg: simulate([pool], cfg, jobs, keep_actions=False),
                               args.repeat)
        cpus[mode] = cpu
        leases = result.scheduler.leases()
        wait = sum(s.first_start - s.request.submitted for s in leases) / len(jobs)
        print(f"{'leasehold ' + mode:<26}{cpu:>8.3f}{len(jobs) / cpu:>10.0f}"
              f"{wait / 60:>10.2f}m{cpu / base_cpu:>8.1f}")
    if args.pyss:
        with tempfile.TemporaryDirectory() as tmp:
            swf = Path(tmp) / "jobs.swf"
            write_pyss_swf(jobs, swf)
            for mode in ("none", "easy", "conservative"):
                best, wait = run_pyss(args.pyss, swf, args.nodes, mode)
                for _ in range(args.repeat - 1):
                    if best >= 10:
                        break
                    best = min(best, run_pyss(args.pyss, swf, args.nodes, mode)[0])
                print(f"{'pyss ' + mode + ' (-O)':<26}{best:>8.3f}{len(jobs) / best:>10.0f}"
                      f"{wait / 60:>10.2f}m{best / base_cpu:>8.1f}"
                      f"   {best / cpus[mode]:.1f}x leasehold")
    if args.shared:
        shared_pools(jobs, args.nodes, base_cpu, args.repeat)


def shared_layouts(nodes: int) -> dict[str, PoolSpec]:
    """The trace's pool, exclusive and shared: the same VMs (one core, 1 GiB)."""
    out = {"exclusive": PoolSpec("blue", nodes, 1000, 1024, exclusive=True),
           f"shared {nodes}x1": PoolSpec("blue", nodes, 1000, 1024)}
    if nodes % 4 == 0:
        out[f"shared {nodes // 4}x4"] = PoolSpec("blue", nodes // 4, 4000, 4096)
    return out


def shared_pools(jobs: list[Request], nodes: int, base_cpu: float, repeat: int) -> None:
    """The trace on shared pools in this process, then the whole ``leasehold
    simulate`` process on each layout."""
    layouts = shared_layouts(nodes)
    for mode in ("easy", "conservative"):
        cfg = SchedulerConfig(backfilling=Backfilling(mode))
        waits: dict[str, float] = {}
        for name, pool in layouts.items():
            cpu, result = best_cpu(
                lambda cfg=cfg, pool=pool: simulate([pool], cfg, jobs, keep_actions=False),
                repeat)
            leases = result.scheduler.leases()
            wait = waits[name] = sum(s.first_start - s.request.submitted
                                     for s in leases) / len(jobs)
            print(f"{mode + ' ' + name:<26}{cpu:>8.3f}"
                  f"{len(jobs) / cpu:>10.0f}{wait / 60:>10.2f}m{cpu / base_cpu:>8.1f}"
                  f"   wait {wait / waits['exclusive'] - 1:+.2%} vs exclusive")
    with tempfile.TemporaryDirectory() as tmp:
        print("whole `leasehold simulate` process, user+sys CPU s (best of "
              f"{min(repeat, 3)}), ratio to the exclusive pool's:")
        for mode in ("easy", "conservative"):
            cpus: dict[str, float] = {}
            for name, pool in layouts.items():
                path = Path(tmp) / f"{name.replace(' ', '-')}.jsonl.gz"
                if not path.exists():
                    write_scenario(path, jobs, pool)
                cpus[name] = min(simulate_process(path, mode) for _ in range(min(repeat, 3)))
                print(f"  {mode:<13}{name:<16}{cpus[name]:>8.3f}"
                      f"{cpus[name] / cpus['exclusive']:>8.2f}x")


def write_scenario(path: Path, jobs: list[Request], pool: PoolSpec) -> None:
    """The jobs as a trace file ``leasehold simulate`` reads (as tools/golden.py
    writes the SDSC cases)."""
    from leasehold.api.scenario import ClusterSpec
    from leasehold_emulator.workloads.trace import (
        FORMAT,
        VERSION,
        TraceHeader,
        lease_of,
        write_trace,
    )

    spec = {"name": pool.name, "nodes": pool.nodes, "cpu": f"{pool.cpu}m",  # a quantity
            "memory": pool.memory, "exclusive": pool.exclusive}
    header = TraceHeader(format=FORMAT, version=VERSION, source="bench_sdsc_backfilling",
                         cluster=ClusterSpec.model_validate({"pools": [spec]}))
    write_trace(path, [lease_of(r) for r in jobs], header)


def simulate_process(path: Path, mode: str) -> float:
    """User + sys CPU seconds of one ``leasehold simulate`` child process."""
    cli = Path(sys.executable).with_name("leasehold")
    child = subprocess.Popen([str(cli), "simulate", str(path), "--backfilling", mode,
                              "-o", "json"], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"leasehold simulate {path} exited {child.returncode}")
    return usage.ru_utime + usage.ru_stime


if __name__ == "__main__":
    main()
