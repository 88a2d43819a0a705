"""The shared pool's two modes: counted while its bookings are of one shape (nodes
bound when a lease starts), packed (every booking pinned) otherwise, and the switches
between them."""

from __future__ import annotations

import pytest

from builders import config, req, run, shared
from leasehold.core.model import PoolSpec, Shape
from leasehold.core.preemption.instance import Victim, build
from leasehold.core.slots import DOWN, Booking, SharedPool, SlotTable, Statement

ONE = Shape(1000, 1024)  # four to a node of 4000 / 4096
TWO = Shape(2000, 1024)  # two to a node
SPEC = shared(3, cpu=4000, memory=4096)


def booking(name: str, start: float, end: float, vms: int = 1, shape: Shape = ONE,
            nodes: tuple[int, ...] | None = None) -> Booking:
    return Booking(name, SPEC.name, start, end, vms, shape, nodes, (("run", start, end),))


def pool_with(*bookings: Booking, spec: PoolSpec = SPEC) -> SharedPool:
    pool = SharedPool(spec)
    for b in bookings:
        pool.book(b)
    return pool


def test_one_shape_is_counted_and_bound_to_nodes_only_when_it_starts():
    a, b = booking("a", 0, 10, 3), booking("b", 5, 20, 6)
    pool = pool_with(a, b)
    assert pool.counted and a.nodes is None and b.nodes is None
    # 12 slots: 9 free in [0, 5), 3 in [5, 10), 6 in [10, 20), all from 20
    assert pool.fit(3, ONE, 10, 0) == 0
    assert pool.fit(4, ONE, 10, 0) == 10
    assert pool.fit(7, ONE, 5, 1) == 20
    assert pool.occupy(a, 0) == (0, 0, 0)
    assert pool.usage_violations() == []


@pytest.mark.parametrize(("held", "vms", "expected"), [
    ((), 2, (0, 0)),  # all empty: the lowest index
    (((1, 1),), 2, (1, 1)),  # node 1 is fullest with room: fill it
    (((1, 1, 1),), 2, (1, 0)),  # its last slot, then the lowest empty node
    (((0, 0), (2, 2, 2)), 2, (2, 0)),  # node 2 has 1 free, node 0 has 2
    (((0, 0, 0, 0), (1, 1, 1, 1)), 3, (2, 2, 2)),  # only node 2 has room
], ids=["empty", "fullest", "spill", "fullest-then-next", "only-room"])
def test_a_start_fills_the_fullest_node_with_room_first(held, vms, expected):
    started = [booking(f"h{i}", 0, 100, len(nodes), nodes=nodes) for i, nodes in enumerate(held)]
    pool = pool_with(*started)
    b = booking("b", 0, 50, vms)
    pool.book(b)
    assert pool.occupy(b, 0) == expected
    assert pool.usage_violations() == []


@pytest.mark.parametrize("trigger", ["book", "fit", "free_window", "preemption"])
def test_another_shape_switches_to_packed_pinning_by_start_without_moving_anything(trigger):
    running = booking("running", 0, 30, 2)
    later, sooner = booking("later", 20, 40, 6), booking("sooner", 10, 25, 4)
    pool = pool_with(running, later, sooner)
    pool.occupy(running, 0)
    assert running.nodes == (0, 0)
    if trigger == "book":
        pool.book(booking("other", 0, 5, 1, TWO))
    elif trigger == "fit":
        pool.fit(1, TWO, 5, 0)
    elif trigger == "free_window":
        pool.free_window(1, TWO, 0)
    else:
        build(pool, TWO, 1, 0, 5, [], 0)
    assert not pool.counted
    # the started one kept its nodes; the others were pinned in order of start, the
    # fullest node with room first: sooner at 10 fills node 0 (2 free) then node 1;
    # later at 20 (every slot of [20, 25) taken) gets what is left
    assert running.nodes == (0, 0)
    assert sooner.nodes == (0, 0, 1, 1)
    assert later.nodes == (1, 1, 2, 2, 2, 2)
    assert [(b.start, b.end) for b in (running, later, sooner)] == [(0, 30), (20, 40), (10, 25)]
    assert list(pool.bookings)[:3] == [running, later, sooner]  # the order is kept
    assert pool.usage_violations() == []


