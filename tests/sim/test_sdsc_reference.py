"""Cross-check against published references on the SDSC Blue 30-day trace.

5,108 jobs on 144 single-VM nodes. References (issue #2): FCFS 564.26 min exactly;
pyss EASY 71.43 min and conservative 71.42 min (within 2% required).
"""

from __future__ import annotations

import pytest

from leasehold.core.model import Backfilling, PoolSpec, SchedulerConfig
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.metrics import run_metrics
from leasehold_emulator.workloads.swf import swf_requests

BLUE = PoolSpec("blue", 144, 1000, 1024, exclusive=True)


@pytest.fixture(scope="module")
def blue_jobs(shared_data):
    return swf_requests(shared_data / "SDSC-BLUE-haizea-30days.swf.gz")


def mean_wait_minutes(jobs, mode: str) -> float:
    result = simulate([BLUE], SchedulerConfig(backfilling=Backfilling(mode)), jobs,
                      keep_actions=False)
    leases = result.scheduler.leases()
    assert all(s.phase.value == "Completed" for s in leases)
    return run_metrics(leases, [BLUE])["meanWaitSeconds"] / 60


@pytest.mark.parametrize(
    ("mode", "reference", "tolerance"),
    [("none", 564.26, 0.005), ("easy", 71.43, 0.02 * 71.43),
     ("conservative", 71.42, 0.02 * 71.42)],
)
def test_mean_wait_matches_reference(blue_jobs, mode, reference, tolerance):
    got = mean_wait_minutes(blue_jobs, mode)
    print(f"{mode}: mean wait {got:.2f} min (reference {reference})")
    assert abs(got - reference) <= tolerance
