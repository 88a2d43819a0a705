"""Small versions of the reproductions in examples/experiments/ (the full ones run
with `make reproduce`; docs/reproduction.md has their results)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from leasehold_emulator.sim.experiment import run, validate_experiment
from leasehold_emulator.sim.experiment_report import write_report


def leasehold(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leasehold.cli", *args], capture_output=True,
                          text=True, timeout=300, check=False)


#: one model, one pool; 003's files (several streams and pools, dispatch strategies),
#: 004's (a trace with injected reservations, 004's configurations) and 002's (the
#: utility mode) have their own tests: tests/sim/test_experiment_003.py,
#: tests/sim/test_experiment_004.py, tests/sim/test_reproduction_002.py
EXPERIMENTS = sorted(p for p in (Path(__file__).resolve().parents[2] / "examples/experiments")
                     .glob("*.yaml") if not p.stem.startswith(("002-", "003-", "004-")))


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_a_small_version_runs_and_reports(path, tmp_path):
    data = yaml.safe_load(path.read_text())
    validate_experiment(data, str(path))  # the full file is valid as it is
    data["workload"]["jobs"] = 150
    data["replications"] = 3
    data["policies"] = ["nop", "mlip", "mov", "moml"]
    data["grid"] = {k: v[:2] for k, v in data["grid"].items()}
    spec = validate_experiment(data, str(path))
    assert run(spec, tmp_path, processes=1) == 6
    write_report(spec, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "How the differences are tested." in report
    assert "## local rejection: paired by seed at each grid point" in report
    assert "## local rejection: across grid points (seed clusters; grid-point means)" in report
    for comparison in ("moml − nop", "moml − mlip", "mov − moml", "mov − mlip"):
        assert f"| {comparison} | seed clusters | 3 |" in report
        assert f"| {comparison} | grid-point means (as 000 Table I) | 2 |" in report
    assert "| all points |" not in report  # (point, seed) pairs are never pooled


def small(path: Path, into: Path) -> Path:
    """A small copy of an example experiment (same name), its results beside it."""
    data = yaml.safe_load(path.read_text())
    data["workload"]["jobs"] = 150
    data["replications"] = 3
    data["policies"] = ["nop", "moml"]
    data["grid"] = {k: v[:3] for k, v in data["grid"].items()}
    copy = into / path.name
    copy.write_text(yaml.safe_dump(data))
    spec = validate_experiment(data, str(copy))
    run(spec, into / f"results-{spec.name}", processes=1)
    return copy


TABLE_I = ["000-best-effort", "000-deadline", "000-local", "001-vms"]


def test_table_i_sets_leaseholds_interval_beside_the_papers(tmp_path):
    files = [small(p, tmp_path) for p in EXPERIMENTS if p.stem in TABLE_I]
    out = tmp_path / "table-i.md"
    done = leasehold("experiment", "table-i", *map(str, files), "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| %") or
            line.startswith("| average")]
    assert len(rows) == 4
    for row, paper in zip(rows, ["(51.1, 92.8)", "(35.0, 73.7)", "(40.3, 75.9)",
                                 "(47.2, 62.9)"], strict=True):
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == paper
        assert cells[7] == "3"  # n = grid points, the paper's way
        assert cells[8] == "overlap" or cells[8].startswith("no overlap (leasehold's ")
        assert cells[11] == "3"  # n = seeds


@pytest.mark.parametrize(("which", "message"), [
    pytest.param("local-share", "local-share: not a row of 000 Table I (its rows:"
                 " 000-best-effort, 000-deadline, 000-local, 001-vms)", id="not-a-row"),
    pytest.param("000-local", "000-local: no results in ", id="not-run"),
])
def test_table_i_says_what_it_cannot_use(which, message, tmp_path):
    # a copy, without results beside it whatever examples/experiments/ holds
    copy = tmp_path / f"{which}.yaml"
    copy.write_text((EXPERIMENTS[0].parent / f"{which}.yaml").read_text())
    done = leasehold("experiment", "table-i", str(copy), "--out", str(tmp_path / "t.md"))
    assert done.returncode == 2 and message in done.stderr
    assert "Traceback" not in done.stderr

