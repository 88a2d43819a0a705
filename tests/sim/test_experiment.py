"""Experiments: grid × policies × replications, resumable, reported with CIs and
paired t-tests."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from scipy import stats

from leasehold_emulator.sim.experiment import (
    METRICS,
    RESULTS,
    ExperimentError,
    ProgressBar,
    run,
    validate_experiment,
)
from leasehold_emulator.sim.experiment_report import (
    interval,
    paired,
    table_i,
    tables,
    write_report,
)

BASE = {
    "name": "tiny",
    "workload": {"model": "lublin99", "preset": "papers", "jobs": 120},
    "mix": {"local": 0.33},
    "cluster": {"pools": [{"name": "rp", "nodes": 32, "exclusive": True}]},
    "policies": ["nop", "moml"],
    "grid": {"mix.local": [0.2, 0.5]},
    "replications": 3,
    "baseline": "nop",
}


def rows(out):
    with (out / RESULTS).open(newline="") as fh:
        return sorted((r["point"], r["seed"], r["policy"], r["preemptions"], r["utilization"])
                      for r in csv.DictReader(fh))


def test_a_run_covers_every_cell_and_reports_it(tmp_path):
    spec = validate_experiment(BASE)
    assert run(spec, tmp_path, processes=1) == 6  # 2 grid points x 3 seeds
    got = rows(tmp_path)
    assert len(got) == 12 and {r[2] for r in got} == {"nop", "moml"}
    assert all(r[3] == "0" for r in got if r[2] == "nop")  # nop never preempts
    files = write_report(spec, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "## local rejection (%): mean ± 95% CI" in report
    assert "| mix.local = 0.2 | moml − nop | 3 |" in report  # the paired table
    assert "<table>" in (tmp_path / "report.html").read_text()
    pngs = [f for f in files if f.suffix == ".png"]
    # a plot per metric, the Gantt chart and the over-time plot
    assert len(pngs) == len(METRICS) + 2 and all(f.read_bytes()[:4] == b"\x89PNG" for f in pngs)
    assert (tmp_path / "gantt.svg").read_text().count("<path") > 20  # bars were drawn
    assert (tmp_path / "over-time.png").exists()


def test_a_run_resumes_and_processes_do_not_change_results(tmp_path):
    spec = validate_experiment(BASE)
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    run(spec, serial, processes=1)
    # an interrupted run: only the header and the first unit's rows were written
    parallel.mkdir()
    lines = (serial / RESULTS).read_text().splitlines(keepends=True)
    (parallel / RESULTS).write_text("".join(lines[:3]))
    assert run(spec, parallel, processes=2) == 5
    assert (parallel / RESULTS).read_bytes() == (serial / RESULTS).read_bytes()
    assert run(spec, parallel, processes=2) == 0  # nothing left to do


def test_the_results_are_in_the_units_order_whatever_order_they_finished_in(tmp_path):
    """Units finish in any order (processes, a Dask cluster, a resumed run): the file
    ends in the units' order, the same bytes as one process writes."""
    spec = validate_experiment(BASE)
    run(spec, tmp_path, processes=1)
    written = (tmp_path / RESULTS).read_bytes()
    header, *lines = written.decode().splitlines(keepends=True)
    units = ["".join(lines[i:i + 2]) for i in range(0, len(lines), 2)]  # two policies each
    (tmp_path / RESULTS).write_text(header + "".join(reversed(units)), newline="")
    assert run(spec, tmp_path, processes=1) == 0
    assert (tmp_path / RESULTS).read_bytes() == written


def test_intervals_and_paired_tests_are_students():
    mean, half = interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(stats.t.ppf(0.975, 2) / math.sqrt(3))
    assert math.isnan(interval([5.0])[1])
    diff, _, p = paired([3.0, 5.0, 4.0, 6.0], [1.0, 2.0, 2.5, 2.0])
    assert diff == pytest.approx(2.625)
    assert p == pytest.approx(stats.ttest_rel([3, 5, 4, 6], [1, 2, 2.5, 2]).pvalue)
    assert math.isnan(paired([1.0, 2.0], [0.0, 1.0])[2])  # identical differences: no test


