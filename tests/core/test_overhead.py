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
