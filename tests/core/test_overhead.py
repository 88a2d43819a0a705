"""Overhead model (000 §5, §7.2): the papers' numbers for a 1024 MB VM."""

from __future__ import annotations

import pytest

from builders import req
from leasehold.core import overhead
from leasehold.core.model import OverheadParams

P = OverheadParams()


@pytest.mark.parametrize(
    ("fn", "vms", "expected"),
    [
        (overhead.suspend_seconds, 1, 1024 / 6.36 + 0.005),  # 161.0 s + pause
        (overhead.resume_seconds, 1, 1024 / 8.12 + 0.005),  # 126.1 s + unpause
        (overhead.suspend_seconds, 3, 3 * (1024 / 6.36 + 0.005)),  # sequential VMs
        (overhead.suspend_overhead, 1, 1024 / 6.36 + 1024 / 8.12 + 0.01 + 2.3),
    ],
)
def test_suspend_and_resume_times(fn, vms, expected):
    assert fn(req("x", vms, memory=1024), P) == pytest.approx(expected)


def test_papers_rounded_figures():
    one = req("x", 1, memory=1024)
    assert round(1024 / P.suspend_rate, 1) == 161.0
    assert round(1024 / P.resume_rate, 1) == 126.1
    assert round(1024 / P.bandwidth, 1) == 160.2
    assert overhead.cancel_overhead(one, P) == 0.0


def test_migration_pipelines_suspend_and_resume():
    t_s, t_r, copy = 1024 / 6.36, 1024 / 8.12, 1024 / P.bandwidth
    one = overhead.migrate_seconds(req("x", 1, memory=1024), P)
    three = overhead.migrate_seconds(req("x", 3, memory=1024), P)
    assert one == pytest.approx(copy + t_s + t_r)
    # VM j's suspension overlaps VM j-1's resumption: (v-1) * max(t_s, t_r) more
    assert three == pytest.approx(3 * copy + t_s + 2 * max(t_s, t_r) + t_r)
    assert overhead.migrate_overhead(req("x", 3, memory=1024), P) == pytest.approx(
        three + 6 * 0.005 + 2.3)


HAIZEA = OverheadParams(suspend_rate=50, resume_rate=50, bandwidth=10, model="haizea")


def test_haizea_model_suspends_all_vms_at_once():
    # 004 §4: 1 GB VMs, H_w = H_r = 50 MB/s, 10 MB/s network
    one, four = req("x", 1, memory=1024), req("x", 4, memory=1024)
    assert overhead.suspend_seconds(four, HAIZEA) == overhead.suspend_seconds(one, HAIZEA)
    assert overhead.suspend_seconds(four, HAIZEA) == pytest.approx(1024 / 50)
    assert overhead.resume_seconds(four, HAIZEA) == pytest.approx(1024 / 50)
    # no pauses, the rescheduling delta still counts
    assert overhead.suspend_overhead(four, HAIZEA) == pytest.approx(2 * 1024 / 50 + 2.3)


def test_haizea_model_migration_copies_image_and_memory():
    r = req("x", 2, memory=1024)
    r = type(r)(**{**{f: getattr(r, f) for f in r.__dataclass_fields__}, "image_mb": 2048})
    assert overhead.migrate_seconds(r, HAIZEA) == pytest.approx(
        1024 / 50 + (2048 + 1024) / 10 + 1024 / 50)
    assert overhead.migrate_leave_seconds(r, HAIZEA) == pytest.approx(1024 / 50)
    assert overhead.migrate_run_seconds(r, HAIZEA) == overhead.migrate_seconds(r, HAIZEA)


def test_a_queued_reservation_costs_only_the_rescheduling_delta():
    assert overhead.replan_overhead(req("x", 8, memory=4096), P) == 2.3
