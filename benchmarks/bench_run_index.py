"""What an index of each shape's runs of room would cost on the preemption benchmark's
scale state: a replay of the state's bookings, each node choice asked of the index and
compared with the one the pool made.

A shared pool places a booking's VMs on the nodes that hold a VM of its shape
throughout the window, those that have had room the shortest time first, then by
index (``PackedPool.place``). A node has had room since the start of the run of
room (the longest span with room for one VM) that contains the booking's start. So
if every node's runs, per shape, are kept in one order, by run start (latest first)
then node, the nodes for a window ``[t, e)`` are the runs that start by ``t`` and
end at ``e`` or later, in that order: no per-start tree, and nothing copied from a
neighbouring start. The price is upkeep: a booking changes the runs of its nodes
for every shape whose room it crosses.

This replays ``bench_preemption.scale_state(Random(seed), N)``'s ``book`` and
``unbook`` calls in order on its own per-node profiles. Before each placed booking
it asks the index for the nodes and compares; after each change it brings the runs
of the changed nodes up to date for every shape asked so far. It prints the CPU
seconds of the upkeep and of the questions, beside the build itself, and how many
node choices agreed. The index here is a plain sorted list, whose inserts and reads
past runs that end too early are linear: only the time to find the runs and the
number of runs moved stand for what a tuned index would cost.

    python benchmarks/bench_run_index.py 1000 2000 5000
"""

from __future__ import annotations

import time
from bisect import bisect_left, insort
from collections import Counter
from dataclasses import dataclass, field
from math import inf
from random import Random

from bench_preemption import SCALE_PROBE_SHAPE, scale_state
from bench_preemption_build import sizes_and_seed
from leasehold.core.model import Shape
from leasehold.core.profile import Profile
from leasehold.core.slots.booking import Booking
from leasehold.core.slots.packed import PackedPool
from leasehold.core.slots.pool import fit_count
from leasehold.core.slots.rooms import levels

#: (booking, its nodes before the call or None, sign): -1 booked, +1 given back
Event = tuple[Booking, tuple[int, ...] | None, int]


def record(nodes: int, seed: int) -> tuple[list[Event], list[tuple[int, int]], float]:
    """The build's ``book``/``unbook`` calls in order, the nodes' sizes (cpu,
    memory) and the build's CPU seconds."""
    # each with its table, held (an id alone could be a freed table's, reused)
    events: list[tuple[PackedPool, Event]] = []
    book, unbook = PackedPool.book, PackedPool.unbook

    def booked(self: PackedPool, b: Booking) -> None:
        before = b.nodes
        book(self, b)
        events.append((self, (b, before, -1)))

    def unbooked(self: PackedPool, b: Booking) -> None:
        unbook(self, b)
        events.append((self, (b, b.nodes, +1)))

    PackedPool.book, PackedPool.unbook = booked, unbooked  # type: ignore[method-assign]
    try:
        t0 = time.process_time()
        sched = scale_state(Random(seed), nodes)
        built = time.process_time() - t0
    finally:
        PackedPool.book, PackedPool.unbook = book, unbook  # type: ignore[method-assign]
    table = sched.slots.pools["big"].table_for(SCALE_PROBE_SHAPE)
    assert isinstance(table, PackedPool)
    # the tables the pool had before its last (a counted one, or packed ones it
    # switched away from) are not replayed: the last one was booked from empty
    own = [e for t, e in events if t is table]
    return own, [(s.cpu, s.memory) for s in table.sizes], built


@dataclass
class ShapeRuns:
    """One shape's runs of room over every node, ordered by (-start, node)."""

    keys: list[tuple[float, int]] = field(default_factory=list)
    ends: dict[tuple[float, int], float] = field(default_factory=dict)
    of: dict[int, list[tuple[float, float]]] = field(default_factory=dict)

    def put(self, node: int, runs: list[tuple[float, float]]) -> int:
        """Replace ``node``'s runs; the number of runs removed and added."""
        old = self.of.get(node, [])
        if old == runs:
            return 0
        for x, _ in old:
            key = (-x, node)
            del self.keys[bisect_left(self.keys, key)]
            del self.ends[key]
        for x, y in runs:
            key = (-x, node)
            insort(self.keys, key)
            self.ends[key] = y
        self.of[node] = runs
        return len(old) + len(runs)