def test_pinning_by_start_always_succeeds_where_the_count_fits():
    # every slot of the pool taken at [10, 20) by bookings made in reverse order
    parts = [booking(f"b{i}", 10 - i, 20 + i, 4) for i in range(3)]
    pool = pool_with(*reversed(parts))
    pool.fit(1, TWO, 1, 0)
    assert not pool.counted
    assert sorted(n for b in parts for n in b.nodes or ()) == [0] * 4 + [1] * 4 + [2] * 4
    assert pool.usage_violations() == []


@pytest.mark.parametrize(("now", "kept", "dropped"), [
    (0, ["running"], ["soon", "late"]),
    (15, ["running", "soon"], ["late"]),
], ids=["before-any-start", "one-started"])
def test_back_to_counted_at_prune_once_one_shape_is_left(now, kept, dropped):
    running, soon, late = booking("running", 0, 30, 2), booking("soon", 10, 20), \
        booking("late", 40, 50, 5)
    other = booking("other", 0, 60, 1, TWO)
    pool = pool_with(running, other, soon, late)
    pool.occupy(running, 0)
    if now >= 10:
        pool.occupy(soon, 10)
    assert not pool.counted
    pool.unbook(other)
    assert not pool.counted  # until the next prune: the pins stay meanwhile
    pool.prune(now)
    assert pool.counted
    named = {b.lease: b for b in pool.bookings}
    assert all(named[n].nodes is not None for n in kept)
    assert all(named[n].nodes is None for n in dropped)
    assert pool.usage_violations() == []


def test_two_shapes_stay_packed_at_prune():
    pool = pool_with(booking("a", 0, 10), booking("b", 20, 30, 1, TWO))
    pool.prune(5)
    assert not pool.counted


def test_an_empty_pool_counts_the_shape_it_is_asked_about():
    pool = SharedPool(SPEC)
    assert pool.fit(6, TWO, 5, 0) == 0  # two per node: 6 fit
    assert pool.fit(7, TWO, 5, 0) is None  # more than the pool holds: no switch either
    assert pool.counted
    assert pool.fit(12, ONE, 5, 0) == 0
    assert pool.counted  # nothing held: counted for the new shape


@pytest.mark.parametrize("mode", ["counted", "packed"])
def test_down_nodes_hold_every_slot_and_are_never_chosen(mode):
    table = SlotTable([SPEC])
    [down] = table.rebuild(SPEC, frozenset({0}), 0, [])
    assert down is not None and down.lease == DOWN
    pool = table.pools[SPEC.name]
    assert isinstance(pool, SharedPool)
    if mode == "packed":
        pool.book(booking("other", 0, 100, 1, TWO))
    # counted: node 0's four slots are gone; packed: so is what "other" takes
    free = 8 if mode == "counted" else 6
    assert pool.fit(free + 1, ONE, 5, 0, latest_start=0) is None
    assert pool.fit(free, ONE, 5, 0) == 0
    b = booking("b", 0, 10, free)
    pool.book(b)
    assert 0 not in pool.occupy(b, 0)
    assert pool.usage_violations() == []
    assert pool.fit(1, ONE, 5, 0) == 10


def test_a_trial_on_a_counted_pool_is_undone_whole():
    a = booking("a", 0, 10, 4)
    pool = pool_with(a)
    with Statement(pool) as trial:
        trial.book(booking("t", 0, 10, 8))
        assert pool.fit(1, ONE, 5, 0) == 10
    assert pool.fit(8, ONE, 5, 0) == 0
    assert list(pool.bookings) == [a]
    assert pool.usage_violations() == []


