"""A pool's speed divides run time (issue 21 item 4; docs/semantics.md, "Pool speed").

A request's duration (and runtime) is work at speed 1.0; on a pool of speed ``s`` it
runs ``work / s`` seconds. What a suspended or migrated lease still owes is kept as
work, so it runs at the speed of wherever it goes on. Overheads (data transfers) do
not scale; deadlines are wall time; an advance reservation is a window of wall time.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from builders import AR, BES, DM, DNP, config, drive, lease, req
from leasehold.core import overhead
from leasehold.core.model import (
    Capacity,
    Complete,
    Migrate,
    Origin,
    OverheadParams,
    PoolSpec,
    Reject,
    Resume,
    Suspend,
)
from leasehold.core.replay import Input, run, submissions
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import restore, snapshot

#: overheads of about a second, so that the scenarios stay short
QUICK = OverheadParams(suspend_rate=512.0, resume_rate=512.0, bandwidth=512.0)


def pool(name: str = "p", speed: float = 1.0, nodes: int = 1) -> PoolSpec:
    return PoolSpec(name, nodes, 1000, 1024, exclusive=True, overhead=QUICK, speed=speed)


def recorded(pools, requests):
    actions: list = []
    sched = drive(pools, requests, check=lambda s, t, a: actions.extend(a))
    return sched, actions


def only(actions, kind, name):
    found = [a for a in actions if isinstance(a, kind) and a.lease == name]
    assert len(found) == 1, f"{kind.__name__} of {name}: {found}"
    return found[0]


@pytest.mark.parametrize(("speed", "request_", "start", "end"), [
    pytest.param(2.0, req("a", duration=100), 0, 50, id="speed-2-half-the-duration"),
    pytest.param(0.5, req("a", duration=100), 0, 200, id="speed-half-twice-the-duration"),
    pytest.param(4.0, req("a", duration=100, runtime=60), 0, 15,
                 id="the-actual-runtime-scales-too"),
    pytest.param(2.0, req("a", duration=30, at=0, type=AR, start=5), 5, 35,
                 id="a-reservation-is-a-window-of-wall-time"),
    pytest.param(1.0, req("a", duration=100), 0, 100, id="speed-1-as-before"),
])
def test_a_lease_runs_its_work_divided_by_its_pools_speed(speed, request_, start, end):
    sched, _ = recorded([pool(speed=speed)], [request_])
    got = lease(sched, "a")
    assert (got.phase.value, got.first_start, got.end) == ("Completed", start, end)
    assert got.ran == end - start  # wall seconds on the nodes (utilisation counts them)


def test_a_suspended_lease_keeps_its_work_and_resumes_at_its_pools_speed():
    """100 s of work on a speed-2 pool: 10 s run (20 of work) before a local lease
    takes the node; the 80 left take 40 s after the resume."""
    be = req("be", duration=100, type=BES)
    h_s = overhead.suspend_seconds(be, QUICK)
    # 20 s of work is 10 s here: its deadline leaves no room to wait for "be"
    loc = req("loc", duration=20, at=10, type=DNP, origin=Origin.LOCAL, pool="p",
              deadline=10 + h_s + 10 + 1)
    seen: dict[str, float] = {}

    def check(sched, now, actions):
        for a in actions:
            if isinstance(a, Suspend):
                seen["remaining"] = lease(sched, "be").remaining

    actions: list = []
    sched = drive([pool(speed=2.0)], [be, loc],
                  check=lambda s, t, a: (check(s, t, a), actions.extend(a)))
    assert only(actions, Suspend, "be").time == 10
    assert seen["remaining"] == 80  # work, not wall seconds
    local = lease(sched, "loc")
    assert local.end - local.first_start == 10  # the preemptor's booking scales too
    resumed = only(actions, Resume, "be")
    assert only(actions, Complete, "be").time - resumed.running == pytest.approx(40)
    assert lease(sched, "be").ran == pytest.approx(10 + 40)


@pytest.mark.parametrize(("source", "target", "left"), [
    pytest.param(1.0, 2.0, (100 - 20) / 2, id="to-a-faster-pool"),
    pytest.param(2.0, 1.0, 100 - 2 * 20, id="to-a-slower-pool"),
    pytest.param(2.0, 4.0, (100 - 2 * 20) / 4, id="both-faster-than-1"),
])
def test_a_migrated_lease_goes_on_at_its_new_pools_speed(source, target, left):
    """A migratable lease runs 20 s on pool a; a local lease there moves it to b, where
    the work it still owes runs at b's speed."""
    dm = req("dm", duration=100, type=DM, deadline=1000)
    leave = overhead.migrate_leave_seconds(dm, QUICK)
    loc = req("loc", duration=10 * source, at=20, type=DNP, origin=Origin.LOCAL, pool="a",
              deadline=20 + leave + 10 + 1)
    sched, actions = recorded([pool("a", source), pool("b", target)], [dm, loc])
    moved = only(actions, Migrate, "dm")
    assert moved.time == 20
    assert lease(sched, "dm").pool == "b"
    assert only(actions, Complete, "dm").time - moved.running == pytest.approx(left)
    assert lease(sched, "dm").ran == pytest.approx(20 + left)


