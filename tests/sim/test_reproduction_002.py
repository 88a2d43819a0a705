"""002 Figs. 1-8 (examples/experiments/002-*.yaml, `make reproduce-002`): every file is
valid as written and a tiny version of it runs and reports; and the directions the
reproduction carries (docs/reproduction.md, "002 Figs. 1–8"), asserted on a small,
seeded version of the load sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold_emulator.sim.experiment import run, validate_experiment
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