def test_compression_on_a_counted_pool_moves_into_the_count():
    blocker = booking("blocker", 0, 10, 12)
    waiting = booking("w", 10, 20, 6)
    pool = pool_with(blocker, waiting)
    pool.truncate(blocker, 5, (("run", 0, 5),))
    assert pool.move_earlier(waiting, 0, 10) == 5
    assert list(pool.bookings) == [blocker]
    assert pool.usage_violations() == []


@pytest.mark.parametrize(("second", "bins", "dims"), [
    (ONE, 1, 1),  # counted: one bin of free slots, like an exclusive pool
    (TWO, 2, 2),  # packed: a bin per node a victim is on, cpu and memory
], ids=["counted", "packed"])
def test_a_preemption_instance_follows_the_mode(second, bins, dims):
    a, b = booking("a", 0, 100, 2), booking("b", 0, 100, 4)
    pool = pool_with(a, b)
    pool.occupy(a, 0)
    pool.occupy(b, 0)
    victims = [Victim(x.lease, "cancel", x.vms, 1.0, 0.0, 0.0, 0.0, i, x)
               for i, x in enumerate((a, b))]
    inst = build(pool, second, 9 if second == ONE else 4, 0, 10, victims, 0)
    assert len(inst.bins) == bins and len(inst.bins[0].free) == dims
    assert inst.feasible([0, 1]) and not inst.feasible([])


def test_a_restored_pool_drops_at_its_first_prune_the_pins_of_bookings_not_started():
    # a snapshot of a pool packed with one shape left (the other shape gone since
    # the last prune) is restored booking by booking into a fresh pool, which cannot
    # tell started from pinned: its first prune does, as the original's does
    started, pinned = booking("started", 0, 30, 2, nodes=(0, 0)), \
        booking("pinned", 20, 40, 4, nodes=(1, 1, 1, 1))
    pool = pool_with(started, pinned)
    assert pool.counted
    pool.prune(10)
    assert pool.counted and started.nodes == (0, 0) and pinned.nodes is None
    assert pool.usage_violations() == []
    # once it knows the present, a booking pinned ahead of its start is packed
    ahead = booking("ahead", 50, 60, 1, nodes=(2,))
    pool.book(ahead)
    assert not pool.counted and ahead.nodes == (2,)
    assert pool.usage_violations() == []


@pytest.mark.parametrize(("start", "cpu", "memory", "switches"), [
    pytest.param(20, 500, 512, False, id="no slot free: answered counted"),
    pytest.param(60, 2000, 512, False, id="one slot's cpu short: answered counted"),
    pytest.param(60, 500, 2048, False, id="one slot's memory short: answered counted"),
    pytest.param(60, 500, 512, True, id="room by the count: asked packed"),
])
def test_a_query_for_one_start_the_count_rules_out_does_not_switch(start, cpu, memory,
                                                                    switches):
    # 12 slots of ONE; 11 held to 100 and 1 to 50: one slot's cpu and memory free after
    pool = pool_with(booking("a", 0, 100, 11), booking("b", 0, 50, 1))
    t = pool.fit(1, Shape(cpu, memory), 10, start, start)
    assert (t is not None) is switches
    assert pool.counted is not switches


def test_easy_asking_a_queued_lease_of_another_shape_keeps_the_pool_counted():
    """Regression: EASY asks a queued lease whether it fits now at every event; a
    lease of another shape switched the counted pool to packed each time, and the
    next prune back (131 times each way, 8x the CPU, on this workload)."""
    leases = [req(f"a{i:03d}", 2, 100 + (i % 50), 0, cpu=1000, memory=512)
              for i in range(300)]
    leases.append(req("b", 1, 10, 0.5, cpu=3000, memory=512))
    modes: list[bool] = []

    def check(sched, now, actions):
        pool = sched.slots.pools["p"]
        if len({b.shape for b in pool.bookings}) == 1:
            modes.append(pool.counted)

    run([shared(50, 4000, 8192)], leases, config("easy"), check=check)
    assert modes and all(modes)
