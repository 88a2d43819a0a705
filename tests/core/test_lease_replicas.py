"""Replicas (issue 23 item 5; seed 002's RRR-k): a lease asking for ``replicas: k``
books k copies of each VM (``Request.vms`` counts them all: real capacity). When
nodes go down, a lease is lost (by type, :meth:`Lifecycle.lose`) only if some VM
lost every copy; otherwise it runs on, on its copies left, whose lost ones are given
back and not replaced (a ``ReplicaLost`` action says so)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import BEC, BES, DNP, config, down, drive_changes, exclusive, lease, req, shared
from leasehold.core.model import (
    LeaseType,
    Lost,
    Origin,
    PoolSpec,
    ReplicaLost,
    Request,
    Volatility,
    copy_of,
)
from leasehold.core.replay import Input, replay, submissions
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import restore, snapshot


def volatile(pool: PoolSpec) -> PoolSpec:
    return replace(pool, volatile=Volatility(failure_rate=0.3, recovery=120, epoch=10.0))


def copies(name: str, vms: int, k: int, duration: float = 100, **kw) -> Request:
    """A lease of ``vms`` VMs with ``k`` copies of each (``vms × k`` booked)."""
    return replace(req(name, vms * k, duration, **kw), replicas=k)


def of(actions, kind, name: str) -> list:
    return [a for a in actions if isinstance(a, kind) and a.lease == name]


POOL = volatile(exclusive(4))


def test_copies_are_booked_and_numbered_vm_by_vm():
    r = copies("A", 3, 2)
    assert r.vms == 6 and r.originals == 3
    assert [copy_of(r, j) for j in range(6)] == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]
    sched, _ = drive_changes([POOL], [r, req("B", 1, 50)], [])
    # 6 VMs do not fit 4 nodes: A waits for nothing it cannot have; B runs at once
    assert lease(sched, "B").first_start == 0


def test_a_lease_with_two_copies_loses_one_node_and_runs_on():
    sched, actions = drive_changes([POOL], [copies("A", 1, 2), req("B", 1, 100, at=50)],
                           [(37, down(POOL, 0))])
    a = lease(sched, "A")
    assert a.phase.value == "Completed" and a.end == 100  # not a second lost
    assert of(actions, Lost, "A") == [] and a.losses == 0 and a.lost_to_failures == 0
    [gone] = of(actions, ReplicaLost, "A")
    assert (gone.time, gone.nodes, gone.kept) == (37, ("p-0",), ("p-1",))
    assert "replica" in gone.reason
    assert a.nodes == ("p-1",) and a.replicas_lost == 1
    # its lost copy's capacity is given back: B (at 50) has p-2 and p-3 free, and
    # A's booking no longer holds two nodes
    assert lease(sched, "B").first_start == 50
    assert sched.usage_violations() == []


@pytest.mark.parametrize(("kind", "phase", "outcome"), [
    (BES, "Completed", "queued again"),
    (BEC, "Cancelled", "cancelled"),
    (DNP, "Completed", "placed again"),
], ids=["suspendable", "cancellable", "non-preemptable"])
@pytest.mark.parametrize("together", [True, False], ids=["at-once", "one-after-the-other"])
def test_a_lease_that_loses_every_copy_of_a_vm_is_handled_by_type(kind, phase, outcome,
                                                                  together):
    kw = {"deadline": 1000} if kind == DNP else {}
    changes = [(37, down(POOL, 0, 1))] if together else \
        [(33, down(POOL, 0)), (37, down(POOL, 0, 1))]
    sched, actions = drive_changes([POOL], [copies("A", 1, 2, type=kind, **kw)], changes)
    a = lease(sched, "A")
    assert a.phase.value == phase
    [gone] = of(actions, Lost, "A")
    assert gone.time == 37 and outcome in gone.reason
    assert len(of(actions, ReplicaLost, "A")) == (0 if together else 1)
    assert sched.usage_violations() == []


def test_a_lease_runs_on_while_every_vm_keeps_some_copy():
    """2 VMs × 2 copies on 4 nodes: VM 0 on p-0 and p-2, VM 1 on p-1 and p-3. p-0
    and p-3 go (one copy of each): it runs on; then p-2 (VM 0's last): it is lost."""
    sched, actions = drive_changes([POOL], [copies("A", 2, 2)],
                           [(20, down(POOL, 0, 3)), (30, down(POOL, 0, 2, 3)),
                            (60, down(POOL))])
    a = lease(sched, "A")
    [first] = of(actions, ReplicaLost, "A")
    assert first.nodes == ("p-0", "p-3") and first.kept == ("p-1", "p-2")
    assert first.copies == 2
    [gone] = of(actions, Lost, "A")
    assert gone.time == 30 and gone.nodes == ("p-2",)
    assert a.phase.value == "Completed" and a.losses == 1 and a.replicas_lost == 2


def test_a_resumed_lease_books_every_copy_again():
    """A lost one copy, then was lost (all of VM 0's copies): it resumes from its
    checkpoint with both copies booked again, on the nodes that came back."""
    sched, actions = drive_changes([POOL], [copies("A", 1, 2)],
                           [(20, down(POOL, 0)), (25, down(POOL, 0, 1, 2, 3)),
                            (40, down(POOL))])
    a = lease(sched, "A")
    assert [x.kind for x in actions if x.lease == "A" and x.kind in (
        "ReplicaLost", "Lost", "Resume")] == ["ReplicaLost", "Lost", "Resume"]
    assert a.phase.value == "Completed" and len(a.nodes) == 2 and a.copies == ((0, 0), (0, 1))


def test_a_pool_that_is_not_volatile_keeps_copies_too():
    """Replicas are booked on any pool: a capacity change loses nodes anywhere."""
    pool = exclusive(2)
    sched, actions = drive_changes([pool], [copies("A", 1, 2)], [(37, down(pool, 1))])
    assert lease(sched, "A").end == 100 and of(actions, ReplicaLost, "A")


def test_a_snapshot_keeps_the_copies_left():
    sched = Scheduler([POOL], config())
    sched.submit(copies("A", 2, 2), 0)
    sched.advance(0)
    sched.capacity(down(POOL, 0), 20)
    sched.advance(20)
    again = restore(snapshot(sched), config())
    a, b = lease(sched, "A"), lease(again, "A")
    assert (b.nodes, b.replicas_lost) == (a.nodes, a.replicas_lost) == (("p-1", "p-2", "p-3"), 1)
    assert lease(again, "A").request.replicas == 2
    assert lease(again, "A").copies == lease(sched, "A").copies == ((1, 0), (0, 1), (1, 1))
    # losing p-2 (VM 0's last copy) loses it in the restored scheduler as in the first
    for s in (sched, again):
        s.capacity(down(POOL, 0, 2), 30)
    assert [type(x).__name__ for x in sched.advance(30) if x.lease == "A"] == \
        [type(x).__name__ for x in again.advance(30) if x.lease == "A"]


# ---- the property -------------------------------------------------------------------
@hs.composite
def replica_workloads(draw):
    pool = volatile(draw(hs.sampled_from([exclusive(6), shared(3, cpu=3000, memory=3072)])))
    requests = []
    for i in range(draw(hs.integers(1, 5))):
        vms, k = draw(hs.integers(1, 2)), draw(hs.integers(1, 3))
        at, duration = draw(hs.integers(0, 100)), draw(hs.integers(10, 200))
        kind = draw(hs.sampled_from([BES, BEC, LeaseType.DEADLINE_NON_PREEMPTABLE]))
        kw: dict = {"deadline": 10_000.0} if kind == LeaseType.DEADLINE_NON_PREEMPTABLE else {}
        if kw and draw(hs.booleans()):
            # a local lease wants its VMs now and preempts: copies left are victims
            kw = {"origin": Origin.LOCAL, "deadline": float(at + duration)}
        requests.append(copies(f"L{i}", vms, k, duration, at=at, type=kind, **kw))
    changes = []
    for _ in range(draw(hs.integers(1, 5))):
        t = draw(hs.integers(0, 300))
        changes.append((t, down(pool, *draw(hs.sets(hs.integers(0, pool.nodes - 1))))))
    changes.append((301, down(pool)))
    return pool, requests, sorted(changes, key=lambda c: c[0])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replica_workloads())
def test_replicas_are_never_over_committed_distinct_and_run_only_with_a_copy_of_each_vm(
        workload):
    pool, requests, changes = workload
    sched = Scheduler([pool], config())
    reqs = {r.name: r for r in requests}
    problems: list[str] = []
    for step in replay(sched, [*submissions(requests),
                               *(Input.capacity_change(c, t) for t, c in changes)]):
        problems.extend(sched.usage_violations())
        gone = {f"{pool.name}-{i}" for i in sched.down(pool.name)}
        for v in sched.leases():
            if v.phase.value != "Running" or not v.placed:
                continue
            r = reqs[v.name]
            up = {vm for (vm, _), node in zip(v.copies, v.placed, strict=True) if node not in gone}
            if up != set(range(r.originals)):
                problems.append(f"{v.name} runs at {step.time} with VMs {up} up")
            if pool.exclusive and len(set(v.placed)) != len(v.placed):
                problems.append(f"{v.name}'s copies share a node at {step.time}")
    assert problems == [], problems[:5]
    assert all(v.phase.terminal for v in sched.leases())
