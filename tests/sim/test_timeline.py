"""Timelines from actions, and the text Gantt chart."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from builders import AR, DM, config, drive, exclusive, req
from leasehold.core.model import (
    Cancel,
    Complete,
    Fail,
    Lost,
    Migrate,
    OverheadParams,
    Reserve,
    Resume,
    Start,
    Suspend,
    Unstart,
)
from leasehold.core.slots import DOWN
from leasehold_emulator.sim.metrics import over_time
from leasehold_emulator.sim.timeline import lease_timelines, render_gantt
from strategies import preempting_workloads, workloads

CASES = [
    pytest.param(
        [Start(0, "a", ("n0",)), Suspend(40, "a", 50, "blocked"), Resume(80, "a", ("n1",), 90),
         Migrate(100, "a", ("n2",), 120, 110), Complete(150, "a"),
         Start(10, "b", ("n3",)), Cancel(30, "b", "owner", 30)],
        {"a": [("run", 0, 40), ("overhead", 40, 50), ("overhead", 80, 90), ("run", 90, 100),
               ("overhead", 100, 110), ("overhead", 100, 120), ("run", 120, 150)],
         "b": [("run", 10, 30)]},
        id="lifecycle: a migration holds its source and its target at once",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Migrate(10, "a", (), 80, 20), Reserve(15, "a", 70, 100, "p"),
         Resume(70, "a", ("n1",), 80), Complete(100, "a")],
        {"a": [("run", 0, 10), ("overhead", 10, 20), ("overhead", 70, 80), ("run", 80, 100)]},
        id="a migration to a later slot holds nothing between leaving and landing",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Migrate(10, "a", (), 60, 20), Reserve(12, "a", 90, 120, "p"),
         Resume(90, "a", ("n1",), 100), Complete(120, "a")],
        {"a": [("run", 0, 10), ("overhead", 10, 20), ("overhead", 90, 100), ("run", 100, 120)]},
        id="re-planned later: it lands when its Resume says, not when first planned",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Migrate(10, "a", (), 60, 20), Cancel(15, "a", "owner", 15)],
        {"a": [("run", 0, 10), ("overhead", 10, 20)]},
        id="cancelled while leaving: its VMs still leave the source as planned",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Migrate(10, "a", ("n1",), 60, 20), Lost(15, "a", ("n1",), "gone")],
        {"a": [("run", 0, 10), ("overhead", 10, 15), ("overhead", 10, 15)]},
        id="a lost node frees the source and the target at once",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Suspend(10, "a", 30, "blocked"), Resume(40, "a", ("n0",), 60),
         Suspend(50, "a", 55, "preempted")],
        {"a": [("run", 0, 10), ("overhead", 10, 30), ("overhead", 40, 50), ("overhead", 50, 55)]},
        id="suspended while resuming: the resume is cut, it never ran",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Cancel(20, "a", "owner", 27)],
        {"a": [("run", 0, 20), ("overhead", 20, 27)]},
        id="cancelled while running: it holds its nodes while it stops",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Suspend(10, "a", 30, "blocked"), Cancel(20, "a", "owner", 30)],
        {"a": [("run", 0, 10), ("overhead", 10, 20), ("overhead", 20, 30)]},
        id="cancelled while suspending: it still has to finish writing out",
    ),
    pytest.param(
        [Start(0, "a", ("n0",)), Unstart(5, "a", "never made"), Start(8, "a", ("n0",)),
         Fail(9, "a", "refused")],
        {"a": [("run", 0, 5), ("run", 8, 9)]},
        id="unstarted and failed: the booking ends with the action",
    ),
]


@pytest.mark.parametrize(("actions", "want"), CASES)
def test_segments_end_when_the_lease_moves_on(actions, want):
    assert lease_timelines(actions) == want


def rec(name, submitted, end, timeline, phase="Completed"):
    return {"name": name, "submitted": submitted, "end": end, "phase": phase,
            "timeline": [list(s) for s in timeline]}


def test_gantt_rows_scale_to_the_last_end():
    rows = render_gantt([
        rec("a", 0, 100, [("run", 0, 50), ("overhead", 50, 60), ("run", 80, 100)]),
        rec("bb", 20, 100, [("run", 50, 100)]),
        rec("x", 30, 30, [], phase="Rejected"),
    ], width=10)
    assert rows == [
        "  a  |#####~..##|",
        "  bb |  ...#####|",
        "  x  |   x      |",
    ]


def vms_at(series, t):
    """The step series' ``busyVMs`` at ``t`` (each value holds until the next time)."""
    i = bisect_right(series["time"], t) - 1
    return series["busyVMs"][i] if i >= 0 else 0


def held_by_bookings(sched, now):
    """What the slot table holds at ``now``: the VMs of every booking begun and not
    ended (a migration's source and target both hold nodes while it leaves one for
    the other), down nodes left out."""
    return sum(b.vms for b in sched.slots.bookings()
               if b.lease != DOWN and b.start <= now < b.end)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(workloads(), preempting_workloads()))
def test_the_timeline_counts_what_the_slot_table_holds(workload):
    pools, requests, cfg, inputs = workload
    note(f"pools={pools}\ncfg={cfg}\ninputs={inputs}\n" + "\n".join(map(repr, requests)))
    actions, held = [], {}

    def record(sched, now, acts):
        actions.extend(acts)
        held[now] = held_by_bookings(sched, now)

    sched = drive(pools, requests, cfg, inputs, record)
    series = over_time(sched.leases(), lease_timelines(actions))
    counted = {t: vms_at(series, t) for t in held}
    assert counted == held
    assert min(series["waiting"], default=0) >= 0
    if all(p.exclusive for p in pools):  # one VM a node: the VMs never outnumber the nodes
        assert max(series["busyVMs"], default=0) <= sum(p.nodes for p in pools)


#: seconds-long overheads: a 128 MB VM is written out in 4 s, copied in 4 s
QUICK = OverheadParams(suspend_rate=32.0, resume_rate=32.0, bandwidth=32.0)


def test_a_migration_to_a_later_slot_holds_nothing_while_it_waits():
    # the over-time plot's 54 VMs on 32 nodes, small: m (2 VMs) fills the pool; a
    # reservation for both nodes migrates it to the slot after it. m leaves its nodes
    # at 13.01 (two VMs written out, 4.005 s each) and waits, holding nothing, until
    # the reservation ends at 33.01; its pipeline (20.02 s) then lands it
    pool = replace(exclusive(2), overhead=QUICK)
    requests = [req("m", 2, 20, 0, type=DM, memory=128, deadline=80),
                req("r", 2, 20, 5, type=AR, start=5, memory=128)]
    actions: list = []
    sched = drive([pool], requests, config("conservative", policy="moml"), (),
                  lambda s, t, acts: actions.extend(acts))
    timelines = lease_timelines(actions)
    assert timelines == {
        "m": [("run", 0, 5), ("overhead", 5, pytest.approx(13.01)),
              ("overhead", pytest.approx(33.01), pytest.approx(53.03)),
              ("run", pytest.approx(53.03), pytest.approx(68.03))],
        "r": [("run", pytest.approx(13.01), pytest.approx(33.01))],
    }
    series = over_time(sched.leases(), timelines)
    assert max(series["busyVMs"]) == 2  # never more VMs than nodes
    assert min(series["waiting"]) == 0
