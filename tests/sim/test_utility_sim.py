"""The utility mode's simulator (leasehold_emulator.sim.utility): seeded draws from
the public pool's law, 002's metrics, per-job rows."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.api.scenario import load_scenario, validate_scenario
from leasehold.core.model import Volatility
from leasehold_emulator.sim.utility import PublicDraws, simulate_utility

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "002-utility.yaml"
METRICS = {"throughput", "penalty_per_work", "elongation", "preemptive_migrations_per_job",
           "failure_migrations_per_job", "completed", "refused"}


def scenario(leases: list[dict[str, Any]], *, private: int = 2, failure: float = 0.3,
             capacity: dict[str, float] | None = None, seed: int = 1,
             **utility: Any) -> Any:
    volatile: dict[str, Any] = {"failureRate": failure, "recoverySeconds": 120}
    if capacity:
        volatile["capacity"] = capacity
    return validate_scenario({
        "cluster": {"pools": [{"name": "dedicated", "nodes": private, "cpu": 1},
                              {"name": "public", "nodes": 1, "cpu": 1, "volatile": volatile}]},
        "config": {"seed": seed, "utility": {"scheme": "rrr-k", "private": "dedicated",
                                             "replicas": 2, **utility}},
        "leases": leases,
    })


def jobs(n: int, work: float = 100.0, gap: float = 10.0) -> list[dict[str, Any]]:
    return [{"name": f"j{i}", "type": "BestEffortSuspendable", "vms": 1, "cpu": 1,
             "arrival": i * gap, "duration": work} for i in range(n)]


def test_the_example_runs_with_every_metric():
    result = simulate_utility(load_scenario(EXAMPLE))
    assert set(result.metrics) >= METRICS
    assert result.metrics["completed"] + result.metrics["refused"] == len(result.jobs)
    assert result.metrics["completed"] > 0
    row = result.jobs[0]
    assert {"name", "phase", "arrival", "end", "work", "elongation", "preemptiveMigrations",
            "failureMigrations", "windows", "compliantWindows"} <= set(row)


def test_same_seed_same_result_other_seed_other_draws():
    runs = [simulate_utility(scenario(jobs(30), private=2, seed=s)) for s in (1, 1, 2)]
    assert runs[0].metrics == runs[1].metrics and runs[0].jobs == runs[1].jobs
    assert runs[0].jobs != runs[2].jobs


@pytest.mark.parametrize(("scheme", "migrations"), [
    pytest.param("rrr", 0.0, id="rrr-keeps-its-private-jobs"),
    pytest.param("rrr-k", 0.0, id="rrr-k"),
])
def test_enough_private_nodes_no_penalty_no_elongation(scheme, migrations):
    result = simulate_utility(scenario(jobs(3, work=95.0, gap=10.0), private=3,
                                       scheme=scheme))
    m = result.metrics
    assert m["completed"] == 3 and m["refused"] == 0
    assert m["penalty_per_work"] == 0.0
    assert m["elongation"] == pytest.approx(1.0)
    assert m["preemptive_migrations_per_job"] == migrations
    assert m["failure_migrations_per_job"] == 0.0


def test_a_public_pool_that_never_fails_and_delivers_all_is_as_good_as_private():
    """Only the migrations' downtime (1 s each) elongates: a free private node goes
    to the first job ranked, even one as satisfied on a public node (Algorithm 2)."""
    result = simulate_utility(scenario(jobs(4, work=50.0), private=1, failure=0.0,
                                       scheme="rrr"))
    m = result.metrics
    assert m["elongation"] == pytest.approx(1.0 + m["preemptive_migrations_per_job"] / 50.0)
    assert m["failure_migrations_per_job"] == 0.0


def test_threshold_refuses_the_rest():
    leases = [{**j, "arrival": 0} for j in jobs(5, work=1000.0)]
    result = simulate_utility(scenario(leases, threshold=3))
    assert result.metrics["refused"] == 2 and result.metrics["completed"] == 3
    assert [r["phase"] for r in result.jobs].count("Refused") == 2


def test_metrics_by_their_definitions():
    result = simulate_utility(scenario(jobs(20, work=100.0, gap=5.0), private=2))
    done = [r for r in result.jobs if r["phase"] == "Completed"]
    m = result.metrics
    assert m["elongation"] == pytest.approx(
        np.mean([(r["end"] - r["arrival"]) / r["work"] for r in done]))
    first = min(r["arrival"] for r in result.jobs)
    last = max(r["end"] for r in done)
    assert m["throughput"] == pytest.approx(len(done) / (last - first) * 3600)
    assert m["penalty_per_work"] == pytest.approx(
        sum(r["shortfall"] for r in done) / sum(r["work"] * r["share"] for r in done))
    assert m["preemptive_migrations_per_job"] == pytest.approx(
        np.mean([r["preemptiveMigrations"] for r in done]))
    assert m["failure_migrations_per_job"] == pytest.approx(
        np.mean([r["failureMigrations"] for r in done]))
    assert m["failure_migrations_per_job"] > 0  # hazard 0.3 per epoch: replicas do fail


def test_replicas_default_to_002s_formula_rounded_up():
    # mean up 10 / 0.3 s, recovery 120 s, alpha 0.95: k = 12.25, so 13
    result = simulate_utility(scenario(jobs(2), replicas=None))
    assert result.replicas == 13
    lam, mu = 0.3 / 10, 1 / 120
    assert result.replicas == math.ceil(math.log(0.05) / (math.log(lam) - math.log(lam + mu)))


@settings(max_examples=30, deadline=None)
@given(rate=st.sampled_from([0.0, 0.1, 0.3, 1.0]), mean=st.sampled_from([0.5, 0.8, 1.0]),
       sigma=st.sampled_from([0.0, 0.2]), lo=st.sampled_from([0.0, 0.3]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_draws_follow_the_law(rate, mean, sigma, lo, seed):
    law = Volatility(failure_rate=rate, recovery=120.0, capacity_mean=mean,
                     capacity_sigma=sigma, capacity_min=lo, capacity_max=1.0)
    draws = PublicDraws(law, seed)
    nodes = [f"n{i}" for i in range(4000)]
    fates = draws(nodes)
    shares = np.array([f.share for f in fates.values()])
    assert ((shares >= lo) & (shares <= 1.0)).all()
    failed = np.array([f.fails_at is not None for f in fates.values()])
    # hazard `rate` per epoch: a node fails within one epoch with 1 - e^-rate
    p = 1 - math.exp(-rate)
    assert abs(failed.mean() - p) <= 4 * math.sqrt(p * (1 - p) / len(nodes)) + 1e-12
    at = np.array([f.fails_at for f in fates.values() if f.fails_at is not None])
    assert ((at >= 0) & (at < 1)).all()
    if sigma == 0:
        assert (shares == max(lo, mean)).all()
    assert PublicDraws(law, seed)(nodes) == fates


def leasehold(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leasehold.cli", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_simulate_runs_the_utility_mode_as_json_and_as_a_table():
    r = leasehold("simulate", str(EXAMPLE), "-o", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["mode"] == "utility"
    assert set(doc["metrics"]) >= METRICS
    assert doc["metrics"] == pytest.approx(simulate_utility(load_scenario(EXAMPLE)).metrics,
                                           abs=1e-6)
    assert [j["name"] for j in doc["leases"]] == [f"j{i:02d}" for i in range(24)]
    t = leasehold("simulate", str(EXAMPLE), "-o", "table")
    assert t.returncode == 0, t.stderr
    assert "throughput" in t.stdout and "elongation" in t.stdout and "j23" in t.stdout


def test_simulate_says_a_bad_utility_block_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("private: dedicated", "private: nowhere"))
    r = leasehold("simulate", str(bad))
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f'error: {bad}: config.utility: private: unknown pool "nowhere"; expected one of'
        " dedicated, public (line 31)"]


def test_simulate_says_the_flags_it_does_not_read_in_the_utility_mode():
    r = leasehold("simulate", str(EXAMPLE), "--backfilling", "easy")
    assert r.returncode == 0
    assert r.stderr == ("warning: --backfilling is not read in the utility mode"
                        " (config.utility)\n")


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2 ** 31), n=st.integers(1, 12),
       scheme=st.sampled_from(["rr", "rrr", "rrr-k"]), private=st.integers(1, 3),
       gap=st.sampled_from([0.0, 3.0, 10.0]))
def test_determinism_same_seed_same_result(seed, n, scheme, private, gap):
    sc = scenario(jobs(n, work=60.0, gap=gap), private=private, seed=seed, scheme=scheme,
                  capacity={"mean": 0.8, "sigma": 0.3, "min": 0.1})
    first, again = simulate_utility(sc), simulate_utility(sc)
    assert first.metrics == again.metrics and first.jobs == again.jobs
    assert first.metrics["completed"] + first.metrics["refused"] == n
