"""002 Figs. 1-8 (examples/experiments/002-*.yaml, `make reproduce-002`): every file is
valid as written and a tiny version of it runs and reports; and the directions the
reproduction carries (docs/reproduction.md, "002 Figs. 1–8"), asserted on a small,
seeded version of the load sweep."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold_emulator.sim.experiment import Unit, run, run_unit, validate_experiment
from leasehold_emulator.sim.experiment_report import write_report

EXAMPLES = Path(__file__).resolve().parents[2] / "examples/experiments"
FILES = sorted(EXAMPLES.glob("002-*.yaml"))


def tiny(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` scaled down: 10 private nodes, a threshold of 50, jobs of 10 epochs,
    10 minutes of arrivals, two seeds, the first two values of each axis (a load
    scaled by a tenth, a private pool by a tenth)."""
    data["workload"].update(mean_work=100, span=600, warmup=100)
    data["workload"]["load"] = data["workload"]["load"] / 10
    data["cluster"]["pools"][0]["nodes"] = 10
    data["config"]["utility"]["threshold"] = 50
    scaled = {"workload.load": 0.1, "cluster.pools.private.nodes": 0.1}
    data["grid"] = {k: [v * scaled[k] if k in scaled else v for v in values[:2]]
                    for k, values in data["grid"].items()}
    data["grid"] = {k: [round(v) if isinstance(v, float) and k in scaled else v
                        for v in values] for k, values in data["grid"].items()}
    data["replications"] = 2
    return data


