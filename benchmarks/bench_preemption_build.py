"""Building the preemption benchmark's scale state alone: CPU time by phase, and a digest
of every booking's nodes.

``bench_preemption.scale_state(Random(seed), N)`` (the state `bench_preemption.py
--setting scale --nodes N` starts from): N queued reservations planned at once (the
first ``advance``), then running leases one at a time until the pool is full (the
rest). Prints the CPU seconds (``time.process_time``) of the whole build and of each
phase, the number of bookings, and a digest of every booking (lease, start, end,
shape, nodes): two trees that choose the same nodes print the same digest.

    python benchmarks/bench_preemption_build.py 1000 2500 5000
"""

from __future__ import annotations

import argparse
import hashlib
import time
from random import Random

from bench_preemption import SCALE_PROBE_SHAPE, scale_state
from leasehold.core.model import Action
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots.shared import SharedPool


def build(nodes: int, seed: int) -> dict[str, float | int | str]:
    marks: list[float] = []
    advance = Scheduler.advance

    def timed(self: Scheduler, now: float) -> list[Action]:
        actions = advance(self, now)
        if not marks:  # the reservations' phase ends with the first advance
            marks.append(time.process_time())
        return actions

    Scheduler.advance = timed  # type: ignore[method-assign]
    try:
        t0 = time.process_time()
        sched = scale_state(Random(seed), nodes)
        t1 = time.process_time()
    finally:
        Scheduler.advance = advance  # type: ignore[method-assign]
    shared = sched.slots.pools["big"]
    assert isinstance(shared, SharedPool)
    pool = shared.table_for(SCALE_PROBE_SHAPE)
    rows = sorted((b.lease, b.start, b.end, b.vms, b.shape.cpu, b.shape.memory, b.nodes)
                  for b in pool.bookings)
    return {"nodes": nodes, "cpu": t1 - t0, "reservations": marks[0] - t0,
            "rest": t1 - marks[0], "bookings": len(rows),
            "digest": hashlib.sha256(repr(rows).encode()).hexdigest()[:16]}


def sizes_and_seed(doc: str) -> argparse.Namespace:
    """The command line of a script that builds the scale state at several sizes:
    ``nodes`` (one or more) and ``--seed``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("nodes", type=int, nargs="+")
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


def main() -> None:
    args = sizes_and_seed(__doc__)
    for nodes in args.nodes:
        r = build(nodes, args.seed)
        print(f"nodes {r['nodes']}: {r['cpu']:.3f} CPU s (reservations {r['reservations']:.3f}"
              f" + running {r['rest']:.3f}), {r['bookings']} bookings, digest {r['digest']}",
              flush=True)


if __name__ == "__main__":
    main()
