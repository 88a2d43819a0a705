"""Timelines from actions, and the text Gantt chart."""

from __future__ import annotations

from leasehold.core.model import Cancel, Complete, Migrate, Resume, Start, Suspend
from leasehold_emulator.sim.timeline import lease_timelines, render_gantt


def test_segments_follow_the_lifecycle():
    actions = [
        Start(0, "a", ("n0",)),
        Suspend(40, "a", 50, "blocked"),
        Resume(80, "a", ("n1",), 90),
        Migrate(100, "a", ("n2",), 120),
        Complete(150, "a"),
        Start(10, "b", ("n3",)),
        Cancel(30, "b", "owner"),
    ]
    assert lease_timelines(actions) == {
        "a": [("run", 0, 40), ("overhead", 40, 50), ("overhead", 80, 90), ("run", 90, 100),
              ("overhead", 100, 120), ("run", 120, 150)],
        "b": [("run", 10, 30)],
    }


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
