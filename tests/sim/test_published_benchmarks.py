"""The simulator benchmarks of published workloads (benchmarks/bench_knavigator_backfill.py,
benchmarks/bench_kueue_baseline_sim.py) at a small size: they run and their figures
are the ones the scenarios' tests derive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench(name: str, out: Path, *args: str) -> dict:
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), *args,
                        "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return json.loads(out.read_text())


def test_knavigator_benchmark_reports_turnaround_and_occupancy(tmp_path):
    got = bench("bench_knavigator_backfill.py", tmp_path / "k.json", "--nodes", "10")
    runs = {r["backfilling"]: r for r in got["runs"]}
    assert {m: (r["leases"], r["turnaround"]) for m, r in runs.items()} == {
        "none": (340, 620), "easy": (340, 480), "conservative": (340, 480)}
    assert runs["none"]["occupancy"] == pytest.approx(480 / 620)
    # over time, as the scenario's comments derive it: the first wave of A's alone,
    # then A's and one B a node, then B's and C's, then the last C's
    assert runs["none"]["over_time"] == [[0, 240, 0.6], [240, 540, 0.9], [540, 600, 1.0],
                                         [600, 620, 0.3]]
    assert runs["easy"]["over_time"] == runs["conservative"]["over_time"] == [[0, 480, 1.0]]
    assert got["process_cpu"] == {}  # only the 100-node scenario is run as a process


def test_kueue_simulator_benchmark_reports_every_layout_and_mode(tmp_path):
    got = bench("bench_kueue_baseline_sim.py", tmp_path / "q.json", "--scale", "0.05")
    runs = got["runs"]
    assert {(r["layout"], r["backfilling"]) for r in runs} == {
        (lay, m) for lay in ("nodes", "cohorts", "pooled")
        for m in ("none", "easy", "conservative")}
    for r in runs:
        assert r["leases"] == 30 * (18 + 5 + 2)  # 5% of 350, 100 and 50 per queue
        assert set(r["mean_start"]) == {"small", "medium", "large"}
        assert 0 < r["usage"] <= 100 and r["wall"] >= 2.4 + 1.0
