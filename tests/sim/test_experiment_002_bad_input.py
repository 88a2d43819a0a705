"""`leasehold experiment run` on 002-style files a careless user writes: every
mistake is one line per problem and a non-zero exit, before any unit runs or from
the unit that meets it — never a traceback, never a run that does not end."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def tiny(**workload: Any) -> dict[str, Any]:
    """Two private nodes, a public pool of 002's law, a few minutes of jobs."""
    return {
        "name": "tiny",
        "workload": {"model": "poisson", "load": 2, "mean_work": 100, "work": "uniform",
                     "span": "10m", "warmup": 60, **workload},
        "cluster": {"pools": [
            {"name": "private", "nodes": 2, "exclusive": True},
            {"name": "public", "nodes": 1, "exclusive": True,
             "volatile": {"failureRate": 0.3, "recoverySeconds": 120, "epoch": 10}},
        ]},
        "config": {"utility": {"window": 100, "threshold": 50, "replicas": 2,
                               "private": "private"}},
        "schemes": ["rr", "rrr-k"],
        "replications": 1,
        "baseline": "rr",
    }


def with_(data: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {**copy.deepcopy(data), **top}


def tiny_epoch(epoch: float, window: float) -> dict[str, Any]:
    data = tiny()
    data["cluster"]["pools"][1]["volatile"]["epoch"] = epoch
    data["config"]["utility"].update(window=window, migrationSeconds=0)
    return data


def run(tmp_path: Path, data: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "e.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "leasehold.cli", "experiment", "run",
                           str(path), "--out", str(tmp_path / "out"), "--processes", "1",
                           "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=90)


@pytest.mark.parametrize(("data", "said"), [
    pytest.param(tiny(load=1e12), "workload: load 1e+12 Erlangs of jobs of 100 s on"
                 " average for a span of 10m is 6e+12 jobs; at most 1000000", id="load-huge"),
    pytest.param(tiny(span="99999d"), "for a span of 99999d is 1.73e+08 jobs", id="span-huge"),
    pytest.param(tiny_epoch(1e-9, 1e-7), "workload.mean_work: jobs of up to 150 s of work"
                 " (uniform, mean 100 s) take up to 1.5e+11 epochs of the public pool's"
                 " 1e-09 s; at most 1000000", id="epoch-tiny"),
    pytest.param(with_(tiny(), grid={"config.utility.scheme": ["rr"]}),
                 "grid.config.utility.scheme: the schemes list gives them", id="grid-scheme"),
    pytest.param(tiny(work="exponential", mean_work=9e6, load=1, span="521d",
                      warmup=0), "seed 1: leases", id="drawn-job-too-long"),
])
def test_a_002_experiment_it_cannot_run_is_one_line_per_problem(tmp_path, data, said):
    r = run(tmp_path, data)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert all(line.startswith("error: ") for line in r.stderr.splitlines()), r.stderr
    assert said in r.stderr

