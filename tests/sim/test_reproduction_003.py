"""A regression guard for 003 Figs. 5-8: a direction that held in every seed of the
pilot (docs/reproduction.md, "003 Figs. 5–8"), asserted on a scaled-down default point
of examples/experiments/003-vms.yaml (6 hours instead of two days, two seeds, the
pools and streams as written).

What holds robustly is 003's claim on valuable leases (Fig. 8, Table 3): PAP-RTDP
rejects far fewer non-preemptable external leases than round robin. Round robin sends a
third of the external work to the 64-node pool (0.05 requests/s of 5 VMs for 420 s: 1.6
times its nodes), where a non-preemptable lease seldom finds its VMs free at once; PAP
sends it about 8%. In the pilot (two days, seeds 1-3) round robin rejected 28%, PAP-RTDP
7% (paired difference 21.5 points, 95% CI 17.0-26.0). At six and twelve hours, seeds
1-8, PAP-RTDP's rate is below half of round robin's in all 16 runs (at most 0.43 of it:
seed 6 at six hours, 6.6% against 15.2%): the guard is "below half". Before RTDP's
clock rescaled a pool's wait when its share changed (docs/dispatch.md, "Shares that
change") it was not, on seed 2: one choice of c128 under a tiny first estimate of its
share kept it from every later DeadlineMigratable lease, c256 took them and rejected
its non-preemptable ones (15.0% against 20.5% at six hours, 0.73 of it). Fewer
preempted VMs under PAP-RTDP than under round robin held in the three two-day seeds
but not in every six-hour one (seed 2: 226 against 121; 239 before that fix), and
PAP-RTDP against PAP-RND went both ways: neither is asserted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from leasehold_emulator.sim.experiment import ExperimentSpec, Unit, run_unit, validate_experiment

FILE = Path(__file__).resolve().parents[2] / "examples" / "experiments" / "003-vms.yaml"


def default_point(hours: float, dispatches: list[str]) -> ExperimentSpec:
    """003-vms.yaml at its default point (5 VMs), ``hours`` long, under ``dispatches``."""
    data = yaml.safe_load(FILE.read_text())
    data["workload"]["span"] = f"{hours}h"
    data["grid"] = {}
    data["dispatches"], data["baseline"] = dispatches, dispatches[0]
    return validate_experiment(data, str(FILE))


@pytest.mark.parametrize("seed", [1, 2])
def test_pap_rtdp_rejects_fewer_non_preemptable_leases_than_round_robin(seed: int) -> None:
    rows = {r["arm"]: r for r in run_unit(default_point(6, ["rr", "pap-rtdp"]), Unit({}, seed))}
    rr = rows["rr"]["nonPreemptableRejectionRate"]
    rtdp = rows["pap-rtdp"]["nonPreemptableRejectionRate"]
    assert rr > 0.1  # round robin overloads the small pool: the comparison means something
    assert rtdp < rr / 2, f"seed {seed}: pap-rtdp rejects {rtdp:.1%}, rr {rr:.1%}"


@pytest.mark.parametrize("seed", [1, 2])
def test_pap_rtdp_preempts_under_half_the_vms_rr_and_lrf_preempt_in_two_days(seed: int) -> None:
    """003 Fig. 5's direction against the baselines that ignore the pools' sizes, at the
    default point over the paper's two days. In the 10-seed sweeps (docs/reproduction.md,
    "003 Figs. 5–8") PAP-RTDP preempted at most 0.57 of the VMs the fewer of RR and LRF
    preempted in every one of 003-vms' 40 runs (0.15 and 0.25 at the default point on
    seeds 1 and 2; at most 0.45 on every seed but 8). At six hours it does not hold on
    every seed (above), so the guard runs the two days: about 15 CPU s."""
    rows = {r["arm"]: r for r in
            run_unit(default_point(48, ["rr", "lrf", "pap-rtdp"]), Unit({}, seed))}
    rtdp = rows["pap-rtdp"]["preemptedVMs"]
    fewest = min(rows["rr"]["preemptedVMs"], rows["lrf"]["preemptedVMs"])
    assert fewest > 1000  # the baselines overload the small pool: the comparison means something
    assert rtdp < fewest / 2, f"seed {seed}: pap-rtdp preempts {rtdp:.0f} VMs, rr/lrf {fewest:.0f}"
