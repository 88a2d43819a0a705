"""`leasehold demo` (what `make demo` runs), one policy, faster."""

from __future__ import annotations

import subprocess
import sys

import pytest

from emulated import KUBECTL


def test_the_demo_ends_with_table_iii():
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (the emulated cluster's tests need it)")
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "demo", "--policies", "moml",
                        "--time-scale", "600"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    assert "[moml] emulated time" in r.stdout and "owners/lease-7" in r.stdout
    row = lines[lines.index("POLICY  PREEMPTED  REJECTED  OVERHEAD (s)  MAKESPAN (s)") + 1]
    policy, preempted, rejected, overhead, makespan = row.replace("{5, 6}", "{5,6}").split()
    assert (policy, preempted, rejected, overhead) == ("moml", "{5,6}", "{}", "27.8")
    assert 7800 <= float(makespan) < 8100  # simulate: 7800.5; live adds a little
