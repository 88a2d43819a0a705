"""Slot table: earliest fit, free windows and blockers, checked against brute force."""

from __future__ import annotations

from dataclasses import replace
from math import inf

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builders import exclusive, packed_copy, shared
from leasehold.core.model import PoolSpec, Shape
from leasehold.core.slots import (
    Booking,
    ExclusivePool,
    PackedPool,
    PoolTable,
    SharedPool,
    Statement,
    fit_count,
    fit_counts,
    make_pool,
)

ONE = Shape(1000, 512)


def book(pool, name, start, end, vms=1, shape=ONE):
    b = Booking(name, pool.spec.name, start, end, vms, shape, None, (("run", start, end),))
    pool.book(b)
    return b


@pytest.mark.parametrize(
    ("bookings", "vms", "duration", "earliest", "expected"),
    [
        ([], 4, 10, 0, 0),
        ([], 5, 10, 0, None),  # more VMs than nodes: never
        ([("a", 0, 10, 3)], 1, 10, 0, 0),  # one node left beside a
        ([("a", 0, 10, 3)], 2, 10, 0, 10),
        ([("a", 0, 10, 3), ("b", 20, 30, 4)], 2, 10, 0, 10),  # exactly fills [10, 20)
        ([("a", 0, 10, 3), ("b", 20, 30, 4)], 2, 11, 0, 30),  # one second too long
        ([("a", 5, 10, 4)], 1, 5, 0, 0),  # a hole before a future booking
        ([("a", 5, 10, 4)], 1, 6, 0, 10),
        ([("a", 5, 10, 4)], 1, 5, 3, 10),  # from 3 the hole is too short
    ],
)
def test_exclusive_fit_table(bookings, vms, duration, earliest, expected):
    pool = ExclusivePool(exclusive(4))
    for name, s, e, n in bookings:
        book(pool, name, s, e, n)
    assert pool.fit(vms, ONE, duration, earliest) == expected


def test_exclusive_fit_respects_latest_start():
    pool = ExclusivePool(exclusive(2))
    book(pool, "a", 0, 10, 2)
    assert pool.fit(1, ONE, 5, 0, latest_start=9) is None
    assert pool.fit(1, ONE, 5, 0, latest_start=10) == 10


def test_exclusive_vm_larger_than_node_never_fits():
    pool = ExclusivePool(exclusive(4))
    assert pool.fit(1, Shape(2000, 512), 1, 0) is None
    assert pool.max_vms(Shape(2000, 512)) == 0


def test_exclusive_profile_merges_back_after_unbook():
    pool = ExclusivePool(exclusive(4))
    a = book(pool, "a", 0, 10, 2)
    b = book(pool, "b", 5, 20, 1)
    pool.unbook(a)
    pool.unbook(b)
    assert pool.nodes_free.times == [-inf] and pool.nodes_free.free == [4]


def test_exclusive_occupy_gives_lowest_free_nodes_and_releases_them():
    pool = ExclusivePool(exclusive(4))
    a = book(pool, "a", 0, 10, 2)
    b = book(pool, "b", 0, 10, 1)
    assert pool.occupy(a, 0) == (0, 1)
    assert pool.occupy(b, 0) == (2,)
    pool.unbook(a)
    c = book(pool, "c", 0, 10, 3)
    assert pool.occupy(c, 0) == (0, 1, 3)
    assert pool.usage_violations() == []


def test_exclusive_truncate_frees_the_tail():
    pool = ExclusivePool(exclusive(1))
    a = book(pool, "a", 0, 100, 1)
    assert pool.fit(1, ONE, 10, 0) == 100
    pool.truncate(a, 40, (("run", 0, 40),))
    assert pool.fit(1, ONE, 10, 0) == 40


def test_shared_packs_vms_on_one_node_first():
    pool = PackedPool(shared(2, cpu=4000, memory=8192))
    a = book(pool, "a", 0, 10, 3, Shape(1000, 1024))
    assert a.nodes == (0, 0, 0)
    b = book(pool, "b", 0, 10, 2, Shape(1000, 1024))
    assert b.nodes == (0, 1)
    assert pool.usage_violations() == []


