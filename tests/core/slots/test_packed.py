"""Packed pools at scale: a booking's node choice reads only the nodes that can hold
it, and stays the rule's (best fit in time, then index), checked against brute force."""

from __future__ import annotations

from math import inf

from hypothesis import given, settings
from hypothesis import strategies as st

from builders import packed_copy, packed_rule, shared
from leasehold.core.model import Shape
from leasehold.core.profile import Profile
from leasehold.core.slots import Booking, PackedPool

ONE = Shape(1000, 1024)
SHAPES = [Shape(1000, 1024), Shape(2000, 512), Shape(500, 3072)]


def booking(name: str, start: float, end: float, vms: int = 1, shape: Shape = ONE,
            nodes: tuple[int, ...] | None = None) -> Booking:
    return Booking(name, "p", start, end, vms, shape, nodes, (("run", start, end),))


class ReadLog(Profile):
    """A node's profile that notes in a shared set when it is read."""

    __slots__ = ("log", "node")

    def __init__(self, capacity: int, node: int, log: set[int]) -> None:
        super().__init__(capacity)
        self.node, self.log = node, log

    def at(self, t: float) -> int:
        self.log.add(self.node)
        return super().at(t)

    def min_over(self, start: float, end: float) -> int:
        self.log.add(self.node)
        return super().min_over(start, end)

    def free_since(self, amount: int, t: float) -> float:
        self.log.add(self.node)
        return super().free_since(amount, t)


def logged_pool(nodes: int) -> tuple[PackedPool, set[int]]:
    pool = PackedPool(shared(nodes, cpu=4000, memory=8192))
    log: set[int] = set()
    pool.node_cpu = [ReadLog(4000, n, log) for n in range(nodes)]
    pool.node_mem = [ReadLog(8192, n, log) for n in range(nodes)]
    return pool, log


def test_booking_on_an_idle_pool_reads_only_the_nodes_it_takes():
    pool, log = logged_pool(1000)
    assert pool.fit(6, ONE, 10, 0) == 0  # the search learns which nodes have room at 0
    log.clear()
    b = booking("a", 0, 10, 6)
    pool.book(b)
    assert b.nodes == (0, 0, 0, 0, 1, 1)
    assert log == {0, 1}


def test_booking_skips_nodes_freed_earlier_only_by_their_rank():
    # nodes 3 and 7 were given capacity back at 40 and 45: best fit in time takes the
    # later first, then the earlier, then the rest by index; nothing else is read
    # beyond the nodes taken
    pool, log = logged_pool(1000)
    pool.book(booking("x", 0, 40, 4, nodes=(3, 3, 3, 3)))
    pool.book(booking("y", 0, 45, 4, nodes=(7, 7, 7, 7)))
    pool.book(booking("z", 0, 60, 4, nodes=(0, 0, 0, 0)))
    assert pool.fit(10, ONE, 10, 50) == 50
    log.clear()
    b = booking("a", 50, 60, 10)
    pool.book(b)
    assert b.nodes == (7, 7, 7, 7, 3, 3, 3, 3, 1, 1)
    assert log == {1, 3, 7}


def test_a_search_at_a_new_start_does_not_read_a_node_found_full_inside_its_window():
    # node 0 is full over [100, 200); nodes 1 and 2 hold cpu and memory the pool-wide
    # profiles count but no VM of ONE (one lacks memory, the other cpu), so every
    # search reads the nodes one by one. The search from 50 finds node 0 full at 100;
    # the one from 60 (a start of its own) passes it over unread
    pool, log = logged_pool(3)
    pool.book(booking("r", 100, 200, 4, nodes=(0, 0, 0, 0)))
    pool.book(booking("m", 0, 10_000, 1, Shape(3000, 8192), nodes=(1,)))
    pool.book(booking("c", 0, 10_000, 1, Shape(4000, 1), nodes=(2,)))
    assert pool.fit(1, ONE, 100, 50, 50) is None
    assert 0 in log
    log.clear()
    assert pool.fit(1, ONE, 100, 60, 60) is None
    assert 0 not in log


