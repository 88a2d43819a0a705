"""Capacity as an input (issue 16): pools added, nodes going down and coming back, at
any instant, as the cluster does it. One rule for a lease whose node is lost, in the
core, so that the simulator and the operator agree: cancellable leases are
cancelled; suspendable and migratable ones go back to their last checkpoint (none:
they start over) and wait to be placed again; non-preemptable ones and reservations
start over, placed again first, Failed when no slot ends by their deadline."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import AR, BEC, BES, DM, DNP, config, exclusive, lease, req, shared
from leasehold.core.model import Capacity, Origin, PoolSpec
from leasehold.core.replay import Input, replay, run, submissions
from leasehold.core.scheduler import Scheduler
from leasehold.core.slots import DOWN
from strategies import workloads


def down(pool: PoolSpec, *nodes: int) -> Capacity:
    return Capacity(pool, frozenset(nodes))


def drive(pools, requests, changes, cfg=None):
    """Run to the end; ``changes``: (time, Capacity)."""
    sched = Scheduler(pools, cfg or config())
    inputs = [*submissions(requests), *(Input.capacity_change(c, t) for t, c in changes)]
    actions = run(sched, inputs)
    return sched, actions


def kinds(actions, name):
    return [(a.kind, a.time) for a in actions if a.lease == name]


POOL = exclusive(2)


@pytest.mark.parametrize(("kind", "phase", "start", "end", "reason"), [
    # its node (p-0) goes at t=50; p-1 is free: what may restart does, at once
    (BEC, "Cancelled", 0, 50, "cancelled: its node p-0 was lost"),
    (BES, "Completed", 0, 150, None),  # no checkpoint: all 100 s again, from 50
    (DM, "Completed", 0, 150, None),
    (DNP, "Completed", 0, 150, None),  # placed again first, ends by its deadline (500)
], ids=["cancellable", "suspendable", "migratable", "non-preemptable"])
def test_a_lease_whose_node_is_lost_follows_its_type(kind, phase, start, end, reason):
    deadline = 500 if kind in (DM, DNP) else None
    sched, actions = drive([POOL], [req("A", 1, 100, type=kind, deadline=deadline)],
                           [(50, down(POOL, 0))])
    a = lease(sched, "A")
    assert (a.phase.value, a.first_start, a.end) == (phase, start, end)
    if reason:
        assert a.reason == reason
    assert ("Lost", 50) in kinds(actions, "A")
    if phase == "Completed":
        assert a.nodes == ("p-1",) and a.ran == 150  # 50 s lost, then the whole 100
    assert sched.usage_violations() == []


@pytest.mark.parametrize("kind", [DNP, AR], ids=["non-preemptable", "reservation"])
def test_a_guaranteed_lease_that_cannot_start_over_in_time_fails(kind):
    """Both nodes go: nowhere to start over by the deadline (or the reservation's
    end): Failed, saying why — not Rejected, it had been admitted."""
    kw = {"deadline": 150} if kind == DNP else {"start": 0}
    sched, actions = drive([POOL], [req("A", 1, 100, type=kind, **kw)],
                           [(50, down(POOL, 0, 1))])
    a = lease(sched, "A")
    assert a.phase.value == "Failed" and a.end == 50
    assert a.reason.startswith("the slot it held was lost (nodes down, or the operator away")
    assert [k for k, _ in kinds(actions, "A")][-2:] == ["Lost", "Fail"]


def test_a_suspended_lease_resumes_from_its_checkpoint_paying_the_resume():
    """B (suspendable) is suspended at t=20 by a local lease (written out in ~10 s)
    and resumes at t=~70; its node goes at t=100 and comes back at 300: B goes back
    to what it had saved at t=20, not to the start, and resumes, paying a resume's
    overhead again. (Lost while still being written out, it would have no
    checkpoint: the write-out is what makes one.)"""
    pool = exclusive(1)
    requests = [req("B", 1, 200, type=BES, memory=64),
                req("L", 1, 40, at=20, type=DNP, origin=Origin.LOCAL, deadline=200,
                    memory=64)]
    sched = Scheduler([pool], config())
    steps = list(replay(sched, [*submissions(requests),
                                Input.capacity_change(down(pool, 0), 100),
                                Input.capacity_change(down(pool), 300)]))
    b = lease(sched, "B")
    assert b.phase.value == "Completed" and b.suspensions == 1
    resumes = [a for s in steps for a in s.actions if a.lease == "B" and a.kind == "Resume"]
    assert [r.time for r in resumes][1:] == [300]
    saved = 200 - 20  # owed when it was written out at t=20
    assert b.end == pytest.approx(resumes[1].running + saved)  # not from the start
    assert resumes[1].running > 300  # a resume's overhead, paid again
    # executed: 20 s before the suspension, the lost stretch before t=100, the rest
    assert b.ran == pytest.approx(20 + (100 - resumes[0].running) + saved)
    assert sched.usage_violations() == []


def test_a_reservation_on_a_pool_that_shrank_is_placed_again():
    """A holds both nodes until 100; B (2 VMs) is reserved from 100. At t=50 p-1
    goes down for good and comes back at 400: B cannot run on one node, waits (parked)
    and starts when the node is back."""
    sched, actions = drive([POOL], [req("A", 1, 100), req("B", 2, 100)],
                           [(50, down(POOL, 1)), (400, down(POOL))])
    assert ("Reserve", 0) in kinds(actions, "B")
    b = lease(sched, "B")
    assert b.first_start == 400 and b.phase.value == "Completed"
    a = lease(sched, "A")
    assert a.end == 100 and a.nodes == ("p-0",)  # p-0 stayed up: A was not touched


def test_a_pool_added_later_is_used_and_a_smaller_count_is_nodes_down():
    """Pool b appears at t=10 with one node: the queued lease runs there at once.
    Capacity.count(b, 0) takes it down again."""
    a, b = exclusive(1, "a"), exclusive(1, "b")
    sched, actions = drive([a], [req("X", 1, 100), req("Y", 1, 100)],
                           [(10, Capacity.count(b, 1)), (50, Capacity.count(b, 0))])
    y = lease(sched, "Y")
    assert y.first_start == 10 and ("Lost", 50) in kinds(actions, "Y")
    assert y.phase.value == "Completed" and y.end == 200  # on a after X, all over again
    assert list(sched.pools) == ["a", "b"]


def test_down_nodes_of_a_shared_pool_hold_nothing():
    pool = shared(2, cpu=4000, memory=4096)
    sched, _ = drive([pool], [req(f"L{i}", 2, 100, cpu=1000) for i in range(4)],
                     [(10, down(pool, 0))])
    for name in ("L0", "L1", "L2", "L3"):
        assert lease(sched, name).phase.value == "Completed"
    # after t=10 nothing ran on p-0
    late = [lease(sched, n) for n in ("L0", "L1", "L2", "L3")
            if lease(sched, n).end > 110]
    assert late and all(set(x.nodes) == {"p-1"} for x in late)


@hs.composite
def capacity_workloads(draw):
    pools, requests, cfg, inputs = draw(workloads())
    changes = []
    for _ in range(draw(hs.integers(1, 4))):
        pool = draw(hs.sampled_from(pools))
        t = draw(hs.integers(0, 400_000)) / 1000
        gone = draw(hs.sets(hs.integers(0, pool.nodes - 1), max_size=pool.nodes))
        changes.append((t, Capacity(pool, frozenset(gone))))
    # every node back at the end: every lease can end
    end = max([t for t, _ in changes] + [r.submitted for r in requests]) + 1
    changes += [(end, Capacity(p, frozenset())) for p in pools]
    return pools, requests, cfg, inputs, changes


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(capacity_workloads())
def test_no_lease_ever_holds_a_node_that_is_down_and_every_lease_ends(workload):
    pools, requests, cfg, inputs, changes = workload
    sched = Scheduler(pools, cfg)
    reports = [Input.cancel(n, t) if k == "cancel" else Input.finished(n, t)
               for t, k, n in inputs]
    problems: list[str] = []
    for step in replay(sched, [*submissions(requests), *reports,
                               *(Input.capacity_change(c, t) for t, c in changes)]):
        problems.extend(sched.usage_violations())
        for name, table in sched.slots.pools.items():
            held = [b for b in table.bookings if b.lease == DOWN]
            gone = {i for b in held for i in (b.nodes or ())}
            for b in table.bookings:
                if b.lease == DOWN or b.nodes is None or b.end <= step.time:
                    continue
                if gone & set(b.nodes) and b.start <= step.time:
                    problems.append(f"{b.lease} on a down node of {name} at {step.time}")
    assert problems == [], problems[:5]
    assert all(st.phase.terminal for st in sched.leases()), \
        [(st.name, st.phase.value) for st in sched.leases() if not st.phase.terminal]



def test_a_suspended_lease_whose_pool_goes_entirely_starts_over_elsewhere():
    """B is written out on pool a (its checkpoint is there) and waits; pool a is
    removed: the checkpoint went with it. B starts over on b, not parked for a pool
    that is gone."""
    a, b = exclusive(1, "a"), exclusive(1, "b")
    inputs = [*submissions([req("B", 1, 200, type=BES, memory=64, pool=None),
                            req("L", 1, 100, at=20, type=DNP, origin=Origin.LOCAL,
                                deadline=200, memory=64, pool="a"),
                            req("X", 1, 500, pool="b")]),
              Input.capacity_change(Capacity(a, frozenset({0}), removed=True), 60)]
    sched = Scheduler([a, b], config())
    run(sched, inputs)
    x, bl = lease(sched, "X"), lease(sched, "B")
    assert bl.phase.value == "Completed" and bl.suspensions == 1
    assert bl.nodes == ("b-0",) and bl.first_start == 0
    assert bl.end == x.end + 200  # all of its 200 s again, after X, on b


def test_a_lease_being_written_out_when_its_pool_goes_starts_over_elsewhere():
    """B is being written out on a (suspended by a local lease) when pool a is
    removed: the write-out fails with it (B is lost, with no checkpoint) and B starts
    over on b, not parked for a pool that is gone."""
    a, b = exclusive(1, "a"), exclusive(1, "b")
    # B's write-out (64 MiB at 6.36 MB/s: ~10 s) from t=20; a goes at t=25
    inputs = [*submissions([req("B", 1, 200, type=BES, memory=64),
                            req("L", 1, 100, at=20, type=DNP, origin=Origin.LOCAL,
                                deadline=300, memory=64, pool="a"),
                            req("X", 1, 500, pool="b")]),
              Input.capacity_change(Capacity(a, frozenset({0}), removed=True), 25)]
    sched = Scheduler([a, b], config())
    run(sched, inputs)
    bl = lease(sched, "B")
    assert bl.phase.value == "Completed" and bl.nodes == ("b-0",)
    assert "a" in sched.dead


def test_a_lease_lost_with_its_whole_pool_does_not_wait_for_its_checkpoint():
    """B resumed on pool a from a checkpoint written there; pool a is removed (its
    NodePool deleted): B is lost and its checkpoint with a: it starts over on b.
    (Nodes that are only down keep what was written out: the pool is still there.)"""
    a, b = exclusive(1, "a"), exclusive(1, "b")
    inputs = [*submissions([req("B", 1, 200, type=BES, memory=64, pool=None),
                            req("L", 1, 40, at=20, type=DNP, origin=Origin.LOCAL,
                                deadline=70, memory=64, pool="a"),
                            req("X", 1, 100, pool="b")]),
              Input.capacity_change(Capacity(a, frozenset({0}), removed=True), 150)]
    sched = Scheduler([a, b], config())
    run(sched, inputs)
    bl = lease(sched, "B")
    assert bl.suspensions == 1  # it had a checkpoint, on a
    assert bl.phase.value == "Completed" and bl.nodes == ("b-0",)
    assert bl.end == 150 + 200  # all over again, on b, from when a went