def test_shared_memory_is_a_constraint_too():
    pool = SharedPool(shared(1, cpu=4000, memory=2048))  # packed: two shapes
    book(pool, "a", 0, 10, 1, Shape(500, 1536))
    # plenty of cpu left, but only 512 MiB of memory until t=10
    assert pool.fit(1, Shape(500, 1024), 5, 0) == 10


def test_free_window_ends_at_the_blocking_booking():
    for pool in (ExclusivePool(exclusive(2)), SharedPool(shared(2, cpu=1000, memory=1024))):
        book(pool, "a", 30, 40, 2)
        assert pool.free_window(1, ONE, 0) == 30
        assert pool.free_window(1, ONE, 40) == inf
        assert pool.free_window(1, ONE, 35) == 0


# ---- brute-force oracle --------------------------------------------------------------

def _brute_fit(spec: PoolSpec, bookings, vms, shape, duration, earliest, horizon=200):
    """Earliest integer T: at every integer instant of [T, T+d) some per-node packing
    holds ``vms`` more VMs. Bookings on concrete nodes (shared) or counted (exclusive)."""
    for t in range(earliest, horizon):
        ok = True
        for x in range(t, t + duration):
            if spec.exclusive:
                used = sum(n for (_, s, e, n, _) in bookings if s <= x < e)
                if spec.nodes - used < vms:
                    ok = False
                    break
        if spec.exclusive:
            if ok:
                return t
            continue
        room = 0
        for node in range(spec.nodes):
            worst = 1 << 30
            for x in range(t, t + duration):
                cpu = sum(sh.cpu * nodes.count(node) for (_, s, e, _, (sh, nodes)) in bookings
                          if s <= x < e)
                mem = sum(sh.memory * nodes.count(node) for (_, s, e, _, (sh, nodes)) in bookings
                          if s <= x < e)
                fit = min((spec.cpu - cpu) // shape.cpu, (spec.memory - mem) // shape.memory)
                worst = min(worst, fit)
            room += max(worst, 0)
        if room >= vms:
            return t
    return None


booking_st = st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(1, 3),
                       st.sampled_from([Shape(1000, 1024), Shape(2000, 512), Shape(500, 3072)]))


@settings(max_examples=300, deadline=None)
@given(
    exclusive_pool=st.booleans(),
    raw=st.lists(booking_st, max_size=6),
    vms=st.integers(1, 4),
    shape=st.sampled_from([Shape(1000, 1024), Shape(2000, 2048), Shape(500, 512)]),
    duration=st.integers(1, 25),
    earliest=st.integers(0, 30),
)
def test_fit_agrees_with_brute_force(exclusive_pool, raw, vms, shape, duration, earliest):
    spec = exclusive(4) if exclusive_pool else shared(3, cpu=4000, memory=4096)
    pool = make_pool(spec)
    kept = []
    for i, (s, d, n, sh) in enumerate(raw):
        if exclusive_pool:
            sh = Shape(1000, 512)
        # keep only bookings that fit where the table itself would put them
        if pool.fit(n, sh, d, s, latest_start=s) is None:
            continue
        b = Booking(f"b{i}", spec.name, s, s + d, n, sh, None, (("run", s, s + d),))
        pool.book(b)
        kept.append(b)
    assert pool.usage_violations() == []
    shape = shape if not exclusive_pool else Shape(1000, 512)
    got = pool.fit(vms, shape, duration, earliest)
    if isinstance(pool, SharedPool) and pool.counted:
        # one shape, counted: the VMs of that shape the nodes hold, as whole slots
        slots = spec.nodes * fit_count(spec.cpu, spec.memory, shape)
        counted = [(b.lease, b.start, b.end, b.vms, None) for b in kept]
        want = _brute_fit(replace(spec, nodes=slots, exclusive=True), counted, vms, shape,
                          duration, earliest)
    else:  # packed: the nodes the bookings are pinned to (a switch pins them)
        pinned = [(b.lease, b.start, b.end, b.vms, (b.shape, list(b.nodes or ())))
                  for b in kept]
        want = _brute_fit(spec, pinned, vms, shape, duration, earliest)
    assert got == want


