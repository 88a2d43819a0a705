"""Experiments of several request streams over several pools, with dispatch strategies
as an axis (seed 003; issue 21 item 6): expansion, validation, per-pool results and
the two-way ANOVA in the report."""

from __future__ import annotations

import csv
import json
from copy import deepcopy
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.api.scenario import ConfigSpec, PoolSpecModel
from leasehold.core.model import LeaseType, Origin, Request, Shape
from leasehold.core.overhead import migrate_seconds, resume_seconds, suspend_seconds
from leasehold_emulator.sim.experiment import (
    METRICS,
    RESULTS,
    ExperimentError,
    columns,
    run,
    validate_experiment,
    workload,
)
from leasehold_emulator.sim.experiment_report import axis_label, tables, write_report
from leasehold_emulator.sim.metrics import POOL_METRICS

#: 003 Table 2's Grid row, sizes capped at 8 VMs for small pools
GRID_ROW = {"p_one": 0.2, "p_pow2": 0.5, "low": 0.8, "high": 3, "q": 0.9, "shape": 0.5}
TINY: dict[str, Any] = {
    "name": "streams",
    "workload": {"span": "2h", "streams": [
        {"name": "a", "preset": "c64", "origin": "local", "pool": "a", "rate": 0.01,
         "params": {"med": 2, "high": 3}},
        {"name": "b", "preset": "c64", "origin": "local", "pool": "b", "rate": 0.01,
         "params": {"med": 2, "high": 3}},
        {"name": "external", "origin": "external", "rate": 0.02, "mean_vms": 2,
         "mean_duration": 300, "params": GRID_ROW},
    ]},
    "cluster": {"pools": [{"name": "a", "nodes": 8, "exclusive": True},
                          {"name": "b", "nodes": 16, "exclusive": True}]},
    "policies": ["nop", "moml"],
    "dispatches": ["earliest"],
    "grid": {"streams.external.rate": [0.01, 0.03]},
    "replications": 2,
}


def with_(**changes: Any) -> dict[str, Any]:
    data = deepcopy(TINY)
    data.update(changes)
    return data