@pytest.mark.parametrize(("change", "message"), [
    ({"workload": {"model": "lublin2000"}}, "workload.model: unknown model"),
    ({"workload": {"model": "lublin99", "jobs": 0}}, "workload.jobs: must be >= 1, got 0"),
    ({"workload": {"model": "das2", "preset": "papers"}},
     "workload.preset: das2 has the presets gridsim, c64, c128, c256, grid, not 'papers'"),
    ({"workload": {"model": "swf"}}, "workload.path: required for model swf"),
    ({"policies": ["moml", "fifo"]}, "policies: unknown policy 'fifo'"),
    ({"baseline": "kueue"}, "baseline: 'kueue' is not one of the policies"),
    ({"grid": {"mix.locale": [0.1]}}, "grid.mix.locale: not a parameter"),
    ({"grid": {"mix.local": [0.2, 1.5]}}, "grid.mix.local: value 1.5 is not valid there"),
    ({"replications": 0}, "replications: must be >= 1, got 0"),
    ({"colour": "blue"}, "colour: unknown field; expected one of name, workload,"),
    ({"mix": {"best_effort": 0.2, "deadline": 0.3}}, "mix: give best_effort or deadline, not both"),
    ({"grid": {"workload.mean_vms": [4, 40]}},
     "workload.mean_vms at {'workload.mean_vms': 40}: no share of small jobs gives a mean of 40"),
    ({"workload": {"model": "das2", "mean_vms": 4}}, "workload.mean_vms: only for model lublin99"),
])
def test_a_bad_experiment_says_what_is_wrong(change, message):
    with pytest.raises(ExperimentError) as err:
        validate_experiment({**BASE, **change}, "e.yaml")
    assert any(p.startswith("e.yaml: ") and message in p for p in err.value.problems), (
        err.value.problems)


def test_best_effort_and_deadline_shares_set_the_type_weights():
    be = validate_experiment({**BASE, "mix": {"best_effort": 0.3}}).mix.weights()
    dl = validate_experiment({**BASE, "mix": {"deadline": 0.7}}).mix.weights()
    assert be == pytest.approx((0.15, 0.15, 0.35, 0.35)) and dl == pytest.approx(be)


def test_mean_vms_refits_the_sizes():
    spec = validate_experiment({**BASE, "workload": {"model": "lublin99", "preset": "papers",
                                                     "jobs": 4000, "mean_vms": 6}})
    from leasehold_emulator.sim.experiment import workload

    reqs = workload(spec, 1)
    assert abs(sum(r.vms for r in reqs) / len(reqs) - 6) < 0.5


def test_a_trace_workload_takes_its_first_jobs(tmp_path):
    trace = tmp_path / "t.swf"
    line = "{} {} -1 {} {} -1 -1 -1 -1 -1 1 -1 -1 -1 0 -1 -1 -1\n"
    trace.write_text("".join(line.format(i + 1, 60 * i, 600, 1 + i % 4) for i in range(50)))
    spec = validate_experiment({**BASE, "grid": {}, "replications": 1,
                                "workload": {"model": "swf", "path": str(trace), "jobs": 20}})
    from leasehold_emulator.sim.experiment import workload

    reqs = workload(spec, 1)
    assert [(r.submitted, r.vms, r.duration) for r in reqs] == [
        (60 * i, 1 + i % 4, 600) for i in range(20)]
    assert run(spec, tmp_path / "out", processes=1) == 1


def test_results_of_another_version_are_not_mixed_in(tmp_path):
    (tmp_path / RESULTS).write_text("point,seed,policy,utilization\n{},1,nop,0.5\n")
    with pytest.raises(ExperimentError, match="written with other columns"):
        run(validate_experiment(BASE), tmp_path, processes=1)


