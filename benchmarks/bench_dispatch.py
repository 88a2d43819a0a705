"""The cost of dispatch (docs/dispatch.md), and where each strategy sends leases, on
a workload shaped like seed 003 §5.2: three exclusive pools of 64, 128 and 256
one-core nodes at speeds 2000, 3000 and 2100 MIPS (relative to 2000), one local
stream per pool (Poisson, ``--local`` leases/s each, DeadlineNonPreemptable) and the
gateway's external stream (Poisson, ``--external`` leases/s, 25% of each external
type, no pool), 1 to 9 VMs (mean 5), durations exponential of mean 420 s, over
``--hours`` hours, conservative backfilling, MOML.

Each strategy runs the same requests in one process; printed per strategy: CPU
seconds (``process_time``) of the whole simulation and its ratio to ``earliest``'s,
the CPU microseconds the dispatcher itself took per dispatched lease, the share of
the external leases each pool got, and the VMs preempted. The run times do not yet
scale with speed (issue 21's "speed" part): only the statistics read it.
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import replace
from random import Random

from leasehold.core.dispatch import Dispatcher
from leasehold.core.model import (
    DISPATCH_NAMES,
    LeaseType,
    Origin,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
)
from leasehold_emulator.sim.engine import simulate

POOLS = [PoolSpec("c64", 64, 1000, 1024, exclusive=True, speed=1.0),
         PoolSpec("c128", 128, 1000, 1024, exclusive=True, speed=1.5),
         PoolSpec("c256", 256, 1000, 1024, exclusive=True, speed=1.05)]
EXTERNAL = [LeaseType.BEST_EFFORT_CANCELLABLE, LeaseType.BEST_EFFORT_SUSPENDABLE,
            LeaseType.DEADLINE_MIGRATABLE, LeaseType.DEADLINE_NON_PREEMPTABLE]


def workload(hours: float, local: float, external: float, seed: int) -> list[Request]:
    rng = Random(seed)
    horizon = hours * 3600
    out = []
    streams = [(p.name, local) for p in POOLS] + [(None, external)]
    for pool, rate in streams:
        t = 0.0
        while True:
            t += rng.expovariate(rate)
            if t >= horizon:
                break
            vms = rng.randint(1, 9)
            duration = max(1.0, round(rng.expovariate(1 / 420)))
            name = f"{pool or 'ext'}-{len(out)}"
            if pool is None:
                kind = rng.choice(EXTERNAL)
                deadline = t + duration * 3 if kind.guaranteed else None
                out.append(Request(name, kind, vms, Shape(1000, 1024), duration, t,
                                   deadline=deadline))
            else:
                out.append(Request(name, LeaseType.DEADLINE_NON_PREEMPTABLE, vms,
                                   Shape(1000, 1024), duration, t, origin=Origin.LOCAL,
                                   deadline=t + duration * 3, pool=pool))
    out.sort(key=lambda r: r.submitted)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hours", type=float, default=6)
    ap.add_argument("--local", type=float, default=0.12 / 3)
    ap.add_argument("--external", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    requests = workload(args.hours, args.local, args.external, args.seed)
    externals = sum(r.origin == Origin.EXTERNAL for r in requests)
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}"
          f"; {len(requests)} leases, {externals} external, {args.hours} h")
    base = None
    for name in DISPATCH_NAMES:
        spent = [0.0]
        original = Dispatcher.submitted

        def timed(self, *a, _orig=original, _spent=spent, **k):  # type: ignore[no-untyped-def]
            began = time.process_time()
            try:
                return _orig(self, *a, **k)
            finally:
                _spent[0] += time.process_time() - began
        Dispatcher.submitted = timed  # type: ignore[method-assign]
        try:
            began = time.process_time()
            result = simulate(POOLS, replace(SchedulerConfig(), dispatch=name), requests,
                              keep_actions=False)
            cpu = time.process_time() - began
        finally:
            Dispatcher.submitted = original  # type: ignore[method-assign]
        base = base or cpu
        leases = result.scheduler.leases()
        got = {p.name: 0 for p in POOLS}
        for v in leases:
            if v.request.origin == Origin.EXTERNAL and v.pool is not None:
                got[v.pool] += 1
        shares = " ".join(f"{k} {n / externals:.3f}" for k, n in got.items())
        preempted = sum(v.preemptions * v.request.vms for v in leases)
        print(f"{name:9} cpu {cpu:7.2f} s  x{cpu / base:.2f}  dispatch"
              f" {spent[0] / externals * 1e6:7.1f} us/lease  shares {shares}"
              f"  preempted VMs {preempted}")


if __name__ == "__main__":
    main()
