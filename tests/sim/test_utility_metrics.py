"""002's metrics measured in the steady state: from the engine's per-job rows, over the
jobs arriving in a measurement window (warm-up left out), the completions in it."""

from __future__ import annotations

from typing import Any

import pytest

from leasehold_emulator.sim.utility_metrics import METRICS_002, steady_metrics


def job(arrival: float, end: float | None, work: float = 100.0, **more: Any) -> dict[str, Any]:
    """A per-job row as the engine writes it (refused: ``end`` None)."""
    row = {"name": f"j{arrival:g}", "arrival": arrival, "work": work, "share": 1.0,
           "phase": "Completed" if end is not None else "Refused", "end": end,
           "preemptiveMigrations": 0, "failureMigrations": 0, "windows": 1,
           "compliantWindows": 1, "shortfall": 0.0}
    return {**row, **more}


def test_only_the_jobs_arriving_in_the_window_count():
    rows = [
        job(50, 400, preemptiveMigrations=9),   # warm-up: left out
        job(100, 300, preemptiveMigrations=2, failureMigrations=1, shortfall=10.0),
        job(200, 500, work=200, preemptiveMigrations=0, failureMigrations=3,
            windows=3, compliantWindows=1, shortfall=30.0),
        job(250, None),                          # refused
        job(1500, 1700, preemptiveMigrations=7),  # after the span: drain, left out
    ]
    m = steady_metrics(rows, warmup=100, span=1000)
    assert set(m) == set(METRICS_002)
    assert m["elongation"] == pytest.approx((200 / 100 + 300 / 200) / 2)
    assert m["elongationOfSums"] == pytest.approx((200 + 300) / (100 + 200))
    assert m["preemptiveMigrationsPerJob"] == pytest.approx(1.0)
    assert m["failureMigrationsPerJob"] == pytest.approx(2.0)
    # shortfall and work in resource-seconds (work × share)
    assert m["penaltyPerWork"] == pytest.approx(40 / 300)
    assert m["refusedRate"] == pytest.approx(1 / 3)
    assert m["compliance"] == pytest.approx(2 / 4)
    # completions in [100, 1000]: at 300, 400 and 500, over 900 s
    assert m["throughput"] == pytest.approx(3 / 900 * 3600)
    # time in the window of every admitted job: 300 (j50: 100..400) + 200 + 300
    assert m["jobsInSystem"] == pytest.approx((300 + 200 + 300) / 900)
    assert m["completed"] == 2 and m["refused"] == 1


def test_shares_weigh_the_penalty():
    rows = [job(10, 110, work=100, share=0.5, shortfall=5.0),
            job(20, 120, work=100, share=1.0, shortfall=5.0)]
    assert steady_metrics(rows, 0, 100)["penaltyPerWork"] == pytest.approx(10 / 150)


def test_an_empty_window_has_no_measure_but_nan():
    m = steady_metrics([job(5, 50)], warmup=100, span=200)
    assert m["completed"] == 0 and m["throughput"] == 0
    assert all(m[k] != m[k] for k in ("elongation", "penaltyPerWork", "refusedRate"))


def test_a_job_still_running_is_an_error():
    with pytest.raises(ValueError, match=r"j10.*has not ended"):
        steady_metrics([job(10, None, phase="Running")], 0, 100)
