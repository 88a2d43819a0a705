"""The operator benchmark (benchmarks/bench_operator.py) at a small size: it runs to
its end and its figures add up. The full size runs with `make bench`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_operator_benchmark_runs_and_reports(tmp_path: Path):
    figures = tmp_path / "figures.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_operator.py"),
                        "--leases", "40", "--local", "4", "--nodes", "6",
                        "--time-scale", "600", "--timeout", "240", "--json", str(figures)],
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert re.search(r"all decided [\d.]+ s after the first create", r.stdout), r.stdout
    import json
    got = json.loads(figures.read_text())
    assert sum(got["phases"].values()) == 44
    assert set(got["phases"]) <= {"Completed", "Cancelled", "Rejected"}
    # every lease started or was rejected, and a write went with each step
    assert got["steps"].get("Started", 0) + got["steps"].get("Rejected", 0) >= 44
    assert got["vm_steps"] > 0 and 1 <= got["writes"] / got["vm_steps"] < 5
    assert 0 < got["peak_rss_mb"] < 300
