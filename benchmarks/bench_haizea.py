"""leasehold and Haizea 1.0 side by side on the same leases: per-lease agreement and
the CPU ratio (issue 22, docs/haizea.md).

Haizea is not part of this project: DIR is a scratch Python-3 port made outside it
(docs/haizea.md says how), with a runner ``run_haizea.py`` whose
``run(leases, nodes, rate=, override=, loglevel=)`` takes
``(name, submitted, vms, duration, runtime, start or None)`` tuples and returns
``({name: (first start, end)}, cpu seconds)``. Without DIR this prints why it skips
and exits 0.

    HAIZEA_SCRATCH=DIR python benchmarks/bench_haizea.py [--haizea DIR] [--trace SWF]
        [--inject LWF] [--nodes 144] [--rate 32] [--haizea-estimate] [--json OUT]

Both read the same requests (leasehold's SWF reader, with its documented drops: the
default trace is the port's ``traces/blue/1000requests.swf``) and run in this
process, one after the other: the ratio is of CPU time (``time.process_time``) in
the same process, valid on a busy machine. The configuration is 004's as Haizea
runs it: one exclusive pool of ``--nodes`` 1-GB nodes, EASY ("aggressive")
backfilling, suspend before blocking ("suspension: all", no migration), suspend and
resume at ``--rate`` MB/s for the whole lease at once (leasehold's ``haizea``
overhead model; Haizea's ``override-suspend-time`` and ``override-resume-time`` set
to m / rate, without which Haizea 1.0 *estimates* a lease's suspension as
v * (v*m / rate) when it decides whether a hole is worth it: docs/haizea.md).
Reservations from ``--inject`` are preempted for by Haizea's policy on both sides.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from leasehold.core.model import (
    Backfilling,
    LeaseType,
    OverheadParams,
    PoolSpec,
    Request,
    SchedulerConfig,
)
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.workloads.lwf import lwf_requests
from leasehold_emulator.workloads.swf import swf_requests

#: a lease's (first start, end) in seconds from the trace's start; None if it never ran
Times = dict[str, tuple[float | None, float | None]]
MEMORY = 1024  # MB per VM: 004's 1-GB nodes
#: two times are the same if they differ by less (Haizea rounds to whole seconds)
TOLERANCE = 1e-6


def load(trace: Path, inject: Path | None) -> list[Request]:
    requests = swf_requests(trace)
    if inject is not None:
        skipped: list[str] = []  # the few that start before the trace: docs/workloads.md
        requests += lwf_requests(inject, skip_bad_lines=True, skipped=skipped)
    requests.sort(key=lambda r: r.submitted)  # stable: file order within an instant
    return requests


def run_leasehold(requests: list[Request], nodes: int, rate: float) -> tuple[Times, float]:
    params = OverheadParams(suspend_rate=rate, resume_rate=rate, pause_seconds=0.0,
                            reschedule_seconds=0.0, model="haizea")
    pool = PoolSpec("haizea", nodes, 1000, MEMORY, exclusive=True, overhead=params)
    config = SchedulerConfig(policy="haizea", backfilling=Backfilling.EASY,
                             suspend_before_blocking=True)
    t0 = time.process_time()
    result = simulate([pool], config, requests, keep_actions=False)
    cpu = time.process_time() - t0
    return {s.request.name: (s.first_start, s.end) for s in result.scheduler.leases()}, cpu


def run_haizea(runner: Any, requests: list[Request], nodes: int, rate: float,
               override: bool = True) -> tuple[Times, float]:
    leases = [(r.name, r.submitted, r.vms, r.duration, r.actual_runtime,
               r.start if r.type == LeaseType.ADVANCE_RESERVATION else None)
              for r in requests]
    t0 = time.process_time()
    times, _ = runner.run(leases, nodes, mem=MEMORY, backfilling="aggressive",
                          suspension="all", rate=rate,
                          override=round(MEMORY / rate) if override else None,
                          loglevel="WARNING")
    cpu = time.process_time() - t0
    return dict(times), cpu


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= TOLERANCE


def agreement(requests: list[Request], haizea: Times, leasehold: Times) -> dict[str, Any]:
    """How many starts and ends agree, the first lease (in time) whose start differs,
    and each side's mean wait of the leases that ran."""
    submitted = {r.name: r.submitted for r in requests}
    none = (None, None)
    starts = [n for n in submitted if not _same(haizea.get(n, none)[0], leasehold.get(n, none)[0])]
    ends = [n for n in submitted if not _same(haizea.get(n, none)[1], leasehold.get(n, none)[1])]

    def first(names: list[str], i: int) -> dict[str, Any] | None:
        if not names:
            return None
        def when(n: str) -> float:
            both = [t[i] for t in (haizea.get(n, none), leasehold.get(n, none))]
            return min((t for t in both if t is not None), default=float("inf"))
        n = min(names, key=lambda n: (when(n), submitted[n]))
        return {"lease": n, "submitted": submitted[n], "haizea": haizea.get(n, none)[i],
                "leasehold": leasehold.get(n, none)[i]}

    def mean_wait(times: Times) -> float:
        waits = [s - submitted[n] for n, (s, _) in times.items() if s is not None]
        return sum(waits) / len(waits) / 60 if waits else 0.0

    return {"leases": len(submitted), "starts_agree": len(submitted) - len(starts),
            "ends_agree": len(submitted) - len(ends), "first_start_divergence": first(starts, 0),
            "first_end_divergence": first(ends, 1),
            "mean_wait_min": {"haizea": mean_wait(haizea), "leasehold": mean_wait(leasehold)}}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--haizea", default=os.environ.get("HAIZEA_SCRATCH"),
                   help="the scratch port's directory (default: $HAIZEA_SCRATCH)")
    p.add_argument("--trace", type=Path, help="SWF trace (default: the port's"
                   " traces/blue/1000requests.swf)")
    p.add_argument("--inject", type=Path, help="an LWF file of advance reservations")
    p.add_argument("--nodes", type=int, default=144)
    p.add_argument("--rate", type=float, default=32.0,
                   help="suspend and resume rate, MB/s (default 32)")
    p.add_argument("--haizea-estimate", action="store_true",
                   help="leave Haizea its own suspend/resume estimate, v * (v*m / rate)")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    if not args.haizea:
        print("bench_haizea: skipped: no scratch port of Haizea (set HAIZEA_SCRATCH or"
              " pass --haizea DIR; docs/haizea.md says how to make one)")
        return 0
    port = Path(args.haizea).expanduser().resolve()
    if not (port / "run_haizea.py").is_file():
        print(f"bench_haizea: skipped: {port} has no run_haizea.py (docs/haizea.md)")
        return 0
    sys.path.insert(0, str(port))
    runner = importlib.import_module("run_haizea")
    trace = args.trace or port / "traces/blue/1000requests.swf"
    requests = load(trace, args.inject)
    haizea, h_cpu = run_haizea(runner, requests, args.nodes, args.rate,
                               override=not args.haizea_estimate)
    leasehold, l_cpu = run_leasehold(requests, args.nodes, args.rate)
    figures = agreement(requests, haizea, leasehold)
    figures.update(trace=str(trace), inject=str(args.inject) if args.inject else None,
                   nodes=args.nodes, rate=args.rate,
                   haizea_estimate=args.haizea_estimate,
                   cpu={"haizea": h_cpu, "leasehold": l_cpu,
                        "ratio": h_cpu / l_cpu if l_cpu > 0 else None},
                   machine=platform.processor() or platform.machine())
    n = figures["leases"]
    print(f"{trace.name}{' + ' + args.inject.name if args.inject else ''}: {n} leases,"
          f" {args.nodes} nodes, EASY + suspend before blocking, {args.rate:g} MB/s"
          + (" (Haizea's own suspend estimate)" if args.haizea_estimate else ""))
    print(f"  starts agree {figures['starts_agree']}/{n}, ends agree {figures['ends_agree']}/{n}")
    for what in ("start", "end"):
        d = figures[f"first_{what}_divergence"]
        if d is not None:
            print(f"  first {what} divergence: lease {d['lease']} (submitted {d['submitted']:g} s):"
                  f" Haizea {d['haizea']}, leasehold {d['leasehold']}")
    w = figures["mean_wait_min"]
    print(f"  mean wait: Haizea {w['haizea']:.2f} min, leasehold {w['leasehold']:.2f} min")
    ratio = figures["cpu"]["ratio"]
    print(f"  CPU s (same process): Haizea {h_cpu:.2f}, leasehold {l_cpu:.3f}"
          + (f", ratio {ratio:.0f}x" if ratio else ""))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
