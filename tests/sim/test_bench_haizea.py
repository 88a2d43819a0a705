"""benchmarks/bench_haizea.py: without a scratch port of Haizea it says why and exits
0; its per-lease agreement counts starts and ends and finds the first divergence."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from leasehold.core.model import LeaseType, Request, Shape

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "bench_haizea.py"


def bench_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_haizea", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(env_dir: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", **({"HAIZEA_SCRATCH": env_dir} if env_dir else {})}
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize("how", ["no-port", "dir-without-runner"])
def test_without_a_scratch_port_it_says_why_and_exits_0(how, tmp_path):
    r = run(None) if how == "no-port" else run(None, "--haizea", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("bench_haizea: skipped: ")
    assert "docs/haizea.md" in r.stdout


def req(name: str, submitted: float) -> Request:
    return Request(name=name, type=LeaseType.BEST_EFFORT_SUSPENDABLE, vms=1,
                   shape=Shape(1000, 1024), duration=100.0, submitted=submitted)


REQUESTS = [req("a", 0.0), req("b", 10.0), req("c", 20.0)]
SAME = {"a": (0.0, 100.0), "b": (100.0, 200.0), "c": (200.0, 300.0)}


@pytest.mark.parametrize(("haizea", "leasehold", "want"), [
    (SAME, SAME, (3, 3, None, None)),
    # c starts later in one: its start and end differ, and it is the first divergence
    (SAME, {**SAME, "c": (250.0, 350.0)}, (2, 2, "c", "c")),
    # b resumed later in Haizea: only its end differs
    ({**SAME, "b": (100.0, 264.0)}, SAME, (3, 2, None, "b")),
    # the first divergence is the earliest in time, not in the file
    ({**SAME, "b": (90.0, 190.0), "c": (150.0, 250.0)}, SAME, (1, 1, "b", "b")),
    # a lease that never ran on one side disagrees
    (SAME, {k: v for k, v in SAME.items() if k != "a"}, (2, 2, "a", "a")),
], ids=["identical", "later-start", "later-end-only", "earliest-in-time", "missing"])
def test_agreement_counts_and_first_divergence(haizea, leasehold, want):
    got = bench_module().agreement(REQUESTS, haizea, leasehold)
    first = got["first_start_divergence"], got["first_end_divergence"]
    assert (got["starts_agree"], got["ends_agree"], *(d and d["lease"] for d in first)) == want
    assert got["leases"] == 3


def test_agreement_reports_each_sides_mean_wait():
    got = bench_module().agreement(REQUESTS, SAME, {**SAME, "c": (260.0, 360.0)})
    # waits 0, 90, 180 s against 0, 90, 240 s
    assert got["mean_wait_min"] == pytest.approx({"haizea": 1.5, "leasehold": 11 / 6})