def test_there_is_a_file_per_figure_and_the_sensitivity_runs():
    assert {p.stem for p in FILES} >= {"002-load", "002-private", "002-failure",
                                       "002-replicas"}
    assert sum(p.stem.startswith("002-sensitivity-") for p in FILES) >= 3


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_a_tiny_version_runs_and_reports(path, tmp_path):
    data = yaml.safe_load(path.read_text())
    validate_experiment(data, str(path))  # the full file is valid as it is
    spec = validate_experiment(tiny(data), str(path))
    units = len(spec.points()) * 2
    assert run(spec, tmp_path, processes=1) == units
    write_report(spec, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "## elongation (002 Fig. 3): mean ± 95% CI" in report


# ---- the directions (docs/reproduction.md, "002 Figs. 1–8") --------------------------
#: the small version: a fifth of 002's system (20 private nodes, a threshold of 100),
#: its jobs and public pool as the files have them, 90 minutes of arrivals (the first
#: 2,000 s not measured), seeds 1-3. Every direction asserted below held on the means
#: of seeds 1-3 and, separately, of seeds 4-6 with the margins asserted (the probe's
#: numbers are in the comments: seeds 1-3 / 4-6)
PRIVATE, THRESHOLD, SEEDS = 20, 100, (1, 2, 3)
#: loads (Erlangs): jobs in the system about twice the private nodes (RR's spike), and
#: past the threshold (every scheme's queue full)
TWICE, FULL = 30.0, 160.0

#: (file, grid key, value) -> scheme -> metric -> mean over SEEDS
Means = dict[str, dict[str, float]]


def small_point(name: str, key: str, value: Any) -> Means:
    """``name`` at a fifth of its size (above), at ``key = value``; the means by
    scheme over :data:`SEEDS`."""
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    data["cluster"]["pools"][0]["nodes"] = PRIVATE
    data["config"]["utility"]["threshold"] = THRESHOLD
    data["workload"].update(span=5400, warmup=2000, load=40)
    data["grid"] = {key: [value]}
    spec = validate_experiment(data, name)
    rows = [r for seed in SEEDS for r in run_unit(spec, Unit({key: value}, seed))]
    return {arm: {m: statistics.fmean(r[m] for r in rows if r["arm"] == arm)
                  for m in rows[0] if isinstance(rows[0][m], float)}
            for arm in dict.fromkeys(r["arm"] for r in rows)}


@pytest.fixture(scope="module")
def means() -> Callable[[str, str, Any], Means]:
    """Each small point, run once for the whole module."""
    return cache(small_point)


def load(means: Callable[[str, str, Any], Means], value: float) -> Means:
    return means("002-load", "workload.load", value)


def test_ranked_schemes_complete_more_jobs_than_rr_once_the_queue_is_full(means):
    # 002 Fig. 1: jobs/h at 160 Erlangs, rr 249 / 250, rrr 256 / 253, rrr-k 313 / 304
    full = load(means, FULL)
    assert full["rrr-k"]["throughput"] > 1.1 * full["rr"]["throughput"]
    assert full["rrr"]["throughput"] > full["rr"]["throughput"]
    assert full["rr"]["refusedRate"] > 0.3  # the threshold binds: the comparison means something


def test_rrr_k_pays_a_fraction_of_rrs_penalty(means):
    # 002 Fig. 2: 0.000 against 0.068 / 0.064 at 30 Erlangs; 0.010 / 0.011 against 0.161
    # at 160. RRR's penalty is close to RR's (below it at 30 Erlangs by 0.003, above it
    # at 160 by 0.001-0.003): not asserted
    for value in (TWICE, FULL):
        got = load(means, value)
        assert got["rrr-k"]["penaltyPerWork"] < got["rr"]["penaltyPerWork"] / 5, value


def test_elongation_is_lowest_with_replicas_and_highest_with_round_robin(means):
    # 002 Fig. 3: at 30 Erlangs 1.09 / 1.08 < 1.20 / 1.20 < 1.29 / 1.29; at 160
    # 1.14 / 1.14 < 1.41 / 1.41 < 1.44 / 1.44
    for value in (TWICE, FULL):
        e = {s: m["elongation"] for s, m in load(means, value).items()}
        assert e["rrr-k"] + 0.05 < e["rrr"] < e["rr"], value


def test_round_robin_migrates_most_when_the_jobs_are_twice_the_private_nodes(means):
    # 002 Fig. 4: RR's preemptive migrations per job 104 / 101 at 30 Erlangs (39 / 40
    # jobs in the system: twice the 20 private nodes), 62 / 61 at 160; RRR's 24 / 23
    # and 13 / 14
    twice, full = load(means, TWICE), load(means, FULL)
    assert 1.6 * PRIVATE < twice["rr"]["jobsInSystem"] < 2.4 * PRIVATE
    assert twice["rr"]["preemptiveMigrationsPerJob"] > 1.3 * full["rr"][
        "preemptiveMigrationsPerJob"]
    for got in (twice, full):
        assert got["rr"]["preemptiveMigrationsPerJob"] > 3 * max(
            got["rrr"]["preemptiveMigrationsPerJob"], got["rrr-k"]["preemptiveMigrationsPerJob"])


def test_replicas_fail_more_often_than_single_copies(means):
    # 002 Fig. 5, at 160 Erlangs: rr 20.2 / 20.0 < rrr 25.2 / 25.2 < rrr-k 38.8 / 39.4
    f = {s: m["failureMigrationsPerJob"] for s, m in load(means, FULL).items()}
    assert f["rr"] < f["rrr"] < f["rrr-k"] - 5


def elongation(means: Callable[[str, str, Any], Means], name: str, key: str,
               values: list[Any]) -> list[float]:
    return [means(name, key, v)["rrr-k"]["elongation"] for v in values]


def test_elongation_falls_with_the_private_nodes(means):
    # 002 Fig. 6, 40 Erlangs: 1.153 / 1.152 (5 nodes), 1.106 / 1.102 (20), 1.005 / 1.006
    # (60: every job fits on a private node)
    e = elongation(means, "002-private", "cluster.pools.private.nodes", [5, 20, 60])
    assert e[0] > e[1] + 0.02 > e[2] + 0.04 and e[2] < 1.01


def test_elongation_rises_super_linearly_with_the_failure_rate(means):
    # 002 Fig. 7, 40 Erlangs: 1.061 / 1.061 (0.1), 1.106 / 1.102 (0.3), 1.180 / 1.167
    # (0.5), 1.339 / 1.320 (0.8): slopes 0.22, 0.37, 0.53 per unit of hazard
    rates = [0.1, 0.3, 0.5, 0.8]
    e = elongation(means, "002-failure", "cluster.pools.public.volatile.failureRate", rates)
    slopes = [(e[i + 1] - e[i]) / (rates[i + 1] - rates[i]) for i in range(3)]
    assert 0 < slopes[0] < slopes[1] < slopes[2], slopes


def test_each_replica_shortens_jobs_less_than_the_one_before(means):
    # 002 Fig. 8, 40 Erlangs: 1.292 / 1.277 (k = 1), 1.106 / 1.102 (2), 1.064 / 1.062 (3)
    e = elongation(means, "002-replicas", "config.utility.replicas", [1, 2, 3])
    assert e[0] - e[1] > 2 * (e[1] - e[2]) > 0
