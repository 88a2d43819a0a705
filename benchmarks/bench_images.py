"""CPU time of image deployment (issue 22 items 1-3, docs/images.md): one workload on
one pool with and without ``images``, in the same process.

004's setting in miniature: 144 exclusive nodes, best-effort leases of 1-32 VMs
arriving every ``--gap`` seconds on average (seed 1), each booting one of 37 images
of 4 GB drawn uniformly; the pool's repository sends 10 MB/s to nodes caching 20 GB
(multicast, reuse). Prints the best CPU seconds of each (the schedules differ: with
images leases wait for their transfers) and the transfers booked. Without
``images`` the pool plans as before issue 22: to see what the new seam costs there,
run the ``bare`` figures with a tree from before it first on the path
(``PYTHONPATH=<tree>/operator``; 2b88a94).

    python benchmarks/bench_images.py [--leases N] [--gap S] [--repeat N]
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import replace

from leasehold.core.model import (
    Backfilling,
    ImagesSpec,
    LeaseType,
    PoolSpec,
    Request,
    SchedulerConfig,
    Shape,
)
from leasehold.core.replay import Input, replay
from leasehold.core.scheduler import Scheduler


def workload(n: int, gap: float, seed: int = 1) -> list[Request]:
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        t += rng.expovariate(1 / gap)
        vms = rng.choice([1, 1, 2, 4, 8, 16, 32])
        duration = rng.uniform(600, 6 * 3600)
        out.append(Request(f"l{i}", LeaseType.BEST_EFFORT_SUSPENDABLE, vms, Shape(1000, 1024),
                           duration, t, runtime=duration * rng.uniform(0.3, 1),
                           image=f"img{rng.randrange(37)}", image_mb=4096))
    return out


def run(pool: PoolSpec, requests: list[Request], mode: str) -> tuple[float, Scheduler]:
    sched = Scheduler([pool], SchedulerConfig(backfilling=Backfilling(mode)))
    t0 = time.process_time()
    for _ in replay(sched, [Input.submit(r) for r in requests]):
        pass
    return time.process_time() - t0, sched


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--leases", type=int, default=2000)
    parser.add_argument("--gap", type=float, default=500.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    requests = workload(args.leases, args.gap)
    bare = PoolSpec("p", 144, 1000, 1024, exclusive=True)
    pools = {"bare": bare}
    if hasattr(Scheduler, "transfers"):  # a tree from before this seam: bare only
        pools["images"] = replace(bare, images=ImagesSpec(bandwidth=10, disk=40960,
                                                          cache=20480))
    for mode in ("easy", "conservative"):
        best = dict.fromkeys(pools, float("inf"))
        transfers = 0
        for _ in range(args.repeat):
            for name, pool in pools.items():  # alternated: the machine's load hits both
                cpu, sched = run(pool, requests, mode)
                best[name] = min(best[name], cpu)
                if name == "images":
                    transfers = sum(len(sched.transfers(r.name)) for r in requests)
        figures = "  ".join(f"{name} {cpu:.3f} s" for name, cpu in best.items())
        ratio = f"  ratio {best['images'] / best['bare']:.2f}x" if "images" in best else ""
        print(f"{mode:12} {args.leases} leases: {figures}{ratio}"
              + (f"  ({transfers} transfers)" if "images" in best else ""))


if __name__ == "__main__":
    main()
