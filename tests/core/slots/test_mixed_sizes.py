"""Pools of mixed node sizes (issue 20): each node packs VMs up to its own capacity.

Table-driven cases on a pool of two 8-core nodes and one 32-core node, the core's
handling of such pools (down nodes held whole, a node whose size changes, the
reason a VM too large for every node gets), and hypothesis properties: on random
mixed pools (GPUs on some nodes), no node is ever over-committed in any resource
at any instant, by the table's own check and by a brute-force recount of the
bookings against each node's size."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import replace
from math import inf

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import BEC, config, lease, phase, req, run
from leasehold.core.model import Capacity, NodeGroup, PoolSpec, Shape
from leasehold.core.replay import Input, replay, submissions
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots import DOWN, Booking, PackedPool, SlotTable
from strategies import GPU, GPUS_1, GPUS_2, workloads

GiB = 1024
SMALL, BIG = NodeGroup(2, 8000, 32 * GiB), NodeGroup(1, 32000, 128 * GiB)


def mixed(*groups: NodeGroup, name: str = "p", extra: int = 0,
          cpu: int = 1000, memory: int = 1024) -> PoolSpec:
    """A pool of ``groups`` (default: two 8-core nodes, then one 32-core node), and
    ``extra`` nodes of ``cpu`` and ``memory`` past them."""
    groups = groups or (SMALL, BIG)
    return PoolSpec(name, sum(g.nodes for g in groups) + extra, cpu, memory,
                    groups=groups)


def book(pool: PackedPool, name: str, vms: int, shape: Shape, start: float,
         end: float) -> Booking:
    b = Booking(name, pool.spec.name, start, end, vms, shape, None, (("run", start, end),))
    pool.book(b)
    return b


def recount(spec: PoolSpec, bookings: list[Booking], at: float | None = None) -> list[str]:
    """Brute force: what each node holds, resource by resource, against that node's
    own size, at ``at`` (default: at every booking's start, where usage rises)."""
    sizes = spec.sizes()
    out = []
    for t in sorted({b.start for b in bookings}) if at is None else [at]:
        used: dict[int, Counter[str]] = defaultdict(Counter)
        for b in bookings:
            if b.start <= t < b.end:
                for node in b.nodes or ():
                    used[node].update({"cpu": b.shape.cpu, "memory": b.shape.memory,
                                       **dict(b.shape.extended)})
        for node, amounts in used.items():
            if any(n > sizes[node].amount(r) for r, n in amounts.items()):
                out.append(f"{spec.name}-{node} over its {sizes[node]} at {t}: {amounts}")
    return out


@pytest.mark.parametrize(("shape", "most"), [
    pytest.param(Shape(1000, 1024), 8 + 8 + 32, id="one-core: every node by its cores"),
    pytest.param(Shape(4000, 16 * GiB), 2 + 2 + 8, id="by memory and cores alike"),
    pytest.param(Shape(16000, 1024), 2, id="only the big node"),
    pytest.param(Shape(1000, 64 * GiB), 2, id="only the big node's memory"),
    pytest.param(Shape(33000, 1024), 0, id="larger than every node"),
])
def test_a_mixed_pool_holds_what_each_node_holds(shape: Shape, most: int) -> None:
    pool = PackedPool(mixed())
    assert pool.max_vms(shape) == most
    if most:
        assert pool.fit(most, shape, 10, 0) == 0
    assert pool.fit(most + 1, shape, 10, 0) is None


@pytest.mark.parametrize(("first", "then", "start", "nodes"), [
    pytest.param([], (2, Shape(16000, 1024)), 0, (2, 2), id="big VMs go to the big node"),
    pytest.param([(1, Shape(16000, 1024), 0, 10)], (2, Shape(16000, 1024)), 10, (2, 2),
                 id="and wait for it, however free the small nodes are"),
    pytest.param([(16, Shape(1000, 1024), 0, 10)], (2, Shape(8000, 1024)), 0, (2, 2),
                 id="one-core VMs fill the small nodes first; 8-core ones go to the big"),
    pytest.param([(1, Shape(4000, 1024), 0, 10)], (1, Shape(4000, 1024)), 0, (0,),
                 id="a node is filled before the next is used"),
    pytest.param([(1, Shape(8000, 1024), 0, 10), (1, Shape(8000, 1024), 0, 10)],
                 (4, Shape(8000, 1024)), 0, (2, 2, 2, 2),
                 id="small nodes full: four 8-core VMs on the big one"),
])
def test_a_mixed_pool_packs_vms_where_they_fit(first, then, start, nodes) -> None:
    pool = PackedPool(mixed())
    for i, (vms, shape, s, e) in enumerate(first):
        book(pool, f"a{i}", vms, shape, s, e)
    vms, shape = then
    t = pool.fit(vms, shape, 10, 0)
    assert t == start
    b = book(pool, "b", vms, shape, t, t + 10)
    assert b.nodes == nodes
    assert pool.usage_violations() == []
    assert recount(pool.spec, list(pool.bookings)) == []


def test_nodes_past_the_groups_are_of_the_pools_own_size() -> None:
    pool = PackedPool(mixed(BIG, extra=2, cpu=2000, memory=4 * GiB))
    assert pool.max_vms(Shape(1000, 1024)) == 32 + 2 + 2
    assert pool.max_vms(Shape(4000, 1024)) == 8


@pytest.mark.parametrize(("down", "held"), [
    pytest.param({0}, [(Shape(8000, 32 * GiB), (0,))], id="one small"),
    pytest.param({0, 2}, [(Shape(8000, 32 * GiB), (0,)), (Shape(32000, 128 * GiB), (2,))],
                 id="one of each: each held whole, by its own size"),
    pytest.param({2, 0, 1}, [(Shape(8000, 32 * GiB), (0, 1)),
                             (Shape(32000, 128 * GiB), (2,))], id="all"),
])
def test_down_nodes_of_each_size_are_held_whole(down, held) -> None:
    slots = SlotTable([mixed()])
    got = slots.rebuild(mixed(), frozenset(down), 5.0, [])
    assert [(b.lease, b.shape, b.nodes, b.start, b.end) for b in got] == [
        (DOWN, shape, nodes, 5.0, inf) for shape, nodes in held]
    table = slots.pools["p"]
    assert table.usage_violations() == []
    up = [i for i in range(3) if i not in down]
    # nothing at all fits on a down node, from then on
    cores = sum(mixed().sizes()[i].cpu for i in up) // 1000
    if cores:
        assert table.fit(cores, Shape(1000, 1024), 10, 5.0) == 5.0
    assert table.fit(cores + 1, Shape(1000, 1024), 10, 5.0) is None


def test_exclusive_pools_stay_one_size() -> None:
    with pytest.raises(ValueError, match="one size"):
        PoolSpec("p", 3, 1000, 1024, exclusive=True, groups=(SMALL,))
    slots = SlotTable([PoolSpec("p", 3, 1000, 1024, exclusive=True)])
    held = slots.rebuild(PoolSpec("p", 3, 1000, 1024, exclusive=True), frozenset({1, 2}),
                         0.0, [])
    assert [(b.shape, b.nodes) for b in held] == [(Shape(1000, 1024), (1, 2))]


# ---- the core on mixed pools --------------------------------------------------------
@pytest.mark.parametrize(("vms", "cpu", "memory", "reason"), [
    pytest.param(1, 33000, 1024, "no node holds one such VM (the largest have 32 cpu and"
                 " 131072 MiB)", id="too many cores"),
    pytest.param(1, 1000, 200 * GiB, "no node holds one such VM (the largest have 32 cpu"
                 " and 131072 MiB)", id="too much memory"),
    pytest.param(3, 16000, 1024, "the largest pool holds 2 such VMs", id="too many big VMs"),
])
def test_a_vm_no_node_holds_is_told_the_largest_node(vms, cpu, memory, reason) -> None:
    sched = run([mixed()], [req("x", vms, 10, cpu=cpu, memory=memory)])
    assert phase(sched, "x") == "Rejected"
    assert str(lease(sched, "x").reason).endswith(reason)


def test_the_largest_nodes_named_are_those_no_other_outdoes() -> None:
    spec = mixed(NodeGroup(1, 8000, 256 * GiB), NodeGroup(1, 32000, 128 * GiB),
                 NodeGroup(1, 4000, 64 * GiB))
    sched = run([spec], [req("x", 1, 10, cpu=64000, memory=1024)])
    assert str(lease(sched, "x").reason).endswith(
        "(the largest have 8 cpu and 262144 MiB or 32 cpu and 131072 MiB)")


def test_big_vms_run_on_the_big_node_while_small_ones_fill_the_rest() -> None:
    sched = run([mixed()], [
        req("big", 2, 100, cpu=16000, memory=1024),
        req("small", 16, 100, cpu=1000, memory=1024),
        req("later", 1, 100, cpu=16000, memory=1024),
    ], config("conservative"))
    assert lease(sched, "big").nodes == ("p-2", "p-2")
    assert set(lease(sched, "small").nodes) == {"p-0", "p-1"}
    assert lease(sched, "later").first_start == 100


@pytest.mark.parametrize(("after", "lost"), [
    pytest.param((SMALL, BIG), [], id="same sizes: nothing lost"),
    pytest.param((NodeGroup(2, 8000, 32 * GiB), NodeGroup(1, 16000, 128 * GiB)), ["big"],
                 id="the big node shrank: what ran there is lost"),
    pytest.param((NodeGroup(1, 8000, 32 * GiB), NodeGroup(2, 32000, 128 * GiB)), ["small1"],
                 id="node 1 grew: what ran there is lost, the rest stays"),
])
def test_a_node_whose_size_changes_loses_what_ran_there(after, lost) -> None:
    before = mixed()
    sched = Scheduler([before], config())
    requests = [req("small0", 1, 100, cpu=8000, memory=1024, type=BEC),
                req("small1", 1, 100, cpu=8000, memory=1024, type=BEC),
                req("big", 1, 100, cpu=32000, memory=1024, type=BEC)]
    inputs = [*submissions(requests), Input.capacity_change(Capacity(mixed(*after)), 50)]
    for _ in replay(sched, inputs):
        assert sched.usage_violations() == []
    cancelled = sorted(r.name for r in requests if phase(sched, r.name) == "Cancelled")
    assert cancelled == sorted(lost)


# ---- properties ----------------------------------------------------------------------
#: mixed pools named as :func:`strategies.workloads`' shared ones, so that its
#: workloads run on them unchanged
MIXED = {
    # one node with GPUs: the GPU leases drawn (on the GPU pools) all go there
    "shared": [mixed(NodeGroup(1, 2000, 1024), NodeGroup(1, 8000, 8192, GPUS_2), extra=1,
                     cpu=4000, memory=4096)],
    "two-pools": [mixed(NodeGroup(1, 1000, 2048), NodeGroup(1, 4000, 1024, GPUS_1), name="a"),
                  PoolSpec("b", 3, 1000, 1024, exclusive=True)],
}


@hs.composite
def mixed_workloads(draw):
    """:func:`strategies.workloads` on pools of mixed sizes, with nodes going down
    and back."""
    pools, requests, cfg, reports = draw(workloads().filter(lambda w: w[0][0].name != "p"
                                                            or not w[0][0].exclusive))
    # of the speeds drawn for the pools they replace: lost nodes go back to checkpoints
    # kept as work
    pools = [replace(m, speed=p.speed) for m, p in
             zip(MIXED["shared" if len(pools) == 1 else "two-pools"], pools, strict=True)]
    inputs = [*submissions(requests),
              *(Input.cancel(n, t) if k == "cancel" else Input.finished(n, t)
                for t, k, n in reports)]
    for _ in range(draw(hs.integers(0, 2))):
        pool = draw(hs.sampled_from(pools))
        gone = draw(hs.sets(hs.integers(0, pool.nodes - 1), max_size=pool.nodes))
        at = draw(hs.integers(0, 300_000)) / 1000
        inputs.append(Input.capacity_change(Capacity(pool, frozenset(gone)), at))
        inputs.append(Input.capacity_change(Capacity(pool, frozenset()), at + 30))
    return pools, cfg, inputs


def holding_violations(sched: Scheduler, now: float) -> list[str]:
    """Brute force on what the leases hold at ``now``: the bookings of the leases
    running there (not those waiting for their slot), against each node's size."""
    out = []
    for pool in sched.slots.pools.values():
        held = [b for b in pool.bookings
                if b.lease == DOWN or lease(sched, b.lease).phase.value not in (
                    "Scheduled", "Suspended", "Queued")]
        out += recount(pool.spec, held, now)
    return out


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_workloads())
def test_no_node_of_a_mixed_pool_is_ever_over_committed(workload):
    pools, cfg, inputs = workload
    sched = Scheduler(pools, cfg)
    problems: list[str] = []
    for step in replay(sched, inputs):
        problems += sched.usage_violations()
        problems += holding_violations(sched, step.time)
        for pool in sched.slots.pools.values():
            problems += recount(pool.spec, list(pool.bookings))
    assert problems == []
    for r in inputs:
        if r.kind == "submit":
            assert lease(sched, r.lease).phase.terminal


