"""The operator benchmark (benchmarks/bench_operator.py) at a small size: it runs to
its end and its figures add up. The full size runs with `make bench`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The benchmark at a small size, its temporary directories in ``tmp_path/tmp``."""
    (tmp_path / "tmp").mkdir()
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_operator.py"),
                           "--leases", "40", "--local", "4", "--nodes", "6",
                           "--time-scale", "600", *args],
                          capture_output=True, text=True, timeout=400,
                          env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})


def test_the_operator_benchmark_runs_and_reports(tmp_path: Path):
    figures = tmp_path / "figures.json"
    r = bench(tmp_path, "--timeout", "240", "--json", str(figures))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert re.search(r"all decided [\d.]+ s after the last create", r.stdout), r.stdout
    assert list((tmp_path / "tmp").iterdir()) == []  # its temporary directory is gone
    got = json.loads(figures.read_text())
    assert sum(got["phases"].values()) == 44
    assert set(got["phases"]) <= {"Completed", "Cancelled", "Rejected"}
    # every lease started or was rejected, and a write went with each step
    assert got["steps"].get("Started", 0) + got["steps"].get("Rejected", 0) >= 44
    assert got["vm_steps"] > 0 and 1 <= got["writes"] / got["vm_steps"] < 5
    assert 0 < got["peak_rss_mb"] < 300 and got["cluster_peak_rss_mb"] > 0
    # the pods of every started lease were seen Running after the core started it
    # (but those of a lease preempted before they all were)
    started = got["steps"]["Started"]
    assert started - got["steps"].get("Preempted", 0) <= got["lagged"] <= started
    assert 0 <= got["lag_p50"] <= got["lag_p99"]
    assert got["writes_per_second"] > 0


def test_the_benchmark_stops_at_its_timeout_and_cleans_up(tmp_path: Path):
    r = bench(tmp_path, "--timeout", "1")
    assert r.returncode != 0
    assert "when the time limit (--timeout) ran out" in r.stderr, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
