"""A packed pool's node choice on pools of mixed node sizes (several cpu and memory
sizes in one pool) after any history of searches, bookings, bookings given back and
compression trials: every booking's nodes are the rule's (best fit in time, then node
index, each node filled), checked against the rule written out by brute force over
every integer instant and every node's own size.

The pools (2-30 nodes) are mostly large enough that a new start's node index is copied
from a neighbouring start's, of the same shape or of a smaller one, and a booking's
window is read off what earlier searches learnt of the nodes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import packed_rule
from leasehold.core.model import NodeGroup, PoolSpec, Shape
from leasehold.core.slots import Booking, PackedPool

#: shapes that fit in one another and shapes that do not (cpu-heavy, memory-heavy)
SHAPES = [Shape(1000, 1024), Shape(2000, 512), Shape(500, 3072), Shape(2000, 4096),
          Shape(1000, 2048)]
#: node sizes: cores and memory that do not grow together
SIZES = [(2000, 4096), (4000, 8192), (8000, 4096), (4000, 16384), (3000, 6144)]


def booking(name: str, start: int, end: int, vms: int, shape: Shape) -> Booking:
    return Booking(name, "p", start, end, vms, shape, None, (("run", start, end),))


groups_st = st.lists(st.tuples(st.integers(1, 6), st.sampled_from(SIZES)),
                     min_size=2, max_size=4)
ops_st = st.lists(st.tuples(st.sampled_from(["book", "book", "book", "unbook", "fit",
                                             "compress"]),
                            st.integers(0, 60), st.integers(1, 25), st.integers(1, 8),
                            st.sampled_from(SHAPES)),
                  min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(groups=groups_st, extra=st.integers(0, 6), ops=ops_st)
def test_node_choice_on_mixed_pools_is_the_rules_after_any_history(groups, extra, ops):
    spec = PoolSpec("p", sum(n for n, _ in groups) + extra, 4000, 8192,
                    groups=tuple(NodeGroup(n, cpu, mem) for n, (cpu, mem) in groups))
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i, (op, s, d, n, sh) in enumerate(ops):
        if op == "unbook" and held:
            pool.unbook(held.pop(s % len(held)))
        elif op == "fit":
            pool.fit(n, sh, d, s)
        elif op == "compress" and held:
            b = held[s % len(held)]
            t = pool.move_earlier(b, 0, b.end - b.start)
            if t is not None:  # taken out: booked again where it moves to
                held.remove(b)
                at, length = int(t), int(b.end - b.start)  # every instant a whole one
                want = packed_rule(spec, held, b.vms, b.shape, at, at + length)
                moved = booking(b.lease, at, at + length, b.vms, b.shape)
                pool.book(moved)
                assert moved.nodes == want, i
                held.append(moved)
        elif op == "book":
            # the earliest start from ``s`` on, as a plan asks (new starts, and
            # starts read off neighbouring ones)
            t = pool.fit(n, sh, d, s)
            if t is None:
                continue
            at = int(t)
            want = packed_rule(spec, held, n, sh, at, at + d)
            b = booking(f"b{i}", at, at + d, n, sh)
            pool.book(b)
            assert b.nodes == want, i
            held.append(b)
    assert pool.usage_violations() == []