def test_a_new_start_copies_its_shapes_tree_from_beyond_starts_of_other_shapes():
    # half the nodes are busy (with room left); ONE's tree at 100 reads each of them
    # once. Ten starts of another shape (into which ONE does not fit: its trees cannot
    # be ONE's) lie between it and 111, and nothing changes in between: 111's tree is
    # a copy of 100's, and no busy node is read again
    pool, log = logged_pool(1000)
    for node in range(500):
        pool.book(booking(f"busy{node}", 0, 1000, 1, nodes=(node,)))
    assert pool.fit(1, ONE, 10, 100, 100) == 100
    other = Shape(2000, 512)
    for t in range(101, 111):
        assert pool.fit(1, other, 10, t, t) == t
    log.clear()
    assert pool.fit(1, ONE, 10, 111, 111) == 111
    assert log == set()


class ScanLog(Profile):
    """A node's profile that notes in a shared set when its steps are scanned (a node
    read in full, beyond whether it has room at an instant)."""

    __slots__ = ("log", "node")

    def __init__(self, capacity: int, node: int, log: set[int]) -> None:
        super().__init__(capacity)
        self.node, self.log = node, log

    def drops_below(self, amount: int, t: float) -> float:
        self.log.add(self.node)
        return super().drops_below(amount, t)

    def min_over(self, start: float, end: float) -> int:
        self.log.add(self.node)
        return super().min_over(start, end)


def test_a_node_given_capacity_back_without_room_at_a_start_is_not_read_there_in_full():
    # nodes 0-9 are full over [0, 100) and hold a VM after it; a search at 10 learns
    # they are full there. The VMs after 100 are given back: capacity given back where
    # the start's knowledge is, but none at 10. The next booking at 10 passes over
    # them without reading them in full (under EASY every lease that ends gives its
    # nodes back, and most still hold nothing more)
    pool = PackedPool(shared(100, cpu=4000, memory=8192))
    log: set[int] = set()
    pool.node_cpu = [ScanLog(4000, n, log) for n in range(100)]
    pool.node_mem = [ScanLog(8192, n, log) for n in range(100)]
    after = []
    for node in range(10):
        pool.book(booking(f"full{node}", 0, 100, 4, nodes=(node,) * 4))
        after.append(booking(f"after{node}", 100, 200, 1, nodes=(node,)))
        pool.book(after[-1])
    pool.book(booking("x", 10, 20, 1))
    for b in after:
        pool.unbook(b)
    log.clear()
    b = booking("y", 10, 20)
    pool.book(b)
    assert b.nodes == (10,)
    assert log.isdisjoint(range(10))


class RankLog(ScanLog):
    """A node's profile that notes when it is ranked (asked since when it has had
    room) or read in full."""

    __slots__ = ()

    def free_since(self, amount: int, t: float) -> float:
        self.log.add(self.node)
        return super().free_since(amount, t)


def known_short_then_changed(pool: PackedPool) -> None:
    """Nodes 0-9 full over [100, 200); a booking at [50, 150) reads each (room at 50,
    none at 100: recorded for the shape, and in 50's tree) and goes to node 10; then a
    one-second VM at [55, 56) on each changes them between 50 and 60."""
    for node in range(10):
        pool.book(booking(f"full{node}", 100, 200, 4, nodes=(node,) * 4))
    x = booking("x", 50, 150)
    pool.book(x)
    assert x.nodes == (10,)
    for node in range(10):
        pool.book(booking(f"blip{node}", 55, 56, 1, nodes=(node,)))