def test_a_leasehold_trace_is_replayed_with_its_own_types(tmp_path):
    from leasehold_emulator.sim.experiment import workload

    trace = tmp_path / "t.jsonl"
    kinds = ["BestEffortSuspendable", "BestEffortCancellable"]
    trace.write_text("\n".join([json.dumps({"format": "leasehold-trace", "version": 1})] + [
        json.dumps({"name": f"j{i}", "type": kinds[i % 2], "arrival": 60 * i, "vms": 1 + i % 4,
                    "duration": 600}) for i in range(30)]) + "\n")
    spec = validate_experiment({**BASE, "mix": {}, "grid": {}, "replications": 2,
                                "workload": {"model": "trace", "path": str(trace), "jobs": 25}})
    reqs = workload(spec, 1)
    assert [(r.name, r.type.value) for r in reqs] == [(f"j{i}", kinds[i % 2]) for i in range(25)]
    assert workload(spec, 2) == reqs  # a trace is the same whatever the seed
    assert run(spec, tmp_path / "out", processes=1) == 2


@pytest.mark.parametrize("workload, extra, message", [
    ({"model": "trace", "path": "missing.jsonl"}, {"mix": {}},
     "workload.path: missing.jsonl: cannot read file"),
    ({"model": "swf", "path": "missing.swf"}, {}, "workload.path: cannot read missing.swf"),
    ({"model": "trace", "path": "t.jsonl"}, {}, "mix: a trace's leases have their own types"),
    ({"model": "lublin99", "path": "t.jsonl"}, {}, "workload.path: only for the models swf,"),
])
def test_a_workload_file_is_checked_before_anything_runs(tmp_path, monkeypatch, workload,
                                                           extra, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.jsonl").write_text(json.dumps({"format": "leasehold-trace", "version": 1}))
    with pytest.raises(ExperimentError) as err:
        validate_experiment({**BASE, "grid": {}, **extra, "workload": workload}, "e.yaml")
    assert any(message in p for p in err.value.problems), err.value.problems


class _Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def _bar(tty: bool, steps: list[tuple[int, int, float]]) -> str:
    now = [0.0]
    stream = _Stream(tty)
    bar = ProgressBar(stream, width=10, clock=lambda: now[0])
    for done, total, at in steps:
        now[0] = at
        bar(done, total)
    return stream.getvalue()


def test_the_progress_bar_tells_elapsed_and_left_time():
    out = _bar(True, [(0, 4, 0), (1, 4, 30), (4, 4, 250)])
    frames = out.split("\r")[1:]
    assert frames[0].startswith("[..........] 0/4 units, 0 s\033[K")
    # 30 s for one unit: three more take about 90 s
    assert frames[1] == "[##........] 1/4 units, 30 s, about 1 min 30 s left\033[K"
    assert frames[2] == "[##########] 4/4 units, 4 min 10 s\033[K\n"


def test_into_a_log_the_progress_bar_writes_a_line_per_tenth():
    out = _bar(False, [(i, 100, i * 40.0) for i in range(101)])
    lines = out.splitlines()
    assert len(lines) == 11 and "\r" not in out and "\033" not in out
    assert lines[5] == "[#####.....] 50/100 units, 33 min 20 s, about 33 min 20 s left"
    assert lines[-1] == "[##########] 100/100 units, 1 h 06 min"


#: a seed's effect of moml on local rejection (points): the same job stream at every
#: grid point, so the effect recurs — the correlated design of issue 19
SEED_EFFECT = [1.1, -0.3, 1.6, -0.6, 0.4, 1.3, -0.8, 0.9, 1.5, -0.4]
POLICY_SHIFT = {"nop": 0.0, "mlip": 0.0, "mov": 0.0, "moml": 1.0}


def correlated_rows(spec):
    """Synthetic results: moml − nop is the seed's effect plus a little noise by point."""
    out = []
    for k, point in enumerate(spec.points()):
        for seed, effect in enumerate(SEED_EFFECT, start=1):
            noise = ((seed * 7 + k * 3) % 5 - 2) * 0.01
            for policy in spec.policies:
                value = 20.0 + POLICY_SHIFT[policy] * (effect + noise) + 0.1 * seed
                out.append({"point": json.dumps(point, sort_keys=True), "seed": seed,
                            "arm": policy, "policy": policy,
                            **{m: value / 100 for m in METRICS}})
    return out


def table(found, title):
    return next(body for t, body in found if t == title)


def test_the_report_tests_as_the_design_allows():
    spec = validate_experiment({**BASE, "policies": ["nop", "mlip", "mov", "moml"],
                                "grid": {"mix.local": [0.2, 0.3, 0.4, 0.5, 0.6]},
                                "replications": 10})
    found = tables(spec, correlated_rows(spec))
    per_point = table(found, "local rejection: paired by seed at each grid point")
    assert per_point[0] == ["grid point", "comparison", "n", "mean difference", "95% CI",
                            "t-test p", "t-test p, Holm", "Wilcoxon p", "Wilcoxon p, Holm",
                            "Shapiro–Wilk p"]
    comparisons = {r[1] for r in per_point[1:]}
    # against the baseline, and the orders the papers claim
    assert comparisons == {"mlip − nop", "mov − nop", "moml − nop", "moml − mlip",
                           "mov − moml", "mov − mlip"}
    assert len(per_point) == 1 + 5 * 6
    across = table(found, "local rejection: across grid points"
                          " (seed clusters; grid-point means)")
    moml = {r[1]: r for r in across[1:] if r[0] == "moml − nop"}
    assert set(moml) == {"seed clusters", "grid-point means (as 000 Table I)"}
    assert moml["seed clusters"][2] == "10" and moml["grid-point means (as 000 Table I)"][2] == "5"
    # the pooled t-test of the 50 correlated pairs would say p < 0.001; a seed is one
    # observation, and the difference is not significant
    assert float(moml["seed clusters"][5]) > 0.05
    # nowhere in the report are the (point, seed) pairs pooled
    assert not any(r[0] == "all points" for _, body in found for r in body)


@pytest.mark.parametrize(("decreases", "verdict"), [
    pytest.param([0.70, 0.62, 0.75, 0.80, 0.68], "overlap", id="overlap"),
    pytest.param([0.30, 0.33, 0.29, 0.35, 0.31], "no overlap (leasehold's lower)", id="lower"),
    pytest.param([0.96, 0.97, 0.95, 0.98, 0.96], "no overlap (leasehold's higher)", id="higher"),
])
def test_table_i_computes_the_papers_way_over_grid_points(decreases, verdict):
    """000 Table I row 1 (paper: 72.0, (51.1, 92.8)) from synthetic results whose
    grid-point means of nop − moml are ``decreases``."""
    spec = validate_experiment({**BASE, "name": "000-best-effort",
                                "grid": {"mix.best_effort": [0.1, 0.2, 0.3, 0.4, 0.5]},
                                "replications": 4})
    rows = []
    for point, decrease in zip(spec.points(), decreases, strict=True):
        for seed in range(1, 5):
            jitter = (seed - 2.5) * 0.01  # the same at nop and moml: the mean is kept
            for policy, local in (("nop", 0.99 + jitter), ("moml", 0.99 + jitter - decrease)):
                rows.append({"point": json.dumps(point, sort_keys=True), "seed": seed,
                             "arm": policy, "policy": policy, **{m: 0.1 for m in METRICS},
                             "localRejectionRate": local})
    line = next(r for r in table_i([(spec, rows)]).splitlines() if r.startswith("| % best"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    t = stats.ttest_1samp([d * 100 for d in decreases], 0)
    ci = t.confidence_interval()
    assert cells[1:4] == ["72.0", "(51.1, 92.8)", "0.001"]
    assert cells[4] == f"{sum(decreases) * 20:.1f}"
    assert cells[5] == f"({ci.low:.1f}, {ci.high:.1f})"
    assert cells[6] == f"{t.pvalue:.3g}" and cells[7] == "5"
    assert cells[8] == verdict
