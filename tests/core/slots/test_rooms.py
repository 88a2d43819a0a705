"""Where a shared pool's nodes hold VMs of a shape: each node's levels, and the two
questions asked of all nodes at once, checked against brute force over integer
instants (every booking starts and ends on one, so every answer is one too)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import shared
from leasehold.core.model import Shape
from leasehold.core.slots import Booking, PackedPool, fit_count
from leasehold.core.slots.rooms import Rooms, levels

SPEC = shared(3, cpu=4000, memory=4096)
SHAPES = [Shape(1000, 1024), Shape(2000, 512), Shape(500, 3072)]
HORIZON = 90

bookings_st = st.lists(
    st.tuples(st.integers(0, 50), st.integers(1, 30), st.integers(1, 3), st.sampled_from(SHAPES)),
    max_size=8)


def _pool(raw) -> tuple[PackedPool, list[Booking]]:
    pool, held = PackedPool(SPEC), []
    for i, (s, d, n, shape) in enumerate(raw):
        if pool.fit(n, shape, d, s, latest_start=s) is not None:
            b = Booking(f"b{i}", SPEC.name, s, s + d, n, shape, None, (("run", s, s + d),))
            pool.book(b)
            held.append(b)
    return pool, held


def _held(held: list[Booking], node: int, shape: Shape, x: int) -> int:
    """VMs of ``shape`` the node holds at instant ``x``, from the bookings alone."""
    cpu = SPEC.cpu - sum(b.shape.cpu * (b.nodes or ()).count(node)
                         for b in held if b.start <= x < b.end)
    mem = SPEC.memory - sum(b.shape.memory * (b.nodes or ()).count(node)
                            for b in held if b.start <= x < b.end)
    return fit_count(cpu, mem, shape)


def _throughout(held, node, shape, t, length) -> int:
    return min(_held(held, node, shape, x) for x in range(t, t + max(length, 1)))


def _rooms(pool: PackedPool, shape: Shape, now: float = 0.0) -> Rooms:
    top = fit_count(SPEC.cpu, SPEC.memory, shape)
    return Rooms(SPEC.nodes,
                 lambda node: levels(pool.node_cpu[node], pool.node_mem[node], shape, top, now))


@settings(max_examples=200, deadline=None)
@given(raw=bookings_st, shape=st.sampled_from(SHAPES), now=st.integers(0, 40))
def test_levels_count_the_vms_each_node_holds_at_every_instant(raw, shape, now):
    pool, held = _pool(raw)
    top = fit_count(SPEC.cpu, SPEC.memory, shape)
    for node in range(SPEC.nodes):
        spans = levels(pool.node_cpu[node], pool.node_mem[node], shape, top, now)
        for x in range(now, HORIZON):
            assert sum(1 for a, b, _ in spans if a <= x < b) == _held(held, node, shape, x)
        for level in range(1, top + 1):  # the longest spans: one level's never touch
            mine = sorted((a, b) for a, b, k in spans if k == level)
            assert all(b < c for (_, b), (c, _) in pairwise(mine))
            assert all(a >= now for a, _ in mine)


def test_levels_stop_at_the_top_asked_for():
    pool = PackedPool(SPEC)
    spans = levels(pool.node_cpu[0], pool.node_mem[0], Shape(500, 512), 3, 0.0)
    assert sorted(spans) == [(0.0, float("inf"), 1), (0.0, float("inf"), 2),
                             (0.0, float("inf"), 3)]


@settings(max_examples=300, deadline=None)
@given(raw=bookings_st, shape=st.sampled_from(SHAPES), vms=st.integers(1, 8),
       earliest=st.integers(0, 40), span=st.integers(0, 40), length=st.integers(1, 25))
def test_first_is_where_the_nodes_first_hold_the_vms(raw, shape, vms, earliest, span, length):
    pool, held = _pool(raw)
    latest = earliest + span
    want = next((t for t in range(earliest, latest + 1)
                 if sum(_throughout(held, n, shape, t, length) for n in range(SPEC.nodes))
                 >= vms), None)
    assert _rooms(pool, shape).first(vms, earliest, latest, length) == want


@settings(max_examples=300, deadline=None)
@given(raw=bookings_st, shape=st.sampled_from(SHAPES), earliest=st.integers(0, 40),
       span=st.integers(0, 40), length=st.integers(1, 25))
def test_holding_names_the_nodes_with_a_window(raw, shape, earliest, span, length):
    pool, held = _pool(raw)
    want = [n for n in range(SPEC.nodes)
            if any(_throughout(held, n, shape, t, length) >= 1
                   for t in range(earliest, earliest + span + 1))]
    assert _rooms(pool, shape).holding(earliest, earliest + span, length) == want


@settings(max_examples=100, deadline=None)
@given(before=bookings_st, after=bookings_st, shape=st.sampled_from(SHAPES),
       vms=st.integers(1, 6), length=st.integers(1, 20))
def test_a_node_forgotten_is_read_again(before, after, shape, vms, length):
    """Answers follow the bookings once the nodes they changed are forgotten, as the
    pool does at every booking made or given back."""
    pool, held = _pool(before)
    rooms = _rooms(pool, shape)
    rooms.first(vms, 0, 40, length)  # every node read once
    for i, (s, d, n, sh) in enumerate(after):
        if pool.fit(n, sh, d, s, latest_start=s) is not None:
            b = Booking(f"a{i}", SPEC.name, s, s + d, n, sh, None, (("run", s, s + d),))
            pool.book(b)
            held.append(b)
            for node in set(b.nodes or ()):
                rooms.forget(node)
    fresh = _rooms(pool, shape)
    assert rooms.first(vms, 0, 40, length) == fresh.first(vms, 0, 40, length)
    assert rooms.holding(0, 40, length) == fresh.holding(0, 40, length)
    for node in range(SPEC.nodes):
        assert rooms.runs(node) == fresh.runs(node)


def test_levels_left_out_rule_nothing_out():
    pool = PackedPool(SPEC)
    rooms = Rooms(SPEC.nodes, lambda node: levels(pool.node_cpu[node], pool.node_mem[node],
                                                  Shape(1000, 1024), 1, 0.0), complete=False)
    assert rooms.first(12, 5, 9, 10) == 5  # 12 VMs fit from 5, but only one level is kept
    assert rooms.first(1, 9, 5, 10) is None
