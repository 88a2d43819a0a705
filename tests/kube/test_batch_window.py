"""The operator's batch window: while inputs keep coming, a step begins at least
``--batch-window`` after the one before, so that a burst of Leases is decided in a
few steps rather than one step per Lease (a step costs a few ms of CPU whatever its
inputs: the operator's CPU would otherwise follow how fast the API server answers)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from operated import free_port, one_node_pool, operated, scrape

#: one kubectl apply per Lease, one after another: a burst, though each arrives alone
BURST = 12
STEPS = "leasehold_scheduling_steps_total"


def lease(name: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "lab"},
        "spec": {"type": "BestEffortSuspendable", "vms": 1,
                 "resources": {"cpu": "100m", "memory": "64Mi"}, "duration": "1h"}})


@pytest.mark.parametrize("window, most", [
    # kubectl's own start-up spaces the applies by ~0.1–0.5 s: with no window each
    # arrives at an idle operator and is a step of its own
    pytest.param("10", 4, id="a-window-decides-a-burst-in-few-steps"),
])
def test_a_burst_of_leases_is_decided_in_few_steps(tmp_path, window, most):
    port = free_port()
    c = operated(tmp_path / "cluster", "moml", one_node_pool(tmp_path), 60.0, port,
                 "--batch-window", window)
    try:
        c.until(lambda: c.recoveries() == 1)
        # the first Lease after a quiet spell: decided at once, not a window later
        c.kubectl("apply", "-f", "-", stdin=lease("first"))
        c.until(lambda: c.lease("lab", "first").get("status", {}).get("phase"), timeout=20)
        before = scrape(port)[STEPS]
        for i in range(BURST):
            c.kubectl("apply", "-f", "-", stdin=lease(f"burst-{i}"))
        c.until(lambda: all(c.lease("lab", f"burst-{i}").get("status", {}).get("phase")
                            for i in range(BURST)), timeout=120, step=0.5)
        taken = scrape(port)[STEPS] - before
        assert 1 <= taken <= most, f"{BURST} Leases decided in {taken:g} steps"
    finally:
        c.stop_all()


@pytest.mark.parametrize("value", ["-1", "61", "nan"])
def test_a_window_out_of_range_is_one_line(value):
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "operator",
                        "--batch-window", value], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.splitlines() == [
        f"error: --batch-window: from 0 to 60 seconds, got {float(value):g}"]
