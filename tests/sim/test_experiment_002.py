"""Experiments of seed 002's kind (examples/experiments/002-*.yaml): a poisson workload
(002 §V-A), grid keys into a pool (cluster.pools.<pool>.<field>) and into a block of
the configuration (config.<block>.<field>)."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pytest

from leasehold.core.model import LeaseType
from leasehold_emulator.sim.erlang import loss_throughput
from leasehold_emulator.sim.experiment import (
    ExperimentError,
    Unit,
    at_point,
    columns,
    read_results,
    run,
    run_unit,
    validate_experiment,
    workload,
)
from leasehold_emulator.sim.experiment_report import axis_label, metric_figure, write_report
from leasehold_emulator.sim.utility_metrics import METRICS_002


def experiment(**changes: Any) -> dict[str, Any]:
    """A small poisson experiment run by the lease scheduler, ``changes`` applied to
    its top level (a section replaced whole)."""
    base: dict[str, Any] = {
        "name": "p",
        "workload": {"model": "poisson", "load": 20, "mean_work": 100, "span": 2000},
        "cluster": {"pools": [{"name": "private", "nodes": 4, "cpu": 2, "exclusive": True},
                              {"name": "public", "nodes": 8, "exclusive": True}]},
        "policies": ["nop"],
        "replications": 2,
    }
    return {**base, **changes}


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ExperimentError) as caught:
        validate_experiment(data, "e.yaml")
    return caught.value.problems


def test_a_poisson_workload_is_one_vm_leases_at_the_load():
    spec = validate_experiment(experiment(
        workload={"model": "poisson", "load": 20, "mean_work": 100, "span": 2000,
                  "bandwidth": [0.5, 1.0]}))
    reqs = workload(spec, 1)
    assert len(reqs) == pytest.approx(20 / 100 * 2000, rel=0.2)  # 400 expected
    assert all(r.vms == 1 and r.type == LeaseType.BEST_EFFORT_SUSPENDABLE for r in reqs)
    # B_j as a share of the first pool's node (2 cores: 2000 millicores)
    assert 1000 <= min(r.shape.cpu for r in reqs) < max(r.shape.cpu for r in reqs) <= 2000
    assert workload(spec, 1) == reqs and workload(spec, 2) != reqs


@pytest.mark.parametrize(("workload_", "expected"), [
    pytest.param({"model": "poisson", "span": 100}, "e.yaml: workload.load: required for model"
                 " poisson: the offered load in Erlangs (arrival rate × mean work)", id="no load"),
    pytest.param({"model": "poisson", "load": 5}, "e.yaml: workload.span: required for model"
                 " poisson: how long jobs arrive (e.g. 3h)", id="no span"),
    pytest.param({"model": "poisson", "load": 5, "span": 9, "jobs": 10}, "e.yaml: workload.jobs:"
                 " not for model poisson (its load and span set the jobs)", id="jobs"),
    pytest.param({"model": "poisson", "load": 5, "span": 9, "bandwidth": [0.9, 0.2]},
                 "e.yaml: workload.bandwidth: must be [low, high] with 0 < low <= high <= 1"
                 " (shares of a node), got [0.9, 0.2]", id="bandwidth reversed"),
    pytest.param({"model": "das2", "load": 5}, "e.yaml: workload.load: only for model"
                 " poisson, not das2", id="load elsewhere"),
    pytest.param({"model": "das2", "span": 50}, "e.yaml: workload.span: only for streams and"
                 " model poisson", id="span elsewhere"),
])
def test_a_bad_poisson_workload_is_one_line(workload_, expected):
    assert problems(experiment(workload=workload_)) == [expected]


def test_a_grid_reaches_into_a_pool_by_its_name():
    spec = validate_experiment(experiment(grid={"cluster.pools.private.nodes": [2, 6]}))
    cells = [at_point(spec, p) for p in spec.points()]
    assert [c.cluster.pools[0].nodes for c in cells] == [2, 6]
    assert all(c.cluster.pools[1].nodes == 8 for c in cells)


def test_a_grid_reaches_into_a_block_of_a_pool():
    volatile = {"failureRate": 0.3, "recoverySeconds": 120}
    data = experiment(grid={"cluster.pools.public.volatile.failureRate": [0.1, 0.5]})
    data["cluster"]["pools"][1]["volatile"] = volatile
    spec = validate_experiment(data)
    rates = [at_point(spec, p).cluster.pools[1].volatile.failure_rate  # type: ignore[union-attr]
             for p in spec.points()]
    assert rates == [0.1, 0.5]


@pytest.mark.parametrize(("key", "values", "expected"), [
    pytest.param("cluster.pools.spot.nodes", [1], "e.yaml: grid.cluster.pools.spot.nodes: selects"
                 " no pool; expected cluster.pools.<pool>.<field> with a pool of private, public",
                 id="unknown pool"),
    pytest.param("cluster.nodes", [1], "e.yaml: grid.cluster.nodes: not a parameter of the"
                 " cluster; expected cluster.pools.<pool>.<field> (e.g."
                 " cluster.pools.private.nodes)", id="not a pool"),
    pytest.param("cluster.pools.private.nodes", [0], "e.yaml: grid.cluster.pools.private.nodes:"
                 " value 0 is not valid there (must be >= 1, got 0)", id="bad value"),
    pytest.param("cluster.pools.private.volatile.failureRate", [0.2], "e.yaml:"
                 " grid.cluster.pools.private.volatile.failureRate: value 0.2 is not valid there"
                 " (required field is missing)", id="half a block"),
])
def test_a_bad_pool_grid_key_is_one_line(key, values, expected):
    assert problems(experiment(grid={key: values})) == [expected]


@pytest.mark.parametrize(("key", "words"), [
    pytest.param("workload.load", "offered load (Erlangs)", id="load"),
    pytest.param("cluster.pools.private.nodes", "private pool's nodes", id="pool nodes"),
    pytest.param("cluster.pools.public.volatile.failureRate",
                 "public pool's failure hazard per epoch", id="failure rate"),
])
def test_a_002_axis_is_named_for_readers(key, words):
    assert axis_label(key) == words


# ---- the utility mode (config.utility; schemes) --------------------------------------
def utility_experiment(**changes: Any) -> dict[str, Any]:
    """A small experiment of 002's utility mode: 10 private nodes, a public pool,
    jobs of 100 s on a dedicated node (10 epochs), ``changes`` at the top level."""
    base: dict[str, Any] = {
        "name": "u",
        "workload": {"model": "poisson", "load": 20, "mean_work": 100, "work": "uniform",
                     "span": 1500, "warmup": 300},
        "cluster": {"pools": [
            {"name": "private", "nodes": 10, "exclusive": True},
            {"name": "public", "nodes": 200, "exclusive": True,
             "volatile": {"failureRate": 0.3, "recoverySeconds": 120,
                          "capacity": {"mean": 1.0, "sigma": 0.25}}}]},
        "config": {"utility": {"threshold": 50, "replicas": 2, "private": "private"}},
        "schemes": ["rr", "rrr", "rrr-k"],
        "grid": {"workload.load": [5, 20, 40]},
        "replications": 2,
        "baseline": "rr",
    }
    return {**base, **changes}


def test_a_utility_experiments_runs_are_its_schemes():
    spec = validate_experiment(utility_experiment())
    assert [a.label for a in spec.arms()] == ["rr", "rrr", "rrr-k"]
    assert columns(spec) == ["point", "seed", "arm", "policy", "dispatch", *METRICS_002]
    one = validate_experiment(utility_experiment(schemes=None, baseline=None))
    assert [a.label for a in one.arms()] == ["rrr-k"]  # config.utility.scheme's default


def test_a_unit_runs_every_scheme_on_the_same_jobs():
    spec = validate_experiment(utility_experiment())
    rows = run_unit(spec, Unit({"workload.load": 20}, 1))
    assert [r["arm"] for r in rows] == ["rr", "rrr", "rrr-k"]
    # the same cohort of jobs: as many measured (completed or refused) under each
    assert len({r["completed"] + r["refused"] for r in rows}) == 1
    for r in rows:
        assert r["throughput"] > 0 and r["elongation"] >= 1 and 0 <= r["refusedRate"] <= 1
    assert run_unit(spec, Unit({"workload.load": 20}, 1)) == rows  # seeded


@pytest.mark.parametrize(("changes", "expected"), [
    pytest.param({"config": {}}, ["e.yaml: schemes: the utility mode's schemes need a"
                                  " config.utility block (its private pool, window, threshold,"
                                  " ...: docs/volatile.md)"], id="no utility block"),
    pytest.param({"policies": ["moml"]}, ["e.yaml: policies: not in the utility mode (its"
                                          " schemes are compared); leave policies out"],
                 id="policies too"),
    pytest.param({"schemes": ["rr", "fifo"]}, None, id="unknown scheme"),
    pytest.param({"schemes": None, "baseline": None,
                  "config": {"utility": {"private": "public"}}}, None,
                 id="private pool that fails"),
    pytest.param({"schemes": ["rr"], "baseline": "rrr"}, ["e.yaml: baseline: 'rrr' is not one"
                                                          " of the schemes"], id="baseline"),
])
def test_a_bad_utility_experiment_is_one_line_each(changes, expected):
    got = problems(utility_experiment(**changes))
    if expected is not None:
        assert got == expected
    else:  # as a scenario's check words it: one line, naming the field
        assert len(got) == 1 and "Traceback" not in got[0], got
        assert got[0].startswith("e.yaml: "), got


def test_a_utility_experiment_needs_a_poisson_workload():
    got = problems(utility_experiment(workload={"model": "das2", "jobs": 10}))
    assert got == ["e.yaml: workload.model: the utility mode runs jobs of one VM: model"
                   " poisson (002 §V-A), not das2"]


def test_the_report_draws_002s_figures_with_the_loss_baselines(tmp_path):
    spec = validate_experiment(utility_experiment())
    run(spec, tmp_path, processes=1)
    files = write_report(spec, tmp_path)
    names = {f.name for f in files}
    assert {"throughput.png", "elongation.png", "penaltyPerWork.png",
            "preemptiveMigrationsPerJob.png", "failureMigrationsPerJob.png",
            "migrations-by-jobs.png", "report.md"} <= names
    assert "gantt.png" not in names  # the lease scheduler's chart: not this mode's
    report = (tmp_path / "report.md").read_text()
    assert "schemes rr, rrr, rrr-k" in report
    assert "## throughput of the loss baselines (M/M/m/m, Erlang B; jobs/h)" in report
    assert "## throughput (002 Fig. 1) (jobs/h): mean ± 95% CI" in report
    fig = metric_figure(spec, read_results(tmp_path), "throughput")
    try:
        dashed = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].get_lines()
                  if line.get_linestyle() == "--"}
    finally:
        plt.close(fig)
    assert dashed == {
        "M/M/10/10: 10 dedicated nodes (002's baseline)":
            [pytest.approx(loss_throughput(10, a, 100)) for a in (5, 20, 40)],
        "M/M/50/50: 50 dedicated nodes (threshold's worth)":
            [pytest.approx(loss_throughput(50, a, 100)) for a in (5, 20, 40)]}


def test_the_utility_blocks_axes_are_named_for_readers():
    assert axis_label("config.utility.replicas") == "replicas per public job (RRR-k's k)"