@settings(max_examples=300, deadline=None)
@given(
    raw=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(1, 4)),
                 min_size=1, max_size=8),
    pick=st.integers(0, 7),
    earliest=st.integers(0, 40),
)
def test_exclusive_move_earlier_agrees_with_unbook_and_refit(raw, pick, earliest):
    """The profile-only shortcut gives what removing the booking and fitting again gives."""
    fast, slow = ExclusivePool(exclusive(4)), ExclusivePool(exclusive(4))
    pairs = []
    for i, (s, d, n) in enumerate(raw):
        if fast.fit(n, ONE, d, s, latest_start=s) is None:
            continue
        pairs.append((book(fast, f"b{i}", s, s + d, n), book(slow, f"b{i}", s, s + d, n)))
    if not pairs:
        return
    b, twin = pairs[pick % len(pairs)]
    got = fast.move_earlier(b, earliest, b.end - b.start)
    want = PoolTable.move_earlier(slow, twin, earliest, b.end - b.start)
    assert got == want
    f, w = fast.nodes_free, slow.nodes_free
    assert (f.times, f.free) == (w.times, w.free)
    assert (b in fast.bookings) == (got is None)


def test_shared_future_booking_prefers_nodes_freed_just_before_it():
    # node 0 is idle; node 1 is busy until 50. A booking at [50, 60) goes to node 1,
    # which leaves node 0 free for work that can start now and run 40 s.
    pool = PackedPool(shared(2, cpu=1000, memory=1024))
    pool.book(Booking("busy", "p", 0, 50, 1, ONE, (1,), (("run", 0, 50),)))
    x = book(pool, "x", 50, 60)
    assert x.nodes == (1,)
    assert pool.fit(1, ONE, 100, 0) == 0  # node 0 is still free from now on


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from(["book", "unbook", "fit"]), st.integers(0, 40),
                           st.integers(1, 30), st.integers(1, 3),
                           st.sampled_from([Shape(1000, 1024), Shape(2000, 512)])),
                 min_size=1, max_size=25),
)
def test_shared_fit_after_any_history_agrees_with_a_fresh_table(ops):
    """A shared pool remembers, per candidate start, which nodes have room there: after
    any mix of fits, bookings and bookings given back, its answers are those of a
    table that holds the same bookings and was never asked before."""
    spec = shared(3, cpu=4000, memory=4096)
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i, (op, s, d, n, sh) in enumerate(ops):
        if op == "unbook" and held:
            pool.unbook(held.pop(s % len(held)))
        elif op == "book" and pool.fit(n, sh, d, s, latest_start=s) is not None:
            held.append(book(pool, f"b{i}", s, s + d, n, sh))
        fresh = PackedPool(spec)
        for b in held:
            fresh.book(Booking(b.lease, b.pool, b.start, b.end, b.vms, b.shape, b.nodes,
                               b.segments))
        for t in range(0, 60, 7):
            assert pool.fit(n, sh, d, t) == fresh.fit(n, sh, d, t), (i, t)


@settings(max_examples=300, deadline=None)
@given(
    raw=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 30), st.integers(1, 4),
                           st.sampled_from([Shape(1000, 1024), Shape(2000, 512)])),
                 min_size=1, max_size=14),
    gone=st.integers(0, 13),
    earliest=st.integers(0, 20),
)
def test_shared_compression_agrees_with_a_fresh_table_at_every_trial(raw, gone, earliest):
    """A compression pass (a booking given back, then each other one moved earlier
    if it can, in order): a shared pool skips the starts its failed trials ruled
    out, and answers every trial as a table that holds the same bookings and was
    never asked before does."""
    spec = shared(3, cpu=4000, memory=4096)
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i, (s, d, n, sh) in enumerate(raw):
        if pool.fit(n, sh, d, s, latest_start=s) is not None:
            held.append(book(pool, f"b{i}", s, s + d, n, sh))
    if len(held) < 2:
        return
    pool.unbook(held.pop(gone % len(held)))
    for k, b in enumerate(list(held)):
        fresh = packed_copy(spec, held)
        twin = next(x for x in fresh.bookings if x.lease == b.lease)
        length = b.end - b.start
        want = PoolTable.move_earlier(fresh, twin, earliest, length)
        got = pool.move_earlier(b, earliest, length)
        assert got == want, (k, b.lease)
        if got is not None:  # booked again there, as the planner does
            moved = Booking(b.lease, b.pool, got, got + length, b.vms, b.shape, None,
                            (("run", got, got + length),))
            pool.book(moved)
            held[k] = moved


