"""`leasehold demo` (what `make demo` runs), one policy, faster; and what it says it
will do, and for how long, before it starts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from emulated import KUBECTL
from leasehold_emulator.demo import announcement

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_ends_with_table_iii():
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (the emulated cluster's tests need it)")
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "demo", "--policies", "moml",
                        "--time-scale", "600"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = r.stdout.splitlines()
    # what and how long, first: before anything starts
    assert lines[0] == announcement(600, ("moml",)), lines[:3]
    # then progress: which policy of how many, and how far in emulated time
    assert re.search(r"^\[moml, 1 of 1\] emulated time +[\d.]+ of about 13\d min", r.stdout,
                     re.MULTILINE), r.stdout[:2000]
    assert "owners/lease-7" in r.stdout
    row = lines[lines.index("POLICY  PREEMPTED  REJECTED  OVERHEAD (s)  MAKESPAN (s)") + 1]
    policy, preempted, rejected, overhead, makespan = row.replace("{5, 6}", "{5,6}").split()
    assert (policy, preempted, rejected, overhead) == ("moml", "{5,6}", "{}", "27.8")
    assert 7800 <= float(makespan) < 8100  # simulate: 7800.5; live adds a little


@pytest.mark.parametrize(("scale", "policies", "words"), [
    pytest.param(300, ("nop", "mlip", "mov", "moml"),
                 ["under nop, mlip, mov and moml", "300x", "about 2 min in all"],
                 id="make-demo"),
    pytest.param(600, ("moml",), ["under moml", "600x", "about 20 s in all"], id="one-fast"),
    pytest.param(60, ("nop", "moml"), ["under nop and moml", "60x", "about 4 min 30 s in all"],
                 id="two-slow"),
])
def test_the_announcement_says_what_runs_and_how_long(scale, policies, words):
    text = announcement(scale, policies)
    assert text.startswith("leasehold demo: the MOML paper's testbed (000 §8.3, 7 Leases)")
    assert all(w in text for w in words), text
    assert "Ctrl-C" in text


@pytest.mark.parametrize(("venv", "words"), [
    pytest.param(None, ["make demo: simulates the MOML paper's testbed", "nop, mlip, mov and"
                        " moml", "about 2 min."], id="installed"),
    pytest.param("never-made", ["make demo: installs .venv (about 1 min, once), then simulates",
                                "about 3 min in all."], id="fresh-clone"),
])
def test_make_demo_announces_itself_first(venv, words, tmp_path):
    """`make demo`'s first words, before the .venv it may have to install: what it runs
    and for how long (`make -n` prints the commands without running them)."""
    where = [] if venv is None else [f"VENV={tmp_path / venv}"]
    r = subprocess.run(["make", "-n", "--no-print-directory", "demo", *where], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith('echo "make demo: ') and all(w in first for w in words), first