def runs_of(cpu: Profile, mem: Profile, shape: Shape) -> list[tuple[float, float]]:
    """A node's runs of room for one VM of ``shape``, in order."""
    return sorted((x, y) for x, y, _ in levels(cpu, mem, shape, 1, -inf))


def replay(events: list[Event], sizes: list[tuple[int, int]]) -> dict[str, float]:
    cpu = [Profile(c) for c, _ in sizes]
    mem = [Profile(m) for _, m in sizes]
    index: dict[Shape, ShapeRuns] = {}
    first = upkeep = ask = found = 0.0
    agreed = asked = moved = scanned = 0
    for b, before, sign in events:
        if sign < 0 and before is None:  # a node choice the pool made: ask the index
            own = index.get(b.shape)
            if own is None:  # a shape's first question: every node's runs
                t0 = time.process_time()
                own = index[b.shape] = ShapeRuns()
                for node in range(len(sizes)):
                    own.put(node, runs_of(cpu[node], mem[node], b.shape))
                first += time.process_time() - t0
            t0 = time.process_time()
            picked: list[int] = []
            keys, ends = own.keys, own.ends
            i = bisect_left(keys, (-b.start, -1))
            while len(picked) < b.vms and i < len(keys):
                key = keys[i]
                i += 1
                scanned += 1
                if ends[key] < b.end:
                    continue
                node = key[1]
                room = fit_count(cpu[node].min_over(b.start, b.end),
                                 mem[node].min_over(b.start, b.end), b.shape)
                picked.extend([node] * min(room, b.vms - len(picked)))
            ask += time.process_time() - t0
            asked += 1
            agreed += tuple(picked) == b.nodes
        assert b.nodes is not None
        counts = Counter(b.nodes)
        for node, count in counts.items():
            cpu[node].add(b.start, b.end, sign * count * b.shape.cpu)
            mem[node].add(b.start, b.end, sign * count * b.shape.memory)
        t0 = time.process_time()
        for node in counts:
            c, m = cpu[node], mem[node]
            low_cpu, low_mem = c.min_over(b.start, b.end), m.min_over(b.start, b.end)
            for shape, own in index.items():
                # a booking made keeps a shape's runs on the node when the node
                # still has room for it throughout the window, or had none anywhere
                # in it (a booking given back is not filtered)
                if sign < 0:
                    if low_cpu >= shape.cpu and low_mem >= shape.memory:
                        continue
                    if not any(x < b.end and y > b.start for x, y in own.of[node]):
                        continue
                t1 = time.process_time()
                runs = runs_of(c, m, shape)
                found += time.process_time() - t1
                moved += own.put(node, runs)
        upkeep += time.process_time() - t0
    return {"first": first, "upkeep": upkeep, "found": found, "ask": ask, "asked": asked,
            "agreed": agreed, "moved": moved, "scanned": scanned, "shapes": len(index)}


def main() -> None:
    args = sizes_and_seed(__doc__)
    for nodes in args.nodes:
        events, sizes, built = record(nodes, args.seed)
        r = replay(events, sizes)
        per = 1e6 / max(len(events), 1)
        print(f"nodes {nodes}: the build {built:.2f} CPU s, {len(events)} bookings made"
              f" or given back, {r['asked']} of them placed by the pool;"
              f" {r['agreed']} of the index's node choices agree", flush=True)
        print(f"  index: {r['shapes']:.0f} shapes' first runs {r['first']:.2f} s;"
              f" upkeep {r['upkeep']:.2f} s ({per * r['upkeep']:.0f} us a booking, finding"
              f" runs {per * r['found']:.0f} us of it; {r['moved'] * per / 1e6:.1f} runs"
              f" moved); questions {r['ask']:.2f} s"
              f" ({r['scanned'] / max(r['asked'], 1):.0f} runs read each)", flush=True)


if __name__ == "__main__":
    main()
