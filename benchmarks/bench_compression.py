"""The core alone on the scale benchmark's submissions (`bench_operator.py`): how long
its longest steps take, the compressions, which hold the operator's clock.

5,000 external Leases (the scale benchmark's mix, seed 1) submitted 50 at a time
over the first 600 s, as the operator reads them at 120x; the core advanced every
``--every`` seconds (30) to ``--wave-at`` (2,700 s: when the scale benchmark's
local wave comes, now that its Leases are decided in ~20 s of wall time); 40 local
Leases then, which preempt; and, after the compression that follows, ``--cancels``
running leases cancelled one at a time, each followed by the compression of every
reservation. It prints the CPU seconds (``process_time``) of the local wave's step,
of the compression after it, of each compression after a cancel, and of the worst
step and all steps to the last lease's end.
"""

from __future__ import annotations

import argparse
import os
import platform
import time

from bench_operator import leases
from leasehold.api.clock import Clock
from leasehold.api.resources import lease_spec
from leasehold.core.model import Origin, Phase, PoolSpec, SchedulerConfig
from leasehold.core.scheduler import Scheduler


def main(args: argparse.Namespace) -> None:
    manifests = leases(args.leases, args.local, args.seed)
    core = Scheduler([PoolSpec("bench", args.nodes, 4000, 16384)],
                     SchedulerConfig(policy=args.policy))
    clock = Clock()
    worst, total = [0.0, 0.0], [0.0]

    def step(t: float) -> float:
        """Advance the core to ``t``: the CPU seconds it took."""
        began = time.process_time()
        core.advance(t)
        took = time.process_time() - began
        total[0] += took
        if took > worst[0]:
            worst[:] = [took, t]
        return took

    t = 0.0
    for i, m in enumerate(manifests[:args.leases]):
        at = 600.0 * (i // 50 * 50) / args.leases
        if at != t:
            step(t)
            t = at
        core.submit(lease_spec(m, Origin.EXTERNAL, t, clock).to_request(), t)
    while t < args.wave_at:
        step(t)
        t += args.every
    print(f"{args.leases} leases on {args.nodes} nodes x 4 cpu, policy {args.policy}:"
          f" submitted and run to t={t:g} in {total[0]:.2f} s")
    for m in manifests[args.leases:]:
        core.submit(lease_spec(m, Origin.LOCAL, t, clock).to_request(), t)
    print(f"  {args.local} local leases at t={t:g}: {step(t):.2f} s")
    t += 30
    print(f"  the compression after them, t={t:g}: {step(t):.2f} s")
    running = sorted(v.name for v in core.leases() if v.phase == Phase.RUNNING)
    for name in running[:args.cancels]:
        t += 30
        core.cancel(name, t)
        print(f"  {name} cancelled, the compression after it: {step(t):.3f} s")
    while core.pending_inputs() or any(not v.phase.terminal for v in core.leases()):
        t += args.every
        step(t)
    print(f"  every step, to t={t:g}: {total[0]:.2f} s;"
          f" the worst step {worst[0]:.2f} s at t={worst[1]:g}")
    print(f"  machine: {platform.node()}, {os.cpu_count()} cores, Python"
          f" {platform.python_version()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leases", type=int, default=5000)
    parser.add_argument("--local", type=int, default=40)
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--cancels", type=int, default=5)
    parser.add_argument("--every", type=float, default=30.0,
                        help="core seconds between two steps (default: 30, a quarter"
                             " of a second of wall time at 120x)")
    parser.add_argument("--wave-at", type=float, default=2700.0,
                        help="core seconds at which the local Leases come (default: 2700)")
    parser.add_argument("--policy", default="moml")
    parser.add_argument("--seed", type=int, default=1)
    main(parser.parse_args())
