"""Small versions of the reproductions in examples/experiments/ (the full ones run
with `make reproduce`; docs/reproduction.md has their results)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from leasehold_emulator.sim.experiment import run, validate_experiment
from leasehold_emulator.sim.experiment_report import write_report

EXPERIMENTS = sorted((Path(__file__).resolve().parents[2] / "examples/experiments").glob("*.yaml"))


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_a_small_version_runs_and_reports(path, tmp_path):
    data = yaml.safe_load(path.read_text())
    validate_experiment(data, str(path))  # the full file is valid as it is
    data["workload"]["jobs"] = 150
    data["replications"] = 2
    data["policies"] = ["nop", "moml"]
    data["grid"] = {k: v[:2] for k, v in data["grid"].items()}
    spec = validate_experiment(data, str(path))
    assert run(spec, tmp_path, processes=1) == 4
    write_report(spec, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "## local rejection: paired against nop" in report
    assert "| all points | moml |" in report