def test_a_copied_trees_changed_nodes_known_short_from_their_record_are_not_read():
    # nodes 0-9 are known short at 100 and changed between 50 and 60; then full over
    # [45, 56), which the booking at [50, 90) notes in 50's tree. 60's tree, a copy
    # of 50's, asks them whether they have room at 60 (yes) and takes from the
    # record that they have none at 100. The booking at [60, 160) neither ranks them
    # (given capacity back at 56) nor reads them in full
    pool = PackedPool(shared(100, cpu=4000, memory=8192))
    log: set[int] = set()
    pool.node_cpu = [RankLog(4000, n, log) for n in range(100)]
    pool.node_mem = [RankLog(8192, n, log) for n in range(100)]
    known_short_then_changed(pool)
    for node in range(10):
        pool.book(booking(f"busy{node}", 45, 56, 4, nodes=(node,) * 4))
    z = booking("z", 50, 90)
    pool.book(z)
    assert z.nodes == (10,)
    log.clear()
    y = booking("y", 60, 160)
    pool.book(y)
    assert y.nodes == (10,)
    assert log.isdisjoint(range(10))


def test_a_copied_trees_changed_nodes_with_bounds_past_both_starts_are_not_asked_again():
    # 100, when 50's tree knows nodes 0-9 short (the builder's), is after both
    # starts, so it still bounds their room from 60. 60's tree, a copy of 50's, keeps
    # it without asking them anything (not even whether they have room at 60), and
    # neither does the booking at [60, 160)
    pool, log = logged_pool(100)
    known_short_then_changed(pool)
    log.clear()
    y = booking("y", 60, 160)
    pool.book(y)
    assert y.nodes == (10,)
    assert log.isdisjoint(range(10))


op_st = st.tuples(st.sampled_from(["book", "unbook", "fit"]), st.integers(0, 40),
                  st.integers(1, 25), st.integers(1, 4), st.sampled_from(SHAPES))


@settings(max_examples=300, deadline=None)
@given(ops=st.lists(op_st, min_size=1, max_size=30))
def test_node_choice_agrees_with_brute_force_after_any_history(ops):
    """After any mix of searches (which remember starts), bookings and bookings given
    back, each new booking's nodes are the rule's."""
    spec = shared(6, cpu=4000, memory=8192)
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i, (op, s, d, n, sh) in enumerate(ops):
        if op == "unbook" and held:
            pool.unbook(held.pop(s % len(held)))
        elif op == "fit":
            pool.fit(n, sh, d, s)
        elif op == "book" and pool.fit(n, sh, d, s, latest_start=s) is not None:
            want = packed_rule(spec, held, n, sh, s, s + d)
            b = booking(f"b{i}", s, s + d, n, sh)
            pool.book(b)
            assert b.nodes == want, i
            held.append(b)
    assert pool.usage_violations() == []


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["book", "unbook", "fit", "compress"]),
                              st.integers(0, 60), st.integers(1, 25), st.integers(1, 6),
                              st.sampled_from(SHAPES)),
                    min_size=1, max_size=30))
def test_starts_read_off_a_neighbour_agree_with_a_fresh_table(ops):
    """On a pool large enough that a new start's nodes with room are read off a
    remembered neighbour's (12 nodes), searches after any mix of bookings, bookings
    given back and compression trials answer as a table never asked before."""
    spec = shared(12, cpu=4000, memory=8192)
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i, (op, s, d, n, sh) in enumerate(ops):
        if op == "unbook" and held:
            pool.unbook(held.pop(s % len(held)))
        elif op == "compress" and held:
            b = held[s % len(held)]
            t = pool.move_earlier(b, 0, b.end - b.start)
            if t is not None:  # taken out: booked again where it moves to
                held.remove(b)
                moved = booking(b.lease, t, t + b.end - b.start, b.vms, b.shape)
                pool.book(moved)
                held.append(moved)
        elif op == "book" and pool.fit(n, sh, d, s, latest_start=s) is not None:
            held.append(booking(f"b{i}", s, s + d, n, sh))
            pool.book(held[-1])
        fresh = packed_copy(spec, held)
        for t in (s, s + 3, s + 11):
            assert pool.fit(n, sh, d, t) == fresh.fit(n, sh, d, t), (i, t)
    assert pool.usage_violations() == []


