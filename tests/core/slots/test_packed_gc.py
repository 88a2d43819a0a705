"""A packed pool's indexes cost the garbage collector nothing: what a search learns
and the instants nodes change at are kept in objects the collector stops tracking, so
a large pool's full collections pass over its profiles and bookings alone (issue 20:
full collections were 0.34 of the 6.4 CPU s of building the 5,000-node preemption
state, growing faster than the pool)."""

from __future__ import annotations

import gc
from random import Random

import pytest

from builders import shared
from leasehold.core.model import Shape
from leasehold.core.slots import Booking, PackedPool


def tracked_from(root: object) -> int:
    """The objects reachable from ``root`` that the garbage collector tracks."""
    seen, stack, count = {id(root)}, [root], 0
    while stack:
        obj = stack.pop()
        count += gc.is_tracked(obj)
        for ref in gc.get_referents(obj):
            if id(ref) not in seen and not isinstance(ref, type):
                seen.add(id(ref))
                stack.append(ref)
    return count


def reservations(nodes: int, seed: int = 1) -> tuple[PackedPool, int]:
    """As many future reservations as nodes, of 1-3 VMs of many shapes, each booked
    at the earliest start a search finds from a random instant (the preemption
    benchmark's queued reservations in small)."""
    pool = PackedPool(shared(nodes, cpu=8000, memory=32768))
    rng, made = Random(seed), 0
    for i in range(nodes):
        shape = Shape(rng.choice((1000, 2000, 4000)), rng.randrange(2048, 8193, 512))
        vms, length = rng.choice((1, 1, 2, 3)), rng.randint(3600, 8 * 3600)
        start = pool.fit(vms, shape, length, rng.randint(1800, 6 * 3600))
        if start is None:
            continue
        pool.book(Booking(f"b{i}", "p", start, start + length, vms, shape, None,
                          (("run", start, start + length),)))
        made += 1
    return pool, made


@pytest.mark.parametrize("nodes", [100, 400], ids=["100-nodes", "400-nodes"])
def test_a_packed_pools_tracked_objects_are_its_profiles_and_bookings(nodes: int):
    # per node two profiles of two lists, per booking itself and its nodes: about 14
    # a booking here; a Counter per instant and an array per node and shape searched
    # (main before this change) made 24-30
    pool, made = reservations(nodes)
    assert made == nodes
    gc.collect()
    assert tracked_from(pool) <= 16 * made