@pytest.mark.parametrize(("blockers", "tried", "expected"), [
    # x (5 s) cannot move before 22; y (10 s, behind it in order) can, to 10, into
    # the room its own booking gives back: x's failure rules out only the starts
    # whose window ends before y's own start
    ([(0, 10, 2)], [("x", 22, 27, 2), ("y", 12, 22, 2)], [None, 10]),
    # x needs both cpus and finds them nowhere before 50; y needs one, free from 0
    ([(0, 50, 1)], [("x", 50, 55, 2), ("y", 60, 65, 1)], [None, 0]),
], ids=["own-room-counts", "fewer-vms-fit"])
def test_shared_compression_rules_out_only_what_a_failed_trial_proves(blockers, tried,
                                                                       expected):
    pool = PackedPool(shared(1, cpu=2000, memory=4096))
    for i, (s, e, n) in enumerate(blockers):
        book(pool, f"blocker{i}", s, e, n)
    moves = [book(pool, name, s, e, n) for name, s, e, n in tried]
    assert [pool.move_earlier(b, 0, b.end - b.start) for b in moves] == expected


@settings(max_examples=300, deadline=None)
@given(
    raw=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30), st.integers(1, 4),
                           st.sampled_from([Shape(1000, 1024), Shape(2000, 512)])),
                 min_size=2, max_size=12),
    rounds=st.lists(st.tuples(st.sampled_from(["give", "book", "probe"]), st.integers(0, 40),
                              st.integers(0, 6)),
                    min_size=1, max_size=4),
)
def test_shared_compressions_on_proven_bookings_agree_with_a_fresh_table(raw, rounds):
    """Bookings placed at the earliest start a search found carry that proof, and a
    trial that fails renews it: later compressions search only the windows that
    overlap capacity given back since. Over rounds of bookings given back, new ones
    made, trials undone and the present moving on, every trial answers as a table
    that holds the same bookings and was never asked before does."""
    spec = shared(3, cpu=4000, memory=4096)
    pool = PackedPool(spec)
    held: list[Booking] = []

    def place(name: str, s: int, d: int, n: int, sh: Shape) -> None:
        t = pool.fit(n, sh, d, s)
        if t is not None:
            held.append(book(pool, name, t, t + d, n, sh))

    for i, (s, d, n, sh) in enumerate(raw):
        place(f"b{i}", s, d, n, sh)
    now = 0
    for r, (op, x, step) in enumerate(rounds):
        now += step
        pool.prune(now)
        if op == "give" and held:
            pool.unbook(held.pop(x % len(held)))
        elif op == "book":
            place(f"r{r}", max(x, now), 1 + x % 20, 1 + x % 3, Shape(1000, 1024))
        elif op == "probe" and held:  # a preemption's trial: given back, then undone
            with Statement(pool) as trial:
                trial.unbook(held[x % len(held)])
        for k, b in enumerate(list(held)):
            if b.start <= now:
                continue
            fresh = packed_copy(spec, held)
            twin = next(y for y in fresh.bookings if y.lease == b.lease)
            length = b.end - b.start
            want = PoolTable.move_earlier(fresh, twin, now, length)
            got = pool.move_earlier(b, now, length)
            assert got == want, (r, k, b.lease)
            if got is not None:
                pool.book(moved := Booking(b.lease, b.pool, got, got + length, b.vms,
                                           b.shape, None, (("run", got, got + length),)))
                held[k] = moved
        assert pool.usage_violations() == []


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(-5000, 40_000), st.integers(-5000, 70_000)),
                      max_size=12),
       cpu=st.integers(0, 3000), memory=st.integers(0, 5000))
def test_fit_counts_is_fit_count_of_each_pair(pairs, cpu, memory):
    # negative free amounts (an estimate gone below zero) and shapes without a resource
    shape = Shape(cpu, memory)
    cpus = np.array([c for c, _ in pairs], dtype=np.int64)
    mems = np.array([m for _, m in pairs], dtype=np.int64)
    assert fit_counts(cpus, mems, shape).tolist() == [fit_count(c, m, shape) for c, m in pairs]