@hs.composite
def table_ops(draw):
    """A mixed pool, and bookings made where :meth:`fit` says, some given back."""
    groups = tuple(NodeGroup(draw(hs.integers(1, 2)), draw(hs.sampled_from([1000, 2000, 4000])),
                             draw(hs.sampled_from([1024, 2048, 4096])),
                             draw(hs.sampled_from([(), GPUS_1, GPUS_2])))
                   for _ in range(draw(hs.integers(1, 3))))
    spec = mixed(*groups, extra=draw(hs.integers(0, 1)))
    ops = draw(hs.lists(hs.tuples(
        hs.integers(1, 4), hs.sampled_from([500, 1000, 2000, 3000]),
        hs.sampled_from([256, 1024, 3072]), hs.integers(0, 50), hs.integers(1, 40),
        hs.booleans(), hs.sampled_from([0, 0, 1, 2])), min_size=1, max_size=25))
    return spec, ops


@settings(max_examples=300, deadline=None)
@given(table_ops())
def test_a_mixed_tables_bookings_never_over_commit_a_node(case):
    # the packed table: every booking pinned when made, so the recount sees each
    # node's load at every instant (a shared pool of one shape is counted, and is
    # checked through the scheduler above and in test_shared.py)
    spec, ops = case
    pool = PackedPool(spec)
    held: list[Booking] = []
    for i, (vms, cpu, memory, earliest, length, drop, gpus) in enumerate(ops):
        shape = Shape(cpu, memory, ((GPU, gpus),) if gpus else ())
        t = pool.fit(vms, shape, length, earliest)
        fits_some_node = any(shape.fits_in(s) for s in spec.sizes())
        if t is None:
            # only a request larger than the empty pool may never fit
            assert vms > pool.max_vms(shape)
            continue
        assert fits_some_node
        held.append(book(pool, f"b{i}", vms, shape, t, t + length))
        if drop and len(held) > 1:
            pool.unbook(held.pop(0))
        assert pool.usage_violations() == []
        assert recount(spec, held) == []
