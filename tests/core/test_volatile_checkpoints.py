"""Leases on a volatile pool checkpoint at every epoch boundary of their run (issue
23 item 1; DESIGN §2.7; seed 002 §III-A): a node lost mid-epoch costs a suspendable
or migratable lease only the work since the last boundary; the other types are
handled as on any pool (cancelled, or started over and placed again first). The
checkpoint is computed from the run's start and pace when the node is lost, not
taken by a timer per epoch. The work lost is reported (the ``Lost`` action, and the
lease's ``lost_to_failures``)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from builders import AR, BEC, BES, DM, DNP, config, down, drive_changes, exclusive, lease, req
from leasehold.core.model import Lost, Origin, PoolSpec, Resume, VmModel, Volatility
from leasehold.core.replay import Input, replay
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import restore, snapshot

EPOCH = 10.0


def volatile(pool: PoolSpec, epoch: float = EPOCH) -> PoolSpec:
    return replace(pool, volatile=Volatility(failure_rate=0.3, recovery=120, epoch=epoch))


def losts(actions, name: str) -> list[Lost]:
    return [a for a in actions if isinstance(a, Lost) and a.lease == name]


def resumes(actions, name: str) -> list[Resume]:
    return [a for a in actions if isinstance(a, Resume) and a.lease == name]


# A (1 VM, 100 s of work) starts at 0 on p-0 of two nodes; p-0 goes at t=37, three
# epochs and 7 s into its run: p-1 is free, so what restarts does so at once
@pytest.mark.parametrize(("kind", "phase", "lost", "resumed"), [
    (BES, "Completed", 7, True),    # back to t=30's checkpoint: 70 s owed
    (DM, "Completed", 7, True),
    (BEC, "Cancelled", 37, False),  # cancelled: all it did is gone
    (DNP, "Completed", 37, False),  # starts over, placed again first
    (AR, "Failed", 37, False),      # starts over: no 100 s ends by its end (100)
], ids=["suspendable", "migratable", "cancellable", "non-preemptable", "reservation"])
def test_a_lease_losing_its_node_mid_epoch_keeps_the_work_to_the_last_boundary_by_type(
        kind, phase, lost, resumed):
    pool = volatile(exclusive(2))
    kw = {"deadline": 500} if kind in (DM, DNP) else {"start": 0} if kind == AR else {}
    sched, actions = drive_changes([pool], [req("A", 1, 100, type=kind, **kw)],
                                   [(37, down(pool, 0))])
    a = lease(sched, "A")
    assert a.phase.value == phase
    [gone] = losts(actions, "A")
    assert gone.lost == pytest.approx(lost)
    assert a.lost_to_failures == pytest.approx(lost) and a.losses == 1
    back = resumes(actions, "A")
    assert bool(back) == resumed
    if resumed:  # from its checkpoint, paying the resume, on the node left
        assert back[0].time == 37 and a.nodes == ("p-1",)
        assert a.end == pytest.approx(back[0].running + 70)
    elif phase == "Completed":
        assert a.end == 137
    assert sched.usage_violations() == []


def test_a_pool_that_is_not_volatile_keeps_no_epoch_checkpoint():
    pool = exclusive(2)
    sched, actions = drive_changes([pool], [req("A", 1, 100)], [(37, down(pool, 0))])
    a = lease(sched, "A")
    assert not resumes(actions, "A") and a.end == 137  # all over again
    assert losts(actions, "A")[0].lost == 37 and a.lost_to_failures == 37


@pytest.mark.parametrize(("at", "owed", "lost"), [
    (30, 70, 0),     # lost at a boundary: the checkpoint of that instant is kept
    (5, 100, 5),     # within the first epoch: nothing saved, it starts over
    (99, 10, 9),
], ids=["at-a-boundary", "first-epoch", "last-epoch"])
def test_the_checkpoint_is_the_last_boundary_of_the_run(at, owed, lost):
    pool = volatile(exclusive(2))
    sched, actions = drive_changes([pool], [req("A", 1, 100)], [(at, down(pool, 0))])
    a = lease(sched, "A")
    assert losts(actions, "A")[0].lost == pytest.approx(lost)
    back = resumes(actions, "A")
    if owed == 100:
        assert not back and a.end == at + 100
    else:
        assert a.end == pytest.approx(back[0].running + owed)


def test_epochs_are_wall_seconds_of_the_run_at_the_pools_pace():
    """On a pool of speed 2 an epoch of 10 s does 20 of work; in VMs (boot 5 s) the
    run, and its epochs, begin once they have booted."""
    pool = replace(volatile(exclusive(2)), speed=2.0, vm=VmModel(boot=5))
    sched, actions = drive_changes([pool], [req("A", 1, 200)], [(42, down(pool, 0))])
    # run from 5: lost at 42, 37 s in, 3 epochs (60 of work) saved, 14 of work lost
    assert losts(actions, "A")[0].lost == pytest.approx(14)
    back = resumes(actions, "A")[0]
    assert lease(sched, "A").end == pytest.approx(back.running + 140 / 2)


def test_epochs_count_from_the_resumed_run_and_a_resume_overhead_saves_nothing():
    """Lost at 37 (checkpoint at 30: 70 owed), A resumes on p-1 and runs from
    ``running``; lost again during its resume, it keeps what it had; lost again 25 s
    into its next run, it keeps 2 more epochs."""
    pool = volatile(exclusive(2))
    sched = Scheduler([pool], config())
    steps = list(replay(sched, [Input.submit(req("A", 1, 100)),
                                Input.capacity_change(down(pool, 0), 37)], until=37))
    r1 = resumes([x for s in steps for x in s.actions], "A")[0]
    assert r1.running > 38
    # during the resume (no run yet): still the t=30 checkpoint
    acts = [x for s in replay(sched, [Input.capacity_change(down(pool, 0, 1), 38)],
                              until=38) for x in s.actions]
    assert losts(acts, "A")[0].lost == 0
    acts = [x for s in replay(sched, [Input.capacity_change(down(pool), 50)], until=50)
            for x in s.actions]
    r2 = resumes(acts, "A")[0]
    t = r2.running + 25
    acts = [x for s in replay(sched, [Input.capacity_change(down(pool, 0), t)], until=t)
            for x in s.actions]
    acts += [x for s in replay(sched, []) for x in s.actions]
    assert losts(acts, "A")[0].lost == pytest.approx(5)
    r3 = resumes(acts, "A")[0]
    assert lease(sched, "A").end == pytest.approx(r3.running + 70 - 20)
    assert lease(sched, "A").losses == 3


def test_losses_and_their_lost_work_are_kept_in_snapshots():
    pool = volatile(exclusive(2))
    sched = Scheduler([pool], config())
    list(replay(sched, [Input.submit(req("A", 1, 100)),
                        Input.capacity_change(down(pool, 0), 37)], until=38))
    again = restore(snapshot(sched), config())
    a = lease(again, "A")
    assert (a.losses, a.lost_to_failures) == (1, pytest.approx(7))


@hs.composite
def losses(draw):
    """A suspendable lease on a volatile pool of one node, lost at random instants
    (the node back at once: it restarts where it was)."""
    epoch = draw(hs.sampled_from([1.0, 3.0, 10.0]))
    work = draw(hs.integers(1, 200))
    times = sorted(set(draw(hs.lists(hs.integers(1, 4000), max_size=6))))
    return epoch, work, [t / 10 for t in times]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(losses())
def test_progress_never_goes_back_past_the_last_boundary(case):
    """Oracle, by brute force: the work done at each loss is the work of every earlier
    run plus this run's whole epochs; what the lease owes after the loss is exactly
    its work less that, and the lost work is the rest of the run."""
    epoch, work, times = case
    pool = volatile(exclusive(1), epoch)
    sched = Scheduler([pool], config())
    inputs = [Input.submit(req("A", 1, work, memory=8))]
    for t in times:
        inputs += [Input.capacity_change(down(pool, 0), t), Input.capacity_change(down(pool), t)]
    saved = 0.0  # work saved by the last checkpoint
    running: float | None = None  # when the current run began
    for step in replay(sched, inputs):
        for a in step.actions:
            if isinstance(a, Lost):
                assert running is not None or a.lost == 0
                ran = 0.0 if running is None else max(0.0, a.time - running)
                whole = 0
                while (whole + 1) * epoch <= ran + 1e-9:
                    whole += 1
                assert a.lost == pytest.approx(ran - whole * epoch, abs=1e-6)
                saved += whole * epoch
                assert saved < work
                running = None
            elif isinstance(a, Resume):
                running = a.running
            elif a.kind == "Start":
                running = a.time
                assert saved == 0  # started afresh only with nothing saved
        st = lease(sched, "A")
        if st.phase.value == "Suspended":
            assert st.remaining == pytest.approx(work - saved)
    a = lease(sched, "A")
    assert a.phase.value == "Completed"
    assert a.ran == pytest.approx(work + a.lost_to_failures)


def test_a_lease_lost_while_being_written_out_keeps_its_last_boundary():
    """A (suspendable, 100 s) is suspended at t=25 for a local lease that needs both
    nodes; its node goes at t=26, while it is written out: the write-out never
    finished, but the run had reached its boundary at t=20."""
    pool = volatile(exclusive(2))
    requests = [req("A", 1, 100, memory=64),
                req("L", 2, 40, at=25, type=DNP, origin=Origin.LOCAL, deadline=80, memory=64)]
    sched, actions = drive_changes([pool], requests, [(26, down(pool, 0)), (27, down(pool))])
    assert [a.kind for a in actions if a.lease == "A"][:3] == ["Admit", "Start", "Suspend"]
    [gone] = losts(actions, "A")
    assert gone.time == 26 and gone.lost == pytest.approx(5)
    a = lease(sched, "A")
    assert a.phase.value == "Completed"
    assert a.end == pytest.approx(resumes(actions, "A")[-1].running + 80)