def test_a_run_has_a_row_per_arm_and_columns_per_pool(tmp_path):
    spec = validate_experiment(TINY)
    assert run(spec, tmp_path, processes=1) == 4  # 2 grid points × 2 seeds
    with (tmp_path / RESULTS).open(newline="") as fh:
        reader = csv.DictReader(fh)
        got = list(reader)
        assert reader.fieldnames == columns(spec)
    assert {(r["arm"], r["policy"], r["dispatch"]) for r in got} == {
        ("nop/earliest", "nop", "earliest"), ("moml/earliest", "moml", "earliest")}
    assert len(got) == 8
    assert {f"{m}@{p}" for p in ("a", "b") for m in POOL_METRICS} <= set(got[0])
    assert all(r["preemptedVMs"] == "0" for r in got if r["policy"] == "nop")
    write_report(spec, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "3 request streams (a, b, external) over 2 h" in report
    assert "## preempted VMs: two-way ANOVA, runs × grid points" in report
    assert "| runs | 1 |" in report and "| grid point | 1 |" in report
    assert "| runs × grid point | 1 |" in report and "| residual | 4 |" in report
    assert "## preempted VMs per pool: mean ± 95% CI" in report
    assert "| streams.external.rate = 0.01 | b |" in report
    assert "takes the seeds as independent replicates" in report


def test_a_one_pool_experiment_keeps_its_columns():
    one = validate_experiment({
        "name": "one", "workload": {"model": "das2", "jobs": 50},
        "cluster": {"pools": [{"name": "rp", "nodes": 32, "exclusive": True}]},
        "policies": ["nop"]})
    assert columns(one) == ["point", "seed", "arm", "policy", "dispatch", *METRICS]


@pytest.mark.parametrize(("policies", "dispatches", "labels"), [
    pytest.param(["nop", "moml"], None, ["nop", "moml"], id="policies only"),
    pytest.param(["moml"], ["rr", "lrf", "bcf", "pap-rnd", "pap-rtdp"],
                 ["rr", "lrf", "bcf", "pap-rnd", "pap-rtdp"], id="one policy: strategies"),
    pytest.param(["nop", "moml"], ["rr", "earliest"],
                 ["nop/rr", "nop/earliest", "moml/rr", "moml/earliest"], id="both"),
])
def test_arms_are_policies_times_dispatch_strategies(policies, dispatches, labels):
    spec = validate_experiment(with_(policies=["moml"], dispatches=["earliest"]))
    # the strategies of issue 21 are not all known yet: the expansion alone, unvalidated
    spec = spec.model_copy(update={"policies": policies, "dispatches": dispatches})
    arms = spec.arms()
    assert [a.label for a in arms] == labels
    assert [(a.policy, a.dispatch) for a in arms] == [
        (p, d) for p in policies for d in (dispatches or [None])]


def test_one_policy_under_the_default_strategy_is_labelled_by_the_strategy(tmp_path):
    spec = validate_experiment(with_(policies=["moml"], baseline="earliest",
                                     grid={}, replications=1))
    assert [a.label for a in spec.arms()] == ["earliest"]
    run(spec, tmp_path, processes=1)
    with (tmp_path / RESULTS).open(newline="") as fh:
        assert [r["arm"] for r in csv.DictReader(fh)] == ["earliest"]


def test_a_grid_selector_sets_every_stream_it_names():
    spec = validate_experiment(with_(grid={"streams.local.rate": [0.005, 0.02]}))
    low, high = (workload(_cell(spec, p), 1) for p in spec.points())
    # each local stream four times as fast; the external one untouched
    for stream in ("a", "b"):
        n_low = sum(r.name.startswith(f"{stream}-") for r in low)
        n_high = sum(r.name.startswith(f"{stream}-") for r in high)
        assert n_high > 2 * n_low, (stream, n_low, n_high)
    assert [r for r in low if r.origin == Origin.EXTERNAL] == [
        r for r in high if r.origin == Origin.EXTERNAL]


def _cell(spec, point):
    from leasehold_emulator.sim.experiment import _with

    return _with(spec, point)


def test_streams_name_their_pools_and_seeds_repeat():
    spec = validate_experiment(TINY)
    reqs = workload(_cell(spec, spec.points()[0]), 3)
    assert {(r.origin, r.pool) for r in reqs} == {
        (Origin.LOCAL, "a"), (Origin.LOCAL, "b"), (Origin.EXTERNAL, None)}
    assert reqs == workload(_cell(spec, spec.points()[0]), 3)
    assert reqs != workload(_cell(spec, spec.points()[0]), 4)


def stream(i: int, **changes: Any) -> dict[str, Any]:
    data = with_()
    data["workload"]["streams"][i].update(changes)
    return data


def workload_with(**changes: Any) -> dict[str, Any]:
    data = with_()
    data["workload"].update(changes)
    return data


@pytest.mark.parametrize(("data", "message"), [
    pytest.param(stream(0, pool=None), "workload.streams[0] (a): pool: a local stream stays"
                 " in its pool; name one of a, b", id="local without pool"),
    pytest.param(stream(2, pool="z"), "workload.streams[2] (external): pool: unknown pool"
                 " 'z'", id="unknown pool"),
    pytest.param(stream(1, name="a"), "workload.streams[1].name: 'a' is used twice",
                 id="duplicate name"),
    pytest.param(stream(2, name="local"), "workload.streams[2].name: 'local' selects every"
                 " local stream in grid keys; call this external stream", id="reserved name"),
    pytest.param(stream(2, mean_vms=40), "workload.streams[2] (external): mean VMs 40 cannot"
                 " be reached", id="unreachable mean"),
    pytest.param(stream(0, params={"med": 2}), "workload.streams[0] (a): sizes go up to 64"
                 " VMs, more than pool a's 8 nodes", id="outgrows its pool"),
    pytest.param(stream(0, preset="papers"), "workload.streams.0.preset: unknown das2 preset",
                 id="unknown preset"),
    pytest.param(stream(0, rate=0), "workload.streams.0.rate: must be > 0", id="no rate"),
    pytest.param(workload_with(span=None), "workload.span: required with streams",
                 id="no span"),
    pytest.param(workload_with(model="das2"), "workload: give model or streams, not both",
                 id="model and streams"),
    pytest.param(workload_with(jobs=100), "workload.jobs: not for streams", id="jobs"),
    pytest.param(with_(mix={"local": 0.5}), "mix.local: every stream has its origin",
                 id="local share"),
    pytest.param(with_(grid={"streams.c.rate": [0.1]}), "grid.streams.c.rate: selects no"
                 " stream", id="unknown selector"),
    pytest.param(with_(grid={"streams.external.colour": [1]}), "grid.streams.external.colour:"
                 " not a stream parameter", id="unknown stream field"),
    pytest.param(with_(grid={"streams.external.mean_vms": [2, 50]}),
                 "(external) at {'streams.external.mean_vms': 50}: mean VMs 50 cannot",
                 id="unreachable grid value"),
    pytest.param(with_(grid={"streams.external.rate": [-1]}),
                 "grid.streams.external.rate: value -1 is not valid there", id="bad grid value"),
    pytest.param(with_(baseline="nop"), "baseline: 'nop' is not one of the compared runs"
                 " (nop/earliest, moml/earliest)", id="baseline not a run"),
    pytest.param(with_(dispatches=["earliest", "earliest"]), "dispatches: a dispatch"
                 " strategy is listed twice", id="twice"),
    pytest.param(with_(dispatches=["fastest-first"]), "dispatches: ", id="unknown strategy"),
])
def test_a_bad_streams_experiment_says_what_is_wrong(data, message):
    with pytest.raises(ExperimentError) as err:
        validate_experiment(data, "e.yaml")
    assert any(p.startswith("e.yaml: ") and message in p for p in err.value.problems), (
        err.value.problems)
    if "fastest-first" in json.dumps(data):
        assert any('"fastest-first"' in p for p in err.value.problems)


def test_stream_parameters_read_as_words_on_axes():
    assert axis_label("streams.external.rate") == "external requests' arrival rate (/s)"
    assert axis_label("streams.local.rate") == "each local stream's arrival rate (/s)"
    assert axis_label("streams.external.mean_vms") == "external requests' mean VMs per request"
    assert axis_label("streams.c64.mean_duration") == "stream c64's mean duration (s)"


def test_the_report_compares_dispatch_strategies_as_003_does():
    spec = validate_experiment(with_(policies=["moml"], dispatches=["earliest"]))
    spec = spec.model_copy(update={"dispatches": ["rr", "pap-rnd", "pap-rtdp"],
                                   "baseline": "rr"})
    rows = [{"point": json.dumps(p, sort_keys=True), "seed": seed, "arm": arm,
             "policy": "moml", "dispatch": arm,
             **{m: float(seed + k) for m in METRICS},
             **{f"{m}@{pool}": 0.0 for pool in ("a", "b") for m in POOL_METRICS}}
            for p in spec.points() for seed in (1, 2, 3)
            for k, arm in enumerate(["rr", "pap-rnd", "pap-rtdp"])]
    titles = {title: body for title, body in tables(spec, rows)}
    compared = {r[1] for r in titles["preempted VMs: paired by seed at each grid point"][1:]}
    # each against the baseline, and PAP-RTDP against PAP-RND (003 §5.3)
    assert compared == {"pap-rnd − rr", "pap-rtdp − rr", "pap-rtdp − pap-rnd"}
    anova = titles["preempted VMs: two-way ANOVA, runs × grid points"]
    assert anova[1][:2] == ["runs", "2"] and anova[-1][:2] == ["residual", "12"]


# ---- examples/experiments/003-*.yaml: Figs. 5-8 of 003 ---------------------------------
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "experiments"
FIGURES = {  # file -> (grid key, points)
    "003-vms": ("streams.external.mean_vms", 4),
    "003-duration": ("streams.external.mean_duration", 6),
    "003-external-rate": ("streams.external.rate", 5),
    "003-local-rate": ("streams.local.rate", 5),
}


def not_yet_known() -> list[str]:
    """What the 003 files use that this leasehold does not know yet (issue 21's
    dispatch strategies and pool speed, other helpers' parts)."""
    missing = []
    if "dispatch" not in ConfigSpec.model_fields:
        missing.append("config.dispatch and its strategies")
    if "speed" not in PoolSpecModel.model_fields:
        missing.append("the pools' speed")
    return missing


def as_today(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without what :func:`not_yet_known` lists: the default strategy instead
    of issue 21's, no speeds."""
    data = deepcopy(data)
    if "dispatch" not in ConfigSpec.model_fields:
        data["dispatches"], data["baseline"] = ["earliest"], "earliest"
    if "speed" not in PoolSpecModel.model_fields:
        for pool in data["cluster"]["pools"]:
            pool.pop("speed", None)
    return data


def test_there_is_a_file_per_sweep_of_figs_5_to_8():
    assert sorted(p.stem for p in EXAMPLES.glob("003-*.yaml")) == sorted(FIGURES)


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_a_003_file_loads_and_expands(name):
    path = EXAMPLES / f"{name}.yaml"
    data = yaml.safe_load(path.read_text())
    assert data["dispatches"] == ["rr", "lrf", "bcf", "pap-rnd", "pap-rtdp"]
    assert [(p["name"], p["nodes"], p.get("speed")) for p in data["cluster"]["pools"]] == [
        ("c64", 64, 1.0), ("c128", 128, 1.5), ("c256", 256, 1.05)]
    spec = validate_experiment(as_today(data), str(path))
    key, n = FIGURES[name]
    assert list(spec.grid) == [key] and len(spec.points()) == n
    assert spec.config.backfilling.value == "conservative" and spec.policies == ["moml"]
    assert spec.pool_names() == ["c64", "c128", "c256"]
    # 003 §5.2: t_s 160 s, t_r 126 s and a migration of 372.5 s for one 1024 MB VM
    pools = [p.to_pool_spec() for p in spec.cluster.pools]
    one = Request("v", LeaseType.DEADLINE_MIGRATABLE, 1, Shape(1000, 1024), 100, 0)
    for pool in pools:
        assert suspend_seconds(one, pool.overhead) == pytest.approx(160 + 0.005)
        assert resume_seconds(one, pool.overhead) == pytest.approx(126 + 0.005)
        assert migrate_seconds(one, pool.overhead) == pytest.approx(372.5)
    # the defaults of 003 §5.2.2 wherever the sweep is not
    streams = {s.name: s for s in spec.workload.streams or []}
    assert spec.workload.span == 2 * 86_400
    # local: 003's "0.12" read as per minute (docs/reproduction.md: at 0.12/s Table 2's
    # local requests alone offer each pool 4.8-6 times its nodes); external 0.15/s
    assert {n: s.rate for n, s in streams.items()} == {
        "c64": 0.12 / 60, "c128": 0.12 / 60, "c256": 0.12 / 60, "external": 0.15}
    ext = streams["external"].to_stream().model
    assert (streams["external"].mean_vms, streams["external"].mean_duration) == (5, 420)
    assert ext.mean_size() == pytest.approx(5) and streams["external"].pool is None
    assert spec.mix.weights() == (1, 1, 1, 1) and spec.mix.memory == 1024
    missing = not_yet_known()
    if missing:
        pytest.skip(f"{path.name}: expanded with the default dispatch strategy and no speeds;"
                    f" validating it as written needs {' and '.join(missing)} (issue 21)")
    full = validate_experiment(data, str(path))
    assert [a.label for a in full.arms()] == data["dispatches"]


def test_a_small_003_run_reports_what_make_reproduce_003_copies(tmp_path):
    """One hour of 003-local-rate's streams, two points, two seeds, as today (the
    default strategy, no speeds): the plots `make reproduce-003` copies exist."""
    data = as_today(yaml.safe_load((EXAMPLES / "003-local-rate.yaml").read_text()))
    data["workload"]["span"] = "1h"
    data["replications"] = 2
    data["grid"] = {k: v[:2] for k, v in data["grid"].items()}
    spec = validate_experiment(data)
    assert run(spec, tmp_path, processes=1) == 4
    write_report(spec, tmp_path)
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    recipe = makefile[makefile.index("reproduce-003:"):]
    copied = recipe[recipe.index("for m in") + len("for m in"):recipe.index("; do cp")]
    names = copied.replace("\\", " ").split()
    assert names == ["preemptedVMs", "netUtilization", "awrtPoolWeighted", "migratedRate",
                     "nonPreemptableRejectionRate"]
    assert all((tmp_path / f"{m}.png").exists() for m in names)
    report = (tmp_path / "report.md").read_text()
    assert "## preempted VMs per pool: mean ± 95% CI" in report
    assert "| streams.local.rate = 0.001 | c256 |" in report
