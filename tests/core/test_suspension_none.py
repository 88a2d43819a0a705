"""``config.suspension: none`` (Haizea's no-suspension option, 004 NOVM-NOSR): a
best-effort lease that must give way to a preemptor is cancelled and re-queued, to run
again from the start in its original queue position (docs/semantics.md, "No
suspension")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import AR, BEC, BES, config, exclusive, lease, req, run, spans
from leasehold.core.model import Origin, Requeue, Suspend


def none(mode: str = "conservative", sbb: bool = False):
    return replace(config(mode, sbb), suspension="none")


def go(pools, reqs, cfg):
    """The scheduler driven to the end, and every action it took, in order."""
    actions = []
    sched = run(pools, reqs, cfg, check=lambda s, now, acts: actions.extend(acts))
    return sched, actions


def requeues(actions):
    return [a for a in actions if isinstance(a, Requeue)]


def test_a_preempted_lease_runs_again_from_the_start():
    # one node; A runs from 0 for 100 s; the reservation R takes [50, 70)
    r = [req("A", 1, 100), req("R", 1, 20, 10, type=AR, start=50)]
    sched, actions = go([exclusive(1)], r, none())
    # under suspension all, A is suspended at 50 and resumes after R; under none it
    # stops at 50 and starts over at 70: its 50 s of work are lost
    assert spans(sched)["A"] == (0, 170, "Completed")
    assert spans(sched)["R"] == (50, 70, "Completed")
    a = lease(sched, "A")
    assert (a.suspensions, a.requeues, a.lost_work) == (0, 1, 50)
    assert [(x.time, x.lease, x.vacated, x.lost) for x in requeues(actions)] == [(50, "A", 50, 50)]
    assert not [x for x in actions if isinstance(x, Suspend)]


def test_suspension_all_still_suspends():
    r = [req("A", 1, 100, memory=16), req("R", 1, 20, 10, type=AR, start=50)]
    sched, _ = go([exclusive(1)], r, config())
    a = lease(sched, "A")
    assert (a.suspensions, a.requeues, a.lost_work) == (1, 0, 0)


def test_a_cancellable_lease_is_still_cancelled():
    r = [req("A", 1, 100, type=BEC), req("R", 1, 20, 10, type=AR, start=50)]
    sched, _ = go([exclusive(1)], r, none())
    assert spans(sched)["A"] == (0, 50, "Cancelled")
    assert lease(sched, "A").requeues == 0


@pytest.mark.parametrize("mode", ["easy", "none"])
def test_the_requeued_lease_keeps_its_place_ahead_of_later_leases(mode):
    # two nodes: A (2 VMs) runs from 0; B and C (2 VMs each) queue behind it, B (the
    # head) with a reservation from 100; R takes both nodes at [50, 60). A, re-queued,
    # goes back ahead of C (its submission order), behind B's reservation: A runs
    # again at 200 and C follows at 300 (at the queue's end A would follow C)
    r = [req("A", 2, 100), req("B", 2, 100, 1), req("C", 2, 100, 2),
         req("R", 2, 10, 5, type=AR, start=50)]
    sched, _ = go([exclusive(2)], r, none(mode))
    got = spans(sched)
    assert got["B"] == (100, 200, "Completed")
    assert got["A"] == (0, 300, "Completed")
    assert got["C"] == (300, 400, "Completed")


def test_a_stop_takes_stop_seconds_and_the_lease_waits_for_its_nodes():
    pool = exclusive(1)
    pool = replace(pool, overhead=replace(pool.overhead, stop_seconds=5))
    r = [req("A", 1, 100), req("R", 1, 20, 10, type=AR, start=50)]
    sched, actions = go([pool], r, none())
    # stopped just in time: from 45 to 50, then placed again after R
    (x,) = requeues(actions)
    assert (x.time, x.vacated, x.lost) == (45, 50, 45)
    assert spans(sched)["A"] == (0, 170, "Completed")


@pytest.mark.parametrize("mode", ["conservative", "easy"])
def test_suspend_before_blocking_does_not_take_holes_without_suspension(mode):
    # B (2 VMs, 1500 s) could run in the hole before R with suspension; without it,
    # it starts after R (it could not finish in the hole)
    r = [req("R", 2, 100, type=AR, start=1000), req("B", 2, 1500, memory=256)]
    sched, _ = go([exclusive(2)], r, none(mode, sbb=True))
    assert spans(sched)["B"] == (1100, 2600, "Completed")
    assert lease(sched, "B").suspensions == 0


def test_a_local_lease_requeues_too():
    r = [req("A", 1, 100), req("L", 1, 20, 30, type=AR, origin=Origin.LOCAL, start=30)]
    sched, _ = go([exclusive(1)], r, none())
    assert spans(sched)["A"] == (0, 150, "Completed")
    assert lease(sched, "A").lost_work == 30


# ---- property: against a simple oracle --------------------------------------------


@hs.composite
def contended_tails(draw):
    """Best-effort leases and reservations on one exclusive pool, then nothing: every
    best-effort lease must eventually complete (the tail is uncontended)."""
    nodes = draw(hs.integers(1, 4))
    out = []
    for i in range(draw(hs.integers(1, 10))):
        at = draw(hs.integers(0, 200))
        vms = draw(hs.integers(1, nodes))
        duration = draw(hs.integers(1, 150))
        if draw(hs.booleans()):
            out.append(req(f"r{i}", vms, duration, at, type=AR,
                           start=at + draw(hs.integers(0, 150))))
        else:
            runtime = draw(hs.one_of(hs.none(), hs.integers(1, duration)))
            out.append(req(f"b{i}", vms, duration, at, type=BES, runtime=runtime))
    mode = draw(hs.sampled_from(["conservative", "easy", "none"]))
    return exclusive(nodes), out, none(mode, sbb=draw(hs.booleans()))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contended_tails())
def test_no_suspension_ever_and_every_best_effort_lease_completes(case):
    pool, reqs, cfg = case
    sched, actions = go([pool], reqs, cfg)
    assert sched.usage_violations() == []
    assert not [a for a in actions if isinstance(a, Suspend)]
    for st in sched.leases():
        assert st.suspensions == 0
        if st.request.type == BES:
            assert st.phase.value == "Completed", st
            # the last run did all the work: what it ran equals its work plus what
            # every re-queue lost
            assert st.ran == pytest.approx(st.request.actual_runtime + st.lost_work)
        assert st.requeues == sum(1 for a in requeues(actions) if a.lease == st.name)