def test_a_reservation_never_scales_when_it_preempts():
    """A reservation on a speed-2 pool holds its nodes for its whole window."""
    be = req("be", duration=100, type=BES)
    ar = req("ar", duration=30, at=5, type=AR, start=10)
    sched, _ = recorded([pool(speed=2.0)], [be, ar])
    got = lease(sched, "ar")
    assert (got.first_start, got.end) == (10, 40)


@pytest.mark.parametrize(("pools", "blocker", "deadline", "outcome"), [
    pytest.param([pool("slow", 1.0), pool("fast", 2.0)], None, 60, ("fast", 0, 50),
                 id="fits-only-on-the-fast-pool"),
    pytest.param([pool("fast", 2.0)], None, 49, None, id="work-over-speed-misses-it"),
    pytest.param([pool("slow", 1.0), pool("fast", 2.0)], 40, 75, ("fast", 20, 70),
                 id="later-on-the-fast-pool-still-in-time"),
    pytest.param([pool("slow", 1.0), pool("fast", 2.0)], 40, 69, None,
                 id="later-on-the-fast-pool-too-late"),
    pytest.param([pool("slow", 0.5), pool("fast", 1.0)], None, 150, ("fast", 0, 100),
                 id="the-slow-pool-listed-first-would-miss-it"),
])
def test_a_deadline_lease_is_admitted_only_where_its_work_over_speed_fits(
        pools, blocker, deadline, outcome):
    requests = [req("d", duration=100, type=DNP, deadline=deadline)]
    if blocker is not None:  # holds the fast pool (blocker / 2 seconds), preempting no one
        requests.insert(0, req("x", duration=blocker, type=DNP, deadline=1000, pool="fast"))
    sched, actions = recorded(pools, requests)
    got = lease(sched, "d")
    if outcome is None:
        assert only(actions, Reject, "d").cause == "deadline"
        return
    assert (got.pool, got.first_start, got.end) == outcome
    assert got.end <= deadline


@pytest.mark.parametrize(("speed", "deadline", "preempts"), [
    pytest.param(0.5, 150, False, id="slow-pool-its-work-cannot-end-by-the-deadline"),
    pytest.param(0.5, 250, True, id="slow-pool-with-time-for-its-work"),
    pytest.param(1.0, 150, True, id="speed-1-as-before"),
])
def test_a_local_lease_preempts_only_where_its_work_over_speed_ends_by_its_deadline(
        speed, deadline, preempts):
    """Found by the property test: on a pool of speed 0.5 a local lease of 100 s of work
    needs 200 s; preempting there could not meet a deadline 150 s away, and must not
    be done (the local lease is refused instead, the external one left running)."""
    be = req("be", duration=1000, type=BES)
    local = req("local", duration=100, at=10, type=DNP, origin=Origin.LOCAL,
                deadline=10 + deadline)
    sched, actions = recorded([pool(speed=speed)], [be, local])
    suspended = any(isinstance(a, Suspend) and a.lease == "be" for a in actions)
    assert suspended == preempts
    got = lease(sched, "local")
    if preempts:
        assert got.end <= 10 + deadline + sched.decisions[-1].vacate_seconds
    else:
        assert only(actions, Reject, "local").cause == "deadline"


@pytest.mark.parametrize(("speed", "at", "ran", "left"), [
    pytest.param(0.5, 150, 150, 100 - 150 * 0.5, id="slower-runs-past-its-work-in-seconds"),
    pytest.param(2.0, 30, 30, 100 - 30 * 2.0, id="faster"),
])
def test_the_view_reads_progress_as_wall_seconds_and_work(speed, at, ran, left):
    """What the shells show (ran seconds, work left) in the middle of a run."""
    seen = {}

    def check(sched, now, actions):
        if now == at:
            view = lease(sched, "a")
            seen.update(ran=view.ran_by(now), left=view.remaining_by(now), pace=view.pace)

    drive([pool(speed=speed)], [req("a", duration=100), req("tick", duration=1, at=at)],
          check=check)
    assert seen == {"ran": ran, "left": left, "pace": speed}


def test_a_snapshot_keeps_the_pools_speed_and_the_run_goes_on_at_it():
    core = Scheduler([pool(speed=2.0)], config())
    run(core, submissions([req("a", duration=100)]), until=10)
    data = json.loads(json.dumps(snapshot(core)))
    assert data["pools"][0]["spec"]["speed"] == 2.0
    restored = restore(data, config())
    assert restored.pools["p"].speed == 2.0
    run(restored, [])
    assert (lease(restored, "a").end, lease(restored, "a").ran) == (50, 50)


def test_a_snapshot_of_pools_of_speed_1_is_as_before():
    core = Scheduler([pool()], config())
    assert "speed" not in snapshot(core)["pools"][0]["spec"]


def test_a_speed_changed_while_leases_run_applies_to_the_bookings_made_from_then_on():
    """A NodePool's speed edited: a running lease keeps the booking (and the pace) it
    started with; a reservation not started yet is placed again at the new speed."""
    before = pool(speed=1.0)
    inputs = [Input.submit(req("run", duration=100)), Input.submit(req("wait", duration=100)),
              Input.capacity_change(Capacity(replace(before, speed=2.0)), 10)]
    core = Scheduler([before], config())
    run(core, inputs)
    assert (lease(core, "run").end, lease(core, "run").ran) == (100, 100)
    assert (lease(core, "wait").first_start, lease(core, "wait").end) == (100, 150)