def _brute_free_window(pool: PackedPool, vms: int, shape: Shape, t: int) -> float:
    """How long from ``t`` the VMs fit, by trying every integer length up to 200."""
    if pool.fit(vms, shape, 0.0, t, t) is None:
        return 0.0
    longest = 0
    for d in range(1, 200):
        if pool.fit(vms, shape, d, t, t) is None:
            return longest
        longest = d
    return inf


@settings(max_examples=200, deadline=None)
@given(raw=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 30), st.integers(1, 4),
                              st.sampled_from(SHAPES)), max_size=10),
       vms=st.integers(1, 6), shape=st.sampled_from(SHAPES), t=st.integers(0, 60))
def test_free_window_agrees_with_trying_every_length(raw, vms, shape, t):
    pool = PackedPool(shared(6, cpu=4000, memory=8192))
    for i, (s, d, n, sh) in enumerate(raw):
        if pool.fit(n, sh, d, s, latest_start=s) is not None:
            pool.book(booking(f"b{i}", s, s + d, n, sh))
    assert pool.free_window(vms, shape, t) == _brute_free_window(pool, vms, shape, t)


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.tuples(st.sampled_from(["book", "book", "unbook", "fit", "compress"]),
                              st.integers(0, 60), st.integers(1, 25), st.integers(1, 6),
                              st.sampled_from(SHAPES)),
                    min_size=1, max_size=40))
def test_node_choice_agrees_with_brute_force_where_starts_are_read_off_neighbours(ops):
    """On a pool large enough that a new start's knowledge of its nodes is read off a
    neighbouring start's (of the same shape or of one that fits in it; 12 nodes), after
    any mix of searches, bookings, bookings given back and compression trials, each
    booking's nodes are the rule's."""
    spec = shared(12, cpu=4000, memory=8192)
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
                at, length = int(t), int(b.end - b.start)  # every instant is a whole one
                want = packed_rule(spec, held, b.vms, b.shape, at, at + length)
                moved = booking(b.lease, at, at + length, b.vms, b.shape)
                pool.book(moved)
                assert moved.nodes == want, i
                held.append(moved)
        elif op == "book" and pool.fit(n, sh, d, s, latest_start=s) is not None:
            want = packed_rule(spec, held, n, sh, s, s + d)
            b = booking(f"b{i}", s, s + d, n, sh)
            pool.book(b)
            assert b.nodes == want, i
            held.append(b)
    assert pool.usage_violations() == []


def test_a_start_read_off_a_neighbour_does_not_take_its_knowledge_of_nodes_that_change():
    # the booking at 10 finds node 0 full there; the one at 5, a start of its own
    # read off 10's (one instant apart), must look at node 0 again: it changes at 10,
    # and over [5, 8) it is free
    pool = PackedPool(shared(8, cpu=4000, memory=8192))
    pool.book(booking("a", 10, 20, 4, nodes=(0, 0, 0, 0)))
    b = booking("b", 10, 30)
    pool.book(b)
    assert b.nodes == (1,)
    c = booking("c", 5, 8)
    pool.book(c)
    assert c.nodes == (0,)


def test_searches_agree_with_a_fresh_table_after_more_starts_than_are_remembered():
    # 12 nodes remember 4,096 starts at most: 4,500 searched starts make the least
    # recently read ones go, and later starts are read off those that stay
    spec = shared(12, cpu=4000, memory=8192)
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i in range(40):
        s = (i * 37) % 400
        if pool.fit(1 + i % 3, SHAPES[i % 3], 30, s, latest_start=s) is not None:
            held.append(booking(f"b{i}", s, s + 30, 1 + i % 3, SHAPES[i % 3]))
            pool.book(held[-1])
    for t in range(4500):
        pool.fit(2, ONE, 25, t)
    for i, b in enumerate(held[::3]):
        pool.unbook(b)
        held.remove(b)
        fresh = packed_copy(spec, held)
        for t in range(0, 400, 7):
            assert pool.fit(3, ONE, 20 + i, t) == fresh.fit(3, ONE, 20 + i, t), (i, t)
    assert pool.usage_violations() == []
