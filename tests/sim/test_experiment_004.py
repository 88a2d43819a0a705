"""004's experiments: SDSC Blue with injected reservations, the injection file a grid
axis, the six configurations of 004 §4.4 mapped onto issue 22's fields, 004's metrics
and its Table 1 / Fig. 2 report (examples/experiments/004-*.yaml)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.core.model import LeaseType
from leasehold_emulator.sim import configurations as conf
from leasehold_emulator.sim import report004
from leasehold_emulator.sim.engine import simulate
from leasehold_emulator.sim.experiment import (
    METRICS_004,
    ExperimentError,
    Unit,
    _with,
    arm_inputs,
    columns,
    read_results,
    run,
    validate_experiment,
    workload,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples/experiments"
TABLE_1 = ["work_10-dur_3h-size_2medium.lwf", "work_20-dur_3h-size_2medium.lwf",
           "work_30-dur_3h-size_2medium.lwf"]


def base(shared: Path, **changes: Any) -> dict[str, Any]:
    """A 004 experiment over the shared data, with ``changes`` at the top level."""
    data: dict[str, Any] = {
        "name": "t004",
        "workload": {"model": "swf", "path": str(shared / "SDSC-BLUE-haizea-30days.swf.gz"),
                     "injections": str(shared / "haizea-injected-leases-30days.tar.gz")},
        "injections": ["none", TABLE_1[0]],
        "configurations": list(conf.CONFIGURATIONS),
        "cluster": {"pools": [{"name": "blue", "nodes": 144, "exclusive": True,
                               "overhead": {"suspendRate": 50, "resumeRate": 50,
                                            "model": "haizea"}}]},
        "config": {"backfilling": "easy"},
        "policies": ["moml"],
        "replications": 1,
    }
    data.update(changes)
    return data


@pytest.fixture(scope="module")
def spec(shared_data: Path):
    return validate_experiment(base(shared_data))


def cell_inputs(spec, point: int, configuration: str, seed: int = 1):
    cell = _with(spec, spec.points()[point])
    arm = next(a for a in spec.arms() if a.configuration == configuration)
    return arm_inputs(cell, arm, workload(cell, seed), seed)


# ---- the workload --------------------------------------------------------------------
def test_the_30_days_give_5108_jobs_and_the_injection_its_reservations(spec):
    """shared/data/README.md: 5,545 records, 437 cancelled while queued dropped."""
    alone = workload(_with(spec, spec.points()[0]), 1)
    assert len(alone) == 5108
    assert all(r.type == LeaseType.BEST_EFFORT_SUSPENDABLE for r in alone)
    assert sum(r.runtime is not None and r.runtime < r.duration for r in alone) > 2500
    injected = workload(_with(spec, spec.points()[1]), 1)
    ars = [r for r in injected if r.type == LeaseType.ADVANCE_RESERVATION]
    assert (len(injected), len(ars)) == (5108 + 94, 94)
    submitted = [r.submitted for r in injected]
    assert submitted == sorted(submitted)


def test_inject_as_best_effort_makes_every_injected_lease_best_effort(shared_data):
    data = base(shared_data, injections=[TABLE_1[0]])
    data["workload"]["inject_as"] = "best-effort"
    spec = validate_experiment(data)
    reqs = workload(_with(spec, spec.points()[0]), 1)
    assert len(reqs) == 5108 + 94
    assert all(r.type == LeaseType.BEST_EFFORT_SUSPENDABLE and r.start is None for r in reqs)


def test_injections_are_the_last_grid_axis_globs_expanded(shared_data):
    data = base(shared_data, injections=["none", "work_*-dur_3h-size_2medium.lwf"],
                grid={"config.backfilling": ["easy", "conservative"]})
    spec = validate_experiment(data)
    points = spec.points()
    assert len(points) == 2 * 7
    assert points[0] == {"config.backfilling": "easy", "workload.inject": "none"}
    assert [p["workload.inject"] for p in points[1:7]] == [
        f"work_{r:02d}-dur_3h-size_2medium.lwf" for r in (5, 10, 15, 20, 25, 30)]


# ---- the configurations -------------------------------------------------------------
#: configuration -> (suspension, suspend before blocking, vm?, images as
#: (reuse, predeployed_all) or None, the assignment)
EXPECTED = {
    "NOVM-NOSR": ("none", False, False, None, "none"),
    "NOVM-SR": ("all", True, False, None, "none"),
    "VM-PREDEPLOY": ("all", True, True, (True, True), "single"),
    "VM-MULT": ("all", True, True, (False, False), "uniform"),
    "VM-REUSE-UNIFORM": ("all", True, True, (True, False), "uniform"),
    "VM-REUSE-SKEWED": ("all", True, True, (True, False), "skewed"),
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_configuration_maps_onto_issue_22s_fields(spec, name):
    suspension, before, vm, images, assignment = EXPECTED[name]
    config, pools, reqs = cell_inputs(spec, 1, name)
    assert (config.suspension, config.suspend_before_blocking) == (suspension, before)
    assert config.policy == "moml" and config.backfilling.value == "easy"
    (pool,) = pools
    assert pool.overhead.suspend_rate == pool.overhead.resume_rate == 50
    if vm:
        assert pool.vm is not None
        assert (pool.vm.slowdown, pool.vm.boot + pool.vm.shutdown) == (0.05, 20)
    else:
        assert pool.vm is None
    if images is None:
        assert pool.images is None
        assert all(r.image is None and r.image_mb == 0 for r in reqs)
    else:
        assert pool.images is not None
        assert (pool.images.bandwidth, pool.images.disk, pool.images.cache_mb) == (
            10, 40 * 1024, 20 * 1024)
        assert (pool.images.reuse, pool.images.predeployed_all) == images
        assert all(r.image is not None and r.image_mb == 4096 for r in reqs)
    drawn = Counter(r.image for r in reqs)
    if assignment == "single":
        assert set(drawn) == {conf.SINGLE}
    elif assignment == "uniform":
        assert len(drawn) == 37 and max(drawn.values()) < 2.5 * min(drawn.values())
    elif assignment == "skewed":
        heavy = sum(drawn[f"img-{i:02d}"] for i in range(7)) / len(reqs)
        assert len(drawn) == 37 and 0.65 < heavy < 0.75  # 7 x 10%


def test_vm_mult_and_reuse_uniform_draw_the_same_list_and_seeds_differ(spec):
    """004: VM-MULT uses "the uniform list of requests", as VM-REUSE-UNIFORM does."""
    images = {name: [r.image for r in cell_inputs(spec, 1, name)[2]]
              for name in ("VM-MULT", "VM-REUSE-UNIFORM")}
    assert images["VM-MULT"] == images["VM-REUSE-UNIFORM"]
    other_seed = [r.image for r in cell_inputs(spec, 1, "VM-MULT", seed=2)[2]]
    assert other_seed != images["VM-MULT"]


def test_configurations_are_arms_labelled_by_name_or_policy_and_name(shared_data):
    one = validate_experiment(base(shared_data, configurations=["NOVM-NOSR", "NOVM-SR"]))
    assert [a.label for a in one.arms()] == ["NOVM-NOSR", "NOVM-SR"]
    two = validate_experiment(base(shared_data, configurations=["NOVM-SR"],
                                   policies=["moml", "haizea"]))
    assert [(a.label, a.policy, a.configuration) for a in two.arms()] == [
        ("moml/NOVM-SR", "moml", "NOVM-SR"), ("haizea/NOVM-SR", "haizea", "NOVM-SR")]


# ---- validation ---------------------------------------------------------------------
def _bad(shared: Path, change: str) -> dict[str, Any]:
    data = base(shared)
    if change == "unknown-configuration":
        data["configurations"] = ["NOVM-SR", "VM-FAST"]
    elif change == "suspension-set":
        data["config"] = {"backfilling": "easy", "suspension": "none"}
    elif change == "pool-vm-set":
        data["cluster"]["pools"][0]["vm"] = {"slowdown": 0.05}
    elif change == "no-source":
        del data["workload"]["injections"]
    elif change == "glob-matches-nothing":
        data["injections"] = ["work_99-*.lwf"]
    elif change == "mix-given":
        data["mix"] = {"local": 0.5}
    elif change == "unknown-inject":
        del data["injections"]
        data["workload"]["inject"] = "work_11.lwf"
    elif change == "not-swf":
        data["workload"]["model"] = "lublin99"
    return data


@pytest.mark.parametrize(("change", "message"), [
    ("unknown-configuration", "configurations: unknown configuration 'VM-FAST'; expected"
                              " some of NOVM-NOSR, NOVM-SR, VM-PREDEPLOY"),
    ("suspension-set", "config.suspension: each configuration sets it (004 §4.4)"),
    ("pool-vm-set", "cluster.pools[0].vm: each configuration sets it (004 §4.4)"),
    ("no-source", "workload.injections: required to inject reservations"),
    ("glob-matches-nothing", "injections: 'work_99-*.lwf' matches no injection file"),
    ("mix-given", "mix: the trace's jobs are best-effort leases"),
    ("unknown-inject", "workload.inject: 'work_11.lwf' is no injection file of"),
    ("not-swf", "workload.injections: only for model swf, not lublin99"),
], ids=lambda x: x if " " not in x else "problem")
def test_a_bad_004_experiment_is_refused_with_one_line_each(shared_data, change, message):
    with pytest.raises(ExperimentError) as err:
        validate_experiment(_bad(shared_data, change), "x.yaml")
    assert any(p.startswith("x.yaml: ") and message in p for p in err.value.problems), (
        err.value.problems)


# ---- running and reporting ----------------------------------------------------------
def test_a_small_004_run_writes_its_metrics_and_table_1_beside_the_paper(shared_data,
                                                                         tmp_path):
    data = base(shared_data, injections=["none", TABLE_1[2]],
                configurations=["NOVM-NOSR", "NOVM-SR"])
    data["workload"]["jobs"] = 400  # the first five days' jobs: seconds, not minutes
    spec = validate_experiment(data)
    assert set(METRICS_004) <= set(columns(spec))
    assert run(spec, tmp_path, processes=1) == 2
    rows = read_results(tmp_path)
    assert len(rows) == 4 and all(r["reservationsRejected"] == 0 for r in rows)
    for r in rows:
        assert r["allBestEffortChange"] == pytest.approx(
            r["allBestEffortSeconds"] / 2_674_265 - 1)
    files = report004.write_report(spec, tmp_path)
    text = (tmp_path / "report.md").read_text()
    assert files == [tmp_path / "report.md"]  # one ρ: no Fig. 2
    assert "| workload | NOVM-NOSR | NOVM-SR |" in text
    table = [line for line in text.splitlines() if line.startswith("| [30%/3H/medium] |")]
    assert len(table) == 3 + 1  # Table 1's three metrics, then rejections / suspensions
    assert "(+23.93%) |" in table[0] and table[0].endswith(" (+4.14%) |")
    assert "(68.95) |" in table[1] and "(134.91) |" in table[2]


def test_fig_2_has_a_panel_per_size_and_configuration(shared_data, tmp_path):
    data = base(shared_data, injections=["work_*-dur_1h-size_*.lwf"],
                configurations=["NOVM-NOSR", "NOVM-SR"])
    spec = validate_experiment(data)
    rows = [{"point": json.dumps(p, sort_keys=True), "seed": 1, "arm": a.label,
             "allBestEffortChange": 0.01 * i}
            for i, p in enumerate(spec.points()) for a in spec.arms()]
    fig = report004.fig_2(spec, rows)
    try:
        assert len(fig.axes) == 2 * 3
        assert [ax.get_title() for ax in fig.axes[:3]] == ["small", "medium", "large"]
        assert all(len(ax.get_lines()) == 1 + 3 for ax in fig.axes)  # δ = 1H; 3 rules
    finally:
        report004.plt.close(fig)


def test_fig_2s_claims_are_checked_per_run(shared_data):
    spec = validate_experiment(base(shared_data, injections=["work_*-dur_4h-size_1small.lwf"],
                                    configurations=["NOVM-NOSR", "NOVM-SR"]))
    change = {"NOVM-NOSR": [0.02, 0.05, 0.04, 0.10, 0.20, 0.35],
              "NOVM-SR": [0.01, 0.06, 0.00, 0.02, 0.03, -0.01]}  # later at ρ = 10%
    rows = [{"point": json.dumps(p, sort_keys=True), "seed": 1, "arm": arm,
             "allBestEffortChange": values[i]}
            for arm, values in change.items() for i, p in enumerate(spec.points())]
    lines = report004.fig_2_lines(spec, rows)
    assert "| NOVM-NOSR | +35.00% | [30%/4H/small] | +2.00% | — |" in lines
    assert "| NOVM-SR | +6.00% | [10%/4H/small] | -1.00% | 5 of 6 |" in lines


@pytest.mark.parametrize("name", ["004-table1", "004-fig2"])
def test_the_example_files_are_valid_and_cover_004(name, monkeypatch):
    monkeypatch.chdir(EXAMPLES.parents[1])  # their paths are relative to the repository
    data = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text())
    spec = validate_experiment(copy.deepcopy(data), name)
    assert spec.configurations == list(conf.CONFIGURATIONS)
    assert len(spec.points()) == {"004-table1": 4, "004-fig2": 72}[name]
    assert spec.cluster.pools[0].nodes == 144 and spec.config.backfilling.value == "easy"


# ---- the direction 004 reports ------------------------------------------------------
def test_suspension_shortens_all_best_effort_at_every_rho_of_table_1(shared_data, tmp_path):
    """004 Table 1 and Fig. 2: NOVM-SR completes the best-effort work no later than
    NOVM-NOSR at [10, 20, 30%/3H/medium] (the whole trace: about 10 CPU s), NOVM-NOSR
    being ``suspension: none`` (cancel-and-requeue) with suspend-before-blocking off."""
    spec = validate_experiment(base(shared_data, injections=TABLE_1,
                                    configurations=["NOVM-NOSR", "NOVM-SR"]))
    run(spec, tmp_path, processes=1)
    by = {(json.loads(r["point"])["workload.inject"], r["arm"]): r["allBestEffortSeconds"]
          for r in read_results(tmp_path)}
    for name in TABLE_1:
        assert by[(name, "NOVM-SR")] <= by[(name, "NOVM-NOSR")], name


def test_units_of_a_004_experiment_resume(shared_data, tmp_path):
    data = base(shared_data, injections=["none"], configurations=["NOVM-SR"])
    data["workload"]["jobs"] = 200
    spec = validate_experiment(data)
    assert run(spec, tmp_path, processes=1) == 1
    assert run(spec, tmp_path, processes=1) == 0
    assert Unit(spec.points()[0], 1).key == '{"workload.inject": "none"}'


def test_the_cli_writes_the_004_report(shared_data, tmp_path):
    data = base(shared_data, injections=["none"], configurations=["NOVM-SR"])
    data["workload"]["jobs"] = 200
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "leasehold.cli", "experiment", "run",
                           str(path), "--processes", "1", "--quiet"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "results-t004"
    assert done.stdout.endswith(f"report: {out / 'report.md'}\n")
    assert "## Table 1" in (out / "report.md").read_text()


def test_reuse_sends_less_over_the_link_than_multicast_alone(spec):
    """Issue 22's direction: on [10%/3H/medium] over the first 1,500 jobs, the image
    link carries less under VM-REUSE-UNIFORM than under VM-MULT (the same images drawn
    for the same leases; a transfer that several leases share counted once)."""
    link: dict[str, float] = {}
    for name in ("VM-MULT", "VM-REUSE-UNIFORM"):
        config, pools, reqs = cell_inputs(spec, 1, name)
        reqs = sorted(reqs, key=lambda r: r.submitted)[:1500]
        sched = simulate(pools, config, reqs, keep_actions=False).scheduler
        sent = {id(t): t.end - t.start for r in reqs for _, t in sched.transfers(r.name)}
        link[name] = sum(sent.values())
        assert sched.usage_violations() == []
    assert 0 < link["VM-REUSE-UNIFORM"] < link["VM-MULT"], link


def test_vm_mult_runs_leases_in_holes_before_reservations(spec):
    """004 §3.2: a lease goes at the later of its image's arrival and its nodes' being
    free, and may be suspended before a blocking reservation. Under VM-MULT every
    lease waits for its image, so its holes begin at its transfer's end: on
    [10%/3H/medium]'s first 1,500 jobs VM-MULT suspends leases as VM-PREDEPLOY does
    (before the fix it suspended none, and ran like a configuration without
    suspension, plus the transfers)."""
    suspended: dict[str, int] = {}
    for name in ("VM-MULT", "VM-PREDEPLOY"):
        config, pools, reqs = cell_inputs(spec, 1, name)
        reqs = sorted(reqs, key=lambda r: r.submitted)[:1500]
        sched = simulate(pools, config, reqs, keep_actions=False).scheduler
        assert sched.usage_violations() == []
        suspended[name] = sum(v.suspensions > 0 for v in sched.leases())
    assert suspended["VM-MULT"] >= suspended["VM-PREDEPLOY"] // 2 > 0, suspended
