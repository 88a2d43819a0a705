"""Lease lifecycle in the core: start, complete, suspend/resume, cancel, inputs."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from builders import AR, BEC, DM, DNP, config, drive, exclusive, lease, req, run, spans
from leasehold.core import overhead
from leasehold.core.model import (
    Absence,
    Cancel,
    Complete,
    Migrate,
    Origin,
    OverheadParams,
    PoolSpec,
    Resume,
    Start,
    Suspend,
)
from leasehold.core.replay import Input, replay
from leasehold.core.scheduler import Scheduler
from leasehold.core.snapshot import snapshot
from strategies import workloads


def kinds(actions, lease):
    return [(a.kind, a.time) for a in actions if a.lease == lease]


def test_start_and_complete_at_runtime_else_duration():
    sched = run([exclusive(2)], [req("A", 1, 100, runtime=30), req("B", 1, 100)])
    assert spans(sched) == {"A": (0, 30, "Completed"), "B": (0, 100, "Completed")}


def test_actions_carry_times_and_nodes():
    sched = Scheduler([exclusive(2)], config())
    sched.submit(req("A", 2, 10), 0)
    acts = sched.advance(0)
    assert [a.kind for a in acts] == ["Admit", "Start"]
    assert acts[1] == Start(0, "A", ("p-0", "p-1"))
    assert sched.next_event_time() == 10
    assert sched.advance(10) == [Complete(10, "A")]
    assert sched.next_event_time() is None


def test_inputs_must_not_go_back_in_time():
    sched = Scheduler([exclusive(1)], config())
    sched.advance(50)
    with pytest.raises(ValueError, match="out of order"):
        sched.submit(req("A"), 10)
    with pytest.raises(ValueError, match="time runs forward"):
        sched.advance(10)


def test_finished_report_ends_a_lease_early_and_compresses():
    sched = Scheduler([exclusive(1)], config())
    sched.submit(req("A", 1, 100), 0)
    sched.submit(req("B", 1, 100), 0)
    sched.advance(0)
    assert sched.lease("B").phase.value == "Scheduled"
    sched.finished("A", 40)
    acts = sched.advance(40)
    assert (Complete(40, "A") in acts) and Start(40, "B", ("p-0",)) in acts


def test_cancel_queued_lease_frees_its_reservation():
    sched = Scheduler([exclusive(1)], config())
    for name in "ABC":
        sched.submit(req(name, 1, 100), 0)
    sched.advance(0)
    sched.cancel("B", 5)
    acts = sched.advance(5)
    assert Cancel(5, "B", "cancelled by its owner", 5) in acts  # it held no node
    assert sched.lease("C").reservation.start == 100  # C moved up from 200
    assert sched.lease("B").phase.value == "Cancelled"


def test_cancel_running_lease_stops_it_after_stop_seconds():
    pool = PoolSpec("p", 1, 1000, 1024, exclusive=True,
                    overhead=OverheadParams(stop_seconds=7))
    sched = Scheduler([pool], config())
    sched.submit(req("A", 1, 100), 0)
    sched.submit(req("B", 1, 100), 0)
    sched.advance(0)
    sched.cancel("A", 20)
    assert Cancel(20, "A", "cancelled by its owner", 27) in sched.advance(20)
    assert sched.lease("B").reservation.start == 27  # the node is free once A has stopped
    assert sched.next_event_time() == 27
    acts = sched.advance(27)
    assert Start(27, "B", ("p-0",)) in acts
    assert sched.lease("A").ran == 20


def test_late_reports_about_finished_leases_are_ignored():
    sched = Scheduler([exclusive(1)], config())
    sched.submit(req("A", 1, 10), 0)
    sched.advance(10)
    sched.finished("A", 11)
    sched.cancel("A", 11)
    sched.finished("ghost", 11)
    assert sched.advance(11) == []


def test_suspend_before_blocking_runs_in_the_hole_and_resumes_later():
    # 2 nodes; an AR takes both at [1000, 1100). B (2 VMs, 1500 s) may run before it.
    mem = 256
    r = [req("R", 2, 100, type=AR, start=1000), req("B", 2, 1500, at=0, memory=mem)]
    acts: list = []
    sched = run([exclusive(2)], r, config(sbb=True), lambda s, t, a: acts.extend(a))
    p = OverheadParams()
    h_s = overhead.suspend_seconds(r[1], p)
    h_r = overhead.resume_seconds(r[1], p)
    b = kinds(acts, "B")
    assert b[:2] == [("Admit", 0), ("Start", 0)]
    suspend = next(a for a in acts if isinstance(a, Suspend))
    assert suspend.time == pytest.approx(1000 - h_s) and suspend.vacated == pytest.approx(1000)
    resume = next(a for a in acts if isinstance(a, Resume))
    assert resume.time == 1100 and resume.running == pytest.approx(1100 + h_r)
    st = sched.lease("B")
    ran_before = 1000 - h_s
    assert st.end == pytest.approx(1100 + h_r + 1500 - ran_before)
    assert st.suspensions == 1 and st.preemptions == 0
    assert st.overhead == pytest.approx(overhead.suspend_overhead(r[1], p))
    assert st.ran == pytest.approx(1500)
    assert spans(sched)["R"] == (1000, 1100, "Completed")


def test_suspend_before_blocking_skips_holes_too_short_to_pay_off():
    # the hole is 300 s; suspending and resuming 1024 MiB costs ~287 s: not worth it
    r = [req("R", 1, 100, type=AR, start=300), req("B", 1, 1000, memory=1024)]
    sched = run([exclusive(1)], r, config(sbb=True))
    assert spans(sched)["B"][:2] == (400, 1400)
    assert sched.lease("B").suspensions == 0


@pytest.mark.parametrize("mode", ["conservative", "easy"])
def test_suspend_before_blocking_is_off_by_default(mode):
    r = [req("R", 2, 100, type=AR, start=1000), req("B", 2, 1500, memory=256)]
    sched = run([exclusive(2)], r, config(mode))
    assert spans(sched)["B"][:2] == (1100, 2600)


def test_cancel_while_suspending_does_not_requeue():
    r = [req("R", 1, 100, type=AR, start=1000), req("B", 1, 1500, memory=256)]
    sched = Scheduler([exclusive(1)], config(sbb=True))
    for x in r:
        sched.submit(x, 0)
    sched.advance(0)
    t = sched.next_event_time()  # the planned suspension
    sched.advance(t)
    assert sched.lease("B").phase.value == "Suspending"
    sched.cancel("B", t + 1)
    sched.advance(t + 1)
    while (nxt := sched.next_event_time()) is not None:
        sched.advance(nxt)
    assert sched.lease("B").phase.value == "Cancelled"
    assert sched.lease("B").reservation is None


def migrate_now(sched, name, now):
    """Drive the migration transition a preemption enacts, to the earliest slot by
    the lease's deadline (the preemptor's window is taken to have ended at ``now``)."""
    st = sched.lifecycle.leases[name]
    slot = sched.victims.deadline_slot(st, now, st.pool, now)
    if slot is None:
        return None
    sched.lifecycle.actions = []
    sched.lifecycle.migrate(st, now, slot.pool, "test", slot.start)
    return sched.lifecycle.actions


def test_migration_moves_a_running_lease_and_frees_its_source_nodes():
    a, b = exclusive(2, "a"), exclusive(2, "b")
    m = req("M", 2, 1000, memory=512, type=DM, deadline=5000, pool=None)
    sched = Scheduler([a, b], config())
    sched.submit(m, 0)
    sched.advance(0)
    assert sched.lease("M").nodes == ("a-0", "a-1")
    sched.advance(100)
    [act] = migrate_now(sched, "M", 100)
    p = OverheadParams()
    running = 100 + overhead.migrate_seconds(m, p) + 4 * p.pause_seconds
    left = 100 + 2 * (p.pause_seconds + 512 / p.suspend_rate)
    assert act == Migrate(100, "M", ("b-0", "b-1"), pytest.approx(running), pytest.approx(left))
    assert sched.lease("M").phase.value == "Migrating"
    # a lease that needs both nodes of pool a starts the moment M has left them
    sched.submit(req("X", 2, 10, pool="a"), 101)
    sched.advance(101)
    assert sched.lease("X").reservation.start == pytest.approx(left)
    while (t := sched.next_event_time()) is not None:
        sched.advance(t)
    st = sched.lease("M")
    assert st.phase.value == "Completed" and st.end == pytest.approx(running + 900)
    assert st.end <= 5000 and st.ran == pytest.approx(1000) and st.migrations == 1
    assert st.overhead == pytest.approx(overhead.migrate_overhead(m, p))
    assert sched.lease("X").first_start == pytest.approx(left)
    assert sched.slots.usage_violations() == []


def test_migration_to_a_later_slot_waits_written_out_and_lands_by_the_deadline():
    # one pool, fully used by M until 1000 and by B after it: M's only target is
    # after B, and its pipeline opens that booking
    p = OverheadParams()
    m = req("M", 2, 1000, memory=512, type=DM, deadline=9000)
    sched = Scheduler([exclusive(2)], config())
    sched.submit(m, 0)
    sched.submit(req("B", 2, 2000, at=0), 0)
    sched.advance(100)
    acts = migrate_now(sched, "M", 100)
    pipeline = overhead.migrate_run_seconds(m, p)
    left = 100 + overhead.migrate_leave_seconds(m, p)
    [reserve, migrate] = acts
    assert (reserve.kind, reserve.start) == ("Reserve", 3000)  # after B, as things stood
    assert migrate == Migrate(100, "M", (), pytest.approx(3000 + pipeline), pytest.approx(left))
    seen = []
    while (t := sched.next_event_time()) is not None:
        seen += sched.advance(t)
    # once M has left, B moves up to that instant (compression goes in submission
    # order in one pass, so M, submitted first, had already been tried and stays)
    assert sched.lease("B").first_start == pytest.approx(left)
    [resume] = [a for a in seen if a.kind == "Resume"]
    assert resume.time == 3000
    st = sched.lease("M")
    assert st.phase.value == "Completed" and st.ran == pytest.approx(1000)
    assert st.end == pytest.approx(3000 + pipeline + 900) and st.end <= 9000
    assert sched.slots.usage_violations() == []


def test_no_migration_target_when_the_deadline_would_be_missed():
    a, b = exclusive(2, "a"), exclusive(2, "b")
    sched = Scheduler([a, b], config())
    sched.submit(req("M", 2, 1000, memory=512, type=DM, deadline=1100), 0)
    sched.advance(100)
    assert migrate_now(sched, "M", 100) is None  # the pipeline alone takes ~290 s


def test_cancel_during_migration_releases_both_ends():
    a, b = exclusive(2, "a"), exclusive(2, "b")
    sched = Scheduler([a, b], config())
    sched.submit(req("M", 2, 1000, memory=512, type=DM, deadline=9000), 0)
    sched.advance(100)
    migrate_now(sched, "M", 100)
    sched.cancel("M", 110)
    sched.advance(110)
    while (t := sched.next_event_time()) is not None:
        sched.advance(t)
    assert sched.lease("M").phase.value == "Cancelled"
    assert list(sched.slots.bookings()) == []
    assert all(p.bookings == {} for p in sched.slots.pools.values())


# ---- regressions found by review (each crashed or over-committed before) -------------

def no_violations(sched, now, actions):
    assert sched.slots.usage_violations() == []


@pytest.mark.parametrize("pool", [exclusive(1), PoolSpec("p", 1, 1000, 1024)])
def test_cancel_with_zero_stop_time_frees_the_node_at_once(pool):
    sched = drive([pool], [req("A", 1, 100), req("B", 1, 10)], config(),
                  [(5, "cancel", "A")], no_violations)
    assert spans(sched)["B"][:2] == (5, 15)


@pytest.mark.parametrize("pool", [exclusive(2), PoolSpec("p", 1, 1000, 1024)])
def test_cancel_at_the_instant_a_lease_starts(pool):
    sched = drive([pool], [req("A", 1, 100)], config(), [(0, "cancel", "A")], no_violations)
    assert sched.lease("A").phase.value == "Cancelled"
    assert list(sched.slots.bookings()) == []


def test_stopping_never_outlasts_the_booking():
    pool = PoolSpec("p", 1, 1000, 1024, exclusive=True, overhead=OverheadParams(stop_seconds=5))
    sched = drive([pool], [req("A", 1, 10), req("B", 1, 10)], config(),
                  [(8, "cancel", "A")], no_violations)
    assert spans(sched)["B"][:2] == (10, 20)


@pytest.mark.parametrize("pool", [exclusive(1), PoolSpec("p", 1, 1000, 1024)])
def test_compression_does_not_let_work_outlast_its_booking_by_an_ulp(pool):
    d = 68.047758  # 30 + ((100 + d) - 100) < 30 + d in floating point
    sched = run([pool], [req("A", 1, 100, runtime=30), req("B", 1, d), req("C", 1, 10)],
                config(), no_violations)
    assert spans(sched)["C"][0] == spans(sched)["B"][1]


@pytest.mark.parametrize("pool", [exclusive(1), PoolSpec("p", 1, 1000, 1024)])
def test_planned_suspension_vacates_exactly_when_the_blocking_reservation_starts(pool):
    at, start = 28.496, 325.384  # (at + (w - h)) + h > at + w in floating point
    sched = run([pool], [req("AR", 1, 50, type=AR, start=start),
                         req("B", 1, 1000, at=at, memory=512)], config(sbb=True), no_violations)
    assert spans(sched)["AR"] == (start, start + 50, "Completed")
    assert sched.lease("B").suspensions == 1


def test_easy_never_books_a_former_head_twice():
    small = dict(memory=8)
    reqs = [req("l0", 1, 1000, 67, memory=16), req("l2", 2, 24, 4, type=AR, start=179, **small),
            req("l8", 1, 175, 150, type=AR, start=301, **small),
            req("l11", 1, 125, 22, type=AR, start=188, **small),
            req("l12", 1, 192, 64, type=AR, start=237, **small), req("l13", 1, 235, 162, **small),
            req("l14", 2, 210, 35, runtime=179, **small), req("l16", 2, 1000, 65, **small)]
    sched = drive([exclusive(4)], reqs, config("easy", sbb=True), [(93.5, "cancel", "l14")],
                  no_violations)
    assert all(st.phase.terminal for st in sched.leases())
    assert list(sched.slots.bookings()) == []


def victims_for(sched, pool, now, t, duration=100):
    local = req("L", 1, duration, type=DNP, origin=Origin.LOCAL)
    return {v.name: v for v in sched.victims.gather(pool, local, now, t)[0]}


def test_what_preempting_each_lease_type_would_do():
    sched = Scheduler([exclusive(6, "a"), exclusive(2, "b")], config())
    for r in (req("R", 1, 1000, type=AR, start=0, memory=512, pool="a"),
              req("N", 1, 1000, type=DNP, deadline=5000, pool="a"),
              req("S", 1, 1000, memory=512, pool="a"), req("C", 1, 1000, type=BEC, pool="a"),
              req("M", 1, 1000, type=DM, deadline=5000, memory=512, pool="a"),
              req("Q", 1, 1000, pool="a"), req("Q2", 1, 1000, pool="a")):
        sched.submit(r, 0)
    sched.advance(100)
    got = victims_for(sched, "a", 100, 100, duration=1000)  # Q2 is reserved from 1000
    assert {n: v.action for n, v in got.items()} == {
        "S": "suspend", "C": "cancel", "M": "migrate", "Q": "suspend", "Q2": "replan"}
    p = OverheadParams()
    h_s = overhead.suspend_seconds(sched.lease("S").request, p)
    assert got["S"].vacate == pytest.approx(100 + h_s)
    assert got["Q2"].vacate == 100 and got["Q2"].overhead == p.reschedule_seconds
    # for a preemptor later on, a running victim is suspended just in time
    late = victims_for(sched, "a", 100, 500)
    assert late["S"].vacate == 500 and late["C"].vacate == 500


def test_no_migration_when_the_vms_cannot_leave_before_the_booking_ends():
    a, b = exclusive(1, "a"), exclusive(1, "b")
    sched = Scheduler([a, b], config())
    sched.submit(req("M", 1, 100, type=DM, deadline=10_000, memory=1024), 0)
    sched.advance(50)  # writing 1024 MiB out takes 161 s; the booking ends at 100
    assert victims_for(sched, "a", 50, 50) == {}


def test_migration_source_is_vacated_even_when_the_landing_slot_moves_first():
    # M migrates at 100 to a slot after B; B is cancelled at 150, so M's landing slot
    # is compressed (re-booked) before M's VMs have left their source nodes at ~261
    m = req("M", 2, 1000, memory=512, type=DM, deadline=9000)
    sched = Scheduler([exclusive(2)], config())
    sched.submit(m, 0)
    sched.submit(req("B", 2, 2000), 0)
    sched.advance(100)
    migrate_now(sched, "M", 100)
    sched.cancel("B", 150)
    sched.advance(150)
    left = 100 + overhead.migrate_leave_seconds(m, OverheadParams())
    assert sched.lease("M").reservation.start == pytest.approx(left)  # moved up from 3000
    while (t := sched.next_event_time()) is not None:
        sched.advance(t)
        assert sched.slots.usage_violations() == []
    assert sched.lease("M").phase.value == "Completed"
    assert list(sched.slots.bookings()) == []


# ---- the shell's absence (an operator restarted) -------------------------------------

def _absent_at(at: float, until: float, idle: tuple[str, ...], *requests):
    """The requests on one exclusive node, the shell away from ``at`` to ``until``."""
    sched = Scheduler([exclusive(1)], config())
    inputs = [*map(Input.submit, requests), Input.absent(Absence(until, idle), at)]
    list(replay(sched, inputs))
    return sched


@pytest.mark.parametrize(
    ("at", "until", "idle", "requests", "expected"),
    [
        # started just before the shell went, its pods never made: it starts when the
        # shell is back, and never counts as having run meanwhile
        (0, 30, ("A",), [req("A", 1, 10)], {"A": (30, 40, "Completed")}),
        # running with its pods: it ends at its time; the lease due after it waits for
        # the shell (no start while it is away)
        (5, 30, (), [req("A", 1, 10), req("B", 1, 10)],
         {"A": (0, 10, "Completed"), "B": (30, 40, "Completed")}),
        # a lease submitted while nothing could start
        (0, 30, (), [req("A", 1, 10, at=12)], {"A": (30, 40, "Completed")}),
        # a reservation due meanwhile cannot end by its end any more: it fails
        (5, 25, (), [req("R", 1, 10, type=AR, start=20)], {"R": (None, 25, "Failed")}),
        # idle, but the hold is over at once: placed again at the same instant
        (0, 0, ("A",), [req("A", 1, 10)], {"A": (0, 10, "Completed")}),
        # started the instant the shell went, with its pods made: it runs on (the
        # absence closes its instant, after what the instant decided)
        (0, 30, (), [req("A", 1, 10)], {"A": (0, 10, "Completed")}),
    ],
    ids=["idle-starts-on-return", "running-ends-next-waits", "submitted-meanwhile",
         "reservation-missed", "no-time-away", "started-as-it-went"],
)
def test_nothing_starts_while_the_shell_is_away(at, until, idle, requests, expected):
    sched = _absent_at(at, until, idle, *requests)
    assert spans(sched) == expected
    assert sched.usage_violations() == []
    # as a restarted shell gives it: its core replayed to the instant, then told
    split = Scheduler([exclusive(1)], config())
    submits = list(map(Input.submit, requests))
    list(replay(split, [x for x in submits if x.time <= at], until=at))
    list(replay(split, [Input.absent(Absence(until, idle), at),
                        *(x for x in submits if x.time > at)]))
    assert spans(split) == expected


def test_an_idle_lease_is_credited_no_work_and_keeps_its_checkpoint():
    # B runs in the hole before R, is written out, and resumes at R's end (1100): the
    # shell goes just then, before its pods are made. It waits written out, with the
    # work it had done, and resumes (paying the resume again) when the shell is back
    r = [req("R", 2, 100, type=AR, start=1000), req("B", 2, 1500, memory=256)]
    sched = Scheduler([exclusive(2)], config(sbb=True))
    list(replay(sched, map(Input.submit, r), until=1100))
    b = lease(sched, "B")
    assert (b.phase.value, b.suspensions) == ("Resuming", 1)
    ran = b.ran
    sched.absent(Absence(2000, ("B",)), 1100)
    assert [a.kind for a in sched.advance(1100)] == ["Unstart"]
    b = lease(sched, "B")
    assert (b.phase.value, b.ran, b.placed, b.first_start) == ("Suspended", ran, (), 0)
    sched.advance(2000)
    b = lease(sched, "B")
    assert b.phase.value == "Resuming" and b.reservation.start == 2000
    list(replay(sched, []))
    b = lease(sched, "B")
    assert (b.phase.value, b.ran) == ("Completed", pytest.approx(1500))


def test_a_snapshot_waits_for_the_hold_to_end():
    sched = _absent_at(0, 30, (), req("A", 1, 10, at=12))
    snapshot(sched)  # over: the hold ended at 30
    held = Scheduler([exclusive(1)], config())
    held.absent(Absence(30), 0)
    held.advance(10)
    assert held.holding()
    with pytest.raises(ValueError, match="once a hold is over"):
        snapshot(held)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_placed_is_every_lease_on_nodes_at_every_step(workload):
    """``placed()``, read at every step of random workloads, against the filter of
    every lease's view."""
    pools, requests, cfg, inputs = workload

    def check(sched, now, actions):
        assert [v.name for v in sched.placed()] == [v.name for v in sched.leases() if v.placed]
    drive(pools, requests, cfg, inputs, check=check)


def test_placed_holds_a_resuming_lease_and_a_migrating_one_where_it_is():
    r = [req("R", 2, 100, type=AR, start=1000), req("B", 2, 1500, memory=256)]
    sched = Scheduler([exclusive(2)], config(sbb=True))
    list(replay(sched, map(Input.submit, r), until=1100))
    assert lease(sched, "B").phase.value == "Resuming"
    assert [v.name for v in sched.placed()] == ["B"]
    sched = Scheduler([exclusive(2, "a"), exclusive(2, "b")], config())
    sched.submit(req("M", 2, 1000, memory=512, type=DM, deadline=5000), 0)
    sched.advance(100)
    migrate_now(sched, "M", 100)
    m = lease(sched, "M")
    assert m.phase.value == "Migrating"
    assert [v.name for v in sched.placed()] == (["M"] if m.placed else [])
